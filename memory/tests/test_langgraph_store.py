"""PoolsplitStore: LangGraph's BaseStore contract, on SQLite and PostgreSQL.

LangGraph ships a conformance suite for checkpointers only
(libs/checkpoint-conformance), none for stores; these tests port the
behaviours of its own store tests (libs/checkpoint/tests/test_store.py:
get/put/delete, search with filters and pages, list_namespaces with
prefix, suffix, wildcards, max_depth, limit and offset), and a property
test holds PoolsplitStore to LangGraph's InMemoryStore as the oracle.
"""

import asyncio
import os
import shutil
import tempfile
import uuid

import pytest

if os.environ.get("POOLSPLIT_REQUIRE_PG") != "1":
    pytest.importorskip("langgraph", reason="pip install 'poolsplit-memory[langgraph]'")

from hypothesis import given
from hypothesis import strategies as st
from langgraph.store.base import (
    GetOp,
    InvalidNamespaceError,
    ListNamespacesOp,
    PutOp,
    SearchOp,
)
from langgraph.store.memory import InMemoryStore

from poolsplit_memory import InvalidInput, open_store
from poolsplit_memory.langgraph import PoolsplitStore


@pytest.fixture
def store(store_url):
    """A PoolsplitStore on each backend, its namespaces under a root of its
    own (the PostgreSQL database is fresh too)."""
    with PoolsplitStore(store_url) as made:
        yield made


def root():
    return f"r{uuid.uuid4().hex[:8]}"


def memory(content, **fields):
    return {"content": content, "type": "fact", **fields}


def test_an_item_comes_back_as_it_was_put_with_its_key_as_id(store):
    space = ("memories", root())
    value = memory("Ada drinks tea", tags=["drinks"], extra={"a": [1, None, "x"]})
    store.put(space, "k1", value)
    got = store.get(space, "k1")
    assert got.value == {**value, "id": "k1"}
    assert (got.key, got.namespace) == ("k1", space)
    assert got.created_at == got.updated_at
    assert store.get(space, "missing") is None
    assert store.get((*space, "other"), "k1") is None


def test_a_put_again_keeps_created_at_and_moves_updated_at(store):
    space = ("memories", root())
    store.put(space, "k", memory("first"))
    first = store.get(space, "k")
    store.put(space, "k", memory("second"))
    second = store.get(space, "k")
    assert second.value["content"] == "second"
    assert second.created_at == first.created_at
    assert second.updated_at > first.updated_at


def test_delete_removes_the_item_and_an_empty_namespace_is_not_listed(store):
    space = (root(), "a")
    store.put(space, "k", memory("x"))
    assert store.list_namespaces(prefix=space[:1]) == [space]
    store.delete(space, "k")
    assert store.get(space, "k") is None
    assert store.list_namespaces(prefix=space[:1]) == []
    store.delete(space, "k")  # deleting what is gone is no error


def test_async_operations_give_what_sync_ones_give(store):
    space = ("memories", root())

    async def run():
        await store.aput(space, "k", memory("async tea"))
        got = await store.aget(space, "k")
        found = await store.asearch(space, filter={"type": "fact"})
        spaces = await store.alist_namespaces(prefix=space)
        await store.adelete(space, "k")
        return got, found, spaces, await store.aget(space, "k")

    got, found, spaces, gone = asyncio.run(run())
    assert got.value == {**memory("async tea"), "id": "k"}
    assert [i.key for i in found] == ["k"] and spaces == [space] and gone is None


def test_a_batch_runs_in_order_each_op_seeing_the_ones_before(store):
    space = ("memories", root())
    results = store.batch(
        [
            GetOp(space, "a"),
            PutOp(space, "a", memory("alpha")),
            PutOp(space, "b", memory("beta")),
            GetOp(space, "a"),
            PutOp(space, "a", None),
            SearchOp(space),
            ListNamespacesOp(),
        ]
    )
    assert results[0] is None and results[1] is None and results[2] is None
    assert results[3].value["content"] == "alpha"
    assert [i.key for i in results[5]] == ["b"]
    assert space in results[6]


