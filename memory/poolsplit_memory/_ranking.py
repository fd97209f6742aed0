"""The lexical ranking's one-loop recall: every entry's score computed in one
loop (:func:`recall_by_scores`), the subset engine handing the core the
best. The ranking's parts live in their own modules, re-exported here:
:mod:`._terms` (what a text says: terms, times), :mod:`._statistics` (the
namespace's counts) and :mod:`._relevance` (the message's factor, the one
rule of the message, and why its constants are what they are).
"""

from __future__ import annotations

import heapq
from collections import defaultdict
from collections.abc import Sequence
from datetime import datetime, timezone
from typing import TypeVar

import poolsplit
from poolsplit import Context, Entry, Pool, Scorer, TokenCounter

from ._relevance import (
    DELTA,
    FLOOR,
    K1,
    RELEVANCE_RATE,
    TIME_FACTOR,
    B,
    Relevance,
    _without_project,
    floored,
    leaves_project_out,
    relevance_factor,
    split,
    weighed,
)
from ._statistics import Statistics
from ._subset import Candidates, TooMany
from ._subset import recall as subset_recall
from ._terms import (
    MESSAGE_CHARS,
    TIME_SLACK,
    Times,
    _content,
    _message,
    read_part,
    read_times,
    stem,
    terms,
    time_slack,
    time_windows,
    untimed,
)

__all__ = [
    "DELTA",
    "FLOOR",
    "K1",
    "MESSAGE_CHARS",
    "RELEVANCE_RATE",
    "TIME_FACTOR",
    "TIME_SLACK",
    "B",
    "Relevance",
    "Statistics",
    "Times",
    "_content",
    "floored",
    "leaves_project_out",
    "read_part",
    "read_times",
    "recall_by_part_scores",
    "recall_by_scores",
    "relevance_factor",
    "split",
    "stem",
    "terms",
    "time_slack",
    "time_windows",
    "untimed",
    "weighed",
]

# ===========================================================================
# The fast recall: every score computed in one loop, the core on the best
# ===========================================================================

E = TypeVar("E", bound=Entry)


class _Split:
    """Entries' positions as the subset engine asks for them: the
    always-scope ones (in every subset), the others by type."""

    def __init__(self) -> None:
        self.always: list[int] = []
        self.groups: defaultdict[str, list[int]] = defaultdict(list)

    def file(self, at: int, entry: Entry) -> None:
        """File an entry :func:`_features` leaves out (by the core's rules)."""
        if poolsplit.is_always(entry):
            self.always.append(at)
            return
        kind = poolsplit.entry_type(entry)
        if isinstance(kind, str):  # else only a pool of every type admits it
            self.groups[kind].append(at)


def _fast_scores(
    stats: Statistics,
    entries: Sequence[Entry],
    context: Context,
    now: datetime,
    relevance: Relevance,
    split: _Split,
) -> list[float]:
    """Every entry's score, as ``stats.scorer(context)`` gives it: the base by
    ``poolsplit.base_score`` (the rule default_scorer calls) of the fields
    :func:`_features` read once, times the relevance factor
    (tests/test_ranking.py proves the two equal, float for float). Each
    entry's position is filed in ``split`` on the way (a loop of its own
    cost more: benchmarks/README.md, engine37)."""
    always, groups = split.always, split.groups
    now_seconds = poolsplit.parse_created(now)
    assert now_seconds is not None  # an aware datetime
    query_tags = frozenset(context.get("tags") or ())
    query_project = context.get("project")
    base_context = {key: context[key] for key in context if key != "message"}
    base_score = poolsplit.base_score  # read per call: a patched rule is followed
    no_project = leaves_project_out(context)
    features = stats._features
    relevance.complete()  # every content sharing a term in the shares
    share = relevance._share
    factor_at = relevance.factor_at
    scores = []
    for at, entry in enumerate(entries):
        found = features.get(id(entry))
        if found is None:  # not counted, or unusual: the rule itself
            based = entry
            if no_project and entry.get("project") is not None:
                based = _without_project(entry)
            score = poolsplit.default_scorer(based, base_context, now=now)
            scores.append(weighed(score, relevance.factor(entry)))
            split.file(at, entry)
            continue
        priority, seconds, tags, project, is_always, kind = found
        if is_always:
            always.append(at)
        else:
            groups[kind].append(at)
        if no_project:  # a context naming no project leaves the entry's out
            project = None
        score = base_score(
            priority, seconds, tags, project, now_seconds, query_tags, query_project
        )
        content = entry.get("content")
        if type(content) is not str:  # None is "", a number its str()
            content = _content(entry)
        factor = factor_at(share.get(content), seconds)
        scores.append(score * factor if factor else 0.0)  # weighed(), inline
    return scores


