"""The one write-validation rule (``build_entry``, ``check_entry`` and the
field checks they share), and the checks of a recall's context.
"""

from __future__ import annotations

import difflib
import math
import numbers
import uuid
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timezone, tzinfo
from typing import Any, Final

import poolsplit
from poolsplit import (
    Pool,
    TokenCounter,
    default_token_counter,
)

from ._defaults import (
    _ALWAYS,
    _MAX_NAME,
    DEFAULT_MAX_ENTRY_TOKENS,
    DEFAULT_POOLS,
    MAX_BASE_PRIORITY,
    SPILL_OVER,
)
from ._trust import (
    QUARANTINED,
    UPDATED_AT,
    UPDATED_BY,
    WRITTEN_AT,
    WRITTEN_BY,
)
from ._types import InvalidInput
from ._when import time_zone

# ===========================================================================
# The one write-validation rule
# ===========================================================================


def _require_text(field: str, value: object) -> str:
    """A non-blank str, or InvalidInput naming ``field``."""
    if not isinstance(value, str):
        raise InvalidInput(field, f"must be a str, got {type(value).__name__}")
    if not value.strip():
        raise InvalidInput(field, f"must not be empty, got {value!r}")
    return value


def _require_name(field: str, value: object) -> str:
    """A namespace, id, key or type: non-blank str, at most 200 characters."""
    text = _require_text(field, value)
    if len(text) > _MAX_NAME:
        raise InvalidInput(
            field, f"must be at most {_MAX_NAME} characters, got {len(text)}"
        )
    _check_json_value(field, text)
    return text


def _require_id(value: object) -> str:
    """An id to look up (get, update, forget): any str a row may hold, the
    empty and the over-long ids of rows written by hand included, so that
    every row a recall names can be fixed or forgotten."""
    if not isinstance(value, str):
        raise InvalidInput("id", f"must be a str, got {type(value).__name__}")
    _check_json_value("id", value)
    return value


def _require_priority(value: object) -> float | int:
    """A finite real number (not bool): the same on every backend."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise InvalidInput(
            "base_priority",
            f"must be a real number or None, got {type(value).__name__} {value!r}",
        )
    try:
        finite = math.isfinite(float(value))
    except OverflowError:
        finite = False
    if not finite:
        raise InvalidInput("base_priority", f"must be finite, got {_short(value)}")
    return value  # type: ignore[return-value]


def _not_null_text(field: str, value: object) -> None:
    """Refuse the string ``"null"`` as an ``update`` text field: a client
    that serialised its null (meaning "leave it") would overwrite the text,
    and the list and number fields already refuse it (as not a list, not a
    number)."""
    if isinstance(value, str) and value.strip() == "null":
        raise InvalidInput(
            field,
            "must not be the string 'null': send null (None) to leave the "
            "field as it is",
        )


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 40 else f"{text[:20]}...({len(text)} characters)"


def _tag_list(tags: object) -> list[str]:
    if isinstance(tags, (str, bytes)) or not isinstance(tags, Iterable):
        raise InvalidInput(
            "tags", f"must be a list of str, got {type(tags).__name__} {tags!r}"
        )
    result = list(tags)
    for tag in result:
        if not isinstance(tag, str):
            raise InvalidInput(
                "tags", f"must contain only str, got {type(tag).__name__} {tag!r}"
            )
    return result


def _require_now(now: object) -> datetime | None:
    """The one check of a ``now`` argument (remember, recall, explain): a
    datetime (naive is UTC) or None, else InvalidInput naming ``now``."""
    if now is not None and not isinstance(now, datetime):
        raise InvalidInput(
            "now", f"must be a datetime or None, got {type(now).__name__} {now!r}"
        )
    return now


def _written_tags(tags: object) -> list[str]:
    """Tags a write stores: :func:`_tag_list`, none blank (whitespace only),
    as a project is never blank; InvalidInput names the tag's position.
    Blank tags stored before this rule (or imported) are kept and load: a
    tag is a str that a context's tag equals, and a blank one still is."""
    result = _tag_list(tags)
    for position, tag in enumerate(result):
        if not tag.strip():
            raise InvalidInput(
                "tags", f"tags[{position}] must not be blank, got {tag!r}"
            )
    return result


