"""The agent's loop over MCP stdio: recall, remember, recall, ... (issue 26).

    pip install 'poolsplit-memory[mcp,postgres]'   # or the wheels, see README
    eval "$(bash scripts/start-postgres.sh)"        # for the PostgreSQL rows
    python benchmarks/mcp_agent_loop.py [--sizes 1000,10000,100000] [--turns 200]
                                    [--pg-dsn URL] [--quick]

For each backend (SQLite; PostgreSQL with ``--pg-dsn`` or
``POOLSPLIT_PG_DSN``, else a line saying it is skipped) and each size, a
namespace is filled with that many entries (``mcp_recall.entries``, shape
``spread``: each ``created`` a distinct moment of the past year), served by
the installed ``poolsplit-mcp`` (the script beside this interpreter, else on
PATH) and driven by the ``mcp`` client over one connection. Each turn, as an
agent does it:

1. an empty tool call (``get`` of an id the store lacks: one indexed lookup),
2. ``remember`` (untimed), then ``recall``: the recall right after a write,
3. ``recall`` again: a warm recall,
4. a write to another namespace of the same database by another store in
   this process (untimed), then ``recall``: what that write costs this one.

Five untimed turns warm it up. Reported per size: median and p99 of each,
and the ratios the issue sets targets for: after-write / warm (at most 2 at
10,000 and 100,000), warm / empty (at most 2 at 10,000; reported at
100,000), other-namespace / warm (nothing measurable: about 1). Nothing is
asserted; pytest never collects this. ``--quick`` (CI): sizes 200 and
1,000, 21 turns.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import statistics
import sys
import tempfile
import time
import uuid
from typing import Any

import anyio
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters
from mcp_recall import MESSAGES, entries, server_command
from poolsplit_memory import open_store

WARM_UP = 5
KINDS = ("after write", "warm", "after other ns", "empty call")


def fill(url: str, namespace: str, total: int) -> float:
    """Import ``total`` entries into ``namespace``; return the seconds taken."""
    lines = "".join(json.dumps(entry) + "\n" for entry in entries(total, "spread"))
    started = time.perf_counter()
    with open_store(url, namespace=namespace) as store:
        store.import_jsonl(io.StringIO(lines))
    return time.perf_counter() - started


def p99(samples: list[float]) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))]


def loop(url: str, namespace: str, turns: int) -> dict[str, list[float]]:
    """The timed turns over one stdio connection (see the module docstring)."""
    params = StdioServerParameters(
        command=server_command(), args=["--db", url, "--namespace", namespace]
    )
    times: dict[str, list[float]] = {kind: [] for kind in KINDS}
    other = open_store(url, namespace=f"{namespace}-other")

    async def call(client: Client, tool: str, arguments: dict[str, Any]) -> float:
        start = time.perf_counter()
        result = await client.call_tool(tool, arguments)
        elapsed = time.perf_counter() - start
        if result.is_error:
            raise SystemExit(f"{tool} failed: {result.content}")
        return elapsed

    async def run() -> None:
        async with Client(params) as client:
            for turn in range(WARM_UP + turns):
                message = MESSAGES[turn % len(MESSAGES)]
                took = {"empty call": await call(client, "get", {"id": "none"})}
                await call(
                    client,
                    "remember",
                    {"content": f"turn {turn}: {message}", "type": "episode"},
                )
                took["after write"] = await call(client, "recall", {"message": message})
                took["warm"] = await call(client, "recall", {"message": message})
                other.remember(f"elsewhere, turn {turn}", type="fact")
                took["after other ns"] = await call(
                    client, "recall", {"message": message}
                )
                if turn >= WARM_UP:
                    for kind, elapsed in took.items():
                        times[kind].append(elapsed)

    try:
        anyio.run(run)
    finally:
        other.close()
    return times


def report(
    backend: str, total: int, filled: float, times: dict[str, list[float]]
) -> None:
    median = {kind: statistics.median(samples) for kind, samples in times.items()}
    print(
        f"-- {backend}, {total:,} entries (filled in {filled:.1f} s), "
        f"{len(times['warm'])} turns"
    )
    for kind in KINDS:
        print(
            f"   {kind:<16} median {median[kind] * 1e3:8.2f} ms   "
            f"p99 {p99(times[kind]) * 1e3:8.2f} ms"
        )
    after = median["after write"] / median["warm"]
    warm = median["warm"] / median["empty call"]
    other = median["after other ns"] / median["warm"]
    print(
        f"   after write / warm {after:.2f}   warm / empty {warm:.2f}   "
        f"after other ns / warm {other:.2f}"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--pg-dsn", default=os.environ.get("POOLSPLIT_PG_DSN"))
    parser.add_argument("--quick", action="store_true", help="sizes 200,1000; 21 turns")
    args = parser.parse_args(argv)
    sizes = [200, 1000] if args.quick else [int(s) for s in args.sizes.split(",")]
    turns = 21 if args.quick else args.turns
    print(f"== the agent loop over MCP stdio, python {sys.version.split()[0]}")
    with tempfile.TemporaryDirectory() as folder:
        backends = [("SQLite", os.path.join(folder, "memory.db"))]
        if args.pg_dsn:
            backends.append(("PostgreSQL", args.pg_dsn))
        else:
            print("(PostgreSQL skipped: no --pg-dsn and no POOLSPLIT_PG_DSN)")
        for backend, url in backends:
            for total in sizes:
                namespace = f"agent-{total}-{uuid.uuid4().hex[:6]}"
                filled = fill(url, namespace, total)
                report(backend, total, filled, loop(url, namespace, turns))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
