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

import math
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from typing import Any, Final

from poolsplit import default_is_active, entry_type, parse_created

from ._ranking import terms
from ._trust import is_quarantined

__all__ = [
    "SAME_SUBJECT",
    "must_share",
    "older_first",
    "paired",
    "possible_supersedes",
    "stale_pairs",
    "subject_share",
]

# The least ``share`` of two entries about one subject. Chosen on the first
# half of benchmarks/supersedes/pairs.json (the lowest threshold of the
# best F1 there); benchmarks/README.md has both halves' precision and recall.
SAME_SUBJECT: Final = 0.52
# A relative margin for rounding: must_share's bound errs on the side of
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
    return math.fsum(idf(term) for term in found)


def subject_share(a: Collection[str], b: Collection[str], idf: Idf) -> float:
    """``W(a & b) / sqrt(W(a) x W(b))``, in [0, 1]; 0 when either weighs 0.

    >>> subject_share({"x", "y"}, {"x", "z"}, lambda term: 1.0)
    0.5
    """
    whole = _weight(a, idf) * _weight(b, idf)
    if whole <= 0.0:
        return 0.0
    shared = _weight([term for term in a if term in b], idf)
    return min(1.0, shared / math.sqrt(whole))


def _comparable(a: Entry, b: Entry) -> bool:
    """Every condition of the rule but the subject's."""
    return (
        a.get("id") != b.get("id")
        and entry_type(a) == entry_type(b)
        and default_is_active(a)
        and default_is_active(b)
        and is_quarantined(a) == is_quarantined(b)
        and " ".join(_content(a).split()) != " ".join(_content(b).split())
    )


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
    if not _comparable(a, b):
        return False
    share = subject_share(terms_of(_content(a)), terms_of(_content(b)), idf)
    return share >= threshold


def possible_supersedes(
    entry: Entry,
    candidates: Iterable[Entry],
    idf: Idf,
    *,
    terms_of: Terms = terms,
) -> list[str]:
    """The ids of ``candidates`` paired with ``entry``, in their order, each
    once. O(candidates x their terms)."""
    found: dict[str, None] = {}
    for other in candidates:
        if paired(entry, other, idf, terms_of=terms_of):
            found[str(other.get("id"))] = None
    return list(found)


def must_share(found: Collection[str], idf: Idf) -> list[str]:
    """Terms of an entry (``found``) of which every entry paired with it
    holds one: its rarest terms, until those left weigh less than
    ``SAME_SUBJECT ** 2`` of the whole.

    Why that suffices: ``W(A & B) <= W(B)``, so ``share >= s`` gives
    ``W(A & B) >= s**2 x W(A)``; an entry sharing none of these terms shares
    at most what is left, less than that. So a store reads only the entries
    holding one of these terms (rare ones: short postings), and finds what
    :func:`possible_supersedes` would find among all of them.

    >>> must_share({"ada", "lisbon", "live"}, {"ada": 0.1, "lisbon": 2.0,
    ...     "live": 0.5}.__getitem__)
    ['lisbon', 'live']
    """
    ranked = sorted(found, key=lambda term: (-idf(term), term))
    left = _weight(ranked, idf)
    bound = SAME_SUBJECT**2 * left * (1.0 - _MARGIN)
    chosen: list[str] = []
    for term in ranked:
        if left < bound:
            break
        chosen.append(term)
        left -= idf(term)
    return chosen


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
    idf of the entry's pool (two paired entries share one). O(n**2) pairs of
    the same type: for the handful a recall loads."""
    by_type: dict[str, list[Entry]] = {}
    for entry in entries:
        by_type.setdefault(repr(entry_type(entry)), []).append(entry)
    found: list[tuple[Entry, Entry]] = []
    for same in by_type.values():
        for i, a in enumerate(same):
            idf = idf_of(a)
            given = terms if terms_of is None else terms_of(a)
            for b in same[i + 1 :]:
                if paired(a, b, idf, terms_of=given):
                    found.append(older_first(a, b))
    return found
