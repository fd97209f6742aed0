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
import heapq
import math
from bisect import bisect_right
from collections import Counter, defaultdict
from collections.abc import Collection, Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from datetime import datetime, timedelta, timezone
from functools import lru_cache
from itertools import chain
from typing import Any, ClassVar, Final, NamedTuple, Optional, TypeVar

import poolsplit
from poolsplit import Context, Entry, Pool, Scorer, TokenCounter

from ._subset import Candidates, TooMany
from ._subset import recall as subset_recall
from ._when import Window
from ._when import strip as _strip_times
from ._when import windows as _time_windows

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
    "read_part",
    "read_times",
    "recall_by_part_scores",
    "recall_by_scores",
    "relevance_factor",
    "stem",
    "terms",
    "time_slack",
    "time_windows",
]

# BM25+'s parameters: Robertson's k1 and b as Lucene sets them, and Lv and
# Zhai's delta (the lower bound a shared term adds, however long the entry).
K1: Final = 1.2
B: Final = 0.75
DELTA: Final = 1.0
# The relevance factor is exp(RELEVANCE_RATE x r): a band of ln(3.33) / 30
# = 0.04 in r outweighs the whole recency range (0.3 to 1), a doubling of
# priority 0.023. On the development file dated (benchmarks/locomo.py
# --dated: each turn created at its session's time, asked a day after the
# last session) hit@5 was 0.365 with the former factor 1 + 9 x r, 0.414
# with 1 + 19 x r, and with exp(rate x r) 0.498 at rate 5, 0.580 at 10,
# 0.602 at 20, 0.605 at 30, 0.610 at 50 (0.621 with recency flat, at any
# rate: the order is r's). 30 keeps recency and priority meaningful
# within a band and costs 0.016 of hit@5 against recency flat.
RELEVANCE_RATE: Final = 30.0
# An entry whose r is below FLOOR x the best entry's is not loaded when the
# message matches some entry: on the development file dated, floors of 0,
# 0.1, 0.2 keep hit@5 at 0.605 (0.3: 0.603, 0.5: 0.590) while the share of
# loaded tokens from answering turns rises 0.161 to 0.163 (0.5: 0.193);
# LoCoMo's turns nearly all share a term with the question, a real store's
# unrelated memories ("the dog is called Biscuit") do not.
FLOOR: Final = 0.2
# A time the message names multiplies the factor of an entry created then
# (the window, and up to TIME_SLACK after it: a memory of an event is
# written at or after it) by TIME_FACTOR, worth 0.2 of r: the window steers
# within the relevant entries and alone orders a message that names only a
# time. Development file, dated, the 104 questions naming a time: hit@5
# 63 without the rule; with the phrase's words kept as terms and 7 days of
# slack, a weight of 0.1 of r 76, 0.2 77, 0.4 76 (all 759 questions: 0.605
# without the rule, 0.623 at 0.2; temporal 0.782, 0.788 at 0.4). With the
# words stripped it was 62-70 (0.613 at 0.2), and undated fell to 0.609.
TIME_FACTOR: Final = math.exp(RELEVANCE_RATE * 0.2)
# The slack after a window (time_slack): TIME_SLACK after a weekend or a
# week, where the memory of it is often written in the days after (the
# rule as first measured gave every window 7 days); none after a day
# ("yesterday" must not boost today's entries) nor after a month, season
# or year. Development file, dated, hit@5 / in 200 tokens: 7 days after
# every window 0.623 / 0.625; none after a day 0.623 / 0.625; also none
# after a month or longer (this rule) 0.623 / 0.628; none at all 0.623 /
# 0.630; min(the window's length, 30 days) 0.621 / 0.625 (undated 0.618 /
# 0.607 in each). LoCoMo's turns are written during what they tell, so it
# cannot show the week's slack paying; it shows its cost at 0.002.
TIME_SLACK: Final = timedelta(days=7)
# How much of a message relevance reads, its terms and the times it names
# alike: the first MESSAGE_CHARS characters. A message is an agent's
# question (e5, the semantic ranking's model, reads at most 512 tokens of
# it, about 2,000 characters of English); read whole, "yesterday " * 12000
# cost 8.4 s and 1 MiB minutes. With 4,096 a 1 MiB recall costs 2-3 times
# a 100-byte question's at 3,000 entries, as with 8,192 (the noise is
# larger than the gap), but half the worst case of reading times:
# benchmarks/long_message.py, figures in benchmarks/README.md.
MESSAGE_CHARS: Final = 4096
# The best an entry can do per shared term: its length-normalised part at
# its largest (a length of 0) plus delta is below this (b < 1).
_TERM_CEILING: Final = K1 + 1.0 + DELTA
# Relevance's bound of what unvisited terms add is widened by this: sums of
# a few idf in another order differ by some ulps (2**-30 is 10**6 of them).
_ROUNDING: Final = 1.0 + 2.0**-30


