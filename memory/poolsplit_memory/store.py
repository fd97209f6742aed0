"""The memory store: one meaning on SQLite and PostgreSQL, validated writes.

``open_store(url, namespace=...)`` returns a :class:`Store`. Every rule lives
here, once; a backend (``_sqlite.py``, ``_postgres.py``) only runs the SQL of
``_sql.py`` inside the transactions this module asks for.

Decisions where the issue is silent:

- ``sqlite:///relative.db`` and ``sqlite:////absolute.db`` follow
  SQLAlchemy's rule; a plain path is used as it is; ``?busy_timeout=MS`` on a
  ``sqlite:`` or ``postgresql:`` URL sets how long a write waits for a lock
  another connection holds (default 10,000 ms) before ``database is locked``
  (PostgreSQL: ``lock_timeout``; ``statement_timeout`` twice it, >= 10 s).
  ``:memory:`` is one connection (reads wait for writes; it is
  process-local anyway); a file has a reader connection beside the writer.
- Ids are 16 hex characters of a uuid4; ``created`` is ISO-8601 UTC. A naive
  ``now`` is taken as UTC.
- ``key`` (remember): the same key with the same fields (content, type,
  scope, tags, project, base_priority) returns the first call's ``Written``
  and writes nothing; other fields are ``InvalidInput(field="key")``. A key
  lives as long as its entry: after ``forget`` it may be used again; an
  import with ``replace=True`` clears the key of an entry it overwrites;
  export does not carry keys. Each writer has a key space of its own (issue
  51): one writer's key never answers, nor blocks, another's.
- ``list`` returns every entry of the namespace (retired ones included, for
  auditing) in insertion order; the cursor is the position after the page,
  masked and bound to the namespace by a secret of the database
  (``poolsplit_secrets``, drawn by the first store that needs it): it
  reveals nothing of other namespaces; another namespace's or another
  database's is refused; every process and worker on the database accepts
  it.
- Identical memories: a ``remember`` (or an ``import_jsonl`` line) whose
  content after whitespace normalisation, type and scope equal an active
  entry stored in the namespace (found by the indexed digest of
  :func:`_memory_digest`) writes nothing and returns that entry's id with an
  ``idempotent`` warning (a ``supersedes`` then retires its target in
  favour of that entry). An ``update`` that would make an active entry the
  same memory as another active one is refused (InvalidInput naming the
  other id): merging two entries silently would lose one's tags or
  priority, and keeping both injects the same rule twice.
- ``forget`` deletes the entry and every entry whose ``superseded_by`` chain
  ends at it (they never load, and usually hold what the user wants gone).
  SQLite overwrites the deleted bytes (``secure_delete``) and truncates the
  WAL; the content is gone from the files when that truncation succeeds: at
  once, unless another connection holds a read transaction open for longer
  than a second; then ``Store.scrub_pending`` is True and the store retries
  on each later call and at ``close`` (never stalling a call on it).
  ``update`` and ``supersedes`` (which overwrite a body) take the same path
  for the entries table; the body they replaced stays in the history until
  the entry is forgotten (issue 49: only ``forget`` removes content).
  PostgreSQL deletes the row (its old tuple stays in the table file until
  VACUUM).
- ``update`` and ``forget`` of a retired entry are allowed (it stays retired);
  ``update`` with no field is InvalidInput. A field given as None is left as
  it is; ``scope="context"``, ``tags=[]`` and ``project=""`` clear (a strict
  client sends null for what it does not mean to change).
- A bad stored row is recognised when it is read: invalid JSON, not an
  object, a ``type`` that is not a str, or a ``poolsplit.validate`` error.
  An always-scope row (by its column or its body) is also named in the text.
  A running store notices a hand edit on both backends: triggers log
  every changed row (``_sql.py``), and the next recall applies it.
- The row's id is the entry's id: a body whose ``id`` is missing or differs
  is read with the row's; get, update and forget take any str id a row
  holds (a hand-written ``''`` or 300-character one too), so every row a
  recall names can be forgotten; ``update`` refuses to store such an id
  (it says to forget the row and remember it again).
- ``get``/``list`` return a row whose body is not a JSON object as
  ``{"id": ..., "unreadable": reason}`` so it can be found and forgotten;
  ``export_jsonl`` refuses to write a partial backup past such a row.
- ``import_jsonl`` assigns an id to an entry without one; with
  ``replace=True`` a later line with the same id wins over an earlier one and
  over the stored entry. It returns the number of distinct ids written.
- The spill-over type warning is given when the type is close to a pool's
  type (a likely typo such as ``"corection"``); the default type ``"note"``
  does not warn on every write.
- A ``token_count`` (import_jsonl; poolsplit charges it instead of
  counting) below what the store's ``token_counter`` counts in the content
  is refused, so it never hides content from ``max_entry_tokens`` or from
  the always-scope total; ``update`` of the content drops the old
  ``token_count``.
- History (issue 49): every write appends a version per entry it writes,
  in its transaction (``SqlTx`` appends it beside the row, so no write path
  can skip it). The new entry of a ``supersedes`` is a ``remember``, the
  retired one a ``supersede``. Rows older than migration 6 are version 1
  ``migrated``, by nobody, dated by the migration (history begins there:
  ``as_of`` before it sees none of them). ``forget`` empties every version
  of what it deletes and leaves a tombstone, all filed under a digest of
  the id (``_sql.forgotten_id``), so no forgotten id stays in the files.
  ``as_of`` reads each entry's last version at or before it, filtered as
  the candidate query filters the rows (active; of the pools' types or
  always-scope); a replay equals the recall made then unless an entry
  stored then was forgotten since (an entry that did not load still
  weighs in its pool's lexical statistics).
  The semantic ranking refuses ``as_of`` (past contents have no vectors).
- Types, scopes, projects and statuses must be strings (a store filters on
  them); NUL characters, lone surrogates and non-finite numbers are refused
  (PostgreSQL cannot store the first two; JSON cannot hold the last).
"""

from __future__ import annotations

import base64
import builtins
import collections
import contextlib
import copy
import dataclasses
import difflib
import functools
import hashlib
import hmac
import json
import math
import numbers
import os
import shutil
import threading
import uuid
from collections.abc import Callable, Container, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone, tzinfo
from typing import IO, Any, Final, NamedTuple, TypeVar, Union, overload
from urllib.parse import parse_qs, urlsplit, urlunsplit

import poolsplit
from poolsplit import (
    Pool,
    TokenCounter,
    default_is_active,
    default_token_counter,
)

from ._frame import frame, not_loaded, warnings_section
from ._pooled import Owners, Part, Parts, lexical, owners
from ._postgres import PostgresBackend
from ._ranking import (
    RELEVANCE_RATE,
    TIME_FACTOR,
    Relevance,
    Statistics,
    Times,
    read_times,
    terms,
)
from ._semantic import MODEL, Embedder
from ._shared import Handle, own_backend, shared_backend, snapshots
from ._sqlite import SQLiteBackend
from ._stale import near_contents, possible_supersedes, stale_pairs
from ._trust import (
    PROVENANCE,
    QUARANTINE,
    QUARANTINED,
    UPDATED_AT,
    UPDATED_BY,
    WRITTEN_AT,
    WRITTEN_BY,
    Writer,
    default_writer_name,
    is_quarantined,
    split_quarantine,
)
from ._types import (
    DEFAULT_BUSY_MS,
    DEFAULT_POOL_SIZE,
    KEEP_CHANGES,  # noqa: F401 (store.KEEP_CHANGES names it, as before _types)
    Backend,
    Change,
    InvalidInput,
    NotGranted,
    ReadTx,  # noqa: F401 (store.ReadTx names it, as before _types)
    Row,
    Since,
    Stored,
    StoreError,
    StoreUnavailable,
    Version,
    WriteTx,
)
from ._vectors import VECTOR_BYTES, Catchup, Query, Space, hybrid, missing_note
from ._when import time_zone

__all__ = [
    "DEFAULT_MAX_ENTRY_TOKENS",
    "DEFAULT_POOLS",
    "DEFAULT_POOL_SIZE",
    "MAX_BASE_PRIORITY",
    "RANKINGS",
    "REMEMBER_DESCRIPTION",
    "SPILL_OVER",
    "Imported",
    "InvalidInput",
    "Loadable",
    "NotGranted",
    "Page",
    "Recall",
    "Skipped",
    "Store",
    "StoreError",
    "StoreUnavailable",
    "Updated",
    "Writer",
    "Written",
    "build_entry",
    "check_entry",
    "default_pools",
    "loadable",
    "not_loaded",
    "open_store",
    "set_snapshot_budget",
]

# ===========================================================================
# Constants
# ===========================================================================

DEFAULT_POOLS: Final[tuple[Pool, ...]] = (
    Pool("corrections", 400, 4, ("correction",)),
    Pool("tasks", 600, 4, ("task",)),
    Pool("facts", 400, 4, ("fact",)),
    Pool("skills", 300, 2, ("skill",)),
    Pool("growth", 200, 1, ("growth",)),
    Pool("episodes", 300, 2, ("episode",)),
)
# The spill-over pool's name and caps; its types are the namespace's active
# types that DEFAULT_POOLS do not name, computed per recall.
SPILL_OVER: Final = ("other", 400, 3)
DEFAULT_MAX_ENTRY_TOKENS: Final = 2000
# The largest base_priority a write takes without a warning. In the lexical
# ranking a priority ratio R is worth ln(R) / 30 of relevance (README,
# "Ranking"): 1e6 over the default 5 is worth 0.41, so an entry at the
# bound still loses to one that matches the message much better, and every
# scale people use (1-10, percentages, 1-1000) fits below it. Past about
# 5e13 (5 x e**30) no match of the message can outrank the entry: 1e300
# made one fact the first of every vague recall.
MAX_BASE_PRIORITY: Final = 1_000_000
# How a recall ranks (open_store's ``ranking``): "lexical", the default, is
# the core's signals times a BM25+ relevance over the namespace's statistics
# (_ranking.py); "core" is poolsplit.default_scorer alone; "semantic" (the
# semantic extra) fuses the lexical relevance with e5 vectors (_semantic.py).
RANKINGS: Final = ("lexical", "core", "semantic")


def default_pools(types: Iterable[str]) -> list[Pool]:
    """The pools a store without ``pools=`` recalls with, for these types.

    :data:`DEFAULT_POOLS` (one pool per common type), then the spill-over
    pool ``SPILL_OVER`` admitting every other type given (the namespace's
    active types), so every entry has room of its own kind or the spill-over
    pool's. The store and the adapters both build the defaults here.
    """
    named = {kind for pool in DEFAULT_POOLS for kind in pool.types or ()}
    other = tuple(sorted(set(types) - named))
    return [*DEFAULT_POOLS, Pool(*SPILL_OVER, types=other)]


def pool_owners(pools: Sequence[Pool] | None) -> Owners:
    """The pool each type is ranked in (``_pooled.owners``): for ``pools``,
    the first admitting it; for the default pools (None), its pool in
    :data:`DEFAULT_POOLS`, else the spill-over pool."""
    return owners([*DEFAULT_POOLS, Pool(*SPILL_OVER)] if pools is None else pools)


# The remember tool's description, for the MCP server and the LangGraph tool
# alike: what the model reads before it writes a memory.
REMEMBER_DESCRIPTION: Final = """Save a memory that later turns will see.

Use type "correction" with scope "always" for a rule the user gave you that
must apply on every turn; "task" for open work, "fact" for a durable fact,
"skill" for a how-to, "episode" for what happened. Returns the memory's id
and any warnings about it."""

# Longest namespace, id, key and type (they are indexed columns).
_MAX_NAME: Final = 200
_MAX_PAGE: Final = 500
_ALWAYS: Final = "always"
# Snapshots kept per store: one per list of pools recalled with.
_MAX_CACHED: Final = 8
# A snapshot's estimated bytes: a fixed part per entry plus a part per byte
# of its stored JSON (the parsed dict, the ranking's statistics with every
# term's contents by length, and the recall index its second recall builds).
# Fitted to what dropping a snapshot frees after three recalls (tracemalloc;
# benchmarks/snapshot_bytes.py) at 1,000 entries of 103, 203 and 1,003 JSON
# bytes (3.8, 11.3 and 53.6 KB an entry; the estimate gives 6.4, 12.1 and
# 57.7) and of LoCoMo's turns, 222 bytes (12.0 KB; 13.2): at or above every
# row, and up to 2x over at 10,000 entries, whose terms are shared by more
# entries (3.2-36 KB). Under the retained bytes the budget would hold more
# than it says, so the line covers the costliest rows: an estimate, not an
# account.
_SNAPSHOT_BYTES_PER_BODY_BYTE: Final = 57
_SNAPSHOT_BYTES_PER_ENTRY: Final = 500
# Held while a snapshot is built from a whole read (Store._snapshot).
_WHOLE_READS: Final = threading.Lock()


# ===========================================================================
# Results
# ===========================================================================


@dataclass(frozen=True)
class Skipped:
    """A stored row left out of a recall, and why."""

    id: str
    reason: str


@dataclass(frozen=True)
class Written:
    """What ``remember`` stored: the new id, its warnings and the entry;
    ``possible_supersedes``: the active entries that look like an earlier
    version of it (``_stale.py``; one warning names them), never retired."""

    id: str
    warnings: list[str]
    entry: dict[str, Any]
    possible_supersedes: list[str] = dataclasses.field(default_factory=list)


@dataclass(frozen=True)
class Updated:
    """What ``update`` stored: the whole entry after the change, and warnings."""

    entry: dict[str, Any]
    warnings: list[str]


class Imported(int):
    """What ``import_jsonl`` returns: the count of distinct ids written (an
    int, as before), and ``warnings``: the lines not written because an
    active entry already holds the same memory (``line N: idempotent: ...``)."""

    warnings: list[str]

    def __new__(cls, count: int, warnings: Iterable[str] = ()) -> Imported:
        made = super().__new__(cls, count)
        made.warnings = list(warnings)
        return made


@dataclass(frozen=True)
class Page:
    """One page of ``list``; ``next_cursor`` is None after the last page."""

    entries: list[dict[str, Any]]
    next_cursor: str | None


