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

import math
import numbers
import re
import unicodedata
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime, timezone
from functools import lru_cache
from typing import Any, Final, Protocol, TypeVar, Union

__all__ = [
    "Pool",
    "clear_caches",
    "default_is_active",
    "default_scorer",
    "default_token_counter",
    "retrieve",
    "retrieve_pools",
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
_EPOCH: Final = datetime(1970, 1, 1, tzinfo=timezone.utc)

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


_WORD_RE: Final = re.compile(r"[^\W_]+")


def _words(text: str) -> frozenset[str]:
    """Significant words: lowercase letter/digit runs of 3+ chars, not stopwords.

    Non-ASCII text is NFC-normalised first so that a decomposed accent stays
    inside its word; on ASCII text this is exactly ``[a-z0-9]{3,}``.
    """
    if not text.isascii():
        text = unicodedata.normalize("NFC", text)
    return frozenset(
        word
        for word in _WORD_RE.findall(text.lower())
        if len(word) >= MIN_WORD_LENGTH and word not in STOPWORDS
    )


# Message words are computed once per distinct message; content words once per
# distinct content string, kept as a tuple (a third of a frozenset's memory).
_message_words = lru_cache(maxsize=1024)(_words)


@lru_cache(maxsize=_CACHE_SIZE)
def _content_words(text: str) -> tuple[str, ...]:
    return tuple(_words(text))


_ISO_RE: Final = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})"
    r"(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d+))?)?)?"
    r"\s*(Z|[+-]\d{2}(?::?\d{2})?)?",
    re.ASCII | re.IGNORECASE,
)


@lru_cache(maxsize=_CACHE_SIZE)
def _parse_iso(text: str) -> float | None:
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
        seconds = float(value)
        return seconds if math.isfinite(seconds) else None
    return None


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
    value = entry.get("base_priority")
    if value is None:
        return DEFAULT_PRIORITY
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        priority = float(value)
    else:
        raise TypeError(
            f"base_priority must be a real number, got {type(value).__name__} {value!r}"
        )
    if math.isnan(priority):
        raise ValueError(f"base_priority must not be NaN, got {value!r}")
    return priority


def _score(entry: Entry, query: _Query) -> float:
    """The default score of one entry; raises for a bad ``base_priority``/``tags``."""
    score = _priority(entry)

    created = _created_seconds(entry.get("created"))
    if created is not None:
        days = max(0.0, (query.now - created) / _SECONDS_PER_DAY)
        score *= max(RECENCY_FLOOR, 1.0 - RECENCY_SLOPE * days / RECENCY_HORIZON_DAYS)

    tags = entry.get("tags")
    if tags:
        tag_set = _tag_set(tags, "tags")
        if tag_set:
            score *= 1.0 + TAG_BOOST * len(tag_set & query.tags) / len(tag_set)

    project = entry.get("project")
    if project is not None:
        score *= PROJECT_MATCH if project == query.project else PROJECT_MISMATCH

    if query.words:
        overlap = len(query.words.intersection(_content_words(_content(entry))))
        share = overlap / len(query.words)
        if share > MESSAGE_THRESHOLD:
            score *= 1.0 + MESSAGE_BOOST * share
    return score


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
    _parse_iso.cache_clear()


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
        number = float(value)
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
    counted = token_counter(_content(entry))
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
        score = float(value)
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


