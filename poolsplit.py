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

An entry is any ``Mapping``; :class:`EntryDict` lists its keys, all optional.

The runtime comes first (constants, types, one reader per field, the
defaults, the engine, ``retrieve_pools``, ``retrieve``, ``render``,
``explain``, ``validate``, the file readers); below the one line
``# ---- tools ----``, built on public names only, ``audit``, the demo and
the command line. To vendor the runtime alone, delete everything below it.
"""

from __future__ import annotations

import dataclasses
import heapq
import itertools
import math
import numbers
import re
import sys
import unicodedata
import warnings
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime, timedelta, timezone
from functools import lru_cache
from typing import Any, Final, Generic, Protocol, TypedDict, TypeVar, Union

__all__ = [
    "DEFAULT_CACHE_BUDGET",
    "DEFAULT_MAX_BYTES",
    "OUTCOMES",
    "ActivePredicate",
    "ContextError",
    "Decision",
    "EntryDict",
    "EntryError",
    "EntryTypeError",
    "EntryValueError",
    "Explanation",
    "Pool",
    "PoolSummary",
    "PoolsplitWarning",
    "Problem",
    "Scorer",
    "Step",
    "TokenCounter",
    "base_score",
    "clear_caches",
    "default_is_active",
    "default_scorer",
    "default_token_counter",
    "entry_cost",
    "entry_features",
    "entry_type",
    "explain",
    "is_always",
    "load_pools",
    "parse_created",
    "parse_json",
    "read_text",
    "render",
    "retrieve",
    "retrieve_pools",
    "significant_words",
    "validate",
]
__version__ = "0.4.0"

# ===========================================================================
# Constants: the defaults and the default scorer's numbers (README's table)
# ===========================================================================

DEFAULT_TYPE: Final = "note"
DEFAULT_PRIORITY: Final = 5.0
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

# fmt: off
STOPWORDS: Final = frozenset((
    "the", "and", "for", "are", "but", "not", "you", "all", "can", "her", "was",
    "one", "our", "out", "day", "has", "had", "his", "how", "man", "new", "now",
    "old", "see", "two", "way", "who", "did", "its", "let", "put", "say", "she",
    "too", "use", "that", "this", "with", "from", "they", "them", "then", "than",
    "have", "will", "your", "what", "when", "were", "been", "into", "some",
    "more", "very", "just", "over", "only",
))
# fmt: on

# The caches' bytes together: a 100,000-entry store of 40-word contents fits.
DEFAULT_CACHE_BUDGET: Final = 128 * 1024 * 1024
_SECONDS_PER_DAY: Final = 86400.0
_EPOCH: Final = datetime(1970, 1, 1, tzinfo=timezone.utc)
# The largest factor the message term can apply (a share of 1).
_MAX_MESSAGE_FACTOR: Final = 1.0 + MESSAGE_BOOST
# explain() and validate() warn when always-scope entries, which bypass every
# cap, cost more than this many tokens together.
_ALWAYS_TOKENS_WARNING: Final = 4000


# ===========================================================================
# Public types: the entry schema, the hooks, the warning, Pool
# ===========================================================================


class EntryDict(TypedDict, total=False):
    """The entry schema for typed callers; every key is optional.

    Any ``Mapping`` is accepted at run time; messy values have the meanings
    the README's schema table gives.
    """

    id: object  # identifier; breaks ties in the ranking
    content: str | None  # the payload text; missing or None is "", others str()
    type: str | None  # default "note"; pools select by it
    scope: str | None  # "always" loads unconditionally, outside every cap
    tags: list[str] | str | None  # a bare str is one tag
    project: str | None  # None for general entries
    created: str | datetime | date | float | None  # ISO-8601 or POSIX seconds
    token_count: int | None  # precomputed cost; used when a positive int
    base_priority: float | None  # a real number, default 5
    status: str | None  # "active" (the default) or anything else (inactive)
    superseded_by: object  # any truthy value retires the entry


Entry = Mapping[str, Any]
Context = Mapping[str, Any]
E = TypeVar("E", bound=Mapping[str, Any])


class Scorer(Protocol):
    """Ranks one entry for a context; higher loads first. Must not modify it."""

    def __call__(
        self, entry: Entry, context: Context | None, /, *, now: datetime
    ) -> float: ...


class TokenCounter(Protocol):
    """Counts the tokens of an entry's content."""

    def __call__(self, text: str, /) -> int: ...


class ActivePredicate(Protocol):
    """Says whether an entry may load at all (its truth value is used)."""

    def __call__(self, entry: Entry, /) -> object: ...


class PoolsplitWarning(UserWarning):
    """A configuration that loses memory without an error, such as an
    always-scope entry whose type no pool admits.

    ``indices`` holds the positions of the entries it is about, in input
    order (the message names the first few); the command line maps them to
    lines. The message is for people and may change; ``indices`` is API.
    """

    def __init__(self, message: str, *, indices: Iterable[int] = ()) -> None:
        super().__init__(message)
        self.indices: tuple[int, ...] = tuple(indices)


class EntryError(Exception):
    """An error about one entry, raised as :class:`EntryTypeError` or
    :class:`EntryValueError`, so ``except TypeError`` and ``except
    ValueError`` catch it as before.

    ``index`` is the entry's position in the call's entries (None where a
    call has no positions: :func:`default_scorer` on one entry), ``entry_id``
    its ``id`` (None when it has none or is not a Mapping), and ``field`` the
    key at fault (None when no one key is, such as a scorer's bad result).
    The message is for people and may change; these attributes are API.
    """

    def __init__(
        self,
        message: str,
        *,
        index: int | None = None,
        entry_id: object = None,
        field: str | None = None,
    ) -> None:
        super().__init__(message)
        self.index = index
        self.entry_id = entry_id
        self.field = field


class EntryTypeError(EntryError, TypeError):
    """An entry value of the wrong type (a str ``base_priority``, say)."""


class EntryValueError(EntryError, ValueError):
    """An entry value of the right type that cannot be used (a NaN priority)."""


class ContextError(TypeError):
    """A context that cannot be read: not a Mapping, or a key of the wrong type.

    ``index`` is its position in :func:`audit`'s contexts (None for the one
    context of another call) and ``field`` the key at fault (``"message"``,
    ``"tags"``, or None for the context itself).
    """

    def __init__(
        self, message: str, *, index: int | None = None, field: str | None = None
    ) -> None:
        super().__init__(message)
        self.index = index
        self.field = field


def _check_cap(name: str, value: object) -> None:
    """Reject a cap that is not a non-negative int (bool is not an int here)."""
    if type(value) is bool or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if value < 0:
        raise ValueError(f"{name} must be >= 0, got {value!r}")


def _check_types(types: object) -> tuple[str, ...] | None:
    """``types`` as a tuple of str, or None; a bare str would be its letters."""
    if types is None:
        return None
    if isinstance(types, (str, bytes)):
        raise TypeError(
            f"types must be an iterable of str or None, got a bare "
            f"{type(types).__name__} {types!r}; write [{types!r}]"
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
    return normalised  # type: ignore[return-value]


def _is_one_line(text: str) -> bool:
    """Whether ``text`` is one non-blank line of printable characters: a pool
    name or header that cannot start another ``##`` line in a prompt."""
    return text.isprintable() and not text.isspace()


def _check_floor(value: object) -> None:
    """Reject a ``min_score`` that is not None or a real number (NaN included)."""
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(
            f"min_score must be a real number or None, got {type(value).__name__}"
        )
    try:
        floor = float(value)
    except OverflowError:  # an int past 1.8e308: its repr may not even print
        kind = type(value).__name__
        article = "an" if kind[0] in "aeiouAEIOU" else "a"
        raise ValueError(
            f"min_score must be within the float range, got {article} {kind} "
            f"past it; use inf for a floor no score reaches"
        ) from None
    if math.isnan(floor):
        raise ValueError(f"min_score must not be NaN, got {value!r}")


@dataclass(frozen=True)
class Pool:
    """A reserved budget for a group of entry types.

    >>> Pool("skills", max_tokens=400, max_entries=3, types=["skill"])
    Pool(name='skills', max_tokens=400, max_entries=3, types=('skill',), min_score=None)

    ``max_tokens`` and ``max_entries`` cap the context (non-always) entries
    the pool selects; always-scope entries are never counted. ``types`` is
    the tuple of entry types the pool draws from, or None for every type.
    ``min_score`` (pass it by keyword) is the relevance floor: a context
    entry scoring below it is not taken, so the room stays empty rather than
    filled with what is not relevant; None (the default) takes the best that
    fit, however low they score. Always-scope entries ignore it.

    Raises:
        TypeError: a field of the wrong type, including a bare str for
            ``types`` (it would be read as its characters) and a bool cap or
            floor.
        ValueError: an empty ``name`` or one that is not one line of printable
            text (a newline would let it write a header of its own in
            :func:`render`'s prompt), a negative cap, a NaN floor or one
            beyond the float range (``10**400``; ``inf`` is allowed).
    """

    name: str
    max_tokens: int
    max_entries: int
    types: tuple[str, ...] | None = None
    min_score: float | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.name, str):
            raise TypeError(f"name must be a str, got {type(self.name).__name__}")
        if not self.name:
            raise ValueError("name must be a non-empty str, got ''")
        if not _is_one_line(self.name):
            raise ValueError(
                f"name must be one line of printable text, got {self.name!r}"
            )
        _check_cap("max_tokens", self.max_tokens)
        _check_cap("max_entries", self.max_entries)
        object.__setattr__(self, "types", _check_types(self.types))
        _check_floor(self.min_score)


# ===========================================================================
# Entry fields: one reader per key, used by retrieval, scoring, explain and
# validate alike. Each returns the meaning the README's schema table gives.
# ===========================================================================


def _label(index: int | None, entry: Entry) -> str:
    """How errors name an entry: its position and its id."""
    where = "entry" if index is None else f"entries[{index}]"
    return f"{where} (id={entry.get('id')!r})"


def _entry_error(
    failure: Exception | str,
    index: int | None,
    entry: Entry,
    field: str | None,
    kind: type[EntryError] | None = None,
) -> EntryError:
    """The error about ``entry`` at ``index``: its label, then the reason (a
    message, or the failure a value raised, whose class picks
    :class:`EntryValueError` or :class:`EntryTypeError`). Raise it ``from``
    the failure, where there is one."""
    if kind is None:
        kind = EntryValueError if isinstance(failure, ValueError) else EntryTypeError
    return kind(
        f"{_label(index, entry)}: {failure}",
        index=index,
        entry_id=entry.get("id"),
        field=field,
    )


def _content(entry: Entry, index: int | None) -> str:
    """The entry's text: missing or None is "", a non-str value is its str()."""
    content = entry.get("content")
    if type(content) is str:
        return content
    if content is None:
        return ""
    try:
        return content if isinstance(content, str) else str(content)
    except (TypeError, ValueError) as exc:  # the value's own __str__ failed
        raise _entry_error(exc, index, entry, "content") from exc


def entry_type(entry: Entry) -> object:
    """The ``type`` pools match an entry by: missing or None is ``"note"``.

    >>> entry_type({}), entry_type({"type": "skill"})
    ('note', 'skill')
    """
    kind = entry.get("type")
    return DEFAULT_TYPE if kind is None else kind


def is_always(entry: Entry) -> bool:
    """Whether the entry is always-scope: ``scope`` is exactly ``"always"``.

    >>> is_always({"scope": "always"}), is_always({"scope": "Always"})
    (True, False)
    """
    return entry.get("scope") == ALWAYS_SCOPE


def _tags(value: object, where: str) -> Collection[str]:
    """Tags: None is none, a bare str is one tag, non-str items are their str().

    A list, tuple or set of str, the usual case, comes back as it is (checked
    at C speed by ``"".join``) so that no set is built per entry per turn.
    """
    if isinstance(value, (list, tuple, set, frozenset)):  # the usual case first
        try:
            "".join(value)
        except TypeError:  # a non-str item
            return tuple(item if isinstance(item, str) else str(item) for item in value)
        return value
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    raise TypeError(
        f"{where} must be a str or a list of str, got {type(value).__name__}"
    )


def _to_float(value: Any) -> float:
    """``float(value)``, with a number beyond the float range as +-inf.

    JSON allows ``10**400``; ``float()`` raises OverflowError on it, while
    ``1e999`` already parses as inf. Both mean "larger than any float".
    """
    try:
        return float(value)
    except OverflowError:
        return math.inf if value > 0 else -math.inf


def _priority(entry: Entry, index: int | None) -> float:
    """``base_priority`` as a float, default 5; a non-number or NaN raises."""
    value: Any = entry.get("base_priority")
    kind = type(value)
    if kind is float and not math.isnan(value):  # the usual case first
        return float(value)
    if value is None:
        return DEFAULT_PRIORITY
    if not isinstance(value, numbers.Real) or isinstance(value, bool):
        reason = f"base_priority must be a real number, got {kind.__name__} {value!r}"
        raise _entry_error(reason, index, entry, "base_priority", EntryTypeError)
    try:
        priority = _to_float(value)
    except (TypeError, ValueError) as exc:  # the number's own float() failed
        raise _entry_error(exc, index, entry, "base_priority") from exc
    if math.isnan(priority):
        reason = f"base_priority must not be NaN, got {value!r}"
        raise _entry_error(reason, index, entry, "base_priority", EntryValueError)
    return priority


def _token_count(entry: Entry) -> int | None:
    """``token_count`` when it is a positive int (not bool), else None: the
    counter is used instead."""
    count = entry.get("token_count")
    if type(count) is int:
        return count if count > 0 else None
    if isinstance(count, int) and not isinstance(count, bool) and count > 0:
        return int(count)  # an int subclass counts as its value
    return None


_ISO_RE: Final = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})"
    r"(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d+))?)?)?"
    r"\s*(Z|[+-]\d{2}(?::?\d{2})?)?",
    re.ASCII | re.IGNORECASE,
)


def _read_iso(text: str) -> float | None:
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
    elapsed = moment - _EPOCH
    if offset and offset.upper() != "Z":
        sign = -1 if offset[0] == "-" else 1
        digits = offset[1:].replace(":", "")
        # Subtracted as a timedelta, exactly: one rounding to float, at the end.
        elapsed -= timedelta(
            hours=sign * int(digits[:2]), minutes=sign * int(digits[2:4] or 0)
        )
    return elapsed.total_seconds()


K = TypeVar("K")
V = TypeVar("V")
# Bytes of one kept item beyond its key and value: its (value, size) pair,
# the size's int and the dict slot.
_ITEM_BYTES: Final = sys.getsizeof((0, 0)) + sys.getsizeof(1 << 40) + 64


