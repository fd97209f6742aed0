"""The store's default ranking: the core's signals times a BM25+ relevance.

A recall scores an entry ``base x g(r, best)``: ``base`` is
``poolsplit.default_scorer`` on the context without its message (priority x
recency x tags x project, the core's rule, read through its public scorer),
except that a context naming no project leaves every entry's project out
(the core's x0.5 is for a *different* project); ``r`` in ``[0, 1)`` is the
entry's BM25+ score for the message divided by the largest BM25+ score any
entry could reach for it, ``best`` the largest ``r`` of the recall's
entries, and :func:`relevance_factor` is ``g``, the one rule of the message:

- ``best == 0`` (the message tells no entry apart): 1 for every entry, the
  base orders them (freshest first among equals);
- ``r < FLOOR x best``: 0, and the store gives every pool a floor above 0,
  so such an entry (sharing nothing, or much less than the best) is not
  loaded;
- else ``exp(RELEVANCE_RATE x r)``: relevance decides, and recency,
  priority, tags and project order entries within a band of ``r``.

The terms are the core's significant words (``poolsplit.significant_words``),
each reduced to its Porter stem; the statistics (how many entries, their
total length, each term's document frequency) are the namespace's, kept by
:class:`Statistics` as entries enter and leave it, never by rereading the
namespace. memory/README.md's "Ranking" section has the formula;
tests/test_ranking.py checks this module against a reimplementation written
from it.

Why these choices (benchmarks/locomo.py on the LoCoMo development file, 760
questions, hit@5 / hit within 200 tokens): the core's message term 0.530 /
0.521; plain BM25 (k1 1.2, b 0.75) 0.554 / 0.559; with Porter stems 0.592 /
0.603; BM25+ (Lv and Zhai 2011, delta 1, the paper's default) on stems
0.622 / 0.609. A term counted once per entry (the core's word sets) scores as
the term frequencies do on this data (0.622 / 0.609 against 0.621 / 0.609),
so an entry's terms are a set and its length the number of distinct terms.
The exponential factor: see :data:`RELEVANCE_RATE`.
"""

from __future__ import annotations

import dataclasses
import math
from bisect import bisect_right
from collections.abc import Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from datetime import datetime
from typing import Any, ClassVar, Final, Protocol, TypeVar

import poolsplit
from poolsplit import Context, Entry, Pool, Scorer

from ._terms import Times, _content, read_times, untimed

__all__ = [
    "DELTA",
    "FLOOR",
    "K1",
    "RELEVANCE_RATE",
    "TIME_FACTOR",
    "B",
    "Relevance",
    "floored",
    "leaves_project_out",
    "relevance_factor",
    "split",
    "weighed",
]

# BM25+'s parameters: Robertson's k1 and b as Lucene sets them, and Lv and
# Zhai's delta (the lower bound a shared term adds, however long the entry).
K1: Final = 1.2
B: Final = 0.75
DELTA: Final = 1.0
# The relevance factor is exp(RELEVANCE_RATE x r): a band of ln(3.33) / 30
# = 0.04 in r outweighs the whole recency range (0.3 to 1), a doubling of
# priority 0.023. 30 keeps recency and priority meaningful within a band at
# a small cost of hit@5 against recency flat (benchmarks/locomo.py --dated;
# benchmarks/README.md, "Figures from code comments": RELEVANCE_RATE).
RELEVANCE_RATE: Final = 30.0
# An entry whose r is below FLOOR x the best entry's is not loaded when the
# message matches some entry: the largest floor that keeps LoCoMo's hit@5
# (benchmarks/locomo.py --dated; benchmarks/README.md, "Figures from code
# comments": FLOOR); LoCoMo's turns nearly all share a term with the
# question, a real store's unrelated memories ("the dog is called
# Biscuit") do not.
FLOOR: Final = 0.2
# A time the message names multiplies the factor of an entry created then
# (the window, and up to TIME_SLACK after it: a memory of an event is
# written at or after it) by TIME_FACTOR, worth 0.2 of r: the window steers
# within the relevant entries and alone orders a message that names only a
# time. The weight and keeping the phrase's words as terms were chosen on
# LoCoMo's questions naming a time (benchmarks/locomo.py --dated;
# benchmarks/README.md, "Figures from code comments": TIME_FACTOR).
TIME_FACTOR: Final = math.exp(RELEVANCE_RATE * 0.2)
# The best an entry can do per shared term: its length-normalised part at
# its largest (a length of 0) plus delta is below this (b < 1).
_TERM_CEILING: Final = K1 + 1.0 + DELTA
# Relevance's bound of what unvisited terms add is widened by this: sums of
# a few idf in another order differ by some ulps (2**-30 is 10**6 of them).
_ROUNDING: Final = 1.0 + 2.0**-30


