"""The PostgreSQL connection pool (psycopg_pool, issue 52) as a caller meets
it: a connection the pool cannot open fails the waiting call with its own
cause, and the pool logs nothing beside that error (``poolsplit-mcp``
promises one line on stderr for a database it cannot open).

psycopg_pool opens connections in its own threads; these tests pin that the
cause still reaches the caller, rather than a timeout of the pool.
"""

from __future__ import annotations

import logging

import pytest

from poolsplit_memory import InvalidInput, StoreUnavailable, open_store

pytest.importorskip("psycopg_pool")


def test_an_unreadable_connection_option_is_invalid_input_naming_the_url(pg_url):
    with pytest.raises(InvalidInput) as info:
        open_store(f"{pg_url}?nonsense_option=1")
    assert info.value.field == "url"
    assert str(info.value).startswith("url: cannot be read: ")
    assert "nonsense_option" in str(info.value)


def test_an_unreachable_database_is_its_cause_and_the_pool_logs_nothing(caplog):
    caplog.set_level(logging.DEBUG, logger="psycopg.pool")
    with pytest.raises(StoreUnavailable) as info:
        open_store("postgresql://someone:hunter2@127.0.0.1:1/nothing")
    assert info.value.cause == "database unreachable"
    assert "Connection refused" in str(info.value)
    failures = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert failures == [], [r.getMessage() for r in failures]


def test_a_call_after_a_failed_connect_opens_a_new_one(pg_url, monkeypatch):
    """The pool retries a failed connect once, at once, then gives it up (no
    back-off of minutes): the call that met the failure says why, and the
    next call connects anew."""
    with open_store(pg_url, namespace="ada", pool_size=2) as store:
        backend = store._backend.backend
        real = backend._connect
        failures = [
            StoreUnavailable("database unreachable", "here", "refused")
            for _ in range(2)  # the first connect and its one retry
        ]

        def connect(dsn):
            if failures:
                raise failures.pop()
            return real(dsn)

        monkeypatch.setattr(backend, "_connect", connect)
        with backend.connection():  # the one open connection, held
            with pytest.raises(StoreUnavailable) as info:
                store.remember("first")
            assert str(info.value) == "database unreachable: here (refused)"
            assert store.remember("second").id  # a second connection, new
        assert [e["content"] for e in store.list().entries] == ["second"]
