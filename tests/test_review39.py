"""Regressions found by review39 (issue 35): a value's own hooks are read once.

The README says the store is read once and each entry scored at most once per
call. scan39's in-place reads (commit 6e57642, branch scan39) fall back to the
readers after a TypeError, and then read again what they had read already: a
``base_priority``'s ``float()`` when a tag is not a str, and a truthy
``superseded_by``'s truth value with the default predicate. These pin the
README's "once" on a success path; they pass on main at cc03cda and fail with
scan39's poolsplit.py.
"""

from __future__ import annotations

from conftest import NOW

import poolsplit


class CountedPriority(int):
    """An int subclass whose ``float()`` is counted."""

    calls = 0

    def __float__(self) -> float:
        CountedPriority.calls += 1
        return float(int(self))


class CountedTruth:
    """A ``superseded_by`` value whose truth is counted (always true)."""

    calls = 0

    def __bool__(self) -> bool:
        CountedTruth.calls += 1
        return True


def test_priority_read_once_when_a_tag_is_not_a_str() -> None:
    CountedPriority.calls = 0
    entry: dict[str, object] = {"id": "a", "base_priority": CountedPriority(3)}
    entry["tags"] = ["a", 1]  # a non-str tag is its str() (README)
    result = poolsplit.retrieve_pools([entry], [poolsplit.Pool("p", 100, 5)], now=NOW)
    assert result == {"p": [entry]}
    assert CountedPriority.calls == 1


def test_superseded_by_read_once_with_the_default_predicate() -> None:
    CountedTruth.calls = 0
    retired: dict[str, object] = {"id": "a", "superseded_by": CountedTruth()}
    kept: dict[str, object] = {"id": "b", "content": "y"}
    pools = [poolsplit.Pool("p", 100, 5)]
    result = poolsplit.retrieve_pools([retired, kept], pools, now=NOW)
    assert result == {"p": [kept]}  # any truthy superseded_by retires (README)
    assert CountedTruth.calls == 1
