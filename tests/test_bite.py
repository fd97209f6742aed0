"""Boundaries an independent mutation sample found untested (issue 52).

Each test goes through the public API and pins one behaviour the README
states, so that a mutant changing it fails here: the lazy read with a
caller's counter (``token_counter=len``), an ``int`` subclass whose value is
0 as ``token_count``, the ``used`` field of an always-scope step in
``explain``, and the exact near-always warning with 2 and with 4 entries.
"""

from __future__ import annotations

import warnings
from datetime import datetime, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st
from oracle import OracleError, oracle_retrieve_pools

from poolsplit import (
    EntryError,
    Pool,
    PoolsplitWarning,
    entry_cost,
    explain,
    retrieve_pools,
)

NOW = datetime(2026, 1, 1, tzinfo=timezone.utc)


class Count(int):
    """An int subclass, as a numpy or ORM integer might arrive."""


# ---------------------------------------------------------------------------
# token_count: an int subclass counts as its value, and 0 is not a count
# ---------------------------------------------------------------------------


def test_an_int_subclass_of_zero_falls_back_to_the_counter() -> None:
    entry = {"id": "a", "content": "one two three four five six"}
    counted = entry_cost(entry, len)
    assert counted == len(entry["content"])
    # The README: token_count is used when a positive int; 0 falls back.
    assert entry_cost({**entry, "token_count": Count(0)}, len) == counted
    assert entry_cost({**entry, "token_count": 0}, len) == counted
    assert entry_cost({**entry, "token_count": Count(7)}, len) == 7
    assert type(entry_cost({**entry, "token_count": Count(7)}, len)) is int


def test_an_int_subclass_of_zero_costs_the_counter_in_retrieval() -> None:
    # Costed by the counter (27 characters) the entry does not fit 26
    # tokens; a zero read as a cost of 0 (or 1) would let it in.
    content = "one two three four five six"
    entry = {"id": "a", "content": content, "token_count": Count(0)}
    got = retrieve_pools(
        [entry], [Pool("p", len(content) - 1, 5)], token_counter=len, now=NOW
    )
    assert got == {"p": []}
    fits = retrieve_pools(
        [entry], [Pool("p", len(content), 5)], token_counter=len, now=NOW
    )
    assert fits == {"p": [entry]}


# ---------------------------------------------------------------------------
# The lazy read, with a caller's counter (not the default's cheap path)
# ---------------------------------------------------------------------------

words = st.sampled_from(["billing", "deploy", "tests", "coffee", "git", "x"])
entries = st.lists(
    st.fixed_dictionaries(
        {
            "content": st.lists(words, min_size=1, max_size=6).map(" ".join),
            "type": st.sampled_from(["fact", "task", "skill"]),
            "base_priority": st.integers(0, 5),
        },
        optional={
            "scope": st.just("always"),
            "token_count": st.one_of(
                st.integers(-2, 30), st.builds(Count, st.integers(0, 30))
            ),
        },
    ),
    max_size=12,
)
pools = st.lists(
    st.builds(
        Pool,
        st.sampled_from(["a", "b", "c"]),
        st.integers(0, 60),
        st.integers(0, 4),
        st.lists(st.sampled_from(["fact", "task", "skill"]), min_size=1, unique=True),
    ),
    min_size=1,
    max_size=3,
    unique_by=lambda pool: pool.name,
)


@given(entries, pools, st.sampled_from(["billing tests", "git", ""]))
def test_a_callers_counter_selects_as_the_oracle(
    store: list[dict[str, object]], chosen: list[Pool], message: str
) -> None:
    for number, entry in enumerate(store):
        entry["id"] = f"e{number}"
    context = {"message": message}
    with warnings.catch_warnings():  # misconfiguration warnings: tested elsewhere
        warnings.simplefilter("ignore", PoolsplitWarning)
        got = retrieve_pools(store, chosen, context, token_counter=len, now=NOW)
    want = oracle_retrieve_pools(store, chosen, context, token_counter=len, now=NOW)
    assert got == want


