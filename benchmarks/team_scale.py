"""A team's memory server at scale: many tenants, two instances, one PostgreSQL.

    pip install 'poolsplit-memory[mcp,postgres]'   # or the wheels, see README
    eval "$(bash scripts/start-postgres.sh)"        # a server to create a database in
    python benchmarks/team_scale.py [--tenants 1000] [--memories 1000]
                                    [--pool-size 4] [--snapshot-budget 256]
                                    [--calls 200] [--ryw 1000] [--pg-dsn URL]
    python benchmarks/team_scale.py --quick        # CI: 20 tenants of 50
    python benchmarks/team_scale.py --ab-only --tenants 4 [--write]  # step 6 only
    python benchmarks/team_scale.py --sqlite --memories 10000 [--write]  # on SQLite

What it does, in one run (nothing is asserted; pytest never collects this):

1. **Fill.** A new database on the server of ``--pg-dsn`` (or
   ``POOLSPLIT_PG_DSN``), dropped at the end. ``open_store`` creates the
   schema; then every tenant's ``--memories`` entries go in by one ``COPY``
   per 50 tenants, each row built by the store's own ``build_entry`` and row
   rule (``store._row``: its columns and identical-memory digest), so the
   triggers log and version them as any write (much faster than
   ``import_jsonl`` per tenant, which checks every line against the
   namespace).
2. **Two instances**, each ``poolsplit-mcp --http 127.0.0.1:0 --workers 2
   --pool-size P --snapshot-budget MB --tokens FILE`` (one token per team of
   10 tenants),
   requests spread over both (a load balancer's round robin).
3. **Every tenant touched**: one recall per tenant on each instance,
   ``--touch`` rounds (1: about half the tenants reach each worker; 2:
   about 3 in 4): then the database's
   client connections (``pg_stat_activity``) against pool size x 4
   processes, and each process's resident memory (VmRSS); after step 5,
   each worker's peak (VmHWM) against its resident memory at start.
4. **Latency**: recall and remember p50/p99 (nearest rank) with 1, 4 and 16
   clients, for a hot tenant (every call the same one: its snapshot warm)
   and cold tenants (each call a tenant not served since the fill round:
   its snapshot evicted by the budget, read again whole).
5. **Read-your-writes across instances**: ``--ryw`` writes, each
   acknowledged by one instance and recalled at once on the other.
6. **Workers**: one more instance with ``--workers 1`` beside one with
   ``--workers 2``; 16 clients of hot-tenant recalls (4 processes of 4
   threads, a new connection per request, ``--client-cpus`` to pin them),
   rounds alternating between them (interleaved A/B): the median
   requests/s of each and their ratio, the cores the clients and each
   server used, and the requests each of the two workers served.
   ``--write``: each client call a recall then a remember (two requests;
   issue 36's load: "recall and remember"). ``--ab-only``: this step alone,
   over ``--tenants`` of ``--memories``. ``--sqlite``: this step alone on one
   SQLite file (no PostgreSQL), one tenant of ``--memories`` entries
   (``http_recall``'s demo store cycled: issue 36's own load was measured on
   SQLite at 10,000). Each round also reads the cores used by PostgreSQL's
   backends of the database and by the whole machine (``/proc/stat``: other
   users' work included), and the CPU milliseconds per request.

The machine may be shared: every figure is from one run, ratios of medians
of interleaved rounds where two things are compared.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import hashlib
import http.client
import json
import math
import multiprocessing
import os
import random
import secrets
import statistics
import sys
import tempfile
import threading
import time
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

import http_recall  # beside this file
import psycopg
from http_recall import Server, p99, postgres_database, serve
from poolsplit_memory import open_store
from poolsplit_memory import store as store_module

_VOCABULARY = (
    "billing deploy schema invoice retry cache token budget ranking review "
    "release migration backup index tenant snapshot latency worker replica "
    "postgres sqlite recall remember forget update audit export import "
    "customer onboarding roadmap incident alert dashboard metric quota"
)
WORDS = tuple(_VOCABULARY.split())
KINDS = ("fact", "fact", "task", "note", "episode", "skill")
HEADERS = {
    "content-type": "application/json",
    "accept": "application/json, text/event-stream",
    "mcp-protocol-version": "2025-06-18",
}


# --- the database -------------------------------------------------------------


def content(rng: random.Random, tenant: int, n: int) -> str:
    words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 20)))
    return f"t{tenant} memory {n}: {words}"


def fill(url: str, tenants: int, memories: int, seed: int) -> float:
    """Every tenant's memories, by COPY (see the module doc); the seconds."""
    started = time.perf_counter()
    with open_store(url, namespace="t0"):
        pass  # the schema
    rng = random.Random(seed)
    columns = (
        "namespace, id, type, status, scope, superseded_by, client_key, body, "
        "memory_hash"
    )
    with psycopg.connect(url, autocommit=True) as conn:
        for first in range(0, tenants, 50):
            sql = f"COPY poolsplit_entries ({columns}) FROM STDIN"
            with conn.transaction(), conn.cursor() as cur, cur.copy(sql) as copy:
                for tenant in range(first, min(first + 50, tenants)):
                    for n in range(memories):
                        entry = store_module.build_entry(
                            content(rng, tenant, n),
                            type=KINDS[n % len(KINDS)],
                            tags=[rng.choice(WORDS)],
                        )
                        row = store_module._row(entry)
                        copy.write_row(
                            (
                                f"t{tenant}",
                                row.id,
                                row.type,
                                row.status,
                                row.scope,
                                row.superseded_by,
                                None,
                                row.body,
                                row.memory_hash,
                            )
                        )
        conn.execute("ANALYZE")
    return time.perf_counter() - started