class Counts(Protocol):
    """What a relevance reads of the namespace's statistics
    (:class:`._statistics.Statistics`, which builds relevances: so it
    imports this module, and this one names what it reads here)."""

    count: int
    total_length: int
    _contents: dict[str, list[Any]]
    _postings: dict[str, dict[str, None]]
    _length_counts: dict[int, int]

    @property
    def types(self) -> Iterable[object]: ...

    def terms_of(self, content: str) -> frozenset[str]: ...

    def by_length(self, term: str) -> dict[int, dict[str, None]]: ...

    def idf(self, term: str) -> float: ...

    def scorer(
        self, context: Context | None, *, relevance: Relevance | None = None
    ) -> Scorer: ...


def relevance_factor(
    share: float, best: float, timed: bool = False, floor: float = FLOOR
) -> float:
    """The message's factor for an entry of relevance ``share`` (``r``) when
    the pool's best entry has ``best``, ``timed`` when the entry was created
    in a window of a time the message names: the one rule every path (the
    scorer, the fast loop, the recall index's bounds, explain) derives from.

    >>> relevance_factor(0.0, 0.0), relevance_factor(0.05, 0.5)
    (1.0, 0.0)
    >>> round(relevance_factor(0.5, 0.5) / relevance_factor(0.46, 0.5), 2)
    3.32
    >>> relevance_factor(0.0, 0.5, True) == TIME_FACTOR
    True

    1 for every entry when no entry matches (a vague message: the base
    orders them); 0 below ``floor x best`` (not loaded: the store's pools
    floor above 0); else ``exp(RELEVANCE_RATE x share)``, non-decreasing in
    ``share`` (so a bound of a set of entries is the factor of its best).
    ``floor`` is the ranking's: :data:`FLOOR` for the lexical ``r``,
    ``_semantic.FLOOR`` for the hybrid ``w`` (each relevance passes its own
    through :meth:`Relevance.rule`). ``timed``: that times
    :data:`TIME_FACTOR` (worth 0.2 of ``r``), and never 0: an entry written
    when the message asks about ("What went on yesterday?") is not floored
    out by an old entry sharing a word.
    """
    if best <= 0.0:
        factor = 1.0
    elif share > 0.0 and share >= floor * best:
        factor = math.exp(RELEVANCE_RATE * share)
    elif timed:
        factor = math.exp(RELEVANCE_RATE * max(share, 0.0))
    else:
        return 0.0
    return factor * TIME_FACTOR if timed else factor


def weighed(base: float, factor: float) -> float:
    """``base x factor``, the score; 0 for a factor of 0 whatever the base:
    such an entry is not loaded, even at a base that overflowed to
    infinity (whose product would be NaN, which the core rejects)."""
    return base * factor if factor else 0.0


def floored(pools: Sequence[Pool], relevance: Relevance) -> list[Pool]:
    """``pools`` with a floor above 0 when the message matches some entry
    (a factor of 0 then means "not loaded"), else unchanged."""
    if relevance.unmatched > 0.0:
        return list(pools)
    return [
        pool
        if pool.min_score is not None and pool.min_score >= _ABOVE_ZERO
        else dataclasses.replace(pool, min_score=_ABOVE_ZERO)
        for pool in pools
    ]


# The least positive float: any score above 0 passes it.
_ABOVE_ZERO: Final = math.ulp(0.0)