def _created(now: datetime | None) -> str:
    now = _require_now(now)
    if now is None:
        now = datetime.now(timezone.utc)
    elif now.tzinfo is None:
        now = now.replace(tzinfo=timezone.utc)
    return now.astimezone(timezone.utc).isoformat()


def _utc_now() -> datetime:
    """The wall clock, in UTC: a store's clock unless a test sets another."""
    return datetime.now(timezone.utc)


def _moment(value: object, field: str) -> str:
    """An aware datetime as the history writes and compares times: UTC, ISO
    8601 with microseconds, so that text order is time order.

    Raises:
        InvalidInput: ``value`` is not a datetime with a time zone (named
            ``field``), or leaves the years 1-9999 in UTC.
    """
    if not isinstance(value, datetime):
        raise InvalidInput(
            field, f"must be a datetime with a time zone, got {type(value).__name__}"
        )
    if value.tzinfo is None or value.utcoffset() is None:
        raise InvalidInput(
            field,
            f"must have a time zone (an aware datetime), got {value.isoformat()!r}",
        )
    try:
        return value.astimezone(timezone.utc).isoformat(timespec="microseconds")
    except OverflowError:
        raise InvalidInput(
            field, f"is outside the years 1-9999 in UTC, got {value.isoformat()!r}"
        ) from None


def _new_id() -> str:
    return uuid.uuid4().hex[:16]


_CONTEXT: Final = "context"


def _scope(value: object) -> str:
    """``"always"`` or ``"context"`` from ``value`` in any case, surrounding
    spaces ignored: a model writes ``"Always"`` meaning always, and the two
    values cannot be confused. ``"context"`` is an entry without ``scope``
    (it loads only when it ranks).

    Raises:
        InvalidInput: any other value, naming the two accepted.
    """
    folded = value.strip().casefold() if isinstance(value, str) else None
    if folded not in (_ALWAYS, _CONTEXT):
        raise InvalidInput(
            "scope", f"must be 'always' or 'context', got {_short(value)}"
        )
    return folded


def build_entry(
    content: str,
    *,
    type: str = "note",
    scope: str | None = None,
    tags: Iterable[str] = (),
    project: str | None = None,
    base_priority: float | None = None,
    now: datetime | None = None,
) -> dict[str, Any]:
    """A new entry with a fresh ``id`` and ``created``; arguments checked.

    Keys absent or empty (no scope, no tags, no project, no priority) are
    left out. ``check_entry`` is the rest of the rule (it needs the pools).

    Raises:
        InvalidInput: empty content or type, a scope other than ``"always"``
            or ``"context"`` (any case; ``"context"`` is no scope key),
            tags that are not a list of str, an empty project, a priority
            that is not a finite real number, a ``now`` that is not a datetime.
    """
    entry: dict[str, Any] = {
        "id": _new_id(),
        "type": _require_name("type", type),
        "content": _require_text("content", content),
        "created": _created(now),
    }
    if scope is not None and _scope(scope) == _ALWAYS:
        entry["scope"] = _ALWAYS
    tag_list = _written_tags(tags)
    if tag_list:
        entry["tags"] = tag_list
    if project is not None:
        entry["project"] = _require_text("project", project)
    if base_priority is not None:
        entry["base_priority"] = _require_priority(base_priority)
    return entry


# Deepest nesting of lists and objects a stored value may have: far past any
# real entry, well inside Python's recursion limit (a deeper one would fail
# with a bare RecursionError in a reader instead of a message naming it).
_MAX_DEPTH: Final = 100


def _check_json_value(field: str, value: object, depth: int = 0) -> None:
    """Refuse what one backend would store and another refuse: NUL, lone
    surrogates, non-finite floats, values JSON has no form for, and nesting
    deeper than ``_MAX_DEPTH``."""
    if isinstance(value, str):
        if "\x00" in value:
            raise InvalidInput(field, "must not contain NUL characters (\\x00)")
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise InvalidInput(
                field, "must be valid Unicode, got a lone surrogate"
            ) from None
    elif isinstance(value, bool) or value is None or isinstance(value, int):
        return
    elif isinstance(value, float):
        if not math.isfinite(value):
            raise InvalidInput(field, f"must be a finite number, got {value!r}")
    elif isinstance(value, (Mapping, list, tuple)):
        _check_json_container(field, value, depth)
    else:
        raise InvalidInput(
            field, f"must be a JSON value, got {type(value).__name__} {value!r}"
        )


