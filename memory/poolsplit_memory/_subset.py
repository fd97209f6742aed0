"""The one subset engine: the core on a few entries, proven to suffice.

``poolsplit.retrieve_pools`` reads every entry, yet a pool takes a handful.
So :func:`recall` hands the core a subset that holds every entry the call
can select, checks after the call that it did, and grows the subset where
it did not; the core still decides every score, cost, tie and warning (one
rule, one place). Its results are those of ``retrieve_pools`` on every
entry (tests/test_index.py and tests/test_ranking.py prove it on random
stores, pools and queries). Where the candidates come from is a
:class:`Candidates`: the lexical ranking's exact scores
(``_ranking.recall_by_scores``: every score computed in one loop) or the
recall index's sorted streams (``_index.Index.recall``: bounds of scores).

Why a subset is enough. A pool walks its candidates best first and only ever
skips one without effect (it does not fit, or it is below the floor). Say
no entry the pool admits outside the subset scores above ``t``, the pool's
threshold. If the pool is full after the subset's walk (by its count, or
by tokens: every cost is at least 1, so nothing fits a pool whose tokens
are all used) and its last ranked entry scores above ``t``, every entry
outside the subset comes after that point of the whole walk, when the pool
is already full: the whole walk takes what the subset's walk took. If ``t``
is below the pool's floor, no entry outside can be taken. A pool that is
not full may still take an entry outside that fits, however low its score:
it holds only by its floor. Pool by pool, in order, the entries taken are
the same, so each later pool meets the same untaken entries.

The loop, per call: each pool that can take an entry asks its source for
its ``wanted`` best candidates (and every one tied with the last: a tie is
never split) and the threshold of the rest; the union, with every
always-scope entry, goes to the core; each pool that does not hold grows
its ``wanted`` by ``_GROWTH``; once the subset passes ``1 / _MAX_SHARE`` of
the entries the core reads them all (a tie of thousands: the core reads
them faster than a source picks them).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Generic, TypeVar

import poolsplit
from poolsplit import Pool, TokenCounter

E = TypeVar("E", bound=Mapping[str, Any])

# A pool's candidates in the first round, as a multiple of what it can take
# (each entry costs a token at least: min(max_entries, max_tokens)). The
# two engines began at 1 per pool (the index) and 4 x the sum over the pools
# (the exact scores); 4 per pool cost the index's walk much more than 1
# and the exact scores about the same (benchmarks/README.md, engine37).
_FIRST_ROUND = 1
# How much a pool that does not hold grows by.
_GROWTH = 4
# Past this share of the entries the subset costs what the whole does.
_MAX_SHARE = 4


class TooMany(Exception):
    """The subset passed its limit: the core gets every entry."""


class Candidates(ABC, Generic[E]):
    """Where one call's candidates come from, keyed by ints in the order
    the core is given the entries in."""

    size: int  # how many entries the call ranks

    @abstractmethod
    def always(self) -> Iterable[int]:
        """The always-scope entries: in every subset."""

    @abstractmethod
    def take(
        self, pool: Pool, wanted: int, subset: set[int], limit: int
    ) -> float | None:
        """Add the pool's ``wanted`` best candidates (and every one tied with
        the last) to ``subset``; return a bound of the score of every entry
        the pool admits that is left out (None when none is). Raises
        :class:`TooMany` once ``subset`` passes ``limit``."""

    @abstractmethod
    def core(self, keys: Sequence[int] | None) -> dict[str, list[E]]:
        """``retrieve_pools`` on the entries of ``keys`` (ascending; None:
        every entry) with the call's scorer."""

    @abstractmethod
    def score(self, entry: E) -> float:
        """The score the core ranked ``entry`` of the last subset by."""

    def whole(self) -> dict[str, list[E]]:
        """The result on every entry, once the subset is too large."""
        return self.core(None)


def recall(
    source: Candidates[E], pools: Sequence[Pool], token_counter: TokenCounter
) -> dict[str, list[E]]:
    """``retrieve_pools`` on every entry of ``source``, the same result, the
    core reading a subset (see the module's docstring). The caller checks
    that the pools are Pools with distinct names and that some pool admits
    every always-scope entry (else the core warns of the others by their
    position, which must be the caller's)."""
    wanted = {
        pool.name: _FIRST_ROUND * min(pool.max_entries, pool.max_tokens)
        for pool in pools
    }
    limit = source.size // _MAX_SHARE
    while True:
        subset = set(source.always())
        thresholds: dict[str, float | None] = {}
        try:
            for pool in pools:
                if pool.max_entries > 0 and pool.max_tokens > 0:
                    thresholds[pool.name] = source.take(
                        pool, wanted[pool.name], subset, limit
                    )
        except TooMany:
            return source.whole()
        try:
            got = source.core(sorted(subset))
        except Exception:
            # An error names an entry by its position in the list given: the
            # core on every entry raises it with the caller's position, or,
            # if the walk never reaches that entry, gives the result.
            return source.core(None)
        failed = [
            pool
            for pool in pools
            if pool.name in thresholds
            and not _holds(
                pool, got[pool.name], thresholds[pool.name], source, token_counter
            )
        ]
        if not failed:
            return got
        for pool in failed:
            wanted[pool.name] *= _GROWTH


def _holds(
    pool: Pool,
    chosen: Sequence[E],
    threshold: float | None,
    source: Candidates[E],
    token_counter: TokenCounter,
) -> bool:
    """Whether no entry outside the subset (each scoring at most
    ``threshold``) could have changed what the pool took: the threshold is
    below the pool's floor, or the pool is full (by its count, or by tokens:
    every cost is at least 1) and its last ranked entry scores above it."""
    if threshold is None:
        return True
    if pool.min_score is not None and threshold < pool.min_score:
        return True
    ranked = [entry for entry in chosen if not poolsplit.is_always(entry)]
    if not ranked:
        return False
    if len(ranked) < pool.max_entries:  # not full by count: by tokens?
        used = sum(poolsplit.entry_cost(entry, token_counter) for entry in ranked)
        if used < pool.max_tokens:  # an entry left out may still fit
            return False
    return threshold < source.score(ranked[-1])