def test_search_matches_a_prefix_filters_and_pages(store):
    top = root()
    store.put((top, "a"), "1", memory("one", n=1, tag={"k": "v"}))
    store.put((top, "a"), "2", memory("two", n=2, type="task"))
    store.put((top, "a", "deep"), "3", memory("three", n=3))
    store.put((top + "x", "a"), "4", memory("elsewhere", n=4))
    keys = lambda items: [i.key for i in items]  # noqa: E731
    assert keys(store.search((top,))) == ["1", "2", "3"]
    assert keys(store.search((top, "a", "deep"))) == ["3"]
    assert keys(store.search((top,), filter={"type": "task"})) == ["2"]
    assert keys(store.search((top,), filter={"tag": {"k": "v"}})) == ["1"]
    assert keys(store.search((top,), filter={"n": {"$gt": 1}})) == ["2", "3"]
    assert keys(store.search((top,), filter={"n": {"$gte": 1, "$lt": 3}})) == [
        "1",
        "2",
    ]
    assert keys(store.search((top,), filter={"n": {"$ne": 2}})) == ["1", "3"]
    assert keys(store.search((top,), filter={"n": {"$lte": 1}})) == ["1"]
    assert keys(store.search((top,), filter={"missing": 1})) == []
    assert keys(store.search((top,), limit=2)) == ["1", "2"]
    assert keys(store.search((top,), limit=2, offset=2)) == ["3"]
    with pytest.raises(ValueError, match="unsupported operator '\\$in'"):
        store.search((top,), filter={"n": {"$in": [1]}})


def test_search_with_a_query_is_the_stores_recall_in_its_order(store):
    space = ("memories", root())
    store.put(space, "rule", memory("Never force-push", type="correction",
                                    scope="always"))  # fmt: skip
    store.put(space, "tea", memory("Ada drinks green tea every morning"))
    store.put(space, "bike", memory("Ada cycles to work"))
    found = store.search(space, query="what tea does Ada drink")
    recalled = store.recall(space, "what tea does Ada drink")
    expected = [e["id"] for chosen in recalled.pools.values() for e in chosen]
    assert [i.key for i in found] == expected
    assert found[0].key == "rule"  # the always tier first
    assert "tea" in expected
    assert all(i.score is None for i in found)
    filtered = store.search(space, query="tea", filter={"type": "fact"})
    assert "rule" not in [i.key for i in filtered]


def test_list_namespaces_prefix_suffix_wildcards_depth_and_pages(store):
    top = root()
    spaces = [
        (top, "users", "ada", "v1"),
        (top, "users", "bob", "v1"),
        (top, "users", "bob", "v2"),
        (top, "docs", "v1"),
    ]
    for space in spaces:
        store.put(space, "k", memory(f"in {'/'.join(space)}"))
    assert store.list_namespaces(prefix=(top,)) == sorted(spaces)
    assert store.list_namespaces(prefix=(top, "users")) == sorted(spaces[:3])
    assert store.list_namespaces(prefix=(top,), suffix=("v1",)) == sorted(
        [spaces[0], spaces[1], spaces[3]]
    )
    assert store.list_namespaces(prefix=(top, "*", "bob")) == spaces[1:3]
    assert store.list_namespaces(prefix=(top,), suffix=("*", "v2")) == [spaces[2]]
    assert store.list_namespaces(prefix=(top,), max_depth=2) == [
        (top, "docs"),
        (top, "users"),
    ]
    assert store.list_namespaces(prefix=(top,), limit=2) == sorted(spaces)[:2]
    assert store.list_namespaces(prefix=(top,), limit=2, offset=3) == [
        sorted(spaces)[3]
    ]


def test_a_second_store_on_the_database_sees_the_items_and_namespaces(store_url):
    space = ("memories", root())
    with PoolsplitStore(store_url) as one, PoolsplitStore(store_url) as two:
        one.put(space, "k", memory("shared"))
        assert two.get(space, "k").value["content"] == "shared"
        assert space in two.list_namespaces()


def test_the_items_are_the_poolsplit_stores_entries(store):
    space = ("memories", "ada")
    store.put(space, "k", memory("Ada drinks tea"))
    entry = store.store(space).get("k")
    assert entry["content"] == "Ada drinks tea" and entry["written_by"]
    plain = open_store(store.url, namespace="memories.ada")
    try:
        assert plain.get("k")["content"] == "Ada drinks tea"
    finally:
        plain.close()


# --- bad input: a clear error naming the field and the key, nothing written -