@dataclass(frozen=True)
class _Step:
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
    steps: list[_Step]


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

    With ``trace`` every decision is recorded and the scan never stops early,
    so explain() can report why entries past a full pool were left out.
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

    count = len(store)
    active = [False] * count
    types: list[object] = [None] * count
    always = [False] * count
    by_type: dict[object, list[int]] = {}
    default_active = is_active is default_is_active
    for index, entry in enumerate(store):
        if not isinstance(entry, Mapping):
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
        active[index] = True
        always[index] = get("scope") == ALWAYS_SCOPE
        try:
            by_type.setdefault(kind, []).append(index)
        except TypeError:  # an unhashable type value matches only types=None
            by_type.setdefault(_UNHASHABLE, []).append(index)

    scores: dict[int, float] = {}
    costs: dict[int, int] = {}
    taken = [False] * count
    results: dict[str, list[Entry]] = {}
    steps: list[_Step] = []
    tie_rank: list[int] | None = None

    def score_of(index: int) -> float:
        entry = store[index]
        if query is not None:
            try:
                return _score(entry, query)
            except (TypeError, ValueError) as exc:
                raise type(exc)(f"{_label(index, entry)}: {exc}") from None
        return _check_score(scorer(entry, context, now=moment), index, entry)

    all_active = [index for index in range(count) if active[index]]
    for pool in checked_pools:
        if pool.types is None:
            members = all_active
        else:
            wanted = [by_type[t] for t in dict.fromkeys(pool.types) if t in by_type]
            members = (
                wanted[0]
                if len(wanted) == 1
                else sorted(i for group in wanted for i in group)
            )
        chosen: list[Entry] = []
        candidates: list[int] = []
        for index in members:
            if taken[index]:
                continue
            if always[index]:
                taken[index] = True
                chosen.append(store[index])
                if trace:
                    steps.append(_Step(index, pool.name, TAKEN_ALWAYS, None, None, 0))
            else:
                candidates.append(index)

        for index in candidates:
            if index not in scores:
                scores[index] = score_of(index)
        if tie_rank is None and candidates:
            tie_rank = _tie_ranks(store, active, always)
        rank = tie_rank if tie_rank is not None else []
        # Sort by the tie-break rank, then stably by score: the same order as
        # the key (-score, created, id, index) with one cheap float key.
        candidates.sort(key=rank.__getitem__)
        candidates.sort(key=lambda i: -scores[i])

        used = 0
        picked = 0
        max_tokens = pool.max_tokens
        max_entries = pool.max_entries
        for index in candidates:
            if picked >= max_entries or used >= max_tokens:
                # Every cost is >= 1, so nothing more can fit: stop, unless
                # explain() wants the reason for each entry left out.
                if not trace:
                    break
                outcome = SKIPPED_ENTRIES if picked >= max_entries else SKIPPED_TOKENS
                steps.append(
                    _Step(
                        index,
                        pool.name,
                        outcome,
                        scores[index],
                        _cost_cached(costs, store, index, token_counter),
                        used,
                    )
                )
                continue
            cost = _cost_cached(costs, store, index, token_counter)
            if used + cost <= max_tokens:
                used += cost
                picked += 1
                taken[index] = True
                chosen.append(store[index])
                if trace:
                    steps.append(
                        _Step(index, pool.name, TAKEN, scores[index], cost, used)
                    )
            elif trace:
                steps.append(
                    _Step(index, pool.name, SKIPPED_TOKENS, scores[index], cost, used)
                )
        results[pool.name] = chosen
    return _Selection(store, results, active, types, steps)


class _Unhashable:
    """Bucket for entries whose ``type`` cannot be hashed (a list, a dict)."""

    def __repr__(self) -> str:
        return "<unhashable type>"


_UNHASHABLE: Final = _Unhashable()


def _cost_cached(
    costs: dict[int, int], store: list[Entry], index: int, counter: TokenCounter
) -> int:
    cost = costs.get(index)
    if cost is None:
        cost = costs[index] = _cost(store[index], index, counter)
    return cost


def _tie_ranks(store: list[Entry], active: list[bool], always: list[bool]) -> list[int]:
    """Rank of each context entry by ``(created, id, index)``, computed once a call."""
    order = [i for i in range(len(store)) if active[i] and not always[i]]
    keyed = [
        (_created_key(store[i].get("created")), _id_key(store[i].get("id")), i)
        for i in order
    ]
    keyed.sort()
    rank = [0] * len(store)
    for position, (_, _, index) in enumerate(keyed):
        rank[index] = position
    return rank


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
