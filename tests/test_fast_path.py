"""The score's factors with a message in the context: the bounded ranking
(README, Performance) scores every entry first without the message term,
then finishes the score of those that can still rank; each factor and each
error must be the same either way."""

import math
from datetime import datetime, timezone

import pytest

from poolsplit import Pool, clear_caches, retrieve

NOW = datetime(2026, 1, 1, tzinfo=timezone.utc)


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
    """A project entry at priority 4 beats an
    untagged 5 in its own project (6.0 > 5.0) and loses elsewhere (2.0)."""
    store = [
        {"id": "general", "base_priority": 5},
        {"id": "mine", "base_priority": 4, "project": "x"},
    ]
    context = {**NO_MATCH, "project": context_project}
    got = retrieve(store, Pool("p", 100, 1), context, now=NOW)
    assert ids(got) == (["mine"] if context_project == "x" else ["general"])
