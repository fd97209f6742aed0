"""Stale memories told apart (issue 49): ``possible_supersedes`` and the
recall's warning, against memory/README.md's "Stale memories".

The oracle below is written from the README's statement of the rule and
imports nothing of it: its terms are the README's (a regex, the core's
stopword list and Snowball's own Porter stemmer), its idf counted from
scratch over the entries of the pool.
"""

from __future__ import annotations

import doctest
import functools
import json
import math
import re
import threading
from datetime import datetime, timedelta, timezone

import poolsplit
import pytest
import snowballstemmer
from hypothesis import example, given
from hypothesis import strategies as st

from poolsplit_memory import _stale, open_store
from poolsplit_memory._ranking import Statistics
from poolsplit_memory._stale import (
    near_contents,
    paired,
    possible_supersedes,
    stale_pairs,
    subject_share,
)

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=timezone.utc)
_stem = functools.lru_cache(maxsize=None)(snowballstemmer.stemmer("porter").stemWord)


# --- the oracle, from the README ---------------------------------------------


def oracle_terms(text):
    words = set(re.findall(r"[a-z0-9]{3,}", text.lower())) - poolsplit.STOPWORDS
    return {_stem(w) for w in words}


def oracle_content(entry):
    content = entry.get("content")
    return "" if content is None else str(content)


def oracle_idf(pool):
    """idf(t) = ln(1 + (N - n(t) + 0.5) / (n(t) + 0.5)) over the pool."""
    docs = [oracle_terms(oracle_content(e)) for e in pool]

    def idf(term):
        n = sum(1 for d in docs if term in d)
        if n == 0:
            return 0.0
        return math.log(1 + (len(docs) - n + 0.5) / (n + 0.5))

    return idf


def oracle_active(entry):
    return entry.get("status") in (None, "active") and not entry.get("superseded_by")


def oracle_paired(a, b, pool):
    """The README: two entries (other ids) of one type, both active, both
    quarantined or neither, contents that differ once whitespace is
    normalised, and share = W(A & B) / sqrt(W(A) x W(B)) >= 0.52."""
    if a.get("id") == b.get("id") or a.get("type", "note") != b.get("type", "note"):
        return False
    if not (oracle_active(a) and oracle_active(b)):
        return False
    if (a.get("quarantined") is True) != (b.get("quarantined") is True):
        return False
    if oracle_content(a).split() == oracle_content(b).split():
        return False
    idf = oracle_idf(pool)
    terms_a = oracle_terms(oracle_content(a))
    terms_b = oracle_terms(oracle_content(b))
    weight_a = sum(idf(t) for t in terms_a)
    weight_b = sum(idf(t) for t in terms_b)
    if weight_a * weight_b <= 0:
        return False
    share = sum(idf(t) for t in terms_a & terms_b) / math.sqrt(weight_a * weight_b)
    return share >= 0.52


# --- strategies ----------------------------------------------------------------

WORDS = [
    "ada", "lives", "living", "berlin", "lisbon", "moved", "orders", "service",
    "database", "postgresql", "sqlite", "deadline", "march", "owner", "priya",
    "the", "with", "not", "42", "co",
]  # fmt: skip
text = st.lists(st.sampled_from(WORDS), max_size=7).map(" ".join)
entries = st.lists(
    st.fixed_dictionaries(
        {"content": text, "type": st.sampled_from(["fact", "note"])},
        optional={
            "superseded_by": st.just("x"),
            "status": st.sampled_from(["active", "archived"]),
            "quarantined": st.just(True),
        },
    ),
    min_size=1,
    max_size=10,
).map(lambda found: [{**e, "id": f"e{i}"} for i, e in enumerate(found)])


# --- the rule, property tests ---------------------------------------------------


def test_the_modules_examples_hold():
    assert doctest.testmod(_stale).failed == 0


@given(pool=entries)
def test_property_the_rule_is_the_readme_statement(pool):
    """Every pair of the pool, by the library and by the oracle."""
    idf = Statistics(pool).idf
    for a in pool:
        for b in pool:
            assert paired(a, b, idf) == oracle_paired(a, b, pool), (a, b)


@given(pool=entries)
def test_property_the_rule_is_symmetric_and_never_pairs_an_entry_with_itself(pool):
    idf = Statistics(pool).idf
    for a in pool:
        assert not paired(a, a, idf)
        assert not paired(a, dict(a), idf)
        for b in pool:
            assert paired(a, b, idf) == paired(b, a, idf)


