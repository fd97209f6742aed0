"""Recall without scoring the whole namespace: a candidate index per snapshot.

``poolsplit.retrieve_pools`` scores every candidate on every call (a cost
per entry: benchmarks/README.md, "Figures from code comments"), yet a pool
takes a handful. So
:meth:`Index.recall` gives the subset engine (``_subset.recall``: the core
on a subset, a check that it suffices, the subset grown where it does not,
past a quarter of the namespace every entry; the module says why a subset
is enough) each pool's candidates by bound, and the threshold ``t`` of the
rest; the core still decides every score, cost, tie and warning (one rule,
one place). Its results are those of ``retrieve_pools`` on every entry:
tests/test_index.py proves it on random stores, pools and queries.

How the subset is found without scoring everything. An entry's score is
priority x recency x tags x project x message. Entries of one type, priority
and project differ only in recency, which never falls as ``created`` grows:
kept sorted by ``created`` (an insertion or a removal keeps the order),
they come best first at any moment, as long as the message and tags do
not boost them. Those the call can boost (their content has a significant
word of the message, or a tag of the context: found in inverted indexes)
come in streams of their own,
bounded by the largest boost any of them can get (the most message words an
entry shares, counted at C speed); once such a stream offers an entry, the
entry goes back in the heap with the bound of its own shares. Bounds are
computed by the scorer's published rule (``poolsplit.base_score``, which
default_scorer calls), widened by a relative and an absolute margin so that
they are never below the score; benchmarks/index_ab.py is the A/B against
taking them from ``default_scorer`` (3x slower), and a property test checks
them against it. A heap merges a pool's streams, best bound first, and
takes candidates until it has the pool's ``max_entries`` and the next bound
is lower than the last one taken by more than the tie band (a tie is never
split). That next bound is the pool's threshold ``t``: no entry outside the
subset that the pool admits scores above ``t``.

With the lexical ranking (``recall(..., relevance=...)``) the message's
factor is the relevance's: exactly 1 for an entry sharing no term, so the
word streams are the only boosted ones; they are filed by (term, the
entry's number of terms), and each is bounded by the largest factor of its
entries (``Relevance.bounds``), exact for a message of one term. When the
message matches some entry and every pool's floor is above 0 (the store's
recall), an entry sharing no term has a factor of 0 and cannot load: only
the word streams are walked, and each, once first reached, by factor (its
group's largest base times each entry's factor; a stream whose bases
differ, after a few entries by base): on a store whose scores tie but for
the message (default priority, one age, or ages a few days apart) the
walk then takes the few best of a stream instead of every entry its best
bounds.

The index leaves to the core (every entry) what it does not model: an
entry whose scope is set but not ``"always"``, a priority that is not a
number, tags that are not a list of str, an unhashable project, an object
listed twice; a context with another key or unusual values; pools that
leave an always-scope entry unadmitted; and any error the subset's call
raises (so that it names the store's position).
"""

from __future__ import annotations

import bisect
import dataclasses
import heapq
import math
import operator
import sys
from collections import Counter
from collections.abc import (
    Callable,
    Collection,
    Container,
    Iterable,
    Iterator,
    Mapping,
    Sequence,
)
from dataclasses import dataclass
from datetime import datetime
from itertools import chain
from typing import Any

import poolsplit
from poolsplit import Pool, Scorer, TokenCounter

from ._ranking import (
    Relevance,
    Statistics,
    leaves_project_out,
    recall_by_scores,
    split,
    weighed,
)
from ._subset import Candidates, TooMany
from ._subset import recall as subset_recall

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
# The largest tag factor: the rule's, of an entry whose every tag is shared.
_MAX_TAGS = poolsplit.base_score(1.0, None, ("a",), None, 0.0, frozenset("a"))
# The scorer multiplies priority x recency x tags x project (x message), the
# index's bounds priority x recency x project x tags: near the float limit
# the scorer's product may overflow where the index's does not (1.7e308 x
# 1.5 x 0.5 is inf, 1.7e308 x 0.5 x 1.5 is 1.275e308). A partial product
# of the scorer's exceeds its score by at most the inverse of the one
# factor below 1 that can follow a factor above 1 (the project's: recency
# comes before tags, a message's factor is 1 or more), so a bound within
# that (and a factor 2 of slack for rounding) of the largest float is
# widened to infinity: it may bound an infinite score.
_NEAR_LIMIT = (
    sys.float_info.max
    * min(  # the rule's project factors: matched, other (of a priority of 1)
        poolsplit.base_score(1.0, None, None, "a", 0.0, frozenset(), "a"),
        poolsplit.base_score(1.0, None, None, "a", 0.0, frozenset(), "b"),
        1.0,
    )
    / 2.0
)
# With more groups than one per this many entries (distinct float priorities:
# a group each), setting up a pool's streams costs what the core does.
_GROUP_SHARE = 8

Entry = dict[str, Any]
_CONTEXT_KEYS = frozenset(("message", "tags", "project"))
GroupKey = tuple[str, Any, Any]  # (type, base_priority, project)