# ===========================================================================
# Terms: significant words, Porter-stemmed
# ===========================================================================

_VOWELS: Final = frozenset("aeiou")
# Step 1b undoubles these (Porter's own Snowball version of the algorithm;
# the 1980 paper says any double consonant but l, s, z: "trekked" is "trekk").
_UNDOUBLED: Final = frozenset(("bb", "dd", "ff", "gg", "mm", "nn", "pp", "rr", "tt"))


def _consonant(word: str, i: int) -> bool:
    """Porter's consonant: not a vowel, and ``y`` only after a vowel or first."""
    letter = word[i]
    if letter in _VOWELS:
        return False
    if letter == "y":
        return i == 0 or not _consonant(word, i - 1)
    return True


def _measure(stem: str) -> int:
    """Porter's m: the number of vowel-consonant sequences in [C](VC)^m[V]."""
    m = 0
    previous_vowel = False
    for i in range(len(stem)):
        vowel = not _consonant(stem, i)
        if previous_vowel and not vowel:
            m += 1
        previous_vowel = vowel
    return m


def _has_vowel(stem: str) -> bool:
    return any(not _consonant(stem, i) for i in range(len(stem)))


def _cvc(word: str) -> bool:
    """Porter's *o: ends consonant-vowel-consonant, the last not w, x or y."""
    if len(word) < 3:
        return False
    n = len(word)
    return (
        _consonant(word, n - 3)
        and not _consonant(word, n - 2)
        and _consonant(word, n - 1)
        and word[-1] not in "wxy"
    )


def _step1ab(word: str) -> str:
    if word.endswith("sses") or word.endswith("ies"):
        word = word[:-2]
    elif word.endswith("s") and not word.endswith("ss"):
        word = word[:-1]
    if word.endswith("eed"):
        return word[:-1] if _measure(word[:-3]) > 0 else word
    for suffix in ("ed", "ing"):
        if word.endswith(suffix) and _has_vowel(word[: -len(suffix)]):
            word = word[: -len(suffix)]
            if word.endswith(("at", "bl", "iz")):
                return word + "e"
            if word[-2:] in _UNDOUBLED:
                return word[:-1]
            if _measure(word) == 1 and _cvc(word):
                return word + "e"
            return word
    return word


# Steps 2 to 4: (suffix, replacement), matched longest first; only the
# longest suffix that matches is tried (Porter's rule).
_STEP2: Final = (
    ("ational", "ate"), ("tional", "tion"), ("enci", "ence"), ("anci", "ance"),
    ("izer", "ize"), ("abli", "able"), ("alli", "al"), ("entli", "ent"),
    ("eli", "e"), ("ousli", "ous"), ("ization", "ize"), ("ation", "ate"),
    ("ator", "ate"), ("alism", "al"), ("iveness", "ive"), ("fulness", "ful"),
    ("ousness", "ous"), ("aliti", "al"), ("iviti", "ive"), ("biliti", "ble"),
)  # fmt: skip
_STEP3: Final = (
    ("icate", "ic"), ("ative", ""), ("alize", "al"), ("iciti", "ic"),
    ("ical", "ic"), ("ful", ""), ("ness", ""),
)  # fmt: skip
_STEP4: Final = (
    "al", "ance", "ence", "er", "ic", "able", "ible", "ant", "ement", "ment",
    "ent", "ion", "ou", "ism", "ate", "iti", "ous", "ive", "ize",
)  # fmt: skip