@dataclass(frozen=True)
class Recall:
    """A recall: the text to inject, the entries per pool, what was left out.

    ``caller`` is the reader's writer name: :meth:`chat_text` names the
    writer of every entry but the caller's own (None: every writer).
    """

    text: str
    pools: dict[str, list[dict[str, Any]]]
    skipped: list[Skipped]
    warnings: list[str]
    # The always-scope rows of ``skipped`` (and those no pool admits), and
    # how many active entries the recall chose from.
    always_skipped: list[Skipped] = dataclasses.field(default_factory=list)
    loaded: int = 0
    caller: str | None = None

    @property
    def _chosen(self) -> Mapping[str, Sequence[Mapping[str, Any]]]:
        """The entries per pool that :meth:`ids` and :meth:`chat_text`
        read: ``pools`` here; in a store's recall, the entries as recalled
        (``pools`` are their copies, made only when read, and a caller's edit
        of them changes neither method)."""
        return self.pools

    def ids(self) -> dict[str, list[str]]:
        """The ids per pool, in pool order."""
        return {
            name: [str(entry.get("id")) for entry in entries]
            for name, entries in self._chosen.items()
        }

    def chat_text(self) -> str:
        """The recall as a chat client shows it to the model: the entries in
        the frame of ``_frame`` (stored data, not instructions), each with
        its id in brackets (``- [id] DATE: content``, so the model can update
        or forget it), the always-scope rows that could not be loaded, every
        warning and every skipped row; a plain sentence when nothing was
        recalled (never "")."""
        text = frame(self._chosen, caller=self.caller, ids=True)
        if not text:
            text = (
                "Nothing is stored in this memory yet.\n"
                if not self.loaded and not self.skipped
                else "No stored memory was selected for this message.\n"
            )
        text += not_loaded(self.always_skipped)
        return text + warnings_section(self.warnings, self.skipped, self.always_skipped)

    def to_dict(self) -> dict[str, Any]:
        """``{"pools": {name: [ids]}, "skipped": [...], "warnings": [...]}``."""
        return {
            "pools": self.ids(),
            "skipped": [{"id": s.id, "reason": s.reason} for s in self.skipped],
            "warnings": list(self.warnings),
        }


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


def _created(now: datetime | None) -> str:
    if now is None:
        now = datetime.now(timezone.utc)
    elif not isinstance(now, datetime):
        raise InvalidInput(
            "now", f"must be a datetime or None, got {type(now).__name__}"
        )
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
    tag_list = _tag_list(tags)
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
        _type_warning(str(entry.get("type", "note")), pools),
    ):
        if warning is not None:
            warnings.append(warning)
    return warnings


# ===========================================================================
# Rows: how an entry becomes columns, and how a stored body is read back
# ===========================================================================


def _dumps(entry: Mapping[str, Any]) -> str:
    return json.dumps(entry, ensure_ascii=False, allow_nan=False, separators=(",", ":"))


def _columns(entry: Mapping[str, Any]) -> tuple[str, str, str | None]:
    """The type, status and scope columns a write puts beside a body (the
    candidate query filters on them; ``as_of`` reads them from the body)."""
    return (
        str(poolsplit.entry_type(entry)),
        "active" if default_is_active(entry) else "inactive",
        entry.get("scope") if isinstance(entry.get("scope"), str) else None,
    )


def _row(entry: Mapping[str, Any]) -> Row:
    """The indexed columns beside the JSON body (the body is the entry)."""
    retired = entry.get("superseded_by")
    kind, status, scope = _columns(entry)
    return Row(
        id=str(entry["id"]),
        type=kind,
        status=status,
        scope=scope,
        superseded_by=retired if isinstance(retired, str) and retired else None,
        body=_dumps(entry),
        memory_hash=_memory_digest(_memory(entry)),
        written_by=_text_or_none(entry.get(WRITTEN_BY)),
    )