# A word stream walked by base (its bases differ) is sorted by factor once
# the walk has given _BY_BASE_FIRST of its entries and at least 1/_RENT of
# those left (see _Stream): taking an entry by base costs about what sorting
# _RENT entries does, so the walk pays for the sort before it buys it, and a
# walk by base that ends soon (a spread store) sorts nothing.
_BY_BASE_FIRST = 4
_RENT = 4
# The sort asks ``share`` once per part of entries of equal ``r`` (see
# Index._shares) for a stream of this many entries left or more; fewer are
# asked one by one: an in-process A/B of langgraph_turn's memory step
# against asking one by one, and against 16 and every stream
# (benchmarks/README.md, "Figures from code comments": _SPLIT_FROM).
_SPLIT_FROM = 8
_NONE: frozenset[int] = frozenset()
_KEY = operator.itemgetter(-1)  # a rank's key: its last item


@dataclass
class _Stream:
    """Candidates of one group, best first (rank tuples, the key last);
    ``boost`` None: not boostable (the base is the exact score), else the
    bound's factor over the base."""

    ranks: Sequence[tuple[Any, ...]]
    boost: float | None
    at: int = 0
    # A word stream of a call that loads only word streams' entries
    # (_Call.words_only), ``top`` the largest base of its entries left: bounded
    # by ``top`` x its boost until its head is first popped; then, if its
    # bases tie (its last entry's base is ``top``), walked by factor
    # (``ranks`` sorted by ``r``, best first, each entry bounded by ``top``
    # x its own factor): on a store whose scores tie but for the message
    # the few best are found without walking every entry the stream's
    # largest factor bounds. A stream whose bases differ is walked by base
    # (``by_base``): on mcp_recall's spread store sorting every stream
    # reached cost more than the walk by base (benchmarks/relevance_ab.py
    # --spread; benchmarks/README.md, "Figures from code comments":
    # by_base). Once such a walk has given enough entries (_RENT), what is
    # left is walked by factor under the base of its head (the largest
    # left): within a group the bases differ by recency alone (at most
    # 1 / RECENCY_FLOOR), the factors by exp(RELEVANCE_RATE x r), so on a
    # store written over days (langgraph_turn.py's) the walk by base takes
    # most entries the stream's largest factor bounds (relevance_ab.py's
    # in-process A/B; benchmarks/README.md, "Figures from code comments": _RENT).
    top: float | None = None
    by_factor: bool = False
    by_base: bool = False
    # Walked by factor with every base its top (first reached with bases
    # that tie): an entry's own bound, with no tags in the call, is then
    # the stream's bound of it (Index._take takes it without a push).
    tied: bool = False
    name: Any = None  # a word stream's (its key in the index's words)


# A word stream not yet reached: _Stream's fields, in order.
_Head = tuple[Sequence[tuple[Any, ...]], float, int, float, bool, bool, bool, Any]


@dataclass
class _Call:
    """What one recall shares between its pools."""

    context: Mapping[str, Any]
    now: datetime
    words: frozenset[Any]  # names of the word streams the message boosts
    tags: frozenset[str]
    boosted: Container[int]  # entries the message or the tags may boost
    project: Any
    now_seconds: float
    # The message's relevance factor (see Index._message): the entries it
    # may boost, a bound of the factor of any of them, and of one of them.
    message_boosted: Collection[int] = ()
    message_factor: float = 1.0
    # A bound of the factor of a word stream's entries, per stream name
    # (absent: message_factor).
    word_factor: Mapping[Any, float] = dataclasses.field(default_factory=dict)
    factor_of: Callable[[int], float] = lambda key: 1.0
    # The factor of an entry the message does not boost: 1, or 0 with the
    # lexical ranking when the message matches some entry (its floor).
    unmatched: float = 1.0
    # The scorer the core ranks by (the default one, or the lexical
    # ranking's for this message) and, for the latter, its relevance.
    scorer: Scorer = poolsplit.default_scorer
    relevance: Relevance | None = None
    # Only the word streams can hold an entry a pool loads: the lexical
    # ranking's factor is 0 for every entry sharing no term (the message
    # matches some entry) and every pool's floor is above 0. The groups'
    # and tags' streams are then left out.
    words_only: bool = False
    # A words_only call's word streams by name, made by its first pool's
    # walk: (name, its lists by group, the boost of its bound).
    named_streams: (
        list[tuple[Any, dict[GroupKey, list[tuple[Any, ...]]], float]] | None
    ) = None


