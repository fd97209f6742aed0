"""The one fast path proven equal to the rule it speeds up.

``_fast_base_score`` computes ``_base_score`` for the usual field types
without calls (README, Performance). It must give the same float, bit for
bit, or the same error, for every entry: this is the property test the
style guide asks of a fast copy of a rule. Private names on purpose: no
public path can compare the two directly.
"""

import math
from datetime import date, datetime, timedelta, timezone
from fractions import Fraction

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

import poolsplit
from poolsplit import Pool, clear_caches, retrieve

NOW = datetime(2026, 1, 1, tzinfo=timezone.utc)

priorities = st.one_of(
    st.none(),
    st.integers(-20, 20),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([10**400, -(10**400), 2**53 + 1, True, "high", Fraction(7, 3)]),
)
created_values = st.one_of(
    st.none(),
    st.datetimes(min_value=datetime(2024, 1, 1), max_value=datetime(2026, 6, 1)).map(
        lambda moment: moment.isoformat(timespec="seconds")
    ),
    st.dates(min_value=date(2024, 1, 1), max_value=date(2026, 6, 1)).map(str),
    st.sampled_from(
        [
            "2025-12-31T23:59:59Z",
            "2025-10-02T00:00:00+05:00",
            "2025-13-01",
            "soon",
            "",
            "2026-01-01T00:00:00.123456789Z",
        ]
    ),
    st.datetimes(min_value=datetime(2024, 1, 1), max_value=datetime(2026, 6, 1)),
    st.integers(1_600_000_000, 1_800_000_000),
    st.floats(allow_nan=True),
    st.sampled_from([10**400, True, [2025]]),
)
tag_values = st.one_of(
    st.none(),
    st.lists(st.sampled_from(["a", "b", "c", "d"]), max_size=4),
    st.lists(st.one_of(st.sampled_from(["a", "b"]), st.integers(0, 2)), max_size=3),
    st.sampled_from(["a", ("a", "b"), {"b"}, frozenset(), 0, {}, [], 1.5]),
)
projects = st.one_of(st.none(), st.sampled_from(["x", "y", 3, ""]))
# The usual types, which the fast path computes itself, and then anything.
usual_entries = st.fixed_dictionaries(
    {},
    optional={
        "base_priority": st.one_of(st.integers(-3, 12), st.floats(-1e6, 1e6)),
        "created": created_values.filter(lambda value: isinstance(value, str)),
        "tags": st.lists(st.sampled_from(["a", "b", "c", "d"]), max_size=4),
        "project": projects,
    },
)
messy_entries = st.fixed_dictionaries(
    {},
    optional={
        "base_priority": priorities,
        "created": created_values,
        "tags": tag_values,
        "project": projects,
        "content": st.text(max_size=5),
    },
)
entries = st.one_of(usual_entries, messy_entries)
contexts = st.fixed_dictionaries(
    {},
    optional={
        "tags": st.lists(st.sampled_from(["a", "b", "c", "1"]), max_size=3),
        "project": projects,
        "message": st.sampled_from(["", "deploy the cluster"]),
    },
)


def outcome(compute):
    try:
        value = compute()
    except (TypeError, ValueError) as exc:
        return type(exc), str(exc)
    return float, value.hex() if not math.isnan(value) else "nan"


@given(entries, contexts, st.integers(0, 400))
@example({"base_priority": 4, "project": "x"}, {"project": "x"}, 0)
@example({"tags": "a"}, {"tags": ["a"]}, 0)
@example({"tags": 0}, {}, 0)
@example({"base_priority": 10**400, "created": "2025-01-01"}, {}, 0)
@example({"tags": ["a", 1]}, {"tags": ["1"]}, 0)
@example({"tags": ["a", "b"], "created": "2025-12-01"}, {"tags": ["a"]}, 0)
@example({"base_priority": 3.5, "tags": ["a", "a"]}, {"tags": ["a", "c"]}, 0)
def test_fast_base_score_equals_base_score(entry, context, days):
    now = NOW + timedelta(days=days)
    query = poolsplit._query(context, now)
    fast = poolsplit._fast_base_score(query)
    assert outcome(lambda: fast(entry)) == outcome(
        lambda: poolsplit._base_score(entry, query)
    )


def test_fast_base_score_reads_a_cached_and_an_uncached_timestamp_alike():
    """The fast path looks the parsed instant up in the cache first."""
    poolsplit.clear_caches()
    query = poolsplit._query({}, NOW)
    fast = poolsplit._fast_base_score(query)
    entry = {"created": "2025-11-01T08:00:00Z"}
    cold = fast(entry)  # not cached yet
    assert fast(entry) == cold == poolsplit._base_score(entry, query)


# --- the score with a message: the fast path equals the plain rule -------------


NO_MATCH = {"message": "zebra quartz"}


def ids(entries):
    return [entry["id"] for entry in entries]


def test_nan_priority_raises_with_a_message():
    """A NaN base_priority raises ValueError with a message in the context too."""
    store = [{"id": "n", "base_priority": math.nan}]
    with pytest.raises(ValueError, match="NaN"):
        retrieve(store, Pool("p", 100, 1), NO_MATCH, now=NOW)


def test_bool_priority_raises_with_a_message():
    """A bool base_priority raises TypeError with a message in the context too."""
    store = [{"id": "t", "base_priority": True}]
    with pytest.raises(TypeError, match="base_priority"):
        retrieve(store, Pool("p", 100, 1), NO_MATCH, now=NOW)


def test_bare_string_tag_counts_as_one_tag_with_a_message():
    """tags="deploy" is one tag with a message too: 4 x 1.5 = 6 beats 5.5."""
    store = [
        {"id": "b", "base_priority": 5.5},
        {"id": "a", "base_priority": 4, "tags": "deploy"},
    ]
    context = {**NO_MATCH, "tags": ["deploy"]}
    assert ids(retrieve(store, Pool("p", 100, 1), context, now=NOW)) == ["a"]


def test_recency_applies_to_a_created_string_never_seen_before():
    """An uncached created string still decays: 5 x 0.3 = 1.5 loses to 2."""
    clear_caches()
    store = [
        {"id": "old", "base_priority": 5, "created": "2025-01-02"},
        {"id": "new", "base_priority": 2},
    ]
    assert ids(retrieve(store, Pool("p", 100, 1), NO_MATCH, now=NOW)) == ["new"]


def test_future_created_counts_as_zero_days_with_a_message():
    """A future created neither boosts nor decays: 5.0 ranks between 5.01 and 4.99."""
    store = [
        {"id": "future", "base_priority": 5, "created": "2027-01-01"},
        {"id": "above", "base_priority": 5.01},
        {"id": "below", "base_priority": 4.99},
    ]
    got = retrieve(store, Pool("p", 100, 3), NO_MATCH, now=NOW)
    assert ids(got) == ["above", "future", "below"]


@pytest.mark.parametrize("context_project", ["x", "y"])
def test_project_factor_applies_with_a_message(context_project):
    """_fast_base_score 90, 95: a project entry at priority 4 beats an
    untagged 5 in its own project (6.0 > 5.0) and loses elsewhere (2.0)."""
    store = [
        {"id": "general", "base_priority": 5},
        {"id": "mine", "base_priority": 4, "project": "x"},
    ]
    context = {**NO_MATCH, "project": context_project}
    got = retrieve(store, Pool("p", 100, 1), context, now=NOW)
    assert ids(got) == (["mine"] if context_project == "x" else ["general"])
