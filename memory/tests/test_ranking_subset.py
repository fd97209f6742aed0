"""The one subset engine (``_subset.recall``) against the plain oracle.

Its candidates here come from the plainest source there is: given scores,
every entry the pool admits sorted by them (ties kept whole). The oracle is
``poolsplit.retrieve_pools`` on every entry with the same scores. The engine
must give the same result, entry for entry, whatever the scores (ties,
zeros, negatives), pools (caps, floors, types) and costs, and however small
its first round and its share before it hands the core every entry: the
lexical ranking's scores and the recall index's walk are two sources of the
same engine, so its rule is proven here once, apart from both.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timezone

import poolsplit
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from poolsplit import Pool

from poolsplit_memory import _subset

NOW = datetime(2026, 6, 1, tzinfo=timezone.utc)
TYPES = ["note", "fact", "task"]


class Plain(_subset.Candidates[dict]):
    """Candidates by given scores, found by sorting every admitted entry."""

    def __init__(self, entries: list[dict], scores: list[float], pools) -> None:
        self.entries, self.scores, self.pools = entries, scores, pools
        self.size = len(entries)
        self.cores = 0

    def always(self) -> list[int]:
        return [i for i, e in enumerate(self.entries) if poolsplit.is_always(e)]

    def take(self, pool: Pool, wanted: int, subset: set[int], limit: int):
        admitted = [
            i
            for i, e in enumerate(self.entries)
            if not poolsplit.is_always(e)
            and (pool.types is None or e["type"] in pool.types)
        ]
        ranked = sorted(admitted, key=lambda i: -self.scores[i])
        taken = ranked[:wanted]
        if taken:  # every entry tied with the last one taken
            last = self.scores[taken[-1]]
            taken = [i for i in ranked if self.scores[i] >= last]
        subset.update(taken)
        if len(subset) > limit:
            raise _subset.TooMany
        rest = [self.scores[i] for i in ranked if i not in set(taken)]
        return max(rest, default=None)

    def core(self, keys: Sequence[int] | None):
        self.cores += 1
        chosen = self.entries if keys is None else [self.entries[i] for i in keys]
        return poolsplit.retrieve_pools(
            chosen, self.pools, {}, scorer=self._scorer, now=NOW
        )

    def score(self, entry: dict) -> float:
        return self.scores[int(entry["id"])]

    def _scorer(self, entry, _context, /, *, now):
        return self.score(entry)


entries_st = st.lists(
    st.fixed_dictionaries(
        {
            "type": st.sampled_from(TYPES),
            "content": st.text("abc ", max_size=12),
            "score": st.sampled_from([0.0, 1.0, 2.0, 2.0, 3.5, -1.0, 7.0]),
        },
        optional={"scope": st.just("always"), "token_count": st.integers(1, 9)},
    ),
    max_size=30,
)
pools_st = st.lists(
    st.tuples(
        st.integers(0, 30),
        st.integers(0, 4),
        st.one_of(st.none(), st.lists(st.sampled_from(TYPES), min_size=1)),
        st.one_of(st.none(), st.sampled_from([0.5, 2.0, 3.5])),
    ),
    min_size=1,
    max_size=3,
)


@settings(max_examples=300)
@given(entries_st, pools_st, st.sampled_from([1, 2, 4]))
@example(  # a tie at the last place a pool fills, past its first round
    [{"type": "note", "content": "a", "score": 2.0}] * 3,
    [(30, 1, None, None)],
    1,
)
@example(  # a pool full at a score an entry outside the subset ties, earlier
    [
        {"type": "fact", "content": "a", "score": 9.0},
        {"type": "task", "content": "x", "score": 3.0},
        {"type": "note", "content": "l", "score": 3.0},
    ],
    [(30, 1, None, None), (30, 1, None, None), (30, 1, ["note"], None)],
    1,
)
def test_property_the_subset_engine_is_retrieve_pools(raw, specs, share):
    entries = []
    for i, item in enumerate(raw):
        entry = {k: v for k, v in item.items() if k != "score"}
        entries.append({**entry, "id": str(i)})
    scores = [item["score"] for item in raw]
    pools = [
        Pool(f"p{i}", tokens, count, types, floor)
        for i, (tokens, count, types, floor) in enumerate(specs)
    ]
    pools.append(Pool("always", 0, 0, None))  # admits every always-scope entry
    source = Plain(entries, scores, pools)
    expected = source.core(None)
    saved = _subset._FIRST_ROUND, _subset._MAX_SHARE
    _subset._FIRST_ROUND, _subset._MAX_SHARE = 1, share
    try:
        got = _subset.recall(source, pools, poolsplit.default_token_counter)
    finally:
        _subset._FIRST_ROUND, _subset._MAX_SHARE = saved
    assert got == expected
    assert all(a is b for name in got for a, b in zip(got[name], expected[name]))


def test_a_large_store_is_read_in_part():
    entries = [{"id": str(i), "type": "note", "content": "x"} for i in range(400)]
    scores = [float(i) for i in range(400)]
    pools = [Pool("top", 100, 3)]
    source = Plain(entries, scores, pools)
    reads = []
    core = source.core
    source.core = lambda keys: reads.append(keys) or core(keys)  # type: ignore
    got = _subset.recall(source, pools, poolsplit.default_token_counter)
    assert [e["id"] for e in got["top"]] == ["399", "398", "397"]
    assert reads and all(keys is not None and len(keys) < 40 for keys in reads)


@pytest.mark.parametrize("wanted", [0, 1])
def test_a_pool_that_takes_nothing_asks_for_nothing(wanted):
    entries = [{"id": "0", "type": "note", "content": "x"}]
    source = Plain(entries, [1.0], [Pool("none", 0, wanted)])
    got = _subset.recall(source, source.pools, poolsplit.default_token_counter)
    assert got == {"none": []}
