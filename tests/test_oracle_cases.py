"""Named examples, through the public API, that pin README rules the mutation
run of issue 14 showed unguarded, and the README disagreements the oracle
found (each a shrunk hypothesis failure, also an ``@example`` in
test_properties.py). Every selection is also checked against the oracle.
"""

import math
import random
from datetime import date, datetime, timedelta, timezone

import pytest
from conftest import NOW
from oracle import (
    check_invariants,
    ids,
    oracle_retrieve_pools,
    oracle_score,
    snapshot,
)

from poolsplit import Pool, default_scorer, retrieve, retrieve_pools


def selected(store, pool, context=None, **hooks):
    """retrieve's ids, after checking the invariants and the oracle."""
    before = snapshot(store)
    got = retrieve(store, pool, context, now=NOW, **hooks)
    result = {pool.name: got}
    check_invariants(store, [pool], context, result, before=before, now=NOW, **hooks)
    expected = oracle_retrieve_pools(store, [pool], context, now=NOW, **hooks)
    assert ids(result) == ids(expected)
    return [entry.get("id") for entry in got]


# --- The default scorer's factors, as retrieval applies them -----------------


def test_project_entry_at_priority_4_beats_untagged_5_for_its_project():
    """4 x 1.5 (project match) = 6 beats 5: the context project is read."""
    store = [{"id": "u", "base_priority": 5}, {"id": "p", "base_priority": 4}]
    store[1]["project"] = "x"
    assert selected(store, Pool("p", 100, 1), {"project": "x"}) == ["p"]


def test_project_mismatch_halves_the_score():
    """5 x 0.5 = 2.5 loses to 3 when the context names another project."""
    store = [{"id": "p", "base_priority": 5, "project": "x"}, {"id": "q"}]
    store[1]["base_priority"] = 3
    assert selected(store, Pool("p", 100, 1), {"project": "y"}) == ["q"]


def test_bare_string_tag_counts_as_one_tag():
    """tags="deploy" is the one tag "deploy" (not six letters): 4 x 1.5 = 6."""
    store = [{"id": "b", "base_priority": 5.5}, {"id": "a", "base_priority": 4}]
    store[1]["tags"] = "deploy"
    assert selected(store, Pool("p", 100, 1), {"tags": ["deploy"]}) == ["a"]


def test_tag_boost_is_exactly_one_half():
    """4 x (1 + 0.5) is exactly 6.0 and ties two priority-6 entries, so the
    ids decide: a boost above 0.5 would put "b" first, below 0.5 last."""
    store = [
        {"id": "c", "base_priority": 6},
        {"id": "b", "base_priority": 4, "tags": ["deploy"]},
        {"id": "a", "base_priority": 6},
    ]
    assert selected(store, Pool("p", 100, 3), {"tags": ["deploy"]}) == ["a", "b", "c"]
    assert default_scorer(store[1], {"tags": ["deploy"]}, now=NOW) == 6.0


def test_tag_share_counts_distinct_tags():
    """["a", "a", "b"] has two distinct tags; one matches: 1 + 0.5 x 1/2."""
    entry = {"base_priority": 4, "tags": ["a", "a", "b"]}
    assert default_scorer(entry, {"tags": ["a"]}, now=NOW) == 5.0
    store = [{"id": "x", "base_priority": 5}, dict(entry, id="e")]
    assert selected(store, Pool("p", 100, 2), {"tags": ["a"]}) == ["e", "x"]


def test_tag_factor_multiplies_the_score():
    """The tag factor scales the priority (4 x 1.5 = 6 beats 5); it does not
    replace it (1.5 would lose to 5)."""
    store = [{"id": "b", "base_priority": 5}, {"id": "a", "base_priority": 4}]
    store[1]["tags"] = ["x"]
    assert selected(store, Pool("p", 100, 1), {"tags": ["x"]}) == ["a"]


def test_message_boost_lifts_priority_0_9_over_1_0():
    """Only the 0.9 entry matches both message words: 0.9 x 2.5 = 2.25 > 1.0.
    A bound that skipped the message factor below 1 would pick the 1.0."""
    store = [
        {"id": "one", "base_priority": 1.0, "content": "unrelated text"},
        {"id": "match", "base_priority": 0.9, "content": "deploy the cluster"},
    ]
    context = {"message": "deploy cluster"}
    assert selected(store, Pool("p", 100, 1), context) == ["match"]