class _Cache(Generic[K, V]):
    """Values computed from keys, in two generations holding together at most
    the cache's share of ``DEFAULT_CACHE_BUDGET`` (keys and values, by
    ``sys.getsizeof``). A hit in the older one moves the item to the newer;
    a new generation starts, the older dropped, when the share is full and,
    for contents, every 8th call (:func:`_new_turn`). An item larger than the
    share is not kept. Threads share it (dict operations are atomic)."""

    def __init__(self, compute: Callable[[K], tuple[V, int]], share: float) -> None:
        self.compute = compute
        self.limit = int(DEFAULT_CACHE_BUDGET * share)
        self.new: dict[K, tuple[V, int]] = {}
        self.old: dict[K, tuple[V, int]] = {}
        self.held = self.held_old = 0  # bytes in ``new`` and ``old``

    def miss(self, key: K) -> V:
        """The value for a key not in the newer generation, kept there."""
        item = self.old.pop(key, None)
        if item is None:
            value, size = self.compute(key)  # the value and its bytes
            item = (value, sys.getsizeof(key) + size + _ITEM_BYTES)
        else:
            self.held_old -= item[1]
        size = item[1]
        if self.held + self.held_old + size > self.limit:
            self.age()  # the older generation goes first, then the newer
            if self.held_old + size > self.limit:
                self.old, self.held_old = {}, 0
        if size <= self.limit:
            self.new[key] = item
            self.held += size
        return item[0]

    def age(self) -> None:
        """Start a new generation; the older one is dropped."""
        self.old, self.held_old, self.new, self.held = self.new, self.held, {}, 0

    def clear(self) -> None:
        self.new, self.old, self.held, self.held_old = {}, {}, 0, 0


def _instant(text: str) -> tuple[float | None, int]:
    return (seconds := _read_iso(text)), sys.getsizeof(seconds)


# Parsed ``created`` strings (about 250 bytes each), a quarter of the budget.
_parse_iso: Final = _Cache(_instant, 1 / 4)


def parse_created(value: object) -> float | None:
    """POSIX seconds (UTC) of a ``created`` value, or None when it has no instant.

    >>> parse_created("2026-01-01T05:30:00+0530"), parse_created(date(2026, 1, 1))
    (1767225600.0, 1767225600.0)

    The one reader of the README's timestamp grammar ("Timestamps"): a str in
    one of its forms, a ``datetime`` (naive is UTC), a ``date`` (its UTC
    midnight) or POSIX seconds (an int or float, not bool, finite). Retrieval,
    scoring, ``validate`` and the command line's ``--now`` all read time this
    way; use it for your own time fields (``expires_at``) so they mean the same.
    """
    if isinstance(value, str):
        item = _parse_iso.new.get(value)  # inline: every entry, every turn
        return _parse_iso.miss(value) if item is None else item[0]
    if isinstance(value, datetime):
        if value.tzinfo is None or value.utcoffset() is None:
            value = value.replace(tzinfo=timezone.utc)
        return (value - _EPOCH).total_seconds()
    if isinstance(value, date):
        midnight = datetime(value.year, value.month, value.day, tzinfo=timezone.utc)
        return (midnight - _EPOCH).total_seconds()
    if type(value) is not bool and isinstance(value, (int, float)):
        seconds = _to_float(value)
        return seconds if math.isfinite(seconds) else None
    return None


SortKey = tuple[int, Union[int, float, str]]


def _created_key(entry: Entry, seconds: float | None) -> SortKey:
    """Tie order for ``created``, given its instant ``seconds``: missing
    first, then by instant, then the values that have no instant, all equal
    (the id decides among them).

    Comparing raw values would raise TypeError on a store mixing str and
    datetime; ordering by the parsed instant also makes ``+05:00`` and ``Z``
    forms of one moment, or a str and a datetime of it, tie.
    """
    if seconds is not None:
        return (1, seconds)
    return (0, "") if entry.get("created") is None else (2, "")


def _id_key(entry: Entry) -> SortKey:
    """Tie order for ``id``: missing as "", str, then numbers by exact value
    (not bool, not NaN), then every other value, all equal (input position
    decides among them)."""
    value = entry.get("id")
    if value is None:
        return (0, "")
    if isinstance(value, str):
        return (0, value)
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    if number and not (isinstance(value, float) and math.isnan(value)):
        return (1, value)  # an int and a float compare exactly
    return (2, "")


# Runs of MIN_WORD_LENGTH or more letters or digits (\w without "_").
_WORD_RE: Final = re.compile(rf"[^\W_]{{{MIN_WORD_LENGTH},}}")
_ASCII_WORD_RE: Final = re.compile(rf"[a-z0-9]{{{MIN_WORD_LENGTH},}}")


def significant_words(text: str) -> frozenset[str]:
    """The words the message term compares: the lowercase letter/digit runs
    of 3+ characters of ``text`` that are not stopwords.

    >>> sorted(significant_words("Roll back the checkout deploy"))
    ['back', 'checkout', 'deploy', 'roll']

    Public so that an index built outside the library (poolsplit-memory's
    recall index) finds the entries a message can boost by the same rule.

    Raises:
        TypeError: ``text`` is not a str.
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    # Non-ASCII text is NFC-normalised first so that a decomposed accent stays
    # inside its word; on ASCII text this is exactly ``[a-z0-9]{3,}``.
    if text.isascii():
        words = _ASCII_WORD_RE.findall(text.lower())
    else:
        words = _WORD_RE.findall(unicodedata.normalize("NFC", text).lower())
    return frozenset(words).difference(STOPWORDS)


def _word_tuple(text: str) -> tuple[tuple[str, ...], int]:
    """A content's words, interned, and their bytes (a tuple is a third of a
    frozenset; a shared word counts for the content that brought it first)."""
    words = list(significant_words(text))
    kept = tuple(map(sys.intern, words))
    fresh = [word for word, same in zip(words, kept) if word is same]
    return kept, sys.getsizeof(kept) + sum(map(sys.getsizeof, fresh))


# Each content's words (about 700 bytes with 40), three quarters of the budget.
_content_words: Final = _Cache(_word_tuple, 3 / 4)
_calls = itertools.count(1)


def _new_turn() -> None:
    """Every 8th call, drop the contents no call read in the 8 to 16 before
    (at every call, promoting each item read cost up to a third of a turn)."""
    if next(_calls) % 8 == 0:
        _content_words.age()


def clear_caches() -> None:
    """Empty the caches of parsed timestamps and content words.

    They hold at most ``DEFAULT_CACHE_BUDGET`` bytes together (128 MiB, keys
    and values by ``sys.getsizeof``; a quarter for timestamps), drop a content
    no call read in the last 8 to 16 calls, never change a result, and
    clearing only frees memory."""
    _parse_iso.clear()
    _content_words.clear()


# ===========================================================================
# The defaults: the active rule, the cost rule and the score
# ===========================================================================


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


def default_token_counter(text: str) -> int:
    """Estimate tokens as ``max(1, len(text) // 4)``: about four characters each.

    >>> default_token_counter("twelve chars")
    3
    """
    return max(1, len(text) // 4)


def entry_cost(
    entry: Entry,
    token_counter: TokenCounter = default_token_counter,
    *,
    index: int | None = None,
) -> int:
    """Tokens an entry costs in a pool: a positive int ``token_count``, else
    ``token_counter(content)``, and never below 1: nothing is free.

    >>> entry_cost({"content": "twelve chars"}), entry_cost({"token_count": 40})
    (3, 40)

    ``index``, the entry's position in its list, is named in errors.

    Raises:
        EntryTypeError, EntryValueError: the content's ``str()`` failed, or
            the counter returned a non-int.
    """
    count = _token_count(entry)
    if count is not None:
        return count
    counted = token_counter(_content(entry, index))
    if type(counted) is not int:
        if isinstance(counted, bool) or not isinstance(counted, int):
            raise EntryTypeError(
                f"token_counter must return an int, got "
                f"{type(counted).__name__} {counted!r} for {_label(index, entry)}",
                index=index,
                entry_id=entry.get("id"),
            )
        counted = int(counted)
    return counted if counted > 0 else 1


@dataclass(frozen=True)
class _Query:
    """What the default scorer needs of a context, computed once per call."""

    words: frozenset[str]
    tags: frozenset[str]
    project: object
    now: float


def _resolve_now(now: datetime | None) -> datetime:
    """The one place that reads the wall clock; naive datetimes are UTC."""
    if now is None:
        return datetime.now(timezone.utc)
    if not isinstance(now, datetime):
        raise TypeError(f"now must be a datetime or None, got {type(now).__name__}")
    if now.tzinfo is None or now.utcoffset() is None:
        return now.replace(tzinfo=timezone.utc)
    return now


def _check_context(context: object) -> Context:
    """``context`` as a Mapping (None is empty); anything else raises."""
    if context is None:
        return {}
    if not isinstance(context, Mapping):
        raise ContextError(
            f"context must be a Mapping or None, got {type(context).__name__}"
        )
    return context


def _query(context: Context | None, now: datetime) -> _Query:
    """Check ``context`` and reduce it to what the default scorer reads."""
    context = _check_context(context)
    message = context.get("message")
    if message is None:
        message = ""
    elif not isinstance(message, str):
        raise ContextError(
            f"context['message'] must be a str or None, got {type(message).__name__}",
            field="message",
        )
    try:
        tags = frozenset(_tags(context.get("tags"), "context['tags']"))
    except TypeError as exc:
        raise ContextError(str(exc), field="tags") from None
    now_seconds = parse_created(now)
    assert now_seconds is not None  # _resolve_now made it an aware datetime
    return _Query(significant_words(message), tags, context.get("project"), now_seconds)


def base_score(
    priority: float,
    created: float | None,
    tags: Collection[str] | None,
    project: object,
    now: float,
    context_tags: frozenset[str] = frozenset(),
    context_project: object = None,
) -> float:
    """Priority x recency x tags x project, multiplied in this order: the
    default score of an entry's fields but its message factor (``created`` and
    ``now`` in POSIX seconds; a None field is a factor of 1). Public so that
    an index outside the library derives its scores and bounds from this
    rule, not a copy (README); nothing is checked: it runs per entry per call.
    """
    score = priority
    if created is not None:
        age = (now - created) / _SECONDS_PER_DAY
        days = age if age > 0.0 else 0.0
        factor = 1.0 - RECENCY_SLOPE * days / RECENCY_HORIZON_DAYS
        score *= factor if factor > RECENCY_FLOOR else RECENCY_FLOOR
    if tags and context_tags and not context_tags.isdisjoint(tags):
        distinct = frozenset(tags)  # a share of distinct tags; none shared is 1
        score *= 1.0 + TAG_BOOST * len(distinct & context_tags) / len(distinct)
    if project is not None:
        score *= PROJECT_MATCH if project == context_project else PROJECT_MISMATCH
    return score


# The kinds of value entry_features reads itself: a priority, then tags,
# project, created.
_USUAL_PRIORITIES: Final = (int, float, type(None))
_USUAL_KINDS: Final = frozenset(
    itertools.product(
        (list, type(None)), (str, type(None)), (str, type(None), int, float)
    )
)
# entry_features' result: priority, created (POSIX seconds), tags, project.
Features = tuple[float, Union[float, None], Union[list[str], None], Union[str, None]]


def entry_features(entry: Entry) -> Features | None:
    """The fields :func:`base_score` reads, when each has its usual kind, else None.

    >>> entry_features({"base_priority": 3, "tags": ["db"], "created": "2026-01-01"})
    (3.0, 1767225600.0, ['db'], None)
    >>> entry_features({"tags": "db"}) is None
    True

    The one fast-path decision: ``base_priority`` an int or a float (not NaN,
    within the float range) or missing (5.0), ``tags`` a list of str,
    ``project`` a str, ``created`` a str, an int or a float (read by
    :func:`parse_created`), each also missing or None. Then
    ``base_score(*features, now, tags, project)`` is the entry's default
    score but its message factor. Any other value
    gives None: the caller takes the general path (:func:`default_scorer`),
    which reads the value and names it when it is bad. Public so that an
    index or engine outside the library takes the fast path exactly where
    the core does (README). Nothing is raised; the entry is read, not copied.
    """
    raw, tags = entry.get("base_priority"), entry.get("tags")
    project, when = entry.get("project"), entry.get("created")
    if (
        type(raw) not in _USUAL_PRIORITIES
        or (type(tags), type(project), type(when)) not in _USUAL_KINDS
    ):
        return None
    if tags:
        try:
            "".join(tags)  # a tag that is not a str, checked in C
        except TypeError:
            return None
    if raw is None:
        priority = DEFAULT_PRIORITY
    elif type(raw) is int:
        try:
            priority = float(raw)
        except OverflowError:  # beyond the float range: the general path's inf
            return None
    elif not math.isnan(raw):  # a float
        priority = raw
    else:
        return None
    if when is None:
        at = None
    elif type(when) is str:  # parse_created's reading, inline: every entry, every turn
        hit = _parse_iso.new.get(when)
        at = hit[0] if hit else _parse_iso.miss(when)
    else:  # POSIX seconds, which parse_created reads without raising
        at = parse_created(when)
    return priority, at, tags, project


def _base_score(
    entry: Entry, query: _Query, index: int | None
) -> tuple[float, float | None]:
    """:func:`base_score` of the entry's fields, read and checked, and the
    ``created`` instant (read once per call: the tie order needs it too)."""
    priority = _priority(entry, index)
    try:
        tags = _tags(entry.get("tags"), "tags")
    except (TypeError, ValueError) as exc:  # not a list, or a tag's str() failed
        raise _entry_error(exc, index, entry, "tags") from exc
    project = entry.get("project")
    try:  # a created or project whose own offset or comparison fails
        seconds = parse_created(entry.get("created"))
        score = base_score(
            priority, seconds, tags, project, query.now, query.tags, query.project
        )
    except (TypeError, ValueError) as exc:
        raise _entry_error(exc, index, entry, None) from exc
    return score, seconds


def _score_from(base: float, entry: Entry, query: _Query, index: int | None) -> float:
    """The default score from its base: base x the message factor, ``1 + 1.5 *
    share`` when the share of the message's words found in the content
    exceeds 0.15, else 1 (the only factor that reads the content)."""
    if query.words:
        text = _content(entry, index)
        item = _content_words.new.get(text)
        words = _content_words.miss(text) if item is None else item[0]
        share = len(query.words.intersection(words)) / len(query.words)
        if share > MESSAGE_THRESHOLD:
            return base * (1.0 + MESSAGE_BOOST * share)
    return base


def default_scorer(
    entry: Entry, context: Context | None = None, *, now: datetime | None = None
) -> float:
    """Score = priority x recency x tags x project x message overlap.

    >>> import datetime
    >>> now = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)
    >>> default_scorer({"base_priority": 4, "created": "2025-12-02"}, None, now=now)
    3.0666666666666664

    That is :func:`base_score` of the entry's fields (``base_priority``
    default 5) and the context's tags and project, times ``1 + 1.5 * overlap``
    when ``overlap``, the share of the message's significant words found in
    the content, exceeds 0.15.

    The scale: priority 5, fresh, no tags, no project and no matching words
    scores 5.0. There is no access-frequency term: ranking must never feed on
    retrieval. ``now`` defaults to the current UTC time; naive datetimes are
    UTC.

    Raises:
        TypeError: ``base_priority`` is not a real number, ``tags`` or the
            context has the wrong type, or ``now`` is not a datetime.
        ValueError: ``base_priority`` is NaN.
    """
    query = _query(context, _resolve_now(now))
    return _score_from(_base_score(entry, query, None)[0], entry, query, None)


# ===========================================================================
# The engine. What holds after every call, whatever the path:
# - a pool takes only active entries of its types: always-scope ones first,
#   in input order and outside every cap, then context entries best first by
#   (-score, created, id, input index) while count < max_entries, the tokens
#   fit max_tokens and the score is at least min_score;
# - an object taken by one pool is offered to no later pool, and an object
#   listed twice is one entry;
# - each entry is scored at most once and costed at most once per call, and
#   no entry is ever modified.
# ===========================================================================


@dataclass(frozen=True)
class _Call:
    """The checked arguments of one public call."""

    pools: list[Pool]
    context: Context | None
    scorer: Scorer
    token_counter: TokenCounter
    is_active: ActivePredicate
    now: datetime
    query: _Query | None  # set when the scorer is the default one


def _check_pools(pools: object) -> list[Pool]:
    """``pools`` as a list of Pool with distinct names."""
    if isinstance(pools, Pool):
        raise TypeError("pools must be an iterable of Pool, got a single Pool")
    try:
        checked: list[object] = list(pools)  # type: ignore[call-overload]
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
    return checked  # type: ignore[return-value]


def _check_call(
    pools: object,
    context: Context | None,
    scorer: Scorer,
    token_counter: TokenCounter,
    is_active: ActivePredicate,
    now: datetime | None,
) -> _Call:
    """Check a public call's arguments once, at the boundary."""
    checked = _check_pools(pools)
    hooks = {"scorer": scorer, "token_counter": token_counter, "is_active": is_active}
    for name, hook in hooks.items():
        if not callable(hook):
            raise TypeError(f"{name} must be callable, got {type(hook).__name__}")
    call = _Call(
        checked, None, scorer, token_counter, is_active, _resolve_now(now), None
    )
    return _with_context(call, context)