def _longest(word: str, suffixes: Iterable[str]) -> str | None:
    found = [s for s in suffixes if word.endswith(s)]
    return max(found, key=len) if found else None


def _replace(word: str, rules: tuple[tuple[str, str], ...], min_m: int) -> str:
    table = dict(rules)
    suffix = _longest(word, table)
    if suffix is not None and _measure(word[: -len(suffix)]) >= min_m:
        return word[: -len(suffix)] + table[suffix]
    return word


def _step4(word: str) -> str:
    suffix = _longest(word, _STEP4)
    if suffix is None:
        return word
    stem = word[: -len(suffix)]
    if suffix == "ion" and not stem.endswith(("s", "t")):
        return word
    return stem if _measure(stem) > 1 else word


def _step5(word: str) -> str:
    if word.endswith("e"):
        m = _measure(word[:-1])
        if m > 1 or (m == 1 and not _cvc(word[:-1])):
            word = word[:-1]
    if word.endswith("ll") and _measure(word) > 1:
        word = word[:-1]
    return word


@lru_cache(maxsize=1 << 16)
def stem(word: str) -> str:
    """The Porter (1980) stem of a lowercase word; words of two letters or
    fewer, and words with a letter outside a-z, are their own stem.

    >>> [stem(w) for w in ("painting", "paints", "painted", "relational")]
    ['paint', 'paint', 'paint', 'relat']

    Cached (65,536 words): a namespace's vocabulary is stemmed once.
    """
    if len(word) <= 2 or not (word.isascii() and word.isalpha()):
        return word
    word = _step1ab(word)
    if word.endswith("y") and _has_vowel(word[:-1]):
        word = word[:-1] + "i"
    word = _replace(word, _STEP2, 1)
    word = _replace(word, _STEP3, 1)
    return _step5(_step4(word))


def read_part(message: str) -> str:
    """The part of ``message`` relevance reads: its first
    :data:`MESSAGE_CHARS` characters, less a word the cap would cut in two
    (its start would read as a word of its own); the one place the cap is
    applied.

    >>> read_part("x" * (MESSAGE_CHARS - 4) + " yesterday").endswith("x ")
    True
    """
    if len(message) <= MESSAGE_CHARS:
        return message
    part = message[:MESSAGE_CHARS]
    if message[MESSAGE_CHARS].isalnum() and part[-1].isalnum():
        cut = max(part.rfind(" "), part.rfind("\n"), part.rfind("\t"))
        if cut > 0:
            return part[: cut + 1]
    return part


def time_slack(start: datetime, end: datetime) -> timedelta:
    """How long after a window ``[start, end)`` an entry still counts as
    created in it: :data:`TIME_SLACK` after a window of more than a day and
    at most :data:`_WEEK_SIZED` (a weekend, a holiday, a week: a memory of
    it is often written in the days after it), none after a day or less
    ("yesterday", "on Friday", "2 days ago", "this morning": today's
    entries are not yesterday's) nor after a month, season or year."""
    return TIME_SLACK if _DAY < end - start <= _WEEK_SIZED else timedelta(0)


_DAY: Final = timedelta(days=1)
_WEEK_SIZED: Final = timedelta(days=10)


class Times(NamedTuple):
    """What a message says of time, read once (outside any lock): the
    ``windows`` of :func:`time_windows`, and ``rest``, the message's terms
    outside its time expressions (a pool none of whose entries holds one
    of them is asked for a time alone: see :class:`Relevance`)."""

    windows: tuple[tuple[float, float], ...]
    rest: frozenset[str]
    every: frozenset[str]  # the terms of the message's read part, all of them


