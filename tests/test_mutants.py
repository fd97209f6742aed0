"""Tests that kill mutants of the core that the rest of the suite lets survive.

Each pins one behaviour the README states; scripts/mutation.sh runs mutmut,
and scripts/mutation-equivalents.md lists the mutants that cannot be killed.
"""

import math

import pytest
from conftest import NOW

from poolsplit import (
    Pool,
    PoolsplitWarning,
    clear_caches,
    explain,
    retrieve,
    retrieve_pools,
)

# Message words that match no content: retrieval with a message ranks by the
# base score first (its fast path), which is where these mutants live.
NO_MATCH = {"message": "zebra quartz"}


def ids(entries):
    return [entry["id"] for entry in entries]


# --- created: the ISO forms the general parser reads -------------------------


def test_date_with_z_is_utc_midnight():
    """ "2027-01-01Z" is 00:00:00 UTC, so it ties ahead of 00:00:30 (both future)."""
    store = [
        {"id": "b", "created": "2027-01-01T00:00:30Z"},
        {"id": "a", "created": "2027-01-01Z"},
    ]
    assert ids(retrieve(store, Pool("p", 100, 2), now=NOW)) == ["a", "b"]


def test_fraction_digits_past_six_are_dropped():
    """A seven-digit fraction is read to the microsecond, not as unparseable."""
    store = [
        {"id": "b", "created": "2027-01-01T00:00:01Z"},
        {"id": "a", "created": "2027-01-01T00:00:00.1234567Z"},
    ]
    assert ids(retrieve(store, Pool("p", 100, 2), now=NOW)) == ["a", "b"]


def test_offset_of_hours_only_has_no_minutes():
    """ "-01" is one hour behind UTC: 23:00-01 is midnight UTC, before 00:00:30Z."""
    store = [
        {"id": "b", "created": "2027-01-01T00:00:30Z"},
        {"id": "a", "created": "2026-12-31T23:00:00-01"},
    ]
    assert ids(retrieve(store, Pool("p", 100, 2), now=NOW)) == ["a", "b"]


# --- the score with a message: the fast path must equal the plain rule ------


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


# --- errors and warnings name what they should --------------------------------


def test_scorer_returning_a_non_number_names_its_type():
    """The TypeError for a scorer's str result names str and the value."""
    with pytest.raises(TypeError, match=r"got str 'high' for entries\[0\]"):
        retrieve([{"id": "a"}], Pool("p", 100, 1), scorer=lambda e, c, now: "high")


def unadmitted_message(count):
    store = [{"id": str(n), "type": "x", "scope": "always"} for n in range(count)]
    with pytest.warns(PoolsplitWarning) as caught:
        retrieve_pools(store, [Pool("p", 100, 1, types=["y"])], now=NOW)
    assert len(caught) == 1
    return str(caught[0].message)


@pytest.mark.parametrize(
    ("count", "shown"),
    [
        (1, "entries[0] (id='0') of type 'x'"),
        (
            3,
            "entries[0] (id='0') of type 'x', entries[1] (id='1') of type 'x', "
            "entries[2] (id='2') of type 'x'",
        ),
        (
            4,
            "entries[0] (id='0') of type 'x', entries[1] (id='1') of type 'x', "
            "entries[2] (id='2') of type 'x' and 1 more",
        ),
    ],
)
def test_unadmitted_warning_shows_three_then_counts_the_rest(count, shown):
    """The warning names the first three entries and counts the others."""
    assert unadmitted_message(count) == (
        f"{count} active always-scope entries are in no pool, so they were not "
        f"loaded: {shown}; add their types to a pool, or add a pool with types=None"
    )


# --- a store large enough to sort in two parts --------------------------------


def test_explain_of_a_large_store_has_one_step_per_entry_and_pool():
    """Above 16,384 ranked entries each entry is still decided once per pool."""
    store = [{"id": n, "base_priority": n % 1000} for n in range(16400)]
    steps = explain(store, [Pool("p", 100, 1)], now=NOW).steps
    assert len(steps) == len(store)
    assert len({step.index for step in steps}) == len(store)


# --- The five left open by the sampled run of 4fc37c5 ------------------------


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


def test_custom_scorer_scores_an_object_listed_twice_once():
    """_select 10: a custom scorer sees each object once, even listed twice."""
    seen = []

    def scorer(entry, context, *, now):
        seen.append(entry["id"])
        return 1.0

    entry = {"id": "a"}
    got = retrieve_pools(
        [entry, {"id": "b"}, entry], [Pool("p", 100, 5)], scorer=scorer, now=NOW
    )
    assert sorted(seen) == ["a", "b"]
    assert ids(got["p"]) == ["a", "b"]


class Count(int):
    pass


def test_int_subclass_token_count_of_one_is_the_cost():
    """_token_count 15: a token_count of 1 (an int subclass) costs 1, not the
    counter's 100 for its content."""
    entry = {"id": "a", "content": "x" * 400, "token_count": Count(1)}
    assert ids(retrieve([entry], Pool("p", 1, 1), now=NOW)) == ["a"]


def test_large_store_of_negative_scores_agrees_with_the_oracle():
    """walk 30: above 16,384 ranked entries, a negative base score times the
    message factor falls below the sample's cutoff (-1 x 2.5 = -2.5), so the
    entries kept aside (-2, no match) must be sorted in before the heap's
    best goes out: they rank first."""
    from oracle import oracle_retrieve

    store = [
        {"id": f"top{i:05d}", "base_priority": -1, "content": "deploy cluster"}
        for i in range(2_500)
    ] + [
        {"id": f"low{i:05d}", "base_priority": -2, "content": "other words"}
        for i in range(14_500)
    ]
    pool = Pool("p", 10**6, 10)
    context = {"message": "deploy cluster"}
    got = retrieve(store, pool, context, now=NOW)
    assert ids(got) == ids(oracle_retrieve(store, pool, context, now=NOW))
    assert ids(got)[0] == "low00000"