def _with_context(call: _Call, context: Context | None) -> _Call:
    """``call`` for another context, checked (audit runs one call per context)."""
    if call.scorer is default_scorer:
        query: _Query | None = _query(context, call.now)
    else:
        query = None
        _check_context(context)
    return dataclasses.replace(call, context=context, query=query)


def _as_list(entries: Iterable[Any]) -> list[Any]:
    """``entries`` read once into a list; errors inside the iterable propagate."""
    try:
        iterator = iter(entries)
    except TypeError:
        raise TypeError(
            f"entries must be an iterable of Mapping, got {type(entries).__name__}"
        ) from None
    return list(iterator)


def _not_a_mapping(index: int, entry: object) -> EntryTypeError:
    return EntryTypeError(
        f"entries[{index}] must be a Mapping, got {type(entry).__name__}", index=index
    )


def _scorer_score(entry: Entry, index: int, call: _Call) -> float:
    """The caller's scorer's result as a float; NaN or a non-number names the
    entry, and the scorer's own errors propagate."""
    value = call.scorer(entry, call.context, now=call.now)
    if not isinstance(value, numbers.Real) or isinstance(value, bool):
        raise EntryTypeError(
            f"scorer must return a real number, got {type(value).__name__} "
            f"{value!r} for {_label(index, entry)}",
            index=index,
            entry_id=entry.get("id"),
        )
    score = _to_float(value)
    if math.isnan(score):  # NaN would make the sort order undefined
        raise EntryValueError(
            f"scorer returned NaN for {_label(index, entry)}",
            index=index,
            entry_id=entry.get("id"),
        )
    return score


# The set member for every ``type`` that cannot be hashed (a list, a dict).
_UNHASHABLE: Final = object()


def _type_key(kind: object) -> object:
    """The type as a set member: an unhashable one matches only types=None."""
    try:
        hash(kind)
    except TypeError:
        return _UNHASHABLE
    return kind


@dataclass
class _Scan:
    """One pass over the store: what each entry is, and who may be ranked."""

    keys: list[object]  # the type as a set member; None: inactive or repeated
    always: list[int]  # positions of active always-scope entries
    ranked: list[int]  # positions of the other active entries some pool admits
    scores: list[float]  # each ranked entry's first score (see _scan)
    instants: list[float | None]  # ``created`` read by the default scorer
    duplicates: dict[int, int]  # a repeated object's position -> its first
    unadmitted: list[int]  # active always-scope entries no pool admits
    near_always: list[int]  # active entries whose scope is "always" only folded


def _accepted_types(call: _Call) -> frozenset[object] | None:
    """Every type some pool admits; None when one pool admits every type."""
    if any(pool.types is None for pool in call.pools):
        return None
    return frozenset(kind for pool in call.pools for kind in pool.types or ())


def _has_words(query: _Query | None) -> bool:
    """Whether the call has a message with words (the default scorer only)."""
    return query is not None and bool(query.words)


def _repeat_finder(store: list[Entry]) -> dict[int, int] | None:
    """An empty map for finding repeated objects, or None when the ids,
    counted in C, show none (then repeats are not looked for per entry)."""
    return None if len(dict.fromkeys(map(id, store))) == len(store) else {}


def _always_filed(scan: _Scan, index: int, entry: Entry) -> bool:
    """File an entry that has a scope: an always-scope one (True: it is not
    ranked), or one whose scope is "always" only folded (it competes, and
    retrieve_pools warns). Called only then: most entries have no scope."""
    if is_always(entry):
        scan.always.append(index)
        return True
    if _almost(entry.get("scope"), ALWAYS_SCOPE):
        scan.near_always.append(index)
    return False


def _unadmitted(
    positions: list[int], keys: list[object], accepted: frozenset[object] | None
) -> list[int]:
    """The positions whose type key no pool admits (``accepted`` None: one
    pool admits every type)."""
    if accepted is None:
        return []
    return [i for i in positions if keys[i] not in accepted]


def _check_mapping(index: int, entry: object) -> None:
    """Raise for an entry that is not a Mapping (called for a non-dict)."""
    if not isinstance(entry, Mapping):
        raise _not_a_mapping(index, entry)


def _scan(store: list[Entry], call: _Call, exact: bool) -> _Scan:
    """Classify every entry and score each one that some pool may rank.

    One pass, in input order: the first entry with a problem (not a Mapping,
    a bad value) is the one reported. An object listed again is recorded in
    ``duplicates`` and left out: it is one entry.
    """
    count = len(store)
    scan = _Scan([None] * count, [], [], [], [None] * count, {}, [], [])
    keys, ranked, scores, instants = scan.keys, scan.ranked, scan.scores, scan.instants
    accepted = _accepted_types(call)
    is_active, query = call.is_active, call.query
    plain = is_active is default_is_active
    # A first score is exact for a caller's scorer, and when ``exact`` for the
    # default one: the base times the message factor (none without words).
    finish = exact and _has_words(query)
    seen = _repeat_finder(store)
    # The hottest loop of a turn: the lists are bound to locals, and the usual
    # values read in place, as their readers read them (tests/test_scan_fast.py).
    for index, entry in enumerate(store):
        if type(entry) is not dict:
            _check_mapping(index, entry)
        kind = entry.get("type")
        if not (
            plain and entry.get("status") is None and entry.get("superseded_by") is None
        ) and not is_active(entry):
            continue
        if seen is not None and (first := seen.setdefault(id(entry), index)) != index:
            scan.duplicates[index] = first
            continue
        key = keys[index] = kind if type(kind) is str else _type_key(entry_type(entry))
        # Read once here: most entries have no scope, and then neither the
        # always rule nor the near-miss check costs a call.
        if entry.get("scope") is not None and _always_filed(scan, index, entry):
            continue
        if accepted is not None and key not in accepted:
            continue
        ranked.append(index)
        if query is None:
            scores.append(_scorer_score(entry, index, call))
            continue
        # The fields the score reads, read in place when each has its usual
        # kind (entry_features decides); else the reader that names a bad one.
        found = entry_features(entry)
        if found is None:
            score, at = _base_score(entry, query, index)
        else:
            priority, at, tags, project = found
            try:  # a project whose comparison fails: the reader names it
                score = base_score(
                    priority, at, tags, project, query.now, query.tags, query.project
                )
            except (TypeError, ValueError):
                score, at = _base_score(entry, query, index)
        instants[index] = at
        scores.append(_score_from(score, entry, query, index) if finish else score)
    scan.unadmitted += _unadmitted(scan.always, keys, accepted)
    return scan


TieKey = tuple[SortKey, SortKey, int]  # (created, id, input index)
Wanted = Union[frozenset[object], None]  # a pool's types; None: every type


