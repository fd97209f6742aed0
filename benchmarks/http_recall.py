"""Recall and remember latency over Streamable HTTP against stdio, in one run.

    pip install 'poolsplit-memory[mcp,postgres]'   # or the wheels, see README
    eval "$(bash scripts/start-postgres.sh)"        # for the PostgreSQL rows
    python benchmarks/http_recall.py [--entries 10000] [--clients 1,4,16]
                                     [--calls 64] [--workers 1] [--pg-dsn URL]
    python benchmarks/http_recall.py --quick       # CI: 1,000 entries, 1 and 4
    python benchmarks/http_recall.py --path-cost   # CPU of the HTTP path, in-process

For each backend (SQLite; PostgreSQL with ``--pg-dsn`` or
``POOLSPLIT_PG_DSN``, else a line says it was skipped), a store of
``--entries`` entries (the demo store cycled, ids unique) is served by the
installed ``poolsplit-mcp`` two ways:

- **stdio**: each client starts its own server process (what stdio is);
- **http**: one ``poolsplit-mcp --http 127.0.0.1:0 --workers N`` that every
  client shares, each client its own ``mcp`` client session.

For each count of concurrent clients, every client of both transports
connects and runs three untimed recalls; then, turn by turn, all stdio
clients at once and then all HTTP clients at once (the order alternating, so
that both see the same store under the same load) run ``recall`` (a
message) followed by ``remember`` (a new entry); ``--calls`` turns per
transport, spread over the clients (at least 2 each). Reported per backend,
clients and call: the median and the 99th percentile (nearest rank) over
stdio and over HTTP, and HTTP's median over stdio's. A recall here follows a
write (the agent's loop), so its cost includes what the store does after a
write. Nothing is asserted; pytest never collects this.

``--path-cost`` measures instead what the HTTP path itself costs: the
``--http`` app built in this process over a SQLite store of ``--entries``
(one token, namespace ``t0``), called straight through ASGI (no socket, no
uvicorn) with ``tools/call`` of ``get`` (an id not stored: the store's
cheapest call) and of ``recall``, against the same store call made
directly; CPU milliseconds per request (``time.process_time``, every
thread), medians of 5 rounds of ``--calls`` requests.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import io
import json
import math
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters
from poolsplit_memory import open_store

from poolsplit import demo_store

MESSAGES = (
    "debug the billing work",
    "what is left on the search report",
    "how do I roll back the checkout deploy",
    "summarise the invoices incident",
)
WARM_UP = 3
START = 120.0  # seconds for a server to come up: a guard, not a measurement


def entries(total: int) -> Iterator[dict[str, Any]]:
    """``total`` entries: the demo store cycled, ids unique, 8 always-scope."""
    demo = demo_store(300)
    for number in range(total):
        entry = dict(demo[number % len(demo)])
        entry["id"] = f"{entry['id']}-{number}"
        if isinstance(entry.get("created"), (int, float)):
            entry["created"] = time.strftime(
                "%Y-%m-%dT%H:%M:%SZ", time.gmtime(entry["created"])
            )
        if entry.get("scope") == "always" and number >= len(demo):
            del entry["scope"]
        yield entry


def fill(url: str, total: int, namespace: str = "default") -> None:
    lines = "".join(json.dumps(entry) + "\n" for entry in entries(total))
    with open_store(url, namespace=namespace) as store:
        store.import_jsonl(io.StringIO(lines))


def server_command() -> str:
    beside = Path(sys.executable).with_name("poolsplit-mcp")
    found = str(beside) if beside.is_file() else shutil.which("poolsplit-mcp")
    if found is None:
        raise SystemExit("poolsplit-mcp is not installed (pip install the wheels)")
    return found


def p99(samples: list[float]) -> float:
    """The nearest-rank 99th percentile."""
    ordered = sorted(samples)
    return ordered[max(0, math.ceil(0.99 * len(ordered)) - 1)]


# --- the two transports ------------------------------------------------------


class Server:
    """A running ``poolsplit-mcp --http``: its process, base URL and log."""

    def __init__(self, proc: subprocess.Popen[bytes], base: str, log: Path) -> None:
        self.proc, self.base, self.log = proc, base, log
        host, port = base.removeprefix("http://").split(":")
        self.host, self.port = host, int(port)

    def processes(self) -> list[tuple[str, int]]:
        """(role, pid): the first process (the supervisor when --workers > 1)
        and its children (the workers; multiprocessing's resource tracker
        named as such)."""
        found = [("supervisor", self.proc.pid)]
        children = Path(f"/proc/{self.proc.pid}/task/{self.proc.pid}/children")
        with contextlib.suppress(OSError):
            for pid in (int(p) for p in children.read_text().split()):
                cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
                role = "tracker" if b"resource_tracker" in cmdline else "worker"
                found.append((role, pid))
        return found


@contextmanager
def serve(
    url: str, folder: str | Path, workers: int, extra: list[str] | None = None
) -> Iterator[Server]:
    """``poolsplit-mcp --http 127.0.0.1:0 --db URL --workers N`` plus
    ``extra`` arguments, yielded once every worker answers ``/healthz`` (its
    pid seen); stopped by SIGTERM on the way out (its log's tail printed if
    the body raised)."""
    log = Path(folder) / f"http-{uuid.uuid4().hex[:6]}.err"
    with open(log, "wb") as err:
        proc = subprocess.Popen(
            [server_command(), "--http", "127.0.0.1:0", "--db", url]
            + ["--workers", str(workers)]
            + (extra or []),
            cwd=folder,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=err,
        )
    try:
        deadline = time.monotonic() + START
        found = None
        while found is None:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"the HTTP server did not start:\n{log.read_text()}")
            found = re.search(r"http://127\.0\.0\.1:\d+", log.read_text())
            time.sleep(0.1)
        server = Server(proc, found.group(0), log)
        seen: set[int] = set()
        while len(seen) < workers:
            if proc.poll() is not None or time.monotonic() > deadline:
                tail = log.read_text()[-3000:]
                raise SystemExit(f"the HTTP workers did not start:\n{tail}")
            with contextlib.suppress(OSError, ValueError):
                conn = http.client.HTTPConnection(server.host, server.port, timeout=30)
                conn.request("GET", "/healthz")
                seen.add(json.loads(conn.getresponse().read())["pid"])
                conn.close()
        try:
            yield server
        except BaseException:
            print(f"server log tail:\n{log.read_text()[-3000:]}", file=sys.stderr)
            raise
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=30)


async def one_turn(
    client: Client, turn: int, number: int, times: dict[str, list[float]]
) -> None:
    """One client's turn: ``recall`` (after the last write), then ``remember``."""
    start = time.perf_counter()
    got = await client.call_tool("recall", {"message": MESSAGES[turn % 4]})
    times["recall"].append(time.perf_counter() - start)
    if got.is_error:
        raise SystemExit(f"recall failed: {got.content}")
    start = time.perf_counter()
    got = await client.call_tool(
        "remember", {"content": f"client {number} turn {turn}: {uuid.uuid4().hex}"}
    )
    times["remember"].append(time.perf_counter() - start)
    if got.is_error:
        raise SystemExit(f"remember failed: {got.content}")


