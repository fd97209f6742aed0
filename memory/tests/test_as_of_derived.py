"""``recall(..., as_of=T)`` by its two ways (issue 49), on SQLite and PostgreSQL.

The rule (``_past.py``, docs/store.md's "History and as_of"): an id with
a version after T, or whose row is not its last version (another tool
wrote or changed it), is read from the history, its last version at or
before T that has a body; every other row as the entries table holds it
now. The oracle checks "not its last version" by seq and body; the store
by ``memory_hash`` and the presence of a history (the store adopts a body
another tool wrote when it gives it a digest), which agree unless a tool
forges a digest. The oracle here writes that rule plainly from raw SQL reads, plants
exactly those rows in a namespace of their own and recalls it at T: an
``as_of`` recall must give the same ids, text and skipped rows, whether
derived from the store's snapshot or built anew, and the store's own
snapshot must come back exactly as it was (its entries, its indexes).
Histories mix the store's writes with another tool's: rows planted
without history, bodies and columns changed in place, rows deleted.
"""

from __future__ import annotations

import json
import sqlite3
import uuid
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from conftest import execute_raw, plant
from hypothesis import example, given, settings
from hypothesis import strategies as st
from poolsplit import Pool

from poolsplit_memory import InvalidInput, _past, _statistics, open_store
from poolsplit_memory._shared import snapshots

START = datetime(2026, 11, 2, 8, 0, tzinfo=timezone.utc)
WORDS = ["deploy", "friday", "database", "paris", "coffee", "tea", "release", "bug"]
PICKY = [
    Pool("facts", 60, 2, ("fact",)),
    Pool("work", 80, 3, ("task", "correction")),
    Pool("quarantine", 40, 1),
]