class _Ranking:
    """The ranked entries of one call in ``(-score, created, id, index)`` order.

    With the default scorer and a message, entries are sorted by base score
    (all but the message term); times the largest message factor (for a
    positive base) it bounds the exact score, and a walk finishes the score
    (:func:`_score_from`) only of entries that could still outrank the best
    found, so the order is bit for bit the exact one. A run of equal first
    scores is put in tie order by a heap as walks reach it (:meth:`_settle`);
    its entries whose exact score is the first are read in place, boosted
    ones go through a heap keyed by the full order. Scores, tie keys, costs
    and runs are shared by every pool.
    """

    def __init__(
        self,
        store: list[Entry],
        scan: _Scan,
        call: _Call,
        bounded: bool,
        exhaustive: bool,
    ) -> None:
        self._store = store
        self._query = call.query
        self._counter = call.token_counter
        # With the default counter every entry reached is costed up front, so
        # an unprintable content is an error whether or not a pool takes it.
        self._cheap_cost = call.token_counter is default_token_counter
        self._exhaustive = exhaustive
        self._bounded = bounded
        self._factor = _MAX_MESSAGE_FACTOR if bounded else 1.0
        ranked, scores = self._ranked, self._scores = scan.ranked, scan.scores
        base = self._base = dict(zip(ranked, scores))
        # A selection, not a sort: from 2,048 entries, those scoring at least a
        # cut read off a sample (about the best eighth), sorted; the rest once
        # a walk reads past them. Stable: ties in input order until walked.
        self._cut = -math.inf
        if len(ranked) >= 2048:  # a walk on a spread store reads a few % (core35c)
            self._cut = sorted(scores[::8], reverse=True)[len(ranked) // 64]
        first = [index for index, s in zip(ranked, scores) if s >= self._cut]
        self._order = sorted(first, key=base.__getitem__, reverse=True)
        self._instants = scan.instants
        self._exact: dict[int, float] = {} if bounded else base
        self._costs: dict[int, int] = {}
        self._ties: dict[int, TieKey] = {}
        self._runs: dict[int, int] = {}  # start -> end of runs not in tie order
        # Runs in tie order so far: next position -> (heap of the rest, their
        # positions, run start); run start -> its next position.
        self._pending: dict[int, tuple[list[TieKey], dict[int, int], int]] = {}
        self._unsettled: dict[int, int] = {}
        self._run_of: dict[int, tuple[int, int]] = {}  # position -> its run
        self.room = 0  # tokens left in the pool being walked; set by the caller

    def _grow(self) -> bool:
        """Sort the entries below the first selection's cut onto the order,
        once a walk reads past it; whether there were any."""
        cut, self._cut = self._cut, -math.inf
        if cut == -math.inf:  # no selection, or the rest is in the order
            return False
        rest = [index for index, s in zip(self._ranked, self._scores) if s < cut]
        self._order += sorted(rest, key=self._base.__getitem__, reverse=True)
        return bool(rest)

    def cost(self, index: int) -> int:
        """Tokens the entry at ``index`` costs, counted at most once per call."""
        cost = self._costs.get(index)
        if cost is None:
            cost = self._costs[index] = entry_cost(
                self._store[index], self._counter, index=index
            )
        return cost

    def _cannot_fit(self, index: int) -> bool:
        """Whether the entry surely costs more than ``room``, known cheaply:
        room only shrinks while a pool fills, so passing over it is safe."""
        cost = self._costs.get(index)
        if cost is None:
            if not self._cheap_cost and _token_count(self._store[index]) is None:
                return False
            cost = self.cost(index)
        return cost > self.room

    def _tie(self, index: int) -> TieKey:
        """The entry's tie key, computed at most once per call."""
        key = self._ties.get(index)
        if key is None:
            entry = self._store[index]
            seconds = self._instants[index]  # read by the default scorer's scan
            if self._query is None:  # a caller's scorer: not read yet
                seconds = parse_created(entry.get("created"))
            created = _created_key(entry, seconds)
            key = self._ties[index] = (created, _id_key(entry), index)
        return key

    def _settle(self, position: int) -> None:
        """Put the entry due at ``position`` in tie order, if a run is being
        ordered there: a run's tie keys go in a heap at its first position,
        popped (and swapped into place) as walks reach each next one, O(r +
        k log r) for a run of r of which walks read k. Past 64 the rest is
        sorted at once: a walk that reads that deep reads on (aged shape)."""
        end = self._runs.pop(position, None)
        order = self._order
        if end is not None:
            run = order[position:end]
            heap = [self._tie(index) for index in run]
            heapq.heapify(heap)
            where = dict(zip(run, range(position, end)))
            self._pending[position] = (heap, where, position)
        heap, where, start = lazy = self._pending.pop(position)
        if position - start >= 64:
            order[position : position + len(heap)] = [k[2] for k in sorted(heap)]
            del self._unsettled[start]
            return
        index = heapq.heappop(heap)[2]
        other = order[position]
        order[position], order[where[index]] = index, other
        where[other] = where[index]
        self._unsettled[start] = position + 1  # the run's end once all are out
        if heap:
            self._pending[position + 1] = lazy

    def _reach(self, position: int) -> tuple[int, int]:
        """Start and end of the run of equal first scores at ``position``, found
        once per call (exact first scores, default counter: texts checked)."""
        known = self._run_of.get(position)
        if known is not None:
            return known
        order, base, store = self._order, self._base, self._store
        first = base[order[position]]
        start, end = position, position + 1
        while start > 0 and base[order[start - 1]] == first:
            start -= 1
        while end < len(order) and base[order[end]] == first:
            end += 1
        if end - start > 1:
            self._runs[start] = end
            self._run_of.update(dict.fromkeys(range(start, end), (start, end)))
        if not self._bounded and self._cheap_cost:
            for index in order[start:end]:  # str() of a content fails here
                content = store[index].get("content")
                if content is not None and type(content) is not str:
                    self.cost(index)
        return start, end

    def _score_run(
        self,
        start: int,
        end: int,
        keys: list[object],
        wanted: Wanted,
        taken: list[bool],
    ) -> list[tuple[float, TieKey]]:
        """Score the run's untaken entries of the pool's types (each once per
        call; a non-str content only if its entry may fit) and return the
        boosted ones that fit as heap items; the others stay, in tie order."""
        order, store, exact, query = self._order, self._store, self._exact, self._query
        assert query is not None  # only the default scorer is bounded
        first = self._base[order[start]]
        boosted = []
        for index in order[start:end]:
            if taken[index] or (wanted is not None and keys[index] not in wanted):
                continue  # never this pool's (a bounded walk is not exhaustive)
            score = exact.get(index)
            if score is None:  # scored at most once; a str content reads safely
                entry = store[index]
                if type(entry.get("content")) is not str and self._cannot_fit(index):
                    continue
                score = exact[index] = _score_from(first, entry, query, index)
            if score != first and not self._cannot_fit(index):
                boosted.append((-score, self._tie(index)))
        return boosted

    def _may_take(
        self, index: int, keys: list[object], wanted: Wanted, taken: list[bool]
    ) -> bool:
        """Whether the pool may still take the entry (explain: every one of its
        types); one that it may not stays so while the pool fills."""
        return (wanted is None or keys[index] in wanted) and (
            self._exhaustive or not (taken[index] or self._cannot_fit(index))
        )

    def _plain_from(
        self,
        plain: int,
        end: int,
        keys: list[object],
        wanted: Wanted,
        taken: list[bool],
    ) -> int:
        """The position of the pool's next plain candidate before ``end`` (or
        ``end``), each position put in tie order as it is reached. A bounded
        walk is not exhaustive: taken entries are passed over."""
        order, base, exact = self._order, self._base, self._exact
        pending, runs = self._pending, self._runs
        while plain < end:
            if plain in pending or plain in runs:
                self._settle(plain)
            index = order[plain]
            if (
                (wanted is None or keys[index] in wanted)
                and exact.get(index) == base[index]
                and not taken[index]
                and not self._cannot_fit(index)
            ):
                break
            plain += 1
        return plain

    def _frontier(
        self, position: int, keys: list[object], wanted: Wanted, taken: list[bool]
    ) -> int:
        """The position of the next entry from ``position`` on that the pool
        may take (or the end): those before it are passed over unscored."""
        order = self._order
        while position < len(order) or self._grow():
            if self._may_take(order[position], keys, wanted, taken):
                break
            position += 1
        return position

    def _walk_exact(
        self, keys: list[object], wanted: Wanted, taken: list[bool]
    ) -> Iterator[tuple[int, float]]:
        """:meth:`walk` when first scores are exact: the order itself, each
        run put in tie order when the walk first meets an entry of it."""
        order, base, runs = self._order, self._base, self._runs
        position = 0
        while True:
            position = self._frontier(position, keys, wanted, taken)
            if position == len(order):
                return
            start, end = self._reach(position)
            # Entries passed over where the run is not in tie order may move up.
            if start in runs:
                position = start
            position = min(position, self._unsettled.get(start, position))
            while position < end:
                if position in self._pending or position in runs:
                    self._settle(position)
                index = order[position]
                if self._may_take(index, keys, wanted, taken):
                    yield index, base[index]
                position += 1

    def walk(
        self, keys: list[object], wanted: Wanted, taken: list[bool]
    ) -> Iterator[tuple[int, float]]:
        """Yield ``(index, score)`` of the pool's untaken entries, best first.

        Plain entries (exact score = first score) read in place and boosted
        ones from a heap, merged by the full order; an entry is yielded once
        it beats the bound of the next one unscored (strictly: one at the
        bound might tie and come first). The caller may take entries and
        lower ``room`` between steps. When exhaustive (explain), taken
        entries are yielded too and none is skipped for its cost.
        """
        if not self._bounded:
            yield from self._walk_exact(keys, wanted, taken)
            return
        order, base = self._order, self._base
        heap: list[tuple[float, TieKey]] = []
        position = 0  # the frontier: before it, scored or never a candidate
        plain = 0  # no plain candidate before this position
        while True:
            position = self._frontier(position, keys, wanted, taken)
            bound = None  # no exact score from the frontier on can be larger
            if position < len(order):
                first = base[order[position]]
                bound = first * self._factor if first > 0 else first
            plain = self._plain_from(plain, position, keys, wanted, taken)
            if plain < position:  # the plain candidate, unless the heap's is first
                index = order[plain]
                score = base[index]
                if (bound is None or score > bound) and (
                    not heap
                    or score > -heap[0][0]
                    or (score == -heap[0][0] and self._tie(index) < heap[0][1])
                ):
                    plain += 1
                    yield index, score
                    continue
            if heap and (bound is None or -heap[0][0] > bound):
                negative, key = heapq.heappop(heap)
                yield key[2], -negative
            elif position < len(order):
                start, position = self._reach(position)
                for item in self._score_run(start, position, keys, wanted, taken):
                    heapq.heappush(heap, item)
                plain = min(plain, start)  # the run may be put in tie order
            else:
                return


# What happened to an entry in one pool; explain() reports these strings.
_ALWAYS: Final = "always"
_SELECTED: Final = "selected"
_OVER_TOKENS: Final = "over_tokens"
_ENTRY_CAP: Final = "entry_cap"
_BELOW_FLOOR: Final = "below_floor"
_TAKEN_EARLIER: Final = "taken_earlier"


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

    scan: _Scan
    results: dict[str, list[Entry]]
    steps: list[Step] | None  # every decision, when tracing


@dataclass
class _Fill:
    """What filling the pools shares: the store, its scan and ranking, which
    entries are taken and the steps (when tracing)."""

    store: list[Entry]
    scan: _Scan
    ranking: _Ranking
    taken: list[bool]
    steps: list[Step] | None


def _take_always(
    pool: Pool, wanted: frozenset[object] | None, fill: _Fill
) -> list[Entry]:
    """The pool's untaken always-scope entries, in input order, outside the caps."""
    chosen = []
    taken, steps = fill.taken, fill.steps
    for index in fill.scan.always:
        if wanted is not None and fill.scan.keys[index] not in wanted:
            continue
        if taken[index]:
            outcome = _TAKEN_EARLIER
        else:
            taken[index] = True
            chosen.append(fill.store[index])
            outcome = _ALWAYS
        if steps is not None:
            steps.append(Step(index, pool.name, outcome, None, None, 0))
    return chosen


def _take_ranked(
    pool: Pool, wanted: frozenset[object] | None, fill: _Fill
) -> list[Entry]:
    """The pool's context entries: best first, while they fit the caps and floor."""
    chosen: list[Entry] = []
    used = 0
    floor = pool.min_score
    taken, steps, ranking = fill.taken, fill.steps, fill.ranking
    # Every cost is >= 1, so a full pool takes nothing more: stop, unless
    # explain() wants the reason for each entry left out.
    full = pool.max_entries == 0 or pool.max_tokens == 0
    if full and steps is None:
        return chosen
    ranking.room = pool.max_tokens
    for index, score in ranking.walk(fill.scan.keys, wanted, taken):
        cost: int | None = None
        if taken[index]:  # only yielded when tracing
            outcome = _TAKEN_EARLIER
        elif floor is not None and score < floor:
            if steps is None:  # scores come best first: no later one reaches it
                break
            outcome = _BELOW_FLOOR
        else:
            cost = ranking.cost(index)
            if full:  # only reached when tracing
                over = len(chosen) >= pool.max_entries
                outcome = _ENTRY_CAP if over else _OVER_TOKENS
            elif used + cost <= pool.max_tokens:
                taken[index] = True
                used += cost
                chosen.append(fill.store[index])
                ranking.room = pool.max_tokens - used
                full = len(chosen) >= pool.max_entries or used >= pool.max_tokens
                outcome = _SELECTED
                if full and steps is None:
                    break
            else:
                outcome = _OVER_TOKENS
        if steps is not None:
            steps.append(Step(index, pool.name, outcome, score, cost, used))
    return chosen


def _select(store: list[Entry], call: _Call, trace: bool) -> _Selection:
    """Fill the pools in order: the single implementation of the rules.

    With ``trace`` every decision is recorded and every walk runs to the
    end, so explain() can say why entries past a full pool were left out.
    """
    _new_turn()
    query = call.query
    # explain() wants exact scores for all; without message words the base
    # score is already exact.
    bounded = query is not None and bool(query.words) and not trace
    scan = _scan(store, call, exact=not bounded)
    ranking = _Ranking(store, scan, call, bounded, exhaustive=trace)
    fill = _Fill(store, scan, ranking, [False] * len(store), [] if trace else None)
    results: dict[str, list[Entry]] = {}
    for pool in call.pools:
        wanted = None if pool.types is None else frozenset(pool.types)
        chosen = _take_always(pool, wanted, fill)
        chosen += _take_ranked(pool, wanted, fill)
        results[pool.name] = chosen
    return _Selection(scan, results, fill.steps)


# ===========================================================================
# The public retrieval functions
# ===========================================================================


def _unadmitted_warning(store: list[Entry], scan: _Scan) -> PoolsplitWarning:
    """The warning for always-scope entries that no pool admits."""
    unadmitted = scan.unadmitted
    shown = ", ".join(
        f"{_label(index, store[index])} of type {entry_type(store[index])!r}"
        for index in unadmitted[:3]
    )
    more = f" and {len(unadmitted) - 3} more" if len(unadmitted) > 3 else ""
    return PoolsplitWarning(
        f"{len(unadmitted)} active always-scope entries are in no pool, so they "
        f"were not loaded: {shown}{more}; add their types to a pool, or add a "
        f"pool with types=None",
        indices=unadmitted,
    )


def _near_always_warning(store: list[Entry], scan: _Scan) -> PoolsplitWarning:
    """The warning for active entries whose scope is "always" only after
    trimming and case-folding: they compete instead of loading."""
    near = scan.near_always
    shown = ", ".join(
        f"{_label(index, store[index])} with scope {store[index].get('scope')!r}"
        for index in near[:3]
    )
    more = f" and {len(near) - 3} more" if len(near) > 3 else ""
    return PoolsplitWarning(
        f"{len(near)} active entries have a scope that is {ALWAYS_SCOPE!r} only "
        f"after trimming and case-folding, so they compete for room instead of "
        f"loading unconditionally: {shown}{more}; write scope={ALWAYS_SCOPE!r}"
    )


# The context keys the default scorer reads; a custom scorer may read others.
_CONTEXT_KEYS: Final = ("message", "tags", "project")


def _context_warnings(call: _Call) -> list[PoolsplitWarning]:
    """With the default scorer, a warning naming each context key it does not
    read and the nearest one it does: a misspelled key silently scores as absent."""
    if call.query is None or call.context is None:  # a custom scorer reads any
        return []
    import difflib

    unread = []
    for key in call.context:
        if key not in _CONTEXT_KEYS:
            nearest = difflib.get_close_matches(str(key), _CONTEXT_KEYS, 1, 0.0)
            unread.append(f"{key!r} (nearest: {(nearest or _CONTEXT_KEYS)[0]!r})")
    if not unread:
        return []
    message = (
        f"context key {', '.join(unread)} is not read by the default scorer, "
        f"which reads only {', '.join(map(repr, _CONTEXT_KEYS))}; the call "
        f"scored as if it were absent"
    )
    return [PoolsplitWarning(message)]


def _warn_misconfigured(store: list[Entry], call: _Call, scan: _Scan) -> None:
    """Warn, once per call each, of what retrieval silently reads otherwise
    than meant: an unread context key, a near-miss ``scope``. stacklevel 3:
    the caller of retrieve_pools or retrieve."""
    for warning in _context_warnings(call):
        warnings.warn(warning, stacklevel=3)
    if scan.near_always:
        warnings.warn(_near_always_warning(store, scan), stacklevel=3)


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

    Within each pool: active entries of the pool's types (``type``, default
    ``"note"``, in ``pool.types``; None: every type); always-scope ones first
    (input order, outside both caps), then the rest scored once each
    (``scorer(entry, context, now=now)``) and ordered by ``(-score, created,
    id, input index)``, taken greedily while the count is below
    ``max_entries``, the tokens fit ``max_tokens`` (an entry that does not fit
    is skipped, a later smaller one may still fit) and the score is at least
    ``min_score``. Cost is a positive int ``token_count``, else
    ``token_counter(content)``, and at least 1.

    Facts about the result: its keys are the pool names in pool order; each
    input object appears at most once across all pools (identity, not
    equality); each pool's context cost is <= its ``max_tokens``, its count
    <= its ``max_entries``, each of its context scores >= its ``min_score``;
    every active always-scope entry whose type some pool admits is in the
    first such pool. ``entries`` is read once; each entry is scored at most
    once and never modified.

    Cost, for n entries and p pools: a pass reading every entry and a sort of
    the best eighth or so of their first scores, O(n + n log n / 8), the rest
    sorted only if a walk reads past them; a walk scores exactly only the
    entries that can still reach its pool, and puts a run of r ties in order
    by a heap, O(r + k log r) for k read; O(n log n + p * n) at worst.

    Warns:
        PoolsplitWarning: an active always-scope entry's type is admitted by
            no pool, so it is not loaded (once per call, naming the first few);
            an active entry's ``scope`` is "always" only after trimming and
            case-folding, so it competes instead; with the default scorer, a
            context key is not one it reads (each once per call).

    Raises:
        TypeError: an entry is not a Mapping, a pool is not a Pool, a hook is
            not callable, ``now``/``context`` has the wrong type, the scorer
            returns a non-number or the counter a non-int.
        ValueError: duplicate pool names, or the scorer returns NaN.
        Errors raised by the caller's scorer, counter or predicate propagate
        unchanged.
    """
    call = _check_call(pools, context, scorer, token_counter, is_active, now)
    store: list[Entry] = _as_list(entries)
    selection = _select(store, call, trace=False)
    if selection.scan.unadmitted:
        warnings.warn(_unadmitted_warning(store, selection.scan), stacklevel=2)
    _warn_misconfigured(store, call, selection.scan)
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

    The rules, facts and cost of :func:`retrieve_pools` with this one pool
    (the README numbers the rules); always-scope entries of other types do
    not warn.

    Warns:
        PoolsplitWarning: a near-miss ``scope`` or an unread context key, as
            :func:`retrieve_pools`.

    Raises:
        As :func:`retrieve_pools`.
    """
    if not isinstance(pool, Pool):
        raise TypeError(f"pool must be a Pool, got {type(pool).__name__}")
    call = _check_call([pool], context, scorer, token_counter, is_active, now)
    store: list[Entry] = _as_list(entries)
    selection = _select(store, call, trace=False)
    _warn_misconfigured(store, call, selection.scan)
    return selection.results[pool.name]  # type: ignore[return-value]


def _entry_lines(name: str, chosen: object, ids: bool) -> list[str]:
    """One pool's entries as ``- `` lines, later lines of each indented."""
    if isinstance(chosen, (str, bytes)) or not isinstance(chosen, Iterable):
        raise TypeError(
            f"results[{name!r}] must be a list of entries, got {type(chosen).__name__}"
        )
    lines = []
    for position, entry in enumerate(chosen):
        if not isinstance(entry, Mapping):
            raise TypeError(
                f"results[{name!r}][{position}] must be a Mapping, "
                f"got {type(entry).__name__}"
            )
        first, *rest = _content(entry, None).splitlines() or [""]
        if ids:
            first = f"[{entry.get('id')}] {first}"
        lines.append(f"- {first}".rstrip())
        lines.extend(f"  {line}".rstrip() for line in rest)
    return lines


