"""The store's small defects of issue 52, each pinned by a test that failed
before its fix: resources of a dropped store, ``"null"`` in ``update``'s text
fields, one rule for a bad ``now``, blank tags, errors the snapshot's carry
must not swallow; and behaviours no test held (``update(base_priority=0)``,
an always-scope entry no pool takes, two instances racing the duplicate
check on PostgreSQL, an id with a raw ``/``)."""

from __future__ import annotations

import gc
import io
import json
import os
import threading
from datetime import date, datetime, timezone

import pytest
from conftest import plant
from hypothesis import given
from hypothesis import strategies as st
from poolsplit import Pool

from poolsplit_memory import InvalidInput, build_entry, open_store
from poolsplit_memory._shared import open_backends, snapshots
from poolsplit_memory.store import _Snapshot

NOW = datetime(2026, 3, 2, 9, 0, tzinfo=timezone.utc)


# --- a Store dropped without close() -----------------------------------------


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc")
def test_a_dropped_store_releases_its_connections_and_snapshot(tmp_path):
    """50 stores on 50 files, each used and dropped without close(): after a
    collection the process holds the file descriptors, backends and
    snapshots it held before (each store held about 5 descriptors)."""
    gc.collect()
    fds, backends, held = _open_fds(), open_backends(), len(snapshots._items)
    for i in range(50):
        store = open_store(tmp_path / f"{i}.db", namespace="t")
        store.remember("The export runs nightly.", now=NOW)
        assert store.recall("export", now=NOW).ids()
        del store
    gc.collect()
    assert open_backends() == backends
    assert len(snapshots._items) == held
    assert _open_fds() <= fds + 2  # (pytest's own files may come and go)


def test_a_view_keeps_its_store_open(sqlite_url):
    """``acting_as`` views share the store's database: dropping the store
    while a view lives leaves the view working."""
    store = open_store(sqlite_url, namespace="t")
    view = store.acting_as("ada")
    del store
    gc.collect()
    written = view.remember("The export runs nightly.", now=NOW)
    assert view.get(written.id)["written_by"] == "ada"
    view.close()


# --- "null" in update's fields ------------------------------------------------


@pytest.mark.parametrize(
    "field", ["content", "type", "scope", "tags", "project", "base_priority"]
)
def test_update_refuses_the_string_null_in_every_field(open_, field):
    """A client that serialises null as the string ``"null"`` meant "leave
    it": every field refuses it, naming itself, and nothing changes (the
    text fields stored it, overwriting a correction's text)."""
    store = open_()
    written = store.remember(
        "Use tabs.", type="correction", project="web", tags=["style"], now=NOW
    )
    before = store.get(written.id)
    with pytest.raises(InvalidInput) as info:
        store.update(written.id, **{field: "null"})
    assert info.value.field == field
    assert store.get(written.id) == before


# --- one rule for a bad ``now`` -------------------------------------------------


@pytest.mark.parametrize("bad", ["2026-03-02", 1772442000, date(2026, 3, 2)])
@pytest.mark.parametrize("call", ["remember", "recall", "explain"])
def test_a_bad_now_is_invalid_input_naming_now_everywhere(open_, call, bad):
    store = open_()
    with pytest.raises(InvalidInput) as info:
        getattr(store, call)("The export runs nightly.", now=bad)
    assert info.value.field == "now"
    assert "must be a datetime or None" in info.value.message


# --- blank tags -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("tags", "position"), [([""], 0), (["style", "  "], 1), (["a", "b", "\t\n"], 2)]
)
def test_a_blank_tag_is_refused_naming_its_position(open_, tags, position):
    store = open_()
    with pytest.raises(InvalidInput) as info:
        store.remember("Use tabs.", tags=tags, now=NOW)
    assert info.value.field == "tags"
    assert f"tags[{position}]" in info.value.message
    written = store.remember("Use tabs.", tags=["style"], now=NOW)
    with pytest.raises(InvalidInput) as info:
        store.update(written.id, tags=tags)
    assert info.value.field == "tags"
    assert f"tags[{position}]" in info.value.message
    assert store.get(written.id)["tags"] == ["style"]


@given(st.lists(st.text(alphabet="ab \t\n", max_size=3), max_size=5))
def test_exactly_the_tag_lists_holding_a_blank_tag_are_refused(tags):
    """The write rule (build_entry, which remember calls; update checks its
    tags by the same function): refused iff a tag is whitespace only, naming
    the first such tag's position; else stored as given."""
    blank = [i for i, tag in enumerate(tags) if not tag.strip()]
    if blank:
        with pytest.raises(InvalidInput) as info:
            build_entry("Use tabs.", tags=tags)
        assert info.value.field == "tags"
        assert info.value.message.startswith(f"tags[{blank[0]}] must not be blank")
    else:
        assert build_entry("Use tabs.", tags=tags).get("tags", []) == tags