class Index:
    """The snapshot's entries grouped and sorted for :meth:`recall`, kept up
    to date entry by entry (:meth:`add`, :meth:`remove`).

    An entry is known by a key (the store's row ``seq``; for a list, its
    position), and the keys' order is the order the core is given the
    entries in. Building from a list is O(n log n); ``add`` and ``remove``
    cost O(g + w) for a group of g entries and w words (a list insertion),
    never a rebuild. Not thread-safe while it changes: the store changes and
    reads it under one lock. ``usable`` is False while some entry falls
    outside what the index models (see the module's last paragraph): recall
    then gives the core every entry.
    """

    def __init__(
        self,
        entries: Sequence[Entry] = (),
        *,
        terms: Callable[[str], frozenset[Any]] = poolsplit.significant_words,
    ) -> None:
        self._terms = terms  # a content's terms, what the word streams hold
        self._entries: dict[int, Entry] = {}
        self._ordered: list[Entry] | None = []
        self._objects: Counter[int] = Counter()  # id() of each entry object
        self._unmodelled: set[int] = set()
        self._special: set[int] = set()  # always-scope: always in the subset
        self._created: dict[int, float | None] = {}
        self._priority: dict[int, float] = {}
        self._content_words: dict[int, frozenset[Any]] = {}
        self._texts: dict[int, str] = {}  # the text the scorer reads
        self._tag_sets: dict[int, frozenset[str]] = {}
        self._place: dict[int, tuple[GroupKey, tuple[Any, ...]]] = {}
        self._members: dict[GroupKey, list[tuple[Any, ...]]] = {}  # best first
        self._by_type: dict[str, dict[GroupKey, None]] = {}
        self._words: dict[Any, dict[GroupKey, list[tuple[Any, ...]]]] = {}
        self._word_hits: dict[Any, set[int]] = {}
        self._tags: dict[str, dict[GroupKey, list[tuple[Any, ...]]]] = {}
        self._tag_hits: dict[str, set[int]] = {}
        for position, entry in enumerate(entries):
            self._insert(position, entry, insort=False)
        for ranks in self._lists():
            ranks.sort()

    @property
    def usable(self) -> bool:
        """Whether every entry is one the index models (and no object is
        given twice: the core's rule)."""
        return not self._unmodelled and len(self._objects) == len(self._entries)

    @property
    def entries(self) -> list[Entry]:
        """Every entry, in key order (what the core is given)."""
        ordered = self._ordered
        if ordered is None:
            ordered = [self._entries[key] for key in sorted(self._entries)]
            self._ordered = ordered
        return ordered

    def __len__(self) -> int:
        return len(self._entries)

    def add(self, key: int, entry: Entry) -> None:
        """Add an entry under a key no entry holds."""
        if key in self._entries:
            raise ValueError(f"key {key!r} is already in the index")
        self._insert(key, entry, insort=True)

    def has(self, key: int) -> bool:
        """Whether an entry is under ``key``."""
        return key in self._entries

    def entry(self, key: int) -> Entry:
        """The entry under ``key``."""
        return self._entries[key]

    def add_many(self, entries: Sequence[tuple[int, Entry]]) -> None:
        """``add`` each (key, entry); many at once (past an eighth of the
        index) are appended and every list sorted once instead."""
        for key, _ in entries:
            if key in self._entries:
                raise ValueError(f"key {key!r} is already in the index")
        bulk = len(entries) * 8 > len(self._entries)
        for key, entry in entries:
            self._insert(key, entry, insort=not bulk)
        if bulk:
            for ranks in self._lists():
                ranks.sort()

    def remove(self, key: int) -> None:
        """Remove the entry under ``key`` (KeyError if none)."""
        entry = self._entries.pop(key)
        self._ordered = None
        self._objects[id(entry)] -= 1
        if not self._objects[id(entry)]:
            del self._objects[id(entry)]
        if key in self._unmodelled:
            self._unmodelled.discard(key)
            return
        if key in self._special:
            self._special.discard(key)
            return
        group, rank = self._place.pop(key)
        _discard(self._members[group], rank)
        if not self._members[group]:
            del self._members[group]
            del self._by_type[group[0]][group]
            if not self._by_type[group[0]]:
                del self._by_type[group[0]]
        for names, index, hits in (
            (self._content_words.pop(key), self._words, self._word_hits),
            (self._tag_sets.pop(key), self._tags, self._tag_hits),
        ):
            for name in names:
                by_group = index[name]
                _discard(by_group[group], rank)
                if not by_group[group]:
                    del by_group[group]
                    if not by_group:
                        del index[name]
                hits[name].discard(key)
                if not hits[name]:
                    del hits[name]
        del self._created[key], self._priority[key], self._texts[key]

    def _lists(self) -> Iterator[list[tuple[Any, ...]]]:
        yield from self._members.values()
        for index in (self._words, self._tags):
            for by_group in index.values():
                yield from by_group.values()

    def _insert(self, key: int, entry: Entry, *, insort: bool) -> None:
        self._entries[key] = entry
        self._ordered = None
        self._objects[id(entry)] += 1
        if not isinstance(entry, Mapping):
            self._unmodelled.add(key)  # the core names it
            return
        scope = entry.get("scope")
        if scope is None:
            try:
                self._rank(key, entry, insort)
            except _Unmodelled:
                self._unmodelled.add(key)
        elif scope == "always" and isinstance(poolsplit.entry_type(entry), str):
            self._special.add(key)
        else:
            self._unmodelled.add(key)

    def _rank(self, key: int, entry: Entry, insort: bool) -> None:
        """Put a ranked entry in its group and in the word and tag indexes
        (checked whole before anything changes)."""
        kind = poolsplit.entry_type(entry)
        found = poolsplit.entry_features(entry)  # the core's fast-path decision
        if found is None or not isinstance(kind, str):
            raise _Unmodelled
        priority, seconds, tags, project = found
        content = _content(entry)
        group: GroupKey = (kind, priority, project)
        self._priority[key] = priority
        self._created[key] = seconds
        self._texts[key] = content
        if priority < 0:  # a negative priority: the oldest scores most
            rank: tuple[Any, ...] = (seconds is None, seconds or 0.0, key)
        else:  # no ``created`` (no decay) first, then the newest
            rank = (seconds is not None, -(seconds or 0.0), key)
        self._place[key] = (group, rank)
        put = bisect.insort if insort else list.append
        members = self._members.get(group)
        if members is None:
            members = self._members[group] = []
            self._by_type.setdefault(kind, {})[group] = None
        put(members, rank)
        words = self._content_words[key] = self._terms(content)
        tag_set = self._tag_sets[key] = frozenset(tags or ())
        for names, index, hits in (
            (words, self._words, self._word_hits),
            (tag_set, self._tags, self._tag_hits),
        ):
            for name in names:
                put(index.setdefault(name, {}).setdefault(group, []), rank)
                hits.setdefault(name, set()).add(key)

    def recall(
        self,
        pools: Sequence[Pool],
        context: Mapping[str, Any],
        *,
        now: datetime,
        token_counter: TokenCounter,
        relevance: Relevance | None = None,
    ) -> dict[str, list[Entry]]:
        """``poolsplit.retrieve_pools(entries, pools, context, ...)``, the same
        result, reading a few entries per pool instead of every one.

        ``relevance`` (the lexical ranking's, for this context's message,
        over statistics that count exactly this index's entries, and an
        index built with ``terms=`` its statistics' terms): the scorer is
        then ``relevance.scorer(context)``, base x relevance factor, and
        the word streams are the message's terms.
        """
        if not (
            self.usable
            # a time in the message boosts entries by their date: no stream
            # bounds that, so one loop scores every entry
            and (relevance is None or not relevance.windows)
            and len(self._members) * _GROUP_SHARE <= len(self._entries)
            and _usual(pools, now)
            and self._always_admitted(pools)
        ):
            return self._whole(pools, context, now, token_counter, relevance)
        call = self._call(context, now, relevance, pools)
        if call is None:
            return self._whole(pools, context, now, token_counter, relevance)
        walk = _Walk(self, call, pools, token_counter)
        return subset_recall(walk, pools, token_counter)

    def _call(
        self,
        context: Mapping[str, Any],
        now: datetime,
        relevance: Relevance | None = None,
        pools: Sequence[Pool] = (),
    ) -> _Call | None:
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
            words=(
                poolsplit.significant_words(message or "")
                if relevance is None
                else frozenset(relevance.bounds())
            ),
            tags=frozenset(tags or ()),
            boosted=(),
            project=context.get("project"),
            now_seconds=_seconds(now),
        )
        if relevance is not None:
            call.relevance = relevance
            call.scorer = relevance.scorer(context)
            call.words_only = (
                bool(pools)
                and relevance.unmatched == 0.0
                and all(
                    pool.min_score is not None and pool.min_score > 0.0
                    for pool in pools
                )
            )
        self._message(call)
        call.boosted = call.message_boosted
        if call.tags and not call.words_only:
            tagged = set(call.message_boosted)
            for tag in call.tags:
                tagged.update(self._tag_hits.get(tag, ()))
            call.boosted = tagged
        return call

    def _message(self, call: _Call) -> None:
        """The message's factor, as the index bounds it: the one place a
        relevance rule plugs in. It sets the entries the message may boost
        (only entries sharing a significant word of it: the word streams
        hold exactly those), a bound of the factor any of them gets, and a
        bound of one entry's factor. The default scorer's: 1 +
        MESSAGE_BOOST x shared words / message words; the most words any
        entry shares is counted at C speed, one entry's on demand. The
        lexical ranking's: the relevance's own factors, 1 exactly for an
        entry sharing no term when the message matches none, else 0
        (``relevance.unmatched``: only the term streams' entries are
        boosted), each at most ``relevance.most``."""
        relevance = call.relevance
        if relevance is not None:
            hits = self._word_hits
            held = [hits[term] for term in call.words if term in hits]
            # A walk of the word streams alone needs no union of every
            # term's entries (thousands at 10,000 entries): each entry it
            # bounds comes from a word stream, so is boosted
            # (_boosted_bound); benchmarks/relevance_ab.py --off union
            # (benchmarks/README.md, "Figures from code comments": union).
            call.message_boosted = (
                _Union(held) if call.words_only else set().union(*held)
            )
            call.unmatched = relevance.unmatched
            if call.message_boosted:
                entries, factor = self._entries, relevance.factor
                call.message_factor = relevance.most
                call.word_factor = relevance.bounds()
                call.factor_of = lambda key: factor(entries[key])
            return
        shared = Counter(
            chain.from_iterable(self._word_hits.get(word, ()) for word in call.words)
        )
        call.message_boosted = shared  # its keys: a dict is a set here
        if not shared:
            return
        count = len(call.words)
        most = max(shared.values())
        call.message_factor = 1.0 + poolsplit.MESSAGE_BOOST * most / count
        call.factor_of = lambda key: 1.0 + poolsplit.MESSAGE_BOOST * shared[key] / count

    def _always_admitted(self, pools: Sequence[Pool]) -> bool:
        """Whether some pool admits every always-scope entry: else the core
        warns of the others by their position, which must be the store's."""
        if any(pool.types is None for pool in pools):
            return True
        admitted = {kind for pool in pools for kind in pool.types or ()}
        return all(
            poolsplit.entry_type(self._entries[key]) in admitted
            for key in self._special
        )

    def _whole(
        self,
        pools: Sequence[Pool],
        context: Mapping[str, Any],
        now: datetime,
        token_counter: TokenCounter,
        relevance: Relevance | None,
    ) -> dict[str, list[Entry]]:
        """Every entry to the core: by the default scorer (through
        :meth:`_core`, which the tests count), or the lexical ranking's
        one-loop scan (:func:`recall_whole`)."""
        if relevance is None:
            return self._core(self.entries, pools, context, now, token_counter)
        return recall_whole(
            self.entries,
            pools,
            context,
            now=now,
            token_counter=token_counter,
            relevance=relevance,
        )

    def _core(
        self,
        entries: Sequence[Entry],
        pools: Sequence[Pool],
        context: Mapping[str, Any],
        now: datetime,
        token_counter: TokenCounter,
        scorer: Scorer = poolsplit.default_scorer,
    ) -> dict[str, list[Entry]]:
        return poolsplit.retrieve_pools(
            entries, pools, context, scorer=scorer, token_counter=token_counter, now=now
        )

    def _take(
        self, pool: Pool, wanted: int, call: _Call, subset: set[int], limit: int
    ) -> float | None:
        """Add the pool's ``wanted`` best candidates by bound (and every one
        tied with the last) to ``subset``; return the best bound left out
        (None when none is). Raises TooMany once ``subset`` passes ``limit``
        (a tie of thousands: the core reads them faster than this loop)."""
        floor = pool.min_score
        # (-bound, kind, number): kind 0 is a stream's head (number: the
        # stream), 1 a boosted entry with the bound of its own shares
        # (number: its key), given up by a stream whose loose bound (the
        # largest boost) came first.
        heap: list[tuple[float, int, int]] = []
        streams: list[_Stream | None]
        pending: list[_Head] = []
        if call.words_only:
            pending, heap = self._word_streams(self._groups(pool), call, floor)
            streams = [None] * len(pending)
        else:
            streams = list(self._streams(self._groups(pool), call, heap, floor))
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
                if stream is None:  # a word stream first reached
                    stream = streams[number] = _Stream(*pending[number])
                if stream.top is not None and not (stream.by_factor or stream.by_base):
                    self._by_factor(stream, call)
                    self._push(heap, number, stream, call, floor)
                    continue
                key = stream.ranks[stream.at][-1]
                stream.at += 1
                self._push(heap, number, stream, call, floor)
                if stream.boost is not None and not self._offered(
                    heap, key, stream, call, floor, bounded
                ):
                    continue
            else:
                key = number
            if key not in seen:
                seen.add(key)
                subset.add(key)
                last = bound
                if len(subset) > limit:
                    raise TooMany
        return None

    def _offered(
        self,
        heap: list[tuple[float, int, int]],
        key: int,
        stream: _Stream,
        call: _Call,
        floor: float | None,
        bounded: set[int],
    ) -> bool:
        """Whether ``key``, a boosted stream's head just popped, is taken now;
        else it goes back in the heap with the bound of its own shares (the
        first time a stream offers it: ``bounded``)."""
        if key in bounded:
            return False
        bounded.add(key)
        if stream.tied and not call.tags:
            # Its own bound is the one popped, the heap's largest (its base
            # the stream's top, its factor the one its stream bounded it by,
            # no tags): pushed back, it would be taken next, or after other
            # entries of that bound, each taken too (a tie is never split).
            # (benchmarks/README.md, warm38)
            return True
        own = self._boosted_bound(key, call)
        if not _under(own, floor):
            heapq.heappush(heap, (-_widened(own), 1, key))
        return False

    def _groups(self, pool: Pool) -> Sequence[GroupKey]:
        """The groups of the types the pool admits."""
        return (
            list(self._members)
            if pool.types is None
            else [g for kind in pool.types for g in self._by_type.get(kind, ())]
        )

    def _streams(
        self,
        groups: Sequence[GroupKey],
        call: _Call,
        heap: list[tuple[float, int, int]],
        floor: float | None,
    ) -> list[_Stream]:
        """The streams of a call that walks every stream, their heads pushed
        on ``heap``: each group's members unboosted, then each of the call's
        words and tags in each group, boosted by the most that word or tag
        can multiply a score by."""
        streams = [_Stream(self._members[g], None) for g in groups]
        tag_factor = _MAX_TAGS if call.tags else 1.0
        word_factor = call.word_factor
        for names, index, most in (
            (call.words, self._words, call.message_factor * tag_factor),
            (call.tags, self._tags, _MAX_TAGS * call.message_factor),
        ):
            for name in names:
                by_group = index.get(name, {})
                boost = most
                if index is self._words and name in word_factor:
                    boost = word_factor[name] * tag_factor
                streams.extend(
                    _Stream(by_group[g], boost) for g in groups if g in by_group
                )
        for number, stream in enumerate(streams):
            self._push(heap, number, stream, call, floor)
        return streams

    def _word_streams(
        self, groups: Sequence[GroupKey], call: _Call, floor: float | None
    ) -> tuple[list[_Head], list[tuple[float, int, int]]]:
        """The word streams alone (``call.words_only``), each with the largest
        base of its group (its first member's: the group's order is the
        base's; a group whose bases are 0 or less loads nothing), and the
        heap of their heads' bounds, as :meth:`_push` bounds a stream not yet
        reached. A stream is made (``_Stream(*head)``) when the walk first
        reaches it: at 10,000 entries a pool's walk reaches about one in
        four (benchmarks/README.md, warm38)."""
        members = self._members
        tops = [
            (g, top)
            for g in groups
            if (top := self._base(members[g][0][-1], call)) > 0.0
        ]
        heads: list[_Head] = []
        heap: list[tuple[float, int, int]] = []
        if not tops:
            return heads, heap
        named = call.named_streams
        if named is None:  # the call's first pool: each name's groups, boost
            tag_factor = _MAX_TAGS if call.tags else 1.0
            word_factor, most = call.word_factor, call.message_factor
            words = self._words
            named = call.named_streams = [
                (name, by_group, word_factor.get(name, most) * tag_factor)
                for name in call.words
                if (by_group := words.get(name)) is not None
            ]
        for name, by_group, boost in named:
            for g, top in tops:
                ranks = by_group.get(g)
                if ranks is not None:
                    bound = weighed(top, boost)
                    if not _under(bound, floor):
                        heap.append((-_widened(bound), 0, len(heads)))
                    heads.append((ranks, boost, 0, top, False, False, False, name))
        heapq.heapify(heap)  # pops what pushing each would
        return heads, heap

    def _by_factor(self, stream: _Stream, call: _Call) -> None:
        """Sort the stream's entries left by their message factor, best first,
        by ``r``, which the factor never falls with (relevance_factor), each
        bounded by ``top``, the base of the head (the largest left: the
        stream was by base); or, first reached with bases that do not tie,
        keep it by base (``by_base``: :meth:`_push` sorts it later)."""
        relevance = call.relevance
        assert relevance is not None  # a words_only call's
        ranks = stream.ranks
        if not stream.by_base:
            if self._base(ranks[-1][-1], call) != stream.top:
                stream.by_base = True  # its bases do not tie
                return
            stream.tied = True
        else:
            stream.top = self._base(ranks[stream.at][-1], call)
            stream.by_base = False
        left = ranks[stream.at :]
        share = self._shares(stream.name, left, relevance)
        stream.ranks = sorted(left, key=lambda rank: -share(rank[-1]))
        stream.at = 0
        stream.by_factor = True

    def _shares(
        self, name: Any, ranks: Sequence[tuple[Any, ...]], relevance: Relevance
    ) -> Callable[[int], float]:
        """``relevance.share`` of each entry of a word stream's ``ranks``, by
        key. In an index filed by the relevance's own ``streams_of``, the
        stream ``(term, length)`` holds contents of one length, and a
        content's ``r`` depends only on its length and the message's terms
        it holds (:func:`_ranking.split`): its entries are split by the
        message's other terms at C speed and ``share`` asked once a part
        (a recall sorts a few hundred entries at 10,000: benchmarks/README.md,
        warm38); else once an entry."""
        entries, share = self._entries, relevance.share
        if len(ranks) < _SPLIT_FROM:
            return lambda key: share(entries[key])
        # Most entries a walk sorts hold a content the relevance weighed
        # already (its rarest term's): their shares read at C speed, a
        # lookup each (benchmarks/README.md, warm38).
        keys = list(map(_KEY, ranks))
        found = list(
            map(relevance.weighed_shares.get, map(self._texts.__getitem__, keys))
        )
        if None not in found:
            return dict(zip(keys, found)).__getitem__
        terms = self._terms
        if not (
            getattr(terms, "__func__", None) is Statistics.streams_of
            and getattr(terms, "__self__", None) is relevance.statistics
        ):
            return lambda key: share(entries[key])
        term, length = name
        hits = self._word_hits
        holders = [
            hits.get((other, length), _NONE)
            for other in relevance.weights
            if other != term
        ]
        by_key: dict[int, float] = {}
        for part in split(set(keys), holders):
            by_key.update(dict.fromkeys(part, share(entries[next(iter(part))])))
        return by_key.__getitem__

    def _push(
        self,
        heap: list[tuple[float, int, int]],
        number: int,
        stream: _Stream,
        call: _Call,
        floor: float | None,
    ) -> None:
        """Push the stream's next candidate's bound; a plain stream passes
        over boosted entries (their own streams hold them). A bound below
        the pool's ``floor`` is not pushed: no entry of the stream from
        there on reaches the floor (its bounds never rise), so none loads."""
        ranks = stream.ranks
        if stream.top is not None:  # a word stream of a words_only call
            if stream.at == len(ranks):
                return
            assert stream.boost is not None
            if stream.by_base and stream.at >= max(
                _BY_BASE_FIRST, (len(ranks) - stream.at) // _RENT
            ):
                self._by_factor(stream, call)
                ranks = stream.ranks
            bound = weighed(stream.top, stream.boost)
            if stream.by_base:
                bound = weighed(self._base(ranks[stream.at][-1], call), stream.boost)
            elif stream.by_factor:  # no base left is above top
                tags = _MAX_TAGS if call.tags else 1.0
                factor = call.factor_of(ranks[stream.at][-1])
                bound = weighed(stream.top, factor * tags)
            if not _under(bound, floor):
                heapq.heappush(heap, (-_widened(bound), 0, number))
            return
        if stream.boost is None:
            while stream.at < len(ranks) and ranks[stream.at][-1] in call.boosted:
                stream.at += 1
        if stream.at == len(ranks):
            return
        base = self._base(ranks[stream.at][-1], call)
        # A base of 0 or less is bounded by the least factor: that of an
        # unboosted entry (1, or 0 under the lexical ranking's floor).
        boost = call.unmatched if stream.boost is None or base <= 0 else stream.boost
        bound = weighed(base, boost)
        if not _under(bound, floor):
            heapq.heappush(heap, (-_widened(bound), 0, number))

    def _boosted_bound(self, key: int, call: _Call) -> float:
        """A bound of a boosted entry's score: its base times the message and
        tag factors of its own shares (each at least the scorer's factor)."""
        base = self._base(key, call)
        # Walking the word streams alone, every entry comes from one: boosted.
        boosted = call.words_only or key in call.message_boosted
        factor = call.factor_of(key) if boosted else call.unmatched
        if base <= 0:
            return weighed(base, factor)  # tags multiply by 1 or more: lower still
        tags = self._tag_sets[key]
        if tags and call.tags:  # the rule's tag factor alone: of a priority of 1
            factor *= poolsplit.base_score(1.0, None, tags, None, 0.0, call.tags)
        return weighed(base, factor)

    def _base(self, key: int, call: _Call) -> float:
        """The score without the message and tags: ``poolsplit.base_score``
        of the priority, ``created`` and project, with no tags (a factor of
        1: :meth:`_boosted_bound` bounds them). Not yet a bound: the scorer
        multiplies the tags in before the project, which may round higher, so
        callers widen what they push (:func:`_widened`)."""
        project = self._entries[key].get("project")
        if call.relevance is not None and leaves_project_out(call.context):
            project = None
        return poolsplit.base_score(
            self._priority[key],
            self._created[key],
            None,
            project,
            call.now_seconds,
            call.tags,  # not read: no tags
            call.project,
        )