def _raw(url: str, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    if url.startswith("postgres"):
        import psycopg

        with psycopg.connect(url, autocommit=True) as conn:
            return list(conn.execute(sql.replace("?", "%s"), params).fetchall())
    conn = sqlite3.connect(url)
    try:
        return list(conn.execute(sql, params).fetchall())
    finally:
        conn.close()


def _iso(moment: datetime) -> str:
    return moment.astimezone(timezone.utc).isoformat(timespec="microseconds")


@pytest.fixture(autouse=True)
def _derived(monkeypatch: Any) -> None:
    """Every as_of here derived from the store's snapshot (however many rows
    changed), unless a test says otherwise."""
    monkeypatch.setattr(_past, "DERIVE_AT_MOST", 10.0**9)


# --- the oracle: the rule, written plainly ------------------------------------


def _columns_of(body: str) -> tuple[str, str, str | None] | None:
    """The columns a write of ``body`` stores (README: a missing or None
    type is "note"; active unless ``status`` is set and not "active" or it
    is superseded); None for a body that is not a JSON object."""
    try:
        value = json.loads(body)
    except ValueError:
        return None
    if not isinstance(value, dict):
        return None
    kind = value.get("type")
    status = value.get("status")
    active = (status is None or status == "active") and not value.get("superseded_by")
    scope = value.get("scope")
    return (
        "note" if kind is None else str(kind),
        "active" if active else "inactive",
        scope if isinstance(scope, str) else None,
    )


def rows_at(url: str, namespace: str, moment: datetime) -> list[tuple[Any, ...]]:
    """(seq, id, type, status, scope, body) of every row at ``moment`` by
    the rule, in seq order."""
    at = _iso(moment)
    versions = _raw(
        url,
        "SELECT id, version, seq, body, changed_at FROM poolsplit_history "
        "WHERE namespace = ?",
        (namespace,),
    )
    entries = _raw(
        url,
        "SELECT seq, id, type, status, scope, body FROM poolsplit_entries "
        "WHERE namespace = ?",
        (namespace,),
    )
    last = {}  # id -> its last version's (seq, body)
    for ident, _, seq, body, _ in sorted(versions, key=lambda v: v[1]):
        last[ident] = (seq, body)
    changed = {v[0] for v in versions if v[4] > at}
    # a row that is not its id's last version: another tool wrote it
    changed |= {e[1] for e in entries if last.get(e[1]) != (e[0], e[5])}
    rows = [tuple(e) for e in entries if e[1] not in changed]
    for ident in changed:
        then = [v for v in versions if v[0] == ident and v[4] <= at]
        if not then:
            continue
        last = max(then, key=lambda v: v[1])
        if last[3] is None:
            continue
        columns = _columns_of(last[3])
        kind, status, scope = ("note", "active", None) if columns is None else columns
        rows.append((last[2], ident, kind, status, scope, last[3]))
    return sorted(rows, key=lambda row: row[0])


def oracle(url: str, namespace: str, moment: datetime, pools: Any, message: str) -> Any:
    """A plain recall at ``moment`` of a namespace holding exactly the rows
    of the rule (planted in seq order: their order is kept)."""
    other = f"{namespace}-oracle-{uuid.uuid4().hex[:6]}"
    for _, ident, kind, status, scope, body in rows_at(url, namespace, moment):
        plant(url, other, ident, body, type=kind, scope=scope, status=status)
    with open_store(url, namespace=other, pools=pools) as store:
        return store.recall(message, now=moment)


# --- histories: the store's writes and another tool's ---------------------------


def _entry(draw: Any) -> dict[str, Any]:
    return {
        "id": f"x{draw(st.integers(0, 99))}",
        "type": draw(st.sampled_from(["fact", "task", "note", "correction", "skill"])),
        "content": " ".join(
            draw(st.lists(st.sampled_from(WORDS), min_size=1, max_size=4))
        ),
        **draw(st.sampled_from([{}, {"scope": "always"}, {"status": "done"}])),
    }


_PLANTED = {"id": "x1", "type": "fact", "content": "coffee"}


@st.composite
def steps(draw: Any) -> list[tuple[Any, ...]]:
    ops = []
    for _ in range(draw(st.integers(3, 14))):
        op = draw(
            st.sampled_from(
                [
                    "remember",
                    "remember",
                    "update",
                    "supersede",
                    "forget",
                    "plant",
                    "body",
                    "column",
                    "delete",
                ]
            )
        )
        ops.append(
            (
                op,
                draw(st.integers(0, 10**6)),
                " ".join(
                    draw(st.lists(st.sampled_from(WORDS), min_size=1, max_size=4))
                ),
                draw(st.sampled_from(["fact", "task", "note", "correction"])),
                _entry(draw),
                draw(st.sampled_from(["not json", "[1, 2]", None])),
            )
        )
    return ops


def _apply(store: Any, url: str, step: tuple[Any, ...], now: datetime) -> None:
    op, pick, words, kind, planted, junk = step
    ns = store.namespace
    ids = [
        row[0]
        for row in _raw(
            url,
            "SELECT id FROM poolsplit_entries WHERE namespace = ? ORDER BY seq",
            (ns,),
        )
    ]
    target = ids[pick % len(ids)] if ids else None
    try:
        if op == "remember" or target is None:
            scope = "always" if kind == "correction" and pick % 3 == 0 else None
            store.remember(words, type=kind, scope=scope, now=now)
        elif op == "update":
            store.update(target, content=words)
        elif op == "supersede":
            store.remember(words, type=kind, supersedes=target, now=now)
        elif op == "forget":
            store.forget(target)
        elif op == "plant":
            body = junk if junk is not None else json.dumps(planted)
            kind_column = planted["type"] if junk is None else "note"
            if planted["id"] not in ids:
                plant(url, ns, planted["id"], body, type=kind_column)
                if pick % 2:  # copied with a digest of its own: no history still
                    execute_raw(
                        url,
                        "UPDATE poolsplit_entries SET memory_hash = 'copied' "
                        "WHERE namespace = ? AND id = ?",
                        (ns, planted["id"]),
                    )
        elif op == "body":
            execute_raw(
                url,
                "UPDATE poolsplit_entries SET body = ? WHERE namespace = ? AND id = ?",
                (
                    json.dumps({"id": target, "type": kind, "content": words}),
                    ns,
                    target,
                ),
            )
        elif op == "column":
            column = ["status = 'retired'", "type = 'task'", "scope = 'always'"][
                pick % 3
            ]
            execute_raw(
                url,
                f"UPDATE poolsplit_entries SET {column} WHERE namespace = ? AND id = ?",
                (ns, target),
            )
        else:
            execute_raw(
                url,
                "DELETE FROM poolsplit_entries WHERE namespace = ? AND id = ?",
                (ns, target),
            )
    except InvalidInput:
        pass  # (a retired target, a duplicate): nothing written


def _same(got: Any, expected: Any) -> None:
    assert got.ids() == expected.ids()
    assert got.text == expected.text
    assert got.skipped == expected.skipped
    assert got.always_skipped == expected.always_skipped
    assert got.warnings == expected.warnings


@pytest.mark.parametrize("pools", [None, PICKY], ids=["default", "picky"])
@settings(max_examples=max(settings().max_examples // 2, 10))
@example(  # another tool changes a body after T; a remember then digests it
    history=[
        ("remember", 0, "coffee paris", "fact", _PLANTED, None),
        ("body", 0, "tea berlin", "fact", _PLANTED, None),
        ("remember", 1, "database bug", "fact", _PLANTED, None),
    ],
    message=["coffee", "tea"],
)
@given(
    history=steps(), message=st.lists(st.sampled_from(WORDS), min_size=1, max_size=3)
)
def test_as_of_derived_and_built_give_the_rules_recall(
    store_url, pools, history, message
):
    namespace = f"n{uuid.uuid4().hex[:8]}"
    text = " ".join(message)
    moments = []
    with open_store(store_url, namespace=namespace, pools=pools) as store:
        clock = START
        store._clock = lambda: clock
        for step in history:
            moments.append(clock)
            _apply(store, store_url, step, clock)
            clock += timedelta(hours=1)
        moments.append(clock)
        moments.append(START - timedelta(days=1))
        store.recall(text, now=clock)  # the snapshot the derived way starts from
        store.recall(text, now=clock)  # and its recall indexes
        saved = _past.DERIVE_AT_MOST
        try:
            for moment in moments:
                expected = oracle(store_url, namespace, moment, pools, text)
                _past.DERIVE_AT_MOST = 10.0**9
                derived = store.recall(text, as_of=moment)
                table = store.explain(text, as_of=moment)
                _past.DERIVE_AT_MOST = -1.0
                built = store.recall(text, as_of=moment)
                _same(derived, expected)
                _same(built, expected)
                assert store.explain(text, as_of=moment) == table
        finally:
            _past.DERIVE_AT_MOST = saved
        # the store's own snapshot came back as it was: as a fresh one's
        with open_store(store_url, namespace=namespace, pools=pools) as fresh:
            for _ in range(2):  # a first recall, then one by the indexes
                _same(store.recall(text, now=clock), fresh.recall(text, now=clock))
            assert store.explain(text, now=clock) == fresh.explain(text, now=clock)


# --- the snapshot comes back exactly -------------------------------------------------


def _filled(open_: Any, count: int = 40) -> Any:
    store = open_("t")
    store._clock = lambda: START  # the history's times
    for number in range(count):
        store.remember(f"{WORDS[number % 8]} note {number}", type="fact", now=START)
    store.recall("deploy", now=START)
    store.recall("deploy", now=START)  # builds the recall indexes
    return store


def _held(store: Any) -> list[tuple[Any, Any]]:
    """The snapshot's entries by key and each part's objects, by name: the
    objects themselves (their ids could be another's once one is freed)."""
    snap = snapshots.get((store._owner, store.pools))
    held: list[tuple[Any, Any]] = []
    for name, part in sorted(snap.parts.parts.items(), key=lambda item: str(item[0])):
        held.append((name, (part, part.stats, part._index, part._asked)))
        held.extend((key, part._held[key]) for key in sorted(part._held))
    return held


def _same_objects(got: list[tuple[Any, Any]], expected: list[tuple[Any, Any]]) -> None:
    assert [name for name, _ in got] == [name for name, _ in expected]
    for (_, mine), (_, theirs) in zip(got, expected):
        if isinstance(mine, tuple):
            assert all(a is b for a, b in zip(mine, theirs)), (mine, theirs)
        else:
            assert mine is theirs


def test_the_snapshot_keeps_its_very_entries_and_indexes(open_):
    store = _filled(open_)
    moment = START + timedelta(days=1)
    store._clock = lambda: moment
    for n, ident in enumerate(e["id"] for e in store.list(limit=10).entries):
        store.update(ident, content=f"changed words {n}")
    before = _held(store)
    assert all(v[2] is not None for _, v in before if isinstance(v, tuple))
    got = store.recall("deploy", as_of=START + timedelta(hours=1))
    assert got.ids()
    _same_objects(_held(store), before)


def test_a_part_emptied_as_of_a_time_comes_back_as_the_same_part(open_):
    """Every fact changed since T: the facts' part is emptied in the block
    and must come back as the same object (its index reads its statistics)."""
    store = _filled(open_, count=6)
    store._clock = lambda: START + timedelta(days=1)
    for n, ident in enumerate(e["id"] for e in store.list(limit=10).entries):
        store.update(ident, type="task" if n % 2 else "skill", content=f"now {n}")
    store.remember("deploy fact today", type="fact", now=START)
    store.recall("deploy", now=START)
    store.recall("deploy", now=START)
    before = _held(store)
    store.recall("deploy", as_of=START + timedelta(hours=1))
    _same_objects(_held(store), before)


def test_a_recall_that_raises_as_of_a_time_leaves_the_snapshot_whole(
    open_, monkeypatch
):
    store = _filled(open_)
    moment = START + timedelta(days=1)
    store._clock = lambda: moment
    store.update(store.list(limit=1).entries[0]["id"], content="changed words")
    before = _held(store)

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("the recall failed")

    monkeypatch.setattr("poolsplit_memory._pooled.Parts.recall", broken)
    with pytest.raises(RuntimeError, match="the recall failed"):
        store.recall("deploy", as_of=START + timedelta(hours=1))
    monkeypatch.undo()
    assert snapshots.get((store._owner, store.pools)) is not None
    _same_objects(_held(store), before)


def test_a_snapshot_that_fails_half_way_back_leaves_the_cache(
    open_, store_url, monkeypatch
):
    store = _filled(open_)
    moment = START + timedelta(days=1)
    store._clock = lambda: moment
    store.update(store.list(limit=1).entries[0]["id"], content="changed words")
    store.recall("deploy", now=moment)  # brought forward: nothing to read
    snap = snapshots.get((store._owner, store.pools))
    calls = []
    real = type(snap)._enter

    def enter(self: Any, *args: Any) -> Any:
        calls.append(1)
        if len(calls) == 2:  # putting the entries back
            raise MemoryError
        return real(self, *args)

    monkeypatch.setattr(type(snap), "_enter", enter)
    with pytest.raises(MemoryError):
        store.recall("deploy", as_of=START + timedelta(hours=1))
    monkeypatch.undo()
    assert snapshots.get((store._owner, store.pools)) is None
    with open_store(store_url, namespace="t") as fresh:
        _same(store.recall("deploy", now=moment), fresh.recall("deploy", now=moment))


def test_an_error_half_way_back_to_the_time_drops_the_snapshot(
    open_, store_url, monkeypatch
):
    """A MemoryError while a version of T is being counted leaves a part's
    statistics half changed: the snapshot leaves the cache, and the next
    recalls are a fresh store's."""
    store = _filled(open_, count=6)
    ident = store.remember("zebra crossing", type="fact", now=START).id
    moment = START + timedelta(days=1)
    store._clock = lambda: moment
    store.update(ident, content="giraffe neck")
    store.recall("zebra", now=moment)
    real = _statistics._features

    def features(entry: Any) -> Any:
        if entry.get("content") == "zebra crossing":
            raise MemoryError
        return real(entry)

    monkeypatch.setattr(_statistics, "_features", features)
    with pytest.raises(MemoryError):
        store.recall("zebra", as_of=START + timedelta(hours=1))
    monkeypatch.undo()
    assert snapshots.get((store._owner, store.pools)) is None
    store.remember("zebra crossing", type="fact", now=moment)
    with open_store(store_url, namespace="t") as fresh:
        _same(store.recall("zebra", now=moment), fresh.recall("zebra", now=moment))


def test_the_always_scope_state_comes_back_after_the_time(open_, store_url):
    """An always-scope note no pool admitted at T, a fact since: after an
    as_of, the warm store warns as a fresh one does (the always-scope rows
    and their warnings are the snapshot's as they were)."""
    pools = [Pool("facts", 200, 5, ("fact",)), Pool("work", 200, 5, ("task",))]
    store = open_("n", pools=pools)
    store._clock = lambda: START
    store.remember("deploy fact", type="fact", now=START)
    note = store.remember("always a note", type="note", scope="always", now=START)
    later = START + timedelta(days=1)
    store._clock = lambda: later
    store.update(note.id, type="fact")
    store.recall("deploy", now=later)
    store.recall("deploy", now=later)
    then = store.recall("deploy", as_of=START + timedelta(hours=1))
    assert any(note.id in w for w in then.warnings), then.warnings
    store.remember("always a task", type="task", scope="always", now=later)
    with open_store(store_url, namespace="n", pools=pools) as fresh:
        _same(store.recall("deploy", now=later), fresh.recall("deploy", now=later))


def test_a_body_another_tool_changed_is_adopted_when_the_store_digests_it(
    open_, store_url
):
    """Another tool changes a body after T; the next remember of its type
    gives the row its digest and appends the body as an ``adopted`` version
    (by nobody): as_of T still reads the store's version of T."""
    store = open_("n")
    store._clock = lambda: START
    ident = store.remember("coffee in paris", type="fact", now=START).id
    later = START + timedelta(hours=2)
    store._clock = lambda: later
    edited = {"id": ident, "type": "fact", "content": "tea in berlin"}
    execute_raw(
        store_url,
        "UPDATE poolsplit_entries SET body = ? WHERE namespace = ? AND id = ?",
        (json.dumps(edited), "n", ident),
    )
    moment = START + timedelta(hours=1)
    assert "coffee in paris" in store.recall("coffee tea", as_of=moment).text
    store.remember("database bug", type="fact", now=later)  # digests the row
    assert "coffee in paris" in store.recall("coffee tea", as_of=moment).text
    assert "tea in berlin" in store.recall("coffee tea", now=later).text
    versions = store.history(ident)
    assert [(v["operation"], v["by"]) for v in versions][-1] == ("adopted", None)
    assert versions[-1]["entry"]["content"] == "tea in berlin"


def test_a_snapshot_of_its_own_is_built_without_the_stores_lock(open_, monkeypatch):
    """The built way (most of the snapshot changed since T) builds and
    recalls on a snapshot no one else holds: other recalls do not wait."""
    from poolsplit_memory import store as module

    store = _filled(open_)
    monkeypatch.setattr(_past, "DERIVE_AT_MOST", -1.0)
    locked = []
    real = module.built

    def built(*args: Any, **kwargs: Any) -> Any:
        locked.append(store._cache_lock.locked())
        return real(*args, **kwargs)

    monkeypatch.setattr(module, "built", built)
    assert store.recall("deploy", as_of=START + timedelta(hours=1)).ids()
    assert locked == [False]
    assert not store._cache_lock.locked()