@given(pool=entries, others=entries)
def test_property_entries_of_another_type_change_nothing(pool, others):
    """With the statistics fixed, candidates of a type no entry of ``pool``
    has never change what the rule finds for an entry of ``pool``."""
    idf = Statistics(pool).idf
    strangers = [{**e, "id": f"s{e['id']}", "type": "task"} for e in others]
    for entry in pool:
        alone = possible_supersedes(entry, pool, idf)
        assert possible_supersedes(entry, [*strangers, *pool, *strangers], idf) == (
            alone
        )


@given(pool=entries)
def test_property_the_rarest_terms_find_every_entry_the_rule_pairs(pool):
    """near_contents's bound is exact: the entries of the contents it leaves
    out are never paired (what lets a store read only a few postings)."""
    stats = Statistics(pool)

    def holders(term):
        return [oracle_content(e) for e in pool if term in stats.terms_of(e["content"])]

    for entry in pool:
        near = set(near_contents(stats.terms_of(entry["content"]), stats.idf, holders))
        holding = [e for e in pool if oracle_content(e) in near]
        assert possible_supersedes(entry, holding, stats.idf) == possible_supersedes(
            entry, pool, stats.idf
        )


@given(pool=entries)
def test_property_stale_pairs_are_every_pair_once_older_first(pool):
    dated = [
        {**e, "created": (NOW - timedelta(days=i % 3)).isoformat()}
        for i, e in enumerate(pool)
    ]
    idf = Statistics(dated).idf
    found = stale_pairs(dated, lambda entry: idf)
    expected = {
        frozenset((a["id"], b["id"]))
        for i, a in enumerate(dated)
        for b in dated[i + 1 :]
        if oracle_paired(a, b, dated)
    }
    assert {frozenset((o["id"], n["id"])) for o, n in found} == expected
    assert len(found) == len(expected)
    for older, newer in found:
        assert (older["created"], older["id"]) <= (newer["created"], newer["id"])


@given(pool=entries, bound=st.booleans())
@example(  # found by the heavy profile: "ada" is common among the facts only
    pool=[
        {"content": "", "type": "note", "id": "e0"},
        {"content": "ada", "type": "fact", "id": "e1"},
        {"content": "ada", "type": "note", "id": "e2"},
        {"content": "ada lives", "type": "fact", "id": "e3"},
    ],
    bound=True,
)
def test_property_stale_pairs_read_each_entrys_own_pool(pool, bound):
    """A pool per type (its own statistics, as a store's recall passes):
    each pair is judged by its pool's idf, whether ``idf_of`` returns a
    statistics' bound method or a new function each call (stale_pairs
    memoises per pool; a memo shared across pools would mix their idf)."""
    of_type = {t: [e for e in pool if e["type"] == t] for t in ("fact", "note")}
    stats = {t: Statistics(kept) for t, kept in of_type.items()}

    def idf_of(entry):
        idf = stats[entry["type"]].idf
        return idf if bound else functools.partial(idf)

    found = stale_pairs(pool, idf_of)
    expected = {
        frozenset((a["id"], b["id"]))
        for i, a in enumerate(pool)
        for b in pool[i + 1 :]
        if oracle_paired(a, b, of_type[a["type"]])
    }
    assert {frozenset((o["id"], n["id"])) for o, n in found} == expected


# --- the store: remember -----------------------------------------------------------

FACTS = [
    "The orders service runs on SQLite for the prototype",
    "Priya owns the billing service",
    "The user drinks green tea in the mornings",
    "Mia's swimming lessons are on Wednesdays",
]
OLD = "Ada lives in Berlin, in Kreuzberg, near the canal"
NEW = "Ada no longer lives in Berlin Kreuzberg, she lives in Lisbon"


def filled(store, old_type="fact"):
    """FACTS and OLD stored, then a recall (a store looks for possible
    supersedes in what its recalls loaded)."""
    for i, fact in enumerate(FACTS):
        store.remember(fact, type="fact", now=NOW - timedelta(days=200 + i))
    old = store.remember(OLD, type=old_type, now=NOW - timedelta(days=100))
    store.recall("anything", now=NOW)
    return old


def test_remember_names_an_earlier_version_and_says_how_to_retire_it(open_):
    store = open_("ada")
    old = filled(store)
    new = store.remember(NEW, type="fact", now=NOW)
    assert new.possible_supersedes == [old.id]
    (warning,) = [w for w in new.warnings if w.startswith("possible_supersedes:")]
    assert old.id in warning and f"supersedes={old.id!r}" in warning
    assert store.get(old.id).get("superseded_by") is None  # nothing retired