class _Walk(Candidates[Entry]):
    """One call's candidates for the subset engine: each pool's by bound,
    from the index's sorted streams (:meth:`Index._take`)."""

    def __init__(
        self, index: Index, call: _Call, pools: Sequence[Pool], counter: TokenCounter
    ) -> None:
        self._index, self._call = index, call
        self._pools, self._counter = pools, counter
        self.size = len(index)

    def always(self) -> Iterable[int]:
        return self._index._special

    def take(
        self, pool: Pool, wanted: int, subset: set[int], limit: int
    ) -> float | None:
        return self._index._take(pool, wanted, self._call, subset, limit)

    def core(self, keys: Sequence[int] | None) -> dict[str, list[Entry]]:
        index, call = self._index, self._call
        entries = index.entries if keys is None else [index._entries[k] for k in keys]
        return index._core(
            entries, self._pools, call.context, call.now, self._counter, call.scorer
        )

    def score(self, entry: Entry) -> float:
        call = self._call
        return call.scorer(entry, call.context, now=call.now)

    def whole(self) -> dict[str, list[Entry]]:
        call = self._call
        return self._index._whole(
            self._pools, call.context, call.now, self._counter, call.relevance
        )


def recall_shared(
    indexes: Mapping[Any, tuple[Index, Relevance | None]],
    where: Mapping[int, Any],
    pools: Sequence[Pool],
    context: Mapping[str, Any],
    *,
    now: datetime,
    token_counter: TokenCounter,
) -> dict[str, list[Entry]] | None:
    """``retrieve_pools`` of the entries of several indexes (``where``: the
    name of the index holding each key; keys unique across them), each
    entry scored by its own index's relevance (None: the default scorer):
    pools that admit a type an earlier pool admits, the entries of each type
    kept in the index of the first pool admitting it (``_pooled``). Each
    pool's candidates are each index's best by bound among the entries the
    pool admits (:meth:`Index._take`), its threshold the largest of theirs;
    the subset engine checks that they suffice. None when an index does not
    model its entries or this call (the caller scores every entry)."""
    if not indexes or not _usual(pools, now):
        return None
    calls: dict[Any, tuple[Index, _Call]] = {}
    for name, (index, relevance) in indexes.items():
        if not (
            index.usable
            and (relevance is None or not relevance.windows)
            and len(index._members) * _GROUP_SHARE <= len(index._entries)
            and index._always_admitted(pools)
        ):
            return None
        admitting = [p for p in pools if p.types is None or index._groups(p)]
        call = index._call(context, now, relevance, admitting)
        if call is None:
            return None
        calls[name] = (index, call)
    shared = _Shared(calls, where, pools, context, now, token_counter)
    return subset_recall(shared, pools, token_counter)


