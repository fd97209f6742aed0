"""Budgeted retrieval for agent memory: reserved pools per type, always-scope first.

>>> import datetime
>>> now = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)
>>> store = [
...     {"id": "c1", "type": "correction", "scope": "always",
...      "content": "Never force-push to main."},
...     {"id": "t1", "type": "task", "content": "Ship the notes", "base_priority": 9},
...     {"id": "s1", "type": "skill", "content": "How to bisect a regression"},
... ]
>>> pools = [Pool("core", max_tokens=0, max_entries=0, types=("correction",)),
...          Pool("work", max_tokens=50, max_entries=1, types=("task",)),
...          Pool("skills", max_tokens=50, max_entries=1, types=("skill",))]
>>> {name: [e["id"] for e in got]
...  for name, got in retrieve_pools(store, pools, now=now).items()}
{'core': ['c1'], 'work': ['t1'], 'skills': ['s1']}

Entry keys (all optional; an entry is any ``Mapping``):

=================  ===========================================================
key                meaning
=================  ===========================================================
``content``        the payload text; missing or None is "", other values str()
``type``           entry type, default ``"note"``; pools select by it
``scope``          ``"always"`` loads unconditionally, outside every cap
``tags``           list of str (a bare str is one tag)
``project``        str, or None for general entries
``created``        ISO-8601 str, ``datetime``, ``date`` or POSIX seconds
``token_count``    precomputed cost; used when a positive int
``base_priority``  real number, default 5
``status``         ``"active"`` (the default) or anything else (inactive)
``superseded_by``  any truthy value retires the entry
``id``             identifier; breaks ties in the ranking
=================  ===========================================================
"""

from __future__ import annotations

import heapq
import math
import numbers
import re
import sys
import unicodedata
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime, timezone
from functools import lru_cache
from typing import Any, Final, Protocol, TypeVar, Union

__all__ = [
    "DEMO_NOW",
    "Audit",
    "Decision",
    "Explanation",
    "Pool",
    "PoolSummary",
    "Problem",
    "Step",
    "TypeAudit",
    "audit",
    "clear_caches",
    "default_is_active",
    "default_scorer",
    "default_token_counter",
    "demo_pools",
    "demo_store",
    "explain",
    "render",
    "retrieve",
    "retrieve_pools",
    "validate",
]
__version__ = "0.2.0"

# ---------------------------------------------------------------------------
# Constants of the default scorer (kept compatible with the original design).
# ---------------------------------------------------------------------------

DEFAULT_TYPE: Final = "note"
DEFAULT_PRIORITY: Final = 5
ALWAYS_SCOPE: Final = "always"
ACTIVE_STATUS: Final = "active"

RECENCY_HORIZON_DAYS: Final = 90.0
RECENCY_SLOPE: Final = 0.7
RECENCY_FLOOR: Final = 0.3
TAG_BOOST: Final = 0.5
PROJECT_MATCH: Final = 1.5
PROJECT_MISMATCH: Final = 0.5
MESSAGE_THRESHOLD: Final = 0.15
MESSAGE_BOOST: Final = 1.5
MIN_WORD_LENGTH: Final = 3

STOPWORDS: Final = frozenset(
    [
        "the",
        "and",
        "for",
        "are",
        "but",
        "not",
        "you",
        "all",
        "can",
        "her",
        "was",
        "one",
        "our",
        "out",
        "day",
        "has",
        "had",
        "his",
        "how",
        "man",
        "new",
        "now",
        "old",
        "see",
        "two",
        "way",
        "who",
        "did",
        "its",
        "let",
        "put",
        "say",
        "she",
        "too",
        "use",
        "that",
        "this",
        "with",
        "from",
        "they",
        "them",
        "then",
        "than",
        "have",
        "will",
        "your",
        "what",
        "when",
        "were",
        "been",
        "into",
        "some",
        "more",
        "very",
        "just",
        "over",
        "only",
    ]
)

# Cross-call caches are bounded: 2**17 entries covers a 100,000-entry store
# with room to spare, at roughly 0.5 KB per cached content string.
_CACHE_SIZE: Final = 1 << 17

_SECONDS_PER_DAY: Final = 86400.0
# The largest factor the message term can apply (a share of 1).
_MAX_MESSAGE_FACTOR: Final = 1.0 + MESSAGE_BOOST
_EPOCH: Final = datetime(1970, 1, 1, tzinfo=timezone.utc)
# The ranking sorts all entries of a small store, else a sample's best eighth.
_SORT_ALL_BELOW: Final = 16384
_SAMPLE_STEP: Final = 16
# Seconds of age past which recency is surely at its floor: the age where
# 1 - slope * days / horizon reaches the floor, plus a day against rounding.
_FLOORED_AGE: Final = (
    (1.0 - RECENCY_FLOOR) / RECENCY_SLOPE * RECENCY_HORIZON_DAYS + 1.0
) * _SECONDS_PER_DAY

# ---------------------------------------------------------------------------
# Types of the callables users plug in.
# ---------------------------------------------------------------------------

E = TypeVar("E", bound=Mapping[str, Any])
Entry = Mapping[str, Any]
Context = Mapping[str, Any]


class Scorer(Protocol):
    """Ranks one entry for a context; higher loads first."""

    def __call__(
        self, entry: Entry, context: Context | None, /, *, now: datetime
    ) -> float: ...


TokenCounter = Callable[[str], int]
ActivePredicate = Callable[[Entry], object]


# ---------------------------------------------------------------------------
# Pool
# ---------------------------------------------------------------------------


def _check_cap(name: str, value: object) -> None:
    """Reject a cap that is not a non-negative int (bool is not an int here)."""
    if type(value) is bool or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if value < 0:
        raise ValueError(f"{name} must be >= 0, got {value!r}")


@dataclass(frozen=True)
class Pool:
    """A reserved budget for a group of entry types.

    ``max_tokens`` and ``max_entries`` cap the context (non-always) entries the
    pool selects; always-scope entries are never counted. ``types`` is the tuple
    of entry types the pool draws from, or None for every type.

    >>> Pool("skills", max_tokens=400, max_entries=3, types=["skill"])
    Pool(name='skills', max_tokens=400, max_entries=3, types=('skill',))

    Raises:
        TypeError: a field of the wrong type, including a bare str for ``types``
            (it would be read as its characters).
        ValueError: an empty ``name`` or a negative cap.
    """

    name: str
    max_tokens: int
    max_entries: int
    types: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.name, str):
            raise TypeError(f"name must be a str, got {type(self.name).__name__}")
        if not self.name:
            raise ValueError("name must be a non-empty str, got ''")
        _check_cap("max_tokens", self.max_tokens)
        _check_cap("max_entries", self.max_entries)
        types: object = self.types
        if types is None:
            return
        if isinstance(types, (str, bytes)):
            raise TypeError(
                f"types must be an iterable of str or None, got a bare "
                f"{type(types).__name__} {types!r}; write ({types!r},)"
            )
        try:
            normalised: tuple[object, ...] = tuple(types)  # type: ignore[arg-type]
        except TypeError:
            raise TypeError(
                f"types must be an iterable of str or None, got {type(types).__name__}"
            ) from None
        for item in normalised:
            if not isinstance(item, str):
                raise TypeError(
                    f"types must contain only str, got {type(item).__name__} {item!r}"
                )
        object.__setattr__(self, "types", normalised)


# ---------------------------------------------------------------------------
# Defaults
# ---------------------------------------------------------------------------


def default_token_counter(text: str) -> int:
    """Estimate tokens as ``max(1, len(text) // 4)``: about four characters each.

    >>> default_token_counter("twelve chars")
    3
    """
    return max(1, len(text) // 4)


def default_is_active(entry: Entry) -> bool:
    """Return True unless ``status`` is set and not ``"active"``, or it is superseded.

    A missing or None ``status`` counts as ``"active"``; any truthy
    ``superseded_by`` retires the entry.

    >>> default_is_active({"status": "archived"}), default_is_active({})
    (False, True)
    """
    status = entry.get("status")
    return (status is None or status == ACTIVE_STATUS) and not entry.get(
        "superseded_by"
    )


# Runs of MIN_WORD_LENGTH or more letters or digits (\w without "_").
_WORD_RE: Final = re.compile(rf"[^\W_]{{{MIN_WORD_LENGTH},}}")
_ASCII_WORD_RE: Final = re.compile(rf"[a-z0-9]{{{MIN_WORD_LENGTH},}}")


def _words(text: str) -> frozenset[str]:
    """Significant words: lowercase letter/digit runs of 3+ chars, not stopwords.

    Non-ASCII text is NFC-normalised first so that a decomposed accent stays
    inside its word; on ASCII text this is exactly ``[a-z0-9]{3,}``.
    """
    if text.isascii():
        words = _ASCII_WORD_RE.findall(text.lower())
    else:
        words = _WORD_RE.findall(unicodedata.normalize("NFC", text).lower())
    return frozenset(words).difference(STOPWORDS)


# Message words are computed once per distinct message; content words once per
# distinct content string, kept as a tuple (a third of a frozenset's memory).
_message_words = lru_cache(maxsize=1024)(_words)


@lru_cache(maxsize=_CACHE_SIZE)
def _content_words(text: str) -> tuple[str, ...]:
    # Interned, so entries sharing a vocabulary share the word strings.
    return tuple(map(sys.intern, _words(text)))


_ISO_RE: Final = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})"
    r"(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d+))?)?)?"
    r"\s*(Z|[+-]\d{2}(?::?\d{2})?)?",
    re.ASCII | re.IGNORECASE,
)


# Parsed ``created`` strings. A plain dict, not lru_cache: a hit is one lookup
# (the LRU bookkeeping touches three more objects), which matters when every
# entry of a large store is looked up on every turn. It is emptied when full;
# dict operations are atomic, so threads may share it.
_iso_seconds: Final[dict[str, float | None]] = {}


def _parse_iso(text: str) -> float | None:
    """POSIX seconds of an ISO-8601 date or date-time string, or None; cached."""
    try:
        return _iso_seconds[text]
    except KeyError:
        pass
    seconds = _read_iso(text)
    if len(_iso_seconds) >= _CACHE_SIZE:
        _iso_seconds.clear()
    _iso_seconds[text] = seconds
    return seconds


