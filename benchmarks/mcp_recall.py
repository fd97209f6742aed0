"""Recall cost of poolsplit-memory: over MCP stdio, and warm on PostgreSQL.

    pip install 'poolsplit-memory[mcp,postgres]'   # or the wheels, see README
    eval "$(bash scripts/start-postgres.sh)"        # for the PostgreSQL part
    python benchmarks/mcp_recall.py [--entries 10000] [--calls 21]
                                    [--pg-entries 50000] [--pg-dsn URL]

1. **stdio**: a SQLite store of ``--entries`` entries (the demo store cycled,
   ids made unique), in two shapes: ``spread``, each ``created`` a distinct
   moment of the past year (what ``remember`` writes over a year of use),
   and ``tied``, each demo entry's 33 copies sharing its ``created``, all of
   them past the recency horizon (scores tie by the hundred: the index's
   worst case). Each is served by the installed ``poolsplit-mcp`` (the script
   beside this interpreter, else on PATH) and driven by the ``mcp`` client.
   Over one connection, turn by turn in alternating order: ``recall`` with a
   message, the cheapest tool call (``get`` of an id the store lacks: one
   indexed lookup) and a ``tools/list`` request (no tool at all). Three untimed
   turns warm it up. Reported: each median and minimum, recall's median over
   the empty call's (target: at most 2) and the median of the turn-by-turn
   ratios; then ``store.recall`` in this process on the same file, so that
   the difference is the server's and the transport's share.
2. **PostgreSQL** (with ``--pg-dsn`` or ``POOLSPLIT_PG_DSN``; skipped with a
   line saying so otherwise): a fresh database of ``--pg-entries`` entries.
   Run A opens the store, recalls once (cold) and closes; run B opens it,
   recalls once (cold), then ``--calls`` times (warm, timed), and closes.
   Rows read come from ``pg_stat_user_tables`` (``seq_tup_read +
   idx_tup_fetch``, flushed when a session ends), so B minus A is what the
   warm recalls read, per table (target: 0 entry rows).

Ratios and counts are reported, never asserted; pytest never collects this.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from datetime import datetime, timezone
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


SHAPES = ("spread", "tied")
YEAR = 365 * 86400.0


def entries(total: int, shape: str = "tied") -> Iterator[dict[str, Any]]:
    """``total`` live entries: the demo store cycled, ids unique, 8 always.

    ``created`` is an ISO-8601 string, as ``remember`` writes it (the demo's
    are numbers, which the core scores on its general path, not its fast one):
    the demo's own for ``tied``, for ``spread`` the entry's share of the past
    year (distinct, evenly spaced, in a fixed shuffled order).
    """
    demo = demo_store(300)
    now = time.time()
    for number in range(total):
        entry = dict(demo[number % len(demo)])
        entry["id"] = f"{entry['id']}-{number}"
        if shape == "spread":
            age = YEAR * ((number * 7919) % total) / total
            entry["created"] = now - age
        if isinstance(entry.get("created"), (int, float)):
            stamp = datetime.fromtimestamp(entry["created"], timezone.utc)
            entry["created"] = stamp.isoformat()
        if entry.get("scope") == "always" and number >= len(demo):
            del entry["scope"]  # keep the always set small, as in a real store
        yield entry


def fill(url: str, total: int, shape: str = "tied") -> None:
    lines = "".join(json.dumps(entry) + "\n" for entry in entries(total, shape))
    with open_store(url) as store:
        store.import_jsonl(io.StringIO(lines))


def server_command() -> str:
    beside = Path(sys.executable).with_name("poolsplit-mcp")
    found = str(beside) if beside.is_file() else shutil.which("poolsplit-mcp")
    if found is None:
        raise SystemExit("poolsplit-mcp is not installed (pip install the wheels)")
    return found


def summary(name: str, samples: list[float]) -> str:
    return (
        f"{name:<24} median {statistics.median(samples) * 1e3:8.2f} ms   "
        f"min {min(samples) * 1e3:8.2f} ms"
    )


# --- 1. recall over stdio ----------------------------------------------------


def stdio_part(total: int, calls: int, shape: str) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "memory.db")
        started = time.perf_counter()
        fill(path, total, shape)
        filled = time.perf_counter() - started
        params = StdioServerParameters(
            command=server_command(), args=["--db", path], cwd=folder
        )
        times: dict[str, list[float]] = {"recall": [], "empty": [], "list_tools": []}
        loaded: list[int] = []

        async def timed(client: Client, kind: str, turn: int) -> float:
            start = time.perf_counter()
            if kind == "list_tools":
                await client.list_tools()
                return time.perf_counter() - start
            if kind == "recall":
                message = MESSAGES[turn % len(MESSAGES)]
                result = await client.call_tool("recall", {"message": message})
            else:
                result = await client.call_tool("get", {"id": "no-such-entry"})
            elapsed = time.perf_counter() - start
            if result.is_error or result.structured_content is None:
                raise SystemExit(f"{kind} failed: {result.content}")
            if kind == "recall":
                pools = result.structured_content["pools"]
                loaded.append(sum(len(ids) for ids in pools.values()))
            return elapsed

        async def run() -> None:
            async with Client(params) as client:
                kinds = ["recall", "empty", "list_tools"]
                for turn in range(WARM_UP + calls):
                    order = kinds if turn % 2 else kinds[::-1]
                    for kind in order:
                        elapsed = await timed(client, kind, turn)
                        if turn >= WARM_UP:
                            times[kind].append(elapsed)

        anyio.run(run)
        local = in_process(path, calls)

    recall, empty = times["recall"], times["empty"]
    print(
        f"== recall over stdio, shape {shape}: {total:,} entries in SQLite (filled in "
        f"{filled:.1f} s), {calls} turns after {WARM_UP} warm-up turns, "
        f"python {sys.version.split()[0]}"
    )
    print(summary("recall", recall))
    print(summary("empty call (get)", empty))
    print(summary("tools/list (no tool)", times["list_tools"]))
    print(summary("store.recall in-process", local))
    ratio = statistics.median(recall) / statistics.median(empty)
    paired = statistics.median(r / e for r, e in zip(recall, empty))
    verdict = "met" if ratio <= 2 else "MISSED"
    print(
        f"recall / empty call: {ratio:.2f} (paired {paired:.2f}); target <= 2: "
        f"{verdict}; entries returned per recall: {min(loaded)}-{max(loaded)}"
    )
    server = statistics.median(recall) - statistics.median(local)
    print(
        f"stdio recall minus in-process recall (the server's and the transport's "
        f"share): {server * 1e3:.2f} ms"
    )


def in_process(path: str, calls: int) -> list[float]:
    """``store.recall`` on the same file without MCP: the recall's own cost."""
    times = []
    with open_store(path) as store:
        for turn in range(WARM_UP + calls):
            start = time.perf_counter()
            store.recall(MESSAGES[turn % len(MESSAGES)])
            if turn >= WARM_UP:
                times.append(time.perf_counter() - start)
    return times