def untimed(message: str) -> Times:
    """The :class:`Times` of a message read with no ``now``: its terms only."""
    every = terms(read_part(message))
    return Times((), every, every)


def read_times(message: str, now: datetime) -> Times:
    """The :class:`Times` of ``message`` at ``now`` (its :func:`read_part`).

    >>> from datetime import datetime, timezone
    >>> read_times("What happened yesterday?",
    ...            datetime(2026, 5, 2, tzinfo=timezone.utc)).rest
    frozenset({'happen'})
    """
    read = read_part(message)
    every = terms(read)
    found = _time_windows(read, now)
    if not found:
        return Times((), every, every)
    spans = tuple(span for window in found for span in window.spans)
    hull = dataclasses.replace(found[0], spans=spans)  # strip reads its spans
    return Times(_joined(found), terms(_strip_times(read, hull)), every)


def time_windows(message: str, now: datetime) -> tuple[tuple[float, float], ...]:
    """The windows the times in ``message`` name at ``now``, each with its
    slack (:func:`time_slack`), as ``(start, end)`` seconds: sorted, and
    those that overlap or touch joined, so that an entry is in at most one
    (and boosted once). One window per expression ("March 2020 and last
    summer" is two, not the three years between). Reads
    :func:`read_part` of the message; O(its length) and O(k log k) for k
    expressions.

    Raises:
        TypeError: ``now`` is not a datetime.
    """
    return _joined(_time_windows(read_part(message), now))


def _joined(found: Sequence[Window]) -> tuple[tuple[float, float], ...]:
    """Each window with its slack, in seconds, sorted; overlapping ones joined."""
    spans = []
    for window in found:
        start = poolsplit.parse_created(window.start)
        end = poolsplit.parse_created(window.end + time_slack(window.start, window.end))
        assert start is not None and end is not None  # aware datetimes
        spans.append((start, end))
    spans.sort()
    joined: list[tuple[float, float]] = []
    for start, end in spans:
        if joined and start <= joined[-1][1]:
            joined[-1] = (joined[-1][0], max(joined[-1][1], end))
        else:
            joined.append((start, end))
    return tuple(joined)


def terms(text: str) -> frozenset[str]:
    """The terms relevance compares: the stems of ``text``'s significant words.

    >>> sorted(terms("She paints sunsets; her painting was sold"))
    ['paint', 'sold', 'sunset']
    """
    return frozenset(map(stem, poolsplit.significant_words(text)))


def _kind(entry: Entry) -> object:
    """The entry's type as a dict key (an unhashable one as its repr)."""
    kind = poolsplit.entry_type(entry)
    try:
        hash(kind)
    except TypeError:
        return repr(kind)
    return kind


def _decrement(counts: dict[Any, int], key: object) -> None:
    left = counts[key] - 1
    if left:
        counts[key] = left
    else:
        del counts[key]


def _content(entry: Entry) -> str:
    """The content the core reads: missing or None is "", else its str()."""
    value = entry.get("content")
    if value is None:
        return ""
    return value if isinstance(value, str) else str(value)


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


def _without_project(entry: Entry) -> Entry:
    return {key: entry[key] for key in entry if key != "project"}


# ===========================================================================
# The namespace's statistics, kept entry by entry
# ===========================================================================