# The forms datetime.isoformat() writes (without a fraction), plus a final Z.
_COMMON_ISO_RE: Final = re.compile(
    r"\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}:\d{2}(?:Z|[+-]\d{2}:\d{2})?)?",
    re.ASCII | re.IGNORECASE,
)


def _read_iso(text: str) -> float | None:
    """POSIX seconds of an ISO-8601 date or date-time string, or None.

    The common forms go through ``datetime.fromisoformat``, ten times faster
    and, on these forms, the same on every Python; a cold call on a large
    store parses every timestamp. Anything it rejects (February 30th, an
    offset of 24 hours) is left to :func:`_read_iso_general`.
    """
    if _COMMON_ISO_RE.fullmatch(text):
        try:
            moment = datetime.fromisoformat(text[:-1] if text[-1] in "Zz" else text)
        except ValueError:
            pass
        else:
            if moment.tzinfo is None:
                moment = moment.replace(tzinfo=timezone.utc)
            return (moment - _EPOCH).total_seconds()
    return _read_iso_general(text)


def _read_iso_general(text: str) -> float | None:
    """POSIX seconds of an ISO-8601 date or date-time string, or None.

    Written out rather than ``datetime.fromisoformat`` because that accepts
    different forms on 3.9/3.10 (no ``Z``, 3 or 6 fraction digits) and 3.11+.
    """
    match = _ISO_RE.fullmatch(text.strip())
    if match is None:
        return None
    year, month, day, hour, minute, second, fraction, offset = match.groups()
    try:
        moment = datetime(
            int(year),
            int(month),
            int(day),
            int(hour or 0),
            int(minute or 0),
            int(second or 0),
            int((fraction or "0")[:6].ljust(6, "0")),
            tzinfo=timezone.utc,
        )
    except ValueError:  # month 13, February 30th and the like
        return None
    seconds = (moment - _EPOCH).total_seconds()
    if offset and offset.upper() != "Z":
        sign = -1 if offset[0] == "-" else 1
        digits = offset[1:].replace(":", "")
        seconds -= sign * (int(digits[:2]) * 3600 + int(digits[2:4] or 0) * 60)
    return seconds


def _created_seconds(value: object) -> float | None:
    """POSIX seconds (UTC) of a ``created`` value, or None when it has no meaning.

    Strings are ISO-8601; a naive ``datetime`` is UTC; a ``date`` is its UTC
    midnight; an int or float (not bool, finite) is POSIX seconds.
    """
    if isinstance(value, str):
        return _parse_iso(value)
    if isinstance(value, datetime):
        if value.tzinfo is None or value.utcoffset() is None:
            value = value.replace(tzinfo=timezone.utc)
        return (value - _EPOCH).total_seconds()
    if isinstance(value, date):
        return (
            datetime(value.year, value.month, value.day, tzinfo=timezone.utc) - _EPOCH
        ).total_seconds()
    if type(value) is not bool and isinstance(value, (int, float)):
        seconds = _to_float(value)
        return seconds if math.isfinite(seconds) else None
    return None


def _to_float(value: Any) -> float:
    """``float(value)``, with a number beyond the float range as +-inf.

    JSON allows ``10**400``; ``float()`` raises OverflowError on it, while
    ``1e999`` already parses as inf. Both mean "larger than any float".
    """
    try:
        return float(value)
    except OverflowError:
        return math.inf if value > 0 else -math.inf


def _tag_set(value: object, where: str) -> frozenset[str]:
    """Tags as a set: None is none, a bare str is one tag, non-str items are str()."""
    if value is None:
        return frozenset()
    if isinstance(value, str):
        return frozenset((value,))
    if isinstance(value, (list, tuple, set, frozenset)):
        return frozenset(item if isinstance(item, str) else str(item) for item in value)
    raise TypeError(
        f"{where} must be a str or a list of str, got {type(value).__name__}"
    )


@dataclass(frozen=True)
class _Query:
    """What the default scorer needs of a context, computed once per call."""

    words: frozenset[str]
    tags: frozenset[str]
    project: object
    now: float


def _query(context: Context | None, now: datetime) -> _Query:
    """Check ``context`` and reduce it to what the default scorer reads."""
    if context is None:
        context = {}
    elif not isinstance(context, Mapping):
        raise TypeError(
            f"context must be a Mapping or None, got {type(context).__name__}"
        )
    message = context.get("message")
    if message is None:
        message = ""
    elif not isinstance(message, str):
        raise TypeError(
            f"context['message'] must be a str or None, got {type(message).__name__}"
        )
    now_seconds = _created_seconds(now)
    assert now_seconds is not None  # _resolve_now made it an aware datetime
    return _Query(
        words=_message_words(message),
        tags=_tag_set(context.get("tags"), "context['tags']"),
        project=context.get("project"),
        now=now_seconds,
    )


def _priority(entry: Entry) -> float:
    """``base_priority`` as a float; an int or float is read without isinstance."""
    value: Any = entry.get("base_priority")
    kind = type(value)
    if kind is float and not math.isnan(value):
        return float(value)
    if kind is int:
        return _to_float(value)
    if value is None:
        return DEFAULT_PRIORITY
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        priority = _to_float(value)
    else:
        raise TypeError(
            f"base_priority must be a real number, got {type(value).__name__} {value!r}"
        )
    if math.isnan(priority):
        raise ValueError(f"base_priority must not be NaN, got {value!r}")
    return priority


def _score(entry: Entry, query: _Query) -> float:
    """The default score of one entry; raises for a bad ``base_priority``/``tags``."""
    return _message_score(_base_score(entry, query), entry, query)


def _base_score(entry: Entry, query: _Query) -> float:
    """Priority x recency x tags x project: every factor but the message term."""
    get = entry.get
    score = _priority(entry)
    value = get("created")
    created = _parse_iso(value) if type(value) is str else _created_seconds(value)
    if created is not None:
        score *= _recency(query.now, created)

    tags = get("tags")
    if tags:
        tag_set = _tag_set(tags, "tags")
        # max(): a truthy container that yields no items must not divide by 0.
        score *= 1.0 + TAG_BOOST * len(tag_set & query.tags) / max(len(tag_set), 1)

    project = get("project")
    if project is not None:
        score *= PROJECT_MATCH if project == query.project else PROJECT_MISMATCH
    return score


def _recency(now: float, created: float) -> float:
    """``max(0.3, 1 - 0.7 * days / 90)`` for the age in days (the future is 0)."""
    age = (now - created) / _SECONDS_PER_DAY
    days = age if age > 0.0 else 0.0
    factor = 1.0 - RECENCY_SLOPE * days / RECENCY_HORIZON_DAYS
    return factor if factor > RECENCY_FLOOR else RECENCY_FLOOR


def _message_score(base: float, entry: Entry, query: _Query) -> float:
    """``base`` times the message term; the only factor that needs the content."""
    if query.words:
        content = entry.get("content")
        if type(content) is not str:
            content = _content(entry)
        overlap = len(query.words.intersection(_content_words(content)))
        share = overlap / len(query.words)
        if share > MESSAGE_THRESHOLD:
            return base * (1.0 + MESSAGE_BOOST * share)
    return base


def _checked_base_score(entry: Entry, index: int, query: _Query) -> float:
    """``_base_score``, with an error for a bad ``base_priority`` or ``tags``
    naming the entry."""
    try:
        return _base_score(entry, query)
    except (TypeError, ValueError) as exc:
        raise _labelled(exc, index, entry) from None


def default_scorer(
    entry: Entry, context: Context | None = None, *, now: datetime | None = None
) -> float:
    """Score = priority x recency x tags x project x message overlap.

    >>> import datetime
    >>> now = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)
    >>> default_scorer({"base_priority": 4, "created": "2025-12-02"}, None, now=now)
    3.0666666666666664

    - priority: ``base_priority``, default 5.
    - recency: ``max(0.3, 1 - 0.7 * days / 90)`` by the age of ``created``
      (future counts as 0 days; missing or unparseable means no decay).
    - tags: ``1 + 0.5 * share`` of the entry's distinct tags in ``context["tags"]``.
    - project: 1.0 when the entry has none, 1.5 when equal to
      ``context["project"]``, else 0.5.
    - message: with ``overlap`` the share of the message's significant words
      found in the content, ``1 + 1.5 * overlap`` when it exceeds 0.15.

    There is no access-frequency term: ranking must never feed on retrieval.
    ``now`` defaults to the current UTC time; naive datetimes are UTC.

    Raises:
        TypeError: ``base_priority`` is not a real number, ``tags`` or the
            context has the wrong type, or ``now`` is not a datetime.
        ValueError: ``base_priority`` is NaN.
    """
    query = _query(context, _resolve_now(now))
    try:
        return _score(entry, query)
    except (TypeError, ValueError) as exc:
        raise type(exc)(f"entry (id={entry.get('id')!r}): {exc}") from None


# ---------------------------------------------------------------------------
# Retrieval
# ---------------------------------------------------------------------------


def clear_caches() -> None:
    """Empty the bounded caches of parsed timestamps and content words.

    They never change a result; clearing only frees memory.
    """
    _content_words.cache_clear()
    _message_words.cache_clear()
    _iso_seconds.clear()


def _resolve_now(now: datetime | None) -> datetime:
    """The one place that reads the wall clock; naive datetimes are UTC."""
    if now is None:
        return datetime.now(timezone.utc)
    if not isinstance(now, datetime):
        raise TypeError(f"now must be a datetime or None, got {type(now).__name__}")
    if now.tzinfo is None or now.utcoffset() is None:
        return now.replace(tzinfo=timezone.utc)
    return now


def _content(entry: Entry) -> str:
    """The entry's text: missing or None is "", a non-str value is its str()."""
    content = entry.get("content")
    if content is None:
        return ""
    return content if isinstance(content, str) else str(content)


def _label(index: int, entry: object) -> str:
    """How errors name an entry: its position and, when it has one, its id."""
    if isinstance(entry, Mapping):
        return f"entries[{index}] (id={entry.get('id')!r})"
    return f"entries[{index}]"


