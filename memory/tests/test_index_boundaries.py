"""The recall index at its boundaries (issue 35's mutation run).

Each test pins a rule of the index where a plausible bug changes a result
or the index's use, which the property tests of tests/test_index.py seldom
reach. Expected results are ``poolsplit.retrieve_pools`` on every entry
(the core's rule), never the index's own numbers.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

import poolsplit
import pytest
from poolsplit import Pool

from poolsplit_memory import _index, _subset

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=timezone.utc)


def _task(ident: str, priority: float, tokens: int) -> dict[str, Any]:
    return {
        "id": ident,
        "type": "task",
        "content": ident.lower(),
        "base_priority": priority,
        "token_count": tokens,
    }


def test_a_pool_with_one_token_left_is_not_full_on_the_index(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A pool of 3 tokens takes A (2 tokens) and skips C and D (5 each);
    with one token left it is not full: B (one token, far down) still
    fits, so the index must grow its subset past the first round."""
    monkeypatch.setattr(_subset, "_MAX_SHARE", 1)
    monkeypatch.setattr(_index, "_GROUP_SHARE", 0)
    entries = [_task("A", 9, 2), _task("C", 8, 5), _task("D", 8, 5), _task("B", 1, 1)]
    pools = [Pool("p", 3, 5)]
    context = {"message": ""}
    expected = poolsplit.retrieve_pools(entries, pools, context, now=NOW)
    assert [e["id"] for e in expected["p"]] == ["A", "B"]
    index = _index.Index(entries)
    got = index.recall(
        pools, context, now=NOW, token_counter=poolsplit.default_token_counter
    )
    assert [e["id"] for e in got["p"]] == ["A", "B"]


def test_always_scope_entries_do_not_make_a_pool_full_on_the_index(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A pool of 2 entries and 3 tokens holds two always-scope entries
    outside its caps, takes A (2 tokens) and skips C (5): it has ranked one
    entry, so it is not full, and B (one token, far down) still fits. The
    index must not count the always-scope entries as ranked (it would stop
    at its first subset and leave B out)."""
    monkeypatch.setattr(_subset, "_MAX_SHARE", 1)
    monkeypatch.setattr(_index, "_GROUP_SHARE", 0)
    always = [{**_task(name, 5, 1), "scope": "always"} for name in ("W1", "W2")]
    entries = [*always, _task("A", 9, 2), _task("C", 8, 5), _task("B", 1, 1)]
    pools = [Pool("p", 3, 2)]
    context = {"message": ""}
    expected = poolsplit.retrieve_pools(entries, pools, context, now=NOW)
    assert [e["id"] for e in expected["p"]] == ["W1", "W2", "A", "B"]
    index = _index.Index(entries)
    got = index.recall(
        pools, context, now=NOW, token_counter=poolsplit.default_token_counter
    )
    assert [e["id"] for e in got["p"]] == ["W1", "W2", "A", "B"]


def test_an_object_listed_twice_is_modelled_again_once_one_is_removed() -> None:
    """The core refuses one object listed twice, so the index leaves such a
    list to it (not usable); removing one of the two, or any other entry,
    leaves an index it models again."""
    shared = _task("S", 5, 1)
    index = _index.Index([_task("A", 9, 1), shared, _task("B", 1, 1)])
    assert index.usable
    index.remove(0)  # A: a removal keeps the index usable
    assert index.usable and len(index) == 2
    index.add(7, shared)
    assert not index.usable
    index.remove(7)
    assert index.usable
    assert [e["id"] for e in index.entries] == ["S", "B"]