class Statistics:
    """Document count, total length and document frequencies of a namespace.

    >>> stats = Statistics()
    >>> stats.add({"content": "Ada paints sunsets"})
    >>> stats.add({"content": "Ada runs"})
    >>> stats.count, stats.frequency("ada"), stats.frequency("paint")
    (2, 2, 1)

    ``add`` and ``remove`` cost O(words of the entry); an entry's length is
    its number of distinct terms. Entries with equal content share one
    record (their terms are computed once). ``remove`` of an entry never
    added raises ``ValueError``: the statistics would silently drift.
    Not thread-safe: the owner (the store's snapshot) serialises writes.
    """

    def __init__(self, entries: Iterable[Entry] = ()) -> None:
        self.count = 0
        self.total_length = 0
        self._frequency: dict[str, int] = {}
        # content -> [its terms, how many counted entries hold it]
        self._contents: dict[str, list[Any]] = {}
        # term -> the distinct contents holding it (insertion-ordered)
        self._postings: dict[str, dict[str, None]] = {}
        # term -> length -> the distinct contents of that many terms holding
        # it (Relevance._visit weighs them a part at a time): made for a
        # term when a relevance first visits it (by_length), then kept by
        # add and remove (not at the load: 10-25 ms at 10,000 entries)
        self._by_length: dict[str, dict[int, dict[str, None]]] = {}
        # id(entry) -> what the fast recall scores it by (see recall())
        self._features: dict[int, _Features | None] = {}
        # the types of the counted always-scope entries (a pool list that
        # leaves one out makes the core warn by position: it reads them all)
        self._always_types: dict[object, int] = {}
        self._types: dict[object, int] = {}  # every counted entry's type
        # length -> how many distinct contents of that many terms (a few
        # keys): the shortest bounds a relevance's pruning (Relevance)
        self._length_counts: dict[int, int] = {}
        self.add_many(entries)

    @property
    def types(self) -> Iterable[object]:
        """The types of the counted entries (an unhashable one as its repr)."""
        return self._types.keys()

    def frequency(self, term: str) -> int:
        """How many counted entries hold ``term``."""
        return self._frequency.get(term, 0)

    def terms_of(self, content: str) -> frozenset[str]:
        """The terms of a content, from the record when it is counted."""
        record = self._contents.get(content)
        return terms(content) if record is None else record[0]

    def holders(self, term: str) -> Collection[str]:
        """The distinct counted contents holding ``term`` (none if none)."""
        return self._postings.get(term, {}).keys()

    def streams_of(self, content: str) -> frozenset[tuple[str, int]]:
        """(term, length) for each term of a content, its length being its
        number of terms: what a recall index files the content under, so
        that :meth:`Relevance.bounds` bounds each such stream's factor."""
        found = self.terms_of(content)
        length = len(found)
        return frozenset((term, length) for term in found)

    def add(self, entry: Entry) -> None:
        """Count ``entry`` (a stored entry dict)."""
        self.add_many((entry,))

    def add_many(self, entries: Iterable[Entry]) -> None:
        """Count each of ``entries``, as :meth:`add` one at a time would.

        The one place entries are counted (``add`` is a batch of one). A
        snapshot's load counts its 10,000 entries in one call: the
        document frequencies are tallied at C speed over all their terms
        (collections.Counter), not term by term in Python.
        """
        batch = list(entries)
        # Each content read first: a str() that raises changes nothing.
        texts = [_content(entry) for entry in batch]
        contents, features = self._contents, self._features
        types, always_types = self._types, self._always_types
        counted: list[frozenset[str]] = []  # each entry's terms
        fresh: list[str] = []  # the contents not counted yet
        for entry, content in zip(batch, texts):
            record = contents.get(content)
            if record is None:
                record = contents[content] = [terms(content), 0]
                fresh.append(content)
            record[1] += 1
            counted.append(record[0])
            found_features = features[id(entry)] = _features(entry)
            kind = _kind(entry)
            types[kind] = types.get(kind, 0) + 1
            if found_features is None or found_features[4]:
                always_types[kind] = always_types.get(kind, 0) + 1
        if fresh:
            self._post(fresh)
        self.count += len(counted)
        self.total_length += sum(map(len, counted))
        frequency = self._frequency
        for term, times in Counter(chain.from_iterable(counted)).items():
            frequency[term] = frequency.get(term, 0) + times

    def _post(self, fresh: Iterable[str]) -> None:
        """File contents new to the statistics under their terms."""
        postings, lengths = self._postings, self._length_counts
        contents = self._contents
        for content in fresh:
            found = contents[content][0]
            for term in found:  # (get first: setdefault builds a dict a term)
                holders = postings.get(term)
                if holders is None:
                    postings[term] = {content: None}
                else:
                    holders[content] = None
            if self._by_length:
                self._file_by_length(content, found)
            lengths[len(found)] = lengths.get(len(found), 0) + 1

    def remove(self, entry: Entry) -> None:
        """Stop counting ``entry``, counted before by :meth:`add`.

        Raises:
            ValueError: no counted entry has this content.
        """
        content = _content(entry)
        record = self._contents.get(content)
        if record is None:
            raise ValueError(
                f"entry {entry.get('id')!r}: its content is not counted, "
                "so it cannot be removed"
            )
        found: frozenset[str] = record[0]
        kind = _kind(entry)
        _decrement(self._types, kind)
        if self._features.pop(id(entry), None) is None or poolsplit.is_always(entry):
            _decrement(self._always_types, kind)
        record[1] -= 1
        if record[1] == 0:
            del self._contents[content]
            _decrement(self._length_counts, len(found))
            length, by_length = len(found), self._by_length
            for term in found:
                holders = self._postings[term]
                del holders[content]
                if not holders:
                    del self._postings[term]
                of_term = by_length.get(term)
                if of_term is not None:
                    del of_term[length][content]
                    if not of_term[length]:
                        del of_term[length]
                    if not of_term:
                        del by_length[term]
        self.count -= 1
        self.total_length -= len(found)
        frequency = self._frequency
        for term in found:
            _decrement(frequency, term)

    def _file_by_length(self, content: str, found: frozenset[str]) -> None:
        """File a new content under its terms' lengths already made."""
        length = len(found)
        for term in found:
            of_term = self._by_length.get(term)
            if of_term is not None:
                of_term.setdefault(length, {})[content] = None

    def by_length(self, term: str) -> dict[int, dict[str, None]]:
        """The distinct contents holding ``term`` (a counted one), by their
        number of terms; made on the first call, then kept by the writes."""
        found = self._by_length.get(term)
        if found is None:
            found = self._by_length[term] = {}
            contents = self._contents
            for content in self._postings[term]:
                found.setdefault(len(contents[content][0]), {})[content] = None
        return found

    def by_length_of_every_term(self) -> None:
        """Make :meth:`by_length` of every counted term at once, in one pass
        over the contents (the same dicts, up to order; then kept by the
        writes). A store's snapshot does it when it builds its recall index
        (its second recall): a relevance's first visit of a term made it
        then, 0.3-1 ms for a term of 1,000 contents at 10,000 entries, in
        most warm recalls of a fresh process (benchmarks/README.md,
        warm38)."""
        made: dict[str, dict[int, dict[str, None]]] = {
            term: {} for term in self._postings if term not in self._by_length
        }
        if not made:
            return
        for content, record in self._contents.items():
            found: frozenset[str] = record[0]
            length = len(found)
            for term in found:
                of_term = made.get(term)
                if of_term is not None:
                    held = of_term.get(length)
                    if held is None:
                        of_term[length] = {content: None}
                    else:
                        held[content] = None
        self._by_length.update(made)

    def idf(self, term: str) -> float:
        """Lucene's BM25 idf, ``ln(1 + (N - n + 0.5) / (n + 0.5))``; 0 for a
        term no counted entry holds (it can rank nothing)."""
        n = self._frequency.get(term, 0)
        if n == 0:
            return 0.0
        return math.log(1.0 + (self.count - n + 0.5) / (n + 0.5))

    def relevance(
        self,
        message: str,
        now: datetime | None = None,
        *,
        times: Times | None = None,
    ) -> Relevance:
        """The message's terms weighed once, for scoring many entries; with
        ``now`` (or ``windows``), the times the message names too (see
        :class:`Relevance`)."""
        return Relevance(self, message, now, times=times)

    def scorer(
        self, context: Context | None, *, relevance: Relevance | None = None
    ) -> Scorer:
        """A ``poolsplit`` scorer for this context (see the module docstring).

        The base is ``poolsplit.default_scorer`` with the context's ``tags``
        and ``project`` and no message, on the entry without its project
        when the context names none; the message's relevance is weighed
        here, once. The scorer scores an entry for this context only (the
        core hands it back the context it was built for).
        """
        context = {} if context is None else context
        if relevance is None:
            relevance = self.relevance(_message(context))
        base_context = {key: context[key] for key in context if key != "message"}
        default_scorer = poolsplit.default_scorer
        factor = relevance.factor
        no_project = context.get("project") is None

        def score(entry: Entry, _context: Context | None, /, *, now: datetime) -> float:
            based = entry
            if no_project and entry.get("project") is not None:
                based = _without_project(entry)
            return weighed(default_scorer(based, base_context, now=now), factor(entry))

        return score


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
        stats: Statistics,
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
    def statistics(self) -> Statistics:
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
        """``rule(r, best, timed)``, ``timed`` for an entry created in one
        of the message's windows."""
        timed = False
        if self.windows:
            created = entry.get("created")
            seconds = None if created is None else poolsplit.parse_created(created)
            timed = self.in_window(seconds)
        return self.rule(self.share(entry), self.best, timed)

    def in_window(self, seconds: float | None) -> bool:
        """Whether a creation time is in one of the windows (O(log windows):
        they are sorted and disjoint)."""
        if seconds is None or not self.windows:
            return False
        at = bisect_right(self._starts, seconds) - 1
        return at >= 0 and seconds < self.windows[at][1]

    def timed(self, seconds: float | None) -> float:
        """TIME_FACTOR for a creation time in one of the windows, else 1."""
        return TIME_FACTOR if self.in_window(seconds) else 1.0