def recall_by_scores(
    stats: Statistics,
    entries: Sequence[E],
    pools: Sequence[Pool],
    context: Context,
    *,
    token_counter: TokenCounter,
    now: datetime | None,
    relevance: Relevance | None = None,
) -> dict[str, list[E]]:
    """``poolsplit.retrieve_pools(entries, pools, context,
    scorer=stats.scorer(context), ...)``, the same result, with the core
    reading the best entries only.

    Every score is computed here in one loop (about a microsecond an entry);
    the subset engine (``_subset.recall``) then gives the core each pool's
    best entries by score among those it admits, with every always-scope
    entry, and checks that they suffice (:class:`_ByScore`).
    """
    now = datetime.now(timezone.utc) if now is None else now
    if relevance is None:
        relevance = stats.relevance(_message(context))
    if not isinstance(now, datetime) or any(
        not isinstance(pool, Pool) for pool in pools
    ):  # the core says what is wrong
        plain = stats.scorer(context, relevance=relevance)
        return _core(entries, pools, context, plain, token_counter, now)
    if not _always_admitted(stats, entries, pools):  # the core warns by position
        plain = stats.scorer(context, relevance=relevance)
        return _core(entries, pools, context, plain, token_counter, now)
    split = _Split()
    scores = _fast_scores(stats, entries, context, now, relevance, split)
    source = _ByScore(entries, pools, context, scores, split, token_counter, now)
    return subset_recall(source, pools, token_counter)


def recall_by_part_scores(
    parts: Sequence[tuple[Statistics, Sequence[E], Relevance]],
    entries: Sequence[E],
    pools: Sequence[Pool],
    context: Context,
    *,
    token_counter: TokenCounter,
    now: datetime,
) -> dict[str, list[E]]:
    """``poolsplit.retrieve_pools(entries, pools, context, scorer=...)``,
    each entry scored by the statistics and relevance of the part holding
    it (``parts``: every entry of ``entries`` in exactly one), with the core
    reading the best entries only: every score computed by
    :func:`_fast_scores` part by part (about a microsecond an entry), then
    the subset engine, as :func:`recall_by_scores` does for one part. For
    pools that admit a type an earlier pool admits (``_pooled``)."""
    if not isinstance(now, datetime) or not _always_admitted(None, entries, pools):
        # the core says what is wrong, or warns of an entry by its position
        scorer = _by_part(parts, context)
        return _core(entries, pools, context, scorer, token_counter, now)
    where = {id(entry): at for at, entry in enumerate(entries)}
    scores = [0.0] * len(entries)
    for stats, own, relevance in parts:
        local = _fast_scores(stats, own, context, now, relevance, _Split())
        for entry, score in zip(own, local):
            scores[where[id(entry)]] = score
    split = _Split()
    for at, entry in enumerate(entries):
        split.file(at, entry)
    source = _ByScore(entries, pools, context, scores, split, token_counter, now)
    return subset_recall(source, pools, token_counter)


