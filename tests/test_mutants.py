"""Tests that kill mutants of the core that the rest of the suite lets survive.

Each pins one behaviour the README states; scripts/mutation.sh runs mutmut,
and scripts/mutation-equivalents.md lists the mutants that cannot be killed.
"""

import math
from datetime import datetime, timedelta, timezone

import pytest
from conftest import NOW

from poolsplit import (
    Pool,
    PoolsplitWarning,
    clear_caches,
    default_scorer,
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


# --- the six gaps an independent mutation sample found (issue 21) ---------------

PLUS12 = timezone(timedelta(hours=12))


def test_an_aware_now_that_is_not_utc_is_its_instant():
    """A timezone-aware now is the instant it names, whatever its offset:
    12:00 at +12:00 is midnight UTC, so an entry created 12 hours before that
    is half a day old, not a whole day."""
    local = datetime(2026, 1, 1, 12, tzinfo=PLUS12)
    utc = datetime(2026, 1, 1, tzinfo=timezone.utc)
    entry = {"id": "e", "created": "2025-12-31T12:00:00Z", "content": "x"}
    half_day = 5 * (1 - 0.7 * 0.5 / 90)
    assert default_scorer(entry, None, now=local) == half_day
    assert default_scorer(entry, None, now=utc) == half_day
    for pool in (Pool("p", 10, 1, min_score=half_day), Pool("q", 10, 1)):
        assert ids(retrieve([entry], pool, now=local)) == ["e"]
        assert ids(retrieve([entry], pool, NO_MATCH, now=local)) == ["e"]
    seen = []

    def scorer(entry, context, *, now):
        seen.append(now)
        return 1.0

    retrieve([entry], Pool("p", 10, 1), scorer=scorer, now=local)
    assert seen == [local] and seen[0].utcoffset() == timedelta(hours=12)


def test_an_aware_now_orders_future_entries_by_its_instant():
    """Created 6 hours after midnight UTC is in the future of 12:00 at +12:00
    (midnight UTC) and counts 0 days; 6 hours before it decays."""
    local = datetime(2026, 1, 1, 12, tzinfo=PLUS12)
    store = [
        {"id": "past", "created": "2025-12-31T18:00:00Z", "base_priority": 5},
        {"id": "future", "created": "2026-01-01T06:00:00Z", "base_priority": 5},
    ]
    assert ids(retrieve(store, Pool("p", 10, 1), now=local)) == ["future"]


def test_a_custom_scorer_still_sees_the_entries_after_a_repeated_object():
    """A repeated object is passed over, and the scan goes on to the entries
    after it: [a, a, b] with a custom scorer takes b too."""
    seen = []

    def scorer(entry, context, *, now):
        seen.append(entry["id"])
        return {"a": 2.0, "b": 1.0, "c": 3.0}[entry["id"]]

    a = {"id": "a"}
    store = [a, a, {"id": "b"}, {"id": "c"}]
    got = retrieve_pools(store, [Pool("p", 100, 5)], scorer=scorer, now=NOW)
    assert ids(got["p"]) == ["c", "a", "b"]
    assert sorted(seen) == ["a", "b", "c"]
    assert ids(retrieve(store, Pool("p", 100, 5), scorer=scorer, now=NOW)) == [
        "c",
        "a",
        "b",
    ]


def test_a_one_ulp_tie_below_the_sort_cut_is_broken_by_id():
    """Above 16,384 ranked entries the engine sorts only those at or above a
    sample's cutoff, here x (the 157th of the 1,250 sampled bases). y, one
    ulp below x, is kept aside; times the message factor 2.5 both round to
    the same score, so y (id "a") must be sorted in and tie with x (id "b")
    before the heap's best goes out: it wins the tie by id."""
    from oracle import oracle_retrieve

    x = float.fromhex("0x1.c000000000002p+2")  # 7.000...; x * 2.5 == y * 2.5
    y = math.nextafter(x, 0)
    assert y < x and x * 2.5 == y * 2.5
    store = []
    for i in range(20_000):
        if i == 16 * 156:
            entry = {"id": "b", "base_priority": x, "content": "deploy cluster"}
        elif i == 1:
            entry = {"id": "a", "base_priority": y, "content": "deploy cluster"}
        elif i % 16 == 0 and i < 16 * 156:
            entry = {"id": f"h{i}", "base_priority": 10, "content": "other"}
        else:
            entry = {"id": f"l{i}", "base_priority": 1, "content": "other"}
        store.append(entry)
    pool = Pool("p", 10**6, 1)
    context = {"message": "deploy cluster"}
    got = retrieve(store, pool, context, now=NOW)
    assert ids(got) == ["a"]
    assert ids(got) == ids(oracle_retrieve(store, pool, context, now=NOW))


def test_explain_names_the_always_entry_whose_cost_cannot_be_read():
    """explain's pool summaries cost each always-scope entry loaded; one
    whose content cannot become text fails, named by its own position."""

    class Unreadable:
        def __str__(self):
            raise ValueError("cannot become text")

    store = [
        {"id": "c", "scope": "always", "content": "fine"},
        {"id": "t", "content": "x"},
        {"id": "u", "scope": "always", "content": Unreadable()},
    ]
    with pytest.raises(ValueError, match=r"^entries\[2\] \(id='u'\): cannot become"):
        explain(store, [Pool("p", 10, 1)], now=NOW)


def test_a_pool_full_before_the_entries_kept_aside_never_reads_them():
    """Above 16,384 ranked entries those below the sample's cutoff (here 10)
    are kept aside until a walk needs them. The pool takes A (20), skips the
    entries at the cutoff (too costly for its room) and is full: the entries
    kept aside (1) are never read, so an unreadable content among them does
    not fail the call (README, the lazy read)."""

    class Unreadable:
        def __str__(self):
            raise ValueError("cannot become text")

    store = [{"id": "A", "base_priority": 20, "content": "a"}]
    for i in range(1, 17_000):
        if i % 16 == 0 and i < 16 * 300:
            store.append({"id": f"c{i}", "base_priority": 10, "token_count": 10**6})
        else:
            store.append({"id": f"r{i}", "base_priority": 1, "content": Unreadable()})
    assert ids(retrieve(store, Pool("p", 100, 1), now=NOW)) == ["A"]
    with pytest.raises(ValueError, match=r"^entries\[1\] \(id='r1'\): cannot"):
        retrieve(store, Pool("p", 100, 2), now=NOW)