# ===========================================================================
# The fast recall: every score computed in one loop, the core on the best
# ===========================================================================

# (priority, created seconds, tags, project, always-scope, type): the fields
# the base score and the pools read, for an entry whose fields have their
# usual types; None for any other (its score is then default_scorer's own).
_Features = tuple[float, Optional[float], Optional[frozenset[str]], Any, bool, str]
E = TypeVar("E", bound=Entry)


def _features(entry: Entry) -> _Features | None:
    priority = entry.get("base_priority", None)
    if priority is None:
        priority = poolsplit.DEFAULT_PRIORITY
    elif type(priority) is int:
        try:
            priority = float(priority)
        except OverflowError:
            return None
    elif type(priority) is not float or math.isnan(priority):
        return None
    tags = entry.get("tags")
    if tags is not None:
        if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
            return None
        tags = frozenset(tags) or None
    project = entry.get("project")
    if project is not None and not isinstance(project, str):
        return None
    kind = poolsplit.entry_type(entry)
    if not isinstance(kind, str):
        return None
    created = entry.get("created")
    seconds = None if created is None else poolsplit.parse_created(created)
    return (priority, seconds, tags, project, poolsplit.is_always(entry), kind)


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
    cost 1.5-2 ms more at 10,000 entries: benchmarks/README.md, engine37)."""
    always, groups = split.always, split.groups
    now_seconds = poolsplit.parse_created(now)
    assert now_seconds is not None  # an aware datetime
    query_tags = frozenset(context.get("tags") or ())
    query_project = context.get("project")
    base_context = {key: context[key] for key in context if key != "message"}
    base_score = poolsplit.base_score  # read per call: a patched rule is followed
    no_project = query_project is None
    features = stats._features
    relevance.complete()  # every content sharing a term in the shares
    share = relevance._share
    best, unmatched = relevance.best, relevance.unmatched
    rule = relevance.rule
    in_window = relevance.in_window if relevance.windows else None
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
        r = share.get(content)
        if in_window is not None and in_window(seconds):
            factor = rule(0.0 if r is None else r, best, True)
        else:
            factor = rule(r, best) if r is not None else unmatched
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


def _message(context: Context) -> str:
    message = context.get("message")
    return message if isinstance(message, str) else ""


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
