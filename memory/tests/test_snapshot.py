"""The incremental snapshot (issue 26 §1) and the versioned schema (issue 29).

A running store brings its snapshot and its recall index forward by the
rows changed since, never rereading the namespace: these tests hold that
to a store opened afresh on the same database (and to the core on every
entry it loads), after random writes by the store, by another store and
by hand. The schema tests open a database written by poolsplit-memory
0.1.0 (its SQL copied into ``_schema_0_1_0.py``) and one written by a
newer version.
"""

from __future__ import annotations

import contextlib
import io
import json
import sqlite3
import threading
from datetime import datetime, timedelta, timezone
from typing import Any

import poolsplit
import pytest
from _schema_0_1_0 import create_0_1_0
from conftest import execute_raw, plant
from hypothesis import given, settings
from hypothesis import strategies as st
from poolsplit import Pool
from test_pooled import pooled_core

from poolsplit_memory import (
    InvalidInput,
    StoreUnavailable,
    _index,
    _sqlite,
    _subset,
    open_store,
)
from poolsplit_memory._ranking import Statistics, terms

NOW = datetime(2026, 6, 1, tzinfo=timezone.utc)
LATEST = len(_sqlite.MIGRATIONS)  # the schema version a store writes
WORDS = ("billing", "deploy", "search", "report", "invoice")
TYPES = ("correction", "task", "fact", "note")


@pytest.fixture
def index_path_always(monkeypatch: pytest.MonkeyPatch) -> None:
    """Small stores take the index's path (as tests/test_index.py does)."""
    monkeypatch.setattr(_subset, "_MAX_SHARE", 1)
    monkeypatch.setattr(_index, "_GROUP_SHARE", 0)


# --- the incremental snapshot equals a fresh one ----------------------------------

# Priorities the store accepts, the finite float limits among them: with a
# tag and a project mismatch a score near 1.7e308 rounds to inf.
PRIORITIES = [-2, 0, 3, 9, 1.7e308, -1.7e308, 5e-324, 1e308]

operation = st.one_of(
    st.tuples(
        st.just("remember"),
        st.sampled_from(TYPES),
        st.lists(st.sampled_from(WORDS), min_size=1, max_size=3).map(" ".join),
        st.one_of(st.none(), st.sampled_from(PRIORITIES)),
        st.booleans(),  # scope="always"
        st.lists(st.sampled_from(["billing", "ops"]), max_size=2, unique=True),
        st.sampled_from([None, "alpha", "beta"]),  # project
    ),
    st.tuples(st.just("update"), st.integers(0, 50), st.sampled_from(WORDS)),
    st.tuples(st.just("forget"), st.integers(0, 50)),
    st.tuples(st.just("supersede"), st.integers(0, 50), st.sampled_from(WORDS)),
    st.tuples(st.just("other store"), st.sampled_from(WORDS)),
    st.tuples(st.just("other namespace"), st.sampled_from(WORDS)),
    st.tuples(
        st.just("hand insert"),
        st.sampled_from(['{"content": 3', "[1]", "ok", "number", "null"]),
    ),
    st.tuples(st.just("hand retire"), st.integers(0, 50)),
    st.tuples(st.just("hand delete"), st.integers(0, 50)),
    st.tuples(st.just("recall"), st.sampled_from(WORDS)),
)


def apply(step: tuple[Any, ...], store: Any, other: Any, url: str, n: int) -> None:
    """One write (or a recall, which moves the snapshot forward) of the loop."""
    ids = [e["id"] for e in store.list(limit=500).entries]
    pick = ids[step[1] % len(ids)] if ids and isinstance(step[1], int) else None
    if step[0].startswith("hand "):
        by_hand(step, store, url, n, pick)
    else:
        through_a_store(step, store, other, url, n, pick)


def through_a_store(
    step: tuple[Any, ...], store: Any, other: Any, url: str, n: int, pick: Any
) -> None:
    """A step by the store under test, by another store on its namespace, or
    by a store on another namespace."""
    kind = step[0]
    if kind == "remember":
        _, type_, content, priority, always, tags, project = step
        store.remember(
            content,
            type=type_,
            base_priority=priority,
            scope="always" if always else None,
            tags=tags,
            project=project,
            now=NOW - timedelta(days=n),
        )
    elif kind == "update" and pick:
        with contextlib.suppress(InvalidInput):  # an unreadable row
            store.update(pick, content=step[2])
    elif kind == "forget" and pick:
        store.forget(pick)
    elif kind == "supersede" and pick:
        with contextlib.suppress(InvalidInput):  # a retired or unreadable target
            store.remember(step[2], type="fact", supersedes=pick, now=NOW)
    elif kind == "other store":
        other.remember(step[1], type="task", now=NOW)
    elif kind == "other namespace":
        with open_store(url, namespace="elsewhere") as elsewhere:
            elsewhere.remember(step[1])
    elif kind == "recall":
        store.recall(step[1], now=NOW)