def _text_or_none(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _parse(stored: Stored) -> dict[str, Any] | str:
    """The stored entry, or the reason it cannot be read as one.

    The row's id is the entry's id: a body (written by hand) whose ``id`` is
    missing or differs is read with the row's, the one get, update and
    forget take and recall reports."""
    try:
        value = _loads(stored.body)
    except ValueError as exc:
        return f"invalid JSON: {exc}"
    if not isinstance(value, dict):
        return f"must be a JSON object, got {_json_kind(value)}"
    if value.get("id") != stored.id:
        value["id"] = stored.id
    return value


_raw_decode: Final = json.JSONDecoder().raw_decode


def _loads(body: str) -> Any:
    """``json.loads(body)``: the same value, or the same error.

    A body that is one JSON value from its first character to its last
    (every body the store writes) is decoded by ``raw_decode`` (json.loads'
    own decoder, without its whitespace and BOM checks around it: half its
    cost, 10 ms of a 10,000-row load); any other body by ``json.loads``.
    """
    if type(body) is str:
        try:
            value, end = _raw_decode(body)
        except ValueError:
            pass
        else:
            if end == len(body):
                return value
    return json.loads(body)


def _json_kind(value: object) -> str:
    names = {list: "array", str: "string", bool: "boolean", type(None): "null"}
    return names.get(type(value), "number")


def _readable(stored: Stored) -> dict[str, Any]:
    """What get/list show: the entry, or a marker naming why it is unreadable."""
    value = _parse(stored)
    return value if isinstance(value, dict) else {"id": stored.id, "unreadable": value}


# ===========================================================================
# The store
# ===========================================================================


Source = Union[str, "os.PathLike[str]", IO[str]]
T = TypeVar("T")


class _Snapshot:
    """The loaded candidates of one namespace at one change-log position,
    brought forward by the rows changed since (never re-read whole).

    It holds what :func:`loadable` finds in the candidate rows, and keeps
    it equal to ``loadable`` over the rows as they are now: :meth:`apply`
    takes the changed rows' seqs and their current candidate rows (a seq
    without one was deleted or is no candidate any more), forgets what it
    knew of those seqs and loads the rows by ``loadable``. Entries enter and
    leave in one place each (:meth:`_enter`, :meth:`_leave`), which also
    keeps ``parts`` up to date: the entries split by the pool that owns
    their type, each with its ranking's statistics and, from its second
    recall, its recall index (``_pooled.Part``). The always-scope state
    (the budget warning, the always-scope rows not loaded) depends on all
    always-scope rows together, so it is recomputed from them, few by that
    rule's own cap, whenever one of them changes. Not thread-safe: the store changes and
    reads it under its lock.
    """

    def __init__(self, pools: Sequence[Pool] | None, *, ranking: str) -> None:
        self._pools = pools
        self.signal: object = None  # the backend's version when last checked
        self.position = 0  # the change log's position applied
        # The entries split by the pool that owns their type, each part
        # with its own statistics and recall index (_pooled.py).
        self.parts = Parts(pool_owners(pools), ranking)
        # The semantic ranking's: the entries' vectors, kept entry by entry
        # (_vectors.py), so that a change reads and hashes only its own.
        self.space = Space() if ranking == "semantic" else None
        self._types: collections.Counter[str] = collections.Counter()
        # seq -> (order key, Skipped): loadable lists the unreadable rows
        # first, then those validate refuses, each in seq order.
        self._skipped: dict[int, tuple[tuple[int, int], Skipped]] = {}
        self._always: dict[int, tuple[Stored, object]] = {}  # always-scope rows
        self.warnings: builtins.list[str] = []
        self.always_skipped: builtins.list[Skipped] = []

    @property
    def entries(self) -> builtins.list[dict[str, Any]]:
        """The valid, active entries some pool admits, in seq order."""
        return self.parts.entries()

    def __len__(self) -> int:
        return len(self.parts)

    @property
    def types(self) -> frozenset[str]:
        """The types of the entries (what the spill-over pool admits)."""
        return frozenset(self._types)

    @property
    def skipped(self) -> builtins.list[Skipped]:
        return [item for _, item in sorted(self._skipped.values())]

    def apply(self, changed: Iterable[int], rows: Sequence[Stored]) -> None:
        """Bring the snapshot to the current state of the rows ``changed``
        (by ``seq``; the rows given count as changed too), whose current
        candidate rows are ``rows`` (a seq without one was deleted or is no
        candidate any more)."""
        touched = set(changed) | {row.seq for row in rows}
        always_changed = not touched.isdisjoint(self._always)
        for seq in touched:
            if self.parts.has(seq):
                self._leave(seq)
            self._skipped.pop(seq, None)
            self._always.pop(seq, None)
        values = [_readable(row) for row in rows]
        found = loadable(
            values,
            pools=self._pools,
            ids=[row.id for row in rows],
            scopes=[row.scope for row in rows],
        )
        seqs = {row.id: row.seq for row in rows}
        self._enter([seqs[entry["id"]] for entry in found.entries], found.entries)
        unreadable = {  # (only a skipped row can be one: most loads have none)
            row.id
            for row, value in zip(rows, values if found.skipped else ())
            if _unreadable(value) is not None
        }
        for item in found.skipped:
            late = 0 if item.id in unreadable else 1
            self._skipped[seqs[item.id]] = ((late, seqs[item.id]), item)
        for row, value in zip(rows, values):
            if _ALWAYS in (row.scope, value.get("scope")):
                self._always[row.seq] = (row, value)
                always_changed = True
        if always_changed:
            self._load_always()

    def _load_always(self) -> None:
        """The warnings and the always-scope rows not loaded: ``loadable``
        over every always-scope row, in seq order (what it says of them
        does not depend on the other rows)."""
        rows = sorted(self._always.values(), key=lambda item: item[0].seq)
        found = loadable(
            [value for _, value in rows],
            pools=self._pools,
            ids=[row.id for row, _ in rows],
            scopes=[row.scope for row, _ in rows],
        )
        self.warnings = found.warnings
        self.always_skipped = found.always_skipped

    def _enter(self, seqs: Sequence[int], entries: Sequence[dict[str, Any]]) -> None:
        """The one place entries enter the snapshot (the entries, by seq).

        In batches, with no (seq, entry) pair kept per entry: a 10,000-row
        load allocates few objects the garbage collector tracks besides
        those it keeps, and each 700 of them costs a collection."""
        self.parts.enter(zip(seqs, entries))
        # (a quarantined entry's type is no type of the pools': it loads in
        # the quarantine pool, and must not open a spill-over pool)
        self._types.update(
            entry.get("type", "note") for entry in entries if not is_quarantined(entry)
        )
        if self.space is not None:
            self.space.enter(entries)

    def _leave(self, seq: int) -> None:
        """The one place an entry leaves the snapshot."""
        entry = self.parts.leave(seq)
        if self.space is not None:
            self.space.leave(entry)
        if is_quarantined(entry):
            return
        kind = entry.get("type", "note")
        self._types[kind] -= 1
        if not self._types[kind]:
            del self._types[kind]


def _copied(value: Any) -> Any:
    """A copy of a JSON value (a stored entry is one): new dicts and lists, so
    a caller's edit never reaches the cached snapshot; three times cheaper
    than ``copy.deepcopy``, which a recall paid per entry it returned."""
    if isinstance(value, dict):
        return {key: _copied(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_copied(item) for item in value]
    return value


def _explain_filters(
    ids: Iterable[str] | None,
    types: Iterable[str] | None,
    outcomes: Iterable[str] | None,
    summary: object,
) -> dict[str, builtins.list[str] | None]:
    """``explain``'s filters checked (InvalidInput naming the bad one); an
    outcome is read in any case, as the names cannot be confused."""
    filters = {
        "ids": _filter("ids", ids),
        "types": _filter("types", types),
        "outcomes": _filter("outcomes", outcomes),
    }
    if filters["outcomes"] is not None:  # any case: "Selected" is selected
        known = {o.casefold(): o for o in poolsplit.OUTCOMES}
        filters["outcomes"] = [
            known.get(o.strip().casefold(), o) for o in filters["outcomes"]
        ]
    unknown = [o for o in filters["outcomes"] or () if o not in poolsplit.OUTCOMES]
    if unknown:
        raise InvalidInput(
            "outcomes",
            f"must be among {', '.join(poolsplit.OUTCOMES)}, got {unknown[0]!r}",
        )
    if type(summary) is not bool:
        raise InvalidInput("summary", f"must be a bool, got {summary!r}")
    return filters


def _filter(field: str, values: Iterable[str] | None) -> builtins.list[str] | None:
    """An explain filter: None, or a list of str (not a bare str)."""
    if values is None:
        return None
    if isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
        raise InvalidInput(
            field, f"must be a list of str or None, got {type(values).__name__}"
        )
    chosen = list(values)
    for value in chosen:
        if not isinstance(value, str):
            raise InvalidInput(
                field, f"must contain only str, got {type(value).__name__} {value!r}"
            )
    return chosen


class _Recalled(Recall):
    """The :class:`Recall` of a store's recall: ``text`` (the frame of
    ``_frame`` and the not-loaded block) and ``pools`` (copies of the chosen
    entries, so that a caller's edit never reaches the snapshot) are made on
    first read, and :meth:`ids` and :meth:`chat_text` read the chosen entries
    themselves. The MCP server's recall reads only those two: the copies
    and the plain render were a tenth of its warm recall at 10,000 entries.

    Reading later gives what reading at once would: the snapshot never
    changes an entry it holds (a changed row enters as a new dict, and the
    ranking and the core are pure), so the chosen entries are the values of
    the moment of the recall.
    """

    _got: Mapping[str, Sequence[dict[str, Any]]]

    def __init__(
        self,
        chosen: Mapping[str, Sequence[dict[str, Any]]],
        snap: _Snapshot,
        caller: str | None = None,
    ) -> None:
        # Recall is frozen: its fields are set as its own __init__ does.
        fields = {
            "_got": chosen,
            "caller": caller,
            "skipped": list(snap.skipped),
            "warnings": list(snap.warnings),
            "always_skipped": list(snap.always_skipped),
            # len(snap.entries) would sort the keys again after every write
            # (0.8 ms at 10,000 entries, 13 ms at 100,000).
            "loaded": len(snap),
        }
        for name, value in fields.items():
            object.__setattr__(self, name, value)

    @property
    def _chosen(self) -> Mapping[str, Sequence[dict[str, Any]]]:
        return self._got

    # Fields of Recall, computed once on first read (cached_property writes
    # the instance's __dict__, which the frozen __setattr__ does not guard).
    @functools.cached_property
    def text(self) -> str:
        text = frame(self._chosen, caller=self.caller)
        return text + not_loaded(self.always_skipped)

    @functools.cached_property
    def pools(self) -> dict[str, builtins.list[dict[str, Any]]]:
        return {
            name: [_copied(entry) for entry in entries]
            for name, entries in self._chosen.items()
        }


def _recalled(
    got: Mapping[str, Sequence[dict[str, Any]]],
    snap: _Snapshot,
    caller: str | None = None,
) -> Recall:
    """The :class:`Recall` of a selection from ``snap``, read under the
    store's lock: what was skipped, the warnings, and the chosen entries
    (whose copies and text are made when first read); ``caller``, the
    reader's writer name, is not named in the text."""
    return _Recalled(got, snap, caller)


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


_RELEVANCE_ROWS: Final = 20


def _unmatched_note(relevance: Relevance) -> str:
    """What explain says of a pool the message matches nowhere."""
    if relevance.unmatched == 0.0:
        return ""
    if relevance.windows:  # a time alone, or no term held: the window orders
        return f" (no match: x1, x{TIME_FACTOR:g} in the message's time)"
    return " (no match: all x1)"


def _provenance_lines(
    reports: Sequence[tuple[poolsplit.Explanation, Sequence[dict[str, Any]]]],
    summary: bool,
) -> str:
    """Who wrote the entries explain reports on (``written_by``, as the
    store stamped it): a count per writer, and with rows (not ``summary``)
    each reported entry's writer and last change, at most 20."""
    counts: collections.Counter[str] = collections.Counter()
    rows = []
    for report, entries in reports:
        for entry in entries:
            who = entry.get(WRITTEN_BY)
            name = who if isinstance(who, str) else "(not recorded)"
            counts[name + (" (quarantined)" if is_quarantined(entry) else "")] += 1
        for decision in () if summary else report.decisions:
            entry = entries[decision.index]
            by, at = entry.get(WRITTEN_BY), entry.get(WRITTEN_AT)
            line = f"- {decision.id}: written by {by} at {at}"
            if entry.get(UPDATED_BY) is not None:
                line += (
                    f", changed by {entry.get(UPDATED_BY)} at {entry.get(UPDATED_AT)}"
                )
            rows.append(line)
    if not counts:
        return ""
    text = "writers: " + ", ".join(f"{name} {n}" for name, n in counts.most_common())
    shown = rows[:_RELEVANCE_ROWS]
    if len(rows) > len(shown):
        shown.append(f"- and {len(rows) - len(shown)} more")
    return "\n".join([text, *shown]) + "\n"


_QUARANTINE_HEAD: Final = (
    f"\n{QUARANTINE}: the entries of writers nobody vouched for, whatever "
    "their type, in a pool of their own\n"
)


def _explained_parts(
    snap: _Snapshot, pools: Sequence[Pool]
) -> builtins.list[tuple[builtins.list[Pool], builtins.list[dict[str, Any]]]]:
    """What explain reports on, as recall fills it: the pools that take
    entries by type over every entry but the quarantined, then (when the
    snapshot holds any) the quarantine pool over the quarantined alone."""
    typed = [pool for pool in pools if pool.name != QUARANTINE]
    parts = [(typed, snap.parts.routed())]
    for pool in pools:
        if pool.name == QUARANTINE:
            whole = dataclasses.replace(pool, types=None)
            parts.append(([whole], snap.parts.part_entries(QUARANTINE)))
    return parts


def _relevance_lines(
    relevances: Mapping[str | None, Relevance],
    snap: _Snapshot,
    reports: Sequence[tuple[poolsplit.Explanation, Sequence[dict[str, Any]]]],
) -> str:
    """Each pool's best ``r`` (semantic: ``w``), then the relevance factor of
    the entries explain reports that have one above 0 (every other entry's
    is its pool's ``unmatched``), best first, at most 20."""
    rows = []
    owner = snap.parts.owner
    for report, entries in reports:
        for decision in report.decisions:
            entry = entries[decision.index]
            relevance = relevances[owner(entry)]
            if relevance.share(entry) > 0.0:
                factor = relevance.factor(entry)
                shared = relevance.weights.keys() & terms(_content_text(entry))
                rows.append((-factor, str(decision.id), ", ".join(sorted(shared))))
    rows.sort()
    first = next(iter(relevances.values()))
    s, floor = first.symbol, first.floor  # r, or the semantic ranking's w
    order = [
        pool.name
        for report, _ in reports
        for pool in report.pools
        if pool.name in relevances
    ]
    bests = ", ".join(
        f"{name} {relevances[name].best:.3f}" + _unmatched_note(relevances[name])
        for name in order
    )
    lines = [
        f"\nrelevance, score = base x g({s}): exp({RELEVANCE_RATE:g} x {s}), 0 "
        f"below {floor:g} x the best {s} of the entry's pool (each pool its "
        f"own; the best {s}: {bests}); {len(rows)} entries with {s} > 0 (the "
        "others: x0, or x1 in a pool the message matches nowhere), with "
        "their shared terms"
    ]
    if any(relevance.windows for relevance in relevances.values()):
        lines.append(
            f"an entry created in the time the message names: x{TIME_FACTOR:g} "
            "more, and never below the floor"
        )
    lines += [
        f"- {ident}: x{-f:.4g} ({shared or 'no shared term'})"
        for f, ident, shared in rows[:_RELEVANCE_ROWS]
    ]
    if len(rows) > _RELEVANCE_ROWS:
        lines.append(f"- and {len(rows) - _RELEVANCE_ROWS} more")
    return "\n".join(lines) + "\n"


def _same_request(stored: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    fields = ("content", "type", "scope", "tags", "project", "base_priority")
    return all(stored.get(f) == new.get(f) for f in fields)


def _memory(entry: Mapping[str, Any]) -> tuple[str, object, str]:
    """What makes two entries the same memory: type, scope and content with
    its whitespace normalised (the one normalisation rule)."""
    content = " ".join(_content_text(entry).split())
    return (str(poolsplit.entry_type(entry)), entry.get("scope"), content)


def _memory_key(entry: Mapping[str, Any]) -> tuple[str, object, str] | None:
    """The entry's :func:`_memory`, or None for an entry that is not active
    (a retired or inactive entry never loads, so a copy of it is no copy)."""
    if not default_is_active(entry) or entry.get("superseded_by"):
        return None
    return _memory(entry)


def _memory_digest(memory: tuple[str, object, str]) -> str:
    """The digest of a :func:`_memory`, stored in the indexed ``memory_hash``
    column of every row the store writes, so the identical-memory check
    reads only the rows of the same digest (a LIKE over the bodies cost 72
    ms a remember at 100,000 entries). Equal memories have equal digests;
    the check still compares the memories themselves, so a collision can
    never merge two different ones."""
    text = json.dumps(memory, ensure_ascii=False, sort_keys=True)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]


# The digest of a row whose body is not an entry (it is no memory; an edit
# of the body clears it, and the next check reads the row again).
_NO_MEMORY: Final = "-"


def _twins(
    tx: WriteTx, kinds: Sequence[str], digests: Sequence[str]
) -> builtins.list[Stored]:
    """The active rows of ``kinds`` that may be one of the memories of
    ``digests``, in ``seq`` order: those with one of the digests (an index
    probe each) and those without a digest (written by hand, by another
    tool, by 0.1.0, or edited since), which get theirs here, in the write's
    own transaction, so each is read this way once."""
    rows, loose = tx.memories(kinds, digests)
    if loose:
        tx.set_digests([(row, _stored_digest(row)) for row in loose])
    return sorted([*rows, *loose], key=lambda row: row.seq)


def _stored_digest(stored: Stored) -> str:
    value = _parse(stored)
    return _memory_digest(_memory(value)) if isinstance(value, dict) else _NO_MEMORY


def _delete_chains(
    tx: WriteTx,
    idents: Sequence[str],
    change: Change,
    may: Callable[[Stored | None, Mapping[str, Any], str], None] | None = None,
) -> int:
    """Delete these entries and those whose ``superseded_by`` chain ends at
    one of them; return how many were deleted. Each leaves a tombstone of
    ``change`` in the history, and no content there. ``may`` (the writer's
    :meth:`Store._may_change`) is asked of every entry the chains reach
    before anything is deleted: a writer may not delete through a chain
    what it may not forget by its id."""
    reached: builtins.list[str] = []
    seen = set(idents)
    frontier = builtins.list(idents)
    while frontier:
        frontier = [i for i in tx.superseding(frontier) if i not in seen]
        seen.update(frontier)
        reached.extend(frontier)
    if may is not None:
        for ident in reached:
            may(*_stored_entry(tx, ident), ident)
    return len(tx.delete(idents, change)) + len(tx.delete(reached, change))


def _stored_entry(tx: WriteTx, ident: str) -> tuple[Stored | None, dict[str, Any]]:
    """The row of ``ident`` (None if none) and its entry ({} when there is
    none or its body is unreadable): what a grant check reads."""
    found = tx.get(ident)
    value = None if found is None else _parse(found)
    return found, value if isinstance(value, dict) else {}


def _duplicate(
    tx: WriteTx,
    entry: Mapping[str, Any],
    ignore: Iterable[str] = (),
    *,
    vouched: bool = True,
) -> dict[str, Any] | None:
    """The active stored entry that is the same memory as ``entry`` (see
    :func:`_memory_key`), read in the write's own transaction; None if none.
    For a ``vouched`` writer a quarantined entry is no twin: what it
    remembers must load in its own pool, not stay in quarantine.

    Reads only the rows :func:`_twins` names (none but the twin, unless
    rows were written without a digest)."""
    key = _memory_key(entry)
    if key is None:
        return None
    skip = set(ignore)
    for stored in _twins(tx, [key[0]], [_memory_digest(key)]):
        if stored.id in skip:
            continue
        value = _parse(stored)
        if isinstance(value, dict) and _memory_key(value) == key:
            if vouched and is_quarantined(value):
                continue
            return value
    return None


def _stored_memories(
    tx: WriteTx,
    keys: Iterable[tuple[str, object, str] | None],
    ignore: Container[str],
    *,
    vouched: bool = True,
) -> dict[tuple[str, object, str], str]:
    """The active stored entries (not ``ignore``d) that are one of these
    memories, by memory key, for a whole import (see :func:`_twins`; a
    ``vouched`` writer's lines have no quarantined twin)."""
    memories = {key for key in keys if key is not None}
    kinds = sorted({key[0] for key in memories})
    digests = sorted({_memory_digest(key) for key in memories})
    stored: dict[tuple[str, object, str], str] = {}
    for row in _twins(tx, kinds, digests) if kinds else ():
        value = _parse(row)
        key = _memory_key(value) if isinstance(value, dict) else None
        # a hand-written row's scope may be a list: never one of the keys
        usable = key is not None and _hashable(key[1]) and row.id not in ignore
        if usable and vouched and isinstance(value, dict) and is_quarantined(value):
            usable = False
        if usable and key in memories:
            stored.setdefault(key, row.id)
    return stored


def _hashable(value: object) -> bool:
    return not isinstance(value, (dict, builtins.list))


def _possible_supersedes(snap: _Snapshot, entry: Mapping[str, Any]) -> list[str]:
    """The ids of the active entries of ``snap`` the rule pairs with
    ``entry`` (``_stale.paired``, with the statistics of its pool): only
    the entries of the contents ``_stale.near_contents`` finds through the
    postings of the entry's rarest terms are compared, which finds what
    comparing every entry of its pool would."""
    part = snap.parts.parts.get(snap.parts.owner(entry))
    if part is None:
        return []
    stats = part.stats
    found = stats.terms_of(_content_text(entry))
    contents = near_contents(found, stats.idf, stats.holders)
    return possible_supersedes(
        entry, part.holding(contents), stats.idf, terms_of=stats.terms_of
    )


def _supersedes_warning(found: Sequence[str]) -> str:
    """The warning of a remember whose memory may replace ``found``."""
    named = ", ".join(repr(ident) for ident in found)
    one = repr(found[0])
    return (
        f"possible_supersedes: {named} look{'s' if len(found) == 1 else ''} like "
        "an earlier version of this memory (same subject, another claim); "
        "nothing was retired. If this memory replaces one, call remember "
        f"again with the same content and supersedes={one} (its id), which "
        "writes nothing new and retires it; next time pass supersedes or "
        "update the old entry"
    )


def _stale_warnings(
    got: Mapping[str, Sequence[Mapping[str, Any]]], snap: _Snapshot
) -> list[str]:
    """A warning per pair of loaded entries the rule pairs (``_stale.py``),
    naming the older and the newer by ``created``. Compares only the few
    loaded entries, by the statistics of their pool."""
    loaded = [entry for entries in got.values() for entry in entries]
    if len(loaded) < 2:
        return []
    parts = snap.parts

    def stats_of(entry: Mapping[str, Any]) -> Statistics:
        part = parts.parts.get(parts.owner(entry))
        return Statistics() if part is None else part.stats

    found = stale_pairs(
        loaded,
        lambda entry: stats_of(entry).idf,
        terms_of=lambda entry: stats_of(entry).terms_of,
    )
    return [
        f"possible_supersedes: {str(old.get('id'))!r} (older) and "
        f"{str(new.get('id'))!r} (newer) look like two versions of one memory "
        "(same subject, another claim); if the newer holds, retire the older "
        f"(forget {str(old.get('id'))!r}), and ask the user when unsure"
        for old, new in found
    ]


def _idempotent(ident: str) -> str:
    """The warning of a write that found its memory already stored."""
    return (
        f"idempotent: an active entry with the same content, type and scope is "
        f"stored as {ident!r}; nothing new was written"
    )


def _candidate_types(pools: Sequence[Pool] | None) -> builtins.list[str] | None:
    """The types whose rows a snapshot for ``pools`` loads (always-scope
    rows of any type too); None: every type (a pool admits any)."""
    if pools is not None and all(p.types is not None for p in pools):
        return sorted({t for p in pools for t in p.types or ()})
    return None


def _most_changes(snap: _Snapshot) -> int:
    """The most changed rows a snapshot is brought forward by: past that,
    reading the namespace whole is no dearer."""
    return len(snap) + 100


class Store:
    """A namespace of one database: remember, recall, get, list, update,
    forget, explain, import_jsonl, export_jsonl. Safe to share between
    threads. Build it with :func:`open_store`."""

    def __init__(
        self,
        backend: Backend,
        *,
        namespace: str,
        pools: Sequence[Pool] | None,
        token_counter: TokenCounter,
        max_entry_tokens: int,
        ranking: str = "lexical",
        writer: Writer | None = None,
    ) -> None:
        self._backend = backend
        self.ranking = ranking
        self._embedder = Embedder.shared() if ranking == "semantic" else None
        self.namespace = namespace
        # The pools that take entries by type, and the quarantine pool
        # (issue 51: a pool named "quarantine" among ``pools`` sizes it).
        self.pools: tuple[Pool, ...] | None
        self.pools, self.quarantine_pool = split_quarantine(pools)
        # Who this store acts for: the name it stamps on what it writes,
        # and its grants (acting_as gives a store another writer).
        self.writer = Writer(default_writer_name()) if writer is None else writer
        # The store's clock: provenance stamps and the history's times (a
        # test sets it to replay a history at times of its choosing).
        self._clock: Callable[[], datetime] = _utc_now
        self._token_counter = token_counter
        self._max_entry_tokens = max_entry_tokens
        # The snapshots live in the process's budget (_shared.snapshots),
        # keyed by (this store's owner key, pools); their bytes per entry
        # are estimated when a snapshot is read whole.
        self._owner = snapshots.owner()
        self._entry_bytes: dict[tuple[Pool, ...] | None, int] = {}
        self._cache_lock = threading.Lock()
        self._cursor_key: bytes | None = None  # the database's: see _cursor_secret
        # The semantic ranking's catch-up: embeds what has no vector yet,
        # in a thread of its own, batched (_vectors.py).
        self._catchup = (
            None
            if self._embedder is None
            else Catchup(
                self._embedder,
                self._cache_lock,
                self._space,
                self._read_vectors,
                self._write_vectors,
            )
        )

    @property
    def token_counter(self) -> TokenCounter:
        """The counter of ``max_entry_tokens`` and of the pools' budgets."""
        return self._token_counter

    @property
    def max_entry_tokens(self) -> int:
        """The most tokens one entry's content may have."""
        return self._max_entry_tokens

    @property
    def url(self) -> str:
        """The database URL, any password masked."""
        return self._backend.url

    @property
    def scrub_pending(self) -> bool:
        """True while content that ``forget`` deleted, or ``update`` or
        ``supersedes`` overwrote in the entries table, may still be in
        SQLite's ``-wal`` file (what they overwrote stays in the history
        until a ``forget``).

        After such a write the store truncates the WAL at once, waiting at
        most a second (the busy timeout if shorter) for other connections'
        reads. A read transaction another connection keeps open holds the
        WAL back; then this is True and every later call of this store, and
        ``close``, tries again without waiting, until one succeeds. Always
        False on PostgreSQL (see ``forget``).
        """
        return self._backend.scrub_pending

    def __repr__(self) -> str:
        return f"<Store {self.url!r} namespace={self.namespace!r}>"

    def acting_as(self, writer: Writer | str) -> Store:
        """This store acting for ``writer``: what it writes is stamped with
        the writer's name, and the writer's grants decide what it may write
        (a name alone is a writer holding ``pin``, not quarantined: a
        person's own memory). It shares the database, the snapshots and
        the lock with this store (closing either closes both); the HTTP
        server gives each request its token's writer this way.

        Raises:
            InvalidInput: ``writer`` is not a Writer or a non-blank str.
        """
        if isinstance(writer, str):
            writer = Writer(writer)
        if not isinstance(writer, Writer):
            raise InvalidInput(
                "writer", f"must be a Writer or a str, got {type(writer).__name__}"
            )
        view = copy.copy(self)
        view.writer = writer
        return view

    # --- grants and provenance (issue 51; _trust.py) -------------------------

    def _need_pin(self, field: str, what: str, *, id: str | None = None) -> None:
        """Refuse ``what`` unless this store's writer holds ``pin``."""
        if not self.writer.pin:
            raise NotGranted(
                field,
                f"{what} needs the 'pin' grant, which writer "
                f"{self.writer.name!r} does not hold; nothing was written",
                grant="pin",
                id=id,
            )

    def _need_vouched(self, entry: Mapping[str, Any], ident: str) -> None:
        """A quarantined writer changes only quarantined entries."""
        if self.writer.quarantine and not is_quarantined(entry):
            raise NotGranted(
                "id",
                f"writer {self.writer.name!r} is quarantined: it may change only "
                f"entries written in quarantine, and {ident!r} is not; nothing "
                "was written",
                grant="vouched",
                id=ident,
            )

    def _may_forget(
        self, found: Stored | None, entry: Mapping[str, Any], ident: str
    ) -> None:
        """:meth:`_may_change` of an entry a ``forget`` reaches by a chain of
        ``superseded_by`` (nothing to ask of a writer holding every grant)."""
        if not self.writer.pin or self.writer.quarantine:
            self._may_change(found, entry, ident, "forgetting (a retired version)")

    def _may_change(
        self, found: Stored | None, entry: Mapping[str, Any], ident: str, doing: str
    ) -> None:
        """The one rule of who may change (update, retire, forget, replace)
        a stored entry: an always-scope one (by its row's scope column or its
        body) needs ``pin``; a quarantined writer changes only quarantined
        entries. ``doing`` names the change ("changing", "forgetting")."""
        scopes = (None if found is None else found.scope, entry.get("scope"))
        if _ALWAYS in scopes:
            self._need_pin("id", f"{doing} always-scope entry {ident!r}", id=ident)
        self._need_vouched(entry, ident)

    def _writers_key(self, key: str) -> str:
        """A ``remember`` key as stored: in this writer's own key space, so
        that no writer can claim another's key first (and have the other's
        retry answered with its own entry, or refused). Length-prefixed:
        no two (writer, key) pairs store the same text. A key stored by 0.2
        (no writer) is never matched again; a retry of its memory is still
        found by its content (``idempotent``)."""
        name = self.writer.name
        return f"{len(name)}:{name}:{key}"

    def _stamp_new(self, entry: dict[str, Any]) -> dict[str, Any]:
        """Stamp a new entry as this writer's, now (any provenance it
        carried is dropped: only the store writes it)."""
        for field in PROVENANCE:
            entry.pop(field, None)
        entry[WRITTEN_BY] = self.writer.name
        entry[WRITTEN_AT] = _created(self._clock())
        if self.writer.quarantine:
            entry[QUARANTINED] = True
        return entry

    def _stamp_change(
        self, entry: dict[str, Any], *, retired: bool = False
    ) -> str | None:
        """Stamp a change of ``entry`` by this writer, now. A change of its
        fields (not a retirement) by a quarantined writer puts it in
        quarantine; by a writer holding ``pin`` takes it out ("promoted":
        vouching is the act of those who set the rules, so an agent tricked
        by a quarantined entry into editing it does not vouch for it); by
        any other writer leaves a quarantined entry there ("kept")."""
        entry[UPDATED_BY] = self.writer.name
        entry[UPDATED_AT] = _created(self._clock())
        if retired:
            return None
        if self.writer.quarantine:
            entry[QUARANTINED] = True
            return None
        if not is_quarantined(entry):
            return None
        if self.writer.pin:
            del entry[QUARANTINED]
            return "promoted"
        return "kept"

    def _change(self, operation: str) -> Change:
        """What a write of ``operation`` records in the history: this
        writer, the store's clock now (read in the write's transaction)."""
        return Change(operation, self.writer.name, _moment(self._clock(), "now"))

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Let go of the database (its connections close with the last
        store of the process on it) and of the snapshots; later calls raise
        StoreUnavailable."""
        if self._catchup is not None:  # its step in progress ends first
            self._catchup.close()
        self._backend.close()
        snapshots.drop_owner(self._owner)

    # --- writes ------------------------------------------------------------

    def _check(self, entry: Mapping[str, Any]) -> list[str]:
        return check_entry(
            entry,
            pools=self.pools,
            token_counter=self._token_counter,
            max_entry_tokens=self._max_entry_tokens,
        )

    def remember(
        self,
        content: str,
        *,
        type: str = "note",
        scope: str | None = None,
        tags: Iterable[str] = (),
        project: str | None = None,
        base_priority: float | None = None,
        supersedes: str | None = None,
        key: str | None = None,
        now: datetime | None = None,
    ) -> Written:
        """Store a new entry (one transaction); return its id and warnings.

        ``supersedes=ID`` retires the active entry ID of this namespace in
        the same transaction (``superseded_by`` set to the new id). ``key``
        makes a retried call idempotent (see the module docstring).

        Raises:
            InvalidInput: a bad argument (named), ``supersedes`` not an
                active entry here, or ``key`` already used for other fields.
            StoreUnavailable: the database failed (nothing was written).
        """
        entry = build_entry(
            content,
            type=type,
            scope=scope,
            tags=tags,
            project=project,
            base_priority=base_priority,
            now=now,
        )
        self._stamp_new(entry)
        warnings = self._check(entry)
        if supersedes is not None:
            _require_name("supersedes", supersedes)
        if key is not None:
            _require_name("key", key)
        if entry.get("scope") == _ALWAYS:
            self._need_pin("scope", "an always-scope entry (it loads on every recall)")

        def work(tx: WriteTx) -> Written:
            if key is not None:
                first = tx.by_key(self._writers_key(key))
                if first is not None:
                    return self._replay(first, entry, key)
            same = _duplicate(tx, entry, vouched=not self.writer.quarantine)
            if same is not None:
                return self._existing(tx, same, supersedes, warnings)
            if tx.get(entry["id"]) is not None:
                raise InvalidInput("id", f"{entry['id']!r} is already stored")
            if supersedes is not None:
                retired = self._retire(tx, supersedes, entry["id"])
                tx.replace(_row(retired), self._change("supersede"))
            tx.insert(
                _row(entry),
                None if key is None else self._writers_key(key),
                self._change("remember"),
            )
            if entry.get("scope") == _ALWAYS:
                warnings.extend(self._always_warnings(tx))
            return Written(entry["id"], warnings, entry)

        written = self._write(work)
        self._after_write()
        return self._suggest(written, entry, supersedes)

    def _suggest(
        self, written: Written, entry: Mapping[str, Any], supersedes: str | None
    ) -> Written:
        """``written`` with the ids the rule pairs with a new ``entry``
        (``_stale.py``) and their warning, but ``supersedes`` (retired by
        the write). Read from the snapshot the store's last recall left,
        only while it is current (the write carried itself into it) and
        free: a remember never reads the namespace (200 ms at 10,000
        entries for a one-off script) and never waits for a recall that
        holds the snapshot. Otherwise (no recall yet, another writer since,
        a recall busy with it) it names none, and a recall that loads both
        versions warns of the pair. The write has committed: a failure here
        is never its error, and finds nothing."""
        if written.entry is not entry:  # a twin's id or a retry: nothing new
            return written
        if not self._cache_lock.acquire(blocking=False):
            return written
        try:
            snap = snapshots.get((self._owner, self.pools))
            if snap is None or snap.signal != self._backend.version(self.namespace):
                return written
            found = _possible_supersedes(snap, entry)
        except StoreUnavailable:
            return written
        finally:
            self._cache_lock.release()
        found = [ident for ident in found if ident != supersedes]
        if not found:
            return written
        warnings = [*written.warnings, _supersedes_warning(found)]
        return Written(written.id, warnings, written.entry, found)

    def _always_warnings(self, tx: WriteTx) -> builtins.list[str]:
        """The always-scope total warning, if this namespace passes it with
        this write: read in the write's own transaction, so no read after
        the commit can fail a call whose write landed."""
        snap = _load(None, tx.candidates([]), self.pools)
        return [w for w in snap.warnings if w.startswith("scope: ")]

    def _existing(
        self,
        tx: WriteTx,
        same: dict[str, Any],
        supersedes: str | None,
        warnings: builtins.list[str],
    ) -> Written:
        """A remember of a memory already stored: the stored entry's id, an
        ``idempotent`` warning, and ``supersedes`` (if another entry) retired
        in favour of the stored one."""
        if supersedes is not None and supersedes != same["id"]:
            retired = self._retire(tx, supersedes, same["id"])
            tx.replace(_row(retired), self._change("supersede"))
        return Written(same["id"], [*warnings, _idempotent(same["id"])], same)

    def _replay(self, first: Stored, entry: dict[str, Any], key: str) -> Written:
        stored = _parse(first)
        if not isinstance(stored, dict) or not _same_request(stored, entry):
            raise InvalidInput(
                "key",
                f"{key!r} was already used for entry {first.id!r} with other "
                "fields; a retry must repeat the same call, a new write needs "
                "a new key",
            )
        return Written(first.id, self._check(stored), stored)

    def _retire(self, tx: WriteTx, ident: str, by: str) -> dict[str, Any]:
        found = tx.get(ident)
        old = None if found is None else _parse(found)
        if not isinstance(old, dict) or not default_is_active(old):
            state = "no entry" if found is None else "no active entry"
            raise InvalidInput(
                "supersedes",
                f"{state} {ident!r} in namespace {self.namespace!r}",
            )
        self._may_change(found, old, ident, "retiring (supersedes)")
        old["superseded_by"] = by
        self._stamp_change(old, retired=True)
        return old

    def update(
        self,
        id: str,
        *,
        content: str | None = None,
        type: str | None = None,
        scope: str | None = None,
        tags: Iterable[str] | None = None,
        project: str | None = None,
        base_priority: float | None = None,
    ) -> Updated:
        """Change fields of one entry, validated, in one transaction.

        A field left out or None stays as it is, for every field: a client
        that sends every argument (null for those it does not mean to
        change) changes only what it gave. Clearing takes an explicit value:
        ``scope="context"`` removes the scope (``"always"`` sets it; either
        in any case), ``tags=[]`` the tags, ``project=""`` the project; a
        ``base_priority`` is replaced, never removed (5 is the default). An
        update that takes an always-scope entry out of that scope says so in
        a ``scope:`` warning, since the entry stops loading on every recall.
        The whole entry after the change is validated like a new one.

        Raises:
            InvalidInput: unknown or unreadable ``id``, no field given, or a
                bad value (named).
            StoreUnavailable: the database failed (nothing was changed).
        """
        _require_id(id)
        changes = self._changes(content, type, scope, tags, project, base_priority)

        def work(tx: WriteTx) -> Updated:
            old = self._updatable(tx, id)
            if changes.get("scope") == _ALWAYS:
                self._need_pin("scope", "making an entry always-scope", id=id)
            entry = dict(old)
            if "content" in changes:  # a precomputed cost of the old content
                entry.pop("token_count", None)
            for field, value in changes.items():
                if value is None:
                    entry.pop(field, None)
                else:
                    entry[field] = value
            vouching = self._stamp_change(entry)
            warnings = self._check(entry)
            if vouching == "promoted":
                warnings.append(
                    f"quarantine: entry {id!r} was written in quarantine (by a "
                    f"writer nobody vouched for); writer {self.writer.name!r}, "
                    "holding pin, changed it, which vouches for it: it now "
                    "loads in its type's pool"
                )
            elif vouching == "kept":
                warnings.append(
                    f"quarantine: entry {id!r} stays in quarantine: only a "
                    "writer holding pin vouches for an entry by changing it"
                )
            same = _duplicate(
                tx, entry, ignore=(id,), vouched=not self.writer.quarantine
            )
            if same is not None:
                raise InvalidInput(
                    "content",
                    f"entry {id!r} would become the same memory (content, type "
                    f"and scope) as active entry {same['id']!r}; forget {id!r} "
                    "instead, or make them differ",
                    id=id,
                )
            tx.replace(_row(entry), self._change("update"))
            if old.get("scope") == _ALWAYS and entry.get("scope") != _ALWAYS:
                warnings.append(
                    f"scope: entry {id!r} was always-scope and is now "
                    "context-scope: it no longer loads on every recall, only "
                    "when it ranks (scope='always' puts it back)"
                )
            if entry.get("scope") == _ALWAYS:
                warnings.extend(self._always_warnings(tx))
            return Updated(entry, warnings)

        updated = self._write(work)
        self._after_write()
        return updated

    def _updatable(self, tx: WriteTx, id: str) -> dict[str, Any]:
        """The stored entry ``update`` changes, if this writer may."""
        found = tx.get(id)
        if found is None:
            raise InvalidInput("id", f"no entry {id!r} in namespace {self.namespace!r}")
        old = _parse(found)
        if not isinstance(old, dict):
            raise InvalidInput(
                "id", f"entry {id!r} is unreadable ({old}); forget it instead"
            )
        try:
            _require_name("id", id)
        except InvalidInput as exc:
            raise InvalidInput(
                "id",
                f"entry {id!r} has an id no write accepts ({exc.message}); "
                "forget it and remember its content again",
            ) from None
        self._may_change(found, old, id, "changing")
        return old

    @staticmethod
    def _changes(
        content: str | None,
        kind: str | None,
        scope: str | None,
        tags: Iterable[str] | None,
        project: str | None,
        base_priority: float | None,
    ) -> dict[str, Any]:
        """The checked new values (None: remove the key); a field given as
        None is not a change."""
        changes: dict[str, Any] = {}
        if content is not None:
            changes["content"] = _require_text("content", content)
        if kind is not None:
            changes["type"] = _require_name("type", kind)
        if scope is not None:
            changes["scope"] = _ALWAYS if _scope(scope) == _ALWAYS else None
        if tags is not None:
            changes["tags"] = _tag_list(tags) or None
        if project is not None:
            changes["project"] = (
                None if project == "" else _require_text("project", project)
            )
        if base_priority is not None:
            changes["base_priority"] = _require_priority(base_priority)
        if not changes:
            raise InvalidInput(
                None,
                "nothing to update: give content, type, scope, tags, project "
                "or base_priority (a field sent as null is left as it is)",
            )
        return changes

    @overload
    def forget(self, id: str) -> bool: ...

    @overload
    def forget(self, *, written_by: str) -> int: ...

    @overload
    def forget(
        self, id: str | None = None, *, written_by: str | None = None
    ) -> bool | int: ...

    def forget(
        self, id: str | None = None, *, written_by: str | None = None
    ) -> bool | int:
        """Delete an entry; True when this namespace had it, else False.

        ``forget(written_by=NAME)`` deletes every entry NAME wrote (their
        ``written_by``, stamped by the store: cleaning up after a
        compromised token) and returns how many entries were deleted; it
        needs the ``pin`` grant. Forgetting an always-scope entry needs
        ``pin`` too, and a quarantined writer forgets only quarantined
        entries.

        Entries whose ``superseded_by`` chain ends at it are deleted too. On
        SQLite the deleted bytes are overwritten (``secure_delete``) and the
        WAL checkpointed and truncated, so the content is gone from the
        files, unless another connection's open read holds the WAL back:
        then :attr:`scrub_pending` is True until a later call or ``close``
        truncates it. On PostgreSQL the row is deleted (VACUUM reclaims its
        space).

        Raises:
            InvalidInput: ``id`` is not a non-empty str, or both or neither
                of ``id`` and ``written_by`` given.
            NotGranted: the writer lacks the grant (nothing was deleted).
            StoreUnavailable: the database failed (nothing was deleted).
        """
        if (id is None) == (written_by is None):
            raise InvalidInput(None, "give an id or written_by, not both")
        if written_by is not None:
            return self._forget_writer(_require_text("written_by", written_by))
        _require_id(id)
        ident = str(id)

        def work(tx: WriteTx) -> bool:
            found, entry = _stored_entry(tx, ident)
            if found is None:
                return False
            self._may_change(found, entry, ident, "forgetting")
            change = self._change("forget")
            return bool(_delete_chains(tx, [ident], change, self._may_forget))

        forgotten = self._write(work)
        self._after_write()
        return forgotten

    def _forget_writer(self, name: str) -> int:
        self._need_pin("written_by", f"forgetting everything {name!r} wrote")

        def work(tx: WriteTx) -> int:
            idents = [row.id for row in tx.written_by(name)]
            return _delete_chains(tx, idents, self._change("forget"))

        count = self._write(work)
        self._after_write()
        return count

    # --- reads -------------------------------------------------------------

    def get(self, id: str) -> dict[str, Any] | None:
        """The entry with this id in this namespace, or None."""
        _require_id(id)
        found = self._backend.read(self.namespace, lambda tx: tx.get(id))
        return None if found is None else _readable(found)

    def history(self, id: str) -> builtins.list[dict[str, Any]]:
        """Every version of the entry ``id`` in this namespace, oldest first
        (``[]`` for an id it never held).

        Each version is ``{"version": N, "operation": ..., "entry": {...}
        or None, "by": writer or None, "at": ISO 8601 UTC}``: the entry as
        it was after the operation (``remember``, ``update``,
        ``supersede``: the retired entry's version, ``import``, and
        ``migrated``: its state when the database gained its history);
        ``forget`` is a tombstone, and once an entry is forgotten every
        version of it has ``entry`` None (forgetting wins over history).
        One read of the history by its primary key; no recall reads it.

        Raises:
            InvalidInput: ``id`` is not a str.
            StoreUnavailable: the database failed.
        """
        _require_id(id)
        found = self._backend.read(self.namespace, lambda tx: tx.history(id))
        return [_version(id, version) for version in found]

    def list(
        self,
        *,
        type: str | None = None,
        limit: int = 50,
        cursor: str | None = None,
        scope: str | None = None,
        written_by: str | None = None,
    ) -> Page:
        """A page of this namespace's entries (retired ones too), oldest first.

        Pass ``next_cursor`` back to get the next page (with the same
        filters); every entry stored before the first page and not deleted
        since appears exactly once. ``type``, ``scope`` (``"always"`` or
        ``"context"``) and ``written_by`` (a writer's name, as the store
        stamped it) keep only the entries that have it.

        Raises:
            InvalidInput: ``limit`` not in 1..500, a cursor this store did not
                give, or a bad ``type``, ``scope`` or ``written_by``.
        """
        if type is not None:
            _require_name("type", type)
        if scope is not None:
            scope = _scope(scope)
        if written_by is not None:
            _require_text("written_by", written_by)
        if (
            isinstance(limit, bool)
            or not isinstance(limit, int)
            or not 1 <= limit <= _MAX_PAGE
        ):
            raise InvalidInput(
                "limit", f"must be an int from 1 to {_MAX_PAGE}, got {limit!r}"
            )
        after = (
            0
            if cursor is None
            else _cursor_position(self._cursor_secret(), self.namespace, cursor)
        )
        rows = self._backend.read(
            self.namespace,
            lambda tx: tx.page(type, after, limit + 1, scope=scope, writer=written_by),
        )
        more = len(rows) > limit
        rows = rows[:limit]
        return Page(
            [_readable(row) for row in rows],
            _cursor(self._cursor_secret(), self.namespace, rows[-1].seq)
            if more
            else None,
        )

    def _cursor_secret(self) -> bytes:
        """The key of this database's list cursors, the same in every process
        and Store on it (so any worker accepts a cursor another gave): read
        once per Store; the first Store ever to need it draws it and stores
        it, and of two drawing at once the first stored wins (both read it
        back in their write)."""
        key = self._cursor_key
        if key is None:
            value = self._backend.read(
                self.namespace, lambda tx: tx.secret(_CURSOR_SECRET)
            )
            if value is None:
                drawn = os.urandom(32).hex()
                value = self._backend.write(
                    self.namespace, lambda tx: tx.keep_secret(_CURSOR_SECRET, drawn)
                )
            key = self._cursor_key = value.encode("utf-8")
        return key

    def recall(
        self,
        message: str,
        *,
        tags: Iterable[str] = (),
        project: str | None = None,
        now: datetime | None = None,
        pools: Sequence[Pool] | None = None,
        tz: str | None = None,
        as_of: datetime | None = None,
    ) -> Recall:
        """The entries to inject for this context, per pool, and the text.

        The text is the pools in the frame of ``_frame`` (stored data, not
        instructions); when an always-scope row could not be loaded, a
        block after it names the row. Rows that
        fail validation are left out and listed in ``skipped``; every other
        entry still loads. A recall with no write since the last one reads
        no entry rows. ``pools`` (None: the store's) fills other pools for
        this call, cached per list of pools. ``tz``, an IANA name such as
        ``"Europe/Paris"``, is the user's time zone: the times the message
        names ("yesterday") are the user's days; without it they are read
        in ``now``'s time zone (UTC when ``now`` is None or naive).

        ``as_of`` (an aware datetime) answers as the store would have at
        that moment: from the history (never from the cached snapshot),
        the entries and versions stored then, retired or not as they were
        then, ranked at ``now=as_of`` unless ``now`` is given; an entry
        forgotten since is not there (forgetting wins over history).
        ``store.recall(m, now=T)`` made at T and ``store.recall(m,
        as_of=T)`` later give the same ids, order and text, as long as
        nothing stored at T was forgotten since. It reads the namespace's
        history whole (O(versions)); the lexical and core rankings only.

        Raises:
            InvalidInput: a bad context, ``pools``, ``tz`` or ``as_of``
                (named; ``as_of`` with ``ranking="semantic"`` too).
        """
        context = _context(message, tags, project)
        if pools is None:
            chosen_pools, quarantine = self.pools, self.quarantine_pool
        else:
            chosen_pools, quarantine = split_quarantine(_check_pools(pools))
        at = None if as_of is None else self._as_of(as_of)
        if now is None:
            now = datetime.now(timezone.utc) if as_of is None else as_of
        times = self._times(message, now, tz)  # parsed before the lock
        query = None if self._embedder is None else Query(self._embedder, message)
        # (as of a time: a snapshot of its own, built from the history)
        with self._cache_lock if at is None else contextlib.nullcontext():
            snap = (
                self._snapshot(chosen_pools)
                if at is None
                else self._snapshot_at(at, chosen_pools)
            )
            pools_now = self._pools_for(snap, chosen_pools, quarantine)
            # Each pool over its own part: lexical by the part's recall
            # index, bounded by its relevance's factors; semantic by one
            # loop over the part (its hybrid factor is above 1 for nearly
            # every entry: no index skips any).
            got = snap.parts.recall(
                pools_now,
                context,
                now=now,
                token_counter=self._token_counter,
                relevance=self._relevance(snap, context, now, times, query),
                scan=self.ranking == "semantic",
            )
            recalled = _recalled(got, snap, self.writer.name)
            recalled.warnings.extend(_stale_warnings(got, snap))
            return recalled

    def explain(
        self,
        message: str,
        *,
        tags: Iterable[str] = (),
        project: str | None = None,
        now: datetime | None = None,
        ids: Iterable[str] | None = None,
        types: Iterable[str] | None = None,
        outcomes: Iterable[str] | None = None,
        summary: bool = False,
        tz: str | None = None,
        as_of: datetime | None = None,
    ) -> str:
        """``poolsplit.explain``'s table for this context, plus skipped rows.

        ``ids``, ``types`` and ``outcomes`` keep only the matching entries'
        rows, ``summary`` leaves the rows out (the count of each outcome, the
        pools and the warnings stay), as in ``poolsplit.explain``. With the
        default pools, a default pool no active entry has the type of (and
        an empty spill-over pool) is left out of the table and named in one
        line, instead of warning that its types are misspelt. ``tz`` and
        ``as_of`` as in :meth:`recall`.

        Raises:
            InvalidInput: a bad context, filter, ``tz`` or ``as_of`` (named).
        """
        context = _context(message, tags, project)
        filters = _explain_filters(ids, types, outcomes, summary)
        moment = None if as_of is None else self._as_of(as_of)
        if now is None and as_of is not None:
            now = as_of
        at = datetime.now(timezone.utc) if now is None else now
        times = self._times(message, at, tz)  # parsed before the lock
        with self._cache_lock if moment is None else contextlib.nullcontext():
            snap = (
                self._snapshot() if moment is None else self._snapshot_at(moment, None)
            )
            pools, unused = self._explained_pools(snap)
            if not pools:  # nothing the default pools take: nothing to decide
                only = filters["ids"]
                skipped = [s for s in snap.skipped if only is None or s.id in only]
                text = (
                    f"no active entry in namespace {self.namespace!r}: "
                    "recall returns nothing\n"
                )
                return text + _explain_tail(unused, skipped, summary)
            make = self._relevance(snap, context, at, times)
            ranked = {} if make is None else snap.parts.relevances(make)
            # recall's pools and scorer: each entry by its own pool's part;
            # the quarantine pool over the quarantined entries alone
            pools = snap.parts.floored(pools, ranked)
            scorer = snap.parts.scorer(context, ranked)
            reports = []
            for shown, entries in _explained_parts(snap, pools):
                report = poolsplit.explain(
                    entries,
                    shown,
                    context,
                    scorer=scorer,
                    token_counter=self._token_counter,
                    now=now,
                    ids=filters["ids"],
                    types=filters["types"],
                    outcomes=filters["outcomes"],
                )
                reports.append((report, entries))
            relevance = ""
            if ranked:
                relevance = _relevance_lines(ranked, snap, reports)
            relevance += _provenance_lines(reports, summary)
            if snap.space is not None and self._catchup is not None:
                relevance += missing_note(snap.space, self._catchup.error)
            only = filters["ids"]
            skipped = [s for s in snap.skipped if only is None or s.id in only]
        text = "\n".join(
            (_QUARANTINE_HEAD if i else "") + r.render(summary=summary).rstrip("\n")
            for i, (r, _) in enumerate(reports)
        )
        return text + "\n" + relevance + _explain_tail(unused, skipped, summary)

    def _as_of(self, as_of: object) -> str:
        """``as_of`` checked, as the history compares times."""
        if self.ranking == "semantic":
            raise InvalidInput(
                "as_of",
                "is not available with ranking='semantic' (the vectors of "
                "past contents are not kept); open the store with 'lexical'",
            )
        return _moment(as_of, "as_of")

    def _snapshot_at(self, at: str, pools: Sequence[Pool] | None) -> _Snapshot:
        """The candidates for ``pools`` (None: the store's) as they were at
        ``at``, from the history: each id's version then, filtered as
        :meth:`SqlTx.candidates` filters the rows now (active; of the
        pools' types, or always-scope). Never cached, never the cache's."""
        pools = self.pools if pools is None else tuple(pools)
        types = _candidate_types(pools)
        kinds = None if types is None else frozenset(types)
        rows = []
        for stored in self._backend.read(self.namespace, lambda tx: tx.as_of(at)):
            value = _parse(stored)
            if not isinstance(value, dict):  # kept: recall names it skipped
                rows.append(stored)
                continue
            kind, status, scope = _columns(value)
            if status == "active" and (
                kinds is None or kind in kinds or scope == _ALWAYS
            ):
                rows.append(stored._replace(scope=scope))
        snap = _Snapshot(pools, ranking=self.ranking)
        snap.apply([], rows)
        return snap

    def _explained_pools(
        self, snap: _Snapshot
    ) -> tuple[builtins.list[Pool], builtins.list[str]]:
        """The pools explain shows, and the default ones it leaves out: with
        the default pools, those no active entry has a type of select nothing
        (the default pools admit disjoint types), so leaving them out changes
        no decision and spares a warning that a type is misspelt (none at
        all for a store with no active entry: a user who never configured a
        pool is never told one may be misspelt)."""
        pools = self._pools_for(snap)
        if self.pools is not None:
            return pools, []
        shown = [
            p
            for p in pools
            if p.name == QUARANTINE or not snap.types.isdisjoint(p.types or ())
        ]
        unused = [p.name for p in pools if p not in shown]
        return shown, unused

    def _times(self, message: str, now: datetime, tz: str | None) -> Times:
        """What ``message`` says of time (its windows, its other terms), read
        at ``now`` in the time zone ``tz``: before any lock (it needs no
        snapshot, and a message full of times costs milliseconds); nothing
        for ``core``."""
        zone = _zone(tz)
        if self.ranking == "core":
            return Times((), frozenset(), frozenset())
        return read_times(message, _zoned(now, zone))

    def _relevance(
        self,
        snap: _Snapshot,
        context: Mapping[str, Any],
        now: datetime,
        times: Times,
        query: Query | None = None,
    ) -> Callable[[Part], Relevance] | None:
        """The message's relevance at ``now`` with the ``times`` it names,
        per part: lexical, or hybrid with the part's
        vectors (the message embedded once); None for the core ranking."""
        message = context["message"]
        if self.ranking == "core":
            return None
        if snap.space is None or self._embedder is None:
            return lexical(message, now, times)
        snap.space.refresh(self._read_vectors)
        assert self._catchup is not None  # the semantic ranking's
        self._catchup.want(snap.space)
        if query is None:
            query = Query(self._embedder, message)
        return hybrid(snap.space, query, message, now, times)

    def _space(self) -> Space:
        """The store's snapshot's vectors, refreshed (the caller holds
        ``_cache_lock``): what the catch-up embeds."""
        snap = self._snapshot()
        assert snap.space is not None  # the semantic ranking's
        snap.space.refresh(self._read_vectors)
        return snap.space

    def _read_vectors(self, ids: Sequence[str]) -> dict[str, tuple[str, bytes]]:
        """id -> (digest, vector) of the stored vectors of these ids."""
        return self._backend.read(
            self.namespace, lambda tx: tx.vectors(MODEL, list(ids))
        )

    def _write_vectors(
        self, space: Space, rows: Sequence[tuple[str, str, bytes]]
    ) -> None:
        """Store (id, digest, vector) rows, in a transaction of their own;
        the snapshot whose ``space`` it is stays current (no entry changed)."""
        with self._cache_lock:
            snap = snapshots.get((self._owner, self.pools))
        if snap is None or snap.space is not space:
            self._backend.write(self.namespace, lambda tx: tx.put_vectors(MODEL, rows))
            return
        self._write_beside(snap, lambda tx: tx.put_vectors(MODEL, rows))

    def reindex(self, *, progress: Callable[[int, int], None] | None = None) -> int:
        """Embed every entry of this namespace that has no vector of its
        current content (the semantic ranking's); return how many were
        embedded.

        What the background catch-up does, in the caller's thread and to the
        end: batches of 32, each written in a transaction of its own, so an
        interrupted reindex keeps what it embedded and the next one embeds
        only what is still missing (a vector another process stored is read,
        not embedded again). ``progress(done, total)`` is called before the
        first batch and after each.

        Raises:
            InvalidInput: the store's ranking is not ``semantic``.
            StoreUnavailable: the database failed (the batches written
                before stay).
        """
        if self._catchup is None:
            raise InvalidInput(
                "ranking",
                f"reindex embeds for ranking='semantic', not {self.ranking!r}",
            )
        return self._catchup.run(progress)

    def _write_beside(self, snap: _Snapshot, work: Callable[[WriteTx], T]) -> T:
        """``work``, a write that changes no entry (the semantic ranking's
        vectors): when the write read that no entry changed since
        ``snap``'s position (``settled``, at most 0 rows) and ``snap`` is
        still there, ``snap`` is marked current at the write's position
        (under ``_cache_lock``), so the recall after reads nothing (the
        write moved the backend's version). Else the next recall reads the
        log."""
        after = snap.position
        seen: builtins.list[Since | None] = [None]

        def run(tx: WriteTx) -> T:
            result = work(tx)
            seen[0] = tx.settled(after, [], 0)
            return result

        result = self._backend.write(self.namespace, run)
        since = seen[0]
        signal = None if since is None else self._committed_signal(since)
        with self._cache_lock:
            if since is not None and signal is not None and snap.position == after:
                snap.signal, snap.position = signal, since.position
        return result

    def _after_write(self) -> None:
        """Semantic ranking: have the catch-up embed what a write stored,
        in the background (the write has committed and answers first; the
        recalls until then rank it lexically). A forgotten entry's vector
        was deleted in its transaction (SqlTx.delete)."""
        if self._catchup is not None:
            self._catchup.nudge()

    def _pools_for(
        self,
        snap: _Snapshot,
        pools: Sequence[Pool] | None = None,
        quarantine: Pool | None = None,
    ) -> builtins.list[Pool]:
        """The pools a recall of ``snap`` fills: ``pools`` (None: the
        store's, else the defaults for the snapshot's types), then the
        quarantine pool when the snapshot holds a quarantined entry."""
        pools = self.pools if pools is None else pools
        chosen = list(pools) if pools is not None else default_pools(snap.types)
        if snap.parts.holds(QUARANTINE):
            chosen.append(self.quarantine_pool if quarantine is None else quarantine)
        return chosen

    def _snapshot(self, pools: Sequence[Pool] | None = None) -> _Snapshot:
        """The loaded candidates for ``pools`` (None: the store's), one
        cached snapshot per pools; the caller holds ``_cache_lock``.

        A recall whose backend version is the one last seen reads nothing
        more (nor does the one after this store's own write: see
        :meth:`_write`). Otherwise one read transaction
        gives, in one statement, the change log's position and the rows of
        this namespace changed since the snapshot's (none for a write to
        another namespace); the namespace is read whole on the first call,
        and when the log no longer reaches back to the snapshot or says
        that everything changed (a TRUNCATE), or more rows changed than the
        snapshot holds.
        """
        pools = self.pools if pools is None else tuple(pools)
        cached: _Snapshot | None = snapshots.get((self._owner, pools))
        if cached is not None and cached.signal == self._backend.version(
            self.namespace
        ):
            return cached
        types = _candidate_types(pools)
        after = None if cached is None else cached.position
        most = 0 if cached is None else _most_changes(cached)
        signal, position, changed, rows = self._backend.since(
            self.namespace, after, types, most
        )
        whole = changed is None or cached is None
        # A snapshot built from a whole read: one at a time per process, so
        # that 16 cold tenants at once do not hold 16 half-built snapshots
        # beside the budget's (under the GIL they would not be built faster
        # side by side). The read itself is outside: a slow database (a
        # pool's wait, a standby catching up) never holds up another's.
        with _WHOLE_READS if whole else contextlib.nullcontext():
            snap = cached
            if changed is None or snap is None:
                snap = _Snapshot(pools, ranking=self.ranking)
                snap.apply([], rows)
            elif changed or rows:  # else only other namespaces changed: no work
                snap.apply(changed, rows)
            snap.signal, snap.position = signal, position
            self._keep(pools, snap, None if changed is not None else rows)
        return snap

    def _write(self, work: Callable[[WriteTx], T]) -> T:
        """``work`` in one write transaction of this namespace; then the
        store's snapshot is brought forward to what the write committed, by
        the rows changed since the snapshot's position, which the write read
        last (``settled``), so the recall after the write reads nothing
        more. On SQLite only when no other commit changed entries since
        (``signal_at``: a read of the log's position, no entry row).

        Only after the COMMIT succeeded: a write that raised (rolled back,
        or its COMMIT's outcome unknown) changes no snapshot, and the next
        recall reads the change log as after any other process's write.
        """
        pools = self.pools
        # Never waiting for the lock: a write does not queue behind a recall
        # building a snapshot (a whole read: 200 ms at 10,000 entries).
        if not self._cache_lock.acquire(blocking=False):
            return self._backend.write(self.namespace, work)
        try:
            cached: _Snapshot | None = snapshots.get((self._owner, pools))
            after = None if cached is None else cached.position
            most = 0 if cached is None else _most_changes(cached)
        finally:
            self._cache_lock.release()
        if cached is None or after is None:
            return self._backend.write(self.namespace, work)
        types = _candidate_types(pools)
        seen: builtins.list[Since | None] = [None]

        def run(tx: WriteTx) -> T:
            seen[0] = None  # a retried attempt's own
            result = work(tx)
            seen[0] = tx.settled(after, types, most)
            return result

        result = self._backend.write(self.namespace, run)
        since = seen[0]
        signal = None if since is None else self._committed_signal(since)
        if since is not None and signal is not None:
            self._carry(pools, cached, after, since._replace(signal=signal))
        return result

    def _committed_signal(self, since: Since) -> object | None:
        """After a write committed: the version a recall will compare while
        the log stays at ``since.position`` (None: it moved on, or the read
        failed: the write has committed, never its error)."""
        try:
            return self._backend.signal_at(self.namespace, since.position)
        except StoreUnavailable:
            return None

    def _carry(
        self,
        pools: tuple[Pool, ...] | None,
        snap: _Snapshot,
        after: int,
        since: Since,
    ) -> None:
        """Bring ``snap`` (read at position ``after`` when the write began)
        to ``since``, what the committed write read of the changes after
        ``after``, unless it left the cache or moved past ``since`` (a
        recall in another thread read a later state: applying older rows
        would take it back). A snapshot at a position between the two is
        brought forward too: the rows changed after ``after`` include those
        changed after its position, read as they are at ``since``. Not
        while a recall holds the lock (the write has committed: its caller
        does not wait for a recall; that recall or the next reads the log).
        If applying the rows fails, the snapshot leaves the cache (the next
        recall reads the namespace whole): a committed write never reports
        an error of the carry."""
        if not self._cache_lock.acquire(blocking=False):
            return
        try:
            if snapshots.get((self._owner, pools)) is not snap:
                return
            if not after <= snap.position <= since.position:
                return
            assert since.changed is not None  # settled says None otherwise
            try:
                if since.changed or since.rows:
                    snap.apply(since.changed, since.rows)
                    if snap.space is not None:  # new: none has a vector yet
                        snap.space.refresh(None)
            except Exception:  # the write has committed: never its error
                snapshots.drop((self._owner, pools))  # half applied: read anew
                return
            snap.signal, snap.position = since.signal, since.position
            self._keep(pools, snap, None)
        finally:
            self._cache_lock.release()

    def _keep(
        self,
        pools: tuple[Pool, ...] | None,
        snap: _Snapshot,
        rows: Sequence[Stored] | None,
    ) -> None:
        """Put the snapshot in the process's budget, with its estimated bytes
        (per entry: estimated from ``rows`` when it was read whole, else as
        when it last was); at most _MAX_CACHED lists of pools per store."""
        if rows is not None or pools not in self._entry_bytes:
            body = sum(len(row.body) for row in rows or ()) / max(len(rows or ()), 1)
            self._entry_bytes[pools] = (
                int(body * _SNAPSHOT_BYTES_PER_BODY_BYTE) + _SNAPSHOT_BYTES_PER_ENTRY
            )
        key = (self._owner, pools)
        if snapshots.get(key) is None and snapshots.count(self._owner) >= _MAX_CACHED:
            oldest = snapshots.oldest_of(self._owner)
            if oldest is not None:
                snapshots.drop(oldest)
        size = (len(snap) + len(snap.skipped) + 1) * self._entry_bytes[pools]
        if snap.space is not None:  # the semantic ranking's matrix, caught up
            size += len(snap) * VECTOR_BYTES
        snapshots.put(key, snap, size)

    # --- import / export ---------------------------------------------------

    def export_jsonl(self, dest: Source) -> int:
        """Write every entry of this namespace, one JSON object a line, oldest
        first; return the count.

        A path is written whole or not at all: to a temporary file in the
        same folder, flushed to disk, then renamed over ``dest`` (a full disk
        never destroys the previous backup; its permissions are kept).

        Raises:
            StoreUnavailable: the database failed, ``dest`` cannot be
                written, or a stored row is not a JSON object (named: fix or
                forget it; a backup that silently lacks a row is worse).
        """
        rows = self._backend.read(self.namespace, lambda tx: tx.every())
        lines = []
        for stored in rows:
            value = _parse(stored)
            if not isinstance(value, dict):
                raise StoreUnavailable(
                    "unreadable entry",
                    f"{stored.id!r} in namespace {self.namespace!r}",
                    f"{value}; fix or forget it, then export again",
                )
            lines.append(_dumps(value) + "\n")
        text = "".join(lines)
        if isinstance(dest, (str, os.PathLike)):
            _replace_file(os.fspath(dest), text)
        else:
            dest.write(text)
        return len(lines)

    def import_jsonl(
        self, source: Source, *, replace: bool = False, keep_provenance: bool = False
    ) -> Imported:
        """Store every entry of a JSONL file, all or nothing; return the count
        of distinct ids written (an :class:`Imported`, an int with warnings).

        Each line is validated like ``remember``; blank lines are skipped; an
        entry without an ``id`` gets one. A duplicate id inside the file or
        against this namespace is an error naming both lines, unless
        ``replace=True`` (the later line wins; a stored entry is
        overwritten). A ``superseded_by`` must name another id of the file or
        of this namespace. A line that is the same memory (content after
        whitespace normalisation, type and scope) as an active entry already
        stored is not written, as ``remember`` does: an ``idempotent``
        warning names the line and the stored entry, and a ``superseded_by``
        naming the line is pointed at the stored entry (the file's own lines
        are not compared: a backup is restored as it was). Each line's
        warnings (``remember``'s: a misleading ``base_priority``, a type no
        pool admits, ...) come back as ``line N: field: message``, in line
        order, before the ``idempotent`` ones; the always-scope total is
        not among them (every recall reports it).

        Provenance: each line written is stamped as this store's writer's,
        now (``written_by``, ``written_at``; quarantined if the writer is),
        whatever the file says, unless ``keep_provenance=True`` (restoring
        a backup ``export_jsonl`` wrote), which keeps the file's and needs
        the ``pin`` grant. An always-scope line, or a line replacing a
        stored always-scope entry, needs ``pin``; a quarantined writer
        replaces only quarantined entries.

        Raises:
            InvalidInput: the first bad line (``line`` and ``field`` set);
                nothing is written.
            NotGranted: the writer lacks a grant the file needs; nothing is
                written.
            StoreUnavailable: the database failed; nothing is written.
        """
        if not isinstance(keep_provenance, bool):
            raise InvalidInput("keep_provenance", "must be True or False")
        if keep_provenance:
            self._need_pin("keep_provenance", "keeping a file's provenance")
        entries, lines, checked = self._read_jsonl(source, replace, keep_provenance)

        def work(tx: WriteTx) -> Imported:
            ids = list(entries)
            stored = tx.existing(ids)
            if stored and not replace:
                ident = next(i for i in ids if i in stored)
                raise InvalidInput(
                    "id",
                    f"{ident!r} is already stored in namespace "
                    f"{self.namespace!r}; pass replace=True to overwrite it",
                    line=lines[ident],
                    id=ident,
                )
            for ident in sorted(stored, key=lines.__getitem__):
                old = self._check_replaced(tx, ident, lines[ident])
                if not keep_provenance:  # a replacement is a change of ``old``
                    self._restamp(entries[ident], old)
            kept, warnings = self._unique(tx, entries, lines)
            self._check_targets(tx, kept, lines)
            fresh = []
            change = self._change("import")
            for ident, entry in kept.items():
                if ident in stored:
                    tx.replace(_row(entry), change, clear_key=True)
                else:
                    fresh.append(_row(entry))
            tx.insert_many(fresh, change)
            return Imported(len(kept), [*checked, *warnings])

        count = self._write(work)
        self._after_write()
        return count

    def _unique(
        self,
        tx: WriteTx,
        entries: dict[str, dict[str, Any]],
        lines: dict[str, int],
    ) -> tuple[dict[str, dict[str, Any]], builtins.list[str]]:
        """The lines to write: each one that repeats an active memory already
        stored is left out with an ``idempotent`` warning, and a
        ``superseded_by`` naming a left-out line is pointed at the stored
        entry. Lines of one file are not compared with each other: a backup
        is restored as it was written."""
        keys = {ident: _memory_key(entry) for ident, entry in entries.items()}
        stored = _stored_memories(
            tx, keys.values(), entries, vouched=not self.writer.quarantine
        )
        same_as = {
            ident: stored[key]
            for ident, key in keys.items()
            if key is not None and key in stored
        }
        warnings = [
            f"line {lines[ident]}: {_idempotent(first)}"
            for ident, first in same_as.items()
        ]
        kept = {}
        for ident, entry in entries.items():
            if ident in same_as:
                continue
            target = entry.get("superseded_by")
            if isinstance(target, str) and target in same_as:
                kept[ident] = {**entry, "superseded_by": same_as[target]}
            else:
                kept[ident] = entry
        return kept, warnings

    def _check_replaced(self, tx: WriteTx, ident: str, line: int) -> dict[str, Any]:
        """The stored entry a line replaces ({} if unreadable), if this
        writer may: always-scope needs ``pin``; a quarantined writer
        replaces only quarantined entries."""
        found, old = _stored_entry(tx, ident)
        try:
            self._may_change(found, old, ident, "replacing")
        except NotGranted as exc:
            raise NotGranted(
                exc.field, exc.message, grant=exc.grant, id=ident, line=line
            ) from None
        return old

    def _restamp(self, entry: dict[str, Any], old: Mapping[str, Any]) -> None:
        """A line replacing stored entry ``old``: its author stays ``old``'s
        (none if it had none), this writer is who changed it, now."""
        for field in (WRITTEN_BY, WRITTEN_AT):
            if isinstance(old.get(field), str):
                entry[field] = old[field]
            else:
                entry.pop(field, None)
        entry[UPDATED_BY] = self.writer.name
        entry[UPDATED_AT] = _created(self._clock())

    def _check_targets(
        self, tx: WriteTx, entries: dict[str, dict[str, Any]], lines: dict[str, int]
    ) -> None:
        """Every ``superseded_by`` names another entry of the file or of this
        namespace (checked per line: an entry retiring itself never loads)."""
        targets = {
            ident: entry["superseded_by"]
            for ident, entry in entries.items()
            if isinstance(entry.get("superseded_by"), str) and entry["superseded_by"]
        }
        outside = sorted({t for t in targets.values() if t not in entries})
        known = set(entries) | tx.existing(outside)
        for ident, target in targets.items():
            if target == ident:
                raise InvalidInput(
                    "superseded_by",
                    f"{ident!r} names the entry itself, so it would retire itself "
                    "and never load; name the entry that replaces it, or leave "
                    "superseded_by out",
                    line=lines[ident],
                    id=ident,
                )
            if target not in known:
                raise InvalidInput(
                    "superseded_by",
                    f"{target!r} is not an entry of the file or of namespace "
                    f"{self.namespace!r}",
                    line=lines[ident],
                    id=ident,
                )

    def _read_jsonl(
        self, source: Source, replace: bool, keep_provenance: bool = False
    ) -> tuple[dict[str, dict[str, Any]], dict[str, int], builtins.list[str]]:
        """The file's entries by id (checked), each id's line, and the
        lines' warnings (``line N: ...``)."""
        if isinstance(source, (str, os.PathLike)):
            try:
                with open(source, encoding="utf-8", newline="") as file:
                    text = file.read()
            except (OSError, UnicodeDecodeError) as exc:
                raise InvalidInput("source", f"cannot read {source}: {exc}") from None
        else:
            text = source.read()
        entries: dict[str, dict[str, Any]] = {}
        lines: dict[str, int] = {}
        warnings: builtins.list[str] = []
        # JSONL lines end at "\n" only: str.splitlines would also split at
        # U+0085 or U+2028 inside a string, which export writes unescaped.
        for number, line in enumerate(text.split("\n"), 1):
            if not line.strip():
                continue
            try:
                value = json.loads(line)
            except ValueError as exc:
                raise InvalidInput(
                    None, f"not valid JSON: {exc}", line=number
                ) from None
            except RecursionError:
                raise InvalidInput(
                    None,
                    f"is nested too deeply to read (an entry may nest at most "
                    f"{_MAX_DEPTH} levels)",
                    line=number,
                ) from None
            if not isinstance(value, dict):
                raise InvalidInput(
                    None, f"must be a JSON object, got {_json_kind(value)}", line=number
                )
            value.setdefault("id", _new_id())
            if not keep_provenance:
                self._stamp_new(value)
            try:
                warnings += [f"line {number}: {w}" for w in self._check(value)]
            except InvalidInput as exc:
                raise InvalidInput(
                    exc.field, exc.message, line=number, id=str(value.get("id"))
                ) from None
            if value.get("scope") == _ALWAYS and not self.writer.pin:
                raise NotGranted(
                    "scope",
                    "an always-scope entry needs the 'pin' grant, which writer "
                    f"{self.writer.name!r} does not hold; nothing was written",
                    grant="pin",
                    id=str(value.get("id")),
                    line=number,
                )
            ident = value["id"]
            if ident in entries and not replace:
                raise InvalidInput(
                    "id",
                    f"duplicate id {ident!r} on lines {lines[ident]} and {number}",
                    line=number,
                    id=ident,
                )
            entries.pop(ident, None)  # the later line keeps its place and line
            entries[ident] = value
            lines[ident] = number
        return entries, lines, warnings


# A list cursor: 8 random bytes, the row's position masked by a pad drawn
# from them, and a tag binding both to the namespace, all keyed by the
# database's secret (``poolsplit_secrets``). It reveals nothing (not the
# position, which counts every namespace's rows); another namespace's or
# database's is refused, and every process on the database accepts it.
_CURSOR_BYTES: Final = 24
_CURSOR_SECRET: Final = "list cursor"


def _keyed(key: bytes, label: bytes, *parts: bytes) -> bytes:
    return hmac.new(key, label + b"\x00".join(parts), hashlib.sha256).digest()[:8]


def _cursor(key: bytes, namespace: str, seq: int) -> str:
    """The ``next_cursor`` standing for the position after row ``seq``."""
    nonce = os.urandom(8)
    pad = _keyed(key, b"pad", nonce, namespace.encode())
    masked = bytes(a ^ b for a, b in zip(seq.to_bytes(8, "big"), pad))
    tag = _keyed(key, b"tag", nonce, masked, namespace.encode())
    return base64.urlsafe_b64encode(nonce + masked + tag).decode("ascii")


def _cursor_position(key: bytes, namespace: str, cursor: object) -> int:
    """The position a ``next_cursor`` of this database and namespace stands for.

    Raises:
        InvalidInput: anything else (another namespace's cursor, another
            database's, an edited one).
    """
    raw = b""
    if isinstance(cursor, str) and cursor.isascii():
        try:
            raw = base64.urlsafe_b64decode(cursor.encode("ascii"))
        except ValueError:
            raw = b""
    if len(raw) == _CURSOR_BYTES:
        nonce, masked, tag = raw[:8], raw[8:16], raw[16:]
        if hmac.compare_digest(
            tag, _keyed(key, b"tag", nonce, masked, namespace.encode())
        ):
            pad = _keyed(key, b"pad", nonce, namespace.encode())
            return int.from_bytes(bytes(a ^ b for a, b in zip(masked, pad)), "big")
    raise InvalidInput(
        "cursor",
        f"must be a next_cursor that list gave in this namespace, got "
        f"{_short(cursor)}; list again with no cursor",
    )


def _replace_file(path: str, text: str) -> None:
    """Write ``text`` to ``path`` atomically (temp file beside it, fsync,
    rename); StoreUnavailable ``cannot write export`` on any OSError."""
    temporary = f"{path}.{uuid.uuid4().hex[:8]}.tmp"
    try:
        try:
            with open(temporary, "x", encoding="utf-8") as file:
                file.write(text)
                file.flush()
                os.fsync(file.fileno())
            if os.path.exists(path):
                shutil.copymode(path, temporary)
            os.replace(temporary, path)
        except BaseException:
            if os.path.exists(temporary):
                os.remove(temporary)
            raise
    except OSError as exc:
        raise StoreUnavailable("cannot write export", path, str(exc)) from None


def _version(ident: str, version: Version) -> dict[str, Any]:
    """One version as ``Store.history`` returns it."""
    entry = None
    if version.body is not None:
        entry = _readable(Stored(version.seq or 0, ident, None, version.body))
    return {
        "version": version.version,
        "operation": version.operation,
        "entry": entry,
        "by": version.by,
        "at": version.at,
    }


def _explain_tail(
    unused: Sequence[str], skipped: Sequence[Skipped], summary: bool
) -> str:
    """explain's closing lines: the default pools left out, the rows skipped."""
    text = ""
    if unused:
        text += f"default pools with no entry yet (not shown): {', '.join(unused)}\n"
    if skipped and summary:
        text += f"\nrows left out: {len(skipped)} (summary=False lists them)\n"
    elif skipped:
        lines = [f"- {s.id}: {s.reason}" for s in skipped]
        text += "\nrows left out:\n" + "\n".join(lines) + "\n"
    return text


class Loadable(NamedTuple):
    """What :func:`loadable` found in stored values."""

    entries: list[dict[str, Any]]  # valid, active, admitted by some pool
    types: frozenset[str]  # types of the valid active entries
    skipped: list[Skipped]
    always_skipped: list[Skipped]  # of ``skipped``: the always-scope ones
    warnings: list[str]


@dataclass
class _Skips:
    """The values one :func:`loadable` call leaves out, each named by its id."""

    ids: Sequence[str] | None
    scopes: Sequence[str | None] | None
    skipped: list[Skipped] = dataclasses.field(default_factory=list)
    always_skipped: list[Skipped] = dataclasses.field(default_factory=list)

    def ident(self, index: int, value: object) -> str:
        if self.ids is not None:
            return self.ids[index]
        return str(value.get("id")) if isinstance(value, Mapping) else f"#{index}"

    def skip(self, index: int, value: object, reason: str) -> None:
        """Skip a value, in ``always_skipped`` too when its body or its
        scope column says always."""
        item = Skipped(self.ident(index, value), reason)
        self.skipped.append(item)
        scope = value.get("scope") if isinstance(value, Mapping) else None
        if _ALWAYS in (scope, None if self.scopes is None else self.scopes[index]):
            self.always_skipped.append(item)

    def not_admitted(self, index: int, value: object, kind: str) -> str:
        """Name a valid always-scope entry of a type no pool admits in
        ``always_skipped`` (it may be a correction); the warning saying so."""
        self.always_skipped.append(
            Skipped(self.ident(index, value), f"type: no pool admits {kind!r}")
        )
        return (
            f"always-scope entry {self.ident(index, value)!r} has type "
            f"{kind!r}, which no pool admits; it is not loaded"
        )


def _active_objects(
    values: Sequence[object], skips: _Skips
) -> tuple[list[int], list[dict[str, Any]]]:
    """The indexes of the active entries among ``values``, and the entries
    (two lists: no pair to allocate per row); a value that cannot be an
    entry at all (:func:`_unreadable`) is skipped."""
    indexes: list[int] = []
    parsed: list[dict[str, Any]] = []
    for index, value in enumerate(values):
        reason = _unreadable(value)
        if reason is not None:
            skips.skip(index, value if isinstance(value, Mapping) else None, reason)
        elif isinstance(value, dict):  # a parsed row (no ABC check)
            if default_is_active(value):
                indexes.append(index)
                parsed.append(value)
        elif isinstance(value, Mapping) and default_is_active(value):
            indexes.append(index)
            parsed.append(dict(value))
    return indexes, parsed


def _validation(
    entries: Sequence[Mapping[str, Any]],
) -> tuple[dict[int, list[str]], list[str]]:
    """``poolsplit.validate``'s errors per position (each skips its entry),
    and its warnings about the scope of an always-scope entry."""
    reasons: dict[int, list[str]] = {}
    warnings: list[str] = []
    for problem in poolsplit.validate(entries):
        if problem.severity == "error":
            reasons.setdefault(problem.index, []).append(
                f"{problem.field}: {problem.message}"
            )
        elif (
            problem.field == "scope" and entries[problem.index].get("scope") == _ALWAYS
        ):
            warnings.append(f"scope: {problem.message}")
    return reasons, warnings


def _admitted_types(pools: Sequence[Pool] | None) -> frozenset[str] | None:
    """The types ``pools`` admit; None when none are given or one admits all."""
    if pools is not None and all(p.types is not None for p in pools):
        return frozenset(t for p in pools for t in p.types or ())
    return None


def loadable(
    values: Sequence[object],
    *,
    pools: Sequence[Pool] | None = None,
    ids: Sequence[str] | None = None,
    scopes: Sequence[str | None] | None = None,
) -> Loadable:
    """The one rule for entries read back: which can load, which are skipped.

    Used by ``Store.recall`` and the framework adapters. A value that is not
    an object (or is the ``{"id", "unreadable"}`` marker of ``get``/``list``),
    has a ``type`` that is not a str, or fails ``poolsplit.validate`` is
    skipped with its reason, never fatal to the other entries; an
    always-scope one (by its body or by ``scopes``, the storage's scope
    column) is also in ``always_skipped``, for :func:`not_loaded`. Inactive
    entries are left out silently. With ``pools`` that all name types, an
    entry of a type none admits is left out; an always-scope one is warned
    about and, as it may be a correction, also in ``always_skipped`` (named
    in the text, not in ``skipped``: the row itself is valid). ``ids``
    names each value in reports (default: its ``id``). Cost: O(n).
    """
    skips = _Skips(ids, scopes)
    indexes, parsed = _active_objects(values, skips)
    reasons, warnings = _validation(parsed)
    admitted = _admitted_types(pools)
    entries = []
    types = set()
    for position, index in enumerate(indexes):
        value = parsed[position]
        if position in reasons:
            skips.skip(index, value, "; ".join(reasons[position]))
            continue
        if value.get(QUARANTINED) is True and value.get("scope") == _ALWAYS:
            skips.skip(index, value, _QUARANTINED_ALWAYS)
            continue
        kind = value.get("type", "note")
        types.add(kind)
        if admitted is not None and kind not in admitted:
            if value.get("scope") == _ALWAYS:
                warnings.append(skips.not_admitted(index, value, kind))
            continue
        entries.append(value)
    return Loadable(
        entries, frozenset(types), skips.skipped, skips.always_skipped, warnings
    )


_QUARANTINED_ALWAYS: Final = (
    "scope: a quarantined entry (its writer is not vouched for) is never "
    "always-scope; a writer holding pin must update it to vouch for it"
)


def _unreadable(value: object) -> str | None:
    """Why a stored value cannot be an entry at all, or None."""
    # (type() first: a parsed row is a dict, and the ABC check costs more)
    if not (type(value) is dict or isinstance(value, Mapping)):
        return f"must be a JSON object, got {_kind_of(value)}"
    # the marker of get/list, {"id", "unreadable"} (no set built per row)
    if len(value) == 2 and "id" in value and "unreadable" in value:
        return str(value["unreadable"])
    if not isinstance(value.get("type", "note"), str):
        return f"type: must be a str, got {type(value['type']).__name__}"
    return None


def _kind_of(value: object) -> str:
    if isinstance(value, (list, str, bool, int, float)) or value is None:
        return _json_kind(value)
    return type(value).__name__


def _load(
    version: object, rows: Sequence[Stored], pools: Sequence[Pool] | None
) -> _Snapshot:
    """A snapshot of these candidate rows, checked by :func:`loadable`."""
    snap = _Snapshot(pools, ranking="core")
    snap.apply((), rows)
    snap.signal = version
    return snap


# ===========================================================================
# open_store
# ===========================================================================


def open_store(
    url: str | os.PathLike[str],
    *,
    namespace: str = "default",
    pools: Sequence[Pool] | None = None,
    token_counter: TokenCounter = default_token_counter,
    max_entry_tokens: int = DEFAULT_MAX_ENTRY_TOKENS,
    ranking: str = "lexical",
    pool_size: int = DEFAULT_POOL_SIZE,
    read_url: str | None = None,
    writer: str | None = None,
) -> Store:
    """Open (and create if needed) a store; one namespace of one database.

    ``writer``: the name stamped as ``written_by`` on what this store
    writes (default: the OS user's name); the store holds every grant
    (``Store.acting_as`` gives one of fewer).

    ``url``: a file path (str or ``pathlib.Path``), ``sqlite:///relative`` or
    ``sqlite:////absolute``, ``:memory:``, or ``postgresql://...`` /
    ``postgres://...`` (needs the ``postgres`` extra); either URL takes
    ``?busy_timeout=MS`` (see :func:`parse_url`). ``pools=None`` means
    :data:`DEFAULT_POOLS` plus the spill-over pool. ``ranking``: how a
    recall ranks the entries of a pool, one of :data:`RANKINGS`
    (memory/README.md's "Ranking").

    Every store of a process on one database shares its connections
    (memory/README.md's "Many tenants"): on PostgreSQL one pool of at most
    ``pool_size`` connections (4 by default; stores opened with another
    size get a pool of their own), on a SQLite file one writer and one
    reader; ``:memory:`` is a database of its own each time. The
    connections close with the process's last store on the database.
    ``read_url`` (PostgreSQL only): a streaming-replication standby of
    ``url`` that serves the reads once it has replayed the namespace's last
    write, so that a recall still sees every acknowledged write (else the
    primary serves them); writes and the warm recall's version check go to
    ``url``.

    Raises:
        InvalidInput: an empty or unsupported url, a bad namespace, pools,
            max_entry_tokens, ranking, pool_size or read_url.
        StoreUnavailable: the database cannot be opened (one line naming the
            cause: missing folder, not a database, read-only, unreachable).
    """
    if isinstance(url, os.PathLike):
        url = os.fspath(url)
    if not isinstance(url, str):
        raise InvalidInput("url", f"must be a str, got {type(url).__name__}")
    if not url.strip():
        raise InvalidInput(
            "url",
            "must be a file path, sqlite:///path, :memory: or postgresql://..., "
            f"got {url!r}",
        )
    _require_name("namespace", namespace)
    checked_pools = _check_pools(pools)
    split_quarantine(checked_pools)  # a quarantine pool naming types: refused
    chosen_writer = Writer(default_writer_name() if writer is None else writer)
    if type(max_entry_tokens) is not int or max_entry_tokens < 1:
        raise InvalidInput(
            "max_entry_tokens", f"must be a positive int, got {max_entry_tokens!r}"
        )
    if not callable(token_counter):
        raise InvalidInput("token_counter", "must be callable")
    if ranking not in RANKINGS:
        raise InvalidInput("ranking", f"must be one of {RANKINGS}, got {ranking!r}")
    if ranking == "semantic":
        try:
            Embedder.shared()
        except ImportError as exc:
            raise InvalidInput("ranking", str(exc)) from None
    if type(pool_size) is not int or pool_size < 1:
        raise InvalidInput("pool_size", f"must be a positive int, got {pool_size!r}")
    target = parse_url(url)
    if read_url is not None and (
        target.kind != "postgresql"
        or not isinstance(read_url, str)
        or not read_url.startswith(_POSTGRES_SCHEMES)
    ):
        raise InvalidInput(
            "read_url",
            f"must be a postgresql:// standby of a postgresql:// url, got {read_url!r}",
        )
    return Store(
        _backend(target, url, pool_size, read_url),
        namespace=namespace,
        pools=checked_pools,
        token_counter=token_counter,
        max_entry_tokens=max_entry_tokens,
        ranking=ranking,
        writer=chosen_writer,
    )


def _backend(target: Target, url: str, pool_size: int, read_url: str | None) -> Handle:
    """This process's backend of the database (one per database: see
    open_store), or a new one for ``:memory:``."""
    if target.kind == "postgresql":
        try:
            standby = None if read_url is None else parse_url(read_url).where
        except InvalidInput as exc:
            raise InvalidInput("read_url", exc.message) from None
        return shared_backend(
            (target.kind, target.where, target.busy_ms, pool_size, standby),
            lambda: PostgresBackend(
                target.where,
                busy_ms=target.busy_ms,
                pool_size=pool_size,
                read_url=standby,
            ),
        )

    def sqlite() -> Backend:
        return SQLiteBackend(target.where, busy_ms=target.busy_ms, url=url)

    if target.where == _MEMORY:
        return own_backend(sqlite())
    # A file is one database whatever the pool size (one writer, one reader).
    where = os.path.realpath(target.where)
    return shared_backend((target.kind, where, target.busy_ms, 0, None), sqlite)


def set_snapshot_budget(nbytes: int) -> None:
    """Keep this process's snapshots (every store's loaded candidates)
    within about ``nbytes`` (256 MiB by default; memory/README.md's "Many
    tenants"): the least recently used leaves first and is read again by
    its store's next recall.

    Raises:
        InvalidInput: ``nbytes`` is not a positive int.
    """
    if type(nbytes) is not int or nbytes < 1:
        raise InvalidInput("nbytes", f"must be a positive int, got {nbytes!r}")
    snapshots.budget = nbytes


class Target(NamedTuple):
    """Where a url points: ``kind`` ``"sqlite"`` or ``"postgresql"``,
    ``where`` the file path (``":memory:"``) or the connection URL without
    ``busy_timeout``, and the busy timeout in milliseconds."""

    kind: str
    where: str
    busy_ms: int


_POSTGRES_SCHEMES: Final = ("postgresql://", "postgres://")
_MEMORY: Final = ":memory:"


def parse_url(url: str) -> Target:
    """The one reading of a store url (open_store and the MCP server's
    ephemeral check both call it).

    ``sqlite:///relative.db`` and ``sqlite:////absolute.db`` (SQLAlchemy's
    rule), ``:memory:`` or a plain path as it is, ``postgresql://`` or
    ``postgres://`` URLs. ``?busy_timeout=MS`` (the only parameter of a
    ``sqlite:`` URL; taken out of a PostgreSQL URL before it is passed on)
    is how long a call waits for a lock another connection holds before it
    fails with ``database is locked``, 10,000 ms by default.

    Raises:
        InvalidInput: an unsupported scheme, a URL that cannot be read, a
            bad ``busy_timeout``.
    """
    if url.startswith(_POSTGRES_SCHEMES):
        try:
            parts = urlsplit(url)
            parts.port  # noqa: B018 (reading it checks it)
        except ValueError as exc:
            raise InvalidInput("url", f"cannot be read: {exc}") from None
        kept = []
        busy = DEFAULT_BUSY_MS
        for item in parts.query.split("&") if parts.query else []:
            name, _, value = item.partition("=")
            if name == "busy_timeout":
                busy = _busy_ms(value, url)
            else:
                kept.append(item)
        where = urlunsplit(parts._replace(query="&".join(kept)))
        return Target("postgresql", where, busy)
    if "://" in url and not url.startswith("sqlite:"):
        scheme = url.split("://", 1)[0]
        raise InvalidInput(
            "url",
            f"unsupported scheme {scheme!r}; expected a file path, sqlite:///path, "
            ":memory: or postgresql://...",
        )
    if not url.startswith("sqlite:"):
        return Target("sqlite", url, DEFAULT_BUSY_MS)
    if not url.startswith("sqlite:///"):
        raise InvalidInput(
            "url", f"must be sqlite:///relative or sqlite:////absolute, got {url!r}"
        )
    path, _, query = url[len("sqlite:///") :].partition("?")
    busy = DEFAULT_BUSY_MS
    for name, values in parse_qs(query, keep_blank_values=True).items():
        if name != "busy_timeout":
            raise InvalidInput(
                "url", f"the only query parameter is busy_timeout=MS, got {query!r}"
            )
        busy = _busy_ms(values[-1], url)
    if not path:
        raise InvalidInput("url", f"names no file, got {url!r}")
    return Target("sqlite", path, busy)


def _busy_ms(value: str, url: str) -> int:
    if not (value.isdigit() and value.isascii()):
        raise InvalidInput(
            "url", f"busy_timeout must be a whole number of milliseconds, got {value!r}"
        )
    return int(value)


def is_ephemeral(url: str) -> bool:
    """Whether a store at this url lives in this process only (``:memory:``
    in any spelling ``parse_url`` reads).

    Raises:
        InvalidInput: the url cannot be read (see ``parse_url``).
    """
    target = parse_url(url)
    return target.kind == "sqlite" and target.where == _MEMORY


def _check_pools(pools: Sequence[Pool] | None) -> tuple[Pool, ...] | None:
    """Given pools checked by poolsplit's own rule (retrieve on no entries)."""
    if pools is None:
        return None
    if isinstance(pools, (str, bytes)) or not isinstance(pools, Iterable):
        raise InvalidInput(
            "pools", f"must be a list of Pool or None, got {type(pools).__name__}"
        )
    chosen = tuple(pools)
    if not chosen:
        raise InvalidInput("pools", "must not be empty (None means the default pools)")
    try:
        poolsplit.retrieve_pools([], chosen)
    except (TypeError, ValueError) as exc:
        raise InvalidInput("pools", str(exc)) from None
    return chosen
