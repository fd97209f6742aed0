"""entry_features: the one fast-path decision, against the README's rule.

The decision is written here again from the docstring (a usual kind per
field), so that a changed rule shows as a disagreement; when it takes the
fast path, base_score of the features is default_scorer's score without a
message, float for float.
"""

import math
from datetime import date, datetime, timezone
from decimal import Decimal

import pytest
from conftest import NOW
from hypothesis import example, given
from hypothesis import strategies as st

import poolsplit

NOW_SECONDS = NOW.timestamp()

priorities = st.one_of(
    st.none(),
    st.integers(-(10**400), 10**400),
    st.floats(allow_nan=True),
    st.booleans(),
    st.decimals(allow_nan=False, allow_infinity=False, places=2),
    st.just("5"),
)
tag_lists = st.one_of(
    st.none(),
    st.lists(st.sampled_from(["db", "api", "ops"]), max_size=3),
    st.lists(st.one_of(st.just("db"), st.integers(0, 3)), min_size=1, max_size=3),
    st.tuples(st.just("db")),
    st.just("db"),
)
projects = st.one_of(st.none(), st.sampled_from(["api", "web"]), st.integers(0, 2))
createds = st.one_of(
    st.none(),
    st.sampled_from(
        ["2025-12-01", "2025-06-01T10:00:00Z", "not a date", "2025-13-45", ""]
    ),
    st.just(datetime(2025, 12, 1, tzinfo=timezone.utc)),
    st.just(date(2025, 11, 1)),
    st.floats(0, 2e9),
    st.integers(0, 2 * 10**9),
    st.sampled_from([math.inf, math.nan, 10**400, True]),
)


def fits_a_float(number):
    try:
        float(number)
    except OverflowError:
        return False
    return True


def usual(entry):
    """The README's fast-path rule, written from its words."""
    raw = entry.get("base_priority")
    priority_ok = (
        raw is None
        or (type(raw) is int and fits_a_float(raw))
        or (type(raw) is float and not math.isnan(raw))
    )
    tags = entry.get("tags")
    tags_ok = tags is None or (type(tags) is list and all(type(t) is str for t in tags))
    project_ok = entry.get("project") is None or type(entry.get("project")) is str
    created_ok = type(entry.get("created")) in (type(None), str, int, float)
    return priority_ok and tags_ok and project_ok and created_ok


@given(
    st.fixed_dictionaries(
        {},
        optional={
            "base_priority": priorities,
            "tags": tag_lists,
            "project": projects,
            "created": createds,
        },
    ),
    st.sampled_from([None, "api", "web"]),
    st.sampled_from([frozenset(), frozenset({"db"}), frozenset({"db", "ops"})]),
)
@example({"base_priority": 10**400}, None, frozenset())
@example({"base_priority": 2**1024 - 1}, None, frozenset())
@example({"base_priority": math.nan}, None, frozenset())
@example({"base_priority": True}, None, frozenset())
@example({"tags": ["db", 1]}, None, frozenset({"db"}))
@example({"created": date(2025, 11, 1)}, None, frozenset())
def test_property_fast_path_is_the_rule_and_scores_as_the_scorer(entry, project, tags):
    found = poolsplit.entry_features(entry)
    assert (found is not None) == usual(entry)
    if found is None:
        return
    priority, created, entry_tags, entry_project = found
    assert type(priority) is float
    assert created == poolsplit.parse_created(entry.get("created"))
    assert entry_tags is entry.get("tags")  # read, not copied
    assert entry_project is entry.get("project")
    context = {"tags": sorted(tags), "project": project}
    expected = poolsplit.default_scorer(entry, context, now=NOW)
    score = poolsplit.base_score(*found, NOW_SECONDS, tags, project)
    assert score == expected


def test_an_unusual_value_is_left_to_the_general_path():
    assert poolsplit.entry_features({"base_priority": Decimal("2.5")}) is None
    assert poolsplit.entry_features({"project": 7}) is None
    assert poolsplit.entry_features({"tags": ("db",)}) is None
    assert poolsplit.entry_features({}) == (5.0, None, None, None)
    assert poolsplit.entry_features({"created": "2025-13-45"}) == (
        5.0,
        None,
        None,
        None,
    )


class _ComparisonRaises:
    """A context project whose comparison with an entry's raises TypeError."""

    def __eq__(self, other):
        raise TypeError("cannot compare")

    __hash__ = object.__hash__


def test_a_usual_entry_whose_score_fails_is_named_by_the_general_reader():
    """entry_features takes the entry (its project is a str), base_score then
    raises comparing it with the context's: the error names the entry."""
    store = [{"id": "ok"}, {"id": "x", "content": "c", "project": "web"}]
    assert poolsplit.entry_features(store[1]) is not None
    expected = r"^entries\[1\] \(id='x'\): cannot compare$"
    for call in (poolsplit.retrieve_pools, poolsplit.explain):
        with pytest.raises(poolsplit.EntryTypeError, match=expected):
            call(
                store,
                [poolsplit.Pool("p", 10, 5)],
                {"project": _ComparisonRaises()},
                now=NOW,
            )
