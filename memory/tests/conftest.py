"""Fixtures of the store's tests: one suite, every test on SQLite and PostgreSQL.

``store_url`` is a fresh database per test: a new SQLite file, or a new
PostgreSQL database created on the server of ``POOLSPLIT_PG_DSN`` (skipped
when it is unset, a failure when ``POOLSPLIT_REQUIRE_PG=1``).
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import uuid
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "default",
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
settings.register_profile(
    "heavy",
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))


def pg_admin_dsn() -> str | None:
    """The server's DSN, or None (skip) unless PostgreSQL is required."""
    dsn = os.environ.get("POOLSPLIT_PG_DSN")
    if not dsn and os.environ.get("POOLSPLIT_REQUIRE_PG") == "1":
        pytest.fail("POOLSPLIT_REQUIRE_PG=1 but POOLSPLIT_PG_DSN is not set")
    return dsn or None


def with_database(dsn: str, name: str) -> str:
    """``dsn`` with its database name replaced."""
    base, _, _query = dsn.partition("?")
    head, _, _ = base.rpartition("/")
    return f"{head}/{name}"


def create_pg_database() -> tuple[str, str]:
    """A new empty database; returns (url, admin dsn)."""
    import psycopg

    admin = pg_admin_dsn()
    if admin is None:
        pytest.skip("POOLSPLIT_PG_DSN is not set (scripts/test-memory.sh sets it)")
    name = f"t_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    return with_database(admin, name), admin


def drop_pg_database(url: str, admin: str) -> None:
    import psycopg

    name = url.rsplit("/", 1)[1]
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


@pytest.fixture(params=["sqlite", "postgres"])
def store_url(request: Any, tmp_path: Any) -> Any:
    """A fresh, empty database of each backend."""
    if request.param == "sqlite":
        yield str(tmp_path / "memory.db")
        return
    url, admin = create_pg_database()
    yield url
    drop_pg_database(url, admin)


@pytest.fixture
def sqlite_url(tmp_path: Any) -> str:
    return str(tmp_path / "memory.db")


@pytest.fixture
def pg_url() -> Any:
    url, admin = create_pg_database()
    yield url
    drop_pg_database(url, admin)


@pytest.fixture
def open_(store_url: str) -> Any:
    """``open_(namespace="default", **options)``: a store on ``store_url``,
    closed after the test."""
    from poolsplit_memory import open_store

    opened = []

    def make(namespace: str = "default", **options: Any) -> Any:
        store = open_store(store_url, namespace=namespace, **options)
        opened.append(store)
        return store

    def close_all() -> None:
        while opened:
            opened.pop().close()

    make.close_all = close_all  # type: ignore[attr-defined]
    yield make
    close_all()


def plant(
    url: str,
    namespace: str,
    ident: str,
    body: str | Any,
    *,
    type: str = "note",
    scope: str | None = None,
    status: str = "active",
    superseded_by: str | None = None,
) -> None:
    """Write a row directly, bypassing every check and the store (a hand
    edit, another tool, an older version): nothing but the database itself
    tells a running store that it changed."""
    text = body if isinstance(body, str) else json.dumps(body)
    row = (namespace, ident, type, status, scope, superseded_by, text)
    insert = (
        "INSERT INTO poolsplit_entries (namespace, id, type, status, scope, "
        "superseded_by, body) VALUES ({0}, {0}, {0}, {0}, {0}, {0}, {0})"
    )
    if url.startswith("postgres"):
        import psycopg

        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(insert.format("%s"), row)
        return
    conn = sqlite3.connect(url)
    with conn:
        conn.execute(insert.format("?"), row)
    conn.close()


def execute_raw(url: str, sql: str, params: tuple[Any, ...] = ()) -> None:
    """Run one statement on the database directly (``?`` placeholders)."""
    if url.startswith("postgres"):
        import psycopg

        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(sql.replace("?", "%s"), params)
        return
    conn = sqlite3.connect(url)
    with conn:
        conn.execute(sql, params)
    conn.close()


def at_schema(url: str, version: int) -> None:
    """Build the tables of an older release on ``url``: the first
    ``version`` migrations of its backend (released ones never change) and
    the schema table saying ``version``, as that release left them."""
    from poolsplit_memory import _postgres, _sqlite

    migrations = (_postgres if url.startswith("postgres") else _sqlite).MIGRATIONS
    assert version < len(migrations), "an older schema than the current one"
    statements = [
        *(statement for step in migrations[:version] for statement in step),
        "CREATE TABLE poolsplit_schema (version INTEGER NOT NULL)",
        f"INSERT INTO poolsplit_schema (version) VALUES ({version})",
    ]
    if url.startswith("postgres"):
        for statement in statements:
            execute_raw(url, statement)
        return
    conn = sqlite3.connect(url)
    with conn:
        for statement in statements:
            conn.execute(statement)
    conn.close()


def run_probe(script: str, args: list[str], cwd: Any) -> Any:
    """Run ``script`` in a fresh interpreter (its memory is then its own to
    measure) with ``args``, and return the JSON it prints; a failure shows
    its stderr."""
    done = subprocess.run(
        [sys.executable, "-c", script, *args],
        capture_output=True,
        text=True,
        timeout=600,  # a guard against a hang, not a measurement
        cwd=cwd,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


# What the store stamps on every write (issue 51): the tests that compare
# entries with what they wrote compare them without these, and check the
# stamps themselves where they are the subject (test_trust.py).
STAMPS = ("written_by", "written_at", "updated_by", "updated_at")


def unstamped(value: Any) -> Any:
    """``value`` with the store's stamps left out of every entry in it (an
    entry, a list of them, or a dict of lists by pool)."""
    if isinstance(value, list):
        return [unstamped(item) for item in value]
    if isinstance(value, dict) and "content" in value:
        return {k: v for k, v in value.items() if k not in STAMPS}
    if isinstance(value, dict):
        return {k: unstamped(v) for k, v in value.items()}
    return value