def by_hand(step: tuple[Any, ...], store: Any, url: str, n: int, pick: Any) -> None:
    """A step another tool takes on the database: insert, retire, delete."""
    kind = step[0]
    if kind == "hand insert":
        # Content that is not a string, as an import_jsonl line may hold.
        body = {
            "ok": {"type": "fact", "content": "by hand"},
            "number": {"type": "fact", "content": 4711},
            "null": {"type": "fact", "content": None},
        }.get(step[1], step[1])
        plant(url, "ada", f"hand{n}", body, type="fact")
    elif kind == "hand retire" and pick:
        found = store.get(pick)
        if "unreadable" not in found:
            body = json.dumps({**found, "superseded_by": "gone"})
            execute_raw(
                url,
                "UPDATE poolsplit_entries SET body = ? WHERE namespace = ? AND id = ?",
                (body, "ada", pick),
            )
    elif kind == "hand delete" and pick:
        execute_raw(
            url,
            "DELETE FROM poolsplit_entries WHERE namespace = ? AND id = ?",
            ("ada", pick),
        )


POOLS = [Pool("a", 60, 2, ("correction", "fact")), Pool("b", 40, 3)]


def same_as_fresh(store: Any, url: str, message: str) -> None:
    """The running store recalls what a store opened now recalls, and what
    the core gives on every entry a fresh load finds."""
    fresh = open_store(url, namespace="ada")
    try:
        for pools in (None, POOLS):
            got = store.recall(message, now=NOW, pools=pools)
            want = fresh.recall(message, now=NOW, pools=pools)
            assert got.to_dict() == want.to_dict()
            assert got.text == want.text
            with fresh._cache_lock:
                snap = fresh._snapshot(pools)
                chosen = fresh._pools_for(snap, pools)
                context = {"message": message, "tags": [], "project": None}
                # The default ranking, each pool's statistics counted anew.
                core = pooled_core(snap.entries, pools, chosen, context, NOW)
            assert got.ids() == {k: [e["id"] for e in v] for k, v in core.items()}
    finally:
        fresh.close()


def counted_from_scratch(entries: list[dict[str, Any]]) -> tuple[int, int, dict]:
    """N, the total length and each term's document frequency of ``entries``,
    counted anew by memory/README.md's "Ranking": an entry's terms are the
    distinct stems of its content (missing or None: "", else its str()),
    its length their number."""
    total = 0
    frequency: dict[str, int] = {}
    for entry in entries:
        content = entry.get("content")
        text = "" if content is None else str(content)
        found = terms(text)
        total += len(found)
        for term in found:
            frequency[term] = frequency.get(term, 0) + 1
    return len(entries), total, frequency


def check_statistics(store: Any) -> None:
    """The running statistics of each of the store's snapshots, brought
    forward to now, equal a count from scratch of its entries (a statistic
    that only grows, as when an entry leaves without being removed from
    them, shows here even when no recall ranks differently)."""
    for pools in (None, POOLS):
        with store._cache_lock:
            snap = store._snapshot(pools)
            assert sum(len(part) for part in snap.parts.parts.values()) == len(snap)
            for part in snap.parts.parts.values():  # each pool's own
                count, total, frequency = counted_from_scratch(part.entries)
                stats = part.stats
                assert (stats.count, stats.total_length) == (count, total)
                assert stats._frequency == frequency


def kept(stats: Statistics) -> list[Any]:
    """Everything the statistics keep, in the order they keep it."""
    return [
        stats.count,
        stats.total_length,
        list(stats._frequency.items()),
        {content: list(record) for content, record in stats._contents.items()},
        {term: list(holders) for term, holders in stats._postings.items()},
        list(stats._length_counts.items()),
        list(stats._types.items()),
        list(stats._always_types.items()),
        list(stats._features.values()),
    ]


stored = st.fixed_dictionaries(
    {
        "content": st.one_of(
            st.none(),
            st.integers(-3, 3),
            st.lists(st.sampled_from(WORDS), max_size=3).map(" ".join),
        ),
        "type": st.sampled_from(TYPES),
    },
    optional={
        "scope": st.just("always"),
        "base_priority": st.sampled_from(PRIORITIES),
        "tags": st.lists(st.sampled_from(["billing", "ops"]), max_size=2),
    },
)


