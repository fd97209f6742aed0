"""Stale memories told apart: which active entries look like two versions of one.

>>> from poolsplit_memory._ranking import Statistics
>>> old = {"id": "a", "type": "fact", "content": "Ada lives in Berlin, in Kreuzberg"}
>>> new = {"id": "b", "type": "fact", "content": "Ada lives in Lisbon now, not Berlin"}
>>> other = {"id": "c", "type": "fact", "content": "Ada plays the cello"}
>>> stats = Statistics([old, new, other])
>>> paired(old, new, stats.idf), paired(new, other, stats.idf)
(True, False)

The rule (memory/README.md, "Stale memories"), written once here and called
by ``remember`` (its ``possible_supersedes``) and by ``recall`` (a warning
per pair it loads). Two entries are *paired* when

- they are two entries (different ids) of the same type, both active (no
  ``superseded_by``, ``status`` missing or ``"active"``), both quarantined
  or neither (a quarantined writer may retire only quarantined entries);
- their contents differ once whitespace is normalised (the same content is
  the same memory: ``remember`` answers ``idempotent`` instead);
- they are about the same subject: with A and B their terms (the lexical
  ranking's: Porter stems of significant words) and W(X) the sum of idf(t)
  over X (the idf of the entries' pool, ``_ranking.Statistics.idf``),

      share = W(A & B) / sqrt(W(A) x W(B)) >= SAME_SUBJECT (0.52)

  (0 when either weighs 0). Rare words shared weigh most; "user" or the
  project's name, held by many entries, little.

No model, no network, nothing retired: the caller only reports the pairs.
Pure functions over entries; the statistics come in as ``idf``.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from typing import Any, Final

from poolsplit import default_is_active, entry_type, parse_created

from ._ranking import terms
from ._trust import is_quarantined

__all__ = [
    "MOST_NEAR",
    "SAME_SUBJECT",
    "near_contents",
    "older_first",
    "paired",
    "possible_supersedes",
    "stale_pairs",
    "subject_share",
]

# The least ``share`` of two entries about one subject. Chosen on the even
# half of benchmarks/supersedes/pairs.json: the lowest threshold whose
# precision there, as remember answers, is at least 0.85 (0.8 is asked);
# benchmarks/README.md has both halves' precision and recall.
SAME_SUBJECT: Final = 0.52
# The most contents a remember compares with the new memory (near_contents):
# a bound on its cost where every term of the new memory is common.
MOST_NEAR: Final = 64
# A relative margin for rounding: near_contents's bound errs on the side of
# more candidates, never fewer.
_MARGIN: Final = 1e-9

Entry = Mapping[str, Any]
Idf = Callable[[str], float]
Terms = Callable[[str], Collection[str]]


def _content(entry: Entry) -> str:
    """The content the ranking reads: missing or None is "", else its str()."""
    value = entry.get("content")
    if value is None:
        return ""
    return value if isinstance(value, str) else str(value)


def _weight(found: Iterable[str], idf: Idf) -> float:
    # fsum: correctly rounded, so a sum does not depend on a set's order
    return math.fsum(map(idf, found))


def _memo(idf: Idf) -> Idf:
    """``idf``, each term's computed once (for one call over many entries)."""
    cache: dict[str, float] = {}

    def weigh(term: str) -> float:
        value = cache.get(term)
        if value is None:
            value = cache[term] = idf(term)
        return value

    return weigh


class _Side:
    """What the rule reads of one entry, each part once and only when the
    rule reaches it (as :func:`paired` reads them): its conditions first,
    then its terms (``terms_of``), then their weight (``idf``)."""

    __slots__ = ("_idf", "_terms", "_terms_of", "_weight", "entry", "text")

    def __init__(self, entry: Entry, idf: Idf, terms_of: Terms) -> None:
        self.entry, self.text = entry, _content(entry)
        self._idf, self._terms_of = idf, terms_of
        self._terms: Collection[str] | None = None
        self._weight: float | None = None

    @property
    def terms(self) -> Collection[str]:
        if self._terms is None:
            self._terms = self._terms_of(self.text)
        return self._terms

    @property
    def weight(self) -> float:
        """W(terms)."""
        if self._weight is None:
            self._weight = _weight(self.terms, self._idf)
        return self._weight


