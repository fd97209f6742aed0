"""The lexical ranking at its boundaries (issue 35's mutation run).

Each test pins a rule of memory/README.md's "Ranking" where a plausible
bug (a ``<=`` for a ``<``, a type check too loose, a duplicate dropped)
changes a result the property tests seldom reach. Expected values are the
README's numbers (g = exp(30 x r) at or above 0.2 x best, 0 below; the
time factor exp(30 x 0.2) over the half-open window and its 7 days of
slack), never the library's constants.
"""

from __future__ import annotations

import math
import warnings
from datetime import datetime, timedelta, timezone

import poolsplit
import pytest
from poolsplit import Pool

from poolsplit_memory import _subset
from poolsplit_memory._ranking import (
    MESSAGE_CHARS,
    TIME_FACTOR,
    Statistics,
    floored,
    read_part,
    read_times,
    recall_by_scores,
    relevance_factor,
    time_slack,
    time_windows,
)

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=timezone.utc)


def _recall(stats, entries, pools, context, relevance=None):
    return recall_by_scores(
        stats,
        entries,
        pools,
        context,
        token_counter=poolsplit.default_token_counter,
        now=NOW,
        relevance=relevance,
    )


def _core(stats, entries, pools, context):
    return poolsplit.retrieve_pools(
        entries, pools, context, scorer=stats.scorer(context), now=NOW
    )


def test_an_entry_exactly_at_the_floor_is_loaded():
    """g is 0 only for r *below* 0.2 x best: r = 0.1 with best 0.5 (0.2 x 0.5
    is 0.1 exactly in binary) gets exp(30 x 0.1); a hair below gets 0."""
    assert 0.2 * 0.5 == 0.1
    assert relevance_factor(0.1, 0.5) == math.exp(30 * 0.1)
    assert relevance_factor(math.nextafter(0.1, 0.0), 0.5) == 0.0
    assert relevance_factor(0.5, 0.5) == math.exp(30 * 0.5)


def test_a_pool_with_a_floor_of_zero_gets_the_floor_above_zero():
    """README: every pool gets a floor just above 0 "unless it has a higher
    one"; a min_score of 0 is not higher, so an entry sharing no term of a
    message that matches another is not loaded from such a pool."""
    entries = [
        {"id": "match", "content": "billing report"},
        *({"id": str(i), "content": f"lunch {i}"} for i in range(5)),
    ]
    stats = Statistics(entries)
    context = {"message": "billing"}
    relevance = stats.relevance("billing")
    pools = floored([Pool("all", 10**6, 4, min_score=0.0)], relevance)
    assert 0.0 < pools[0].min_score <= 5e-324
    got = _recall(stats, entries, pools, context, relevance)
    assert [e["id"] for e in got["all"]] == ["match"]
    # a higher floor stays as it is; a vague message floors nothing
    assert floored([Pool("all", 10, 4, min_score=0.5)], relevance)[0].min_score == 0.5
    vague = stats.relevance("zebra")
    assert floored([Pool("all", 10, 4)], vague)[0].min_score is None


def test_removing_one_of_two_duplicates_keeps_the_other_counted():
    """Entries with equal content share one record: removing one of them
    leaves the other's terms, postings and score as a fresh count has them;
    removing both forgets the content."""
    first = {"id": "a", "content": "billing report"}
    second = {"id": "b", "content": "billing report"}
    other = {"id": "c", "content": "lunch menu"}
    stats = Statistics([first, second, other])
    stats.remove(first)
    fresh = Statistics([second, other])
    context = {"message": "billing"}
    assert (stats.count, stats.total_length) == (2, 4)
    assert stats.frequency("bill") == 1 and stats.terms_of("billing report") == {
        "bill",
        "report",
    }
    mine, theirs = stats.relevance("billing"), fresh.relevance("billing")
    assert mine.best == theirs.best > 0.0
    assert mine.factor(second) == theirs.factor(second) > 1.0
    scorer, expected = stats.scorer(context), fresh.scorer(context)
    assert scorer(second, context, now=NOW) == expected(second, context, now=NOW)
    stats.remove(second)
    gone = stats.relevance("billing")
    assert gone.best == 0.0 and stats.frequency("bill") == 0
    assert gone.factor(second) == 1.0  # a vague message now: the base alone
    with pytest.raises(ValueError, match="entry 'b': its content is not counted"):
        stats.remove(second)


