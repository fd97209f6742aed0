"""Every pool its own room: a recall ranks each pool over its own entries.

The lexical ranking's statistics (a term's idf, the average length), the
relevance floor (the ranking's ``floor x best``: ``best`` is the pool's
best match) and the semantic ranking's normalisation (the cosines' range,
the largest ``r``) and window (neighbours among the pool's entries) are
each taken over the entries one pool admits, never over the namespace.
So what a pool loads never depends on entries it does not admit: a flood
of matching tasks cannot empty the facts pool, and a word that matches a
fact cannot set the floor of the tasks pool (memory/tests/test_pooled.py
proves it on random stores, pools and messages).

An entry is ranked in its *owner's* part: the first pool, in order, whose
types admit its type (:func:`owners`). When the pools admit disjoint types
(the store's defaults, and most pool lists) each pool reads exactly its
own part, through the part's own recall index. A pool that admits a type
an earlier pool admits too takes what that pool leaves (the core's rule),
so it depends on that pool by design: such pool lists are ranked as the
core over every entry would rank them, each entry scored by its owner's
relevance (:meth:`Parts.scorer`), its candidates drawn from the indexes of
the parts it admits (``_index.recall_shared``).

Quarantined entries (``_trust.is_quarantined``: an unvouched writer's) are
owned by the quarantine pool whatever their type (the part named
``_trust.QUARANTINE``): no pool that takes entries by type ever sees them,
and the quarantine pool, with its own caps, sees nothing else.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any, Optional

import poolsplit
from poolsplit import Context, Pool, Scorer, TokenCounter

from ._index import Entry, Index, recall_shared, recall_whole
from ._ranking import (
    Relevance,
    Statistics,
    Times,
    _content,
    floored,
    read_times,
    recall_by_part_scores,
    recall_by_scores,
)
from ._trust import (
    QUARANTINE,
    QUARANTINE_ENTRIES,
    QUARANTINE_TOKENS,
    is_quarantined,
)

__all__ = ["Owners", "Part", "Parts", "lexical", "owners", "separate"]

# A type's owner: the name of the first pool admitting it (None: no pool).
Owners = Callable[[object], Optional[str]]


def owners(pools: Sequence[Pool]) -> Owners:
    """The owner of each type for ``pools``: the first pool admitting it.

    >>> owner = owners([Pool("a", 10, 1, ("x",)), Pool("b", 10, 1)])
    >>> owner("x"), owner("y"), owner(["unhashable"])
    ('a', 'b', 'b')
    """
    named: dict[str, str] = {}
    every: str | None = None
    for pool in pools:
        if pool.name == QUARANTINE:  # owns quarantined entries, no type
            continue
        if pool.types is None:
            every = pool.name
            break
        for kind in pool.types:
            named.setdefault(kind, pool.name)

    def owner(kind: object) -> str | None:
        if isinstance(kind, str):
            return named.get(kind, every)
        return every

    return owner


def lexical(
    message: str,
    now: datetime,
    times: Times | None = None,
) -> Callable[[Part], Relevance]:
    """The lexical ranking's relevance of ``message`` at ``now`` (with the
    ``times`` it names when read already), per part."""

    read = read_times(message, now) if times is None else times  # once

    def make(part: Part) -> Relevance:
        return part.stats.relevance(message, now, times=read)

    return make


def _admits(pool: Pool, kind: object) -> bool:
    return pool.types is None or (isinstance(kind, str) and kind in pool.types)


def separate(pools: Sequence[Pool]) -> bool:
    """Whether no type is admitted by two of ``pools`` (each reads its part)."""
    seen: set[str] = set()
    for pool in pools:
        if pool.types is None:
            return len(pools) == 1
        if not seen.isdisjoint(pool.types):
            return False
        seen.update(pool.types)
    return True


class Part:
    """The entries one pool owns: their statistics and, from the second
    recall that asks, their recall index (built then: a first recall is
    served by the same rule on every entry, ``_index.recall_whole``, as
    building it costs about ten of those). Entries are known by a key (the
    store's ``seq``), and the key order is the order the core is given
    them in. Not thread-safe: the owner changes and reads it under a lock.
    """

    def __init__(self, ranking: str) -> None:
        self.stats = Statistics()
        self._ranking = ranking
        self._held: dict[int, Entry] = {}
        # content -> the keys of the entries holding it: the entries behind
        # the contents the statistics file under a term (``holding``)
        self._keys_of: dict[str, dict[int, None]] = {}
        self._ordered: list[Entry] | None = []
        self._index: Index | None = None
        self._asked = False
        self.vectors: Any = None  # the semantic ranking's (the store's)

    @property
    def entries(self) -> list[Entry]:
        """The part's entries, in key order."""
        ordered = self._ordered
        if ordered is None:
            held = self._held
            ordered = self._ordered = [held[key] for key in sorted(held)]
        return ordered

    def __len__(self) -> int:
        return len(self._held)

    def recall_index(self) -> Index | None:
        """The recall index; None the first time a recall asks."""
        if self._index is None:
            if not self._asked:
                self._asked = True
                return None
            index = (
                Index()
                if self._ranking == "core"
                else Index(terms=self.stats.streams_of)
            )
            index.add_many(list(self._held.items()))
            if self._ranking != "core":
                # What a relevance reads of each term it visits, made once
                # here rather than at each term's first visit by a recall.
                self.stats.by_length_of_every_term()
            self._index = index
        return self._index

    def holding(self, contents: Iterable[str]) -> list[Entry]:
        """The part's entries whose content is one of ``contents``, in key
        order (O(the entries found))."""
        keys_of = self._keys_of
        keys = sorted({key for c in contents for key in keys_of.get(c, ())})
        return [self._held[key] for key in keys]

    def enter(self, items: Sequence[tuple[int, Entry]]) -> None:
        self.stats.add_many(entry for _, entry in items)
        self._held.update(items)
        keys_of = self._keys_of
        for key, entry in items:
            content = _content(entry)
            held = keys_of.get(content)
            if held is None:
                keys_of[content] = {key: None}
            else:
                held[key] = None
        self._ordered = None
        self.vectors = None
        if self._index is not None:
            self._index.add_many(items)

    def leave(self, key: int) -> Entry:
        entry = self._held.pop(key)
        content = _content(entry)
        held = self._keys_of[content]
        del held[key]
        if not held:
            del self._keys_of[content]
        self._ordered = None
        self.vectors = None
        self.stats.remove(entry)
        if self._index is not None:
            self._index.remove(key)
        return entry


class Parts:
    """A namespace's entries split by owner (:func:`owners` of the pools
    they are recalled with), each :class:`Part` kept entry by entry."""

    def __init__(self, owner: Owners, ranking: str) -> None:
        self._owner = owner
        self._ranking = ranking
        self.parts: dict[str | None, Part] = {}
        self._where: dict[int, str | None] = {}  # key -> its part
        self._ordered: list[Entry] | None = []  # every entry, in key order

    def owner(self, entry: Mapping[str, Any]) -> str | None:
        """The part of ``entry``: the quarantine pool's when it is
        quarantined, else its type's owner."""
        if is_quarantined(entry):
            return QUARANTINE
        return self._owner(poolsplit.entry_type(entry))

    def enter(self, items: Iterable[tuple[int, Entry]]) -> None:
        """Add (key, entry) pairs under keys no entry holds."""
        grouped: dict[str | None, list[tuple[int, Entry]]] = {}
        for key, entry in items:
            name = self.owner(entry)
            grouped.setdefault(name, []).append((key, entry))
        for name, batch in grouped.items():
            part = self.parts.get(name)
            if part is None:
                part = self.parts[name] = Part(self._ranking)
            part.enter(batch)
            self._where.update(dict.fromkeys((key for key, _ in batch), name))
        self._ordered = None

    def leave(self, key: int) -> Entry:
        """Remove the entry under ``key`` (KeyError if none); return it."""
        name = self._where.pop(key)
        self._ordered = None
        part = self.parts[name]
        entry = part.leave(key)
        if not len(part):
            del self.parts[name]
        return entry

    def has(self, key: int) -> bool:
        return key in self._where

    def set_aside(self) -> dict[str | None, tuple[Part, Index | None, bool]]:
        """Each part, with its recall index taken out (and whether one was
        asked for): until :meth:`indexes_back`, a change does not touch
        them, and a recall must scan (``scan=True``)."""
        aside = {}
        for name, part in self.parts.items():
            aside[name] = (part, part._index, part._asked)
            part._index = None
        return aside

    def parts_back(
        self, aside: Mapping[str | None, tuple[Part, Index | None, bool]]
    ) -> None:
        """Once every entry that entered since :meth:`set_aside` has left:
        the parts it set aside that were emptied (and dropped) since, put
        back (empty), so that their entries enter them again, not new ones."""
        for name, (part, _, _) in aside.items():
            if name not in self.parts:
                self.parts[name] = part

    def indexes_back(
        self, aside: Mapping[str | None, tuple[Part, Index | None, bool]]
    ) -> None:
        """Put back the indexes :meth:`set_aside` took, once every part
        holds again the very entries it held then."""
        for name, (part, index, asked) in aside.items():
            assert self.parts[name] is part
            part._index, part._asked = index, asked

    def __len__(self) -> int:
        return len(self._where)

    def entry(self, key: int) -> Entry:
        return self.parts[self._where[key]]._held[key]

    def entries(self) -> list[Entry]:
        """Every entry, in key order (sorted once after a change)."""
        if self._ordered is None:
            found = [
                (key, entry)
                for part in self.parts.values()
                for key, entry in part._held.items()
            ]
            found.sort(key=lambda item: item[0])
            self._ordered = [entry for _, entry in found]
        return self._ordered

    def holds(self, name: str | None) -> bool:
        """Whether the part ``name`` holds an entry."""
        return name in self.parts

    def part_entries(self, name: str | None) -> list[Entry]:
        """The entries of part ``name`` (none if it holds none), in key order."""
        part = self.parts.get(name)
        return [] if part is None else part.entries

    def routed(self) -> list[Entry]:
        """The entries the pools that take entries by type rank (every one
        but the quarantined), in key order."""
        if QUARANTINE not in self.parts:
            return self.entries()
        return [e for e in self.entries() if not is_quarantined(e)]

    def relevances(
        self, make: Callable[[Part], Relevance]
    ) -> dict[str | None, Relevance]:
        """Each part's relevance, by owner."""
        return {name: make(part) for name, part in self.parts.items()}

    def recall(
        self,
        pools: Sequence[Pool],
        context: Context,
        *,
        now: datetime,
        token_counter: TokenCounter,
        relevance: Callable[[Part], Relevance] | None = None,
        scan: bool = False,
    ) -> dict[str, list[Entry]]:
        """The pools for ``context``: each pool over its own part, with its
        part's relevance (``relevance(part)``; None: the core's scorer),
        through the part's index, or with ``scan`` by one loop scoring every
        entry of the part, no part's index asked for or built (the semantic
        ranking's: no index bounds it; and the LangGraph adapters' over
        another store, whose kept build serves a few recalls).

        The result is ``poolsplit.retrieve_pools`` of every entry with
        :meth:`scorer` and :meth:`floored` pools (the property tests'
        statement of it)."""
        if QUARANTINE in self.parts and all(p.name != QUARANTINE for p in pools):
            # quarantined entries load in the quarantine pool, never nowhere:
            # its default caps when the caller names none
            quarantine = poolsplit.Pool(
                QUARANTINE, QUARANTINE_TOKENS, QUARANTINE_ENTRIES
            )
            pools = [*pools, quarantine]
        typed = [pool for pool in pools if pool.name != QUARANTINE]
        if not separate(typed):
            got = self._shared(typed, context, now, token_counter, relevance, scan)
        else:
            got = {}
            for pool in typed:
                part = self.parts.get(pool.name)
                if part is None:
                    got[pool.name] = []
                    continue
                got[pool.name] = _one(
                    part, pool, context, now, token_counter, relevance, scan
                )[pool.name]
        if len(typed) == len(pools):
            return got
        # The quarantine pool: over its own part, whatever the types.
        pool = next(pool for pool in pools if pool.name == QUARANTINE)
        part = self.parts.get(QUARANTINE)
        got[QUARANTINE] = (
            []
            if part is None
            else _one(
                part,
                dataclasses.replace(pool, types=None),
                context,
                now,
                token_counter,
                relevance,
                scan,
            )[QUARANTINE]
        )
        return {pool.name: got[pool.name] for pool in pools}

    def _typed_keys(self) -> dict[int, str | None]:
        """Each key's part, but the quarantined entries' (which only the
        quarantine pool takes: a typed pool's walk must not see them)."""
        if QUARANTINE not in self.parts:
            return self._where
        return {key: name for key, name in self._where.items() if name != QUARANTINE}

    def _shared(
        self,
        pools: Sequence[Pool],
        context: Context,
        now: datetime,
        token_counter: TokenCounter,
        relevance: Callable[[Part], Relevance] | None,
        scan: bool,
    ) -> dict[str, list[Entry]]:
        """Pools that admit a type an earlier pool admits: each entry scored
        by its part's relevance (or the core's scorer), by the parts' recall
        indexes together (``_index.recall_shared``: each pool's candidates
        from every part it admits), else (``scan``, or an index that does
        not serve the call) by one loop a part scoring every entry and the
        core on the best (``recall_by_part_scores``)."""
        relevances = {} if relevance is None else self.relevances(relevance)
        floored_pools = self.floored(pools, relevances)
        typed = {n: p for n, p in self.parts.items() if n != QUARANTINE}
        # (with scan, no part is asked for its index: asking builds it)
        indexes = {} if scan else {n: p.recall_index() for n, p in typed.items()}
        if not scan and all(index is not None for index in indexes.values()):
            got = recall_shared(
                {
                    name: (index, relevances.get(name))
                    for name, index in indexes.items()
                    if index is not None
                },
                self._typed_keys(),
                floored_pools,
                context,
                now=now,
                token_counter=token_counter,
            )
            if got is not None:
                return got
        entries = self.routed()
        if relevance is None:
            return poolsplit.retrieve_pools(
                entries, pools, context, token_counter=token_counter, now=now
            )
        parts = [
            (part.stats, part.entries, relevances[name]) for name, part in typed.items()
        ]
        return recall_by_part_scores(
            parts,
            entries,
            floored_pools,
            context,
            token_counter=token_counter,
            now=now,
        )

    def floored(
        self, pools: Sequence[Pool], relevances: Mapping[str | None, Relevance]
    ) -> list[Pool]:
        """``pools``, each with a floor above 0 when a part it admits is
        matched by the message (``Relevance.unmatched`` is 0: a factor of 0
        is then "not loaded"). For separate pools, a pool's own part."""
        owner = self._owner
        # (once a call, not once a pool and part)
        shared = not separate([p for p in pools if p.name != QUARANTINE])
        out = []
        for pool in pools:
            admitted = [
                relevance
                for name, relevance in relevances.items()
                if name == pool.name
                or (
                    shared
                    and QUARANTINE not in (pool.name, name)
                    and any(
                        owner(kind) == name and _admits(pool, kind)
                        for kind in relevance.statistics.types
                    )
                )
            ]
            matched = next((r for r in admitted if r.unmatched == 0.0), None)
            out.append(pool if matched is None else floored([pool], matched)[0])
        return out

    def scorer(
        self, context: Context | None, relevances: Mapping[str | None, Relevance]
    ) -> Scorer:
        """Each entry scored by its owner part's relevance (the core's
        scorer when there is none)."""
        scorers = {
            name: relevance.scorer(context) for name, relevance in relevances.items()
        }
        owner = self.owner
        default = poolsplit.default_scorer

        def score(
            entry: Mapping[str, Any], given: Context | None, /, *, now: datetime
        ) -> float:
            found = scorers.get(owner(entry))
            if found is None:
                return default(entry, given, now=now)
            return found(entry, given, now=now)

        return score


def _one(
    part: Part,
    pool: Pool,
    context: Context,
    now: datetime,
    token_counter: TokenCounter,
    relevance: Callable[[Part], Relevance] | None,
    scan: bool,
) -> dict[str, list[Entry]]:
    """One pool over its own part."""
    ranked = None if relevance is None else relevance(part)
    pools = [pool] if ranked is None else floored([pool], ranked)
    if scan and ranked is None:  # the core's scorer, by one loop
        return recall_whole(
            part.entries, pools, context, now=now, token_counter=token_counter
        )
    if scan:
        # the semantic ranking's: only entries that can score above 0
        narrow = getattr(ranked, "candidates", None)
        return recall_by_scores(
            part.stats,
            part.entries if narrow is None else narrow(part.entries),
            pools,
            context,
            token_counter=token_counter,
            now=now,
            relevance=ranked,
        )
    index = part.recall_index()
    if index is None:
        return recall_whole(
            part.entries,
            pools,
            context,
            now=now,
            token_counter=token_counter,
            relevance=ranked,
        )
    return index.recall(
        pools, context, now=now, token_counter=token_counter, relevance=ranked
    )
