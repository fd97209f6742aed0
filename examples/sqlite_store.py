"""SQLite as the store: the database filters, poolsplit budgets.

Entries live as JSON rows with their ``type``, ``status`` and ``scope`` copied
into indexed columns. One indexed query loads the active rows of the pools'
types plus every active always-scope row; ``retrieve_pools`` then fills the
pools from those candidates only. At 1,000,000 stored rows a turn reads a few
thousand of them.

    python examples/sqlite_store.py --rows 1000000   # standard library only

Rows the pools can never select (other types, archived or superseded
entries) cost an index range they are not in, not a JSON parse.
"""

from __future__ import annotations

import json
import sqlite3
import sys
import time
from collections.abc import Iterable, Iterator, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

# Run as a script from a checkout: poolsplit.py is one folder up; an installed
# poolsplit comes earlier on sys.path and wins.
sys.path.append(str(Path(__file__).resolve().parent.parent))

from poolsplit import (
    DEMO_NOW,
    Pool,
    default_is_active,
    demo_pools,
    demo_store,
    retrieve_pools,
)

SCHEMA = """
CREATE TABLE IF NOT EXISTS entries (
    id     TEXT PRIMARY KEY,
    type   TEXT NOT NULL,
    status TEXT NOT NULL,
    scope  TEXT,
    body   TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS entries_status_type ON entries (status, type);
CREATE INDEX IF NOT EXISTS entries_status_scope ON entries (status, scope);
"""


def columns(entry: dict[str, Any]) -> tuple[str, str, str, str | None, str]:
    """The indexed columns of an entry and its JSON body, as one row."""
    status = entry.get("status") or "active"
    if entry.get("superseded_by"):
        status = "superseded"  # retired rows must not match the active index range
    return (
        str(entry["id"]),
        str(entry.get("type") or "note"),
        status,
        entry.get("scope"),
        json.dumps(entry, separators=(",", ":")),
    )


def synthetic_rows(total: int, active: int = 5000) -> Iterator[dict[str, Any]]:
    """``total`` entries: ``active`` live pool candidates, the rest history.

    The live part cycles the demo store (ids made unique); the history is what
    a long-lived agent accumulates: chat transcript rows of a type no pool
    reads, and archived or superseded entries of the pooled types.
    """
    demo = demo_store(300)
    for number in range(min(active, total)):
        entry = dict(demo[number % len(demo)])
        entry["id"] = f"{entry['id']}#{number}"
        if entry.get("scope") == "always" and number >= len(demo):
            del entry["scope"]  # keep the always set small, as in a real store
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
            yield {
                "id": f"old-{number}",
                "type": kinds[number % len(kinds)],
                "status": "archived" if number % 2 else "active",
                "superseded_by": None if number % 2 else f"live-{number}",
                "content": f"an old note {number}, since replaced",
                "created": DEMO_NOW.timestamp() - 400 * 86400,
            }


def connect(path: str = ":memory:") -> sqlite3.Connection:
    db = sqlite3.connect(path)
    db.executescript(SCHEMA)
    return db


def insert(db: sqlite3.Connection, entries: Iterable[dict[str, Any]]) -> int:
    """Store entries (replacing equal ids) in one transaction; returns the count."""
    with db:
        before = db.total_changes
        db.executemany(
            "INSERT OR REPLACE INTO entries VALUES (?, ?, ?, ?, ?)",
            (columns(e) for e in entries),
        )
        return db.total_changes - before


def open_shared(path: str) -> sqlite3.Connection:
    """A connection for a store that several processes write (the MCP server).

    WAL lets readers run beside the one writer, the busy timeout makes a
    second writer wait instead of failing, and autocommit mode leaves each
    write's transaction to :func:`add` and :func:`retire`, which take the
    write lock up front (``BEGIN IMMEDIATE``): a read-modify-write of a JSON
    body then cannot interleave with another process's.
    """
    db = sqlite3.connect(
        path, timeout=30, isolation_level=None, check_same_thread=False
    )
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA busy_timeout=30000")
    db.executescript(SCHEMA)
    return db


def get(db: sqlite3.Connection, ident: str) -> dict[str, Any] | None:
    """The stored entry with this id, or None."""
    row = db.execute("SELECT body FROM entries WHERE id = ?", (ident,)).fetchone()
    return None if row is None else dict(json.loads(row[0]))


