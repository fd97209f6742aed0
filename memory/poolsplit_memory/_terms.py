"""What a text says to the lexical ranking: its terms (significant words,
Porter-stemmed) and, for a message, the times it names (read from its first
:data:`MESSAGE_CHARS` characters).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from datetime import datetime, timedelta
from functools import lru_cache
from typing import Final, NamedTuple

import poolsplit
import snowballstemmer
from poolsplit import Context, Entry

from ._when import Window
from ._when import strip as _strip_times
from ._when import windows as _time_windows

__all__ = [
    "MESSAGE_CHARS",
    "TIME_SLACK",
    "Times",
    "read_part",
    "read_times",
    "stem",
    "terms",
    "time_slack",
    "time_windows",
    "untimed",
]

# The slack after a window (time_slack): TIME_SLACK after a weekend or a
# week, where the memory of it is often written in the days after (the
# rule as first measured gave every window 7 days); none after a day
# ("yesterday" must not boost today's entries) nor after a month, season
# or year. LoCoMo's turns are written during what they tell, so it cannot
# show the week's slack paying, only its small cost (benchmarks/README.md,
# "Figures from code comments": TIME_SLACK).
TIME_SLACK: Final = timedelta(days=7)
# How much of a message relevance reads, its terms and the times it names
# alike: the first MESSAGE_CHARS characters. A message is an agent's
# question (e5, the semantic ranking's model, reads at most 512 tokens of
# it, about 2,000 characters of English); read whole, a long message cost
# seconds to minutes. 4,096 bounds a 1 MiB recall to a small multiple of a
# short question's, with half the worst case of reading times of 8,192
# (benchmarks/long_message.py; benchmarks/README.md, "Figures from code
# comments": MESSAGE_CHARS).
MESSAGE_CHARS: Final = 4096

# ===========================================================================
# Terms: significant words, Porter-stemmed
# ===========================================================================

_PORTER: Final = snowballstemmer.stemmer("porter")


@lru_cache(maxsize=1 << 16)
def stem(word: str) -> str:
    """The Porter (1980) stem of a lowercase word, by Snowball's Porter
    stemmer; words of two letters or fewer, and words with a letter outside
    a-z, are their own stem.

    >>> [stem(w) for w in ("painting", "paints", "painted", "relational")]
    ['paint', 'paint', 'paint', 'relat']

    Cached (65,536 words): a namespace's vocabulary is stemmed once.
    """
    if len(word) <= 2 or not (word.isascii() and word.isalpha()):
        return word
    stemmed: str = _PORTER.stemWord(word)
    return stemmed


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


def _content(entry: Entry) -> str:
    """The content the core reads: missing or None is "", else its str()."""
    value = entry.get("content")
    if value is None:
        return ""
    return value if isinstance(value, str) else str(value)


def _message(context: Context) -> str:
    """The context's message, "" when it has none (or not a str)."""
    message = context.get("message")
    return message if isinstance(message, str) else ""