@settings(max_examples=60, deadline=None)
@given(st.lists(stored, max_size=20), st.lists(st.integers(0, 6)), st.data())
def test_a_batch_counts_as_its_entries_added_one_at_a_time(
    entries: list[dict[str, Any]], cuts: list[int], data: Any
) -> None:
    """A snapshot's load counts its rows in batches (``add_many``): the
    statistics then hold what adding them one at a time gives, equal
    contents within one batch included, and N, the total length and df
    equal a count from scratch after any of them are removed."""
    one_by_one, batched = Statistics(), Statistics()
    for entry in entries:
        one_by_one.add(entry)
    rest = list(entries)
    for cut in cuts:
        batched.add_many(rest[:cut])
        rest = rest[cut:]
    batched.add_many(rest)
    assert kept(batched) == kept(one_by_one)
    gone = data.draw(st.sets(st.integers(0, max(len(entries) - 1, 0))))
    for at in sorted(gone):
        if at < len(entries):
            one_by_one.remove(entries[at])
            batched.remove(entries[at])
    assert kept(batched) == kept(one_by_one)
    left = [entry for at, entry in enumerate(entries) if at not in gone]
    count, total, frequency = counted_from_scratch(left)
    assert (batched.count, batched.total_length) == (count, total)
    assert batched._frequency == frequency


@pytest.mark.parametrize("store_url", ["sqlite", "postgres"], indirect=True)
@settings(max_examples=25, deadline=None)
@given(st.lists(operation, min_size=1, max_size=25), st.sampled_from(WORDS))
def test_after_random_writes_recall_equals_a_fresh_load(
    store_url: str, index_path_always: None, steps: list[Any], message: str
) -> None:
    execute_raw(store_url, "DELETE FROM poolsplit_entries")
    store = open_store(store_url, namespace="ada")
    other = open_store(store_url, namespace="ada")
    try:
        for _ in range(2):  # the second recall builds each snapshot's index,
            # which the writes then bring forward entry by entry
            store.recall(message, now=NOW)
            store.recall(message, now=NOW, pools=POOLS)
        for n, step in enumerate(steps):
            apply(step, store, other, store_url, n)
            check_statistics(store)
        same_as_fresh(store, store_url, message)
    finally:
        store.close()
        other.close()


@pytest.fixture
def store_url(tmp_path: Any, request: Any) -> Any:  # one database per test
    from conftest import create_pg_database, drop_pg_database

    if getattr(request, "param", "sqlite") == "sqlite":
        path = str(tmp_path / "memory.db")
        open_store(path).close()
        yield path
        return
    url, admin = create_pg_database()
    open_store(url).close()
    yield url
    drop_pg_database(url, admin)