def _check_json_container(
    field: str,
    value: Mapping[object, object] | list[object] | tuple[object, ...],
    depth: int,
) -> None:
    """Each key and item of a list or object, at most ``_MAX_DEPTH`` deep."""
    if depth >= _MAX_DEPTH:
        raise InvalidInput(field, f"is nested deeper than {_MAX_DEPTH} levels")
    if not isinstance(value, Mapping):
        for item in value:
            _check_json_value(field, item, depth + 1)
        return
    for key, item in value.items():
        if not isinstance(key, str):
            raise InvalidInput(
                field, f"keys must be str, got {type(key).__name__} {key!r}"
            )
        _check_json_value(field, key)
        _check_json_value(field, item, depth + 1)


def _content_text(entry: Mapping[str, Any]) -> str:
    """The text poolsplit renders and counts: missing/None is "", else str()."""
    content = entry.get("content")
    return (
        "" if content is None else content if isinstance(content, str) else str(content)
    )


def _admitting(kind: str, pools: Sequence[Pool] | None) -> list[Pool]:
    chosen = DEFAULT_POOLS if pools is None else pools
    return [p for p in chosen if p.types is None or kind in p.types]


def _type_warning(kind: str, pools: Sequence[Pool] | None) -> str | None:
    """A warning for a type only the spill-over pool (or no pool) admits."""
    if _admitting(kind, pools):
        return None
    chosen = DEFAULT_POOLS if pools is None else pools
    named = sorted({t for p in chosen for t in p.types or ()})
    close = difflib.get_close_matches(kind, named, 1, 0.75)
    if pools is None:
        if not close:
            return None
        return (
            f"type: {kind!r} has no pool of its own and competes in the "
            f"spill-over pool {SPILL_OVER[0]!r}; did you mean {close[0]!r}?"
        )
    hint = f"; did you mean {close[0]!r}?" if close else ""
    return f"type: no pool admits {kind!r}, so this entry never loads{hint}"


def _priority_warning(value: object) -> str | None:
    """A warning for a checked ``base_priority`` that misleads a ranking: at
    or below 0, or above :data:`MAX_BASE_PRIORITY` (None: the default 5)."""
    if value is None:
        return None
    priority = float(value)  # type: ignore[arg-type]  # finite: checked
    if priority <= 0:
        return (
            f"base_priority: {_short(value)} is at or below 0, so this entry "
            "never loads for a message that matches an entry of its pool (the "
            "floor), only when none does; a small positive priority (1) "
            "ranks it low and keeps it"
        )
    if priority > MAX_BASE_PRIORITY:
        return (
            f"base_priority: {_short(value)} is above {MAX_BASE_PRIORITY:,}, "
            "the documented maximum: it outranks entries that match the "
            "message far better, in every recall of its pool; use at most "
            f"{MAX_BASE_PRIORITY:,} (the default is 5)"
        )
    return None


def _check_fields(entry: object) -> None:
    """What a store needs beyond ``validate``: a mapping of JSON values with
    str keys, str ``id``/``type``/``scope``/``project``/``status``, a finite
    priority."""
    if not isinstance(entry, Mapping):
        raise InvalidInput(None, f"entry must be an object, got {type(entry).__name__}")
    for key, value in entry.items():
        if not isinstance(key, str):
            raise InvalidInput(
                None, f"keys must be str, got {type(key).__name__} {key!r}"
            )
        _check_json_value(key, key)
        _check_json_value(key, value)
    if "id" in entry:
        _require_name("id", entry["id"])
    _require_name("type", entry.get("type", "note"))
    for field in ("scope", "project", "status"):
        value = entry.get(field)
        if value is not None and not isinstance(value, str):
            raise InvalidInput(
                field, f"must be a str or null, got {type(value).__name__}"
            )
    if entry.get("base_priority") is not None:
        _require_priority(entry["base_priority"])
    for field in (WRITTEN_BY, WRITTEN_AT, UPDATED_BY, UPDATED_AT):
        value = entry.get(field)
        if value is not None and not isinstance(value, str):
            raise InvalidInput(
                field, f"must be a str or null, got {type(value).__name__}"
            )
    if entry.get(QUARANTINED) not in (None, True, False):
        raise InvalidInput(
            QUARANTINED,
            f"must be true, false or null, got {_short(entry[QUARANTINED])}",
        )


