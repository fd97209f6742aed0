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

from hypothesis import example, given
from hypothesis import strategies as st

import poolsplit

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