def _labelled(exc: Exception, index: int, entry: object) -> Exception:
    """``exc`` again, its message led by the entry's position and ``id``."""
    return type(exc)(f"{_label(index, entry)}: {exc}")


SortKey = tuple[int, Union[float, str], str]


def _created_key(value: object) -> SortKey:
    """Total order for ``created``: missing first, then by instant, then garbage.

    Comparing raw values would raise TypeError on a store mixing str and
    datetime; ordering by the parsed instant also makes ``+05:00`` and ``Z``
    forms of one moment tie.
    """
    if value is None:
        return (0, "", "")
    seconds = _created_seconds(value)
    if seconds is not None:
        return (1, seconds, value if isinstance(value, str) else "")
    return (2, "", f"{type(value).__name__}:{value!r}")


def _id_key(value: object) -> SortKey:
    """Total order for ``id``: missing as "", str, then numbers, then the rest."""
    if value is None:
        return (0, "", "")
    if isinstance(value, str):
        return (0, value, "")
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        number = _to_float(value)
        if not math.isnan(number):
            return (1, number, "")
    return (2, "", f"{type(value).__name__}:{value!r}")


def _cost(entry: Entry, index: int, token_counter: TokenCounter) -> int:
    """Tokens an entry costs: a positive int ``token_count``, else the counter, >= 1."""
    count = entry.get("token_count")
    if type(count) is int and count > 0:
        return count
    if isinstance(count, int) and not isinstance(count, bool) and count > 0:
        return int(count)
    try:
        text = _content(entry)
    except (TypeError, ValueError) as exc:  # str() of the content failed
        raise _labelled(exc, index, entry) from None
    counted = token_counter(text)
    if type(counted) is not int:
        if isinstance(counted, bool) or not isinstance(counted, int):
            raise TypeError(
                f"token_counter must return an int, got "
                f"{type(counted).__name__} {counted!r} for {_label(index, entry)}"
            )
        counted = int(counted)
    return counted if counted > 0 else 1


def _check_score(value: object, index: int, entry: Entry) -> float:
    """A scorer result as a float; NaN or a non-number names the entry."""
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        score = _to_float(value)
    else:
        raise TypeError(
            f"scorer must return a real number, got {type(value).__name__} "
            f"{value!r} for {_label(index, entry)}"
        )
    if math.isnan(score):  # NaN would make the sort order undefined
        raise ValueError(f"scorer returned NaN for {_label(index, entry)}")
    return score


def _check_pools(pools: Iterable[Pool]) -> list[Pool]:
    if isinstance(pools, Pool):
        raise TypeError("pools must be an iterable of Pool, got a single Pool")
    try:
        checked = list(pools)
    except TypeError:
        raise TypeError(
            f"pools must be an iterable of Pool, got {type(pools).__name__}"
        ) from None
    seen: set[str] = set()
    for position, pool in enumerate(checked):
        if not isinstance(pool, Pool):
            raise TypeError(
                f"pools[{position}] must be a Pool, got {type(pool).__name__}"
            )
        if pool.name in seen:
            raise ValueError(f"pools[{position}]: duplicate pool name {pool.name!r}")
        seen.add(pool.name)
    return checked


def _check_callables(**hooks: object) -> None:
    for name, hook in hooks.items():
        if not callable(hook):
            raise TypeError(f"{name} must be callable, got {type(hook).__name__}")


# What happened to an entry in one pool, as recorded for explain().
TAKEN_ALWAYS: Final = "always"
TAKEN: Final = "selected"
SKIPPED_TOKENS: Final = "over_tokens"
SKIPPED_ENTRIES: Final = "entry_cap"
TAKEN_EARLIER: Final = "taken_earlier"


@dataclass(frozen=True)
class Step:
    """One decision about one entry in one pool, in the order it was made."""

    index: int
    pool: str
    outcome: str
    score: float | None
    cost: int | None
    used: int


@dataclass
class _Selection:
    """Everything one call decided; retrieve_pools and explain both read it."""

    entries: list[Entry]
    results: dict[str, list[Entry]]
    active: list[bool]
    types: list[object]
    steps: list[Step]
    duplicates: dict[int, int]  # a repeated object's position -> its first


@dataclass
class _Scan:
    """One pass over the store: what each entry is, and who may be ranked."""

    active: list[bool]
    types: list[object]
    keys: list[object]  # the type as a hashable set member
    always: list[int]  # positions of active always-scope entries
    ranked: list[int]  # positions of the other active entries some pool admits
    duplicates: dict[int, int]
    early_repeats: bool  # whether repeats were found here, not by the pools
    # The base score of each ranked entry, when the fast path ranks them.
    base_scores: list[float] | None


def _scan(
    store: list[Entry],
    pools: list[Pool],
    is_active: ActivePredicate,
    query: _Query | None,
    trace: bool,
) -> _Scan:
    """Classify every entry; with the fast path, also compute its base score.

    The base score (:func:`_base_score`: every factor but the message term)
    is computed in the same pass: a store too large for the CPU cache costs
    memory fetches per entry per pass, and a second pass over the ranked
    entries cost 7-10% of a warm turn at 100,000 entries. The usual field
    types (an int or float priority, a str or missing ``created``, a list of
    str tags) are scored inline by the same operations in the same order, so
    the float is the same; any other entry goes through
    :func:`_checked_base_score` after the pass.
    """
    count = len(store)
    active = [False] * count
    types: list[object] = [None] * count
    keys: list[object] = [None] * count
    always: list[int] = []
    ranked: list[int] = []
    duplicates: dict[int, int] = {}
    seen: dict[int, int] = {}
    # One object listed twice is one entry: it may land in one pool only.
    # explain() reports the repeats and a custom scorer must see each object
    # once, so then they are found up front; otherwise a repeat is only
    # noticed when a pool first considers it (see first_seen in _select),
    # which spares a lookup per entry.
    early_repeats = trace or query is None
    default_active = is_active is default_is_active
    accepted: frozenset[object] | None = frozenset(
        kind for pool in pools if pool.types is not None for kind in pool.types
    )
    if any(pool.types is None for pool in pools):
        accepted = None
    # explain() scores every entry exactly, in _Ranking; so does a custom scorer.
    scoring = None if trace else query
    scores: list[float] = []
    append = scores.append
    # Positions in scores of entries scored after the pass, with what
    # scoring them inline raised, if anything.
    unusual: list[tuple[int, Exception | None]] = []
    if scoring is not None:
        now = scoring.now
        query_tags = scoring.tags
        query_project = scoring.project
        cached_seconds = _iso_seconds.get
        floored_before = now - _FLOORED_AGE
        isnan = math.isnan
    for index, entry in enumerate(store):
        if type(entry) is not dict and not isinstance(entry, Mapping):
            raise TypeError(
                f"entries[{index}] must be a Mapping, got {type(entry).__name__}"
            )
        get = entry.get
        if default_active:
            status = get("status")
            live = (status is None or status == ACTIVE_STATUS) and not get(
                "superseded_by"
            )
        else:
            live = bool(is_active(entry))
        kind = get("type")
        if kind is None:
            kind = DEFAULT_TYPE
        types[index] = kind
        if not live:
            continue
        if early_repeats:
            first = seen.setdefault(id(entry), index)
            if first != index:
                duplicates[index] = first
                continue
        active[index] = True
        if type(kind) is not str:
            try:
                hash(kind)
            except TypeError:  # an unhashable type value matches only types=None
                kind = _UNHASHABLE
        keys[index] = kind
        if get("scope") == ALWAYS_SCOPE:
            always.append(index)
        elif accepted is None or kind in accepted:
            ranked.append(index)
            if scoring is None:
                continue
            # An entry off this path (an unusual field type) is scored after
            # the pass by _checked_base_score; an exception from a value is
            # raised after the pass. In ranked order, after every entry is
            # checked and every is_active call is made, as on every other path.
            score: float | None = None
            failure: Exception | None = None
            try:
                priority: Any = get("base_priority")
                created = get("created")
                tags = get("tags")
                # The same reads in the same order as before this path was
                # fused into the scan, so a value that raises raises the same.
                usual = (created is None or type(created) is str) and (
                    not tags or type(tags) is list
                )
                tag_factor = 0.0  # 0: no tag of the context is shared, a factor of 1
                if usual and tags:
                    try:
                        "".join(tags)  # raises TypeError unless every item is a str
                    except TypeError:  # str() of a non-str item may fail or match
                        usual = False
                    else:
                        if query_tags and not query_tags.isdisjoint(tags):
                            distinct = frozenset(tags)
                            shared = len(distinct & query_tags)
                            tag_factor = 1.0 + TAG_BOOST * shared / len(distinct)
                number = type(priority)
                usual = usual and (
                    number is int or (number is float and not isnan(priority))
                )
                if usual:
                    try:
                        value = float(priority)
                    except OverflowError:  # an int beyond the float range
                        usual = False
                if usual:
                    if created is not None:
                        seconds = cached_seconds(created)
                        if seconds is None:
                            seconds = _parse_iso(created)
                        if seconds is not None and seconds < floored_before:
                            value *= RECENCY_FLOOR
                        elif seconds is not None:
                            age = (now - seconds) / _SECONDS_PER_DAY
                            days = age if age > 0.0 else 0.0
                            factor = 1.0 - RECENCY_SLOPE * days / RECENCY_HORIZON_DAYS
                            value *= factor if factor > RECENCY_FLOOR else RECENCY_FLOOR
                    if tag_factor:
                        value *= tag_factor
                    project = get("project")
                    if project is not None:
                        value *= (
                            PROJECT_MATCH
                            if project == query_project
                            else PROJECT_MISMATCH
                        )
                    score = value  # set last: a failure above leaves it None
            except Exception as exc:
                failure = exc
            if score is None:
                unusual.append((len(scores), failure))
                append(0.0)
            else:
                append(score)
    if scoring is not None:
        for position, failure in unusual:
            index = ranked[position]
            if failure is None:
                scores[position] = _checked_base_score(store[index], index, scoring)
            elif isinstance(failure, (TypeError, ValueError)):
                raise _labelled(failure, index, store[index]) from None
            else:
                raise failure
    return _Scan(
        active,
        types,
        keys,
        always,
        ranked,
        duplicates,
        early_repeats,
        None if scoring is None else scores,
    )