def test_a_blank_tag_already_stored_still_loads(store_url):
    """A row written before the rule (or imported) keeps its blank tag: it
    loads and reads as stored; the blank tag matches only a context tag
    equal to it (recall's tags are a context, not a write)."""
    body = {"id": "old", "content": "Use tabs.", "type": "fact", "tags": ["", "style"]}
    open_store(store_url, namespace="t").close()  # the tables
    plant(store_url, "t", "old", body, type="fact")
    with open_store(store_url, namespace="t") as store:
        assert store.get("old")["tags"] == ["", "style"]
        assert store.recall("tabs", now=NOW).ids()["facts"] == ["old"]
        assert store.recall("tabs", tags=[""], now=NOW).ids()["facts"] == ["old"]
        store.import_jsonl(
            io.StringIO(json.dumps({"id": "new", "content": "x", "tags": [" "]}))
        )
        assert store.get("new")["tags"] == [" "]


# --- the carry of a write into the snapshot ------------------------------------


def test_a_programming_error_in_the_carry_is_not_swallowed(sqlite_url, monkeypatch):
    """A bug while a write's rows are applied to the cached snapshot
    propagates (the write has committed); the snapshot leaves the cache, so
    the next recall reads the namespace anew."""
    store = open_store(sqlite_url, namespace="t")
    store.remember("The export runs nightly.", type="fact", now=NOW)
    assert store.recall("export", now=NOW).ids()

    def broken(self, changed, rows):
        raise TypeError("a bug in apply")

    monkeypatch.setattr(_Snapshot, "apply", broken)
    with pytest.raises(TypeError, match="a bug in apply"):
        store.remember("The backup runs weekly.", type="fact", now=NOW)
    monkeypatch.undo()
    assert len(store.recall("backup export", now=NOW).ids()["facts"]) == 2
    store.close()


def test_memory_short_in_the_carry_drops_the_snapshot(sqlite_url, monkeypatch):
    """Running out of memory while the snapshot grows is expected there:
    the committed write answers, and the next recall reads anew."""
    store = open_store(sqlite_url, namespace="t")
    store.remember("The export runs nightly.", type="fact", now=NOW)
    assert store.recall("export", now=NOW).ids()

    def short(self, changed, rows):
        raise MemoryError

    monkeypatch.setattr(_Snapshot, "apply", short)
    written = store.remember("The backup runs weekly.", type="fact", now=NOW)
    monkeypatch.undo()
    assert written.id in store.recall("backup export", now=NOW).ids()["facts"]
    store.close()


# --- behaviours no test held ---------------------------------------------------


def test_update_base_priority_zero_is_stored_as_zero(open_):
    store = open_()
    written = store.remember("Use tabs.", type="fact", now=NOW)
    updated = store.update(written.id, base_priority=0)
    assert store.get(written.id)["base_priority"] == 0
    assert updated.entry["base_priority"] == 0
    assert any(
        w.startswith("base_priority: 0 is at or below 0") for w in updated.warnings
    )


def test_an_always_entry_no_pool_takes_is_named_until_forgotten(open_):
    """Written after a recall (the write carries into the cached snapshot):
    named in ``always_skipped`` and the warnings; forgotten: no longer."""
    store = open_(pools=[Pool("rules", 400, 5, types=("rule",))])
    store.remember("Tabs, never spaces.", type="rule", now=NOW)
    assert store.recall("tabs", now=NOW).always_skipped == []
    written = store.remember("Always answer in French.", type="note", scope="always")
    recall = store.recall("tabs", now=NOW)
    assert [(s.id, s.reason) for s in recall.always_skipped] == [
        (written.id, "type: no pool admits 'note'")
    ]
    assert any(written.id in w for w in recall.warnings)
    assert store.forget(written.id)
    recall = store.recall("tabs", now=NOW)
    assert recall.always_skipped == []
    assert not any(written.id in w for w in recall.warnings)


def test_an_id_with_a_raw_slash_is_read_changed_and_forgotten(open_):
    """Ids are any str a row holds (an import names its own): one with a
    ``/`` is got, recalled, updated and forgotten like any other."""
    store = open_()
    line = {"id": "team/rules/1", "content": "Use tabs.", "type": "fact"}
    assert store.import_jsonl(io.StringIO(json.dumps(line))) == 1
    assert store.get("team/rules/1")["content"] == "Use tabs."
    assert store.recall("tabs", now=NOW).ids()["facts"] == ["team/rules/1"]
    store.update("team/rules/1", content="Use spaces.")
    assert store.get("team/rules/1")["content"] == "Use spaces."
    assert store.forget("team/rules/1") is True
    assert store.get("team/rules/1") is None


def test_two_instances_racing_the_duplicate_check_store_one_entry(pg_url):
    """Two stores with connection pools of their own on one PostgreSQL
    database remember the same memory at once, round after round: each
    round stores one entry, and both calls answer its id."""
    first = open_store(pg_url, namespace="t", pool_size=2)
    second = open_store(pg_url, namespace="t", pool_size=3)
    assert first._backend.backend is not second._backend.backend
    for round in range(20):
        content = f"The export of round {round} runs nightly."
        barrier = threading.Barrier(2)
        ids: list[str] = []

        def write(store, content=content, barrier=barrier, ids=ids):
            barrier.wait()
            ids.append(store.remember(content, type="fact").id)

        threads = [threading.Thread(target=write, args=(s,)) for s in (first, second)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert len(ids) == 2 and ids[0] == ids[1], round
    assert len(first.list(limit=500).entries) == 20
    first.close()
    second.close()