def _ratio(shared: float, a: float, b: float) -> float:
    """``shared / sqrt(a x b)``, at most 1; 0 when either weighs 0."""
    whole = a * b
    if whole <= 0.0:
        return 0.0
    return min(1.0, shared / math.sqrt(whole))


def subject_share(a: Collection[str], b: Collection[str], idf: Idf) -> float:
    """``W(a & b) / sqrt(W(a) x W(b))``, in [0, 1]; 0 when either weighs 0.

    >>> subject_share({"x", "y"}, {"x", "z"}, lambda term: 1.0)
    0.5
    """
    shared = [term for term in a if term in b]
    if not shared:
        return 0.0
    return _ratio(_weight(shared, idf), _weight(a, idf), _weight(b, idf))


def _comparable(a: Entry, b: Entry) -> bool:
    """The rule's conditions but the subject and the content."""
    return (
        a.get("id") != b.get("id")
        and entry_type(a) == entry_type(b)
        and default_is_active(a)
        and default_is_active(b)
        and is_quarantined(a) == is_quarantined(b)
    )


def _paired(a: _Side, b: _Side, idf: Idf, threshold: float = SAME_SUBJECT) -> bool:
    """The module's rule over two sides of one ``idf``, read in its order:
    the conditions, then the subject (:func:`subject_share` over what the
    sides read once), then the contents."""
    if not _comparable(a.entry, b.entry):
        return False
    shared = [term for term in a.terms if term in b.terms]
    if not shared:
        return False  # a share of 0
    if _ratio(_weight(shared, idf), a.weight, b.weight) < threshold:
        return False
    return " ".join(a.text.split()) != " ".join(b.text.split())


def paired(
    a: Entry,
    b: Entry,
    idf: Idf,
    *,
    terms_of: Terms = terms,
    threshold: float = SAME_SUBJECT,
) -> bool:
    """Whether ``a`` and ``b`` look like two versions of one memory (the
    module's rule; symmetric). ``terms_of`` gives a content's terms (a
    store passes its statistics' cached ``terms_of``; the same terms);
    ``threshold`` is for benchmarks/supersedes.py's sweep only."""
    return _paired(_Side(a, idf, terms_of), _Side(b, idf, terms_of), idf, threshold)


def possible_supersedes(
    entry: Entry,
    candidates: Iterable[Entry],
    idf: Idf,
    *,
    terms_of: Terms = terms,
) -> list[str]:
    """The ids of ``candidates`` paired with ``entry``, in their order, each
    once. O(candidates x their terms); each term's idf is asked once, and
    a candidate sharing less than ``SAME_SUBJECT ** 2`` of the entry's
    weight (see :func:`near_contents`) is passed over before the rule's
    other sums."""
    weigh = _memo(idf)
    mine = _Side(entry, weigh, terms_of)
    held = frozenset(mine.terms)
    least = SAME_SUBJECT**2 * _weight(held, weigh) * (1.0 - _MARGIN)
    found: dict[str, None] = {}
    for other in candidates:
        side = _Side(other, weigh, terms_of)
        if _weight([term for term in side.terms if term in held], weigh) < least:
            continue
        if _paired(mine, side, weigh):
            found[str(other.get("id"))] = None
    return list(found)