def add(
    db: sqlite3.Connection, entry: dict[str, Any], *, supersedes: str | None = None
) -> None:
    """Insert a new entry; with ``supersedes``, retire that one, atomically.

    One ``BEGIN IMMEDIATE`` transaction: both writes land or neither does.
    Raises ``KeyError`` when ``entry``'s id is taken or ``supersedes`` names
    no active entry (nothing is written then).
    """
    db.execute("BEGIN IMMEDIATE")
    try:
        taken = db.execute("SELECT 1 FROM entries WHERE id = ?", (str(entry["id"]),))
        if taken.fetchone() is not None:
            raise KeyError(f"id {entry['id']!r} is already stored")
        if supersedes is not None:
            old = get(db, supersedes)
            if old is None or not default_is_active(old):
                state = "no entry" if old is None else "no active entry"
                raise KeyError(f"{state} has id {supersedes!r}")
            old["superseded_by"] = entry["id"]
            db.execute("REPLACE INTO entries VALUES (?, ?, ?, ?, ?)", columns(old))
        db.execute("INSERT INTO entries VALUES (?, ?, ?, ?, ?)", columns(entry))
    except BaseException:
        db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")


def retire(db: sqlite3.Connection, ident: str, status: str = "forgotten") -> bool:
    """Set the entry's ``status`` (kept, never loaded again); False if no such id."""
    db.execute("BEGIN IMMEDIATE")
    try:
        entry = get(db, ident)
        if entry is not None:
            entry["status"] = status
            db.execute("REPLACE INTO entries VALUES (?, ?, ?, ?, ?)", columns(entry))
    except BaseException:
        db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")
    return entry is not None


def active_types(db: sqlite3.Connection) -> set[str]:
    """The types of the active rows (an index-only scan)."""
    rows = db.execute("SELECT DISTINCT type FROM entries WHERE status = 'active'")
    return {kind for (kind,) in rows}


def candidate_query(pools: Sequence[Pool]) -> tuple[str, list[str]]:
    """One SQL query for the active rows any pool may take, and its parameters."""
    if any(pool.types is None for pool in pools):
        return "SELECT body FROM entries WHERE status = 'active'", []
    types = sorted({t for pool in pools for t in pool.types or ()})
    marks = ", ".join("?" for _ in types)
    # Two index ranges joined by UNION ALL: with "type IN (..) OR scope = ..."
    # SQLite's planner scanned every active row (EXPLAIN QUERY PLAN showed only
    # status=? used), which at 1,000,000 rows means the transcript too.
    sql = (
        f"SELECT body FROM entries WHERE status = 'active' AND type IN ({marks}) "
        "UNION ALL SELECT body FROM entries WHERE status = 'active' "
        f"AND scope = 'always' AND type NOT IN ({marks})"
    )
    return sql, types + types


def load_candidates(db: sqlite3.Connection, pools: Sequence[Pool]) -> list[Any]:
    sql, params = candidate_query(pools)
    loads = json.loads
    return [loads(body) for (body,) in db.execute(sql, params)]


def turn(
    db: sqlite3.Connection,
    pools: Sequence[Pool],
    context: dict[str, Any] | None,
    *,
    now: datetime,
) -> tuple[dict[str, list[Any]], dict[str, float]]:
    """One retrieval turn: the indexed query, then ``retrieve_pools``, timed."""
    start = time.perf_counter()
    candidates = load_candidates(db, pools)
    loaded = time.perf_counter()
    # default_is_active still runs: the SQL filter is a speed-up, not the rule.
    got = retrieve_pools(
        candidates, pools, context, is_active=default_is_active, now=now
    )
    done = time.perf_counter()
    return got, {
        "candidates": len(candidates),
        "query_s": loaded - start,
        "retrieve_s": done - loaded,
    }


def full_scan(
    db: sqlite3.Connection,
    pools: Sequence[Pool],
    context: dict[str, Any] | None,
    *,
    now: datetime,
) -> dict[str, Any]:
    """The baseline without prefiltering: parse every row, let poolsplit filter."""
    store = [json.loads(body) for (body,) in db.execute("SELECT body FROM entries")]
    return retrieve_pools(store, pools, context, now=now)


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(description="SQLite store for poolsplit.")
    parser.add_argument("--rows", type=int, default=1_000_000, help="rows to store")
    parser.add_argument("--active", type=int, default=5000, help="live candidates")
    parser.add_argument("--db", default=":memory:", help="database file")
    parser.add_argument("--turns", type=int, default=5, help="timed turns")
    parser.add_argument(
        "--no-scan", action="store_true", help="skip the unfiltered full-scan baseline"
    )
    args = parser.parse_args(argv)

    db = connect(args.db)
    start = time.perf_counter()
    insert(db, synthetic_rows(args.rows, args.active))
    stored = db.execute("SELECT count(*) FROM entries").fetchone()[0]
    print(f"stored {stored} rows in {time.perf_counter() - start:.1f} s")
    pools = demo_pools()
    sql, params = candidate_query(pools)
    plan = db.execute("EXPLAIN QUERY PLAN " + sql, params).fetchall()
    print("plan:", "; ".join(row[-1] for row in plan))

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
    if not args.no_scan:
        start = time.perf_counter()
        full_scan(db, pools, {"message": "debug the billing work"}, now=DEMO_NOW)
        print(
            f"baseline, every row parsed: {(time.perf_counter() - start) * 1e3:.0f} ms"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
