"""An object listed twice is one entry, on the bounded path (issue 35).

With a message (a bounded walk) and the default token counter, every
repeat is found by the scan and left out, whatever its scope or content;
the fill never sees it. These tests pin that path to the README's oracle
and to the rule "each object at most once", including the two cases
review41 found when an experiment (lazy41, measured and reverted: see
benchmarks/README.md) ranked unscoped repeats and passed over them at take
time: an unreadable content's error named the repeat's position, and a
content's own ``str()`` ran once per repeat.
"""

import warnings

import pytest
from conftest import NOW
from hypothesis import given
from hypothesis import strategies as st
from test_properties import assert_agrees, pool_lists, stores

from poolsplit import Pool, explain, retrieve, retrieve_pools

MESSAGE = {"message": "deploy the cluster alpha"}
IGNORE_WARNINGS = pytest.mark.filterwarnings("ignore::poolsplit.PoolsplitWarning")


def ids(chosen):
    return [entry["id"] for entry in chosen]


@IGNORE_WARNINGS
@given(
    stores(),
    pool_lists(),
    st.sampled_from(["deploy cluster", "alpha beta gamma", "Cafe\u0301 DEPLOY"]),
    st.lists(st.integers(0, 24), min_size=1, max_size=10),
)
def test_repeats_under_a_message_agree_with_the_oracle(store, pools, message, picks):
    """Every call here takes the bounded path: the result equals the
    oracle's, and no object is in it twice."""
    repeated = store + [store[i % len(store)] for i in picks] if store else []
    result = assert_agrees(repeated[::-1], pools, {"message": message})
    if result is not None:
        chosen = [id(entry) for entries in result.values() for entry in entries]
        assert len(chosen) == len(set(chosen))


def test_an_object_listed_twice_under_a_message_lands_in_one_pool_once():
    a = {"id": "a", "content": "deploy the cluster"}
    b = {"id": "b", "content": "other words"}
    pools = [Pool("one", 100, 1), Pool("two", 100, 5)]
    assert retrieve_pools([a, a, b, a], pools, MESSAGE, now=NOW) == {
        "one": [a],
        "two": [b],
    }


def test_a_repeat_under_a_message_spends_no_room():
    """[a, a, b] with a costing 4 and b 6 in a 10-token pool: a and b; had
    the repeat been taken too, b would not have fit."""
    a = {"id": "a", "content": "deploy cluster", "token_count": 4}
    b = {"id": "b", "content": "alpha", "token_count": 6}
    assert ids(retrieve([a, a, b], Pool("p", 10, 5), MESSAGE, now=NOW)) == ["a", "b"]


def test_an_always_object_listed_twice_under_a_message_loads_once():
    a = {"id": "a", "scope": "always", "content": "deploy"}
    b = {"id": "b", "content": "cluster"}
    assert ids(retrieve([a, b, a], Pool("p", 100, 5), MESSAGE, now=NOW)) == ["a", "b"]


def test_a_near_miss_scope_listed_twice_under_a_message_is_counted_once():
    twice = {"id": "dup", "scope": "Always", "content": "deploy"}
    store = [{"id": "one", "scope": "Always"}, twice, twice]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = retrieve(store, Pool("p", 100, 5), MESSAGE, now=NOW)
    assert ids(got) == ["dup", "one"]
    assert [str(w.message)[:33] for w in caught] == [
        "2 active entries have a scope tha"
    ]


def test_a_custom_counter_under_a_message_still_costs_a_repeat_once():
    """With a caller's counter, one whose answer changes cannot let the
    repeat in where its first position did not fit."""
    counted = []

    def counter(text):
        counted.append(text)
        return 100 if len(counted) == 1 else 1

    entry = {"id": "x", "content": "deploy cluster"}
    pool = Pool("p", 10, 5)
    assert retrieve([entry, entry], pool, MESSAGE, token_counter=counter) == []
    assert counted == ["deploy cluster"]


def test_explain_under_a_message_still_names_the_repeat():
    a = {"id": "a", "content": "deploy"}
    report = explain([a, a], [Pool("p", 100, 5)], MESSAGE, now=NOW)
    assert [(d.index, d.outcome, d.reason) for d in report.decisions] == [
        (0, "selected", None),
        (1, "duplicate", "entries[0]"),
    ]


class Unprintable:
    """A content whose ``str()`` fails, counting its calls."""

    calls = 0

    def __str__(self):
        Unprintable.calls += 1
        raise ValueError("no str")


def test_an_unreadable_repeat_is_named_at_its_first_position():
    """review41: when repeats were ranked, pool A put k ahead in the tied run,
    which moved the repeat of i ahead of i itself; pool B then read the
    repeat first and the error named entries[2]."""
    i = {"id": "c", "type": "y", "content": Unprintable()}
    m = {"id": "b", "type": "x", "content": "m text"}
    k = {"id": "a", "type": "x", "content": "k text"}
    pools = [Pool("A", 100, 1, types=["x"]), Pool("B", 100, 5, types=["y"])]
    with pytest.raises(ValueError) as caught:
        retrieve_pools([i, m, i, k], pools, {"message": "hello world"}, now=NOW)
    assert (caught.value.index, str(caught.value)) == (0, "entries[0] (id='c'): no str")


def test_a_repeated_content_that_is_not_a_str_is_read_as_often_as_once():
    """A repeat is left out in the scan, so a content's own ``str()`` runs no
    more often than for the object listed once."""

    class Text:
        calls = 0

        def __str__(self):
            Text.calls += 1
            return "deploy the cluster"

    counts = []
    for times in (1, 2, 3):
        Text.calls = 0
        entry = {"id": "e", "content": Text()}
        got = retrieve(
            [entry] * times, Pool("p", 100, 5), {"message": "deploy"}, now=NOW
        )
        assert got == [entry]
        counts.append(Text.calls)
    assert counts[0] == counts[1] == counts[2] > 0