@pytest.mark.parametrize(
    ("value", "field", "words"),
    [
        ({"id": "other", "content": "x"}, "id", "has id 'other'"),
        ({"content": "x", "written_by": "me"}, "written_by", "stamped by the store"),
        ({"content": "x", "quarantined": False}, "quarantined", "stamped"),
        ({"content": "word " * 5000}, "content", "max_entry_tokens"),
        ({"content": "a\x00b"}, "content", ""),
        ({"content": "x", "base_priority": "high"}, "base_priority", "real number"),
        ({"content": "x", "when": object()}, "value", "is not JSON"),
        ({"content": "x", "p": float("nan")}, "value", "is not JSON"),
    ],
)
def test_a_value_the_store_cannot_keep_is_refused_naming_its_key(
    store, value, field, words
):
    space = ("memories", root())
    with pytest.raises(InvalidInput) as caught:
        store.put(space, "key1", value)
    assert caught.value.field == field
    assert "'key1'" in str(caught.value) and words in str(caught.value)
    assert store.get(space, "key1") is None


def test_a_value_without_content_is_kept_and_read_by_the_stores_rule(store):
    """Any JSON dict is kept (LangGraph's other users of the store put
    settings, profiles); the store's one read rule decides what a recall
    makes of it: a note with no text, here."""
    space = ("memories", root())
    store.put(space, "settings", {"theme": "dark", "n": 3})
    assert store.get(space, "settings").value == {
        "theme": "dark",
        "n": 3,
        "id": "settings",
    }
    recalled = store.recall(space, "theme")
    assert "settings" in recalled.ids()["other"]
    assert recalled.skipped == []


def test_the_same_memory_under_another_key_is_refused_not_dropped(store):
    space = ("memories", root())
    store.put(space, "a", memory("Ada drinks tea"))
    with pytest.raises(InvalidInput, match="not written.*idempotent.*'a'"):
        store.put(space, "b", memory("Ada  drinks tea"))
    assert store.get(space, "b") is None


def test_ttl_is_not_supported(store):
    assert store.supports_ttl is False
    with pytest.raises(NotImplementedError):
        store.put(("memories", root()), "k", memory("x"), ttl=5)
    with pytest.raises(NotImplementedError, match="ttl"):
        store.batch([PutOp(("memories", root()), "k", memory("x"), ttl=5.0)])


@pytest.mark.parametrize(
    "space", [(), ("a.b",), ("ok", ""), ("ok", 3)], ids=["empty", "dot", "", "int"]
)
def test_a_bad_namespace_is_refused(store, space):
    with pytest.raises((InvalidNamespaceError, ValueError)):
        store.batch([PutOp(space, "k", memory("x"))])
    with pytest.raises(InvalidNamespaceError):
        store.batch([GetOp(space, "k")])


def test_a_database_in_memory_is_refused():
    with pytest.raises(InvalidInput, match="url: ':memory:'"):
        PoolsplitStore(":memory:")


# --- the oracle: LangGraph's own InMemoryStore -------------------------------

labels = st.sampled_from(["a", "b", "c"])
spaces = st.lists(labels, min_size=1, max_size=3).map(tuple)
step = st.one_of(
    st.tuples(st.just("put"), spaces, st.integers(0, 5), st.integers(0, 3)),
    st.tuples(st.just("delete"), spaces, st.integers(0, 5)),
)


def seen(store, prefix, n):
    """What search says, without timestamps and the id PoolsplitStore adds."""
    items = store.search(prefix, filter={"n": {"$gte": n}}, limit=100)
    return sorted(
        (i.namespace, i.key, {k: v for k, v in i.value.items() if k != "id"})
        for i in items
    )


def holding(store, prefix):
    """The namespaces under ``prefix`` that hold an item (InMemoryStore also
    lists those emptied by a delete; PostgresStore, as PoolsplitStore, not)."""
    spaces = {i.namespace for i in store.search((), limit=1000)}
    return sorted(s for s in spaces if s[: len(prefix)] == prefix)


@given(st.lists(step, max_size=20), spaces, st.integers(0, 3))
def test_poolsplit_store_answers_as_langgraphs_in_memory_store(steps, prefix, n):
    folder = tempfile.mkdtemp()
    try:
        with PoolsplitStore(os.path.join(folder, "m.db")) as ours:
            oracle = InMemoryStore()
            for kind, space, key, *rest in steps:
                value = None
                if kind == "put":  # one content per item: none is refused
                    value = {"content": f"{'.'.join(space)} {key} {rest[0]}",
                             "n": rest[0]}  # fmt: skip
                for store in (ours, oracle):
                    store.put(space, f"k{key}", value)
                assert seen(ours, prefix, n) == seen(oracle, prefix, n)
                assert ours.list_namespaces(prefix=prefix) == holding(oracle, prefix)
                tops = sorted({s[:1] for s in holding(oracle, ())})
                assert ours.list_namespaces(max_depth=1) == tops
    finally:
        shutil.rmtree(folder)