def index_builds(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """A list that gets a 1 each time a recall index is built."""
    built: list[int] = []
    init = _index.Index.__init__

    def counting(self: Any, *args: Any, **kwargs: Any) -> None:
        built.append(1)
        init(self, *args, **kwargs)

    monkeypatch.setattr(_index.Index, "__init__", counting)
    return built


@pytest.mark.parametrize("store_url", ["sqlite", "postgres"], indirect=True)
def test_a_write_rereads_one_row_and_never_rebuilds_the_index(
    store_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    built = index_builds(monkeypatch)
    with open_store(store_url, namespace="ada") as store:
        lines = "".join(
            json.dumps({"type": "fact", "content": f"{WORDS[n % 5]} {n}"}) + "\n"
            for n in range(300)
        )
        store.import_jsonl(io.StringIO(lines))
        store.recall("billing", now=NOW)
        before = store._backend.rows_read
        for turn in range(5):
            written = store.remember(f"turn{turn} billing", type="fact", now=NOW)
            assert written.id in store.recall(f"turn{turn}", now=NOW).ids()["facts"]
        assert store._backend.rows_read == before + 5
        assert len(built) == 1


@pytest.mark.parametrize("store_url", ["sqlite", "postgres"], indirect=True)
@pytest.mark.parametrize("ranking", ["lexical", "core"])
def test_the_first_recall_is_served_without_the_index_and_equals_it(
    store_url: str, ranking: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A snapshot's first recall ranks every entry without building the
    recall index (memory/README.md: the first recall after opening does not
    wait for it); the next recall builds it, and both give what the core
    gives on every entry, for every message."""
    built = index_builds(monkeypatch)
    monkeypatch.setattr(_subset, "_MAX_SHARE", 1)  # the index's path when built
    monkeypatch.setattr(_index, "_GROUP_SHARE", 0)
    with open_store(store_url, namespace="ada", ranking=ranking) as store:
        lines = "".join(
            json.dumps(
                {
                    "type": TYPES[n % 4],
                    "content": f"{WORDS[n % 5]} {WORDS[n % 3]} note {n}",
                    "base_priority": n % 7,
                    "created": (NOW - timedelta(days=n % 40)).isoformat(),
                }
            )
            + "\n"
            for n in range(200)
        )
        store.import_jsonl(io.StringIO(lines))
    for message in (*WORDS, "billing report", "nothing matches"):
        with open_store(store_url, namespace="ada", ranking=ranking) as store:
            built.clear()
            first = store.recall(message, now=NOW)
            assert built == []  # served without an index
            second = store.recall(message, now=NOW)
            assert built == [1] * len(TYPES)  # one index per pool's part
            assert first.to_dict() == second.to_dict()
            assert first.text == second.text
            with store._cache_lock:
                snap = store._snapshot()
                entries, pools = snap.entries, store._pools_for(snap)
            context = {"message": message, "tags": [], "project": None}
            if ranking == "lexical":  # each pool's statistics counted anew
                core = pooled_core(entries, None, pools, context, NOW)
            else:
                core = poolsplit.retrieve_pools(entries, pools, context, now=NOW)
            want = {k: [e["id"] for e in v] for k, v in core.items()}
            assert first.ids() == want


# --- the index's mutants, through the public API ------------------------------------


def imported(url: str, rows: list[dict[str, Any]]) -> Any:
    """A store of ``rows`` ranked by the core's scorer (what these pinned
    cases of issue 26's index mutants were written for)."""
    store = open_store(url, namespace="ada", ranking="core")
    store.import_jsonl(io.StringIO("".join(json.dumps(r) + "\n" for r in rows)))
    return store


def test_a_pool_with_one_token_left_is_not_full(
    tmp_path: Any, index_path_always: None
) -> None:
    """The index must not count a pool with one token left as full: B (one
    token) still fits after A, past C and D (five tokens each)."""
    rows = [
        {
            "id": "A",
            "type": "task",
            "content": "a",
            "base_priority": 9,
            "token_count": 2,
        },
        {
            "id": "C",
            "type": "task",
            "content": "c",
            "base_priority": 8,
            "token_count": 5,
        },
        {
            "id": "D",
            "type": "task",
            "content": "d",
            "base_priority": 8,
            "token_count": 5,
        },
        {
            "id": "B",
            "type": "task",
            "content": "b",
            "base_priority": 1,
            "token_count": 1,
        },
    ]
    with imported(str(tmp_path / "m.db"), rows) as store:
        got = store.recall("", now=NOW, pools=[Pool("p", 3, 5)])
        assert got.ids() == {"p": ["A", "B"]}


def test_the_message_boost_does_not_lower_a_negative_score(
    tmp_path: Any, index_path_always: None
) -> None:
    """A negative score times a boost is lower, so the boost is no bound of
    it: A (-1, boosted to -1.5) ties C (-1.5) and wins by its place."""
    rows = [
        {"id": "A", "type": "task", "content": "deploy", "base_priority": -1},
        {"id": "B", "type": "task", "content": "search billing", "base_priority": -3},
        {"id": "C", "type": "task", "content": "", "base_priority": -1.5},
        {"id": "D", "type": "task", "content": "deploy", "base_priority": -2},
    ]
    with imported(str(tmp_path / "m.db"), rows) as store:
        got = store.recall("billing search deploy", now=NOW, pools=[Pool("p", 100, 1)])
        assert got.ids() == {"p": ["A"]}


# --- the versioned schema -----------------------------------------------------------


def entries_0_1_0() -> list[dict[str, Any]]:
    return [
        {"id": "c1", "type": "correction", "content": "Never deploy on Fridays.",
         "scope": "always", "created": "2026-05-01T00:00:00+00:00"},
        {"id": "t1", "type": "task", "content": "ship the billing report",
         "created": "2026-05-20T00:00:00+00:00", "base_priority": 7},
        {"id": "f1", "type": "fact", "content": "the invoice service is in Go",
         "created": "2026-05-02T00:00:00+00:00", "superseded_by": "f2"},
        {"id": "f2", "type": "fact", "content": "the invoice service is in Rust",
         "created": "2026-05-03T00:00:00+00:00"},
    ]  # fmt: skip


@pytest.mark.parametrize("store_url", ["sqlite", "postgres"], indirect=False)
def test_a_database_written_by_0_1_0_opens_with_every_entry(
    store_url: str, tmp_path: Any
) -> None:
    from conftest import create_pg_database, drop_pg_database

    if store_url == "sqlite":
        url, admin = str(tmp_path / "old.db"), None
    else:
        url, admin = create_pg_database()
    try:
        create_0_1_0(url, "ada", entries_0_1_0())
        with open_store(url, namespace="ada") as store:
            listed = {e["id"]: e for e in store.list().entries}
            assert listed == {e["id"]: e for e in entries_0_1_0()}
            recalled = store.recall("billing invoice", now=NOW).ids()
            assert recalled["corrections"] == ["c1"]
            assert recalled["tasks"] == ["t1"]
            assert recalled["facts"] == ["f2"]
            written = store.remember("a new fact about invoices", type="fact", now=NOW)
            assert written.id in store.recall("invoices", now=NOW).ids()["facts"]
        assert schema_version(url) == LATEST
        with open_store(url, namespace="ada") as again:  # nothing left to migrate
            assert len(again.list().entries) == 5
        assert schema_version(url) == LATEST
    finally:
        if admin is not None:
            drop_pg_database(url, admin)


def schema_version(url: str) -> int:
    if url.startswith("postgres"):
        import psycopg

        with psycopg.connect(url) as conn:
            return int(
                conn.execute("SELECT version FROM poolsplit_schema").fetchone()[0]
            )
    conn = sqlite3.connect(url)
    try:
        return int(conn.execute("SELECT version FROM poolsplit_schema").fetchone()[0])
    finally:
        conn.close()


@pytest.mark.parametrize("store_url", ["sqlite", "postgres"], indirect=True)
def test_a_database_of_a_newer_version_is_refused_in_one_line(store_url: str) -> None:
    execute_raw(store_url, "UPDATE poolsplit_schema SET version = 99")
    with pytest.raises(StoreUnavailable) as info:
        open_store(store_url, namespace="ada")
    assert info.value.cause == "database is newer"
    assert "schema version 99" in str(info.value)
    assert "upgrade poolsplit-memory" in str(info.value)
    assert "\n" not in str(info.value)


def test_concurrent_first_opens_of_a_0_1_0_database_migrate_once(
    tmp_path: Any,
) -> None:
    """Eight stores opening one 0.1.0 file at once: one migrates, the others
    find it done (a second migration 2 would fail: its CREATE TABLE has no
    IF NOT EXISTS)."""
    url = str(tmp_path / "old.db")
    create_0_1_0(url, "ada", entries_0_1_0())
    failures: list[BaseException] = []
    start = threading.Barrier(8)

    def opening() -> None:
        try:
            start.wait()
            open_store(url, namespace="ada").close()
        except BaseException as exc:  # noqa: BLE001 (reported below)
            failures.append(exc)

    threads = [threading.Thread(target=opening) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    assert schema_version(url) == LATEST


# --- faults: another process writing, killed mid-write -----------------------------


@pytest.mark.parametrize("store_url", ["sqlite", "postgres"], indirect=True)
def test_a_running_store_sees_every_row_a_killed_process_committed(
    store_url: str,
) -> None:
    """Another process writes into the namespace of a running store and is
    killed mid-burst: the running store's next recall, brought forward by
    the change log alone, holds exactly the rows a fresh open finds."""
    import signal

    from test_store_faults import HANG, WRITER, spawn

    with open_store(store_url, namespace="burst") as store:
        store.recall("write", now=NOW)
        child = spawn(WRITER, store_url, "burst", 100000, "k")
        try:
            assert child.stdout.readline().strip() == "ready"
            for _ in range(30):
                assert child.stdout.readline().endswith("\n")
            store.recall("write", now=NOW)  # part way: moved forward once
            for _ in range(30):
                assert child.stdout.readline().endswith("\n")
        finally:
            child.send_signal(signal.SIGKILL)
            child.stdout.read()
            child.wait(timeout=HANG)
            child.stdout.close()
            child.stderr.close()
        got = store.recall("k write 7", now=NOW)
        with open_store(store_url, namespace="burst") as fresh:
            want = fresh.recall("k write 7", now=NOW)
            assert got.to_dict() == want.to_dict()
            with store._cache_lock, fresh._cache_lock:
                running = {e["id"] for e in store._snapshot().entries}
                assert running == {e["id"] for e in fresh._snapshot().entries}
            assert len(running) >= 60
