"""Issue 35: one base-score rule, ``poolsplit.base_score``, and no copy of it.

A change of the ranking formula (another recency slope, horizon and floor,
other project factors) is made here the way an issue would make it: in
``poolsplit.base_score`` alone, patched for the test. The core's
``default_scorer`` (so the store's scorer), the one-loop recall's scores
(``_ranking._fast_scores``) and the recall index's bounds (``_index``'s
``_base`` and ``_boosted_bound``) must all move with it: a copy of the
arithmetic left anywhere in the memory layer would score or bound by the old
rule and disagree with the core. The expected scores are written here from
the changed formula, not read from the library.
"""

from __future__ import annotations

import contextlib
import sys
import warnings
from collections.abc import Iterator
from datetime import datetime, timezone
from typing import Any

import poolsplit
from hypothesis import given, settings
from hypothesis import strategies as st
from poolsplit import Pool

from poolsplit_memory import _index, _ranking, _subset, loadable
from poolsplit_memory._ranking import Statistics, floored

NOW = datetime(2026, 6, 1, tzinfo=timezone.utc)
NOW_SECONDS = NOW.timestamp()


def changed_rule(
    priority: float,
    created: float | None,
    tags: Any,
    project: object,
    now: float,
    context_tags: frozenset[str] = frozenset(),
    context_project: object = None,
) -> float:
    """Priority x recency x tags x project as a formula change would make it:
    recency ``max(0.1, 1 - 0.9 * days / 30)``, a project 2.0 when it matches
    and 0.25 when not; the tag boost stays 0.5 (the index's largest tag
    factor, ``_MAX_TAGS``, is derived from the rule when it is imported)."""
    score = priority
    if created is not None:
        days = max((now - created) / 86400.0, 0.0)
        score *= max(0.1, 1.0 - 0.9 * days / 30.0)
    if tags and context_tags:
        distinct = frozenset(tags)
        score *= 1.0 + 0.5 * len(distinct & context_tags) / len(distinct)
    if project is not None:
        score *= 2.0 if project == context_project else 0.25
    return score


@contextlib.contextmanager
def rule_changed() -> Iterator[None]:
    original = poolsplit.base_score
    poolsplit.base_score = changed_rule  # type: ignore[assignment]
    try:
        yield
    finally:
        poolsplit.base_score = original


WORDS = ("billing", "deploy", "search", "report", "invoice", "rollback")
TAGS = ("api", "db", "ui")
entries_st = st.lists(
    st.fixed_dictionaries(
        {
            "type": st.sampled_from(("task", "fact", "note")),
            "content": st.lists(st.sampled_from(WORDS), max_size=3).map(" ".join),
        },
        optional={
            "base_priority": st.one_of(
                st.integers(-3, 9), st.floats(-10, 10, allow_nan=False)
            ),
            "created": st.floats(NOW_SECONDS - 9e6, NOW_SECONDS + 9e5),
            "tags": st.lists(st.sampled_from(TAGS), max_size=3),
            "project": st.sampled_from(["shop", "blog"]),
        },
    ),
    max_size=40,
)
context_st = st.fixed_dictionaries(
    {
        "message": st.lists(st.sampled_from((*WORDS, "x")), max_size=3).map(" ".join),
        "tags": st.lists(st.sampled_from(TAGS), max_size=2),
        "project": st.sampled_from([None, "shop", "blog"]),
    }
)


def changed_base(entry: dict[str, Any], context: dict[str, Any]) -> float:
    """The changed rule of an entry for the store's ranking (its project left
    out when the context names none), from the entry's fields."""
    project = entry.get("project") if context["project"] is not None else None
    return changed_rule(
        float(entry.get("base_priority", 5.0)),
        entry.get("created"),
        entry.get("tags"),
        project,
        NOW_SECONDS,
        frozenset(context["tags"]),
        context["project"],
    )


@settings(max_examples=200)
@given(entries_st, context_st)
def test_the_fast_scores_follow_a_changed_rule(
    entries: list[dict[str, Any]], context: dict[str, Any]
) -> None:
    stats = Statistics(entries)
    with rule_changed():
        relevance = stats.relevance(context["message"])
        scorer = stats.scorer(context, relevance=relevance)
        fast = _ranking._fast_scores(
            stats, entries, context, NOW, relevance, _ranking._Split()
        )
        for entry, score in zip(entries, fast):
            factor = relevance.factor(entry)
            expected = changed_base(entry, context) * factor if factor else 0.0
            assert score == scorer(entry, context, now=NOW) == expected


def check_index(entries: list[dict[str, Any]], pools: list[Pool], context: Any) -> None:
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        expected = poolsplit.retrieve_pools(entries, pools, context, now=NOW)
        got = _index.Index(entries).recall(
            pools, context, now=NOW, token_counter=poolsplit.default_token_counter
        )
    assert {k: [id(e) for e in v] for k, v in got.items()} == {
        k: [id(e) for e in v] for k, v in expected.items()
    }


