"""What only the PostgreSQL backend has: reconnecting, its one-line causes.

A full disk and corrupt pages are not made here (no small tablespace, no page
editing); the SQLite tests make both. Locked, read-only, a killed backend
connection and a missing driver are.
"""

from __future__ import annotations

import builtins
import threading

import pytest

from poolsplit_memory import InvalidInput, StoreUnavailable, _postgres, open_store

psycopg = pytest.importorskip("psycopg")


def terminate_other_connections(url):
    with psycopg.connect(url, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid()"
        ).fetchall()
    return len(rows)


def test_a_killed_connection_is_replaced_on_the_next_call(pg_url):
    with open_store(pg_url, namespace="ada") as store:
        first = store.remember("before", type="fact")
        store.recall("before")
        # one call after another: the pool's one connection, reused
        assert terminate_other_connections(pg_url) == 1
        second = store.remember("after", type="fact")  # retried on a new connection
        assert set(store.recall("before after").ids()["facts"]) == {first.id, second.id}


@pytest.mark.parametrize("target", ["versions", "entry"])
def test_a_held_lock_past_the_busy_timeout_is_database_is_locked(pg_url, target):
    with open_store(f"{pg_url}?busy_timeout=300", namespace="ada") as store:
        written = store.remember("x")
        with psycopg.connect(pg_url) as other:
            if target == "versions":  # another tool's transaction, a migration
                other.execute(
                    "SELECT * FROM poolsplit_versions WHERE namespace = 'ada' "
                    "FOR UPDATE"
                ).fetchall()
            else:  # the entry's row itself
                other.execute(
                    "SELECT * FROM poolsplit_entries WHERE id = %s FOR UPDATE",
                    (written.id,),
                ).fetchall()
            outcome = []

            def write():
                try:
                    outcome.append(store.update(written.id, content="y"))
                except StoreUnavailable as exc:
                    outcome.append(exc)

            thread = threading.Thread(target=write, daemon=True)
            thread.start()
            thread.join(60)  # far past the 300 ms: it must have given up
            assert not thread.is_alive()
            (error,) = outcome
            assert isinstance(error, StoreUnavailable)
            assert str(error).startswith("database is locked: ")
            assert "lock timeout" in str(error)  # not the statement's bound
            assert store.recall("x").ids()  # reads do not wait for the lock
            other.rollback()
        assert store.update(written.id, content="after").entry["content"] == "after"


def test_the_busy_timeout_is_10_s_by_default_and_the_same_on_every_connection(
    pg_url,
):
    settings = (
        "SELECT current_setting('lock_timeout'), current_setting('statement_timeout')"
    )
    with open_store(pg_url, namespace="ada") as store:
        backend = store._backend
        with backend.connection() as first, backend.connection() as second:
            assert first is not second
            for conn in (first, second):
                assert conn.execute(settings).fetchone() == ("10s", "20s")
    with open_store(f"{pg_url}?busy_timeout=0", namespace="ada") as store:
        with store._backend.connection() as conn:
            row = conn.execute(settings).fetchone()
        assert row == ("1ms", "10s")  # PostgreSQL's 0 would mean "no limit"


def test_a_replaced_connection_keeps_the_busy_timeout(pg_url):
    settings = "SELECT current_setting('lock_timeout')"
    with open_store(f"{pg_url}?busy_timeout=250", namespace="ada") as store:
        store.remember("x")
        terminate_other_connections(pg_url)
        store.remember("y")  # a new connection
        with store._backend.connection() as conn:
            assert conn.execute(settings).fetchone() == ("250ms",)


@pytest.mark.parametrize("query", ["busy_timeout=soon", "busy_timeout=-1"])
def test_a_bad_busy_timeout_on_a_postgres_url_is_invalid_input(query):
    with pytest.raises(InvalidInput) as info:
        open_store(f"postgresql://someone@127.0.0.1:1/db?{query}")
    assert info.value.field == "url"
    assert "busy_timeout" in str(info.value)


def test_a_read_only_database_is_one_line(pg_url):
    with open_store(pg_url, namespace="ada") as store:
        kept = store.remember("x")
        with store._backend.connection() as conn:  # the one the next call gets
            conn.execute("SET default_transaction_read_only = on")
        with pytest.raises(StoreUnavailable) as info:
            store.remember("y")
        assert str(info.value).startswith("database is read-only: ")
        assert store.get(kept.id) is not None


def test_a_database_read_only_from_the_start_refuses_to_open(pg_url):
    name = pg_url.rsplit("/", 1)[1]
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(f"ALTER DATABASE {name} SET default_transaction_read_only = on")
    with pytest.raises(StoreUnavailable) as info:
        open_store(pg_url)
    assert str(info.value).startswith("database is read-only: ")


def test_a_missing_database_is_unreachable_in_one_line(pg_url):
    url = pg_url.rsplit("/", 1)[0] + "/no_such_database"
    with pytest.raises(StoreUnavailable) as info:
        open_store(url)
    assert info.value.cause == "database unreachable"
    assert "no_such_database" in str(info.value)
    assert "\n" not in str(info.value)


def test_an_unreadable_postgres_url_is_invalid_input():
    with pytest.raises(InvalidInput) as info:
        open_store("postgresql://someone@127.0.0.1:1/db?foo=bar")
    assert info.value.field == "url"
    assert "foo" in str(info.value)


def test_without_psycopg_the_error_says_what_to_install(monkeypatch):
    real_import = builtins.__import__

    def no_psycopg(name, *args, **kwargs):
        if name == "psycopg" or name.startswith("psycopg."):
            raise ImportError("No module named 'psycopg'")
        return real_import(name, *args, **kwargs)

    # psycopg is imported by the first PostgresBackend (the store imports the
    # backend at its top): forget that import, then make it fail.
    monkeypatch.setattr(_postgres, "psycopg", None)
    monkeypatch.setattr(builtins, "__import__", no_psycopg)
    with pytest.raises(StoreUnavailable) as info:
        open_store("postgresql://someone@127.0.0.1:1/db")
    assert "pip install 'poolsplit-memory[postgres]'" in str(info.value)
    assert "\n" not in str(info.value)


def test_a_role_with_only_read_and_write_rights_opens_an_existing_store(pg_url):
    with open_store(pg_url, namespace="ada") as store:  # creates the schema
        store.remember("made by the owner", type="fact")
    role = f"app_{pg_url.rsplit('_', 1)[1]}"
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(f"CREATE ROLE {role} LOGIN")
        conn.execute(f"REVOKE CREATE ON SCHEMA public FROM {role}, PUBLIC")
        conn.execute(
            "GRANT SELECT, INSERT, UPDATE, DELETE ON poolsplit_entries, "
            f"poolsplit_versions, poolsplit_changes, poolsplit_vectors, "
            "poolsplit_history "
            f"TO {role}"
        )
        conn.execute(f"GRANT SELECT ON poolsplit_schema TO {role}")
        conn.execute(f"GRANT USAGE ON ALL SEQUENCES IN SCHEMA public TO {role}")
    head, _, rest = pg_url.partition("://")
    as_role = f"{head}://{role}@{rest.split('@', 1)[1]}"
    try:
        with open_store(as_role, namespace="ada") as store:
            written = store.remember("made by the app", type="fact")
            assert len(store.recall("made").ids()["facts"]) == 2
            assert store.forget(written.id) is True
    finally:
        with psycopg.connect(pg_url, autocommit=True) as conn:
            conn.execute(f"DROP OWNED BY {role}")
            conn.execute(f"DROP ROLE {role}")