def leaves_project_out(context: Context) -> bool:
    """Whether the ranking scores entries without their project: when the
    context names none (the core's x0.5 is for a *different* project). The
    one place of this rule: every lexical engine asks it."""
    return context.get("project") is None


def _without_project(entry: Entry) -> Entry:
    return {key: entry[key] for key in entry if key != "project"}


T = TypeVar("T")


def split(
    items: AbstractSet[T], holders: Sequence[AbstractSet[T]]
) -> list[AbstractSet[T]]:
    """``items`` split by which of ``holders`` hold each, at C speed (set
    operations, no loop per item): in each part, every item is held by the
    same holders; no part is empty. A content's ``r`` depends only on its
    length and the message's terms it holds, so :class:`Relevance` weighs
    a part of one term's contents of one length once.

    >>> sorted(map(sorted, split({1, 2, 3, 4}, [{1, 2}, {2, 3}])))
    [[1], [2], [3], [4]]
    """
    parts = [items] if items else []
    for held in holders:
        if held:
            parts = [
                part for whole in parts for part in (whole & held, whole - held) if part
            ]
    return parts


class Relevance:
    """One message's relevance factors: ``relevance_factor(r, best)``.

    Built in O(postings of the message's rarest terms): the terms are
    weighed rarest first, and each content holding one gets its exact ``r``
    (its shared idf summed in the terms' sorted order; one float for the
    contents of one length holding the same terms, weighed once: see
    :func:`split`), until no content left can beat ``best``: one holding
    only the terms left has an ``r`` of at most their idf times the length
    part of the shortest content, over the ceiling. ``best`` is then exact,
    and a chat's common words ("work", held by half the store) are not
    visited: :meth:`bounds` bounds their contents by those terms' idf, and
    :meth:`share` weighs such a content when asked, the same way (so
    scoring it costs a few lookups once).
    :meth:`complete` visits the rest (a loop reading every entry's ``r``);
    ``complete=True`` does so at once (:class:`_semantic.Hybrid`).

    With ``now``, the times the message names ("last week", "in May 2023",
    resolved against ``now`` by :func:`time_windows`) steer: an entry
    created in one of those windows (or in its slack after it:
    :func:`time_slack`) gets its factor times :data:`TIME_FACTOR`, once
    however many windows hold it. ``windows`` is then each window's
    ``(start, end)`` in seconds, sorted and disjoint, else ``()``; a
    caller that computed them already (the store, outside its lock) passes
    ``windows=`` and ``now`` is not read. Only :func:`read_part` of the
    message is read, for its terms as for its times.
    """

    symbol: ClassVar[str] = "r"  # what explain calls an entry's share
    floor: ClassVar[float] = FLOOR  # of relevance_factor: see rule()

    def __init__(
        self,
        stats: Counts,
        message: str,
        now: datetime | None = None,
        *,
        complete: bool = False,
        times: Times | None = None,
    ) -> None:
        self._stats = stats
        self.message = message
        if times is None:
            times = (
                untimed(message)
                if now is None or not message
                else read_times(message, now)
            )
        # The phrases' words stay terms: the turns that answer often say
        # the date too (stripping them: 0.613 dated, 0.609 undated).
        self.windows: tuple[tuple[float, float], ...] = times.windows
        self._starts = [start for start, _end in self.windows]
        # (the terms read once a recall, with its times, for every pool)
        weights = {t: stats.idf(t) for t in sorted(times.every)}
        self.weights = {t: w for t, w in weights.items() if w > 0.0}
        if self.windows and self.weights.keys().isdisjoint(times.rest):
            # Asked for a time alone (no other term of the message is held
            # here: "What happened yesterday?"): the window orders the pool,
            # as the base orders a vague message's, with no floor; a time
            # word an old entry holds ("yesterday", 40 days ago) must not
            # floor out the entries written then.
            self.weights = {}
        self._ceiling = sum(self.weights.values()) * _TERM_CEILING
        self._average = stats.total_length / stats.count if stats.count else 0.0
        postings = stats._postings
        # The terms rarest first: the order that gives each content its own
        # stream (see bounds()); _left[i]: the idf of order[i:], summed.
        self._order = sorted(self.weights, key=lambda t: (len(postings[t]), t))
        self._left = [0.0] * (len(self._order) + 1)
        for at in range(len(self._order) - 1, -1, -1):
            self._left[at] = self._left[at + 1] + self.weights[self._order[at]]
        self._visited = 0  # the terms of order[:_visited] are visited
        self._parts: dict[int, float] = {}  # length -> _part(length)
        self._share: dict[str, float] = {}  # every visited content's r
        self._later: dict[str, float] = {}  # r weighed when asked (share())
        # (term, length) -> the largest r of the visited contents whose
        # rarest shared term is ``term`` (bounds() makes them factors)
        self._owned: dict[tuple[str, int], float] = {}
        self._visit(complete)
        self._settle()
        self._bounds: dict[tuple[str, int], float] | None = None

    def _visit(self, every: bool) -> None:
        """Visit the contents of the terms not yet visited, rarest first,
        until (unless ``every``) no content left can beat the best."""
        stats, order, left = self._stats, self._order, self._left
        postings = stats._postings
        share, owned = self._share, self._owned
        most_part = self._most_part()
        best = max(owned.values(), default=0.0)
        while self._visited < len(order):
            at = self._visited
            if not every and left[at] * most_part <= best:
                return  # no content not visited can beat the best
            term = order[at]
            # A content's r depends only on its length and the message's
            # terms it holds: the term's contents of each length are split
            # by the other terms they hold (set operations at C speed), and
            # each part weighed once (the rarest term of a chat's question
            # is in up to 1,000 contents at 10,000 entries, in a few parts).
            held = postings[term].keys()
            others = [held & postings[t].keys() for t in order if t != term]
            for length, holders in stats.by_length(term).items():
                new = holders.keys() - share.keys() if share else holders.keys()
                if new:
                    self._weigh(term, length, split(new, others))
            best = max(owned.values(), default=0.0)
            self._visited = at + 1

    def _weigh(self, term: str, length: int, groups: list[AbstractSet[str]]) -> None:
        """Give each content of ``groups`` (of ``length`` terms, holding
        ``term``, not yet weighed; in a group, the same terms of the
        message) its ``r``, one float a group, and the (term, length)
        stream the largest."""
        contents, share = self._stats._contents, self._share
        most = -1.0
        for group in groups:
            r = self._r(contents[next(iter(group))][0])
            share.update(dict.fromkeys(group, r))
            most = max(most, r)
        stream = (term, length)
        if most > self._owned.get(stream, -1.0):
            self._owned[stream] = most

    def _most_part(self) -> float:
        """A bound of ``part(length) / ceiling`` for every counted content:
        the shortest content's part (it falls with the length), widened by
        _ROUNDING for sums of idf taken in another order."""
        if not self._order:
            return 0.0
        lengths = self._stats._length_counts
        shortest = min((n for n in lengths if n), default=1)
        return self._part(shortest) * _ROUNDING / self._ceiling

    def complete(self) -> None:
        """Visit every content sharing a term: for a loop that reads every
        entry's ``r`` from the shares (``_fast_scores``)."""
        if self._visited < len(self._order):
            self._visit(True)
            self._bounds = None

    def _r(self, own: frozenset[str]) -> float:
        """The ``r`` of a content holding the terms ``own``: the idf of the
        message's terms among them times its length part, over the ceiling
        (:meth:`_visit` and :meth:`share` both weigh by it)."""
        length = len(own)
        part = self._parts.get(length)
        if part is None:
            part = self._parts[length] = self._part(length)
        return self._shared_idf(own) * part / self._ceiling

    def _shared_idf(self, own: frozenset[str]) -> float:
        """The idf of the message's terms in ``own``, summed in the terms'
        sorted order (one order, so one float for one content)."""
        total = 0.0
        for term, weight in self.weights.items():
            if term in own:
                total += weight
        return total

    def _settle(self) -> None:
        """``best``, ``most`` (no counted entry's factor is above it: a recall
        index's bound) and ``unmatched`` (the factor of an entry with no
        ``r``: 1 for a vague message, else 0), from the shares."""
        self.best = max(self._share.values(), default=0.0)
        self.most = self.rule(self.best, self.best)
        self.unmatched = self.rule(0.0, self.best)

    def rule(self, share: float, best: float, timed: bool = False) -> float:
        """``relevance_factor(share, best, timed)`` with this ranking's floor:
        the one rule every path of this relevance derives its factors from."""
        return relevance_factor(share, best, timed, self.floor)

    def bounds(self) -> dict[tuple[str, int], float]:
        """The bound of each (term, length) stream of a recall index
        (:meth:`Statistics.streams_of`) that this message's walk needs.

        A content sharing several of the message's terms sits in several
        streams; it is bounded by one of them, its own: the stream of the
        shared term held by the fewest contents (then the first by name).
        A visited term's stream is bounded by the largest factor of the
        contents it owns, so the few contents sharing every term do not
        set the bound of the many sharing one; a stream owning no content
        is left out (its entries are bounded by their own streams). A term
        not visited: each length's stream is bounded by the factor of an
        ``r`` of that term's and every commoner term's idf at that length,
        and left out when that is 0 (below the floor: its contents are not
        loaded). O(streams), once per relevance."""
        if self._bounds is None:
            top = self.best
            rule = self.rule
            found = {key: rule(r, top) for key, r in self._owned.items()}
            order, left = self._order, self._left
            lengths = [n for n in self._stats._length_counts if n]
            for at in range(self._visited, len(order)):
                for length in lengths:
                    most = left[at] * self._part(length) * _ROUNDING / self._ceiling
                    factor = rule(most, top)
                    if factor:
                        found[(order[at], length)] = factor
            self._bounds = found
        return self._bounds

    @property
    def weighed_shares(self) -> Mapping[str, float]:
        """The ``r`` of each content weighed so far (the visited terms'), by
        content: what :meth:`share` gives an entry holding it."""
        return self._share

    @property
    def statistics(self) -> Counts:
        """The statistics this relevance was weighed over."""
        return self._stats

    def scorer(self, context: Context | None) -> Scorer:
        """``statistics.scorer(context)`` with this relevance (``context``'s
        message is the one it was built for)."""
        return self._stats.scorer(context, relevance=self)

    def _part(self, length: int) -> float:
        """BM25+'s length-normalised part of a shared term, plus delta."""
        part = (K1 + 1.0) / (1.0 + K1 * (1.0 - B + B * length / self._average))
        return part + DELTA

    def share(self, entry: Entry) -> float:
        """``r`` in [0, 1) for ``entry``; 0 exactly when it shares no term."""
        content = _content(entry)
        found = self._share.get(content)
        if found is not None:
            return found
        counted = content in self._stats._contents
        if not self.weights or (counted and self._visited == len(self._order)):
            return 0.0  # counted, and sharing nothing
        found = self._later.get(content)
        if found is not None:
            return found
        # Not visited, or not counted: weighed as _visit weighs.
        r = self._r(self._stats.terms_of(content))
        if counted:
            self._later[content] = r
        return r

    def factor(self, entry: Entry) -> float:
        """:meth:`factor_at` of the entry's ``r`` and ``created``."""
        seconds = None
        if self.windows:
            created = entry.get("created")
            seconds = None if created is None else poolsplit.parse_created(created)
        return self.factor_at(self.share(entry), seconds)

    def factor_at(self, share: float | None, seconds: float | None) -> float:
        """The factor of an entry of relevance ``share`` (None: it shares no
        term) created at ``seconds``: ``rule(r, best, timed)``, ``timed`` in
        one of the message's windows. The one place the time and the window
        meet the rule: :meth:`factor` (the scorer, explain, every subclass)
        and the one-loop recall's scores call it."""
        if self.windows and self.in_window(seconds):
            return self.rule(share or 0.0, self.best, True)
        return self.unmatched if share is None else self.rule(share, self.best)

    def in_window(self, seconds: float | None) -> bool:
        """Whether a creation time is in one of the windows (O(log windows):
        they are sorted and disjoint)."""
        if seconds is None or not self.windows:
            return False
        at = bisect_right(self._starts, seconds) - 1
        return at >= 0 and seconds < self.windows[at][1]