def near_contents(
    found: Collection[str],
    idf: Idf,
    holders: Callable[[str], Iterable[str]],
) -> list[str]:
    """The contents (``holders(term)``: those holding ``term``) that may be
    paired with a content of the terms ``found``; every other is never.

    Why: ``W(A & B) <= W(B)``, so ``share >= s`` needs ``W(A & B) >= s**2 x
    W(A)``. The terms of A are walked rarest first, each adding its idf to
    the contents holding it, until those left weigh less than that: a
    content none of the walked terms holds shares less, and one whose sum
    plus what is left is still less shares less too. So a store reads the
    postings of a new memory's rarest terms only (short ones), and finds
    what :func:`possible_supersedes` finds among every entry, as long as
    at most ``MOST_NEAR`` contents are left; past that, the ``MOST_NEAR``
    sharing the most weight of the walked terms (a store whose every term
    is common: ``benchmarks/supersedes.py --cost``).

    >>> held = {"lisbon": ["b"], "ada": ["a", "b", "c"], "live": ["a", "b"]}
    >>> idf = {"ada": 0.1, "lisbon": 2.0, "live": 0.5}.__getitem__
    >>> near_contents({"ada", "lisbon", "live"}, idf, held.__getitem__)
    ['b']
    """
    weigh = _memo(idf)
    ranked = sorted(found, key=lambda term: (-weigh(term), term))
    left = _weight(ranked, weigh)
    least = SAME_SUBJECT**2 * left * (1.0 - _MARGIN)
    shared: dict[str, float] = {}
    for term in ranked:
        if left < least:
            break
        weight = weigh(term)
        for content in holders(term):
            shared[content] = shared.get(content, 0.0) + weight
        left -= weight
    near = [content for content, got in shared.items() if got + left >= least]
    if len(near) <= MOST_NEAR:
        return near
    # The cost's bound: the contents sharing the most of the walked weight.
    return heapq.nlargest(MOST_NEAR, near, key=shared.__getitem__)


def older_first(a: Entry, b: Entry) -> tuple[Entry, Entry]:
    """``a`` and ``b``, the older by ``created`` first (a missing or unreadable
    ``created`` counts as oldest; equal ones by id)."""

    def key(entry: Entry) -> tuple[float, str]:
        seconds = parse_created(entry.get("created"))
        return (-math.inf if seconds is None else seconds, str(entry.get("id")))

    return (a, b) if key(a) <= key(b) else (b, a)


def stale_pairs(
    entries: Sequence[Entry],
    idf_of: Callable[[Entry], Idf],
    *,
    terms_of: Callable[[Entry], Terms] | None = None,
) -> list[tuple[Entry, Entry]]:
    """Every pair of ``entries`` the rule pairs, as (older, newer): by type
    in order of first appearance, then by position. ``idf_of(entry)`` is the
    idf of the entry's pool: entries of one type that the rule may pair
    (both quarantined or neither) must share one, as a store's pools do.
    O(n**2) pairs of the same type: for the handful a recall loads; what
    the rule reads of an entry (its terms, their weight) is computed once,
    and each pool's idf of a term once."""
    # One memo per pool's idf (equal idfs share it: a statistics' bound
    # method, asked again, is another object equal to the first); an idf
    # that cannot be a key is memoised alone.
    memos: dict[Idf, Idf] = {}

    def side(entry: Entry) -> tuple[_Side, Idf]:
        idf = idf_of(entry)
        try:
            weigh = memos.get(idf) or memos.setdefault(idf, _memo(idf))
        except TypeError:
            weigh = _memo(idf)
        given = terms if terms_of is None else terms_of(entry)
        return _Side(entry, weigh, given), weigh

    by_type: dict[str, list[Entry]] = {}
    for entry in entries:
        by_type.setdefault(repr(entry_type(entry)), []).append(entry)
    found: list[tuple[Entry, Entry]] = []
    for kind in by_type.values():
        same = [side(entry) for entry in kind] if len(kind) > 1 else []
        for i, (a, idf) in enumerate(same):
            for b, _ in same[i + 1 :]:
                if _paired(a, b, idf):
                    found.append(older_first(a.entry, b.entry))
    return found