def measure(
    url: str, folder: str, clients: int, calls: int, workers: int
) -> dict[str, dict[str, list[float]]]:
    """Both transports' clients connected at once; turn by turn, all stdio
    clients then all HTTP clients (the order alternating), each side's
    clients concurrently, so that both see the same store and the same load."""
    turns = max(2, calls // clients)
    measured: dict[str, dict[str, list[float]]] = {
        side: {"recall": [], "remember": []} for side in ("stdio", "http")
    }

    async def main(endpoint: str) -> None:
        targets: dict[str, list[Any]] = {
            "stdio": [
                StdioServerParameters(
                    command=server_command(), args=["--db", url], cwd=folder
                )
                for _ in range(clients)
            ],
            "http": [endpoint] * clients,
        }
        with anyio.fail_after(3600):  # a guard against a hang
            async with contextlib.AsyncExitStack() as stack:
                sides = {
                    side: [
                        await stack.enter_async_context(Client(target))
                        for target in targets[side]
                    ]
                    for side in ("stdio", "http")
                }
                for connected in sides.values():  # warm-up, untimed
                    for client in connected:
                        for turn in range(WARM_UP):
                            await client.call_tool(
                                "recall", {"message": MESSAGES[turn % 4]}
                            )
                for turn in range(turns):
                    order = ("stdio", "http") if turn % 2 == 0 else ("http", "stdio")
                    for side in order:
                        async with anyio.create_task_group() as group:
                            for number, client in enumerate(sides[side]):
                                group.start_soon(
                                    one_turn, client, turn, number, measured[side]
                                )

    with serve(url, folder, workers) as server:
        anyio.run(main, f"{server.base}/mcp")
    return measured


# --- the backends ----------------------------------------------------------


@contextmanager
def postgres_database(dsn: str) -> Iterator[str]:
    import psycopg

    name = f"bench_{uuid.uuid4().hex[:10]}"
    base, _, _ = dsn.partition("?")
    url = f"{base.rpartition('/')[0]}/{name}"
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    try:
        yield url
    finally:
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def backend_rows(
    name: str, url: str, folder: str, args: argparse.Namespace
) -> list[str]:
    started = time.perf_counter()
    fill(url, args.entries)
    print(
        f"{name}: {args.entries} entries stored in "
        f"{time.perf_counter() - started:.1f} s",
        flush=True,
    )
    rows = []
    for clients in args.clients:
        measured = measure(url, folder, clients, args.calls, args.workers)
        for call in ("recall", "remember"):
            s, h = measured["stdio"][call], measured["http"][call]
            rows.append(
                f"{name:<10} {clients:>7} {call:<8} {len(s):>5} "
                f"{statistics.median(s) * 1e3:>9.2f} {p99(s) * 1e3:>9.2f} "
                f"{statistics.median(h) * 1e3:>9.2f} {p99(h) * 1e3:>9.2f} "
                f"{statistics.median(h) / statistics.median(s):>7.2f}"
            )
        print(rows[-2], rows[-1], sep="\n", flush=True)
    return rows


# --- the HTTP path's own cost, in-process -------------------------------------


def _asgi_post(app: Any, path: str, body: bytes, headers: dict[str, str]) -> Any:
    """One POST through the ASGI app (no socket); the response's status."""
    raw = [(k.encode(), v.encode()) for k, v in headers.items()]
    raw.append((b"content-length", str(len(body)).encode()))
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": raw,
        "client": ("127.0.0.1", 40000),
        "server": ("127.0.0.1", 8765),
    }
    status: list[int] = []
    sent = False

    async def receive() -> dict[str, Any]:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            status.append(message["status"])

    async def post() -> int:
        await app(scope, receive, send)
        return status[0]

    return post()