def test_remember_then_supersedes_retires_the_old_entry_and_writes_nothing(open_):
    """What the warning tells the model to do."""
    store = open_("ada")
    old = filled(store)
    new = store.remember(NEW, type="fact", now=NOW)
    again = store.remember(NEW, type="fact", supersedes=old.id, now=NOW)
    assert again.id == new.id
    assert again.possible_supersedes == []
    assert store.get(old.id)["superseded_by"] == new.id


def test_an_entry_of_another_type_is_never_named(open_):
    store = open_("ada")
    filled(store, old_type="note")
    new = store.remember(NEW, type="fact", now=NOW)
    assert new.possible_supersedes == []
    assert not [w for w in new.warnings if w.startswith("possible_supersedes:")]


def test_the_same_content_is_idempotent_not_a_possible_supersede(open_):
    store = open_("ada")
    old = filled(store)
    again = store.remember(
        "  Ada lives in Berlin,  in Kreuzberg, near the canal", type="fact"
    )
    assert again.id == old.id
    assert again.possible_supersedes == []
    assert [w.split(":")[0] for w in again.warnings] == ["idempotent"]


def test_supersedes_given_names_no_other_version_of_that_id(open_):
    store = open_("ada")
    old = filled(store)
    new = store.remember(NEW, type="fact", supersedes=old.id, now=NOW)
    assert new.possible_supersedes == []
    assert not [w for w in new.warnings if "possible_supersedes" in w]


def test_a_retired_entry_is_never_named(open_):
    store = open_("ada")
    old = filled(store)
    newer = store.remember(
        "Ada lives in Berlin Kreuzberg no more", type="fact", supersedes=old.id
    )
    new = store.remember(NEW, type="fact", now=NOW)
    assert old.id not in new.possible_supersedes
    assert new.possible_supersedes == [newer.id]


def test_a_store_finds_entries_another_store_wrote_after_its_recall(store_url):
    with open_store(store_url, namespace="ada") as second:
        second.recall("anything", now=NOW)
        with open_store(store_url, namespace="ada") as first:
            old = filled(first)
        assert second.remember(NEW, type="fact").possible_supersedes == [old.id]


def test_a_store_that_never_recalled_names_none_and_reads_no_row(sqlite_url):
    with open_store(sqlite_url, namespace="ada") as first:
        filled(first)
    with open_store(sqlite_url, namespace="ada") as second:
        before = second._backend.rows_read
        assert second.remember(NEW, type="fact").possible_supersedes == []
        assert second._backend.rows_read == before


def test_a_remember_while_a_recall_holds_the_snapshot_names_none_and_never_waits(
    sqlite_url,
):
    with open_store(sqlite_url, namespace="ada") as store:
        filled(store)
        store.recall("anything", now=NOW)
        assert store._cache_lock.acquire(timeout=5)  # a recall building one
        try:
            got = []
            thread = threading.Thread(
                target=lambda: got.append(store.remember(NEW, type="fact", now=NOW)),
                daemon=True,
            )
            thread.start()
            thread.join(10)
            assert got, "the remember waited for the recall"
            assert got[0].possible_supersedes == []
        finally:
            store._cache_lock.release()
        recalled = store.recall("Where does Ada live, Berlin or Lisbon?", now=NOW)
        assert any(w.startswith("possible_supersedes:") for w in recalled.warnings)


def test_other_namespaces_are_never_named(open_):
    filled(open_("bob"))
    assert open_("ada").remember(NEW, type="fact").possible_supersedes == []


# --- the store: recall ---------------------------------------------------------------


def test_a_recall_loading_both_versions_names_the_older_and_the_newer(open_):
    store = open_("ada")
    old = filled(store)
    new = store.remember(NEW, type="fact", now=NOW)
    recalled = store.recall("Where does Ada live, Berlin or Lisbon?", now=NOW)
    assert {old.id, new.id} <= set(recalled.ids()["facts"])
    (warning,) = [w for w in recalled.warnings if w.startswith("possible_supersedes:")]
    assert f"{old.id!r} (older) and {new.id!r} (newer)" in warning
    assert warning in recalled.chat_text()


def test_the_older_is_the_earlier_created_whatever_the_write_order(open_):
    store = open_("ada")
    filled(store)
    new = store.remember(NEW, type="fact", now=NOW - timedelta(days=300))
    recalled = store.recall("Where does Ada live, Berlin or Lisbon?", now=NOW)
    (warning,) = [w for w in recalled.warnings if w.startswith("possible_supersedes:")]
    assert warning.startswith(f"possible_supersedes: {new.id!r} (older)")