def render(
    results: Mapping[str, Iterable[Entry]],
    *,
    headers: Mapping[str, str] | None = None,
    ids: bool = False,
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
    every pool is empty. With ``ids``, each entry's first line starts with
    its ``id`` in brackets (``- [c1] Never force-push.``), to trace a prompt
    back to the store. Cost: O(total content length).

    Raises:
        TypeError: ``results`` is not a Mapping, an entry is not a Mapping, or
            a header is not a str.
        ValueError: ``headers`` names a pool that is not in ``results`` (a
            typo would otherwise go unnoticed), or a pool name of ``results``
            without a header is not one line of printable text (a ``Pool``
            name always is).
    """
    if not isinstance(results, Mapping):
        raise TypeError(f"results must be a Mapping, got {type(results).__name__}")
    titles: Mapping[str, str] = {} if headers is None else headers
    if not isinstance(titles, Mapping):
        raise TypeError(
            f"headers must be a Mapping or None, got {type(titles).__name__}"
        )
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
        if not title.strip() or len(title.splitlines()) != 1:
            raise ValueError(
                f"headers[{name!r}] must be one non-blank line, got {title!r}"
            )
    blocks = []
    for name, chosen in results.items():
        lines = _entry_lines(name, chosen, ids)
        if lines:
            title = titles.get(name, str(name))
            if not _is_one_line(title) and name not in titles:
                raise ValueError(
                    f"results[{name!r}]: a pool name must be one line of printable "
                    f"text; give it a header in headers"
                )
            blocks.append(f"## {title}\n" + "\n".join(lines) + "\n")
    return "\n".join(blocks)


# ===========================================================================
# Tooling of the runtime: explain and validate (on the engine and the readers)
# ===========================================================================

_INACTIVE: Final = "inactive"
_NO_POOL: Final = "no_pool"
_DUPLICATE: Final = "duplicate"


@dataclass(frozen=True)
class Decision:
    """The decisive outcome for one input entry.

    ``outcome`` is ``always``, ``selected``, ``over_tokens``, ``entry_cap``,
    ``below_floor`` (its score is below the pool's ``min_score``; ``reason``
    names the floor) (each with the first pool that considered it),
    ``inactive`` (``reason`` is ``status``, ``superseded`` or
    ``predicate``), ``duplicate`` (the same object listed earlier;
    ``reason`` names that position) or ``no_pool``. ``taken_earlier_in``
    names the later pools that also admit the entry but found it taken.
    ``outcomes`` is its outcome in every pool that admitted it, as
    ``(pool, outcome)`` in pool order (``taken_earlier`` where an earlier
    pool had taken it), so an entry one pool turned away and a later one
    took shows both.
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
    outcomes: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class PoolSummary:
    """What one pool spent, and how many eligible entries it left out."""

    name: str
    tokens_used: int
    max_tokens: int
    entries_used: int
    max_entries: int
    left_out: int  # over the token cap or past the entry cap
    always_count: int
    always_tokens: int
    below_floor: int = 0


def _table(rows: Sequence[Sequence[str]]) -> list[str]:
    """Rows as left-aligned columns two spaces apart."""
    widths = [max(len(row[col]) for row in rows) for col in range(len(rows[0]))]
    return [
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip()
        for row in rows
    ]


def _json_safe(data: dict[str, Any]) -> dict[str, Any]:
    """Values json.dumps writes as meant: the pool names of ``taken_earlier_in``
    are a list; an id or type that is not JSON-native is its repr."""
    safe: dict[str, Any] = {}
    for key, value in data.items():
        if key == "taken_earlier_in":
            safe[key] = list(value)
        elif key == "outcomes":
            safe[key] = dict(value)  # pool names are unique, in pool order
        elif isinstance(value, float) and not math.isfinite(value):
            safe[key] = repr(value)  # strict JSON has no Infinity
        elif value is None or isinstance(value, (str, int, float)):
            safe[key] = value
        else:
            safe[key] = repr(value)
    return safe


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
            if step.outcome in (_SELECTED, _ALWAYS):
                result[step.pool].append(self.entries[step.index])
        return result

    def counts(self) -> dict[str, int]:
        """How many ``decisions`` have each outcome, the most frequent first."""
        tally: dict[str, int] = {}
        for d in self.decisions:
            tally[d.outcome] = tally.get(d.outcome, 0) + 1
        return dict(sorted(tally.items(), key=lambda item: (-item[1], item[0])))

    def to_dict(self, *, summary: bool = False) -> dict[str, Any]:
        """JSON-ready dicts: decisions (left out when ``summary``), the count of
        each outcome, pools and warnings."""
        data: dict[str, Any] = {
            "decisions": [_json_safe(vars(d)) for d in self.decisions],
            "counts": self.counts(),
            "pools": [vars(p).copy() for p in self.pools],
            "always_tokens": self.always_tokens,
            "warnings": list(self.warnings),
        }
        if summary:
            del data["decisions"]
        return data

    def render(self, *, summary: bool = False) -> str:
        """A text table: one row per entry (none when ``summary``), the count
        of each outcome, then the pools, then the warnings."""
        lines = [] if summary else self._table()
        counts = ", ".join(f"{outcome} {n}" for outcome, n in self.counts().items())
        lines.append(f"outcomes: {counts or 'none'}")
        for p in self.pools:
            floor = f", below floor {p.below_floor}" if p.below_floor else ""
            lines.append(
                f"pool {p.name}: tokens {p.tokens_used}/{p.max_tokens}, "
                f"entries {p.entries_used}/{p.max_entries}, "
                f"left out {p.left_out}{floor}, always {p.always_count} "
                f"({p.always_tokens} tokens)"
            )
        lines.append(f"always-scope total: {self.always_tokens} tokens")
        lines.extend(f"warning: {w}" for w in self.warnings)
        return "\n".join(lines) + "\n"

    def _table(self) -> list[str]:
        """One row per decision, and a blank line."""
        head = ("#", "id", "type", "outcome", "pool", "score", "cost", "total")
        rows = [(*head, "other pools")]
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
                    ",".join(f"{p}:{o}" for p, o in d.outcomes if p != d.pool),
                )
            )
        return [*_table(rows), ""]


def _decisive_steps(
    steps: list[Step], every: dict[int, list[tuple[str, str]]]
) -> tuple[dict[int, Step], dict[int, list[str]]]:
    """Per entry, the step that decided it (a take wins, else the first pool's
    reason) and the later pools that found it already taken; ``every`` gets
    each entry's outcome in every pool that admitted it."""
    decisive: dict[int, Step] = {}
    later: dict[int, list[str]] = {}
    for step in steps:
        every.setdefault(step.index, []).append((step.pool, step.outcome))
        if step.outcome == _TAKEN_EARLIER:
            later.setdefault(step.index, []).append(step.pool)
        elif step.index not in decisive or step.outcome in (_SELECTED, _ALWAYS):
            decisive[step.index] = step
    return decisive, later


def _inactive_reason(entry: Entry, is_active: ActivePredicate) -> str:
    """Why an inactive entry is out: ``status``, ``superseded`` or ``predicate``.

    The default rule itself says which: asked about the status alone.
    """
    if is_active is not default_is_active:
        return "predicate"
    return (
        "superseded" if default_is_active({"status": entry.get("status")}) else "status"
    )


def _pool_named(call: _Call, name: str) -> Pool:
    return next(pool for pool in call.pools if pool.name == name)


def _only_always(pool: Pool) -> str | None:
    """Why a pool with a zero cap turns every context entry away, or None."""
    for cap in ("max_entries", "max_tokens"):
        if getattr(pool, cap) == 0:
            return f"{cap}=0: only scope={ALWAYS_SCOPE!r} loads in this pool"
    return None


def _decision(
    index: int,
    entry: Entry,
    selection: _Selection,
    call: _Call,
    decisive: dict[int, Step],
    later: dict[int, list[str]],
    every: dict[int, list[tuple[str, str]]],
) -> Decision:
    """What happened to one entry, from the steps that concern it."""
    ident = entry.get("id")
    kind = entry_type(entry)
    first = selection.scan.duplicates.get(index)
    if first is not None:
        return Decision(index, ident, kind, _DUPLICATE, reason=f"entries[{first}]")
    if selection.scan.keys[index] is None:  # inactive
        reason = _inactive_reason(entry, call.is_active)
        return Decision(index, ident, kind, _INACTIVE, reason=reason)
    step = decisive.get(index)
    if step is None:
        return Decision(index, ident, kind, _NO_POOL)
    floor = None
    if step.outcome == _BELOW_FLOOR:
        floor = f"min_score {_pool_named(call, step.pool).min_score!r}"
    elif step.outcome in (_ENTRY_CAP, _OVER_TOKENS):
        floor = _only_always(_pool_named(call, step.pool))
    return Decision(
        index,
        ident,
        kind,
        step.outcome,
        pool=step.pool,
        reason=floor,
        score=step.score,
        cost=step.cost,
        used=None if step.outcome == _ALWAYS else step.used,
        taken_earlier_in=tuple(later.get(index, ())),
        outcomes=tuple(every[index]),
    )


def _summaries(store: list[Entry], call: _Call, steps: list[Step]) -> list[PoolSummary]:
    """Per pool, what it spent and left out, grouped in one pass over the steps."""
    tally = {pool.name: [0, 0, 0, 0, 0, 0] for pool in call.pools}
    for step in steps:
        counts = tally[step.pool]
        if step.outcome == _SELECTED:
            counts[0] += step.cost or 0
            counts[1] += 1
        elif step.outcome in (_OVER_TOKENS, _ENTRY_CAP):
            counts[2] += 1
        elif step.outcome == _ALWAYS:
            counts[3] += 1
            counts[4] += entry_cost(
                store[step.index], call.token_counter, index=step.index
            )
        elif step.outcome == _BELOW_FLOOR:
            counts[5] += 1
    return [
        PoolSummary(pool.name, spent, pool.max_tokens, count, pool.max_entries, *rest)
        for pool in call.pools
        for spent, count, *rest in [tally[pool.name]]
    ]


def _explain_warnings(
    store: list[Entry],
    call: _Call,
    decisions: list[Decision],
    summaries: list[PoolSummary],
) -> list[str]:
    """Configurations that lose memory or spend without a cap."""
    found = [
        f"always-scope entry {d.id!r} of type {d.type!r} is in no pool"
        for d in decisions
        if d.outcome == _NO_POOL and is_always(store[d.index])
    ]
    present = {_type_key(kind) for kind in map(entry_type, store)}
    for pool in call.pools:
        if pool.types == ():
            found.append(f"pool {pool.name!r} has types=(), so it admits nothing")
        elif pool.types is not None and present.isdisjoint(pool.types):
            found.append(
                f"pool {pool.name!r} admits types {list(pool.types)!r}, and no "
                f"entry of the store has one of them; check their spelling"
            )
    for p, pool in zip(summaries, call.pools):
        if p.left_out and not p.entries_used:
            why = _only_always(pool)
            found.append(
                f"pool {p.name!r} had {p.left_out} eligible entries and selected "
                f"none" + ("" if why is None else f"; {why}")
            )
    found.extend(map(str, _context_warnings(call)))
    always_tokens = sum(p.always_tokens for p in summaries)
    budget = sum(p.max_tokens for p in call.pools)
    if always_tokens > budget:
        found.append(
            f"always-scope entries cost {always_tokens} tokens, more than the "
            f"{budget} of all pools' max_tokens together"
        )
    elif always_tokens > _ALWAYS_TOKENS_WARNING or 2 * always_tokens > budget:
        found.append(
            f"always-scope entries cost {always_tokens} tokens, which no cap "
            f"limits (more than {_ALWAYS_TOKENS_WARNING} or half of the {budget} "
            f"of all pools' max_tokens); check who may write scope='always'"
        )
    return found


# Every outcome explain() reports, decisive or in one pool (its filters and
# the command line's --outcome take these).
OUTCOMES: Final = (
    _ALWAYS,
    _SELECTED,
    _OVER_TOKENS,
    _ENTRY_CAP,
    _BELOW_FLOOR,
    _TAKEN_EARLIER,
    _INACTIVE,
    _DUPLICATE,
    _NO_POOL,
)


def _check_filter(name: str, values: object) -> list[object] | None:
    """An explain() filter as a list (None: no filter); a bare str raises, as
    it would be read as its letters."""
    if values is None:
        return None
    if isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
        raise TypeError(
            f"{name} must be an iterable or None, got {type(values).__name__} "
            f"{values!r}"
        )
    return list(values)


def _wanted(
    decision: Decision,
    ids: list[object] | None,
    types: list[object] | None,
    outcomes: list[object] | None,
) -> bool:
    """Whether a decision passes explain()'s filters: its id and its type
    among those given, and its outcome, or its outcome in any pool, too."""
    if ids is not None and decision.id not in ids:
        return False
    if types is not None and decision.type not in types:
        return False
    return outcomes is None or any(
        outcome in outcomes
        for outcome in (decision.outcome, *(o for _, o in decision.outcomes))
    )


def explain(
    entries: Iterable[Entry],
    pools: Sequence[Pool] | Iterable[Pool],
    context: Context | None = None,
    *,
    scorer: Scorer = default_scorer,
    token_counter: TokenCounter = default_token_counter,
    is_active: ActivePredicate = default_is_active,
    now: datetime | None = None,
    ids: Iterable[object] | None = None,
    types: Iterable[object] | None = None,
    outcomes: Iterable[str] | None = None,
) -> Explanation:
    """Report what :func:`retrieve_pools` decides for every entry, and why.

    >>> store = [{"id": "a", "content": "x" * 40}, {"id": "b", "status": "old"}]
    >>> report = explain(store, [Pool("p", 5, 1)], now=datetime(2026, 1, 1))
    >>> [(d.id, d.outcome, d.reason) for d in report.decisions]
    [('a', 'over_tokens', None), ('b', 'inactive', 'status')]
    >>> report.warnings
    ("pool 'p' had 1 eligible entries and selected none",)

    The engine of :func:`retrieve_pools` computes it, so
    ``explain(...).selected()`` equals ``retrieve_pools(...)``. An entry
    skipped in one pool and taken by a later one is reported as taken; all
    per-pool steps stay in ``steps``. Warnings (in the report, not Python
    warnings): an active always-scope entry that no pool admits, a pool
    whose ``types`` admit no entry of the store (a typo), a pool with
    eligible entries that selected none, and always-scope entries costing
    more than all pools' ``max_tokens`` together or more than 4,000 tokens.
    Cost: O(n log n + p * n): every eligible entry is scored, and costed
    unless it is below a pool's floor.

    Each decision also lists the entry's outcome in every pool that admitted
    it (``outcomes``). For a large store, ``ids``, ``types`` and ``outcomes``
    keep only the decisions whose id, type, and outcome (decisive or in any
    pool) are among those given (``==``); the pools, the warnings and the
    steps still cover the whole store. ``render(summary=True)`` and
    ``to_dict(summary=True)`` leave the decisions out and keep the count of
    each outcome.

    Raises:
        As :func:`retrieve_pools`; also TypeError for a filter that is not an
        iterable or is a bare str, ValueError for an unknown outcome.
    """
    call = _check_call(pools, context, scorer, token_counter, is_active, now)
    wanted = (
        _check_filter("ids", ids),
        _check_filter("types", types),
        _check_filter("outcomes", outcomes),
    )
    unknown = [o for o in wanted[2] or () if o not in OUTCOMES]
    if unknown:
        raise ValueError(
            f"outcomes must be among {', '.join(map(repr, OUTCOMES))}, "
            f"got {unknown[0]!r}"
        )
    store = _as_list(entries)
    selection = _select(store, call, trace=True)
    steps = selection.steps
    assert steps is not None  # traced
    every: dict[int, list[tuple[str, str]]] = {}
    decisive, later = _decisive_steps(steps, every)
    decisions = [
        _decision(index, entry, selection, call, decisive, later, every)
        for index, entry in enumerate(store)
    ]
    summaries = _summaries(store, call, steps)
    found = _explain_warnings(store, call, decisions, summaries)
    if selection.scan.near_always:
        found.append(str(_near_always_warning(store, selection.scan)))
    if wanted != (None, None, None):
        decisions = [d for d in decisions if _wanted(d, *wanted)]
    return Explanation(
        tuple(decisions), tuple(summaries), tuple(found), tuple(steps), tuple(store)
    )


