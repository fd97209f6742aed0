"""Many tenants in one process (issue 36): shared connections, a memory budget.

memory/README.md ("Many tenants"): every store of a process on one database
shares one backend, on PostgreSQL one pool of at most ``pool_size``
connections, whatever the number of namespaces; a namespace the process has
not served costs no connection and no snapshot; the snapshots of all stores
stay within the process's budget, least recently used out, and a snapshot
that left is read again with the same results.
"""

from __future__ import annotations

import contextlib
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from poolsplit_memory import StoreUnavailable, _shared, open_store
from poolsplit_memory import store as store_module
from poolsplit_memory.store import set_snapshot_budget

psycopg = pytest.importorskip("psycopg")

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=timezone.utc)


COUNT = (
    "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
    "AND backend_type = 'client backend' AND pid <> pg_backend_pid()"
)


def connections(url: str, *, settled: int | None = None) -> int:
    """The connections to this database other than the one asking; with
    ``settled``, polled until the count is at most that (a closed
    connection's server process leaves pg_stat_activity a moment later),
    for at most 30 s: a guard, never a measurement."""
    with psycopg.connect(url, autocommit=True) as conn:
        deadline = time.monotonic() + 30
        while True:
            count = int(conn.execute(COUNT).fetchone()[0])
            if settled is None or count <= settled or time.monotonic() > deadline:
                return count
            time.sleep(0.05)


@pytest.fixture
def budget(monkeypatch):
    """A snapshot cache of the test's own in place of the process's (other
    tests' stores leave theirs in the process's)."""
    fresh = _shared.Snapshots()
    monkeypatch.setattr(store_module, "snapshots", fresh)
    return fresh


# --- connections ------------------------------------------------------------


def test_1000_namespaces_hold_at_most_the_pool_size_in_connections(pg_url):
    """1,000 tenants touched by 8 threads at once through a pool of 3: the
    database never sees more than 3 connections of this process, and none
    once every store is closed."""
    stores = [open_store(pg_url, namespace=f"t{n}", pool_size=3) for n in range(1000)]
    seen = []
    stop = threading.Event()

    def watch():  # one connection of its own, never counted
        with psycopg.connect(pg_url, autocommit=True) as conn:
            while not stop.is_set():
                seen.append(int(conn.execute(COUNT).fetchone()[0]))

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:

        def touch(store):
            written = store.remember(f"fact of {store.namespace}", type="fact")
            assert store.recall("fact").ids()["facts"] == [written.id]

        with ThreadPoolExecutor(8) as pool:
            list(pool.map(touch, stores))
    finally:
        stop.set()
        watcher.join()
    assert seen and max(seen) <= 3
    assert connections(pg_url) <= 3
    assert _shared.open_backends() >= 1
    for store in stores:
        store.close()
    assert connections(pg_url, settled=0) == 0


def test_a_namespace_not_served_costs_no_connection_and_no_snapshot(pg_url):
    with open_store(pg_url, namespace="ada", pool_size=2) as ada:
        ada.recall("x")
        before = connections(pg_url)
        untouched = [open_store(pg_url, namespace=f"u{n}") for n in range(50)]
        pool_size_2 = [
            open_store(pg_url, namespace=f"v{n}", pool_size=2) for n in range(50)
        ]
        assert connections(pg_url) == before + 1  # the default pool's first one
        assert all(store_module.snapshots.count(s._owner) == 0 for s in untouched)
        for store in untouched + pool_size_2:
            store.close()
        assert connections(pg_url, settled=before) == before


def test_stores_of_one_database_share_one_backend_and_close_it_last(tmp_path):
    """A SQLite file: one writer and one reader per process, every namespace."""
    path = tmp_path / "memory.db"
    first = open_store(str(path), namespace="a")
    second = open_store(f"sqlite:///{path}", namespace="b")
    assert first._backend.backend is second._backend.backend
    first.remember("kept", type="fact")
    first.close()
    with pytest.raises(StoreUnavailable, match="^store is closed"):
        first.recall("kept")
    assert second.remember("still open").id  # the backend outlived the first
    second.close()
    with open_store(str(path), namespace="a") as again:  # a new backend
        assert [e["content"] for e in again.list().entries] == ["kept"]


def test_memory_databases_are_never_shared():
    with open_store(":memory:") as one, open_store(":memory:") as two:
        one.remember("only in one")
        assert two.list().entries == []


def test_a_busy_pool_makes_a_call_wait_then_say_so(pg_url):
    """Every connection lent: the call waits the busy timeout (at least 1 s)
    and is ``database is locked`` naming the pool; one given back serves it."""
    with open_store(f"{pg_url}?busy_timeout=300", pool_size=1) as store:
        store.remember("x")
        with store._backend.connection(), pytest.raises(StoreUnavailable) as info:
            store.remember("y")
        assert info.value.cause == "database is locked"
        assert "--pool-size" in str(info.value)
        assert store.remember("y").id