def test_a_recall_after_the_retirement_warns_no_more(open_):
    store = open_("ada")
    old = filled(store)
    store.remember(NEW, type="fact", supersedes=old.id, now=NOW)
    recalled = store.recall("Where does Ada live, Berlin or Lisbon?", now=NOW)
    assert not [w for w in recalled.warnings if "possible_supersedes" in w]


# --- the MCP tool ---------------------------------------------------------------------


def test_the_remember_tool_answers_possible_supersedes(tmp_path):
    pytest.importorskip("mcp")
    import anyio
    from mcp.client import Client

    from poolsplit_memory.mcp_server import build_server

    out = []
    with open_store(str(tmp_path / "memory.db")) as store:
        old = filled(store)

        async def body():
            async with Client(build_server(store)) as client:
                out.append(
                    await client.call_tool("remember", {"content": NEW, "type": "fact"})
                )
                out.append(
                    await client.call_tool(
                        "remember", {"content": "Ada plays the cello", "type": "fact"}
                    )
                )

        anyio.run(body)
    first, second = (result.structured_content for result in out)
    assert first["possible_supersedes"] == [old.id]
    assert any(w.startswith("possible_supersedes:") for w in first["warnings"])
    assert second["possible_supersedes"] == []


# --- the rule's order and identity, as the review of its per-entry reads found --


def test_the_rule_reads_nothing_more_once_a_condition_fails():
    """Equal ids or an inactive entry: no term is weighed (a sparse idf that
    raises on a term it lacks is never asked); no shared term: share 0."""
    sparse = {}.__getitem__
    same = [{"id": "x", "content": "zebra"}, {"id": "x", "content": "zebra quagga"}]
    retired = [{"id": "x", "content": "zebra", "status": "archived"},
               {"id": "y", "content": "zebra"}]  # fmt: skip
    assert not paired(*same, sparse)
    assert not paired(*retired, sparse)
    assert subject_share({"p"}, {"q"}, sparse) == 0.0
    assert not paired({"id": "a", "content": "lion"}, {"id": "b", "content": "zebra"},
                      sparse)  # fmt: skip


def test_a_nan_type_is_no_type_of_another_entry():
    """json reads every NaN as one object: two rows of type NaN are still of
    no common type (NaN != NaN), by paired and by stale_pairs alike."""
    rows = json.loads(
        '[{"id": "a", "type": NaN, "content": "Ada lives in Berlin, in Kreuzberg"},'
        ' {"id": "b", "type": NaN, "content": "Ada lives in Lisbon now, not Berlin"},'
        ' {"id": "c", "type": "x", "content": "Ada plays the cello"}]'
    )
    idf = Statistics(rows).idf
    strings = [{**row, "type": "fact"} for row in rows[:2]]  # the same, typed
    assert paired(*strings, idf)
    assert not paired(rows[0], rows[1], idf)
    assert stale_pairs(rows, lambda entry: idf) == []


def test_two_idfs_of_one_object_are_two_pools():
    """Two built-in methods of one dict are two idfs, never one memo."""
    weights = {"ada": 0.01, "live": 0.01, "berlin": 5.0, "lisbon": 5.0}
    pool = [  # type x weighed by the weights, type y flat (True is 1)
        {"id": "1", "type": "x", "content": "Ada lives in Berlin"},
        {"id": "2", "type": "x", "content": "Ada lives in Lisbon"},
        {"id": "3", "type": "y", "content": "Ada lives in Berlin"},
        {"id": "4", "type": "y", "content": "Ada lives in Lisbon"},
    ]

    def idf_of(entry):
        return weights.get if entry["type"] == "x" else weights.__contains__

    expected = [
        (a, b) for i, a in enumerate(pool) for b in pool[i + 1 :]
        if paired(a, b, idf_of(a))
    ]  # fmt: skip
    assert [(o["id"], n["id"]) for o, n in stale_pairs(pool, idf_of)] == [
        (o["id"], n["id"]) for o, n in expected
    ]


def test_possible_supersedes_bounds_by_the_set_of_terms():
    """A ``terms_of`` that lists a term twice: the bound that passes over a
    candidate reads the set of the entry's terms, so it never passes over
    one the rule pairs."""
    entry = {"id": "a", "type": "fact", "content": "ada ada ada x"}
    other = {"id": "b", "type": "fact", "content": "ada"}
    one = lambda term: 1.0  # noqa: E731
    assert paired(entry, other, one, terms_of=str.split)
    assert possible_supersedes(entry, [other], one, terms_of=str.split) == ["b"]
