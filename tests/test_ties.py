"""Ties: stores where most first scores are equal, against the README's oracle.

Real stores tie: no ``base_priority``, no ``created``, or every entry past the
recency horizon. The engine puts runs of equal first scores in tie order once
per call and merges message-boosted entries in through a heap; these tests
force large runs and boosts that land on another run's score.
"""

from __future__ import annotations

import math
import random
from datetime import datetime, timedelta, timezone
from unittest import mock

import pytest
from conftest import NOW
from hypothesis import example, given
from hypothesis import strategies as st
from oracle import OracleError, oracle_retrieve_pools

import poolsplit
from poolsplit import Pool, explain, retrieve_pools

WORDS = ("alpha", "bravo", "delta", "omega")
OLD = NOW - timedelta(days=200)  # at the recency floor
# created values that tie: missing, one instant in three forms, an old one,
# a value with no instant (ties with other such values)
CREATED = [
    None,
    "2025-12-01T00:00:00+00:00",
    "2025-12-01T01:00:00+01:00",
    datetime(2025, 12, 1, tzinfo=timezone.utc),
    OLD.isoformat(),
    "not a date",
]
# ids that tie or compare across kinds: missing, str, int, equal float, other
IDS = [None, "a", "b", "b", 1, 1.0, 2, (3,)]
PRIORITIES = [None, 1, 2, 2.0, 3, 5]


@st.composite
def tied_entries(draw):
    entry = {
        "type": draw(st.sampled_from(["task", "fact", "note"])),
        "content": " ".join(draw(st.lists(st.sampled_from(WORDS), max_size=3))),
    }
    for key, values in (
        ("id", IDS),
        ("created", CREATED),
        ("base_priority", PRIORITIES),
        ("project", [None, "p", "q"]),
    ):
        value = draw(st.sampled_from([*values, "MISSING"]))
        if value != "MISSING":
            entry[key] = value
    if draw(st.integers(0, 3)) == 0:
        entry["tags"] = draw(st.lists(st.sampled_from(["x", "y"]), max_size=2))
    if draw(st.integers(0, 3)) == 0:
        entry["token_count"] = draw(st.integers(1, 30))
    return entry


@st.composite
def tied_stores(draw, max_size=120):
    """A few templates repeated, so most entries share a first score."""
    templates = draw(st.lists(tied_entries(), min_size=1, max_size=4))
    store = []
    for _ in range(draw(st.integers(0, max_size))):
        entry = dict(draw(st.sampled_from(templates)))
        entry["id"] = draw(st.sampled_from(IDS))  # ids vary within a template
        entry["content"] = " ".join(draw(st.lists(st.sampled_from(WORDS), max_size=3)))
        store.append(entry)
    return store


@st.composite
def tied_pools(draw):
    return [
        Pool(
            f"p{number}",
            draw(st.integers(0, 80)),
            draw(st.integers(0, 6)),
            types=draw(st.sampled_from([None, ("task",), ("fact", "note")])),
        )
        for number in range(draw(st.integers(1, 4)))
    ]


messages = st.lists(st.sampled_from(WORDS), max_size=3).map(" ".join)
tied_contexts = st.builds(
    dict,
    message=messages,
    tags=st.sampled_from([[], ["x"]]),
    project=st.sampled_from([None, "p"]),
)


def by_identity(store, result):
    return {
        name: [next(i for i, x in enumerate(store) if x is e) for e in chosen]
        for name, chosen in result.items()
    }


def assert_agrees(store, pools, context):
    """retrieve_pools and explain pick what the oracle picks, in its order."""
    try:
        expected = oracle_retrieve_pools(store, pools, context, now=NOW)
    except OracleError:  # pragma: no cover - the strategies make no bad entry
        raise AssertionError("the tie strategies must not build a failing store")
    got = retrieve_pools(store, pools, context, now=NOW)
    assert by_identity(store, got) == by_identity(store, expected)
    selected = explain(store, pools, context, now=NOW).selected()
    assert by_identity(store, selected) == by_identity(store, expected)


@given(tied_stores(), tied_pools(), tied_contexts)
@example(  # a boost that lands on another run's score: 2 x 1.5 = 3
    store=[
        {"id": "b", "type": "task", "content": "", "base_priority": 3},
        {"id": "a", "type": "task", "content": "alpha", "base_priority": 2},
    ],
    pools=[Pool("p0", 80, 1)],
    context={"message": "alpha bravo delta"},
)
def test_tied_stores_agree_with_oracle(store, pools, context):
    assert_agrees(store, pools, context)


@given(tied_stores(max_size=60), tied_pools(), st.one_of(st.none(), tied_contexts))
def test_input_order_does_not_matter_in_a_run_when_keys_are_distinct(
    store, pools, context
):
    """With distinct ids (same created), reversing the input keeps the picks."""
    store = [dict(e, id=f"e{i:03d}") for i, e in enumerate(store)]
    forward = retrieve_pools(store, pools, context, now=NOW)
    backward = retrieve_pools(store[::-1], pools, context, now=NOW)
    assert {k: [e["id"] for e in v] for k, v in forward.items()} == {
        k: [e["id"] for e in v] for k, v in backward.items()
    }


def flat_store(n):
    """n entries with one first score: no priority, created, tags or project."""
    return [
        {"id": f"e{(i * 7919) % n:05d}", "type": "task", "content": f"w{i} deploy"}
        for i in range(n)
    ]


class Counting:
    """A wrapper that counts its calls, around a rule function."""

    def __init__(self, function):
        self.function = function
        self.calls = 0

    def __call__(self, *args):
        self.calls += 1
        return self.function(*args)