def _by_part(
    parts: Sequence[tuple[Statistics, Sequence[E], Relevance]], context: Context
) -> Scorer:
    """Each entry scored by its part's relevance, for this context."""
    scorers: dict[int, Scorer] = {}
    for _, own, relevance in parts:
        scorer = relevance.scorer(context)
        scorers.update(dict.fromkeys(map(id, own), scorer))

    def score(entry: Entry, given: Context | None, /, *, now: datetime) -> float:
        return scorers[id(entry)](entry, given, now=now)

    return score


class _ByScore(Candidates[E]):
    """One call's candidates for the subset engine: a pool's best by exact
    score among the entries it admits (the always-scope ones aside: they
    are in every subset); its threshold is the best score left out."""

    def __init__(
        self,
        entries: Sequence[E],
        pools: Sequence[Pool],
        context: Context,
        scores: Sequence[float],
        split: _Split,
        token_counter: TokenCounter,
        now: datetime,
    ) -> None:
        self._entries, self._scores, self._split = entries, scores, split
        self._pools, self._context = pools, context
        self._counter, self._now = token_counter, now
        self.size = len(entries)
        self._score_of: dict[int, float] = {}
        self._admitted: dict[tuple[str, ...] | None, Sequence[int]] = {}

    def always(self) -> list[int]:
        return self._split.always

    def _candidates(self, pool: Pool) -> Sequence[int]:
        """The entries the pool admits, the always-scope ones aside."""
        found = self._admitted.get(pool.types)
        if found is None:
            always, groups = self._split.always, self._split.groups
            if pool.types is None:
                found = range(self.size)
                if always:
                    apart = set(always)
                    found = [at for at in found if at not in apart]
            else:
                found = [
                    at
                    for kind in dict.fromkeys(pool.types)
                    for at in groups.get(kind, ())  # (get: adds no group)
                ]
            self._admitted[pool.types] = found
        return found

    def take(
        self, pool: Pool, wanted: int, subset: set[int], limit: int
    ) -> float | None:
        keys = self._candidates(pool)
        scores = self._scores
        left: float | None = None
        if len(keys) <= wanted:
            subset.update(keys)
        else:
            best = heapq.nlargest(wanted + 1, keys, key=scores.__getitem__)
            cut, left = scores[best[-2]], scores[best[-1]]  # last in, best out
            if left == cut:  # a tie is never split
                subset.update(at for at in keys if scores[at] >= cut)
                left = max((s for at in keys if (s := scores[at]) < cut), default=None)
            else:
                subset.update(best[:-1])
        if len(subset) > limit:
            raise TooMany
        return left

    def core(self, keys: Sequence[int] | None) -> dict[str, list[E]]:
        entries: Sequence[E] = self._entries
        scores = self._scores
        if keys is not None:
            entries = [entries[at] for at in keys]
            scores = [scores[at] for at in keys]
        score_of = {id(entry): score for entry, score in zip(entries, scores)}
        self._score_of = score_of

        def scorer(
            entry: Entry, _context: Context | None, /, *, now: datetime
        ) -> float:
            return score_of[id(entry)]

        return _core(
            entries, self._pools, self._context, scorer, self._counter, self._now
        )

    def score(self, entry: E) -> float:
        return self._score_of[id(entry)]


def _always_admitted(
    stats: Statistics | None, entries: Sequence[Entry], pools: Sequence[Pool]
) -> bool:
    """Whether some pool admits every always-scope (or unusual) entry; from
    the statistics' types when they count exactly ``entries``."""
    if any(pool.types is None for pool in pools):
        return True
    admitted = {kind for pool in pools for kind in pool.types or ()}
    if stats is not None and len(stats._features) == len(entries):  # all counted
        return admitted.issuperset(stats._always_types)
    return all(
        poolsplit.entry_type(e) in admitted for e in entries if poolsplit.is_always(e)
    )


def _core(
    entries: Sequence[E],
    pools: Sequence[Pool],
    context: Context,
    scorer: Scorer,
    token_counter: TokenCounter,
    now: datetime,
) -> dict[str, list[E]]:
    return poolsplit.retrieve_pools(
        entries, pools, context, scorer=scorer, token_counter=token_counter, now=now
    )