class _Shared(Candidates[Entry]):
    """One call's candidates over several indexes (:func:`recall_shared`)."""

    def __init__(
        self,
        calls: Mapping[Any, tuple[Index, _Call]],
        where: Mapping[int, Any],
        pools: Sequence[Pool],
        context: Mapping[str, Any],
        now: datetime,
        counter: TokenCounter,
    ) -> None:
        self._calls, self._where = calls, where
        self._pools, self._counter = pools, counter
        self._context, self._now = context, now
        self.size = sum(len(index) for index, _ in calls.values())
        self._scorers: dict[int, Scorer] = {}  # id(entry) -> its index's scorer

    def always(self) -> Iterable[int]:
        return [key for index, _ in self._calls.values() for key in index._special]

    def take(
        self, pool: Pool, wanted: int, subset: set[int], limit: int
    ) -> float | None:
        left: float | None = None
        for index, call in self._calls.values():
            bound = index._take(pool, wanted, call, subset, limit)
            if bound is not None and (left is None or bound > left):
                left = bound
        return left

    def core(self, keys: Sequence[int] | None) -> dict[str, list[Entry]]:
        calls, where = self._calls, self._where
        chosen = sorted(where) if keys is None else keys
        entries = []
        scorers = self._scorers = {}
        for key in chosen:
            index, call = calls[where[key]]
            entry = index._entries[key]
            entries.append(entry)
            scorers[id(entry)] = call.scorer
        return poolsplit.retrieve_pools(
            entries,
            self._pools,
            self._context,
            scorer=self._score,
            token_counter=self._counter,
            now=self._now,
        )

    def _score(
        self,
        entry: Mapping[str, Any],
        context: Mapping[str, Any] | None,
        /,
        *,
        now: datetime,
    ) -> float:
        return self._scorers[id(entry)](entry, context, now=now)

    def score(self, entry: Entry) -> float:
        return self._score(entry, self._context, now=self._now)