# --- 2. warm recall on PostgreSQL -------------------------------------------


def table_reads(dsn: str) -> dict[str, tuple[int, int]]:
    """Per user table: (rows read so far, live rows), as the statistics say."""
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as con:
        rows = con.execute(
            "SELECT relname, coalesce(seq_tup_read, 0) + coalesce(idx_tup_fetch, 0),"
            " n_live_tup FROM pg_stat_user_tables"
        ).fetchall()
    return {str(name): (int(read), int(live)) for name, read, live in rows}


def settled_reads(dsn: str) -> dict[str, tuple[int, int]]:
    """The statistics once closed sessions have flushed theirs (bounded wait)."""
    last = table_reads(dsn)
    for _ in range(100):  # at most about 10 s
        time.sleep(0.1)
        now = table_reads(dsn)
        if now == last:
            return now
        last = now
    return last


def recall_session(dsn: str, warm: int) -> tuple[float, list[float]]:
    """Open, recall once cold, ``warm`` times warm, close: the times."""
    with open_store(dsn) as store:
        start = time.perf_counter()
        store.recall(MESSAGES[0])
        cold = time.perf_counter() - start
        times = []
        for turn in range(warm):
            start = time.perf_counter()
            store.recall(MESSAGES[turn % len(MESSAGES)])
            times.append(time.perf_counter() - start)
    return cold, times


def postgres_part(base_dsn: str, total: int, calls: int) -> None:
    import psycopg

    name = f"bench_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(base_dsn, autocommit=True) as con:
        con.execute(f'CREATE DATABASE "{name}"')
    dsn = f"{base_dsn.rpartition('/')[0]}/{name}"
    try:
        started = time.perf_counter()
        fill(dsn, total)
        filled = time.perf_counter() - started
        before = settled_reads(dsn)
        cold_a, _ = recall_session(dsn, 0)
        after_a = settled_reads(dsn)
        cold_b, warm = recall_session(dsn, calls)
        after_b = settled_reads(dsn)
    finally:
        with psycopg.connect(base_dsn, autocommit=True) as con:
            con.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    print(
        f"== warm recall on PostgreSQL: {total:,} entries (filled in {filled:.1f} s),"
        f" {calls} warm recalls in-process"
    )
    print(
        f"{'cold recall':<24} {cold_a * 1e3:8.2f} ms (run A), {cold_b * 1e3:.2f} ms (B)"
    )
    print(summary("warm recall", warm))
    print(f"{'table':<22} {'live rows':>10} {'read: cold':>11} {'warm/recall':>12}")
    entry_rows = None
    for table in sorted(after_b):
        live = after_b[table][1]
        cold_reads = after_a[table][0] - before.get(table, (0, 0))[0]
        warm_reads = after_b[table][0] - after_a[table][0] - cold_reads
        print(f"{table:<22} {live:>10,} {cold_reads:>11,} {warm_reads / calls:>12.1f}")
        if live >= total:
            entry_rows = warm_reads / calls
    if entry_rows is None:
        print("no table holds the entries' rows: the counts above are all there is")
    else:
        verdict = "met" if entry_rows == 0 else "MISSED"
        print(f"entry rows read per warm recall: {entry_rows:g}; target 0: {verdict}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=10_000)
    parser.add_argument("--calls", type=int, default=21)
    parser.add_argument("--pg-entries", type=int, default=50_000)
    parser.add_argument("--pg-dsn", default=os.environ.get("POOLSPLIT_PG_DSN"))
    args = parser.parse_args(argv)
    for shape in SHAPES:
        stdio_part(args.entries, args.calls, shape)
    if args.pg_dsn:
        postgres_part(args.pg_dsn, args.pg_entries, args.calls)
    else:
        print(
            "== PostgreSQL part skipped: pass --pg-dsn or set POOLSPLIT_PG_DSN "
            '(eval "$(bash scripts/start-postgres.sh)")'
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