@dataclass(frozen=True)
class Problem:
    """One finding of :func:`validate`; ``severity`` is ``error`` or ``warning``."""

    index: int
    id: object
    severity: str
    field: str
    message: str

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict: an ``id`` that is not JSON-native is its repr."""
        return _json_safe(vars(self))


_SCHEMA_KEYS: Final = (
    "content",
    "type",
    "scope",
    "tags",
    "project",
    "created",
    "token_count",
    "base_priority",
    "status",
    "superseded_by",
    "id",
)
# How close (difflib's ratio) an unknown key must be to a schema key to be
# taken for a typo: "scop", "stauts", "token_cont" and "created_at" are;
# "score" (0.8) and the user's own fields ("source", "trust") are not.
_NEAR_MISS: Final = 0.82
# Keys other systems use for a schema key, too far from it for the near-miss
# ratio ("priority" is 0.76 from "base_priority", "timestamp" 0.27 from
# "created"); matched after case-folding.
_ALIASES: Final = {
    "priority": "base_priority",
    "prio": "base_priority",
    "timestamp": "created",
    "created_at": "created",
    "createdat": "created",
    "created_on": "created",
    "date": "created",
    "time": "created",
    "datetime": "created",
    "tokens": "token_count",
    "token": "token_count",
    "num_tokens": "token_count",
    "text": "content",
    "body": "content",
    "kind": "type",
}

Found = Iterator[tuple[str, str, str]]  # (severity, field, message)


def _content_problems(entry: Entry) -> Found:
    content = entry.get("content")
    if content is None:
        yield "warning", "content", "content is missing"
    elif not isinstance(content, str):
        message = f"content should be a str, got {type(content).__name__}"
        yield "warning", "content", message
        try:
            _content(entry, None)
        except EntryError as exc:  # retrieval reads it lazily; the cause is str()'s
            reason = f"cannot become text: {exc.__cause__}"
            yield "error", "content", f"{reason}; a call that reaches this entry fails"


def _priority_problems(entry: Entry) -> Found:
    try:
        _priority(entry, None)
    except EntryError as exc:  # validate names the entry and the field itself
        reason = str(exc).replace(f"{_label(None, entry)}: ", "", 1)
        yield "error", "base_priority", reason.replace("base_priority ", "", 1)


def _created_problems(entry: Entry) -> Found:
    created = entry.get("created")
    if created is not None and parse_created(created) is None:
        message = f"cannot be read as a date, got {created!r}; it will not decay"
        yield "warning", "created", message


def _token_count_problems(entry: Entry) -> Found:
    count = entry.get("token_count")
    if count is not None and _token_count(entry) is None:
        message = f"must be a positive int, got {count!r}; the counter is used"
        yield "warning", "token_count", message


def _tag_problems(entry: Entry) -> Found:
    raw = entry.get("tags")
    try:
        tags = _tags(raw, "tags")
    except TypeError as exc:
        yield "error", "tags", str(exc).replace("tags ", "", 1)
        return
    if tags is not raw and isinstance(raw, (list, tuple, set, frozenset)):
        yield "warning", "tags", "must contain only str; others compare as str()"


def _almost(value: object, meant: str) -> bool:
    """Whether ``value`` is ``meant`` after trimming and case-folding, but not
    exactly: a spelling that silently means something else."""
    return (
        isinstance(value, str)
        and value != meant
        and value.strip().casefold() == meant.casefold()
    )


def _text_problems(entry: Entry) -> Found:
    for field in ("scope", "status", "type"):
        value = entry.get(field)
        if value is not None and not isinstance(value, str):
            yield "warning", field, f"should be a str, got {type(value).__name__}"
    project = entry.get("project")
    if project is not None and not isinstance(project, str):
        message = (
            f"should be a str or None, got {type(project).__name__} {project!r}; "
            f"it is compared with the context's project as it is, so it never "
            f"matches a str project and scores the 0.5 mismatch factor"
        )
        yield "warning", "project", message
    for field, meant, effect in (
        ("status", ACTIVE_STATUS, "the entry is inactive and will never load"),
        (
            "scope",
            ALWAYS_SCOPE,
            "the entry competes for room instead of loading unconditionally",
        ),
    ):
        value = entry.get(field)
        if _almost(value, meant):
            yield "error", field, f"is {value!r}, not exactly {meant!r}: {effect}"


@lru_cache(maxsize=1024)
def _likely_key(key: str) -> str | None:
    """The schema key an unknown key probably meant, or None; cached, since a
    store repeats its own keys on every entry."""
    import difflib

    folded = key.strip().casefold()
    if folded in _SCHEMA_KEYS:
        return folded
    if folded.replace("-", "_") in _ALIASES:
        return _ALIASES[folded.replace("-", "_")]
    close = difflib.get_close_matches(key, _SCHEMA_KEYS, 1, _NEAR_MISS)
    if close:
        return close[0]
    # Two neighbouring letters swapped ("tpye", "socpe"): difflib's ratio
    # rates a swap in a short word too low to pass.
    for known in _SCHEMA_KEYS:
        if len(known) == len(folded) and sorted(known) == sorted(folded):
            differ = [i for i, (a, b) in enumerate(zip(known, folded)) if a != b]
            if len(differ) == 2 and differ[1] == differ[0] + 1:
                return known
    return None


def _key_problems(entry: Entry) -> Found:
    for key in entry:
        if not isinstance(key, str) or key in _SCHEMA_KEYS:
            continue
        likely = _likely_key(key)
        if likely is not None:
            message = (
                f"unknown key {key!r}, probably {likely!r}; poolsplit reads only "
                f"{likely!r}, so this value is ignored"
            )
            yield "warning", key, message


_ENTRY_CHECKS: Final = (
    _content_problems,
    _priority_problems,
    _created_problems,
    _token_count_problems,
    _tag_problems,
    _text_problems,
    _key_problems,
)


def _entry_problems(index: int, entry: Entry) -> list[Problem]:
    """The problems of one mapping entry, field by field."""
    ident = entry.get("id")
    return [
        Problem(index, ident, severity, field, message)
        for check in _ENTRY_CHECKS
        for severity, field, message in check(entry)
    ]


def _id_problems(store: list[object]) -> tuple[list[Problem], dict[object, int]]:
    """Unhashable and duplicate ids; also each id's first position."""
    problems = []
    first: dict[object, int] = {}
    for index, entry in enumerate(store):
        if not isinstance(entry, Mapping) or entry.get("id") is None:
            continue
        ident = entry.get("id")
        try:
            earlier = first.setdefault(ident, index)
        except TypeError:
            message = f"must be hashable, got {type(ident).__name__}"
            problems.append(Problem(index, ident, "error", "id", message))
            continue
        if earlier != index:
            message = f"duplicate id {ident!r} (first at entries[{earlier}])"
            problems.append(Problem(index, ident, "error", "id", message))
    return problems, first


def _dangling_problems(store: list[object], ids: dict[object, int]) -> list[Problem]:
    """Entries retired by an id that is not in the store: lost, not replaced."""
    problems = []
    for index, entry in enumerate(store):
        if not isinstance(entry, Mapping):
            continue
        target = entry.get("superseded_by")
        # Only a value the active rule retires on can dangle; True names no id.
        if default_is_active({"superseded_by": target}) or isinstance(target, bool):
            continue
        try:
            known = target in ids and target != entry.get("id")
        except TypeError:
            known = False
        if not known:
            where = (
                "its own id"
                if target == entry.get("id")
                else "an id that is not in the store"
            )
            message = (
                f"is {target!r}, {where}: this entry never loads, and nothing "
                f"replaces it"
            )
            problems.append(
                Problem(index, entry.get("id"), "error", "superseded_by", message)
            )
    return problems


def _type_spelling_problems(store: list[object]) -> list[Problem]:
    """Types that differ from another type of the store only by case or
    spacing ("Correction", "correction "): a pool admits each spelling
    separately, so one of them is silently out of the pool meant for it.
    Every entry not of the group's most common spelling is named."""
    spellings: dict[str, dict[str, int]] = {}  # folded -> spelling -> count
    for entry in store:
        kind = entry.get("type") if isinstance(entry, Mapping) else None
        if isinstance(kind, str):
            group = spellings.setdefault("".join(kind.split()).casefold(), {})
            group[kind] = group.get(kind, 0) + 1
    problems = []
    for index, entry in enumerate(store):
        kind = entry.get("type") if isinstance(entry, Mapping) else None
        if not isinstance(kind, str):
            continue
        group = spellings["".join(kind.split()).casefold()]
        usual = max(group, key=group.__getitem__)  # the first of the most common
        if kind != usual:
            message = (
                f"is {kind!r}, and {group[usual]} entries have type {usual!r}: "
                f"they differ only by case or spacing, and a pool admits each "
                f"spelling separately"
            )
            assert isinstance(entry, Mapping)
            problems.append(Problem(index, entry.get("id"), "warning", "type", message))
    return problems


def _future_problems(store: list[object], now: float) -> list[Problem]:
    """A ``created`` more than a day after ``now``: recency counts the future
    as 0 days, so the entry is fresh until then; a number that large is often
    milliseconds."""
    problems = []
    for index, entry in enumerate(store):
        if not isinstance(entry, Mapping):
            continue
        created = entry.get("created")
        seconds = parse_created(created)
        if seconds is None or seconds - now <= _SECONDS_PER_DAY:
            continue
        days = (seconds - now) / _SECONDS_PER_DAY
        message = (
            f"is {created!r}, {days:,.0f} days after the moment validated "
            f"against; a future created counts as fresh until then"
        )
        if type(created) in (int, float):
            message += "; if it is in milliseconds, divide it by 1000"
        problems.append(Problem(index, entry.get("id"), "warning", "created", message))
    return problems


def _always_budget_problem(store: list[object]) -> list[Problem]:
    """A warning on the entry where active always-scope entries pass the limit.

    Always-scope entries bypass every cap, so their total is a trust decision,
    not a budget: past 4,000 default-counted tokens the host should check who
    may write them. Entries retrieval would reject are skipped here, since
    they already have their own error.
    """
    total = 0
    crossed: tuple[int, object] | None = None
    count = 0
    for index, entry in enumerate(store):
        if not isinstance(entry, Mapping) or not is_always(entry):
            continue
        try:
            if not default_is_active(entry):
                continue
            cost = entry_cost(entry, default_token_counter, index=index)
        except (TypeError, ValueError):  # e.g. content too large an int for str()
            continue
        count += 1
        total += cost
        if crossed is None and total > _ALWAYS_TOKENS_WARNING:
            crossed = (index, entry.get("id"))
    if crossed is None:
        return []
    index, ident = crossed
    message = (
        f"active always-scope entries cost {total} tokens in all ({count} "
        f"entries; the total passes {_ALWAYS_TOKENS_WARNING} here); no cap "
        "limits them, so check who may write scope='always'"
    )
    return [Problem(index, ident, "warning", "scope", message)]


def validate(
    entries: Iterable[object], *, now: datetime | None = None
) -> list[Problem]:
    """List the problems of a store, in input order; an empty list means clean.

    >>> [p.message for p in validate([{"id": 1, "content": "x"}, {"id": 1}])]
    ['content is missing', 'duplicate id 1 (first at entries[0])']

    Each field is read by the same reader retrieval uses, so a value
    retrieval accepts is never flagged as unusable. Errors are what a call
    rejects or silently loses (a NaN ``base_priority``, a duplicate id, a
    ``status`` of ``"Active"``, a dangling ``superseded_by``); warnings are
    what it reads otherwise than probably meant (a misspelled key, a
    ``created`` in the future, always-scope entries past 4,000 tokens).
    The README's "Debugging retrieval" lists every check; ``now`` (default:
    the current time) is what ``created`` is checked against. Positions are
    0-based. Cost: O(n).

    Raises:
        TypeError: ``entries`` is not iterable, or ``now`` is not a datetime.
    """
    store: list[object] = _as_list(entries)
    problems: list[Problem] = []
    for index, entry in enumerate(store):
        if isinstance(entry, Mapping):
            problems.extend(_entry_problems(index, entry))
        else:
            message = f"must be an object, got {type(entry).__name__}"
            problems.append(Problem(index, None, "error", "", message))
    id_problems, ids = _id_problems(store)
    problems.extend(id_problems)
    problems.extend(_dangling_problems(store, ids))
    problems.extend(_type_spelling_problems(store))
    moment = parse_created(_resolve_now(now))
    assert moment is not None  # an aware datetime
    problems.extend(_future_problems(store, moment))
    problems.extend(_always_budget_problem(store))
    problems.sort(key=lambda p: p.index)
    return problems


# ===========================================================================
# Files: the text of a file or stdin, JSON, and a pools file
# ===========================================================================

# The most read_text() reads of one file unless told otherwise: far above
# any store poolsplit ranks in memory, far below what ends a machine, so
# /dev/zero or a runaway pipe is an error rather than an exhausted memory.
DEFAULT_MAX_BYTES: Final = 256 * 1024 * 1024
_READ_CHUNK: Final = 1 << 20


def read_text(path: str, *, max_bytes: int = DEFAULT_MAX_BYTES) -> str:
    """The text of a UTF-8 file, or of standard input when ``path`` is ``"-"``.

    Both are read as bytes and decoded alike, so they accept the same input:
    UTF-8, with a leading byte-order mark dropped. At most ``max_bytes`` are
    read, so a device that never ends is an error, not an exhausted memory.
    The command line reads every input file here, and :func:`load_pools`.

    Raises:
        ValueError: one line naming the file (``<stdin>`` for ``"-"``): it
            cannot be opened or read, holds more than ``max_bytes`` bytes, or
            is not UTF-8.
    """
    where = "<stdin>" if path == "-" else path
    try:
        if path == "-":
            stream = getattr(sys.stdin, "buffer", None)
            if stream is None:  # no stdin at all (closed), or not a byte stream
                raise OSError("standard input is not readable")
            data = _read_at_most(stream, max_bytes)
        else:
            with open(path, "rb") as handle:
                data = _read_at_most(handle, max_bytes)
        if data is None:
            raise ValueError(
                f"{where}: cannot read: more than {max_bytes} bytes; pass a "
                f"larger max_bytes (--max-bytes) to read it"
            )
        return data.decode("utf-8-sig")  # a BOM is not data
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"{where}: cannot read: {exc}") from None