def client_connections(url: str) -> int:
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
            "AND backend_type = 'client backend' AND pid <> pg_backend_pid()"
        ).fetchone()
    assert row is not None  # count(*) has one row
    return int(row[0])


# --- servers and clients --------------------------------------------------------


def write_tokens(path: Path, tenants: int) -> list[str]:
    """One token per team of 10 tenants, in the tokens file's format
    (version 1); the token of each tenant, by tenant."""
    teams = [f"psm_{secrets.token_urlsafe(24)}" for _ in range(0, tenants, 10)]
    records = [
        {
            "name": f"team{k}",
            "sha256": hashlib.sha256(token.encode()).hexdigest(),
            "namespaces": [f"t{n}" for n in range(10 * k, min(10 * k + 10, tenants))],
            "read_only": False,
        }
        for k, token in enumerate(teams)
    ]
    path.write_text(json.dumps({"version": 1, "tokens": records}))
    path.chmod(0o600)
    return [teams[n // 10] for n in range(tenants)]


class Client:
    """One keep-alive HTTP connection per server, plain JSON-RPC."""

    def __init__(self, servers: list[Server], *, fresh: bool = False) -> None:
        self.servers = servers
        self.fresh = fresh  # a new connection per request (``connection: close``)
        self.conns = [
            http.client.HTTPConnection(s.host, s.port, timeout=120) for s in servers
        ]
        self.turn = 0
        self.retries = 0

    def call(
        self,
        tool: str,
        arguments: dict[str, Any],
        token: str,
        tenant: str,
        server: int | None = None,
    ) -> tuple[float, dict[str, Any]]:
        """(seconds, structuredContent) of one tools/call, on ``server`` or the
        next in turn (round robin)."""
        if server is None:
            server = self.turn % len(self.conns)
            self.turn += 1
        body = json.dumps(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "tools/call",
                "params": {"name": tool, "arguments": arguments},
            }
        )
        headers = {**HEADERS, "authorization": f"Bearer {token}"}
        if self.fresh:
            headers["connection"] = "close"  # http.client opens the next one
        for attempt in range(4):
            conn = self.conns[server]
            started = time.perf_counter()
            try:
                conn.request("POST", f"/mcp/{tenant}", body, headers)
                reply = conn.getresponse()
                data = reply.read()
            except (OSError, http.client.HTTPException):
                # a closed keep-alive connection, or a worker uvicorn replaced
                # (see restarts below): again, at most 3 times
                conn.close()
                s = self.servers[server]
                self.conns[server] = http.client.HTTPConnection(
                    s.host, s.port, timeout=120
                )
                if attempt == 3:
                    raise
                self.retries += 1
                continue
            took = time.perf_counter() - started
            result = json.loads(data)["result"]
            if result.get("isError"):
                raise RuntimeError(f"{tool} failed: {result['content'][0]['text']}")
            return took, result["structuredContent"]
        raise AssertionError("unreachable")


def memory_mb(pid: int, field: str = "VmRSS") -> float:
    """A process's resident memory now (``VmRSS``) or at its peak so far
    (``VmHWM``), in MiB."""
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(f"{field}:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def cpu_seconds(pids: list[int]) -> float:
    """User + system CPU seconds these processes have used so far."""
    ticks = 0
    for pid in pids:
        with contextlib.suppress(OSError):
            fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
            ticks += int(fields[11]) + int(fields[12])  # utime, stime
    return ticks / os.sysconf("SC_CLK_TCK")


def database_pids(url: str) -> list[int]:
    """The PostgreSQL backends serving ``url``'s database now (not this
    query's own), so that their CPU time can be read; none for SQLite."""
    if not url.startswith(("postgresql:", "postgres:")):
        return []
    with psycopg.connect(url, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = current_database() "
            "AND pid <> pg_backend_pid()"
        ).fetchall()
    return [int(row[0]) for row in rows]


def busy_seconds() -> float:
    """CPU seconds the whole machine has spent not idle so far (every
    process, other users' too: /proc/stat's first line)."""
    fields = [int(n) for n in Path("/proc/stat").read_text().split("\n")[0].split()[1:]]
    idle = fields[3] + fields[4]  # idle, iowait
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def autogroup() -> bool:
    """Whether the kernel shares CPU time per session first (``autogroup``):
    then, on a busy machine, a server gets its session's slice however many
    workers it runs."""
    flag = Path("/proc/sys/kernel/sched_autogroup_enabled")
    with contextlib.suppress(OSError):
        return flag.read_text().strip() == "1"
    return False


def run_clients(
    servers: list[Server],
    clients: int,
    calls: int,
    work: Callable[[Client, int, int], Any],
    fresh: bool = False,
) -> list[Any]:
    """``work(client, number, i)`` ``calls`` times in all, over ``clients``
    threads (each its own keep-alive connections, or with ``fresh`` a new
    connection per request); the list of what each call returned."""
    out: list[Any] = []
    lock = threading.Lock()
    errors: list[BaseException] = []
    per = max(1, calls // clients)

    def run(number: int) -> None:
        client = Client(servers, fresh=fresh)
        client.turn = number
        try:
            for i in range(per):
                got = work(client, number, i)
                with lock:
                    out.append(got)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(n,)) for n in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]
    return out


# --- the steps ------------------------------------------------------------------


def touch_all(servers: list[Server], tokens: list[str], rounds: int) -> float:
    started = time.perf_counter()
    tenants = len(tokens)

    def work(client: Client, number: int, i: int) -> None:
        tenant = (number * per + i) % tenants
        for server in range(len(servers)):
            client.call(
                "recall",
                {"message": "billing deploy"},
                tokens[tenant],
                f"t{tenant}",
                server,
            )

    per = math.ceil(tenants / 8)
    for _ in range(rounds):
        run_clients(servers, 8, per * 8, work)
    return time.perf_counter() - started


def latency(
    servers: list[Server],
    tokens: list[str],
    clients: int,
    calls: int,
    hot: bool,
    rng: random.Random,
) -> dict[str, list[float]]:
    """recall and remember seconds, each call a recall then a remember."""
    tenants = len(tokens)
    cold = iter(rng.sample(range(1, tenants), min(tenants - 1, calls)))
    lock = threading.Lock()

    def work(client: Client, number: int, i: int) -> tuple[float, float]:
        if hot:
            tenant = 0
        else:
            with lock:
                tenant = next(cold, rng.randrange(1, tenants))
        message = " ".join(rng.choice(WORDS) for _ in range(3))
        took_recall, _ = client.call(
            "recall", {"message": message}, tokens[tenant], f"t{tenant}"
        )
        took_write, _ = client.call(
            "remember",
            {"content": f"c{number} call {i} {message}", "type": "note"},
            tokens[tenant],
            f"t{tenant}",
        )
        return took_recall, took_write

    got = run_clients(servers, clients, calls, work)
    return {"recall": [r for r, _ in got], "remember": [w for _, w in got]}


def read_your_writes(servers: list[Server], tokens: list[str], count: int) -> int:
    client = Client(servers)
    seen = 0
    for n in range(count):
        tenant = n % len(tokens)
        writer, reader = n % 2, 1 - n % 2
        marker = f"ryw{n}x{secrets.token_hex(3)}"
        _, written = client.call(
            "remember",
            {"content": f"note {marker}"},
            tokens[tenant],
            f"t{tenant}",
            writer,
        )
        _, recalled = client.call(
            "recall", {"message": marker}, tokens[tenant], f"t{tenant}", reader
        )
        ids = {i for ids in recalled["pools"].values() for i in ids}
        seen += written["id"] in ids
    return seen


def _client_load(job: tuple[str, int, list[str], int, int, bool]) -> float:
    """One client process of the workers A/B: 4 threads of hot-tenant calls
    (16 clients in one Python process would measure its own GIL), each call
    a recall, or with ``write`` a recall then a remember (the agent's loop,
    the issue's "recall and remember"); the CPU seconds the process used."""
    host, port, tokens, first, per, write = job
    cpu = time.process_time()
    address = types.SimpleNamespace(host=host, port=port)

    def work(client: Client, number: int, i: int) -> None:
        n = first + number
        tenant = n % len(tokens)
        message = f"{WORDS[(n + i) % len(WORDS)]} deploy"
        client.call("recall", {"message": message}, tokens[tenant], f"t{tenant}")
        if write:
            client.call(
                "remember",
                {"content": f"c{n} call {i} {message}", "type": "note"},
                tokens[tenant],
                f"t{tenant}",
            )

    # A new connection per request: uvicorn's workers accept from one shared
    # socket, the first awake taking every connection pending, so 16
    # keep-alive connections opened at once land unevenly (1,101 and 501
    # requests on the two workers in one such round); a balancer's requests
    # reach whichever worker accepts next.
    run_clients([address], 4, 4 * per, work, fresh=True)  # type: ignore[list-item]
    return time.process_time() - cpu


def _pin(cpus: set[int] | None) -> None:
    if cpus is not None:
        os.sched_setaffinity(0, cpus)


def workers_ab(
    one: Server,
    two: Server,
    tokens: list[str],
    calls: int,
    rounds: int,
    cpus: set[int] | None,
    write: bool = False,
    url: str = "",
) -> dict[int, dict[str, list[float]]]:
    """Per worker count (1, 2), per round: the requests/s of 16 clients (4
    processes of 4 threads, on ``cpus`` if given) of hot-tenant calls (each
    a recall, with ``write`` a recall then a remember: two requests), and
    the cores the clients, the server's processes, PostgreSQL's backends of
    ``url``'s database and the whole machine used (CPU seconds over the
    round's seconds); rounds alternating between the servers."""
    got: dict[int, dict[str, list[float]]] = {
        n: {"rate": [], "clients": [], "server": [], "database": [], "machine": []}
        for n in (1, 2)
    }
    per = max(1, calls // 16)
    context = multiprocessing.get_context("fork")
    with context.Pool(4, initializer=_pin, initargs=(cpus,)) as pool:
        for r in range(rounds):
            order = [(1, one), (2, two)] if r % 2 == 0 else [(2, two), (1, one)]
            for workers, server in order:
                jobs = [
                    (server.host, server.port, tokens[:4], 4 * k, per, write)
                    for k in range(4)
                ]
                pids = [pid for _, pid in server.processes()]
                backends = database_pids(url)
                server_cpu, database_cpu = cpu_seconds(pids), cpu_seconds(backends)
                machine = busy_seconds()
                started = time.perf_counter()
                clients_cpu = sum(pool.map(_client_load, jobs))
                took = time.perf_counter() - started
                cores = {
                    "clients": clients_cpu,
                    "server": cpu_seconds(pids) - server_cpu,
                    "database": cpu_seconds(backends) - database_cpu,
                    "machine": busy_seconds() - machine,
                }
                got[workers]["rate"].append(16 * per * (1 + write) / took)
                for key, seconds in cores.items():
                    got[workers][key].append(seconds / took)
    return got


# --- main -------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tenants", type=int, default=1000)
    parser.add_argument("--memories", type=int, default=1000)
    parser.add_argument("--pool-size", type=int, default=4)
    parser.add_argument("--snapshot-budget", type=int, default=256, metavar="MB")
    parser.add_argument("--calls", type=int, default=200, help="per latency row")
    parser.add_argument("--ryw", type=int, default=1000)
    parser.add_argument("--touch", type=int, default=1, help="rounds over every tenant")
    parser.add_argument("--rounds", type=int, default=6, help="workers A/B rounds")
    parser.add_argument("--pg-dsn", default=os.environ.get("POOLSPLIT_PG_DSN"))
    parser.add_argument("--seed", type=int, default=36)
    parser.add_argument(
        "--client-cpus",
        dest="cpus",
        type=lambda text: {int(n) for n in text.split(",")},
        help="pin the workers A/B's client processes to these CPUs (e.g. 0)",
    )
    parser.add_argument(
        "--ab-only",
        action="store_true",
        help="only step 6 (the workers A/B), over --tenants of --memories",
    )
    parser.add_argument(
        "--sqlite",
        action="store_true",
        help="the workers A/B alone on one SQLite file: one tenant of --memories "
        "entries (http_recall's demo store cycled), no PostgreSQL",
    )
    parser.add_argument(
        "--write",
        action="store_true",
        help="the workers A/B's clients recall then remember (else recall only)",
    )
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    if args.quick:
        args.tenants, args.memories, args.calls, args.ryw, args.rounds = (
            20,
            50,
            32,
            50,
            2,
        )
    if args.sqlite:
        args.tenants = 1
    elif not args.pg_dsn:
        raise SystemExit("team_scale: give --pg-dsn or set POOLSPLIT_PG_DSN")
    rng = random.Random(args.seed)
    print(
        f"# team_scale: {'sqlite, ' if args.sqlite else ''}"
        f"{args.tenants} tenants x {args.memories} memories, "
        f"pool size {args.pool_size}, snapshot budget {args.snapshot_budget} MB, "
        f"Python {sys.version.split()[0]}, {os.cpu_count()} cpus, "
        f"load {os.getloadavg()[0]:.1f}"
    )
    with contextlib.ExitStack() as stack:
        folder = Path(stack.enter_context(tempfile.TemporaryDirectory()))
        tokens_file = folder / "tokens.json"
        tokens = write_tokens(tokens_file, args.tenants)
        extra = ["--tokens", str(tokens_file), "--pool-size", str(args.pool_size)]
        extra += ["--snapshot-budget", str(args.snapshot_budget)]
        if args.sqlite:
            url = str(folder / "memory.db")
            started = time.perf_counter()
            http_recall.fill(url, args.memories, namespace="t0")
            seconds = time.perf_counter() - started
            print(f"fill: {args.memories} entries by import_jsonl in {seconds:.0f} s")
            report_ab(url, folder, extra, tokens, args)
            return
        url = stack.enter_context(postgres_database(args.pg_dsn))
        seconds = fill(url, args.tenants, args.memories, args.seed)
        print(f"fill: {args.tenants * args.memories} rows by COPY in {seconds:.0f} s")
        if args.ab_only:
            report_ab(url, folder, extra, tokens, args)
        else:
            measure(folder, url, extra, tokens, args, rng)


def measure(
    folder: Path,
    url: str,
    extra: list[str],
    tokens: list[str],
    args: argparse.Namespace,
    rng: random.Random,
) -> None:
    with (
        serve(url, folder, 2, extra) as a,
        serve(url, folder, 2, extra) as b,
    ):
        servers = [a, b]
        base = {pid: memory_mb(pid) for s in servers for _, pid in s.processes()}
        seconds = touch_all(servers, tokens, args.touch)
        print(
            f"touch: every tenant recalled {args.touch} x on each instance "
            f"in {seconds:.0f} s"
        )
        print(
            f"connections: {client_connections(url)} "
            f"(at most pool size {args.pool_size} x 4 processes = "
            f"{args.pool_size * 4})"
        )
        for label, server in (("A", a), ("B", b)):
            pids = server.processes()
            print(
                f"memory {label}: "
                + ", ".join(f"{role} {memory_mb(pid):.0f} MB" for role, pid in pids)
            )
        print(
            "\n| tenant | clients | recall p50 ms | recall p99 ms | "
            "remember p50 ms | remember p99 ms |"
        )
        print("|---|---:|---:|---:|---:|---:|")
        for clients in (1, 4, 16):
            for hot in (True, False):
                got = latency(servers, tokens, clients, args.calls, hot, rng)
                r, w = got["recall"], got["remember"]
                print(
                    f"| {'hot' if hot else 'cold'} | {clients} | "
                    f"{1000 * statistics.median(r):.0f} | "
                    f"{1000 * p99(r):.0f} | "
                    f"{1000 * statistics.median(w):.0f} | "
                    f"{1000 * p99(w):.0f} |"
                )
        started = time.perf_counter()
        seen = read_your_writes(servers, tokens, args.ryw)
        took = time.perf_counter() - started
        print(
            f"\nread-your-writes across instances: {seen} of {args.ryw} "
            f"({1000 * took / args.ryw:.1f} ms per write + recall)"
        )
        print(f"connections after: {client_connections(url)}")
        for label, server in (("A", a), ("B", b)):
            peaks = [
                f"{role} {memory_mb(pid, 'VmHWM'):.0f} MB (started at "
                f"{base.get(pid, float('nan')):.0f})"
                for role, pid in server.processes()
                if role == "worker"
            ]
            print(f"peak memory {label}: " + ", ".join(peaks))
        for label, server in (("A", a), ("B", b)):
            started = server.log.read_text().count("Started server process")
            print(
                f"worker restarts {label}: {started - 2} (uvicorn replaces a worker "
                "that misses its 30 s health check)"
            )
    report_ab(url, folder, extra, tokens, args)


def report_ab(
    url: str,
    folder: Path,
    extra: list[str],
    tokens: list[str],
    args: argparse.Namespace,
) -> None:
    """Step 6: the workers A/B, one ``--workers 1`` and one ``--workers 2``
    instance over ``url``, and its lines."""
    what = "recall + remember" if args.write else "hot recalls"
    with (
        serve(url, folder, 1, extra) as one,
        serve(url, folder, 2, extra) as two,
    ):
        ab = workers_ab(
            one, two, tokens, args.calls * 2, args.rounds, args.cpus, args.write, url
        )
        ones, twos = ab[1]["rate"], ab[2]["rate"]
        pinned = "" if args.cpus is None else f", clients on CPUs {sorted(args.cpus)}"
        print(
            f"16 clients, {what}: 1 worker {statistics.median(ones):.1f} req/s, "
            f"2 workers {statistics.median(twos):.1f} req/s, ratio "
            f"{statistics.median(twos) / statistics.median(ones):.2f} "
            f"(medians of {args.rounds} interleaved rounds{pinned}; "
            f"load {os.getloadavg()[0]:.1f})"
        )
        served = collections.Counter(
            json.loads(line)["pid"]
            for line in two.log.read_text().splitlines()
            if line.startswith("{") and '"/mcp/' in line
        )
        print(
            "  requests served by each of the 2 workers: "
            + ", ".join(str(n) for n in sorted(served.values(), reverse=True))
        )
        others = {  # other users' work, the kernel's: the machine less the above
            n: statistics.median(
                m - c - s - d
                for m, c, s, d in zip(
                    ab[n]["machine"],
                    ab[n]["clients"],
                    ab[n]["server"],
                    ab[n]["database"],
                )
            )
            for n in (1, 2)
        }
        if autogroup():
            print(
                "  (the kernel shares the CPUs per session, sched_autogroup: the "
                "server and its clients share this run's session's slice)"
            )
        for n in (1, 2):
            cores = {key: statistics.median(ab[n][key]) for key in ab[n]}
            ms = {  # CPU milliseconds per request, the median of the rounds'
                key: 1000
                * statistics.median(c / r for c, r in zip(ab[n][key], ab[n]["rate"]))
                for key in ("server", "database")
            }
            print(
                f"  {n} worker(s): cores used by the clients {cores['clients']:.2f}, "
                f"by the server {cores['server']:.2f}, by PostgreSQL "
                f"{cores['database']:.2f}, by everything else "
                f"{others[n]:.2f} (medians); CPU ms per request: server "
                f"{ms['server']:.2f}, "
                f"PostgreSQL {ms['database']:.2f}; rates "
                + " ".join(f"{rate:.0f}" for rate in ab[n]["rate"])
            )


if __name__ == "__main__":
    main()
