"""Recall without scoring the whole namespace: a candidate index per snapshot.

``poolsplit.retrieve_pools`` scores every candidate on every call, about
2.5 µs an entry (25 ms at 10,000 entries), yet a pool takes a handful. So
:meth:`Index.recall` hands ``retrieve_pools`` a subset that holds every entry
the call can select, and checks after the call that it did; the core still
decides every score, cost, tie and warning (one rule, one place). When the
check fails the subset grows; past a quarter of the namespace the core gets
every entry. Its results are those of ``retrieve_pools`` on every entry:
tests/test_index.py proves it on random stores, pools and queries.

Why a subset is enough. A pool walks its candidates best first and only ever
skips one without effect (it does not fit, or it is below the floor). If the
pool is full after taking the subset's last entry it took, at score ``s``,
every entry outside the subset that scores below ``s`` comes after that
point of the whole walk too, when the pool is already full: the whole walk
takes what the subset's walk took. Pool by pool, in order, the entries taken
are the same, so each later pool meets the same untaken entries.

How the subset is found without scoring everything. An entry's score is
priority x recency x tags x project x message. Entries of one type, priority
and project differ only in recency, which never falls as ``created`` grows:
sorted once by ``created`` (per snapshot), they come best first at any
moment, as long as the message and tags do not boost them. Those the call
can boost (their content has a significant word of the message, or a tag of
the context: found in inverted indexes) come in streams of their own,
bounded by the largest boost any of them can get (the most message words an
entry shares, counted at C speed); once such a stream offers an entry, the
entry goes back in the heap with the bound of its own shares. Bounds are
computed from the scorer's published numbers (``RECENCY_SLOPE``,
``PROJECT_MATCH``...), widened by a relative and an absolute margin so that
they are never below the score; benchmarks/index_ab.py is the A/B against
taking them from ``default_scorer`` (3x slower), and a property test checks
them against it. A heap merges a pool's streams, best bound first, and
takes candidates until it has the pool's ``max_entries`` and the next bound
is lower than the last one taken by more than the tie band (a tie is never
split). That next bound is the pool's threshold ``t``: no entry outside the
subset that the pool admits scores above ``t``. The check after the call:
each pool that ranks is full and its last ranked entry scores above ``t``,
or ``t`` is below its floor, or the subset holds all of its candidates.

The index leaves to the core (every entry) what it does not model: an
entry whose scope is set but not ``"always"``, a priority that is not a
number, tags that are not a list of str, an unhashable project, an object
listed twice; a context with another key or unusual values; pools that
leave an always-scope entry unadmitted; and any error the subset's call
raises (so that it names the store's position).
"""

from __future__ import annotations

import heapq
import math
from collections import Counter
from collections.abc import Container, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from itertools import chain
from typing import Any

import poolsplit
from poolsplit import Pool, TokenCounter

# A bound of a boosted stream is the base times the largest boost, times this
# margin: the score multiplies its factors in another order, so it may round
# a few ulps above the product (2**-30 is some 10**6 ulps).
_MARGIN = 1.0 + 2.0**-30
# Near zero a product of subnormals rounds by an absolute amount (up to
# 2**-1074 per operation) that no relative margin covers.
_TINY = 2.0**-1000
# Bounds this close to the last one taken are taken too: two entries whose
# scores tie may have bounds an ulp or a margin apart, and a tie must not be
# split between the subset and the rest.
_TIE_BAND = 2.0**-26
_MAX_TAGS = 1.0 + poolsplit.TAG_BOOST
# Candidates taken per pool in the first round, as a multiple of
# max_entries, and how much a pool that fails the check grows by.
_FIRST_ROUND = 1
_GROWTH = 4
# Past this share of the namespace the subset costs what the whole does.
_MAX_SHARE = 4
# With more groups than one per this many entries (distinct float priorities:
# a group each), setting up a pool's streams costs what the core does.
_GROUP_SHARE = 8