def test_a_boolean_priority_is_the_cores_error():
    """base_priority True is not a number to the core (EntryTypeError); the
    one-loop recall must not read it as 1.0."""
    entries = [
        {"id": "bool", "content": "billing", "base_priority": True},
        *({"id": str(i), "content": f"note {i}"} for i in range(20)),
    ]
    stats = Statistics(entries)
    context = {"message": "billing"}
    pools = [Pool("all", 10**6, 1)]
    with pytest.raises(poolsplit.EntryTypeError) as core:
        _core(stats, entries, pools, context)
    with pytest.raises(poolsplit.EntryTypeError) as fast:
        _recall(stats, entries, pools, context)
    assert str(fast.value) == str(core.value)


def test_a_bare_string_tag_is_one_tag():
    """The core reads ``"tags": "ab"`` as the one tag "ab": a context tagged
    "a" does not boost it (x 1.5 would put it first here)."""
    entries = [
        {"id": "plain", "content": "note", "base_priority": 5.0},
        {"id": "str", "content": "note", "base_priority": 4.5, "tags": "ab"},
        *({"id": str(i), "content": "note", "base_priority": 1.0} for i in range(20)),
    ]
    stats = Statistics(entries)
    context = {"message": "", "tags": ["a"]}
    pools = [Pool("all", 10**6, 1)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = _core(stats, entries, pools, context)
        got = _recall(stats, entries, pools, context)
    assert [e["id"] for e in expected["all"]] == ["plain"]
    assert got == expected


def test_the_time_window_is_half_open_with_its_slack():
    """ "last week" on Monday 1 June is [25 May, 1 June) and 7 days of
    slack: an entry created at 25 May or a second before 8 June is boosted
    by exp(30 x 0.2); one created at 8 June itself, or before 25 May, is
    not."""
    may = datetime(2026, 5, 25, tzinfo=timezone.utc)
    end = datetime(2026, 6, 8, tzinfo=timezone.utc)
    created = {
        "first": may,
        "last": end - timedelta(seconds=1),
        "end": end,
        "before": may - timedelta(seconds=1),
    }
    entries = [
        {"id": name, "content": "dinner with Ana", "created": when.isoformat()}
        for name, when in created.items()
    ]
    relevance = Statistics(entries).relevance("dinner with Ana last week", NOW)
    base = relevance_factor(relevance.share(entries[0]), relevance.best)
    boost = math.exp(30 * 0.2)
    assert [relevance.factor(e) for e in entries] == [
        base * boost,
        base * boost,
        base,
        base,
    ]


def test_a_tag_boost_is_shared_tags_over_the_entrys_own_tags():
    """The core's tag factor is 1 + 0.5 x shared / the entry's tag count:
    tagged a, b, c against a context tagged a, priority 5 scores
    5 x (1 + 0.5 / 3) = 5.83, below an untagged 6 (over the context's one
    tag it would be 7.5, above)."""
    entries = [
        {"id": "tagged", "content": "note", "tags": ["a", "b", "c"]},
        {"id": "six", "content": "note", "base_priority": 6.0},
        *({"id": str(i), "content": "note", "base_priority": 1.0} for i in range(20)),
    ]
    stats = Statistics(entries)
    context = {"message": "", "tags": ["a"]}
    scorer = stats.scorer(context)
    assert math.isclose(scorer(entries[0], context, now=NOW), 5.0 * (1 + 0.5 / 3))
    pools = [Pool("all", 10**6, 1)]
    got = _recall(stats, entries, pools, context)
    assert [e["id"] for e in got["all"]] == ["six"]
    assert got == _core(stats, entries, pools, context)


def test_a_shared_tag_lifts_an_entry_in_the_one_loop_recall():
    """The one-loop recall's fast scores take the context's tags: tagged a
    against a context tagged a, priority 5 scores 5 x 1.5 = 7.5, above an
    untagged 6 (without the context's tags it would score 5, below)."""
    entries = [
        {"id": "tagged", "content": "note", "tags": ["a"]},
        {"id": "six", "content": "note", "base_priority": 6.0},
        *({"id": str(i), "content": "note", "base_priority": 1.0} for i in range(20)),
    ]
    stats = Statistics(entries)
    context = {"message": "", "tags": ["a"]}
    pools = [Pool("all", 10**6, 1)]
    got = _recall(stats, entries, pools, context)
    assert [e["id"] for e in got["all"]] == ["tagged"]
    assert got == _core(stats, entries, pools, context)


def test_always_scope_entries_do_not_fill_a_pools_count():
    """A pool's max_entries counts ranked entries only (always-scope ones
    load besides): with two always-scope notes and one high note among the
    best scores, the notes pool is not full, and takes two more notes
    from far down the ranking."""
    entries = [
        *(
            {"id": f"always{i}", "content": "rule", "type": "note", "scope": "always"}
            for i in range(2)
        ),
        {"id": "top", "content": "note", "type": "note", "base_priority": 10.0},
        *(
            {"id": f"fact{i}", "content": "fact", "type": "fact", "base_priority": 9.0}
            for i in range(60)
        ),
        *(
            {"id": f"low{i}", "content": "note", "type": "note", "base_priority": 1.0}
            for i in range(5)
        ),
    ]
    stats = Statistics(entries)
    context = {"message": ""}
    pools = [Pool("notes", 10**6, 3, types=["note"])]
    got = _recall(stats, entries, pools, context)
    ids = [e["id"] for e in got["notes"]]
    assert sorted(ids) == ["always0", "always1", "low0", "low1", "top"]
    assert got == _core(stats, entries, pools, context)


def test_a_pool_is_not_proven_by_an_entry_tied_with_its_last(monkeypatch):
    """The subset suffices for a full pool only if every entry left out
    scores *below* its last one: "facts" takes f1 and is full by tokens,
    "all" (one entry) gets f2 from the subset, scoring 5 as e1, which is
    left out and comes first among the tied by id (README: ties by created,
    then id): "all" must take e1."""
    monkeypatch.setattr(_subset, "_MAX_SHARE", 1)  # the subset on 3 entries
    entries = [
        {"id": "f1", "type": "fact", "content": "x", "base_priority": 9.0,
         "token_count": 5},
        {"id": "f2", "type": "fact", "content": "x", "base_priority": 5.0},
        {"id": "e1", "type": "note", "content": "x", "base_priority": 5.0},
    ]  # fmt: skip
    stats = Statistics(entries)
    context = {"message": ""}
    pools = [Pool("facts", 5, 2, types=["fact"]), Pool("all", 10**6, 1)]
    got = _recall(stats, entries, pools, context)
    assert {k: [e["id"] for e in v] for k, v in got.items()} == {
        "facts": ["f1"],
        "all": ["e1"],
    }
    assert got == _core(stats, entries, pools, context)


def test_an_entry_left_out_at_the_floor_still_loads(monkeypatch):
    """min_score is inclusive (README: a score at least the floor): a pool
    that is not full (c does not fit its 3 tokens) holds by its floor only
    if the best entry left out is below it; b, left out at 5.0 exactly,
    loads."""
    monkeypatch.setattr(_subset, "_MAX_SHARE", 1)
    entries = [
        {"id": "a", "content": "x", "base_priority": 9.0, "token_count": 2},
        {"id": "c", "content": "x", "base_priority": 7.0, "token_count": 5},
        {"id": "b", "content": "x", "base_priority": 5.0, "token_count": 1},
    ]
    stats = Statistics(entries)
    context = {"message": ""}
    pools = [Pool("p", 3, 2, min_score=5.0)]
    got = _recall(stats, entries, pools, context)
    assert [e["id"] for e in got["p"]] == ["a", "b"]
    assert got == _core(stats, entries, pools, context)


# --- issue 48: each expression its own window, slack by unit, a read cap -------


def dinners(**created):
    return [
        {"id": name, "content": "dinner with Ana", "created": when}
        for name, when in created.items()
    ]


def boosted(message, entries, now=NOW):
    """The ids whose factor the time in ``message`` multiplies."""
    relevance = Statistics(entries).relevance(message, now)
    base = relevance_factor(relevance.share(entries[0]), relevance.best)
    factors = {e["id"]: relevance.factor(e) for e in entries}
    assert set(factors.values()) <= {base, base * TIME_FACTOR}  # once at most
    return sorted(i for i, f in factors.items() if f == base * TIME_FACTOR)


def test_yesterday_does_not_boost_today():
    """ "yesterday" on Monday 1 June is Sunday 31 May and nothing after it:
    the 7 days of slack once added to every window boosted today's entries
    as much as yesterday's."""
    entries = dinners(
        sunday="2026-05-31T10:00:00+00:00",
        today="2026-06-01T09:00:00+00:00",
        saturday="2026-05-30T23:59:59+00:00",
    )
    assert boosted("dinner with Ana yesterday", entries) == ["sunday"]


@pytest.mark.parametrize(
    "phrase", ["on Friday", "2 days ago", "this morning", "the day before yesterday"]
)
def test_a_day_sized_window_has_no_slack(phrase):
    relevance = Statistics(dinners(a="2026-05-01")).relevance(f"dinner {phrase}", NOW)
    ((start, end),) = relevance.windows
    assert end - start <= 86400


def test_a_week_sized_window_keeps_its_slack():
    """ "last week" (25-31 May) still takes entries written in the week
    after it, up to TIME_SLACK."""
    entries = dinners(
        week="2026-05-27T12:00:00+00:00",
        after="2026-06-01T09:00:00+00:00",
        before="2026-05-24T12:00:00+00:00",
    )
    assert boosted("dinner with Ana last week", entries) == ["after", "week"]
    assert time_slack(
        datetime(2026, 5, 25, tzinfo=timezone.utc),
        datetime(2026, 6, 1, tzinfo=timezone.utc),
    ) == timedelta(days=7)


@pytest.mark.parametrize(
    ("phrase", "boosted_ids"),
    [
        ("last month", ["may"]),  # May
        ("in 2026", ["may", "today"]),  # the year under way
        ("last spring", ["may"]),  # March to May 2026
    ],
)
def test_a_month_season_or_year_has_no_slack(phrase, boosted_ids):
    """After a month (or longer) no slack: 1 June is not in "last month"."""
    entries = dinners(
        may="2026-05-31T23:00:00+00:00",
        today="2026-06-01T09:00:00+00:00",
    )
    assert boosted(f"dinner with Ana {phrase}", entries) == boosted_ids


def test_each_expression_is_its_own_window():
    """ "March 2020 and last summer" is two windows, not the hull from
    March 2020 to September 2025: an entry of 2022 is in neither."""
    entries = dinners(
        march="2020-03-15T12:00:00+00:00",
        between="2022-06-01T12:00:00+00:00",
        summer="2025-07-01T12:00:00+00:00",
    )
    message = "dinner with Ana in March 2020 and last summer"
    assert boosted(message, entries) == ["march", "summer"]
    assert len(Statistics(entries).relevance(message, NOW).windows) == 2


def test_an_entry_in_two_windows_is_boosted_once():
    """ "in 2025 and in July 2025": an entry of July 2025 is in both; its
    factor is multiplied by TIME_FACTOR once, not twice."""
    entries = dinners(july="2025-07-10T12:00:00+00:00", may="2024-05-10")
    message = "dinner with Ana in 2025 and in July 2025"
    assert boosted(message, entries) == ["july"]


def test_only_the_first_message_chars_are_read():
    """Terms and times past MESSAGE_CHARS characters are not read (a
    message of 1 MiB was read whole: seconds of CPU under the lock)."""
    entries = dinners(sunday="2026-05-31T10:00:00+00:00", old="2026-01-01")
    filler = "x " * (MESSAGE_CHARS // 2)
    late = Statistics(entries).relevance(filler + "dinner yesterday", NOW)
    assert late.windows == () and late.weights == {}
    early = Statistics(entries).relevance(filler[:-20] + "dinner yesterday", NOW)
    assert early.windows and "dinner" in early.weights
    assert len(read_part("y" * 10**6)) == MESSAGE_CHARS


def test_times_given_are_used_and_now_is_not_read():
    entries = dinners(sunday="2026-05-31T10:00:00+00:00")
    times = read_times("dinner yesterday", NOW)
    windows = time_windows("yesterday", NOW)
    assert times.windows == windows and times.rest == {"dinner"}
    given = Statistics(entries).relevance("dinner yesterday", None, times=times)
    assert given.windows == windows
    seconds = poolsplit.parse_created(entries[0]["created"])
    assert given.factor_at(None, seconds) == TIME_FACTOR  # in the window, no term


def floored_ids(entries, message, most):
    """The ids one pool of ``most`` entries loads, floored as the store's."""
    stats = Statistics(entries)
    relevance = stats.relevance(message, NOW)
    got = recall_by_scores(
        stats,
        entries,
        floored([Pool("all", 10**6, most)], relevance),
        {"message": message},
        token_counter=poolsplit.default_token_counter,
        now=NOW,
        relevance=relevance,
    )
    return [e["id"] for e in got["all"]]


def test_a_message_naming_only_a_time_keeps_its_window_past_the_floor():
    """Issue 48: "What happened yesterday?" floored out both entries written
    yesterday (they share no term) and loaded a 40-day-old one holding the
    word "yesterday". When no term of the message but its time's is held
    by a pool's entries, the window orders that pool, with no floor."""
    entries = [
        {"id": "old", "content": "the boiler made a noise yesterday",
         "created": "2026-04-22T09:00:00+00:00"},
        {"id": "y1", "content": "paired on the cutover runbook",
         "created": "2026-05-31T15:00:00+00:00"},
        {"id": "y2", "content": "went bouldering after work",
         "created": "2026-05-31T19:00:00+00:00"},
        {"id": "today", "content": "standup moved to Monday",
         "created": "2026-06-01T09:00:00+00:00"},
    ]  # fmt: skip
    relevance = Statistics(entries).relevance("What happened yesterday?", NOW)
    assert relevance.windows and relevance.weights == {}  # the time alone
    assert floored_ids(entries, "What happened yesterday?", 2) == ["y2", "y1"]


def test_a_message_with_another_matching_term_keeps_its_terms():
    """The rule is for a time alone: "the boiler yesterday" still ranks by
    "boiler" (held here), with the window's boost on top."""
    entries = [
        {"id": "old", "content": "the boiler made a noise",
         "created": "2026-04-22T09:00:00+00:00"},
        {"id": "y1", "content": "paired on the cutover runbook",
         "created": "2026-05-31T15:00:00+00:00"},
    ]  # fmt: skip
    relevance = Statistics(entries).relevance("the boiler yesterday", NOW)
    assert relevance.windows and "boiler" in relevance.weights


def test_an_entry_written_in_the_window_is_never_below_the_floor():
    """Review of issue 48: "What went on yesterday?" with an old entry
    holding "went" floored out both of yesterday's entries (r = 0 below
    0.2 x best, and the window's boost multiplied 0). An entry created in
    a window the message names is never below the floor."""
    entries = [
        {"id": "y-lunch", "content": "Lunch with Bob at the new ramen place",
         "created": "2026-05-31T12:30:00+00:00"},
        {"id": "y-bug", "content": "Fixed the login bug in the billing service",
         "created": "2026-05-31T16:00:00+00:00"},
        {"id": "old", "content": "Something went wrong with the incident review",
         "created": "2026-04-12T09:00:00+00:00"},
        {"id": "older", "content": "We discussed the outage",
         "created": "2026-04-02T09:00:00+00:00"},
    ]  # fmt: skip
    relevance = Statistics(entries).relevance("What went on yesterday?", NOW)
    assert "went" in relevance.weights  # not a time alone: "went" is held
    got = floored_ids(entries, "What went on yesterday?", 3)
    assert got == ["old", "y-bug", "y-lunch"]
    assert relevance.factor(entries[0]) == TIME_FACTOR  # r = 0, in the window
    assert relevance.factor(entries[3]) == 0.0  # r = 0, outside: floored


def test_the_read_cap_does_not_cut_a_word_in_two():
    """Review of issue 48: a message whose 4,096th character fell inside a
    word read its start as a word of its own ("yest")."""
    message = "x" * (MESSAGE_CHARS - 5) + " yesterday at noon"
    read = read_part(message)
    assert read == "x" * (MESSAGE_CHARS - 5) + " "
    assert not any(term.startswith("yest") for term in read_times(message, NOW).rest)
    assert read_part("a b" * MESSAGE_CHARS)[-1] in " ab"  # a cut between words


def test_a_time_zone_that_moves_now_out_of_range_is_named():
    """Review of issue 48: ``tz`` shifting an extreme ``now`` past year 9999
    raised a bare OverflowError; it is InvalidInput naming ``tz``."""
    from poolsplit_memory import InvalidInput, open_store

    with open_store(":memory:") as store:
        store.remember("lunch with Bob", type="episode", now=NOW)
        late = datetime(9999, 12, 31, 23, tzinfo=timezone.utc)
        with pytest.raises(InvalidInput, match="tz") as raised:
            store.recall("hello", now=late, tz="Pacific/Kiritimati")
        assert raised.value.field == "tz"