def test_message_boost_needs_more_than_fifteen_percent():
    """1 of 7 significant words (14%) is no boost; 2 of 7 (29%) is."""
    context = {"message": "deploy billing cluster search alpha beta gamma"}
    assert default_scorer({"content": "deploy"}, context, now=NOW) == 5
    assert default_scorer({"content": "deploy billing"}, context, now=NOW) == (
        5 * (1 + 1.5 * (2 / 7))
    )


def test_negative_priority_with_a_message_match_ranks_by_exact_score():
    """-1 x 2.5 = -2.5 ranks below -2: the boost makes a negative lower."""
    store = [
        {"id": "m", "base_priority": -1, "content": "deploy cluster"},
        {"id": "n", "base_priority": -2, "content": "nothing"},
    ]
    context = {"message": "deploy cluster"}
    assert selected(store, Pool("p", 100, 2), context) == ["n", "m"]


# --- Tie keys ---------------------------------------------------------------


@pytest.mark.parametrize("order", [(1, True), (True, 1)])
def test_ids_1_and_true_tied_put_the_number_first(order):
    """bool is not a number (as for token_count and base_priority): 1 is a
    number, True "anything else", so 1 sorts first whatever the input order."""
    store = [{"id": value} for value in order]
    got = selected(store, Pool("p", 100, 2))
    assert [type(value) for value in got] == [int, bool]


@pytest.mark.parametrize("order", [((1,), [2]), ([2], (1,))])
def test_ids_tuple_and_list_tied_keep_input_order(order):
    """README: ids order as "strings, then numbers, then anything else", then
    input position: a tuple and a list are both "anything else", so they keep
    their input order. The library orders them by type name (list first)."""
    store = [{"id": value} for value in order]
    assert selected(store, Pool("p", 100, 2)) == list(order)


def test_ids_strings_then_numbers_then_anything_else():
    """Missing and None as "", then strings, then numbers, then the rest."""
    store = [{"id": v} for v in [(1,), 2.5, "b", None, 1, "a", True]] + [{}]
    got = selected(store, Pool("p", 100, 8))
    assert got == [None, None, "a", "b", 1, 2.5, (1,), True]


def test_numeric_ids_compare_by_exact_value():
    """2**53 + 1 is larger than 2**53, though both round to the same float."""
    store = [{"id": 2**53 + 1}, {"id": 2**53}]
    assert selected(store, Pool("p", 100, 2)) == [2**53, 2**53 + 1]


SAME_INSTANT = [
    ("2025-12-31T05:00:00+05:00", "2025-12-31T00:00:00Z"),
    ("2025-12-31T00:00:00Z", datetime(2025, 12, 31, tzinfo=timezone.utc)),
    ("2025-12-31", date(2025, 12, 31)),
    (datetime(2025, 12, 31), "2025-12-31T00:00Z"),
    (1767139200, "2025-12-31T00:00:00.000Z"),
]


@pytest.mark.parametrize(("first", "second"), SAME_INSTANT)
def test_one_instant_in_two_forms_ties_then_id_decides(first, second):
    """Ties are broken by the parsed instant of created: two forms of one
    instant tie there, so the id decides ("a" first, whichever form it has).
    The library breaks them by the raw string first."""
    for created_a, created_b in ((first, second), (second, first)):
        store = [{"id": "b", "created": created_b}, {"id": "a", "created": created_a}]
        assert selected(store, Pool("p", 100, 2)) == ["a", "b"]


@pytest.mark.parametrize(
    "garbage", [("zzz", "aaa"), ("aaa", "zzz"), (10**400, math.inf), ("x", [1])]
)
def test_unparseable_created_values_tie_then_id_decides(garbage):
    """Values with no instant rank after every instant, all equal, so the id
    decides among them."""
    store = [
        {"id": "b", "created": garbage[0]},
        {"id": "a", "created": garbage[1]},
        {"id": "z", "created": "2026-06-01"},  # the future: 0 days, the same score
    ]
    assert selected(store, Pool("p", 100, 3)) == ["z", "a", "b"]


def test_created_missing_first_then_oldest_then_unparseable():
    """Equal scores (all past the recency floor or missing-with-floor
    priority) go missing, oldest, newest, unparseable."""
    store = [
        {"id": "bad", "base_priority": 3, "created": "garbage"},
        {"id": "new", "base_priority": 10, "created": "2025-06-01"},
        {"id": "missing", "base_priority": 3},
        {"id": "old", "base_priority": 10, "created": "2024-01-01"},
    ]
    got = selected(store, Pool("p", 100, 4))
    assert got == ["missing", "old", "new", "bad"]