def path_cost(entries_count: int, calls: int) -> list[str]:
    """CPU ms per request through the app and of the store call alone."""
    import hashlib

    from poolsplit_memory import _http
    from poolsplit_memory._tokens import TokenRecord
    from poolsplit_memory.mcp_server import build_server

    token = "psm_path_cost_benchmark_token"
    record = TokenRecord("bench", hashlib.sha256(token.encode()).hexdigest(), ("t0",))
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        url = os.path.join(folder, "memory.db")
        fill(url, entries_count, namespace="t0")
        config = _http.HttpConfig(url=url, tokens=(record,))
        app = _http.build_app(build_server(_http.tenant_store()), config)
        headers = {
            "host": "127.0.0.1:8765",
            "content-type": "application/json",
            "accept": "application/json, text/event-stream",
            "mcp-protocol-version": "2025-06-18",
            "authorization": f"Bearer {token}",
        }
        store = open_store(url, namespace="t0")
        cases: tuple[tuple[str, dict[str, str], Callable[[], object]], ...] = (
            ("get", {"id": "not-stored"}, lambda: store.get("not-stored")),
            ("recall", {"message": MESSAGES[0]}, lambda: store.recall(MESSAGES[0])),
        )

        async def run() -> None:
            async with app.router.lifespan_context(app):
                for tool, arguments, direct in cases:
                    body = json.dumps(
                        {
                            "jsonrpc": "2.0",
                            "id": 1,
                            "method": "tools/call",
                            "params": {"name": tool, "arguments": arguments},
                        }
                    ).encode()
                    for _ in range(WARM_UP * 10):  # warm-up, untimed
                        status = await _asgi_post(app, "/mcp/t0", body, headers)
                        if status != 200:
                            raise SystemExit(f"{tool}: HTTP {status}")
                        direct()
                    http_ms, store_ms = [], []
                    for _ in range(5):
                        cpu = time.process_time()
                        for _ in range(calls):
                            await _asgi_post(app, "/mcp/t0", body, headers)
                        http_ms.append(1e3 * (time.process_time() - cpu) / calls)
                        cpu = time.process_time()
                        for _ in range(calls):
                            direct()
                        store_ms.append(1e3 * (time.process_time() - cpu) / calls)
                    h, d = statistics.median(http_ms), statistics.median(store_ms)
                    rows.append(
                        f"{tool:<8} {h:>9.3f} {d:>9.3f} {h - d:>9.3f}   rounds "
                        + " ".join(f"{x:.3f}" for x in http_ms)
                    )

        try:
            anyio.run(run)
        finally:
            store.close()
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--entries", type=int, default=10_000)
    parser.add_argument(
        "--clients",
        type=lambda text: [int(n) for n in text.split(",")],
        default=[1, 4, 16],
        help="concurrent client counts, comma-separated (default 1,4,16)",
    )
    parser.add_argument("--calls", type=int, default=64, help="turns per count")
    parser.add_argument("--workers", type=int, default=1, help="HTTP processes")
    parser.add_argument("--pg-dsn", default=os.environ.get("POOLSPLIT_PG_DSN"))
    parser.add_argument(
        "--quick", action="store_true", help="1,000 entries, 1 and 4 clients"
    )
    parser.add_argument(
        "--path-cost",
        action="store_true",
        help="CPU per request of the HTTP path itself, in-process (see above)",
    )
    args = parser.parse_args(argv)
    if args.path_cost:
        print(
            f"the --http path in-process, SQLite, {args.entries} entries, CPU ms "
            f"per request (medians of 5 x {args.calls}); Python "
            f"{sys.version.split()[0]}, load {os.getloadavg()[0]:.1f}"
        )
        print(f"{'tool':<8} {'http':>9} {'store':>9} {'path':>9}")
        print("\n".join(path_cost(args.entries, args.calls)), flush=True)
        return 0
    if args.quick:
        args.entries, args.clients, args.calls = 1_000, [1, 4], 16
    header = (
        f"{'backend':<10} {'clients':>7} {'call':<8} {'calls':>5} "
        f"{'stdio med':>9} {'stdio p99':>9} {'http med':>9} {'http p99':>9} "
        f"{'http/std':>7}"
    )
    print(
        f"poolsplit-mcp over stdio vs --http ({args.workers} worker(s)), "
        f"{args.entries} entries, milliseconds; Python {sys.version.split()[0]}",
        flush=True,
    )
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        rows += backend_rows("sqlite", os.path.join(folder, "memory.db"), folder, args)
        if args.pg_dsn:
            with postgres_database(args.pg_dsn) as url:
                rows += backend_rows("postgresql", url, folder, args)
        else:
            rows.append("postgresql: skipped (pass --pg-dsn or set POOLSPLIT_PG_DSN)")
    print()
    print(header)
    print("\n".join(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