def test_every_pooled_connection_killed_the_next_call_still_succeeds(pg_url):
    """A server restart breaks every idle connection: the pool checks each
    before lending it (psycopg_pool's check_connection), discards the broken
    ones and opens new ones in their place, so no call meets a dead one."""
    with open_store(pg_url, namespace="ada", pool_size=4) as store:
        store.remember("before", type="fact")
        backend = store._backend
        with backend.connection(), backend.connection(), backend.connection():
            pass  # three connections open, then idle
        assert backend.connections == 3
        with psycopg.connect(pg_url, autocommit=True) as conn:
            conn.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE datname = current_database() AND pid <> pg_backend_pid()"
            )
        assert store.remember("after", type="fact").id
        assert store.recall("before after").ids()["facts"]
        with contextlib.ExitStack() as stack:  # every one it lends is alive
            for conn in [stack.enter_context(backend.connection()) for _ in "abcd"]:
                assert conn.execute("SELECT 1").fetchone() == (1,)
        assert backend.connections <= 4


@pytest.mark.parametrize("size", [0, -1, True, 2.0, "4"])
def test_a_bad_pool_size_is_invalid_input(size):
    from poolsplit_memory import InvalidInput

    with pytest.raises(InvalidInput) as info:
        open_store(":memory:", pool_size=size)
    assert info.value.field == "pool_size"


@pytest.mark.parametrize("url", ["sqlite:///x.db", "http://x", ""])
def test_a_read_url_must_be_postgres(pg_url, url):
    from poolsplit_memory import InvalidInput

    with pytest.raises(InvalidInput) as info:
        open_store(pg_url, read_url=url)
    assert info.value.field == "read_url"
    with pytest.raises(InvalidInput):
        open_store(":memory:", read_url=pg_url)


# --- the snapshot budget ------------------------------------------------------


def fill(store, count: int) -> None:
    for n in range(count):
        store.remember(
            f"{store.namespace} fact {n} about topic {n % 7}", type="fact", now=NOW
        )


def test_the_least_recently_used_snapshot_leaves_and_is_read_again_alike(
    store_url, budget
):
    stores = [open_store(store_url, namespace=f"t{n}") for n in range(3)]
    try:
        for store in stores:
            fill(store, 20)
        first = stores[0].recall("topic 3", now=NOW).to_dict()
        size = budget.total
        assert size > 0
        set_snapshot_budget(size + 1)  # room for one snapshot of this size
        stores[1].recall("topic 3", now=NOW)
        assert budget.count(stores[0]._owner) == 0  # evicted, least recent
        assert budget.count(stores[1]._owner) == 1
        before = stores[0]._backend.rows_read
        again = stores[0].recall("topic 3", now=NOW).to_dict()
        assert stores[0]._backend.rows_read > before  # read again, whole
        assert again == first
        assert budget.count(stores[1]._owner) == 0
        assert budget.total <= size + 1
    finally:
        for store in stores:
            store.close()


def test_a_snapshot_larger_than_the_budget_still_serves_its_recall(budget):
    set_snapshot_budget(1)
    with open_store(":memory:") as store:
        fill(store, 5)
        assert store.recall("topic 1", now=NOW).ids()["facts"]
        assert budget.count(store._owner) == 1  # the one just read is kept


def test_a_closed_store_leaves_no_snapshot(budget):
    store = open_store(":memory:")
    fill(store, 3)
    store.recall("fact")
    owner = store._owner
    assert budget.count(owner) == 1
    store.close()
    assert budget.count(owner) == 0


@pytest.mark.parametrize("nbytes", [0, -5, True, 1.5])
def test_a_bad_budget_is_invalid_input(nbytes):
    from poolsplit_memory import InvalidInput

    with pytest.raises(InvalidInput) as info:
        set_snapshot_budget(nbytes)
    assert info.value.field == "nbytes"


@given(
    budget_entries=st.integers(min_value=1, max_value=40),
    steps=st.lists(
        st.tuples(
            st.integers(min_value=0, max_value=3),
            st.sampled_from(["recall", "remember", "forget"]),
            st.integers(min_value=0, max_value=9),
        ),
        max_size=25,
    ),
)
def test_any_budget_recalls_what_a_snapshot_read_whole_now_recalls(
    tmp_path_factory, budget, budget_entries, steps
):
    """The oracle is a new store's recall (its snapshot read whole from the
    database at that moment): a snapshot that left the cache and was read
    again, or was brought forward, changes nothing a recall returns."""
    set_snapshot_budget(budget_entries * 2_000)
    path = str(tmp_path_factory.mktemp("db") / "memory.db")
    stores = [open_store(path, namespace=f"t{n}") for n in range(4)]
    try:
        for n, store in enumerate(stores):
            for k in range(n + 2):
                store.remember(f"t{n} fact {k} topic {k % 3}", type="fact", now=NOW)
        for tenant, action, k in steps:
            store = stores[tenant]
            if action == "recall":
                got = store.recall(f"topic {k % 3}", now=NOW)
                with open_store(path, namespace=store.namespace) as fresh:
                    want = fresh.recall(f"topic {k % 3}", now=NOW)
                assert (got.text, got.to_dict()) == (want.text, want.to_dict())
            elif action == "remember":
                store.remember(f"t{tenant} new {k}", type="fact", now=NOW)
            else:
                found = store.list().entries
                if found:
                    store.forget(found[k % len(found)]["id"])
    finally:
        for store in stores:
            store.close()