# --- Tags of another type -----------------------------------------------------


@pytest.mark.parametrize("tags", [0, 1.5, {}, {"a": 1}, False, 0.0])
def test_tags_of_another_type_raise_type_error(tags):
    """tags is a list, tuple, set, frozenset or a bare str; "another type (a
    dict, a number, even a falsy 0) raises TypeError" (README schema table)."""
    store = [{"id": "t", "tags": tags}]
    with pytest.raises(TypeError):
        retrieve(store, Pool("p", 100, 1), {"tags": ["a"]}, now=NOW)
    with pytest.raises(TypeError):
        default_scorer(store[0], {"tags": ["a"]}, now=NOW)


@pytest.mark.parametrize("kind", [list, tuple, set, frozenset])
def test_tags_in_any_listed_container_count_the_same(kind):
    entry = {"base_priority": 4, "tags": kind(["a", "b"])}
    assert default_scorer(entry, {"tags": ["a"]}, now=NOW) == 5.0
    store = [{"id": "x", "base_priority": 4.5}, dict(entry, id="e")]
    assert selected(store, Pool("p", 100, 1), {"tags": ["a"]}) == ["e"]


def test_non_str_tag_items_compare_as_their_str():
    """1 in the entry's tags matches "1" in the context's."""
    entry = {"base_priority": 4, "tags": [1]}
    assert default_scorer(entry, {"tags": ["1"]}, now=NOW) == 6.0


# --- now, context ---------------------------------------------------------


def test_custom_scorer_receives_the_given_aware_now():
    seen = []

    def scorer(entry, context, *, now):
        seen.append(now)
        return 1.0

    retrieve([{"id": "a"}], Pool("p", 10, 1), scorer=scorer, now=NOW)
    assert seen == [NOW] and seen[0].tzinfo is not None


def test_custom_scorer_receives_an_aware_now_when_now_is_omitted():
    """Not None: the current UTC time, as the default scorer would use."""
    seen = []

    def scorer(entry, context, *, now):
        seen.append(now)
        return 1.0

    before = datetime.now(timezone.utc)
    retrieve([{"id": "a"}], Pool("p", 10, 1), scorer=scorer)
    after = datetime.now(timezone.utc)
    (now,) = seen
    assert isinstance(now, datetime) and now.utcoffset() == timedelta(0)
    assert before <= now <= after


def test_custom_scorer_receives_a_naive_now_as_utc():
    seen = []

    def scorer(entry, context, *, now):
        seen.append(now)
        return 1.0

    naive = datetime(2026, 1, 1, 12)
    retrieve([{"id": "a"}], Pool("p", 10, 1), scorer=scorer, now=naive)
    assert seen == [naive.replace(tzinfo=timezone.utc)]
    assert seen[0].tzinfo is not None


def custom(entry, context, *, now):
    return 1.0


@pytest.mark.parametrize("context", [["message"], "deploy", 3, ("tags",)])
@pytest.mark.parametrize("scorer", [None, custom], ids=["default", "custom"])
@pytest.mark.parametrize("store", [[], [{"id": "a"}]], ids=["empty", "one"])
def test_context_of_the_wrong_type_raises_type_error_naming_context(
    context, scorer, store
):
    hooks = {} if scorer is None else {"scorer": scorer}
    with pytest.raises(TypeError, match="context"):
        retrieve(store, Pool("p", 10, 1), context, now=NOW, **hooks)
    with pytest.raises(TypeError, match="context"):
        retrieve_pools(store, [Pool("p", 10, 1)], context, now=NOW, **hooks)


# --- Large stores -------------------------------------------------------------

PHRASES = [
    "deploy the billing cluster",
    "billing cluster report",
    "deploy notes",
    "unrelated entry",
    "cluster",
]


def large_store(size, seed=14):
    """Many exact-score ties: few priorities, instants and phrases."""
    rng = random.Random(seed)
    created = [None, "2025-12-31", "2025-12-02T06:30:00Z", "2025-06-01", "bad"]
    store = []
    for number in range(size):
        entry = {
            "id": rng.choice([f"e{number}", f"e{number % 50}", None, number % 7]),
            "type": rng.choice(["task", "fact"]),
            "base_priority": rng.choice([1, 2, 2.5, 4, 5, 6]),
            "created": rng.choice(created),
            "content": rng.choice(PHRASES),
            "token_count": rng.randint(1, 20),
        }
        if rng.random() < 0.3:
            entry["tags"] = rng.choice([["a"], ["a", "b"], "b"])
        store.append(entry)
    return store