def count_tie_keys(store, pools, context):
    counter = Counting(poolsplit._id_key)
    with mock.patch.object(poolsplit, "_id_key", counter):
        result = retrieve_pools(store, pools, context, now=NOW)
    return counter.calls, result


def test_a_run_gets_its_tie_keys_once_per_call_whatever_the_pools():
    """Five pools over one run of 2,000 equal scores: each entry's tie key is
    computed once for the call, not once per pool."""
    store = flat_store(2_000)
    pools = [Pool(f"p{i}", 100, 2) for i in range(5)]
    calls, result = count_tie_keys(store, pools, {"message": "nothing shared"})
    assert calls == len(store)
    ids = [e["id"] for chosen in result.values() for e in chosen]
    assert ids == [f"e{i:05d}" for i in range(10)]  # the id decides the tie


def test_distinct_scores_compute_no_tie_key():
    """Where no two first scores are equal, no entry can tie: no tie key."""
    store = [
        {"id": f"e{i}", "base_priority": 1 + i / 1000, "content": "x"}
        for i in range(500)
    ]
    calls, result = count_tie_keys(store, [Pool("p", 100, 3)], None)
    assert calls == 0
    assert [e["id"] for e in result["p"]] == ["e499", "e498", "e497"]


def test_a_run_below_the_fill_point_gets_no_tie_key():
    """A run scored only to bound the entries above it is never put in tie
    order: the pool fills from the distinct scores above it."""
    store = [{"id": f"top{i}", "base_priority": 9 + i / 10} for i in range(3)]
    store += [{"id": f"r{i}", "base_priority": 1} for i in range(300)]
    calls, result = count_tie_keys(store, [Pool("p", 100, 3)], {"message": "x y z"})
    assert calls == 0
    assert [e["id"] for e in result["p"]] == ["top2", "top1", "top0"]


def test_boosted_entries_of_a_run_go_first_then_the_run_in_tie_order():
    """In a run of equal first scores, entries the message boosts come first
    (by their exact score), then the others by created, id and position."""
    store = flat_store(50)
    store[30] = dict(store[30], content="alpha bravo")  # share 1: x2.5
    store[40] = dict(store[40], content="alpha")  # share 1/2: x1.75
    got = retrieve_pools(
        store, [Pool("p", 1000, 4)], {"message": "alpha bravo"}, now=NOW
    )
    assert [e["id"] for e in got["p"]] == [
        store[30]["id"],
        store[40]["id"],
        "e00000",
        "e00001",
    ]


def test_infinite_first_scores_tie_in_order():
    """inf and -inf are scores like others: equal ones tie, ids decide."""
    store = [
        {"id": "c", "base_priority": math.inf},
        {"id": "a", "base_priority": math.inf},
        {"id": "b", "base_priority": -math.inf},
    ]
    got = retrieve_pools(store, [Pool("p", 100, 3)], {"message": "x"}, now=NOW)
    assert [e["id"] for e in got["p"]] == ["a", "c", "b"]


@given(
    size=st.integers(0, 300),
    taken=st.integers(0, 200),
    message=st.sampled_from(["", "deploy", "w7 w70 deploy"]),
    seed=st.integers(0, 3),
)
def test_a_walk_deep_into_a_run_keeps_the_tie_order(size, taken, message, seed):
    """A run is put in tie order by a heap popped as walks reach it, and the
    rest sorted at once past 64 positions: shallow, deep and exhausting walks
    (two pools, the second over what the first left) agree with the oracle."""
    store = flat_store(size)
    store = store[seed:] + store[:seed]  # the input order is not the tie order
    pools = [Pool("first", 10**6, taken, types=["task"]), Pool("rest", 10**6, 70)]
    assert_agrees(store, pools, {"message": message})


def test_a_deep_walk_returns_the_run_in_id_order():
    """150 of 200 tied entries: the first 64 come off the heap, the rest from
    one sort, all in id order (the tie key)."""
    got = retrieve_pools(flat_store(200), [Pool("p", 10**6, 150)], None, now=NOW)
    assert [e["id"] for e in got["p"]] == [f"e{i:05d}" for i in range(150)]


@pytest.mark.parametrize("values", [3, 1000])  # runs across the cut, or few ties
@pytest.mark.parametrize("taken", [5, 400, 2000])  # before, past, far past the cut
@pytest.mark.parametrize("message", ["", "alpha bravo"])
def test_a_walk_past_the_first_selection_agrees_with_the_oracle(values, taken, message):
    """From 2,048 ranked entries the order starts as a selection, about the
    best eighth (every score at least a cut read off a sample), and the rest
    is sorted when a walk reads past it; a second pool exhausts the store."""
    rng = random.Random(values + taken)
    store = [
        {
            "id": f"e{rng.randrange(10**6):06d}",
            "type": rng.choice(["task", "fact"]),
            "base_priority": rng.randrange(values),
            "content": " ".join(rng.sample(WORDS, rng.randrange(3))),
        }
        for _ in range(2500)
    ]
    pools = [Pool("first", 10**6, taken, types=["task"]), Pool("rest", 10**6, 3000)]
    assert_agrees(store, pools, {"message": message})


def test_equal_scores_past_the_selection_size_are_one_run():
    """2,100 entries of one score: the cut is that score, nothing is left to
    sort later, and the walk reads the whole run in id order."""
    store = [{"id": f"e{i:05d}", "base_priority": 1} for i in reversed(range(2100))]
    got = retrieve_pools(store, [Pool("p", 10**6, 2100)], None, now=NOW)
    assert [e["id"] for e in got["p"]] == [f"e{i:05d}" for i in range(2100)]