Entry = dict[str, Any]
_CONTEXT_KEYS = frozenset(("message", "tags", "project"))
GroupKey = tuple[str, Any, Any]  # (type, base_priority, project)


@dataclass
class _Stream:
    """Candidates of one group, best first; ``boost`` None: not boostable
    (the base is the exact score), else the bound's factor over the base."""

    positions: Sequence[int]
    boost: float | None
    at: int = 0


@dataclass
class _Call:
    """What one recall shares between its pools."""

    context: Mapping[str, Any]
    now: datetime
    words: frozenset[str]
    tags: frozenset[str]
    boosted: Container[int]  # entries the message or the tags may boost
    project: Any
    now_seconds: float
    # The largest message factor of any entry: 1 + boost x the most words an
    # entry shares with the message, over the message's word count.
    message_factor: float = 1.0


class Index:
    """The snapshot's entries grouped and sorted for :meth:`recall`.

    Built once per snapshot (O(n log n); 45 ms at 10,000 entries);
    read-only afterwards, so threads may share it. ``usable`` is False when
    some entry falls outside what the index models (see the module's last
    paragraph): recall then gives the core every entry.
    """

    def __init__(self, entries: Sequence[Entry]) -> None:
        self.entries = entries
        self.usable = True
        self._special: list[int] = []  # always-scope: always in the subset
        self._created: list[float | None] = [None] * len(entries)
        self._priority: list[float] = [0.0] * len(entries)
        self._content_words: list[frozenset[str]] = [frozenset()] * len(entries)
        self._tag_sets: list[frozenset[str]] = [frozenset()] * len(entries)
        self._members: list[list[int]] = []  # per group, best first
        self._by_type: dict[str, list[int]] = {}
        self._words: dict[str, dict[int, list[int]]] = {}
        self._word_hits: dict[str, list[int]] = {}
        self._tags: dict[str, dict[int, list[int]]] = {}
        self._tag_hits: dict[str, list[int]] = {}
        try:
            self._build()
        except _Unmodelled:
            self.usable = False

    def _build(self) -> None:
        if len({id(entry) for entry in self.entries}) < len(self.entries):
            raise _Unmodelled  # an object listed twice: the core's rule
        groups: dict[GroupKey, int] = {}
        falling: list[bool] = []  # per group: scores fall as created grows
        for position, entry in enumerate(self.entries):
            if not isinstance(entry, Mapping):
                raise _Unmodelled  # the core names it
            scope = entry.get("scope")
            if scope is None:
                self._add(position, entry, groups, falling)
            elif scope == "always" and isinstance(poolsplit.entry_type(entry), str):
                self._special.append(position)
            else:
                raise _Unmodelled
        self._sort(falling)

    def _add(
        self,
        position: int,
        entry: Entry,
        groups: dict[GroupKey, int],
        falling: list[bool],
    ) -> None:
        """Put a ranked entry in its group and in the word and tag indexes."""
        kind = poolsplit.entry_type(entry)
        priority = entry.get("base_priority")
        if priority is None:
            priority = poolsplit.DEFAULT_PRIORITY
        content = entry.get("content")
        if content is None:
            content = ""
        tags = entry.get("tags")
        if not (
            isinstance(kind, str)
            and _is_number(priority)
            and isinstance(content, str)
            and _is_tag_list(tags)
        ):
            raise _Unmodelled
        try:
            self._priority[position] = float(priority)
            group = groups.setdefault(
                (kind, priority, entry.get("project")), len(groups)
            )
        except (TypeError, OverflowError):  # an unhashable project, a huge int
            raise _Unmodelled from None
        if group == len(self._members):
            self._members.append([])
            self._by_type.setdefault(kind, []).append(group)
            falling.append(priority < 0)
        self._members[group].append(position)
        self._created[position] = poolsplit.parse_created(entry.get("created"))
        words = self._content_words[position] = poolsplit.significant_words(content)
        tag_set = self._tag_sets[position] = frozenset(tags or ())
        for word in words:
            self._words.setdefault(word, {}).setdefault(group, []).append(position)
        for tag in tag_set:
            self._tags.setdefault(tag, {}).setdefault(group, []).append(position)

    def _sort(self, falling: list[bool]) -> None:
        """Each group best first, and each posting list in its group's order."""
        rank = [0] * len(self.entries)
        for group, members in enumerate(self._members):
            members.sort(key=self._newest_first)
            if falling[group]:  # a negative priority: the oldest scores most
                members.reverse()
            for place, position in enumerate(members):
                rank[position] = place
        for flat, index in (
            (self._word_hits, self._words),
            (self._tag_hits, self._tags),
        ):
            for name, by_group in index.items():
                for positions in by_group.values():
                    positions.sort(key=rank.__getitem__)
                flat[name] = [p for positions in by_group.values() for p in positions]

    def _newest_first(self, position: int) -> tuple[bool, float]:
        """No ``created`` (no decay) first, then the newest."""
        seconds = self._created[position]
        return (seconds is not None, 0.0 if seconds is None else -seconds)

    def recall(
        self,
        pools: Sequence[Pool],
        context: Mapping[str, Any],
        *,
        now: datetime,
        token_counter: TokenCounter,
    ) -> dict[str, list[Entry]]:
        """``poolsplit.retrieve_pools(entries, pools, context, ...)``, the same
        result, reading a few entries per pool instead of every one."""
        if not (
            self.usable
            and len(self._members) * _GROUP_SHARE <= len(self.entries)
            and _usual(pools, now)
            and self._always_admitted(pools)
        ):
            return self._core(self.entries, pools, context, now, token_counter)
        call = self._call(context, now)
        if call is None:
            return self._core(self.entries, pools, context, now, token_counter)
        # Each entry costs a token at least: a pool takes max_tokens at most.
        wanted = {
            pool.name: _FIRST_ROUND * min(pool.max_entries, pool.max_tokens)
            for pool in pools
        }
        limit = len(self.entries) // _MAX_SHARE
        while True:
            subset = set(self._special)
            thresholds = {}
            try:
                for pool in pools:
                    if pool.max_entries > 0 and pool.max_tokens > 0:
                        thresholds[pool.name] = self._take(
                            pool, wanted[pool.name], call, subset, limit
                        )
            except _TooMany:
                return self._core(self.entries, pools, context, now, token_counter)
            chosen = [self.entries[p] for p in sorted(subset)]
            try:
                got = self._core(chosen, pools, context, now, token_counter)
            except Exception:
                # An error names an entry by its position in the list given:
                # the core on every entry raises it with the store's position,
                # or, if the walk never reaches that entry, gives the result.
                return self._core(self.entries, pools, context, now, token_counter)
            failed = [
                pool
                for pool in pools
                if pool.name in thresholds
                and not _holds(
                    pool, got[pool.name], thresholds[pool.name], call, token_counter
                )
            ]
            if not failed:
                return got
            for pool in failed:
                wanted[pool.name] *= _GROWTH

    def _call(self, context: Mapping[str, Any], now: datetime) -> _Call | None:
        """The call's words, tags and boosted entries; None for a context the
        index does not model (the core then reads it, and says what is wrong)."""
        if not isinstance(context, Mapping) or not _CONTEXT_KEYS.issuperset(context):
            return None  # the core warns of another key: once, not per round
        message = context.get("message")
        tags = context.get("tags")
        if not (message is None or isinstance(message, str)) or not _is_tag_list(tags):
            return None
        call = _Call(
            context=context,
            now=now,
            words=poolsplit.significant_words(message or ""),
            tags=frozenset(tags or ()),
            boosted=(),
            project=context.get("project"),
            now_seconds=_seconds(now),
        )
        # How many of the message's words an entry shares, for each entry
        # sharing one (a C-speed count): the most any shares bounds the boost.
        shared = Counter(
            chain.from_iterable(self._word_hits.get(word, ()) for word in call.words)
        )
        if shared:
            most = max(shared.values())
            call.message_factor = 1.0 + poolsplit.MESSAGE_BOOST * most / len(call.words)
        call.boosted = shared  # its keys: a dict is a set here, and already built
        if call.tags:
            tagged = set(shared)
            for tag in call.tags:
                tagged.update(self._tag_hits.get(tag, ()))
            call.boosted = tagged
        return call

    def _always_admitted(self, pools: Sequence[Pool]) -> bool:
        """Whether some pool admits every always-scope entry: else the core
        warns of the others by their position, which must be the store's."""
        if any(pool.types is None for pool in pools):
            return True
        admitted = {kind for pool in pools for kind in pool.types or ()}
        return all(
            poolsplit.entry_type(self.entries[p]) in admitted for p in self._special
        )

    def _core(
        self,
        entries: Sequence[Entry],
        pools: Sequence[Pool],
        context: Mapping[str, Any],
        now: datetime,
        token_counter: TokenCounter,
    ) -> dict[str, list[Entry]]:
        return poolsplit.retrieve_pools(
            entries, pools, context, token_counter=token_counter, now=now
        )

    def _take(
        self, pool: Pool, wanted: int, call: _Call, subset: set[int], limit: int
    ) -> float | None:
        """Add the pool's ``wanted`` best candidates by bound (and every one
        tied with the last) to ``subset``; return the best bound left out
        (None when none is). Raises _TooMany once ``subset`` passes ``limit``
        (a tie of thousands: the core reads them faster than this loop)."""
        groups = (
            range(len(self._members))
            if pool.types is None
            else [g for kind in pool.types for g in self._by_type.get(kind, ())]
        )
        streams = [_Stream(self._members[g], None) for g in groups]
        tag_factor = _MAX_TAGS if call.tags else 1.0
        for names, index, boost in (
            (call.words, self._words, call.message_factor * tag_factor),
            (call.tags, self._tags, _MAX_TAGS * call.message_factor),
        ):
            for name in names:
                by_group = index.get(name, {})
                streams.extend(
                    _Stream(by_group[g], boost) for g in groups if g in by_group
                )
        # (-bound, kind, number): kind 0 is a stream's head (number: the
        # stream), 1 a boosted entry with the bound of its own shares
        # (number: its position), given up by a stream whose loose bound
        # (the largest boost) came first.
        heap: list[tuple[float, int, int]] = []
        for number, stream in enumerate(streams):
            self._push(heap, number, stream, call)
        seen: set[int] = set()  # taken into the subset by this pool
        bounded: set[int] = set()  # boosted entries given up by a stream
        last = math.inf
        while heap:
            bound = -heap[0][0]
            if len(seen) >= wanted and _below_band(bound, last):
                return bound
            _, kind, number = heapq.heappop(heap)
            if kind == 0:
                stream = streams[number]
                position = stream.positions[stream.at]
                stream.at += 1
                self._push(heap, number, stream, call)
                if stream.boost is not None:
                    if position not in bounded:
                        bounded.add(position)
                        bound = self._boosted_bound(position, call)
                        heapq.heappush(heap, (-_widened(bound), 1, position))
                    continue
            else:
                position = number
            if position not in seen:
                seen.add(position)
                subset.add(position)
                last = bound
                if len(subset) > limit:
                    raise _TooMany
        return None

    def _push(
        self,
        heap: list[tuple[float, int, int]],
        number: int,
        stream: _Stream,
        call: _Call,
    ) -> None:
        """Push the stream's next candidate's bound; a plain stream passes
        over boosted entries (their own streams hold them)."""
        positions = stream.positions
        if stream.boost is None:
            while stream.at < len(positions) and positions[stream.at] in call.boosted:
                stream.at += 1
        if stream.at == len(positions):
            return
        base = self._base(positions[stream.at], call)
        bound = base * stream.boost if stream.boost is not None and base > 0 else base
        heapq.heappush(heap, (-_widened(bound), 0, number))

    def _boosted_bound(self, position: int, call: _Call) -> float:
        """A bound of a boosted entry's score: its base times the message and
        tag factors of its own shares (each at least the scorer's factor)."""
        base = self._base(position, call)
        if base <= 0:
            return base
        factor = 1.0
        if call.words:
            shared = len(call.words.intersection(self._content_words[position]))
            factor += poolsplit.MESSAGE_BOOST * shared / len(call.words)
        tags = self._tag_sets[position]
        if tags and call.tags:
            shared = len(call.tags.intersection(tags))
            factor *= 1.0 + poolsplit.TAG_BOOST * shared / len(tags)
        return base * factor

    def _base(self, position: int, call: _Call) -> float:
        """The score without the message and tags: priority x recency x
        project, by the scorer's published numbers. Not yet a bound: the
        scorer's own order of operations may round higher, so callers widen
        what they push (:func:`_widened`)."""
        base = self._priority[position]
        seconds = self._created[position]
        if seconds is not None:
            days = (call.now_seconds - seconds) / 86400.0
            if days > 0.0:
                recency = (
                    1.0
                    - poolsplit.RECENCY_SLOPE * days / poolsplit.RECENCY_HORIZON_DAYS
                )
                base *= (
                    recency
                    if recency > poolsplit.RECENCY_FLOOR
                    else poolsplit.RECENCY_FLOOR
                )
        project = self.entries[position].get("project")
        if project is not None:
            match = project == call.project
            base *= poolsplit.PROJECT_MATCH if match else poolsplit.PROJECT_MISMATCH
        return base