def _select(
    entries: Iterable[Entry],
    pools: Iterable[Pool],
    context: Context | None,
    scorer: Scorer,
    token_counter: TokenCounter,
    is_active: ActivePredicate,
    now: datetime | None,
    trace: bool,
) -> _Selection:
    """Fill the pools in order; the single implementation of the rules.

    Each pool walks the eligible entries in ``(-score, created, id, index)``
    order, produced lazily by :class:`_Ranking`. With ``trace`` every decision
    is recorded and every walk runs to the end, so explain() can report why
    entries past a full pool were left out.
    """
    checked_pools = _check_pools(pools)
    _check_callables(scorer=scorer, token_counter=token_counter, is_active=is_active)
    moment = _resolve_now(now)
    query = _query(context, moment) if scorer is default_scorer else None
    if query is None and context is not None and not isinstance(context, Mapping):
        raise TypeError(
            f"context must be a Mapping or None, got {type(context).__name__}"
        )

    try:
        store = list(entries)
    except TypeError:
        raise TypeError(
            f"entries must be an iterable of Mapping, got {type(entries).__name__}"
        ) from None

    scan = _scan(store, checked_pools, is_active, query, trace)
    active, types, keys = scan.active, scan.types, scan.keys
    always, duplicates = scan.always, scan.duplicates
    ranking = _Ranking(
        store, scan, query, scorer, context, moment, trace, token_counter
    )
    walk = ranking.walk
    taken = [False] * len(store)
    # With late repeats: id() -> position of each object a pool considered.
    # A repeat ties with its first position in every order and costs the
    # same, so the first is considered first; the repeat is then passed over
    # before it is costed, as if it were not in the input.
    first_seen: dict[int, int] | None = None if scan.early_repeats else {}
    results: dict[str, list[Entry]] = {}
    steps: list[Step] = []
    for pool in checked_pools:
        wanted = None if pool.types is None else frozenset(pool.types)
        chosen: list[Entry] = []
        for index in always:
            if wanted is not None and keys[index] not in wanted:
                continue
            if not taken[index]:
                taken[index] = True
                if (
                    first_seen is not None
                    and first_seen.setdefault(id(store[index]), index) != index
                ):
                    continue
                chosen.append(store[index])
                outcome = TAKEN_ALWAYS
            elif trace:
                outcome = TAKEN_EARLIER
            else:
                continue
            if trace:
                steps.append(Step(index, pool.name, outcome, None, None, 0))

        used = 0
        picked = 0
        max_tokens = pool.max_tokens
        max_entries = pool.max_entries
        # Every cost is >= 1, so a full pool takes nothing more: stop, unless
        # explain() wants the reason for each entry left out.
        full = max_entries == 0 or max_tokens == 0
        ranking.room = max_tokens
        for index, score in () if full and not trace else walk(keys, wanted, taken):
            if taken[index]:  # only reported when tracing
                steps.append(Step(index, pool.name, TAKEN_EARLIER, score, None, used))
                continue
            if (
                first_seen is not None
                and first_seen.setdefault(id(store[index]), index) != index
            ):
                taken[index] = True
                continue
            cost = ranking.cost(index)
            if full:  # only reached when tracing
                outcome = SKIPPED_ENTRIES if picked >= max_entries else SKIPPED_TOKENS
                steps.append(Step(index, pool.name, outcome, score, cost, used))
            elif used + cost <= max_tokens:
                taken[index] = True
                used += cost
                picked += 1
                chosen.append(store[index])
                ranking.room = max_tokens - used
                full = picked >= max_entries or used >= max_tokens
                if trace:
                    steps.append(Step(index, pool.name, TAKEN, score, cost, used))
                elif full:
                    break
            elif trace:
                steps.append(Step(index, pool.name, SKIPPED_TOKENS, score, cost, used))
        results[pool.name] = chosen
    return _Selection(store, results, active, types, steps, duplicates)


class _Unhashable:
    """Bucket for entries whose ``type`` cannot be hashed (a list, a dict)."""

    def __repr__(self) -> str:
        return "<unhashable type>"


_UNHASHABLE: Final = _Unhashable()