@pytest.mark.parametrize(
    "context",
    [None, {"message": "deploy billing cluster", "tags": ["a"]}],
    ids=["no-message", "message"],
)
def test_store_above_16384_ranked_entries_selects_what_the_oracle_selects(context):
    """20,000 ranked entries (past the size where the library may sort only a
    sample's best part first), pools reaching thousands deep, many exact ties."""
    store = large_store(20_000)
    pools = [
        Pool("deep", 40_000, 5_000, ("task",)),
        Pool("rest", 30_000, 3_000),
        Pool("tail", 500, 50),
    ]
    before = snapshot(store)
    result = retrieve_pools(store, pools, context, now=NOW)
    check_invariants(store, pools, context, result, before=before, now=NOW)
    expected = oracle_retrieve_pools(store, pools, context, now=NOW)
    assert ids(result) == ids(expected)


def test_entry_far_below_the_head_wins_by_its_message_in_a_large_store():
    """Of 20,000 entries, 19,999 score 6 and one scores 5 x 2.5 = 12.5 by its
    message match: it is found however the ranking orders its work."""
    store = [
        {"id": f"e{i:05d}", "base_priority": 6, "content": "unrelated"}
        for i in range(20_000)
    ]
    store[12_345] = {"id": "match", "base_priority": 5, "content": "deploy cluster"}
    context = {"message": "deploy cluster"}
    got = retrieve(store, Pool("p", 100, 2), context, now=NOW)
    assert [entry["id"] for entry in got] == ["match", "e00000"]


# --- The relevance floor (Pool.min_score) -----------------------------------


def floor_pool(name, tokens, entries, types=None, **floor):
    return Pool(name, tokens, entries, types, **floor)


def test_entry_below_the_floor_is_left_for_a_later_pool():
    store = [{"id": "low", "base_priority": 2}, {"id": "high", "base_priority": 6}]
    pools = [floor_pool("strict", 100, 5, min_score=5), floor_pool("any", 100, 5)]
    before = snapshot(store)
    result = retrieve_pools(store, pools, now=NOW)
    check_invariants(store, pools, None, result, before=before, now=NOW)
    assert ids(result) == ids(oracle_retrieve_pools(store, pools, now=NOW))
    assert {k: [e["id"] for e in v] for k, v in result.items()} == {
        "strict": ["high"],
        "any": ["low"],
    }


def test_score_equal_to_the_floor_is_taken():
    store = [{"id": "at", "base_priority": 4, "tags": ["x"]}]  # 4 x 1.5 = 6.0
    pool = floor_pool("p", 100, 5, min_score=6.0)
    assert selected(store, pool, {"tags": ["x"]}) == ["at"]
    assert selected(store, floor_pool("p", 100, 5, min_score=6.000001)) == []


def test_always_scope_ignores_the_floor():
    store = [{"id": "c", "scope": "always", "base_priority": -5}]
    assert selected(store, floor_pool("p", 0, 0, min_score=math.inf)) == ["c"]


@pytest.mark.parametrize(
    ("floor", "expected"),
    [(-math.inf, ["fin", "neg"]), (0, ["fin"]), (math.inf, [])],
)
def test_infinite_floors(floor, expected):
    """-inf takes everything, -inf scores too; inf takes only inf scores."""

    def scorer(entry, context, *, now):
        return entry["s"]

    store = [{"id": "neg", "s": -math.inf}, {"id": "fin", "s": 1.0}]
    pool = floor_pool("p", 100, 5, min_score=floor)
    assert selected(store, pool, scorer=scorer) == expected


def test_floor_none_changes_nothing():
    store = [{"id": "a", "base_priority": -3}, {"id": "b", "base_priority": 0}]
    assert selected(store, floor_pool("p", 100, 5, min_score=None)) == ["b", "a"]


def test_oracle_score_matches_the_readme_example():
    """The README's default_scorer doctest value, from the oracle."""
    entry = {"base_priority": 4, "created": "2025-12-02"}
    assert oracle_score(entry, None, now=NOW) == 3.0666666666666664