def _usual(pools: Sequence[Pool], now: object) -> bool:
    """Pools with distinct names and a datetime: else the core, which says
    what is wrong."""
    return (
        isinstance(now, datetime)
        and isinstance(pools, (list, tuple))
        and all(isinstance(pool, Pool) for pool in pools)
        and len({pool.name for pool in pools}) == len(pools)
    )


def _below_band(bound: float, last: float) -> bool:
    """Whether ``bound`` is lower than ``last`` by more than the tie band
    (measured away from zero: a negative ``last`` ties downwards too)."""
    if not math.isfinite(last):
        return bound < last
    return bound < last - abs(last) * _TIE_BAND


def _widened(bound: float) -> float:
    """``bound`` raised by ``_MARGIN`` (relative) and ``_TINY`` (absolute, for
    products that underflow): at least the score."""
    return (bound * _MARGIN if bound > 0 else bound / _MARGIN) + _TINY


def _seconds(now: datetime) -> float:
    seconds = poolsplit.parse_created(now)
    assert seconds is not None  # a datetime always has an instant
    return seconds


class _TooMany(Exception):
    """The subset passed a quarter of the namespace: the core gets it all."""


class _Unmodelled(Exception):
    """An entry the index does not model; recall gives the core every entry."""


def _is_number(value: object) -> bool:
    return (
        isinstance(value, (int, float))
        and not isinstance(value, bool)
        and not (isinstance(value, float) and math.isnan(value))
    )


def _is_tag_list(tags: object) -> bool:
    return tags is None or (
        isinstance(tags, (list, tuple)) and all(isinstance(t, str) for t in tags)
    )


def _holds(
    pool: Pool,
    chosen: list[Entry],
    threshold: float | None,
    call: _Call,
    token_counter: TokenCounter,
) -> bool:
    """Whether no entry outside the subset could have changed what the pool
    took: it scores at most ``threshold``, which is below the pool's floor,
    or below the last entry the pool ranked once it was full."""
    if threshold is None:
        return True
    if pool.min_score is not None and threshold < pool.min_score:
        return True
    ranked = [entry for entry in chosen if not poolsplit.is_always(entry)]
    if not ranked:
        return False
    used = sum(poolsplit.entry_cost(entry, token_counter) for entry in ranked)
    if len(ranked) < pool.max_entries and used < pool.max_tokens:
        return False
    last = poolsplit.default_scorer(ranked[-1], call.context, now=call.now)
    return threshold < last
