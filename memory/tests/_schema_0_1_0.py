"""A database as poolsplit-memory 0.1.0 wrote it, for the migration tests.

The SQL below is copied verbatim from poolsplit-memory 0.1.0 (commit
12b7839: ``_sqlite.py``'s and ``_postgres.py``'s SCHEMA, and PostgreSQL's
version triggers), and rows are written with the columns 0.1.0's
``store._row`` gave them, so the tests open what an upgrading user has,
without importing anything of the package under test.
"""

from __future__ import annotations

import json
import sqlite3
from typing import Any

SQLITE_SCHEMA = (
    """CREATE TABLE IF NOT EXISTS poolsplit_entries (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        namespace TEXT NOT NULL,
        id TEXT NOT NULL,
        type TEXT NOT NULL,
        status TEXT NOT NULL,
        scope TEXT,
        superseded_by TEXT,
        client_key TEXT,
        body TEXT NOT NULL,
        UNIQUE (namespace, id)
    )""",
    "CREATE INDEX IF NOT EXISTS poolsplit_entries_active "
    "ON poolsplit_entries (namespace, status, type)",
    "CREATE INDEX IF NOT EXISTS poolsplit_entries_always "
    "ON poolsplit_entries (namespace, status, scope)",
    "CREATE INDEX IF NOT EXISTS poolsplit_entries_list "
    "ON poolsplit_entries (namespace, type, seq)",
    "CREATE INDEX IF NOT EXISTS poolsplit_entries_order "
    "ON poolsplit_entries (namespace, seq)",
    "CREATE INDEX IF NOT EXISTS poolsplit_entries_superseded "
    "ON poolsplit_entries (namespace, superseded_by) WHERE superseded_by IS NOT NULL",
    "CREATE UNIQUE INDEX IF NOT EXISTS poolsplit_entries_key "
    "ON poolsplit_entries (namespace, client_key) WHERE client_key IS NOT NULL",
)

POSTGRES_SCHEMA = (
    """CREATE TABLE IF NOT EXISTS poolsplit_entries (
        seq bigserial PRIMARY KEY,
        namespace text NOT NULL,
        id text NOT NULL,
        type text NOT NULL,
        status text NOT NULL,
        scope text,
        superseded_by text,
        client_key text,
        body text NOT NULL,
        UNIQUE (namespace, id)
    )""",
    "CREATE INDEX IF NOT EXISTS poolsplit_entries_active "
    "ON poolsplit_entries (namespace, status, type)",
    "CREATE INDEX IF NOT EXISTS poolsplit_entries_always "
    "ON poolsplit_entries (namespace, status) WHERE scope = 'always'",
    "CREATE INDEX IF NOT EXISTS poolsplit_entries_list "
    "ON poolsplit_entries (namespace, type, seq)",
    "CREATE INDEX IF NOT EXISTS poolsplit_entries_order "
    "ON poolsplit_entries (namespace, seq)",
    "CREATE INDEX IF NOT EXISTS poolsplit_entries_superseded "
    "ON poolsplit_entries (namespace, superseded_by) WHERE superseded_by IS NOT NULL",
    "CREATE UNIQUE INDEX IF NOT EXISTS poolsplit_entries_key "
    "ON poolsplit_entries (namespace, client_key) WHERE client_key IS NOT NULL",
    """CREATE TABLE IF NOT EXISTS poolsplit_versions (
        namespace text PRIMARY KEY,
        version bigint NOT NULL
    )""",
)

_BUMP_FUNCTION = """
CREATE OR REPLACE FUNCTION poolsplit_bump_versions() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO poolsplit_versions (namespace, version)
        SELECT DISTINCT namespace, 1 FROM new_rows
        ON CONFLICT (namespace) DO UPDATE SET version = poolsplit_versions.version + 1;
    ELSIF TG_OP = 'DELETE' THEN
        INSERT INTO poolsplit_versions (namespace, version)
        SELECT DISTINCT namespace, 1 FROM old_rows
        ON CONFLICT (namespace) DO UPDATE SET version = poolsplit_versions.version + 1;
    ELSIF TG_OP = 'TRUNCATE' THEN
        UPDATE poolsplit_versions SET version = version + 1;
    ELSE
        INSERT INTO poolsplit_versions (namespace, version)
        SELECT namespace, 1 FROM new_rows UNION SELECT namespace, 1 FROM old_rows
        ON CONFLICT (namespace) DO UPDATE SET version = poolsplit_versions.version + 1;
    END IF;
    RETURN NULL;
END
$$"""
_TRIGGERS = {
    "poolsplit_entries_inserted": "AFTER INSERT ON poolsplit_entries "
    "REFERENCING NEW TABLE AS new_rows",
    "poolsplit_entries_updated": "AFTER UPDATE ON poolsplit_entries "
    "REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows",
    "poolsplit_entries_deleted": "AFTER DELETE ON poolsplit_entries "
    "REFERENCING OLD TABLE AS old_rows",
    # TRUNCATE has no transition table: every namespace's version moves.
    "poolsplit_entries_truncated": "AFTER TRUNCATE ON poolsplit_entries",
}


def _row(namespace: str, entry: dict[str, Any]) -> tuple[Any, ...]:
    """0.1.0's columns of an entry (``store._row`` of that version)."""
    retired = entry.get("superseded_by")
    active = not retired and entry.get("status", "active") == "active"
    return (
        namespace,
        entry["id"],
        entry.get("type") or "note",
        "active" if active else "inactive",
        entry.get("scope") if isinstance(entry.get("scope"), str) else None,
        retired if isinstance(retired, str) and retired else None,
        json.dumps(entry, ensure_ascii=False, separators=(",", ":")),
    )


_INSERT = (
    "INSERT INTO poolsplit_entries (namespace, id, type, status, scope, "
    "superseded_by, body) VALUES ({0}, {0}, {0}, {0}, {0}, {0}, {0})"
)


def create_0_1_0(url: str, namespace: str, entries: list[dict[str, Any]]) -> None:
    """Create a 0.1.0 database at ``url`` (a SQLite path or a PostgreSQL
    URL) holding ``entries`` in ``namespace``."""
    rows = [_row(namespace, entry) for entry in entries]
    if url.startswith("postgres"):
        import psycopg

        with psycopg.connect(url, autocommit=True) as conn:
            for statement in POSTGRES_SCHEMA:
                conn.execute(statement)
            conn.execute(_BUMP_FUNCTION)
            for name, when in _TRIGGERS.items():
                conn.execute(
                    f"CREATE TRIGGER {name} {when} FOR EACH STATEMENT "
                    "EXECUTE FUNCTION poolsplit_bump_versions()"
                )
            for row in rows:
                conn.execute(_INSERT.format("%s"), row)
        return
    conn = sqlite3.connect(url)
    try:
        conn.execute("PRAGMA journal_mode=WAL")
        with conn:
            for statement in SQLITE_SCHEMA:
                conn.execute(statement)
            conn.executemany(_INSERT.format("?"), rows)
    finally:
        conn.close()