class _Ranking:
    """The eligible entries of one call in ``(-score, created, id, index)`` order.

    Scoring every entry exactly is most of the cost of a turn, and a pool only
    needs its best few. So with the default scorer each entry first gets its
    score without the message term, the one factor that needs the content;
    times the largest message factor (for a positive score) that bounds the
    exact score, and multiplying by a larger positive factor never rounds to
    a smaller float. Entries are sorted once by it, and a pool's walk finishes
    the score only of entries that could still outrank the best exact score
    found, the way :func:`default_scorer` computes it, so the order is
    bit-for-bit the same. A custom scorer's bound is its exact score.
    """

    def __init__(
        self,
        store: list[Entry],
        scan: _Scan,
        query: _Query | None,
        scorer: Scorer,
        context: Context | None,
        moment: datetime,
        exhaustive: bool,
        token_counter: TokenCounter,
    ) -> None:
        self._store = store
        self._query = query
        self._counter = token_counter
        # Known before scoring only when counting is cheap: the default
        # counter, or a token_count field. A caller's counter may be slow.
        self._cheap_cost = token_counter is default_token_counter
        self.costs: dict[int, int] = {}
        self.room = 0  # tokens left in the pool being walked; set by the caller
        self._ties: dict[int, tuple[SortKey, SortKey, int]] = {}
        self._rest: tuple[list[int], list[float], float] | None = None
        ranked = scan.ranked
        if scan.base_scores is None:
            scores = [0.0] * len(ranked)
            position = index = -1
            try:
                for position, index in enumerate(ranked):
                    entry = store[index]
                    if query is None:
                        score = scorer(entry, context, now=moment)
                        scores[position] = _check_score(score, index, entry)
                    else:
                        scores[position] = _score(entry, query)
            except (TypeError, ValueError) as exc:
                if query is None:
                    raise
                raise _labelled(exc, index, store[index]) from None
            base = self._exact = dict(zip(ranked, scores))
            self._factor = 1.0
        else:
            assert query is not None  # base scores come from the default scorer
            scores = scan.base_scores
            base = self._cut(ranked, scores)
            # Without message words the base score is the exact score.
            self._exact = {} if query.words else base
            self._factor = _MAX_MESSAGE_FACTOR if query.words else 1.0
        # Stable: equal scores stay in input order (a dict keeps insertion
        # order). A larger positive base never has a smaller bound, so this
        # is also the order of the bounds.
        self._order = sorted(base, key=base.__getitem__, reverse=True)
        self._base = base
        self._exhaustive = exhaustive

    def _cut(self, ranked: list[int], scores: list[float]) -> dict[int, float]:
        """The entries worth sorting now: about the best eighth, by a sample.

        A turn's walks rarely go past the first few percent of the order, and
        sorting all of a large store is a tenth of a turn. Entries below the
        cutoff are kept aside, in input order, until a walk reaches them.
        """
        if not ranked or len(ranked) < _SORT_ALL_BELOW:
            return dict(zip(ranked, scores))
        sample = sorted(scores[::_SAMPLE_STEP], reverse=True)
        cutoff = sample[len(sample) // 8]
        self._rest = (ranked, scores, cutoff)
        return {index: score for index, score in zip(ranked, scores) if score >= cutoff}

    def _sort_rest(self) -> None:
        """Append the entries below the cutoff to the order, sorted the same way."""
        assert self._rest is not None
        ranked, scores, cutoff = self._rest
        self._rest = None
        rest = {index: score for index, score in zip(ranked, scores) if score < cutoff}
        self._base.update(rest)  # also the exact scores, when they are the same
        self._order.extend(sorted(rest, key=rest.__getitem__, reverse=True))

    def _limit(self, base: float) -> float:
        """No exact score of an entry with this base score can be larger."""
        return base * self._factor if base > 0 else base

    def _score(self, index: int) -> float:
        """The exact score of the entry at ``index``, computed at most once."""
        score = self._exact.get(index)
        if score is None:
            query = self._query
            assert query is not None  # only the default scorer defers
            entry = self._store[index]
            try:
                score = _message_score(self._base[index], entry, query)
            except (TypeError, ValueError) as exc:  # str() of the content failed
                raise _labelled(exc, index, entry) from None
            self._exact[index] = score
        return score

    def cost(self, index: int) -> int:
        """Tokens the entry at ``index`` costs, counted at most once per call."""
        cost = self.costs.get(index)
        if cost is None:
            cost = self.costs[index] = _cost(self._store[index], index, self._counter)
        return cost

    def _cannot_fit(self, index: int) -> bool:
        """Whether the entry surely costs more than ``room``, known without scoring.

        Room only shrinks while a pool fills, so such an entry would be
        skipped when its turn came: leaving it unscored changes nothing.
        """
        cost = self.costs.get(index)
        if cost is None:
            count = self._store[index].get("token_count")
            if not (type(count) is int and count > 0) and not self._cheap_cost:
                return False
            cost = self.cost(index)
        return cost > self.room

    def _tie_key(self, index: int) -> tuple[SortKey, SortKey, int]:
        key = self._ties.get(index)
        if key is None:
            entry = self._store[index]
            created: Any = entry.get("created")
            seconds = _parse_iso(created) if type(created) is str else None
            ident = entry.get("id")
            key = self._ties[index] = (
                (1, seconds, created) if seconds is not None else _created_key(created),
                (0, ident, "") if type(ident) is str else _id_key(ident),
                index,
            )
        return key

    def walk(
        self, keys: list[object], wanted: frozenset[object] | None, taken: list[bool]
    ) -> Iterator[tuple[int, float]]:
        """Yield ``(index, score)`` of the pool's untaken entries, best first.

        The heap holds ``(-score, index)`` of exact scores. The best is
        yielded once it beats every bound still in the sorted list; entries
        tied with it are then all in the heap and go out by ``(created, id,
        index)``. The caller may take entries and lower ``room`` between
        steps. When tracing, entries an earlier pool took are yielded too.
        """
        order = self._order
        base = self._base
        limit = self._limit
        exhaustive = self._exhaustive
        heap: list[tuple[float, int]] = []
        pop = heapq.heappop
        position = 0
        end = len(order)
        while True:
            while position < end:
                index = order[position]
                if (wanted is None or keys[index] in wanted) and (
                    exhaustive or not (taken[index] or self._cannot_fit(index))
                ):
                    break
                position += 1
            # Entries below the cutoff are needed once one could beat the heap.
            if (
                position == end
                and self._rest is not None
                and (not heap or -heap[0][0] <= self._limit(self._rest[2]))
            ):
                self._sort_rest()
                end = len(order)
                continue
            if heap and (position == end or -heap[0][0] > limit(base[order[position]])):
                negative = heap[0][0]
                tied = [pop(heap)[1]]
                while heap and heap[0][0] == negative:
                    tied.append(pop(heap)[1])
                if len(tied) > 1:
                    tied.sort(key=self._tie_key)
                for index in tied:
                    yield index, -negative
                continue
            if position == end:
                return
            position += 1
            heapq.heappush(heap, (-self._score(index), index))


def retrieve_pools(
    entries: Iterable[E],
    pools: Sequence[Pool] | Iterable[Pool],
    context: Context | None = None,
    *,
    scorer: Scorer = default_scorer,
    token_counter: TokenCounter = default_token_counter,
    is_active: ActivePredicate = default_is_active,
    now: datetime | None = None,
) -> dict[str, list[E]]:
    """Fill each pool in order from what earlier pools left; map name to entries.

    >>> store = [{"id": "a", "type": "fact", "content": "x" * 40}]
    >>> retrieve_pools(store, [Pool("facts", 100, 5, types=["fact"])],
    ...                now=datetime(2026, 1, 1))["facts"][0]["id"]
    'a'

    Within each pool, as in :func:`retrieve`: active entries of the pool's types;
    always-scope ones first (input order, outside both caps), then the rest by
    ``(-score, created, id, input index)``, taken greedily while the count is
    below ``max_entries`` and the tokens fit ``max_tokens`` (an entry that does
    not fit is skipped, a later smaller one may still fit).

    Facts about the result: its keys are the pool names in pool order; each
    input object appears at most once across all pools (identity, not
    equality); each pool's context cost is <= its ``max_tokens`` and count <=
    its ``max_entries``; every active always-scope entry whose type some pool
    accepts is in the first such pool. ``entries`` is read once; each entry is
    scored at most once and never modified. Cost: O(n log n) for n entries
    plus O(p * n) for p pools.

    Raises:
        TypeError: an entry is not a Mapping, a pool is not a Pool, a hook is
            not callable, ``now``/``context`` has the wrong type, the scorer
            returns a non-number or the counter a non-int.
        ValueError: duplicate pool names, or the scorer returns NaN.
        Errors raised by the caller's scorer, counter or predicate propagate
        unchanged.
    """
    selection = _select(
        entries, pools, context, scorer, token_counter, is_active, now, trace=False
    )
    return selection.results  # type: ignore[return-value]


def retrieve(
    entries: Iterable[E],
    pool: Pool,
    context: Context | None = None,
    *,
    scorer: Scorer = default_scorer,
    token_counter: TokenCounter = default_token_counter,
    is_active: ActivePredicate = default_is_active,
    now: datetime | None = None,
) -> list[E]:
    """Select one pool's entries: always-scope first, then the best that fit.

    >>> store = [{"id": "a", "scope": "always", "content": "big " * 100},
    ...          {"id": "b", "content": "small"}]
    >>> [e["id"] for e in retrieve(store, Pool("p", 10, 1), now=datetime(2026, 1, 1))]
    ['a', 'b']

    Rules, in order:

    1. Keep entries with a true ``is_active(entry)`` whose ``type`` (default
       ``"note"``) is in ``pool.types`` (None accepts every type).
    2. Every one with ``scope == "always"`` is returned first, in input order,
       and counts against neither cap.
    3. The others are scored once (``scorer(entry, context, now=now)``) and
       sorted by ``(-score, created, id, input index)``.
    4. Greedy fill: take an entry while fewer than ``max_entries`` are taken and
       ``used + cost <= max_tokens``; skip one that does not fit and go on.
       Cost is a positive int ``token_count``, else ``token_counter(content)``,
       and at least 1: nothing is free.

    The result holds the input objects themselves; their context costs total
    at most ``max_tokens``. Cost: O(n log n).

    Raises:
        As :func:`retrieve_pools`.
    """
    if not isinstance(pool, Pool):
        raise TypeError(f"pool must be a Pool, got {type(pool).__name__}")
    return retrieve_pools(
        entries,
        [pool],
        context,
        scorer=scorer,
        token_counter=token_counter,
        is_active=is_active,
        now=now,
    )[pool.name]


def render(
    results: Mapping[str, Iterable[Entry]],
    *,
    headers: Mapping[str, str] | None = None,
) -> str:
    """The text an agent injects: each non-empty pool under a header line.

    >>> print(render({"core": [{"content": "Never force-push."}], "work": [],
    ...               "facts": [{"content": "CI runs on\\nci-large."}]},
    ...              headers={"core": "Corrections (always apply)"}), end="")
    ## Corrections (always apply)
    - Never force-push.
    <BLANKLINE>
    ## facts
    - CI runs on
      ci-large.

    Pools come in the order of ``results`` (a :func:`retrieve_pools` result);
    an empty pool prints nothing. The header line is ``## `` and the pool's
    name, or ``headers[name]`` when given. Each entry is ``- `` and its
    content (as retrieval reads it: missing or None is "", another value its
    ``str()``), once, in result order; a multi-line content's later lines are
    indented two spaces, so it never runs into the next entry. Blocks are
    separated by a blank line; the text ends with a newline, or is "" when
    every pool is empty. Cost: O(total content length).

    Raises:
        TypeError: ``results`` is not a Mapping, an entry is not a Mapping, or
            a header is not a str.
        ValueError: ``headers`` names a pool that is not in ``results`` (a
            typo would otherwise go unnoticed).
    """
    if not isinstance(results, Mapping):
        raise TypeError(f"results must be a Mapping, got {type(results).__name__}")
    titles: Mapping[str, str] = {} if headers is None else headers
    for name, title in titles.items():
        if name not in results:
            raise ValueError(
                f"headers names pool {name!r}, which is not in results; "
                f"expected one of {sorted(map(str, results))}"
            )
        if not isinstance(title, str):
            raise TypeError(
                f"headers[{name!r}] must be a str, got {type(title).__name__}"
            )
    blocks = []
    for name, chosen in results.items():
        lines = []
        for position, entry in enumerate(chosen):
            if not isinstance(entry, Mapping):
                raise TypeError(
                    f"results[{name!r}][{position}] must be a Mapping, "
                    f"got {type(entry).__name__}"
                )
            first, *rest = _content(entry).splitlines() or [""]
            lines.append(f"- {first}".rstrip())
            lines.extend(f"  {line}".rstrip() for line in rest)
        if lines:
            blocks.append(f"## {titles.get(name, name)}\n" + "\n".join(lines) + "\n")
    return "\n".join(blocks)


# --- Visibility: explain, validate, audit ---

INACTIVE: Final = "inactive"
NO_POOL: Final = "no_pool"
DUPLICATE: Final = "duplicate"

# explain() and validate() warn when always-scope entries, which bypass every
# cap, cost more than this many tokens together (or half of all pools' room).
ALWAYS_TOKENS_WARNING: Final = 4000


@dataclass(frozen=True)
class Decision:
    """The decisive outcome for one input entry.

    ``outcome`` is ``always``, ``selected``, ``over_tokens``, ``entry_cap``
    (with the first pool that considered it), ``inactive`` (``reason`` is
    ``status``, ``superseded`` or ``predicate``), ``duplicate`` (the same
    object listed earlier; ``reason`` names that position) or ``no_pool``.
    ``taken_earlier_in`` names the later pools that also admit the entry but
    found it already taken.
    """

    index: int
    id: object
    type: object
    outcome: str
    pool: str | None = None
    reason: str | None = None
    score: float | None = None
    cost: int | None = None
    used: int | None = None
    taken_earlier_in: tuple[str, ...] = ()


@dataclass(frozen=True)
class PoolSummary:
    """What one pool spent, and how many eligible entries it left out."""

    name: str
    tokens_used: int
    max_tokens: int
    entries_used: int
    max_entries: int
    left_out: int
    always_count: int
    always_tokens: int


@dataclass(frozen=True)
class Explanation:
    """Why each entry loaded or not; :func:`explain` builds it."""

    decisions: tuple[Decision, ...]
    pools: tuple[PoolSummary, ...]
    warnings: tuple[str, ...]
    steps: tuple[Step, ...]
    entries: tuple[Entry, ...] = ()

    @property
    def always_tokens(self) -> int:
        """Tokens of the always-scope entries loaded, which no cap limits."""
        return sum(p.always_tokens for p in self.pools)

    def selected(self) -> dict[str, list[Entry]]:
        """The selection, equal to :func:`retrieve_pools` on the same arguments."""
        result: dict[str, list[Entry]] = {pool.name: [] for pool in self.pools}
        for step in self.steps:
            if step.outcome in (TAKEN, TAKEN_ALWAYS):
                result[step.pool].append(self.entries[step.index])
        return result

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dicts: decisions, pools and warnings."""
        return {
            "decisions": [_json_safe(vars(d)) for d in self.decisions],
            "pools": [vars(p).copy() for p in self.pools],
            "always_tokens": self.always_tokens,
            "warnings": list(self.warnings),
        }

    def render(self) -> str:
        """A text table: one row per entry, then the pools, then the warnings."""
        header = (
            "#",
            "id",
            "type",
            "outcome",
            "pool",
            "score",
            "cost",
            "total",
            "taken before",
        )
        rows = [header]
        for d in self.decisions:
            rows.append(
                (
                    str(d.index),
                    "" if d.id is None else str(d.id),
                    str(d.type),
                    d.outcome if d.reason is None else f"{d.outcome}:{d.reason}",
                    d.pool or "",
                    "" if d.score is None else f"{d.score:.3f}",
                    "" if d.cost is None else str(d.cost),
                    "" if d.used is None else str(d.used),
                    ",".join(d.taken_earlier_in),
                )
            )
        lines = _table(rows)
        lines.append("")
        for p in self.pools:
            lines.append(
                f"pool {p.name}: tokens {p.tokens_used}/{p.max_tokens}, "
                f"entries {p.entries_used}/{p.max_entries}, "
                f"left out {p.left_out}, always {p.always_count} "
                f"({p.always_tokens} tokens)"
            )
        lines.append(f"always-scope total: {self.always_tokens} tokens")
        lines.extend(f"warning: {w}" for w in self.warnings)
        return "\n".join(lines) + "\n"


def _table(rows: Sequence[Sequence[str]]) -> list[str]:
    """Rows as left-aligned columns two spaces apart."""
    widths = [max(len(row[col]) for row in rows) for col in range(len(rows[0]))]
    return [
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip()
        for row in rows
    ]


def _json_safe(data: dict[str, Any]) -> dict[str, Any]:
    """Values that json.dumps accepts: ids and types not JSON-native become str."""
    return {
        key: value
        if value is None or isinstance(value, (str, int, float))
        else repr(value)
        for key, value in data.items()
    }


def _inactive_reason(entry: Entry, is_active: ActivePredicate) -> str:
    if is_active is not default_is_active:
        return "predicate"
    status = entry.get("status")
    return "superseded" if status is None or status == ACTIVE_STATUS else "status"


def explain(
    entries: Iterable[Entry],
    pools: Sequence[Pool] | Iterable[Pool],
    context: Context | None = None,
    *,
    scorer: Scorer = default_scorer,
    token_counter: TokenCounter = default_token_counter,
    is_active: ActivePredicate = default_is_active,
    now: datetime | None = None,
) -> Explanation:
    """Report what :func:`retrieve_pools` decides for every entry, and why.

    >>> store = [{"id": "a", "content": "x" * 40}, {"id": "b", "status": "old"}]
    >>> report = explain(store, [Pool("p", 5, 1)], now=datetime(2026, 1, 1))
    >>> [(d.id, d.outcome, d.reason) for d in report.decisions]
    [('a', 'over_tokens', None), ('b', 'inactive', 'status')]
    >>> report.warnings
    ("pool 'p' had 1 eligible entries and selected none",)

    The same code path as :func:`retrieve_pools` computes it, so
    ``explain(...).selected()`` equals ``retrieve_pools(...)``. An entry
    skipped in one pool and taken by a later one is reported as taken; all
    per-pool steps stay in ``steps``. Warnings: an active always-scope entry
    that no pool admits, a pool with eligible entries that selected none, and
    always-scope entries costing more than all pools' ``max_tokens`` together.
    Cost: O(n log n + p * n), and every eligible entry is costed.

    Raises:
        As :func:`retrieve_pools`.
    """
    checked = _check_pools(pools)
    selection = _select(
        entries, checked, context, scorer, token_counter, is_active, now, trace=True
    )
    store = selection.entries
    decisive: dict[int, Step] = {}
    later: dict[int, list[str]] = {}
    public_steps = selection.steps
    for step in public_steps:
        if step.outcome == TAKEN_EARLIER:
            later.setdefault(step.index, []).append(step.pool)
        elif step.index not in decisive or step.outcome in (TAKEN, TAKEN_ALWAYS):
            decisive[step.index] = step

    decisions = []
    warnings = []
    for index, entry in enumerate(store):
        ident = entry.get("id")
        kind = selection.types[index]
        first = selection.duplicates.get(index)
        if first is not None:
            decisions.append(
                Decision(index, ident, kind, DUPLICATE, reason=f"entries[{first}]")
            )
            continue
        if not selection.active[index]:
            decisions.append(
                Decision(
                    index,
                    ident,
                    kind,
                    INACTIVE,
                    reason=_inactive_reason(entry, is_active),
                )
            )
            continue
        found = decisive.get(index)
        if found is None:
            decisions.append(Decision(index, ident, kind, NO_POOL))
            if entry.get("scope") == ALWAYS_SCOPE:
                warnings.append(
                    f"always-scope entry {ident!r} of type {kind!r} is in no pool"
                )
            continue
        decisions.append(
            Decision(
                index,
                ident,
                kind,
                found.outcome,
                pool=found.pool,
                score=found.score,
                cost=found.cost,
                used=None if found.outcome == TAKEN_ALWAYS else found.used,
                taken_earlier_in=tuple(later.get(index, ())),
            )
        )

    summaries = []
    for pool in checked:
        mine = [s for s in public_steps if s.pool == pool.name]
        taken = [s for s in mine if s.outcome == TAKEN]
        always = [s for s in mine if s.outcome == TAKEN_ALWAYS]
        left_out = sum(s.outcome in (SKIPPED_TOKENS, SKIPPED_ENTRIES) for s in mine)
        summaries.append(
            PoolSummary(
                pool.name,
                sum(s.cost or 0 for s in taken),
                pool.max_tokens,
                len(taken),
                pool.max_entries,
                left_out,
                len(always),
                sum(_cost(store[s.index], s.index, token_counter) for s in always),
            )
        )
        if left_out and not taken:
            warnings.append(
                f"pool {pool.name!r} had {left_out} eligible entries and selected none"
            )
    always_tokens = sum(p.always_tokens for p in summaries)
    budget = sum(p.max_tokens for p in checked)
    if always_tokens > budget:
        warnings.append(
            f"always-scope entries cost {always_tokens} tokens, more than the "
            f"{budget} of all pools' max_tokens together"
        )
    elif always_tokens > ALWAYS_TOKENS_WARNING or 2 * always_tokens > budget:
        warnings.append(
            f"always-scope entries cost {always_tokens} tokens, which no cap "
            f"limits (more than {ALWAYS_TOKENS_WARNING} or half of the {budget} "
            f"of all pools' max_tokens); check who may write scope='always'"
        )
    return Explanation(
        tuple(decisions),
        tuple(summaries),
        tuple(warnings),
        tuple(public_steps),
        tuple(store),
    )


@dataclass(frozen=True)
class Problem:
    """One finding of :func:`validate`; ``severity`` is ``error`` or ``warning``."""

    index: int
    id: object
    severity: str
    field: str
    message: str


_TEXT_FIELDS: Final = ("scope", "status", "type")


def _entry_problems(index: int, entry: Entry) -> list[Problem]:
    """The problems of one mapping entry, field by field."""
    ident = entry.get("id")
    found: list[Problem] = []

    def add(severity: str, field: str, message: str) -> None:
        found.append(Problem(index, ident, severity, field, message))

    content = entry.get("content")
    if content is None:
        add("warning", "content", "content is missing")
    elif not isinstance(content, str):
        add("warning", "content", f"content should be a str, got {_kind(content)}")
    priority = entry.get("base_priority")
    if priority is not None:
        if not isinstance(priority, numbers.Real) or isinstance(priority, bool):
            add("error", "base_priority", f"must be a real number, got {priority!r}")
        elif math.isnan(_to_float(priority)):
            add("error", "base_priority", "must not be NaN")
    created = entry.get("created")
    if created is not None and _created_seconds(created) is None:
        add("warning", "created", f"cannot be read as a date, got {created!r}")
    count = entry.get("token_count")
    if count is not None and (type(count) is not int or count <= 0):
        add("warning", "token_count", f"must be a positive int, got {count!r}")
    tags = entry.get("tags")
    if tags is not None and not isinstance(tags, str):
        if not isinstance(tags, (list, tuple, set, frozenset)):
            add("error", "tags", f"must be a list of str, got {_kind(tags)}")
        elif not all(isinstance(tag, str) for tag in tags):
            add("warning", "tags", "must contain only str")
    for field in _TEXT_FIELDS:
        value = entry.get(field)
        if value is not None and not isinstance(value, str):
            add("warning", field, f"should be a str, got {_kind(value)}")
    return found


def _kind(value: object) -> str:
    return type(value).__name__


def validate(entries: Iterable[object]) -> list[Problem]:
    """List the problems of a store, in input order; an empty list means clean.

    >>> [p.message for p in validate([{"id": 1, "content": "x"}, {"id": 1}])]
    ['content is missing', 'duplicate id 1 (first at entries[0])']

    Errors make retrieval raise or mean the store is not what it says: an
    entry that is not a mapping, a non-numeric or NaN ``base_priority``,
    ``tags`` that are not a list, duplicate ids. Warnings are silently
    tolerated by retrieval but probably wrong: missing content, unparseable
    ``created``, a ``token_count`` that is not a positive int, non-str tags,
    ``scope``/``status``/``type`` that are not str, and ``superseded_by``
    naming an id that is not in the store. Cost: O(n).
    """
    store = list(entries)
    problems: list[Problem] = []
    first: dict[object, int] = {}
    for index, entry in enumerate(store):
        if not isinstance(entry, Mapping):
            message = f"must be an object, got {_kind(entry)}"
            problems.append(Problem(index, None, "error", "", message))
            continue
        problems.extend(_entry_problems(index, entry))
        ident = entry.get("id")
        if ident is None:
            continue
        try:
            earlier = first.setdefault(ident, index)
        except TypeError:
            message = f"must be hashable, got {_kind(ident)}"
            problems.append(Problem(index, ident, "error", "id", message))
            continue
        if earlier != index:
            problems.append(
                Problem(
                    index,
                    ident,
                    "error",
                    "id",
                    f"duplicate id {ident!r} (first at entries[{earlier}])",
                )
            )
    for index, entry in enumerate(store):
        if not isinstance(entry, Mapping):
            continue
        target = entry.get("superseded_by")
        if target is None or isinstance(target, bool):
            continue
        try:
            known = target in first
        except TypeError:
            known = False
        if not known:
            problems.append(
                Problem(
                    index,
                    entry.get("id"),
                    "warning",
                    "superseded_by",
                    f"names id {target!r}, which is not in the store",
                )
            )
    problems.extend(_always_budget_problem(store))
    problems.sort(key=lambda p: p.index)
    return problems


def _always_budget_problem(store: list[object]) -> list[Problem]:
    """A warning on the entry where active always-scope entries pass the limit.

    Always-scope entries bypass every cap, so their total is a trust decision,
    not a budget: past ``ALWAYS_TOKENS_WARNING`` default-counted tokens the
    host should check who may write them. Costs are counted as retrieval
    would with the default counter; entries retrieval would reject are
    skipped here, since they already have their own error.
    """
    total = 0
    crossed: tuple[int, object] | None = None
    count = 0
    for index, entry in enumerate(store):
        if not isinstance(entry, Mapping) or entry.get("scope") != ALWAYS_SCOPE:
            continue
        try:
            if not default_is_active(entry):
                continue
            cost = _cost(entry, index, default_token_counter)
        except (TypeError, ValueError):  # e.g. content too large an int for str()
            continue
        count += 1
        total += cost
        if crossed is None and total > ALWAYS_TOKENS_WARNING:
            crossed = (index, entry.get("id"))
    if crossed is None:
        return []
    index, ident = crossed
    message = (
        f"active always-scope entries cost {total} tokens in all ({count} "
        f"entries; the total passes {ALWAYS_TOKENS_WARNING} here); no cap "
        "limits them, so check who may write scope='always'"
    )
    return [Problem(index, ident, "warning", "scope", message)]


@dataclass(frozen=True)
class TypeAudit:
    """How one entry type fared over a batch of queries, pools vs single budget."""

    type: str
    queries_pools: int
    queries_single: int
    share_pools: float
    share_single: float


@dataclass(frozen=True)
class Audit:
    """What :func:`audit` measured; ``always_*`` count every-entry loads."""

    queries: int
    types: tuple[TypeAudit, ...]
    always_entries: int
    always_every_pools: int
    always_every_single: int

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dicts."""
        data = vars(self).copy()
        data["types"] = [vars(t).copy() for t in self.types]
        return data

    def render(self) -> str:
        """The table: per type, queries with a load and token share, both ways."""
        rows = [
            ("type", "queries single", "queries pools", "share single", "share pools")
        ]
        for t in self.types:
            rows.append(
                (
                    t.type,
                    f"{t.queries_single}/{self.queries}",
                    f"{t.queries_pools}/{self.queries}",
                    f"{t.share_single:.1%}",
                    f"{t.share_pools:.1%}",
                )
            )
        lines = _table(rows)
        lines.append("")
        lines.append(
            f"always-scope entries loaded on every query: "
            f"single {self.always_every_single}/{self.always_entries}, "
            f"pools {self.always_every_pools}/{self.always_entries}"
        )
        return "\n".join(lines) + "\n"


class _NoScope(Mapping[str, Any]):
    """A read-only view of an entry without ``scope``, for the baseline."""

    __slots__ = ("entry",)

    def __init__(self, entry: Entry) -> None:
        self.entry = entry

    def __getitem__(self, key: str) -> Any:
        if key == "scope":
            raise KeyError(key)
        return self.entry[key]

    def __iter__(self) -> Iterator[str]:
        return (key for key in self.entry if key != "scope")

    def __len__(self) -> int:
        return sum(1 for _ in self)


def audit(
    entries: Iterable[Entry],
    pools: Sequence[Pool] | Iterable[Pool],
    contexts: Iterable[Context | None],
    *,
    scorer: Scorer = default_scorer,
    token_counter: TokenCounter = default_token_counter,
    is_active: ActivePredicate = default_is_active,
    now: datetime | None = None,
) -> Audit:
    """Measure starvation: per type, pools against one single ranked budget.

    >>> store = [{"id": "c", "type": "correction", "scope": "always",
    ...           "content": "x" * 40, "base_priority": 1},
    ...          {"id": "t", "type": "task", "content": "y" * 40}]
    >>> pools = [Pool("core", 0, 0, ["correction"]), Pool("work", 10, 1, ["task"])]
    >>> result = audit(store, pools, [None], now=datetime(2026, 1, 1))
    >>> [(t.type, t.queries_single, t.queries_pools) for t in result.types]
    [('correction', 0, 1), ('task', 1, 1)]

    For each context, :func:`retrieve_pools` runs once with ``pools`` and once
    with the baseline: one ``Pool(types=None)`` with the summed ``max_tokens``
    and ``max_entries``, where always-scope entries are ranked like the rest
    (the design pools replace). Per type (as ``str``): on how many queries at
    least one entry loaded, and its share of all loaded tokens (always-scope
    included). ``always_every_*``: how many active always-scope entries
    loaded on every query. Cost: two retrievals per context.

    Raises:
        As :func:`retrieve_pools`.
    """
    checked = _check_pools(pools)
    store = list(entries)
    views = [_NoScope(e) if isinstance(e, Mapping) else e for e in store]
    single = Pool(
        "single",
        sum(p.max_tokens for p in checked),
        sum(p.max_entries for p in checked),
    )
    position = {id(view): index for index, view in enumerate(views)}
    position.update({id(entry): index for index, entry in enumerate(store)})
    hits = {"pools": {}, "single": {}}  # type: dict[str, dict[str, int]]
    tokens = {"pools": {}, "single": {}}  # type: dict[str, dict[str, int]]
    always_loads = {"pools": {}, "single": {}}  # type: dict[str, dict[int, int]]
    queries = 0
    for context in contexts:
        queries += 1
        runs = {
            "pools": _select(
                store, checked, context, scorer, token_counter, is_active, now, False
            ),
            "single": _select(
                views,
                [single],
                context,
                scorer,
                token_counter,
                lambda view: is_active(view.entry),  # type: ignore[attr-defined]
                now,
                False,
            ),
        }
        for mode, selection in runs.items():
            seen: set[str] = set()
            for chosen in selection.results.values():
                for loaded in chosen:
                    index = position[id(loaded)]
                    original = store[index]
                    kind = str(selection.types[index])
                    seen.add(kind)
                    cost = _cost(original, index, token_counter)
                    tokens[mode][kind] = tokens[mode].get(kind, 0) + cost
                    if original.get("scope") == ALWAYS_SCOPE:
                        loads = always_loads[mode]
                        loads[index] = loads.get(index, 0) + 1
            for kind in seen:
                hits[mode][kind] = hits[mode].get(kind, 0) + 1
    names = sorted(
        {str(DEFAULT_TYPE if e.get("type") is None else e.get("type")) for e in store}
    )
    always_ids = [
        i
        for i, e in enumerate(store)
        if e.get("scope") == ALWAYS_SCOPE and is_active(e)
    ]
    totals = {mode: sum(tokens[mode].values()) or 1 for mode in tokens}
    types = tuple(
        TypeAudit(
            name,
            hits["pools"].get(name, 0),
            hits["single"].get(name, 0),
            tokens["pools"].get(name, 0) / totals["pools"],
            tokens["single"].get(name, 0) / totals["single"],
        )
        for name in names
    )
    return Audit(
        queries,
        types,
        len(always_ids),
        sum(1 for i in always_ids if always_loads["pools"].get(i, 0) == queries),
        sum(1 for i in always_ids if always_loads["single"].get(i, 0) == queries),
    )


DEMO_NOW: Final = datetime(2026, 3, 1, tzinfo=timezone.utc)

# Wording per type: (type, count, priority range, age range in days, phrases).
_DEMO_KINDS: Final = (
    (
        "correction",
        8,
        (9, 10),
        (0, 30),
        (
            "Never force-push to main; open a pull request instead",
            "Run the migrations on staging before production",
            "Dates in the API are UTC, never local time",
            "Do not paste customer data into issue comments",
        ),
    ),
    (
        "task",
        80,
        (6, 9),
        (0, 20),
        (
            "Finish the billing export for the {w} report",
            "Review the pull request that touches {w}",
            "Fix the flaky test in the {w} module",
            "Reply to the support ticket about {w}",
        ),
    ),
    (
        "fact",
        80,
        (5, 7),
        (0, 60),
        (
            "The {w} service runs on Postgres 15 behind pgbouncer",
            "Staging deploys from the release branch of {w}",
            "The {w} dashboard lives in Grafana under Ops",
            "Rate limits for {w} are 100 requests per minute",
        ),
    ),
    (
        "skill",
        30,
        (3, 4),
        (60, 200),
        (
            "How to bisect a regression in {w} with git bisect run",
            "How to profile a slow {w} query with EXPLAIN ANALYZE",
            "How to roll back a bad {w} deploy in one command",
        ),
    ),
    (
        "growth",
        20,
        (2, 3),
        (90, 250),
        (
            "I rush {w} reviews on Fridays; slow down and read the tests",
            "Ask earlier when {w} requirements are vague",
        ),
    ),
    (
        "episode",
        80,
        (4, 6),
        (0, 40),
        (
            "Paired with Sam on the {w} outage; root cause was a stale cache",
            "Demoed the {w} feature to the team; they asked for CSV export",
            "Spent the afternoon on {w} alerts that turned out to be noise",
        ),
    ),
)
_DEMO_WORDS: Final = ("billing", "search", "auth", "invoices", "checkout", "reports")
_DEMO_POOLS: Final = (
    ("core", 0, 0, ("correction",)),
    ("work", 600, 4, ("task",)),
    ("facts", 400, 4, ("fact",)),
    ("skills", 300, 2, ("skill",)),
    ("growth", 200, 1, ("growth",)),
    ("episodes", 300, 2, ("episode",)),
)


def demo_pools() -> list[Pool]:
    """The six pools of the demo: corrections always, then one pool per type."""
    return [Pool(*spec) for spec in _DEMO_POOLS]


def demo_store(flood: int = 0) -> list[dict[str, Any]]:
    """The demo's sample store, dated for :data:`DEMO_NOW`; ``flood`` adds
    that many fresh top-priority tasks."""
    import random

    rng = random.Random(3)
    store: list[dict[str, Any]] = []
    for kind, count, (low, high), (young, old), phrases in _DEMO_KINDS:
        for number in range(count):
            word = rng.choice(_DEMO_WORDS)
            age = rng.uniform(young, old)
            store.append(
                {
                    "id": f"{kind}-{number}",
                    "type": kind,
                    "content": rng.choice(phrases).format(w=word),
                    "base_priority": rng.randint(low, high),
                    "created": (DEMO_NOW.timestamp() - age * _SECONDS_PER_DAY),
                    "tags": [word],
                    **({"scope": ALWAYS_SCOPE} if kind == "correction" else {}),
                }
            )
    for number in range(flood):
        word = _DEMO_WORDS[number % len(_DEMO_WORDS)]
        store.append(
            {
                "id": f"flood-{number}",
                "type": "task",
                "content": f"URGENT: triage alert {number} from the {word} pipeline",
                "base_priority": 10,
                "created": DEMO_NOW.timestamp() - 3600,
                "tags": [word],
            }
        )
    return store


def _demo() -> str:
    """The text ``poolsplit demo`` prints."""
    pools = demo_pools()
    queries = [
        {"message": f"{verb} the {word} work", "tags": [word]}
        for verb in ("plan", "debug", "review", "ship", "explain")
        for word in _DEMO_WORDS
    ]
    single = sum(p.max_tokens for p in pools), sum(p.max_entries for p in pools)
    parts = []
    for title, flood in (("Everyday store", 0), ("Flood: 300 urgent tasks", 300)):
        store = demo_store(flood)
        result = audit(store, pools, queries, now=DEMO_NOW)
        parts.append(
            f"== {title}: {len(store)} entries, {len(queries)} queries; "
            f"single budget {single[0]} tokens / {single[1]} entries "
            f"vs {len(pools)} pools ==\n{result.render()}"
        )
    return "\n".join(parts)


# --- Command line ---


class _CliError(Exception):
    """A user error the command line reports on one line with exit status 2."""


def _read_text(path: str) -> str:
    import sys

    if path == "-":
        return sys.stdin.read()
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    except (OSError, UnicodeDecodeError) as exc:
        raise _CliError(f"{path}: cannot read: {exc}") from None


def _parse_json(text: str, where: str, line: int) -> Any:
    import json

    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise _CliError(
            f"{where}:{line + exc.lineno - 1}: invalid JSON: {exc.msg}"
        ) from None
    except RecursionError:
        raise _CliError(f"{where}:{line}: invalid JSON: nested too deeply") from None
    except ValueError as exc:  # an int past sys.get_int_max_str_digits()
        raise _CliError(f"{where}:{line}: invalid JSON: {exc}") from None


def _load_lines(path: str, kind: str, *, objects: bool = True) -> list[Any]:
    """A JSON array, or JSON Lines (blank lines skipped), of objects.

    With ``objects`` False any JSON value is accepted (validate reports them).
    """
    text = _read_text(path)
    where = "<stdin>" if path == "-" else path
    if text.lstrip().startswith("["):
        items = _parse_json(text, where, 1)
        if not isinstance(items, list):  # pragma: no cover - '[' starts a list
            items = [items]
        numbered = [(1, item) for item in items]
    else:
        numbered = [
            (number, _parse_json(line, where, number))
            for number, line in enumerate(text.splitlines(), 1)
            if line.strip()
        ]
    for number, item in numbered:
        if objects and not isinstance(item, dict):
            raise _CliError(f"{where}:{number}: each {kind} must be a JSON object")
    return [item for _, item in numbered]


def _load_pools(path: str) -> list[Pool]:
    text = _read_text(path)
    specs = _parse_json(text, path, 1)
    if not isinstance(specs, list):
        raise _CliError(f"{path}:1: pools must be a JSON array of objects")
    pools = []
    for position, spec in enumerate(specs):
        try:
            if not isinstance(spec, dict):
                raise TypeError(f"must be an object, got {type(spec).__name__}")
            unknown = sorted(set(spec) - {"name", "max_tokens", "max_entries", "types"})
            if unknown:
                raise ValueError(
                    f"unknown key {unknown[0]!r}; "
                    f"expected name, max_tokens, max_entries, types"
                )
            pools.append(Pool(**spec))
        except (TypeError, ValueError) as exc:
            raise _CliError(f"{path}: pools[{position}]: {exc}") from None
    try:
        return _check_pools(pools)
    except ValueError as exc:
        raise _CliError(f"{path}: {exc}") from None


def _parse_now(text: str | None) -> datetime | None:
    if text is None:
        return None
    seconds = _parse_iso(text)
    if seconds is None:
        raise _CliError(f"--now: not an ISO-8601 date or date-time: {text!r}")
    try:
        return datetime.fromtimestamp(seconds, timezone.utc)
    except (OverflowError, OSError, ValueError):  # past year 1 or 9999 in UTC
        raise _CliError(f"--now: out of range: {text!r}") from None


def _context(args: Any) -> dict[str, Any]:
    context: dict[str, Any] = {}
    if args.message is not None:
        context["message"] = args.message
    if args.tags is not None:
        context["tags"] = [tag for tag in args.tags.split(",") if tag]
    if args.project is not None:
        context["project"] = args.project
    return context


def _dumps(data: object) -> str:
    import json

    return json.dumps(data, sort_keys=True, indent=2, ensure_ascii=False, default=str)


def _progress(contexts: list[Any]) -> Iterator[Any]:
    """Yield the queries, counting them on stderr when it is a terminal."""
    import sys

    show = sys.stderr.isatty()
    for number, context in enumerate(contexts, 1):
        if show:
            sys.stderr.write(f"\rquery {number}/{len(contexts)}")
        yield context
    if show:
        sys.stderr.write("\n")


def _run(args: Any) -> tuple[str, int]:
    """Execute one parsed command; return its stdout text and exit status."""
    if args.command == "demo":
        return _demo(), 0
    store = _load_lines(args.store, "entry", objects=args.command != "validate")
    if args.command == "validate":
        problems = validate(store)
        if args.format == "json":
            text = _dumps([vars(p) for p in problems]) + "\n"
        else:
            text = "".join(
                f"entries[{p.index}] (id={p.id!r}) {p.severity}: "
                f"{p.field + ': ' if p.field else ''}{p.message}\n"
                for p in problems
            )
        return text, int(any(p.severity == "error" for p in problems))
    pools = _load_pools(args.pools)
    now = _parse_now(args.now)
    if args.command == "audit":
        contexts = _load_lines(args.queries, "query")
        try:
            result = audit(store, pools, _progress(contexts), now=now)
        except (TypeError, ValueError) as exc:
            raise _CliError(f"{args.store}: {exc}") from None
        if args.format == "json":
            return _dumps(result.to_dict()) + "\n", 0
        return result.render(), 0
    context = _context(args)
    try:
        report = explain(store, pools, context, now=now)
    except (TypeError, ValueError) as exc:
        raise _CliError(f"{args.store}: {exc}") from None
    if args.command == "explain":
        if args.format == "json":
            return _dumps(report.to_dict()) + "\n", 0
        return report.render(), 0
    selected = report.selected()
    if args.format == "json":
        return _dumps(selected) + "\n", 0
    if args.format == "prompt":
        return render(selected), 0
    blocks = []
    for name, chosen in selected.items():
        if not chosen:
            continue
        body = "".join(f"- [{entry.get('id')}] {_content(entry)}\n" for entry in chosen)
        blocks.append(f"## {name}\n{body}")
    return "\n".join(blocks), 0


def main(argv: list[str] | None = None) -> int:
    """Run the ``poolsplit`` command line; return the exit status.

    Exit 0 on success, 1 when ``validate`` finds errors, 2 on a usage error or
    unreadable input (one line on stderr, no traceback).
    """
    import argparse
    import sys

    class Parser(argparse.ArgumentParser):
        def error(self, message: str) -> Any:  # one line instead of usage + error
            raise _CliError(message)

    summary = (__doc__ or "").partition("\n")[0]  # None under python -OO
    parser = Parser(prog="poolsplit", description=summary)
    parser.add_argument("--version", action="version", version=__version__)
    commands = parser.add_subparsers(dest="command", required=True)

    def command(name: str, summary: str, formats: Sequence[str]) -> Any:
        sub = commands.add_parser(name, help=summary, description=summary)
        sub.add_argument("store", metavar="STORE", help="JSON array, JSON Lines or -")
        sub.add_argument("--format", choices=formats, default=formats[0])
        return sub

    for name, summary, formats in (
        ("retrieve", "print the selected entries", ("text", "json", "prompt")),
        ("explain", "show why each entry loaded or not", ("text", "json")),
    ):
        sub = command(name, summary, formats)
        sub.add_argument("--pools", required=True, metavar="POOLS")
        sub.add_argument("--message", metavar="TEXT")
        sub.add_argument("--tags", metavar="A,B")
        sub.add_argument("--project", metavar="P")
        sub.add_argument("--now", metavar="ISO")
    command("validate", "list the problems of a store", ("text", "json"))
    sub = command("audit", "measure starvation, pools vs one budget", ("text", "json"))
    sub.add_argument("--pools", required=True, metavar="POOLS")
    sub.add_argument("--queries", required=True, metavar="QUERIES")
    sub.add_argument("--now", metavar="ISO")
    commands.add_parser("demo", help="audit a built-in sample store")

    try:
        args = parser.parse_args(argv)
        text, status = _run(args)
    except SystemExit as exc:  # --help and --version
        return int(exc.code or 0)
    except _CliError as exc:
        print(f"poolsplit: error: {exc}", file=sys.stderr)
        return 2
    _write(sys.stdout, text)
    return status


def _write(stream: Any, text: str) -> None:
    """Write ``text``; what the stream cannot encode (a lone surrogate from a
    JSON ``"\\ud800"``, say) is written as a backslash escape, not a crash."""
    try:
        stream.write(text)
    except UnicodeEncodeError:
        encoding = getattr(stream, "encoding", None) or "utf-8"
        stream.write(text.encode(encoding, "backslashreplace").decode(encoding))


if __name__ == "__main__":
    raise SystemExit(main())