def _read_at_most(stream: Any, limit: int) -> bytes | None:
    """Every byte of ``stream``, or None once there are more than ``limit``."""
    data = bytearray()
    while True:
        chunk = stream.read(min(_READ_CHUNK, limit + 1 - len(data)))
        if not chunk:
            return bytes(data)
        data += chunk
        if len(data) > limit:
            return None


def parse_json(text: str, *, where: str = "<string>", line: int = 1) -> Any:
    """One JSON document read from ``where``, whose text starts at ``line``.

    Raises:
        ValueError: one line, ``WHERE:LINE: invalid JSON: ...``, at the line
            of the error: a syntax error, nesting too deep, or an integer
            past ``sys.get_int_max_str_digits()``.
    """
    import json

    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(
            f"{where}:{line + exc.lineno - 1}: invalid JSON: {exc.msg}"
        ) from None
    except RecursionError:
        raise ValueError(f"{where}:{line}: invalid JSON: nested too deeply") from None
    except ValueError as exc:  # an int past sys.get_int_max_str_digits()
        raise ValueError(f"{where}:{line}: invalid JSON: {exc}") from None


_POOL_KEYS: Final = ("name", "max_tokens", "max_entries", "types", "min_score")


def load_pools(path: str, *, max_bytes: int = DEFAULT_MAX_BYTES) -> list[Pool]:
    """The pools of a JSON file: an array of objects with ``Pool``'s keys.

    The command line's ``--pools`` and the memory server read pools here, so
    one file means one thing everywhere. ``"-"`` reads standard input; the
    file is read by :func:`read_text`, at most ``max_bytes``.

    Raises:
        ValueError: one line naming the file, and the pool by position, for an
            unreadable file, invalid JSON, an unknown key, a bad value or a
            duplicate name.
    """
    text = read_text(path, max_bytes=max_bytes)
    where = "<stdin>" if path == "-" else path
    specs = parse_json(text, where=where)
    if not isinstance(specs, list):
        raise ValueError(f"{where}:1: pools must be a JSON array of objects")
    pools = []
    for position, spec in enumerate(specs):
        try:
            if not isinstance(spec, dict):
                raise TypeError(f"must be an object, got {type(spec).__name__}")
            unknown = sorted(set(spec) - set(_POOL_KEYS))
            if unknown:
                raise ValueError(
                    f"unknown key {unknown[0]!r}; expected {', '.join(_POOL_KEYS)}"
                )
            pools.append(Pool(**spec))
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{where}: pools[{position}]: {exc}") from None
    try:
        return _check_pools(pools)
    except ValueError as exc:
        raise ValueError(f"{where}: {exc}") from None


# ---- tools ----
# Everything below this line is tooling built on the runtime above through
# the names of __all__ only (tests/test_cut_line.py proves it): audit, the
# demo and the command line. To vendor the runtime alone, delete from the
# line above to the end of the file.

__all__ += ["DEMO_NOW", "Audit", "TypeAudit", "audit", "demo_pools", "demo_store"]

# ===========================================================================
# Audit: starvation measured over a batch of queries, pools vs one budget
# ===========================================================================


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
    """What :func:`audit` measured; ``always_*`` count every-entry loads, and
    ``single_*`` are the caps of the single budget compared against."""

    queries: int
    types: tuple[TypeAudit, ...]
    always_entries: int
    always_every_pools: int
    always_every_single: int
    single_tokens: int = 0
    single_entries: int = 0

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
        widths = [max(len(row[col]) for row in rows) for col in range(len(rows[0]))]
        lines = [
            "  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip()
            for row in rows
        ]
        lines.append("")
        lines.append(
            f"single budget: {self.single_tokens} tokens / {self.single_entries} "
            f"entries (the pools' caps summed, always-scope ranked like the rest)"
        )
        lines.append(
            f"always-scope entries loaded on every query: "
            f"single {self.always_every_single}/{self.always_entries}, "
            f"pools {self.always_every_pools}/{self.always_entries}"
        )
        return "\n".join(lines) + "\n"


class _NoScope(Mapping[str, Any]):
    """A read-only view of an entry without ``scope``, for the baseline."""

    __slots__ = ("entry",)

    def __init__(self, entry: Mapping[str, Any]) -> None:
        self.entry = entry

    def __getitem__(self, key: str) -> Any:
        if key == "scope":
            raise KeyError(key)
        return self.entry[key]

    def __iter__(self) -> Iterator[str]:
        return (key for key in self.entry if key != "scope")

    def __len__(self) -> int:
        return sum(1 for _ in self)


class _Tally:
    """Per type: queries with a load and tokens loaded; per always entry: loads."""

    def __init__(self) -> None:
        self.hits: dict[str, int] = {}
        self.tokens: dict[str, int] = {}
        self.always_loads: dict[int, int] = {}

    def add(
        self,
        store: list[Mapping[str, Any]],
        loaded: Iterable[int],
        token_counter: TokenCounter,
    ) -> None:
        """Count one query's loaded entries, by position in ``store``."""
        seen: set[str] = set()
        for index in loaded:
            entry = store[index]
            kind = str(entry_type(entry))
            seen.add(kind)
            cost = entry_cost(entry, token_counter, index=index)
            self.tokens[kind] = self.tokens.get(kind, 0) + cost
            if is_always(entry):
                self.always_loads[index] = self.always_loads.get(index, 0) + 1
        for kind in seen:
            self.hits[kind] = self.hits.get(kind, 0) + 1

    def share(self, kind: str) -> float:
        return self.tokens.get(kind, 0) / (sum(self.tokens.values()) or 1)


def _audit_result(
    store: list[Mapping[str, Any]],
    tallies: dict[str, _Tally],
    queries: int,
    is_active: ActivePredicate,
    single: Pool,
) -> Audit:
    """The Audit from both modes' tallies: per type, then always-scope loads."""
    names = sorted({str(entry_type(entry)) for entry in store})
    first = {id(entry): index for index, entry in reversed(list(enumerate(store)))}
    always = [
        i
        for i, e in enumerate(store)
        if first[id(e)] == i and is_always(e) and is_active(e)
    ]
    every = {
        mode: sum(1 for i in always if tally.always_loads.get(i, 0) == queries)
        for mode, tally in tallies.items()
    }
    pooled, lone = tallies["pools"], tallies["single"]
    types = tuple(
        TypeAudit(
            name,
            pooled.hits.get(name, 0),
            lone.hits.get(name, 0),
            pooled.share(name),
            lone.share(name),
        )
        for name in names
    )
    return Audit(
        queries,
        types,
        len(always),
        every["pools"],
        every["single"],
        single.max_tokens,
        single.max_entries,
    )


def _warn_once(caught: list[warnings.WarningMessage]) -> None:
    """Issue each distinct warning the queries raised once: a PoolsplitWarning
    at audit's caller, any other one where it was raised."""
    seen: set[tuple[type[Warning], str]] = set()
    for record in caught:
        key = (record.category, str(record.message))
        if key in seen:
            continue
        seen.add(key)
        if isinstance(record.message, PoolsplitWarning):
            warnings.warn(record.message, stacklevel=3)
        else:
            warnings.warn_explicit(
                record.message, record.category, record.filename, record.lineno
            )


def _single_budget(pools: list[Any]) -> Pool:
    """The baseline: one pool of every type with the pools' caps summed (an
    item that is not a Pool is left for retrieve_pools to reject)."""
    checked = [pool for pool in pools if isinstance(pool, Pool)]
    return Pool(
        "single",
        sum(pool.max_tokens for pool in checked),
        sum(pool.max_entries for pool in checked),
    )