@settings(max_examples=200)
@given(entries_st, context_st, st.integers(1, 4))
def test_the_index_bounds_and_recall_follow_a_changed_rule(
    entries: list[dict[str, Any]], context: dict[str, Any], most: int
) -> None:
    """Every bound at least the changed score, and the index's recall the
    core's full scan under the changed rule (the index's own subset: its
    share of the store and its group count are not limits here)."""
    pools = [Pool("a", 10**6, most), Pool("b", 10**6, most, types=("fact",))]
    saved = _subset._MAX_SHARE, _index._GROUP_SHARE
    _subset._MAX_SHARE, _index._GROUP_SHARE = 1, 0
    try:
        with rule_changed():
            index = _index.Index(entries)
            call = index._call(context, NOW)
            assert call is not None
            for position, entry in enumerate(entries):
                score = poolsplit.default_scorer(entry, context, now=NOW)
                assert _index._widened(index._boosted_bound(position, call)) >= score
                base = poolsplit.default_scorer(
                    entry, {"project": context["project"]}, now=NOW
                )
                assert _index._widened(index._base(position, call)) >= base
            check_index(entries, pools, context)
    finally:
        _subset._MAX_SHARE, _index._GROUP_SHARE = saved


def test_the_change_is_seen() -> None:
    """The changed rule is not the shipped one (so the tests above can fail),
    and the one-loop recall takes what the changed order says: of two
    entries matching the message alike, one fresh of another project and one
    30 days old of the context's, the shipped rule prefers the old one
    (5 x 0.77 x 1.5 against 5 x 0.5), the changed one the fresh (5 x 0.1 x 2
    against 5 x 0.25)."""
    old = NOW_SECONDS - 30 * 86400.0
    fields = (5.0, old, None, "shop", NOW_SECONDS, frozenset(), "shop")
    assert poolsplit.base_score(*fields) != changed_rule(*fields)
    entries = [
        {
            "id": "fresh",
            "content": "billing",
            "created": NOW_SECONDS,
            "project": "blog",
        },
        {"id": "old", "content": "billing", "created": old, "project": "shop"},
        {"id": "other", "content": "deploy"},
    ]
    context = {"message": "billing", "tags": [], "project": "shop"}
    stats = Statistics(entries)
    relevance = stats.relevance(context["message"])
    pools = floored([Pool("all", 10**6, 1)], relevance)

    def first() -> str:
        got = _ranking.recall_by_scores(
            stats,
            entries,
            pools,
            context,
            token_counter=poolsplit.default_token_counter,
            now=NOW,
            relevance=relevance,
        )
        return str(got["all"][0]["id"])

    assert first() == "old"
    with rule_changed():
        assert first() == "fresh"
    assert first() == "old"


def test_the_index_constants_are_the_rules() -> None:
    """The index's largest tag factor (all tags shared) and the project
    factor below 1 behind its near-limit widening (another project's)."""
    assert _index._MAX_TAGS == 1.5
    assert sys.float_info.max * 0.5 / 2.0 == _index._NEAR_LIMIT


# --- the default type: one meaning, poolsplit.entry_type ---------------------

# ``"type"`` missing and None are the default type, "note"; "" is a type of
# its own (the core's documented meaning): every path reads it the same way.
TYPES = [{}, {"type": None}, {"type": ""}, {"type": "note"}, {"type": "fact"}]


def test_the_default_type_is_one_meaning_on_every_path() -> None:
    from poolsplit_memory._digests import _memory
    from poolsplit_memory._rows import _columns

    entries = [
        {"id": str(i), "content": f"entry {i}", "created": "2026-05-01", **kind}
        for i, kind in enumerate(TYPES)
    ]
    pools = [Pool("notes", 10**6, 10, ["note"]), Pool("blank", 10**6, 10, [""])]
    expected = {"notes": ["0", "1", "3"], "blank": ["2"]}
    core = poolsplit.retrieve_pools(entries, pools, None, now=NOW)
    assert {name: [e["id"] for e in got] for name, got in core.items()} == expected
    index = _index.Index(entries)
    by_index = index.recall(
        pools, {}, now=NOW, token_counter=poolsplit.default_token_counter
    )
    assert {name: [e["id"] for e in got] for name, got in by_index.items()} == expected
    # The store's identity of a memory (dedupe) and its type column.
    same = {"content": "one text", "scope": None}
    identities = [_memory({**same, **kind})[0] for kind in TYPES]
    columns = [_columns({**same, **kind})[0] for kind in TYPES]
    assert identities == columns == ["note", "note", "", "note", "fact"]
    assert _memory({**same, "type": None}) == _memory(same)
    assert _memory({**same, "type": ""}) != _memory(same)
    # Rows read back (a row another tool wrote with "type": null is a note).
    read = loadable(entries, pools=pools)
    assert [e["id"] for e in read.entries] == ["0", "1", "2", "3"]
    assert read.types == {"note", "", "fact"}
    assert read.skipped == []