def check_entry(
    entry: Mapping[str, Any],
    *,
    pools: Sequence[Pool] | None = None,
    token_counter: TokenCounter = default_token_counter,
    max_entry_tokens: int = DEFAULT_MAX_ENTRY_TOKENS,
) -> list[str]:
    """Check one entry before any backend stores it; return its warnings.

    The one write rule of the store, the MCP server and the adapters:
    ``poolsplit.validate`` (its errors refuse, its warnings return), then
    what a store adds: JSON-only values without NUL characters or lone
    surrogates, a finite ``base_priority``, str ``id``/``type``/``scope``/
    ``project``/``status``, and content of at most ``max_entry_tokens``
    tokens by ``token_counter``; a positive ``token_count`` (the cost
    poolsplit charges instead of counting) must be at least that count and
    at most ``max_entry_tokens``. A ``superseded_by`` is left to the store,
    which checks that it names a stored entry. Warnings are ``field:
    message`` strings: poolsplit's (a near-miss key such as ``"scop"``), a
    ``base_priority`` at or below 0 or above :data:`MAX_BASE_PRIORITY`
    (kept: see the README), a type no pool admits (it never loads), and a
    type that only the spill-over pool admits when it is close to a pool's
    type (``pools=None`` means the default pools).

    Raises:
        InvalidInput: the first problem found, naming the field.
    """
    _check_fields(entry)
    warnings: list[str] = []
    for problem in poolsplit.validate([entry]):
        if problem.severity == "error" and problem.field != "superseded_by":
            raise InvalidInput(problem.field or None, problem.message)
        if problem.severity == "warning":
            warnings.append(f"{problem.field}: {problem.message}")
    if type(max_entry_tokens) is not int or max_entry_tokens < 1:
        raise InvalidInput(
            "max_entry_tokens", f"must be a positive int, got {max_entry_tokens!r}"
        )
    tokens = token_counter(_content_text(entry))
    if tokens > max_entry_tokens:
        raise InvalidInput(
            "content",
            f"is {tokens} tokens, over the limit of {max_entry_tokens} "
            "(max_entry_tokens); store a summary, or raise the limit",
        )
    given = entry.get("token_count")
    if isinstance(given, int) and not isinstance(given, bool) and given > 0:
        # poolsplit charges a positive token_count instead of counting: one
        # below the content's count would let content past every cap (and
        # always-scope content past the always total) unseen.
        if given < tokens:
            raise InvalidInput(
                "token_count",
                f"must be at least the {tokens} tokens token_counter counts in "
                f"content, got {given}; leave it out to have content counted",
            )
        if given > max_entry_tokens:
            raise InvalidInput(
                "token_count",
                f"is {given}, over the limit of {max_entry_tokens} "
                "(max_entry_tokens); store a summary, or raise the limit",
            )
    for warning in (
        _priority_warning(entry.get("base_priority")),
        _type_warning(str(poolsplit.entry_type(entry)), pools),
    ):
        if warning is not None:
            warnings.append(warning)
    return warnings


def _context(message: object, tags: object, project: object) -> dict[str, Any]:
    if not isinstance(message, str):
        raise InvalidInput("message", f"must be a str, got {type(message).__name__}")
    if project is not None and not isinstance(project, str):
        raise InvalidInput(
            "project", f"must be a str or None, got {type(project).__name__}"
        )
    return {"message": message, "tags": _tag_list(tags), "project": project}


def _zone(tz: object) -> tzinfo | None:
    """The IANA time zone ``tz`` names ("Europe/Paris"), None for None."""
    if tz is None:
        return None
    if not isinstance(tz, str):
        raise InvalidInput("tz", f"must be a str or None, got {type(tz).__name__}")
    try:
        return time_zone(tz)
    except ValueError as exc:
        raise InvalidInput("tz", str(exc)) from None


def _zoned(now: datetime, zone: tzinfo | None) -> datetime:
    """``now`` in ``zone`` (a naive ``now`` is UTC's), for reading the times
    a message names; unchanged without a zone."""
    if zone is None or not isinstance(now, datetime):
        return now  # (a bad ``now`` is named by the ranking)
    if now.tzinfo is None or now.utcoffset() is None:
        now = now.replace(tzinfo=timezone.utc)
    try:
        return now.astimezone(zone)
    except OverflowError:
        raise InvalidInput(
            "tz", f"puts now ({now.isoformat()}) outside the years 1-9999"
        ) from None