def audit(
    entries: Iterable[Mapping[str, Any]],
    pools: Sequence[Pool] | Iterable[Pool],
    contexts: Iterable[Mapping[str, Any] | None],
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

    For each context, :func:`retrieve_pools` runs once with ``pools`` and
    once with the baseline: one ``Pool(types=None)`` with the summed
    ``max_tokens`` and ``max_entries``, where always-scope entries are
    ranked like the rest (the design pools replace). Per type (as ``str``):
    on how many queries at least one entry loaded, and its share of all
    loaded tokens (always-scope included). ``always_every_*``: how many
    active always-scope entries loaded on every query. An object listed
    twice is one entry in both modes. Cost: two retrievals per context.

    Warns:
        PoolsplitWarning: as :func:`retrieve_pools`, each distinct one once
            per call (the queries' warnings are recorded with
            ``warnings.catch_warnings``, which is process-wide).

    Raises:
        As :func:`retrieve_pools`; a bad context is a ContextError naming its
        position, ``contexts[N]``.
    """
    # Every query is measured at one moment, as within one retrieve_pools call.
    moment = datetime.now(timezone.utc) if now is None else now
    hooks: dict[str, Any] = {
        "scorer": scorer,
        "token_counter": token_counter,
        "now": moment,
    }
    if not (isinstance(pools, Iterable) and isinstance(entries, Iterable)):
        # retrieve_pools raises the error that names the argument
        retrieve_pools(entries, pools, None, is_active=is_active, **hooks)
    pool_list = list(pools)
    store = list(entries)
    # An object listed twice is one entry (retrieve_pools' rule), in the
    # baseline too: one view per object, counted at its first position.
    view_of: dict[int, Mapping[str, Any]] = {}
    views = [view_of.setdefault(id(entry), _NoScope(entry)) for entry in store]
    single = _single_budget(pool_list)
    position: dict[int, int] = {}
    for index, (entry, view) in enumerate(zip(store, views)):
        position.setdefault(id(entry), index)
        position.setdefault(id(view), index)
    tallies = {"pools": _Tally(), "single": _Tally()}
    queries = 0
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", PoolsplitWarning)
        for context in contexts:
            try:
                pooled = retrieve_pools(
                    store, pool_list, context, is_active=is_active, **hooks
                )
            except ContextError as exc:
                raise ContextError(
                    f"contexts[{queries}]: {exc}", index=queries, field=exc.field
                ) from exc
            lone = retrieve_pools(
                views,
                [single],
                context,
                is_active=lambda view: is_active(view.entry),
                **hooks,
            )
            queries += 1
            for mode, run in (("pools", pooled), ("single", lone)):
                chosen = run.values()
                loaded = (position[id(entry)] for picked in chosen for entry in picked)
                tallies[mode].add(store, loaded, token_counter)
        if not queries:  # no context: check the arguments all the same
            retrieve_pools(store, pool_list, None, is_active=is_active, **hooks)
    _warn_once(caught)
    return _audit_result(store, tallies, queries, is_active, single)


# ===========================================================================
# The demo: a sample store, its pools, and the audit the README shows
# ===========================================================================

DEMO_NOW: Final = datetime(2026, 3, 1, tzinfo=timezone.utc)

# Per type: (type, count, priority range, age range in days, phrases).
# fmt: off
_DEMO_KINDS: Final = (
    ("correction", 8, (9, 10), (0, 30), (
        "Never force-push to main; open a pull request instead",
        "Run the migrations on staging before production",
        "Dates in the API are UTC, never local time",
        "Do not paste customer data into issue comments",
    )),
    ("task", 80, (6, 9), (0, 20), (
        "Finish the billing export for the {w} report",
        "Review the pull request that touches {w}",
        "Fix the flaky test in the {w} module",
        "Reply to the support ticket about {w}",
    )),
    ("fact", 80, (5, 7), (0, 60), (
        "The {w} service runs on Postgres 15 behind pgbouncer",
        "Staging deploys from the release branch of {w}",
        "The {w} dashboard lives in Grafana under Ops",
        "Rate limits for {w} are 100 requests per minute",
    )),
    ("skill", 30, (3, 4), (60, 200), (
        "How to bisect a regression in {w} with git bisect run",
        "How to profile a slow {w} query with EXPLAIN ANALYZE",
        "How to roll back a bad {w} deploy in one command",
    )),
    ("growth", 20, (2, 3), (90, 250), (
        "I rush {w} reviews on Fridays; slow down and read the tests",
        "Ask earlier when {w} requirements are vague",
    )),
    ("episode", 80, (4, 6), (0, 40), (
        "Paired with Sam on the {w} outage; root cause was a stale cache",
        "Demoed the {w} feature to the team; they asked for CSV export",
        "Spent the afternoon on {w} alerts that turned out to be noise",
    )),
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
# fmt: on


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
                    "created": DEMO_NOW.timestamp() - age * 86400.0,
                    "tags": [word],
                    **({"scope": "always"} if kind == "correction" else {}),
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
    parts = []
    for title, flood in (("Everyday store", 0), ("Flood: 300 urgent tasks", 300)):
        store = demo_store(flood)
        result = audit(store, pools, queries, now=DEMO_NOW)
        parts.append(
            f"== {title}: {len(store)} entries, {len(queries)} queries, "
            f"{len(pools)} pools vs one budget ==\n{result.render()}"
        )
    return "\n".join(parts)


# ===========================================================================
# The command line: reads JSON, calls the public functions, writes the result
# ===========================================================================


class _CliError(ValueError):
    """A user error the command line reports on one line with exit status 2."""


def _as_cli_error(read: Callable[..., Any], *args: Any, **options: Any) -> Any:
    """``read(*args, **options)``, its one-line ValueError (a file that cannot
    be read or parsed) reported as the command line's error."""
    try:
        return read(*args, **options)
    except ValueError as exc:
        raise _CliError(str(exc)) from None


def _where(path: str) -> str:
    return "<stdin>" if path == "-" else path


_JSON_GAP: Final = re.compile(r"[ \t\n\r]*,?[ \t\n\r]*")


def _array_lines(text: str, count: int) -> list[int]:
    """The line on which each of the ``count`` items of a JSON array starts."""
    import json

    decoder = json.JSONDecoder()
    position = text.index("[") + 1
    line = text.count("\n", 0, position) + 1
    lines = []
    for _ in range(count):
        start = _JSON_GAP.match(text, position).end()  # type: ignore[union-attr]
        line += text.count("\n", position, start)
        lines.append(line)
        position = decoder.raw_decode(text, start)[1]
        line += text.count("\n", start, position)
    return lines


@dataclass
class _Lines:
    """A store or query file: each item with its line, and lines not JSON."""

    where: str
    numbers: list[int]
    items: list[Any]
    broken: list[tuple[int, str]]  # (line, "FILE:LINE: invalid JSON: ...")


def _load_lines(
    path: str, kind: str, max_bytes: int, *, keep_going: bool = False
) -> _Lines:
    """A JSON array or JSON Lines (blank lines skipped) of objects.

    With ``keep_going`` (validate) a JSON Lines line that does not parse is
    recorded and the rest is read, and any JSON value is kept (validate
    reports it); otherwise the first problem raises. A JSON array that does
    not parse is always one error.
    """
    text: str = _as_cli_error(read_text, path, max_bytes=max_bytes)
    where = _where(path)
    loaded = _Lines(where, [], [], [])
    if text.lstrip().startswith("["):
        items = _as_cli_error(parse_json, text, where=where)
        loaded.numbers = _array_lines(text, len(items))
        loaded.items = items
    else:
        # Only "\n" ends a line: JSON allows U+2028 and U+0085 raw inside a
        # string, and str.splitlines() would split there.
        for number, line in enumerate(text.split("\n"), 1):
            if not line.strip():
                continue
            try:
                item = _as_cli_error(parse_json, line, where=where, line=number)
            except _CliError as exc:
                if not keep_going:
                    raise
                loaded.broken.append((number, str(exc)))
                continue
            loaded.numbers.append(number)
            loaded.items.append(item)
    if not keep_going:
        for number, item in zip(loaded.numbers, loaded.items):
            if not isinstance(item, dict):
                raise _CliError(f"{where}:{number}: each {kind} must be a JSON object")
    return loaded


def _parse_now(text: str | None) -> datetime | None:
    if text is None:
        return None
    seconds = parse_created(text)
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
        # "billing, api" means two tags: the space after a comma is not part
        # of a tag (a tag " api" would silently miss entries tagged "api").
        tags = (tag.strip() for tag in args.tags.split(","))
        context["tags"] = [tag for tag in tags if tag]
    if args.project is not None:
        context["project"] = args.project
    return context


def _dumps(data: object, *, sort_keys: bool = True) -> str:
    import json

    return json.dumps(
        data, sort_keys=sort_keys, indent=2, ensure_ascii=False, default=str
    )


def _progress(contexts: list[Any]) -> Iterator[Any]:
    """Yield the queries, counting them on stderr when it is a terminal."""
    show = sys.stderr.isatty()
    for number, context in enumerate(contexts, 1):
        if show:
            sys.stderr.write(f"\rquery {number}/{len(contexts)}")
        yield context
    if show:
        sys.stderr.write("\n")


def _validate_report(
    loaded: _Lines, form: str, now: datetime | None
) -> tuple[str, int]:
    """validate's output: every problem at FILE:LINE with position and id, a
    line that is not JSON among them, then a summary line (text) or not
    (JSON: a list of problems, each with its file and line)."""
    problems = validate(loaded.items, now=now)
    found: list[tuple[int, int | None, Problem]] = [
        (
            line,
            None,
            Problem(-1, None, "error", "", text[len(f"{loaded.where}:{line}: ") :]),
        )
        for line, text in loaded.broken
    ]
    found += [(loaded.numbers[p.index], p.index, p) for p in problems]
    found.sort(key=lambda row: row[0])
    errors = sum(p.severity == "error" for _, _, p in found)
    if form == "json":
        rows = [
            {**p.to_dict(), "index": index, "file": loaded.where, "line": line}
            for line, index, p in found
        ]
        return _dumps(rows) + "\n", int(errors > 0)
    lines = []
    for line, index, p in found:
        entry = "" if index is None else f"entries[{index}] (id={p.id!r}) "
        field = f"{p.field}: " if p.field else ""
        lines.append(
            f"{loaded.where}:{line}: {entry}{p.severity}: {field}{p.message}\n"
        )
    summary = (
        f"{loaded.where}: {len(loaded.items)} entries read, {errors} errors, "
        f"{len(found) - errors} warnings\n"
    )
    return "".join(lines) + summary, int(errors > 0)


def _selection_text(selected: dict[str, list[Mapping[str, Any]]], form: str) -> str:
    """retrieve's output: JSON (pools in pool order, each entry's keys sorted),
    the prompt text, or the prompt text with ids."""
    if form == "json":
        ordered = {
            name: [dict(sorted(entry.items())) for entry in chosen]
            for name, chosen in selected.items()
        }
        return _dumps(ordered, sort_keys=False) + "\n"
    return render(selected, ids=form == "text")


def _error_at(exc: Exception, store: _Lines, queries: _Lines | None) -> str:
    """An error led by the file and line it concerns, found through its
    ``index`` (the library counts from 0, files by line), never its text."""
    if isinstance(exc, EntryError) and exc.index is not None:
        return f"{store.where}:{store.numbers[exc.index]}: {exc}"
    if isinstance(exc, ContextError) and exc.index is not None and queries is not None:
        return f"{queries.where}:{queries.numbers[exc.index]}: {exc}"
    return f"{store.where}: {exc}"


def _warning_at(warning: Warning | str, store: _Lines) -> str:
    """A warning led by its file, and by the line of the first entry it is
    about; the lines of the others follow the message (first three)."""
    indices = warning.indices if isinstance(warning, PoolsplitWarning) else ()
    if not indices:
        return f"{store.where}: {warning}"
    lines = [str(store.numbers[index]) for index in indices]
    more = f" and {len(lines) - 3} more" if len(lines) > 3 else ""
    also = f" (lines {', '.join(lines[:3])}{more})" if len(lines) > 1 else ""
    return f"{store.where}:{lines[0]}: {warning}{also}"


_QUERY_KEYS: Final = ("message", "tags", "project")


def _check_query_keys(queries: _Lines) -> None:
    """The command line scores with the default scorer, which reads only
    these keys of a query; another key is a typo, not a silent no-op."""
    for number, query in zip(queries.numbers, queries.items):
        unknown = sorted(set(query) - set(_QUERY_KEYS))
        if unknown:
            raise _CliError(
                f"{queries.where}:{number}: unknown key {unknown[0]!r}; "
                f"expected {', '.join(_QUERY_KEYS)}"
            )


def _run(args: Any) -> tuple[str, int]:
    """Execute one parsed command; return its stdout text and exit status."""
    if args.command == "demo":
        return _demo(), 0
    validating = args.command == "validate"
    loaded = _load_lines(args.store, "entry", args.max_bytes, keep_going=validating)
    if validating:
        return _validate_report(loaded, args.format, _parse_now(args.now))
    pools = _as_cli_error(load_pools, args.pools, max_bytes=args.max_bytes)
    now = _parse_now(args.now)
    queries = None
    if args.command == "audit":
        queries = _load_lines(args.queries, "query", args.max_bytes)
        _check_query_keys(queries)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", PoolsplitWarning)
        try:
            if queries is not None:
                result = audit(loaded.items, pools, _progress(queries.items), now=now)
                text = _report_text(result, args.format)
            elif args.command == "explain":
                report = explain(
                    loaded.items, pools, _context(args), now=now, **_filters(args)
                )
                text = _explanation_text(report, args.format, args.summary)
            else:
                selected = retrieve_pools(loaded.items, pools, _context(args), now=now)
                text = _selection_text(selected, args.format)
        except (TypeError, ValueError) as exc:
            raise _CliError(_error_at(exc, loaded, queries)) from None
    for warning in caught:  # diagnostics: stderr, with the file and line
        message = _warning_at(warning.message, loaded)
        print(f"poolsplit: warning: {message}", file=sys.stderr)
    return text, 0


def _filters(args: Any) -> dict[str, Any]:
    """explain's --id, --type and --outcome as its filters. An --id is also
    matched as the number it spells (``--id 7`` finds ``"id": 7``)."""
    import json

    ids: list[object] | None = None
    if args.id is not None:
        ids = []
        for text in args.id:
            ids.append(text)
            try:
                number = json.loads(text)
            except ValueError:
                continue
            if isinstance(number, (int, float)) and not isinstance(number, bool):
                ids.append(number)
    return {"ids": ids, "types": args.type, "outcomes": args.outcome}


def _explanation_text(report: Explanation, form: str, summary: bool) -> str:
    if form == "json":
        return _dumps(report.to_dict(summary=summary)) + "\n"
    return report.render(summary=summary)


def _report_text(report: Audit | Explanation, form: str) -> str:
    return _dumps(report.to_dict()) + "\n" if form == "json" else report.render()


_EPILOG: Final = """\
STORE is a JSON array of entries, or JSON Lines (one entry per line), or -
for stdin. POOLS is a JSON array of pools, filled in order, for example:

  [{"name": "core", "max_tokens": 0, "max_entries": 0, "types": ["correction"]},
   {"name": "work", "max_tokens": 600, "max_entries": 4, "types": ["task"],
    "min_score": 6.0},
   {"name": "rest", "max_tokens": 400, "max_entries": 3}]

(always-scope corrections load in "core" whatever its caps; "rest" has no
types, so it takes what the typed pools left). QUERIES is JSON Lines of
contexts, one per line:

  {"message": "fix the billing export", "tags": ["billing"], "project": "api"}

examples:
  poolsplit retrieve store.jsonl --pools pools.json --message "fix billing"
  poolsplit explain store.jsonl --pools pools.json --tags billing,api
  poolsplit validate store.jsonl
  poolsplit audit store.jsonl --pools pools.json --queries queries.jsonl
"""


def _byte_count(text: str) -> int:
    """``--max-bytes``: a positive int."""
    import argparse

    try:
        count = int(text)
    except ValueError:
        count = 0
    if count <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive int, got {text!r}")
    return count


def _parser() -> Any:
    """The argument parser, with help for every option."""
    import argparse

    class Parser(argparse.ArgumentParser):
        def error(self, message: str) -> Any:  # one line instead of usage + error
            raise _CliError(message)

    summary = (__doc__ or "").partition("\n")[0]  # None under python -OO
    form = argparse.RawDescriptionHelpFormatter
    parser = Parser(
        prog="poolsplit", description=summary, epilog=_EPILOG, formatter_class=form
    )
    parser.add_argument("--version", action="version", version=__version__)
    commands = parser.add_subparsers(dest="command", required=True)

    def command(name: str, summary: str, formats: Sequence[str]) -> Any:
        sub = commands.add_parser(
            name,
            help=summary,
            description=summary,
            epilog=_EPILOG,
            formatter_class=form,
        )
        sub.add_argument(
            "store", metavar="STORE", help="entries: a JSON array, JSON Lines, or -"
        )
        sub.add_argument(
            "--format",
            choices=formats,
            default=formats[0],
            help=f"output format (default: {formats[0]})",
        )
        sub.add_argument(
            "--max-bytes",
            type=_byte_count,
            default=DEFAULT_MAX_BYTES,
            metavar="N",
            help=f"read at most N bytes of each input file (default: "
            f"{DEFAULT_MAX_BYTES} = {DEFAULT_MAX_BYTES >> 20} MiB); a larger "
            f"one is an error",
        )
        return sub

    def explain_filters(sub: Any) -> None:
        sub.add_argument(
            "--id",
            action="append",
            metavar="ID",
            help="show only the entry with this id (repeatable)",
        )
        sub.add_argument(
            "--type",
            action="append",
            metavar="TYPE",
            help="show only entries of this type (repeatable)",
        )
        sub.add_argument(
            "--outcome",
            action="append",
            choices=OUTCOMES,
            metavar="OUTCOME",
            help="show only entries with this outcome, decisive or in any pool "
            f"(repeatable): {', '.join(OUTCOMES)}",
        )
        sub.add_argument(
            "--summary",
            action="store_true",
            help="leave out the per-entry rows: the count of each outcome, the "
            "pools and the warnings",
        )

    def pools_and_now(sub: Any) -> None:
        sub.add_argument(
            "--pools", required=True, metavar="POOLS", help="JSON array of pools"
        )
        now_option(sub)

    def now_option(sub: Any) -> None:
        sub.add_argument(
            "--now",
            metavar="ISO",
            help="the moment recency is measured from, e.g. 2026-01-01 or "
            "2026-01-01T09:30:00Z (default: the current time); fix it for "
            "reproducible output",
        )

    for name, summary, formats in (
        (
            "retrieve",
            "print the selected entries",
            ("text", "json", "prompt"),
        ),
        ("explain", "show why each entry loaded or not", ("text", "json")),
    ):
        sub = command(name, summary, formats)
        pools_and_now(sub)
        sub.add_argument(
            "--message", metavar="TEXT", help="the user's message the entries match"
        )
        sub.add_argument(
            "--tags",
            metavar="A,B",
            help="the context's tags, comma-separated; entries sharing them "
            "rank higher",
        )
        sub.add_argument(
            "--project",
            metavar="P",
            help="the current project (entries of another project rank lower)",
        )
        if name == "explain":
            explain_filters(sub)
    now_option(command("validate", "list the problems of a store", ("text", "json")))
    sub = command("audit", "measure starvation, pools vs one budget", ("text", "json"))
    pools_and_now(sub)
    sub.add_argument(
        "--queries", required=True, metavar="QUERIES", help="JSON Lines of contexts"
    )
    commands.add_parser(
        "demo",
        help="audit a built-in sample store",
        description="Audit a built-in sample store, then the same store flooded "
        "with 300 urgent tasks: one ranked budget against pools of the same size.",
    )
    return parser


def _write(stream: Any, text: str) -> None:
    """Write ``text``; what the stream cannot encode (a lone surrogate from a
    JSON ``"\\ud800"``, say) is written as a backslash escape, not a crash."""
    try:
        stream.write(text)
    except UnicodeEncodeError:
        encoding = getattr(stream, "encoding", None) or "utf-8"
        stream.write(text.encode(encoding, "backslashreplace").decode(encoding))


def _drop_stdout() -> None:
    """Point standard output at the null device once writing to it failed, so
    that the interpreter's last flush of what is left does not fail again
    with a traceback; a stream without a descriptor needs nothing."""
    import os

    try:
        descriptor = sys.stdout.fileno()
    except (OSError, ValueError, AttributeError):
        return
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, descriptor)
    os.close(null)


def main(argv: list[str] | None = None) -> int:
    """Run the ``poolsplit`` command line; return the exit status.

    Exit 0 on success, 1 when ``validate`` finds errors, 2 on a usage error,
    unreadable input or output that cannot be written (one line on stderr,
    no traceback). A reader that closes the pipe early (``| head``) ends the
    command quietly, with the status it would have had. A PoolsplitWarning
    is printed on stderr as ``poolsplit: warning: ...``.
    """
    parser = _parser()
    try:
        try:
            args = parser.parse_args(argv)
        except OSError:  # pragma: no cover (Python < 3.11 only: later argparse
            # ignores it) --help or --version could not write; the flush
            # below meets the same closed pipe or full disk and says so
            raise SystemExit(0) from None
        text, status = _run(args)
    except SystemExit as exc:  # --help and --version wrote their text already
        text, status = "", int(exc.code or 0)
    except _CliError as exc:
        print(f"poolsplit: error: {exc}", file=sys.stderr)
        return 2
    try:
        _write(sys.stdout, text)
        sys.stdout.flush()
    except BrokenPipeError:  # the reader left (`| head`): nothing to report
        _drop_stdout()
    except OSError as exc:  # a full disk, a closed descriptor
        _drop_stdout()
        print(f"poolsplit: error: cannot write the output: {exc}", file=sys.stderr)
        return 2
    return status


if __name__ == "__main__":
    raise SystemExit(main())
