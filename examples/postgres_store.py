"""PostgreSQL as the store: entries as JSONB, one indexed query per turn.

The same recipe as ``sqlite_store.py`` for a store that outgrows one process:
``type``, ``status`` and ``scope`` are indexed columns beside the JSONB body,
the server returns the active candidates of the pools' types plus the active
always-scope rows, and ``retrieve_pools`` does the budgeting.

    pip install "psycopg[binary]"
    eval "$(bash scripts/start-postgres.sh)"       # a throwaway local server
    python examples/postgres_store.py --rows 1000000

The DSN comes from ``--dsn`` or the ``POOLSPLIT_PG_DSN`` environment variable.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterable, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

# Run as a script from a checkout: poolsplit.py is one folder up; an installed
# poolsplit comes earlier on sys.path and wins.
sys.path.append(str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from sqlite_store import columns, synthetic_rows

from poolsplit import DEMO_NOW, Pool, default_is_active, demo_pools, retrieve_pools

SCHEMA = """
CREATE TABLE IF NOT EXISTS entries (
    id     text PRIMARY KEY,
    type   text NOT NULL,
    status text NOT NULL,
    scope  text,
    body   jsonb NOT NULL
);
CREATE INDEX IF NOT EXISTS entries_status_type ON entries (status, type);
CREATE INDEX IF NOT EXISTS entries_always ON entries (status) WHERE scope = 'always';
"""


def connect(dsn: str) -> Any:
    import psycopg

    db = psycopg.connect(dsn, autocommit=True)
    db.execute(SCHEMA)
    return db


def insert(db: Any, entries: Iterable[dict[str, Any]]) -> int:
    """Bulk-load entries with COPY (new ids only); returns the count."""
    count = 0
    sql = "COPY entries (id, type, status, scope, body) FROM STDIN"
    with db.transaction(), db.cursor() as cur, cur.copy(sql) as copy:
        for entry in entries:
            copy.write_row(columns(entry))  # body is JSON text; jsonb parses it
            count += 1
    db.execute("ANALYZE entries")
    return count


def get(db: Any, ident: str) -> dict[str, Any] | None:
    """The stored entry with this id, or None."""
    row = db.execute("SELECT body FROM entries WHERE id = %s", (ident,)).fetchone()
    return None if row is None else dict(row[0])


def add(db: Any, entry: dict[str, Any], *, supersedes: str | None = None) -> None:
    """Insert a new entry; with ``supersedes``, retire that one, atomically.

    One transaction, the superseded row locked (``FOR UPDATE``) while its
    body is rewritten. Raises ``KeyError`` when ``entry``'s id is taken or
    ``supersedes`` names no active entry (nothing is written then).
    """
    sql = "INSERT INTO entries VALUES (%s, %s, %s, %s, %s) ON CONFLICT DO NOTHING"
    with db.transaction():
        if supersedes is not None:
            row = db.execute(
                "SELECT body FROM entries WHERE id = %s FOR UPDATE", (supersedes,)
            ).fetchone()
            old = None if row is None else dict(row[0])
            if old is None or not default_is_active(old):
                state = "no entry" if old is None else "no active entry"
                raise KeyError(f"{state} has id {supersedes!r}")
            old["superseded_by"] = entry["id"]
            _replace(db, old)
        if db.execute(sql, columns(entry)).rowcount != 1:
            raise KeyError(f"id {entry['id']!r} is already stored")


def retire(db: Any, ident: str, status: str = "forgotten") -> bool:
    """Set the entry's ``status`` (kept, never loaded again); False if no such id."""
    with db.transaction():
        row = db.execute(
            "SELECT body FROM entries WHERE id = %s FOR UPDATE", (ident,)
        ).fetchone()
        if row is None:
            return False
        entry = dict(row[0])
        entry["status"] = status
        _replace(db, entry)
    return True


def _replace(db: Any, entry: dict[str, Any]) -> None:
    ident, kind, status, scope, body = columns(entry)
    db.execute(
        "UPDATE entries SET type = %s, status = %s, scope = %s, body = %s "
        "WHERE id = %s",
        (kind, status, scope, body, ident),
    )


def active_types(db: Any) -> set[str]:
    """The types of the active rows."""
    rows = db.execute("SELECT DISTINCT type FROM entries WHERE status = 'active'")
    return {kind for (kind,) in rows}


def candidate_query(pools: Sequence[Pool]) -> tuple[str, list[Any]]:
    """One SQL query for the active rows any pool may take, and its parameters."""
    if any(pool.types is None for pool in pools):
        return "SELECT body FROM entries WHERE status = 'active'", []
    types = sorted({t for pool in pools for t in pool.types or ()})
    # PostgreSQL turns the OR into a BitmapOr of the two indexes.
    sql = (
        "SELECT body FROM entries WHERE status = 'active' "
        "AND (type = ANY(%s) OR scope = 'always')"
    )
    return sql, [types]


def turn(
    db: Any, pools: Sequence[Pool], context: dict[str, Any] | None, *, now: datetime
) -> tuple[dict[str, list[Any]], dict[str, float]]:
    """One retrieval turn: the indexed query (psycopg decodes JSONB), then pools."""
    start = time.perf_counter()
    sql, params = candidate_query(pools)
    candidates = [body for (body,) in db.execute(sql, params)]
    loaded = time.perf_counter()
    got = retrieve_pools(candidates, pools, context, now=now)
    done = time.perf_counter()
    return got, {
        "candidates": len(candidates),
        "query_s": loaded - start,
        "retrieve_s": done - loaded,
    }


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(description="PostgreSQL store for poolsplit.")
    parser.add_argument("--dsn", default=os.environ.get("POOLSPLIT_PG_DSN"))
    parser.add_argument("--rows", type=int, default=1_000_000, help="rows to store")
    parser.add_argument("--active", type=int, default=5000, help="live candidates")
    parser.add_argument("--turns", type=int, default=5, help="timed turns")
    args = parser.parse_args(argv)
    if not args.dsn:
        parser.error("give --dsn or set POOLSPLIT_PG_DSN")

    db = connect(args.dsn)
    db.execute("TRUNCATE entries")
    start = time.perf_counter()
    insert(db, synthetic_rows(args.rows, args.active))
    stored = db.execute("SELECT count(*) FROM entries").fetchone()[0]
    print(f"stored {stored} rows in {time.perf_counter() - start:.1f} s")
    pools = demo_pools()
    sql, params = candidate_query(pools)
    plan = [row[0] for row in db.execute("EXPLAIN " + sql, params)]
    print("plan:", "; ".join(line.strip() for line in plan))

    times = []
    for number in range(args.turns):
        context = {"message": f"debug the billing work {number}", "tags": ["billing"]}
        got, timing = turn(db, pools, context, now=DEMO_NOW)
        times.append(timing["query_s"] + timing["retrieve_s"])
        print(
            f"turn {number}: {timing['candidates']} candidates, query "
            f"{timing['query_s'] * 1e3:.1f} ms + retrieve "
            f"{timing['retrieve_s'] * 1e3:.1f} ms; "
            + ", ".join(f"{k}={len(v)}" for k, v in got.items())
        )
    times.sort()
    print(
        f"time per turn at {stored} rows: min {times[0] * 1e3:.1f} ms, "
        f"median {times[len(times) // 2] * 1e3:.1f} ms"
    )
    db.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