def _discard(ranks: list[tuple[Any, ...]], rank: tuple[Any, ...]) -> None:
    """Delete ``rank`` from a sorted list holding it (ranks are unique: the
    key is their last element)."""
    at = bisect.bisect_left(ranks, rank)
    if at == len(ranks) or ranks[at] != rank:
        raise KeyError(rank)
    del ranks[at]


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


def _under(bound: float, floor: float | None) -> bool:
    """Whether no score ``bound`` bounds (not yet widened) reaches ``floor``:
    a bound of 0 or less bounds scores of 0 or less (a product's sign is
    exact), else the widened bound is below the floor."""
    if floor is None:
        return False
    return (bound <= 0.0 < floor) or _widened(bound) < floor


def _widened(bound: float) -> float:
    """``bound`` raised by ``_MARGIN`` (relative) and ``_TINY`` (absolute, for
    products that underflow), and to infinity near the float limit (the
    scorer's order of factors may overflow there: ``_NEAR_LIMIT``): at
    least the score."""
    if bound > _NEAR_LIMIT:
        return math.inf
    return (bound * _MARGIN if bound > 0 else bound / _MARGIN) + _TINY


def _seconds(now: datetime) -> float:
    seconds = poolsplit.parse_created(now)
    assert seconds is not None  # a datetime always has an instant
    return seconds


