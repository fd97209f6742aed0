"""Boundaries an independent mutation sample found unpinned (issue 26), each
through the public API: the pool that is exactly full, a tie on a missing id,
a datetime without an offset, a warning naming exactly three entries, and the
article of a class name in an error."""

import warnings
from datetime import datetime, timedelta, tzinfo

import pytest
from conftest import NOW

from poolsplit import Pool, PoolsplitWarning, parse_created, retrieve, retrieve_pools


class Unreadable:
    def __str__(self):
        raise ValueError("cannot become text")


def ids(entries):
    return [entry.get("id") for entry in entries]


def test_a_pool_exactly_full_by_tokens_reads_no_further_entry():
    """a costs the pool's 10 tokens exactly: the pool is full and the walk
    stops there, so b (whose content cannot become text) is never costed."""
    store = [
        {"id": "a", "base_priority": 9, "token_count": 10},
        {"id": "b", "base_priority": 1, "content": Unreadable()},
    ]
    assert ids(retrieve(store, Pool("p", 10, 5), now=NOW)) == ["a"]
    # One token more of room, and the walk must cost b: the call fails.
    with pytest.raises(ValueError, match=r"^entries\[1\] \(id='b'\): cannot"):
        retrieve(store, Pool("p", 11, 5), now=NOW)


@pytest.mark.parametrize("context", [None, {"message": "deploy"}])
def test_a_missing_id_sorts_before_any_str_id_in_a_tie(context):
    """README: a missing id ties as "", which sorts before "A"; input order
    (A first) would say otherwise."""
    store = [{"id": "A", "content": "deploy"}, {"content": "deploy"}]
    assert ids(retrieve(store, Pool("p", 100, 1), context, now=NOW)) == [None]


class NoOffset(tzinfo):
    """A tzinfo whose utcoffset() is None: the datetime counts as naive."""

    def utcoffset(self, dt):
        return None

    def dst(self, dt):
        return None

    def tzname(self, dt):
        return "none"


def test_a_datetime_whose_utcoffset_is_none_is_read_as_utc():
    moment = datetime(2025, 12, 2, tzinfo=NoOffset())
    assert parse_created(moment) == parse_created(datetime(2025, 12, 2)) == 1764633600.0
    # Retrieval reads it the same way: 30 days old decays 5 to 3.83, below an
    # undated 3.9 and above 3.8.
    store = [
        {"id": "dated", "created": moment},
        {"id": "high", "base_priority": 3.9},
        {"id": "low", "base_priority": 3.8},
    ]
    assert ids(retrieve(store, Pool("p", 100, 3), now=NOW)) == ["high", "dated", "low"]


def test_a_now_whose_utcoffset_is_none_is_read_as_utc():
    """A scorer is handed the call's now as an aware UTC datetime."""
    seen = []

    def scorer(entry, context, *, now):
        seen.append(now)
        return 1.0

    odd = datetime(2026, 1, 1, tzinfo=NoOffset())
    retrieve([{"id": "a"}], Pool("p", 100, 1), scorer=scorer, now=odd)
    assert seen == [NOW] and seen[0].utcoffset() == timedelta(0)


def test_exactly_three_near_miss_scopes_are_all_named_without_a_count():
    store = [{"id": i, "scope": "Always"} for i in range(3)]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        retrieve_pools(store, [Pool("p", 100, 5)], now=NOW)
    [message] = [str(w.message) for w in caught]
    assert "entries[2] (id=2) with scope 'Always';" in message
    assert "more" not in message


def test_exactly_three_unadmitted_always_entries_are_all_named_without_a_count():
    store = [{"id": i, "type": "x", "scope": "always"} for i in range(3)]
    with pytest.warns(PoolsplitWarning) as caught:
        retrieve_pools(store, [Pool("p", 100, 5, types=["y"])], now=NOW)
    [message] = [str(w.message) for w in caught]
    assert "entries[2] (id=2) of type 'x';" in message
    assert "more" not in message


class XBig(int):
    """An int subclass whose name starts with a consonant: "a"."""


class Inf(int):
    """A name that starts with a vowel: "an"."""


@pytest.mark.parametrize(("kind", "article"), [(XBig, "a"), (Inf, "an")])
def test_a_floor_past_the_float_range_names_its_class_with_its_article(kind, article):
    with pytest.raises(ValueError) as caught:
        Pool("p", 1, 1, min_score=kind(10**400))
    assert str(caught.value) == (
        f"min_score must be within the float range, got {article} "
        f"{kind.__name__} past it; use inf for a floor no score reaches"
    )
