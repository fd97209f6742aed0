"""Recall through ``poolsplit_memory`` at many stored rows: cold, warm, rows read.

    pip install -e . -e 'memory[postgres]'
    python benchmarks/store_recall.py --rows 100000            # SQLite file
    python benchmarks/store_recall.py --rows 1000000 --active 5000
    python benchmarks/store_recall.py --db "$POOLSPLIT_PG_DSN"  # PostgreSQL

The store holds ``--active`` live candidates (the demo store, ids made
unique) and a long history no pool reads: transcript rows of another type and
archived or superseded entries of the pooled types. With the demo pools
(types given), one indexed query loads only the active rows of the pools'
types plus the active always-scope rows; the history costs an index range it
is not in, not a JSON parse. Printed: the rows, the candidate query's plan,
the cold recall (first after a write: reads and parses the candidates) and
the warm recall (nothing changed: reads no entry row) as medians, their
ratio, and the entry rows each read. Figures are reported, never asserted.
The rows stay in namespace ``bench-PID``: give ``--db`` a throwaway database.
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
from collections.abc import Iterator
from typing import Any

from poolsplit_memory import open_store

from poolsplit import DEMO_NOW, demo_pools, demo_store


def synthetic_rows(total: int, active: int = 5000) -> Iterator[dict[str, Any]]:
    """``total`` entries: ``active`` live pool candidates, the rest history.

    The live part cycles the demo store (ids made unique; only the first
    copies keep ``scope="always"``, as in a real store); the history is a
    long-lived agent's: chat transcript rows of a type no pool reads, and
    archived or superseded entries of the pooled types.
    """
    demo = demo_store(300)
    first_live = None
    for number in range(min(active, total)):
        entry = dict(demo[number % len(demo)])
        entry["id"] = f"{entry['id']}#{number}"
        first_live = first_live or entry["id"]
        if entry.get("scope") == "always" and number >= len(demo):
            del entry["scope"]
        yield entry
    kinds = ("correction", "task", "fact", "skill", "growth", "episode")
    for number in range(active, total):
        if number % 5 < 3:
            yield {
                "id": f"msg-{number}",
                "type": "transcript",
                "content": f"user: message {number} of the chat log",
                "created": DEMO_NOW.timestamp() - number,
            }
        else:
            old: dict[str, Any] = {
                "id": f"old-{number}",
                "type": kinds[number % len(kinds)],
                "content": f"an old note {number}, since replaced",
                "created": DEMO_NOW.timestamp() - 400 * 86400,
            }
            if number % 2:
                old["status"] = "archived"
            else:
                old["superseded_by"] = first_live
            yield old


def plan(store: Any) -> str:
    """The candidate query's plan (SQLite: EXPLAIN QUERY PLAN; PostgreSQL: EXPLAIN)."""
    backend = store._backend
    types = sorted({t for p in store.pools or () for t in p.types or ()})
    captured: list[tuple[str, tuple[Any, ...]]] = []

    def capture(tx: Any) -> None:
        real = tx._execute

        def record(sql: str, params: Any) -> Any:
            captured.append((sql, tuple(params)))
            return real(sql, params)

        tx._execute = record
        tx.candidates(types)

    backend.read(store.namespace, capture)
    sql, params = captured[-1]
    if hasattr(backend, "_reader") and hasattr(backend._reader, "set_trace_callback"):
        rows = backend._reader.execute("EXPLAIN QUERY PLAN " + sql, params).fetchall()
        return "; ".join(str(row[-1]) for row in rows)
    with backend._locks["read"]:
        conn = backend._connection("read")
        rows = conn.execute("EXPLAIN " + sql, params).fetchall()
    return "; ".join(str(row[0]).strip() for row in rows)


def timed(call: Any, turns: int) -> list[float]:
    samples = []
    for _ in range(turns):
        start = time.perf_counter()
        call()
        samples.append(time.perf_counter() - start)
    return samples


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--rows", type=int, default=100_000, help="rows to store")
    parser.add_argument("--active", type=int, default=5000, help="live candidates")
    parser.add_argument("--db", help="store URL (default: a temporary SQLite file)")
    parser.add_argument(
        "--turns", type=int, default=7, help="timed recalls of each kind"
    )
    args = parser.parse_args(argv)

    folder = tempfile.mkdtemp()
    url = args.db or os.path.join(folder, "memory.db")
    namespace = f"bench-{os.getpid()}"
    store = open_store(url, namespace=namespace, pools=demo_pools())
    start = time.perf_counter()
    lines = "".join(
        json.dumps(e) + "\n" for e in synthetic_rows(args.rows, args.active)
    )
    stored = store.import_jsonl(io.StringIO(lines))
    print(f"stored {stored} rows in {time.perf_counter() - start:.1f} s ({url})")
    print("plan:", plan(store))

    context = {"tags": ["billing"], "now": DEMO_NOW}
    writer = open_store(url, namespace=namespace, pools=demo_pools())
    probe = writer.remember("probe", type="note", now=DEMO_NOW)

    def cold() -> None:
        writer.update(probe.id, content="probe")  # a write: the next recall is cold
        store.recall("debug the billing work", **context)

    def warm() -> None:
        store.recall("debug the billing work", **context)

    store.recall("warm-up", **context)
    before = store._backend.rows_read
    cold_s = timed(cold, args.turns)
    cold_rows = (store._backend.rows_read - before) // args.turns
    before = store._backend.rows_read
    warm_s = timed(warm, args.turns)
    warm_rows = store._backend.rows_read - before
    cold_median = statistics.median(cold_s)
    warm_median = statistics.median(warm_s)
    print(
        f"cold recall: median {cold_median * 1e3:.1f} ms, "
        f"min {min(cold_s) * 1e3:.1f} ms, "
        f"{cold_rows} entry rows read per recall"
    )
    print(
        f"warm recall: median {warm_median * 1e3:.2f} ms, "
        f"min {min(warm_s) * 1e3:.2f} ms, "
        f"{warm_rows} entry rows read in {args.turns} recalls"
    )
    print(f"warm/cold: {warm_median / cold_median:.3f}")
    store.close()
    writer.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