class _Union(Collection[int]):
    """The union of some sets, built only if iterated or counted."""

    def __init__(self, sets: list[set[int]]) -> None:
        self._sets = sets

    def __contains__(self, key: object) -> bool:
        return any(key in found for found in self._sets)

    def __iter__(self) -> Iterator[int]:
        return iter(set().union(*self._sets))

    def __len__(self) -> int:
        return len(set().union(*self._sets))

    def __bool__(self) -> bool:
        return any(self._sets)


class _Unmodelled(Exception):
    """An entry the index does not model; recall gives the core every entry."""


def _content(entry: Entry) -> str:
    """The text the scorer reads, by the core's rule: missing or None is "",
    any other non-str its ``str()`` (an imported ``"content": 4711`` is
    "4711"); a ``str()`` that fails is left to the core, which names it."""
    content = entry.get("content")
    if isinstance(content, str):
        return content
    if content is None:
        return ""
    try:
        return str(content)
    except Exception:
        raise _Unmodelled from None


def recall_whole(
    entries: Sequence[Entry],
    pools: Sequence[Pool],
    context: Mapping[str, Any],
    *,
    now: datetime,
    token_counter: TokenCounter,
    relevance: Relevance | None = None,
) -> dict[str, list[Entry]]:
    """What :meth:`Index.recall` returns for these entries (in key order),
    without an index: every entry to the core, by the default scorer, or
    the lexical ranking's one-loop scan (``_ranking.recall_by_scores``, the
    same result). A snapshot's first recall is served here while its index
    is not built yet."""
    if relevance is None:
        return poolsplit.retrieve_pools(
            entries,
            pools,
            context,
            scorer=poolsplit.default_scorer,
            token_counter=token_counter,
            now=now,
        )
    stats = relevance.statistics
    assert isinstance(stats, Statistics)  # the only kind that builds one
    return recall_by_scores(
        stats,
        entries,
        pools,
        context,
        token_counter=token_counter,
        now=now,
        relevance=relevance,
    )


def _is_tag_list(tags: object) -> bool:
    return tags is None or (
        isinstance(tags, (list, tuple)) and all(isinstance(t, str) for t in tags)
    )