def test_an_unreadable_content_past_the_reach_is_never_read() -> None:
    # The README: an entry no pool reaches is never read, so a content that
    # cannot become text fails the call only when retrieval reaches it.
    # token_counter=len is a caller's counter: the content is read for it.
    class Unreadable:
        def __str__(self) -> str:
            raise ValueError("no text")

    good = {"id": "good", "content": "billing", "base_priority": 5}
    bad = {"id": "bad", "content": Unreadable(), "base_priority": 1}
    one = [Pool("p", 100, 1)]
    assert retrieve_pools([good, bad], one, token_counter=len, now=NOW) == {"p": [good]}
    with pytest.raises(EntryError) as caught:
        retrieve_pools([good, bad], [Pool("p", 100, 2)], token_counter=len, now=NOW)
    assert caught.value.index == 1
    assert "id='bad'" in str(caught.value)
    with pytest.raises(OracleError):
        oracle_retrieve_pools(
            [good, bad], [Pool("p", 100, 2)], token_counter=len, now=NOW
        )


# ---------------------------------------------------------------------------
# explain: an always-scope decision has no running total
# ---------------------------------------------------------------------------


def test_an_always_step_has_no_running_total() -> None:
    rule = {"id": "rule", "content": "one two three four", "scope": "always"}
    fact = {"id": "fact", "content": "alpha beta", "base_priority": 2}
    more = {"id": "more", "content": "gamma delta epsilon", "base_priority": 1}
    report = explain(
        [rule, fact, more], [Pool("p", 100, 5)], token_counter=len, now=NOW
    )
    by_id = {d.id: d for d in report.decisions}
    assert by_id["rule"].outcome == "always"
    assert by_id["rule"].used is None  # outside the caps: no running total
    assert by_id["rule"].cost is None  # its tokens are the pool's always_tokens
    # The pool's running total counts only what the caps count.
    assert by_id["fact"].used == len(fact["content"])
    assert by_id["more"].used == len(fact["content"]) + len(more["content"])
    always_steps = [s for s in report.steps if s.outcome == "always"]
    assert [(s.index, s.used, s.cost, s.score) for s in always_steps] == [
        (0, 0, None, None)
    ]
    (summary,) = report.pools
    assert summary.tokens_used == len(fact["content"]) + len(more["content"])
    assert summary.always_tokens == len(rule["content"])
    assert summary.always_count == 1


# ---------------------------------------------------------------------------
# The near-always warning, exactly: 2 entries named, then 3 of 4 and a count
# ---------------------------------------------------------------------------

SCOPES = (" always", "ALWAYS", "Always ", "\talways\n")


def near(count: int) -> list[dict[str, object]]:
    return [
        {"id": f"n{number}", "content": "x", "scope": SCOPES[number]}
        for number in range(count)
    ]


def warned(store: list[dict[str, object]]) -> list[str]:
    """The PoolsplitWarnings retrieve_pools gives for ``store``, as text."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        retrieve_pools(store, [Pool("p", 100, 5)], now=NOW)
    return [str(w.message) for w in caught if w.category is PoolsplitWarning]


def test_the_near_always_warning_with_two_entries() -> None:
    store = near(2)
    expected = (
        "2 active entries have a scope that is 'always' only after trimming "
        "and case-folding, so they compete for room instead of loading "
        "unconditionally: entries[0] (id='n0') with scope ' always', "
        "entries[1] (id='n1') with scope 'ALWAYS'; write scope='always'"
    )
    assert warned(store) == [expected]
    report = explain(store, [Pool("p", 100, 5)], now=NOW)
    assert expected in report.warnings


def test_the_near_always_warning_with_four_entries() -> None:
    store = near(4)
    expected = (
        "4 active entries have a scope that is 'always' only after trimming "
        "and case-folding, so they compete for room instead of loading "
        "unconditionally: entries[0] (id='n0') with scope ' always', "
        "entries[1] (id='n1') with scope 'ALWAYS', "
        "entries[2] (id='n2') with scope 'Always ' and 1 more; write scope='always'"
    )
    assert warned(store) == [expected]
    assert expected in explain(store, [Pool("p", 100, 5)], now=NOW).warnings


def test_the_near_always_warning_with_three_entries_names_all() -> None:
    # The boundary: three are named, with no "and 0 more".
    (message,) = warned(near(3))
    assert message.endswith(
        "entries[2] (id='n2') with scope 'Always '; write scope='always'"
    )
    assert "more" not in message
