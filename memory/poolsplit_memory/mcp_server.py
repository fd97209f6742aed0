"""poolsplit-mcp: the memory store served to MCP clients over stdio.

    poolsplit-mcp [--db URL] [--namespace NAME] [--pools FILE] [--ephemeral]
    poolsplit-mcp reindex [--db URL] [--namespace NAME]
    poolsplit-mcp --version
    poolsplit-mcp export|import|convert ...   (poolsplit_memory._transfer)

Without ``--db`` the store is ``$XDG_DATA_HOME/poolsplit/memory.db`` (else
``~/.local/share/poolsplit/memory.db``), its folder created, the path printed
on standard error. A store that would not outlive the process (``:memory:``,
an empty value such as an unset ``${VAR}`` in a client's configuration) is
refused unless ``--ephemeral`` asks for it. A pools file goes through
``poolsplit.load_pools`` (the core command line's rules and messages). A bad
pools file or a ``--db`` that cannot be opened is one line on standard error
and exit status 2, before anything is served.

Tools (``mcp`` 2.x ``MCPServer``), each with an input and an output schema
and annotations; each result's text is the JSON of its structured content,
except ``recall`` and ``explain``, whose text is what the model reads:

- ``remember(content, type="note", scope=None, tags=[], project=None,
  base_priority=None, supersedes=None, key=None)`` -> ``{"id", "warnings",
  "possible_supersedes"}``; the same content, type and scope as an active
  entry writes nothing and returns that entry's id with an ``idempotent``
  warning; ``possible_supersedes`` lists the active entries that look like
  an earlier version of the new one (none is retired)
- ``recall(message, tags=[], project=None, tz=None, as_of=None)`` -> the
  pools in the frame of ``_frame`` (a line saying the notes are stored
  data, not instructions; each entry as ``- [id] DATE by WRITER:
  content``), then every warning and skipped row (a plain sentence when
  nothing is stored; ``as_of``: as the memory was then);
  ``{"pools": {name: [ids]}, "skipped": [{"id", "reason"}], "warnings"}``
- ``get(id)`` -> ``{"entry": {...} or null}``
- ``history(id)`` -> ``{"versions": [{"version", "operation", "entry",
  "by", "at"}]}``, oldest first (``entry`` null for a forget's tombstone
  and for every version of a forgotten entry)
- ``list(type=None, limit=50, cursor=None)`` -> ``{"entries", "next_cursor"}``
- ``update(id, content=None, type=None, scope=None, tags=None, project=None,
  base_priority=None)`` -> ``{"entry", "warnings"}``: an argument left out or
  sent as ``null`` is unchanged (a strict client sends every field);
  ``scope="context"``, ``tags=[]`` and ``project=""`` clear; taking an
  always-scope entry out of that scope is a ``scope:`` warning
- ``forget(id)`` -> ``{"forgotten": true or false, "warnings": [...]}``
- ``explain(message, tags=[], project=None, ids=None, types=None,
  outcomes=None, summary=true)`` -> the explain table, at most
  ``EXPLAIN_LIMIT`` characters (a longer one is cut at a line and says how
  to ask for less); ``{"table": ..., "cut": bool}``

``scope`` is ``"always"`` or ``"context"`` in any case (``"Always"`` is
always); another value is refused naming the two. Each description is
written for the model that reads it: the number, not a constant's name.

Resources: each entry is ``memory://{namespace}/{id}`` (a resource
template), listed a page of 50 at a time (``resources/list`` with its
cursor, as ``list``) and read as its JSON; a request reaches only its own
namespace (over HTTP the token's), any other URI is "not found". The
``recall`` prompt (argument ``message``) is recall's text as one user
message: MCP prompt messages are ``user`` or ``assistant`` (no system
role), and an assistant message would present the notes as the model's
own words; the frame's first line says they are stored data.

Arguments: a number may be sent as a string that spells it (``"9"``), a
list as a string that spells it in JSON (``'["a"]'``); any other string for
a number or a list is refused, and a string parameter keeps the string as
sent (``"null"`` is the four letters). Every failure is a tool error of one
line: ``field: what is wrong`` for bad input (an unknown argument or a wrong
type too, checked before the tool runs, so nothing is written), the cause
for an operational failure (``database unreachable``, ``database is
locked``, ``disk full``...), and ``internal error: Type: message`` for
anything unexpected (its traceback on stderr). A request line the SDK cannot
read (invalid UTF-8, invalid JSON, a lone surrogate, nesting past what the
SDK parses) is answered with one JSON-RPC error, never ignored.

The server declares the logging capability: ``logging/setLevel`` sets the
lowest level sent (default ``warning``), and each warning a write or recall
returns is also sent as a ``warning`` log notification.
"""

from __future__ import annotations

import functools
import inspect
import json
import os
import sys
import traceback
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Annotated, Any, Callable, Optional, Union
from urllib.parse import quote, unquote

import poolsplit

from poolsplit_memory import InvalidInput, Store, StoreError, __version__, open_store
from poolsplit_memory._args import PROG as _PROG
from poolsplit_memory._args import build_parser
from poolsplit_memory._cli import choose_db, default_db_path, subcommand
from poolsplit_memory._when import time_zone
from poolsplit_memory.store import (
    REMEMBER_DESCRIPTION,
    parse_url,
    set_snapshot_budget,
)

try:
    import anyio
    from mcp.server.connection import allowed_log_levels
    from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
    from mcp.server.mcpserver import Context, MCPServer
    from mcp.server.mcpserver.tools import Tool
    from mcp.shared.exceptions import MCPError
    from mcp_types import (
        INTERNAL_ERROR,
        INVALID_PARAMS,
        CallToolResult,
        EmptyResult,
        GetPromptRequestParams,
        GetPromptResult,
        ListPromptsResult,
        ListResourcesResult,
        ListResourceTemplatesResult,
        LoggingMessageNotification,
        LoggingMessageNotificationParams,
        PaginatedRequestParams,
        Prompt,
        PromptArgument,
        PromptMessage,
        ReadResourceRequestParams,
        ReadResourceResult,
        Resource,
        ResourceTemplate,
        SetLevelRequestParams,
        TextContent,
        TextResourceContents,
        ToolAnnotations,
    )
    from pydantic import Field, WithJsonSchema, WrapValidator
    from typing_extensions import TypedDict  # pydantic's TypedDict before 3.12

    from poolsplit_memory._arguments import _CheckArguments, _tool_error
    from poolsplit_memory._stdio import run_stdio

    _MCP_MISSING: ModuleNotFoundError | None = None
except ModuleNotFoundError as exc:  # the mcp extra is not installed: main says so
    from typing import TypedDict

    _MCP_MISSING = exc

__all__ = [
    "ENTRY_URI_TEMPLATE",
    "EXPLAIN_LIMIT",
    "StoreResolver",
    "build_server",
    "default_db_path",
    "entry_uri",
    "main",
]

# This module's import name, also when it runs as ``python -m`` (then __main__).
_MODULE = "poolsplit_memory.mcp_server"
_INSTRUCTIONS = (
    "Call recall with the user's message before answering and follow what it "
    "returns; remember corrections with type='correction' and scope='always'."
)
# The most characters explain returns (text and structured copy alike): about
# 4,000 tokens, a page a chat client shows whole. A longer table is cut at a
# line, and says so and how to ask for less.
EXPLAIN_LIMIT = 16_000

# How a tool finds its store, once per request: stdio serves the one store
# the server holds; a transport with tenants maps the request to theirs.
StoreResolver = Callable[["Context[Any, Any]"], Store]


# ---------------------------------------------------------------------------
# Results and errors, one shape for every tool


def _result(structured: dict[str, Any], text: str | None = None) -> CallToolResult:
    """A tool result: the structured content, and text (its JSON by default)."""
    if text is None:
        text = json.dumps(structured, ensure_ascii=False, sort_keys=True)
    return CallToolResult(
        content=[TextContent(type="text", text=text)], structured_content=structured
    )


def _error_text(exc: Exception) -> str:
    """One line naming what went wrong: the field, the cause, or the type.

    Bad input is the caller's to fix and stays off the log; an operational
    failure is also logged on stderr in the same line, a crash with its
    traceback.
    """
    if isinstance(exc, InvalidInput):  # `field: what is wrong`
        return str(exc)
    if isinstance(exc, StoreError):  # StoreUnavailable: the cause, one line
        # over HTTP the tenant's line leaves the database out (_http.TenantFacing)
        print(f"{_PROG}: {getattr(exc, 'operator_line', exc)}", file=sys.stderr)
        return str(exc)
    traceback.print_exc(file=sys.stderr)
    return f"internal error: {type(exc).__name__}: {exc}"


def _guarded(fn: Callable[..., CallToolResult]) -> Callable[..., CallToolResult]:
    """``fn`` whose every exception becomes a one-line tool error.

    The SDK would report an exception as ``Error executing tool X`` (the cause
    on the server's stderr only); a result with ``is_error`` passes unchanged.
    ``functools.wraps`` keeps the signature the SDK builds the schema from.
    """

    @functools.wraps(fn)
    def tool(*args: Any, **kwargs: Any) -> CallToolResult:
        try:
            return fn(*args, **kwargs)
        except Exception as exc:
            return _tool_error(_error_text(exc))

    return tool


@dataclass(frozen=True)
class _Held:
    """What the server holds for its tools: the resolver of each request's
    store, and the time zone a recall reads its message in when the call
    names none (``--tz``; None: UTC)."""

    resolve: StoreResolver
    tz: str | None


def _store(ctx: Context[Any, Any]) -> Store:
    """The store of this request, from the resolver the server holds."""
    held: _Held = ctx.request_context.lifespan_context
    return held.resolve(ctx)


def _tz(ctx: Context[Any, Any], tz: str | None) -> str | None:
    """The call's time zone, else the server's default."""
    held: _Held = ctx.request_context.lifespan_context
    return held.tz if tz is None else tz


# ---------------------------------------------------------------------------
# Argument types: what the schemas advertise is what the tools take


_SCOPES = ("always", "context")


def _none_or(value: Any, handler: Callable[[Any], Any]) -> Any:
    return None if value is None else handler(value)


if TYPE_CHECKING:
    _Text = Optional[str]
    _Scope = Optional[str]
    _Number = Optional[Union[int, float]]
    _Outcomes = Optional[list[str]]
elif _MCP_MISSING is None:
    # A str that may be null, declared as ``str`` so that the SDK's argument
    # pre-parse (which reads a string as JSON for any other annotation) keeps
    # the string "null" a string.
    _Text = Annotated[
        str,
        WrapValidator(_none_or),
        WithJsonSchema({"anyOf": [{"type": "string"}, {"type": "null"}]}),
    ]
    # The store reads the scope (any case: "Always" is always) and names the
    # accepted values when it refuses one; the schema lists them.
    _Scope = Annotated[
        str,
        WrapValidator(_none_or),
        WithJsonSchema({"anyOf": [{"enum": list(_SCOPES)}, {"type": "null"}]}),
    ]
    # The store reads each outcome in any case; the schema lists them.
    _Outcomes = Annotated[
        Optional[list[str]],
        WithJsonSchema(
            {
                "anyOf": [
                    {"type": "array", "items": {"enum": list(poolsplit.OUTCOMES)}},
                    {"type": "null"},
                ]
            }
        ),
    ]
    # int before float, so that 9 stays 9 (a float annotation made it 9.0).
    _Number = Annotated[
        Optional[Union[int, float]],
        WithJsonSchema({"anyOf": [{"type": "number"}, {"type": "null"}]}),
    ]

_NUMBER_NOTE = ' (a number, or a string spelling one: "9")'
_TZ_NOTE = (
    'the user\'s time zone, an IANA name such as "Europe/Paris": times in the '
    "message (\"yesterday\") are the user's; null: the server's (UTC unless "
    "started with --tz)"
)
_LIST_NOTE = " (a list, or a JSON string of one: '[\"a\"]')"
_AS_OF_NOTE = (
    "recall as the memory was at this time: an ISO 8601 time with its offset "
    '("2026-12-07T08:30:00Z"); null: now'
)


# ---------------------------------------------------------------------------
# Output schemas


class RememberResult(TypedDict):
    id: str
    warnings: list[str]
    possible_supersedes: list[str]


class SkippedRow(TypedDict):
    id: str
    reason: str


class RecallResult(TypedDict):
    pools: dict[str, list[str]]
    skipped: list[SkippedRow]
    warnings: list[str]


class GetResult(TypedDict):
    entry: dict[str, Any] | None


class ListResult(TypedDict):
    entries: list[dict[str, Any]]
    next_cursor: str | None


class UpdateResult(TypedDict):
    entry: dict[str, Any]
    warnings: list[str]


class ForgetResult(TypedDict):
    forgotten: bool
    count: int
    warnings: list[str]


class ExplainResult(TypedDict):
    table: str
    cut: bool


class HistoryVersion(TypedDict):
    version: int
    operation: str
    entry: dict[str, Any] | None
    by: str | None
    at: str


class HistoryResult(TypedDict):
    versions: list[HistoryVersion]


# ---------------------------------------------------------------------------
# The tools: module-level functions over the store of each request


@_guarded
def remember(
    ctx: Context[Any, Any],
    content: Annotated[str, Field(description="what to remember")],
    type: Annotated[
        str,
        Field(
            description="entry type: correction, task, fact, skill, growth, "
            "episode, or note (the default)"
        ),
    ] = "note",
    scope: Annotated[
        _Scope,
        Field(
            description='"always": loaded on every recall, outside every cap '
            '(a rule the user gave that must apply every turn); "context" or '
            "null (the default): loaded when it ranks for the message"
        ),
    ] = None,
    tags: Annotated[list[str], Field(description="tags" + _LIST_NOTE)] = [],  # noqa: B006
    project: Annotated[_Text, Field(description="project")] = None,
    base_priority: Annotated[
        _Number, Field(description="priority, default 5" + _NUMBER_NOTE)
    ] = None,
    supersedes: Annotated[
        _Text, Field(description="id of the active entry this one replaces")
    ] = None,
    key: Annotated[
        _Text,
        Field(
            description="a client key: a retry with the same key and content "
            "returns the first call's id and writes nothing"
        ),
    ] = None,
) -> Annotated[CallToolResult, RememberResult]:
    written = _store(ctx).remember(
        content,
        type=type,
        scope=scope,
        tags=tuple(tags),
        project=project,
        base_priority=base_priority,
        supersedes=supersedes,
        key=key,
    )
    return _result(
        {
            "id": written.id,
            "warnings": list(written.warnings),
            "possible_supersedes": list(written.possible_supersedes),
        }
    )


@_guarded
def recall(
    ctx: Context[Any, Any],
    message: Annotated[str, Field(description="the user's message")],
    tags: Annotated[
        list[str], Field(description="tags of the current context" + _LIST_NOTE)
    ] = [],  # noqa: B006 (the schema's default; never mutated)
    project: Annotated[_Text, Field(description="the current project")] = None,
    tz: Annotated[_Text, Field(description=_TZ_NOTE)] = None,
    as_of: Annotated[_Text, Field(description=_AS_OF_NOTE)] = None,
) -> Annotated[CallToolResult, RecallResult]:
    """The entries to inject for this context, per pool, each with its id
    ([id]) to update or forget it, then any warnings. With as_of: what
    recall would have returned at that time."""
    got = _store(ctx).recall(
        message,
        tags=tuple(tags),
        project=project,
        tz=_tz(ctx, tz),
        as_of=_none_or(as_of, _moment_arg),
    )
    return _result(got.to_dict(), got.chat_text())


def _moment_arg(text: str) -> datetime:
    """An ``as_of`` argument: an ISO 8601 time with its offset (``Z`` too).

    Raises:
        InvalidInput: anything else, naming ``as_of``.
    """
    spelt = text.strip()
    if spelt[-1:] in ("Z", "z"):  # fromisoformat reads "Z" from 3.11 only
        spelt = spelt[:-1] + "+00:00"
    try:
        moment = datetime.fromisoformat(spelt)
    except ValueError:
        moment = None
    if moment is None or moment.tzinfo is None:
        raise InvalidInput(
            "as_of",
            "must be an ISO 8601 time with its offset, such as "
            f"'2026-12-07T09:30:00+01:00' or '2026-12-07T08:30:00Z', got {text!r}",
        )
    return moment


@_guarded
def get(
    ctx: Context[Any, Any],
    id: Annotated[str, Field(description="an entry's id")],
) -> Annotated[CallToolResult, GetResult]:
    """One entry by id, or null when this namespace has none."""
    return _result({"entry": _store(ctx).get(id)})


@_guarded
def history(
    ctx: Context[Any, Any],
    id: Annotated[str, Field(description="an entry's id")],
) -> Annotated[CallToolResult, HistoryResult]:
    """Every version of one entry, oldest first: the entry as it was after
    each operation (remember, update, supersede, import, migrated;
    adopted: a body another tool wrote, when the store first read it), who
    and when; forget leaves a tombstone and no content in any version.
    Empty when this namespace never held the id."""
    return _result({"versions": _store(ctx).history(id)})


@_guarded
def list_(
    ctx: Context[Any, Any],
    type: Annotated[_Text, Field(description="only entries of this type")] = None,
    limit: Annotated[
        int, Field(ge=1, le=500, description="entries per page" + _NUMBER_NOTE)
    ] = 50,
    cursor: Annotated[
        _Text, Field(description="next_cursor of the previous page")
    ] = None,
    scope: Annotated[
        _Scope, Field(description='only "always" or only "context" entries')
    ] = None,
    written_by: Annotated[
        _Text, Field(description="only entries this writer wrote (written_by)")
    ] = None,
) -> Annotated[CallToolResult, ListResult]:
    """Entries in a stable order, a page at a time; each once across pages
    (pass the same filters with a cursor). Each entry shows who wrote it
    and when (written_by, written_at; updated_by, updated_at after a
    change), as the server stamped them."""
    page = _store(ctx).list(
        type=type, limit=limit, cursor=cursor, scope=scope, written_by=written_by
    )
    return _result({"entries": page.entries, "next_cursor": page.next_cursor})


@_guarded
def update(
    ctx: Context[Any, Any],
    id: Annotated[str, Field(description="the entry's id")],
    content: Annotated[_Text, Field(description="new content; null: unchanged")] = None,
    type: Annotated[_Text, Field(description="new type; null: unchanged")] = None,
    scope: Annotated[
        _Scope,
        Field(
            description='"always" (loaded on every recall) or "context" (loaded '
            "when it ranks; removes the scope); null: unchanged"
        ),
    ] = None,
    tags: Annotated[
        list[str] | None,
        Field(description="new tags, [] to remove them; null: unchanged" + _LIST_NOTE),
    ] = None,
    project: Annotated[
        _Text, Field(description='new project, "" to remove it; null: unchanged')
    ] = None,
    base_priority: Annotated[
        _Number,
        Field(
            description="new priority (5 is the default); null: unchanged"
            + _NUMBER_NOTE
        ),
    ] = None,
) -> Annotated[CallToolResult, UpdateResult]:
    """Change fields of one entry. A field left out or null stays as it is;
    clear with scope="context", tags=[] or project="". Taking an
    always-scope entry out of that scope returns a warning. A change that
    would make it the same memory as another active entry is refused
    (forget one of them instead)."""
    updated = _store(ctx).update(
        id,
        content=content,
        type=type,
        scope=scope,
        tags=tags,
        project=project,
        base_priority=base_priority,
    )
    return _result({"entry": updated.entry, "warnings": list(updated.warnings)})


@_guarded
def forget(
    ctx: Context[Any, Any],
    id: Annotated[_Text, Field(description="an entry's id")] = None,
    written_by: Annotated[
        _Text,
        Field(
            description="instead of id: delete every entry this writer wrote "
            "(cleaning up after a compromised token; needs the pin grant)"
        ),
    ] = None,
) -> Annotated[CallToolResult, ForgetResult]:
    """Delete an entry (and those it superseded); false if there is none.
    With written_by instead of id, every entry that writer wrote; count
    says how many entries were deleted."""
    store = _store(ctx)
    result = store.forget(id, written_by=written_by)  # one of them: the store says
    count, forgotten = int(result), bool(result)
    warnings = []
    if store.scrub_pending:
        warnings.append(
            "forget: deleted, but the content stays in the SQLite -wal file "
            "while another connection holds a read open; the server "
            "removes it on its next call after that read ends, or at exit"
        )
    return _result({"forgotten": forgotten, "count": count, "warnings": warnings})


@_guarded
def explain(
    ctx: Context[Any, Any],
    message: Annotated[str, Field(description="the user's message")],
    tags: Annotated[
        list[str], Field(description="tags of the current context" + _LIST_NOTE)
    ] = [],  # noqa: B006 (the schema's default; never mutated)
    project: Annotated[_Text, Field(description="the current project")] = None,
    ids: Annotated[
        list[str] | None, Field(description="only these entries' rows")
    ] = None,
    types: Annotated[
        list[str] | None, Field(description="only rows of these types")
    ] = None,
    outcomes: Annotated[
        _Outcomes,
        Field(
            description="only rows with one of these outcomes: "
            + ", ".join(poolsplit.OUTCOMES)
        ),
    ] = None,
    summary: Annotated[
        bool,
        Field(
            description="true (the default): the count of each outcome, the "
            "pools and the warnings, without a row per entry"
        ),
    ] = True,
    tz: Annotated[_Text, Field(description=_TZ_NOTE)] = None,
) -> Annotated[CallToolResult, ExplainResult]:
    """Why entries were or were not selected, per pool: a summary by
    default; filter by ids, types or outcomes with summary=false for rows.
    At most {limit} characters (a longer table is cut at a line and says
    how to ask for less)."""
    table = _store(ctx).explain(
        message,
        tags=tuple(tags),
        project=project,
        ids=ids,
        types=types,
        outcomes=outcomes,
        summary=summary,
        tz=_tz(ctx, tz),
    )
    text, cut = _bounded(table, EXPLAIN_LIMIT)
    return _result({"table": text, "cut": cut}, text)


def _bounded(text: str, limit: int) -> tuple[str, bool]:
    """``text`` cut at a line to at most ``limit`` characters, the last line
    saying what was cut and how to ask for less; and whether it was cut."""
    if len(text) <= limit:
        return text, False
    lines = text.splitlines(keepends=True)
    note = (
        f"[cut: the table has {len(text):,} characters and {len(lines):,} lines; "
        "the rest is left out. Ask explain for less: summary=true, or ids, "
        "types or outcomes]\n"
    )
    kept, size = [], len(note)
    for line in lines:
        if size + len(line) > limit:
            break
        kept.append(line)
        size += len(line)
    return "".join(kept) + note, True


# The shared guidance, and what only the store does: identical memories.
_REMEMBER = (
    REMEMBER_DESCRIPTION
    + " Saving a memory already stored (the same content, type and scope)"
    ' returns its id with an "idempotent" warning and writes nothing.'
)


def _tools() -> list[Tool]:
    """Each tool, and what it promises a client (MCP tool annotations):
    reading tools change nothing; remember, update and forget repeated with
    the same arguments change nothing more; update overwrites, forget
    deletes. None reaches outside the store."""

    def hints(read: bool, destroys: bool = False) -> ToolAnnotations:
        return ToolAnnotations(
            read_only_hint=read,
            destructive_hint=None if read else destroys,
            idempotent_hint=True,
            open_world_hint=False,
        )

    chosen = (
        (remember, "remember", _REMEMBER, hints(False)),
        (recall, "recall", None, hints(True)),
        (get, "get", None, hints(True)),
        (history, "history", None, hints(True)),
        (list_, "list", None, hints(True)),
        (update, "update", None, hints(False, destroys=True)),
        (forget, "forget", None, hints(False, destroys=True)),
        (explain, "explain", None, hints(True)),
    )
    tools = [
        Tool.from_function(
            fn,
            name=name,
            description=description or _described(fn),
            annotations=annotations,
            structured_output=True,
        )
        for fn, name, description, annotations in chosen
    ]
    for tool in tools:  # the SDK's title is the function's: "list_Arguments"
        tool.parameters["title"] = f"{tool.name} arguments"
    return tools


def _described(fn: Callable[..., Any]) -> str:
    """A tool's description from its docstring, as a model reads it: the
    docstring's indentation removed (``inspect.cleandoc``), each paragraph on
    one line, and ``{limit}`` spelled as the number it stands for."""
    text = inspect.cleandoc(fn.__doc__ or "").format(limit=f"{EXPLAIN_LIMIT:,}")
    return "\n\n".join(" ".join(part.split()) for part in text.split("\n\n"))


# ---------------------------------------------------------------------------
# Logging: logging/setLevel, and each warning sent as a notification

_LEVELS: tuple[str, ...] = (
    "debug",
    "info",
    "notice",
    "warning",
    "error",
    "critical",
    "alert",
    "emergency",
)


class _Logging:
    """The logging capability: the level ``logging/setLevel`` chose (per
    server; stdio has one connection), and the server middleware that sends
    each warning of a tool result as a ``warning`` notification when that
    level allows it (and, on 2026-07-28 connections, the request opted in,
    as the SDK's ``allowed_log_levels`` says)."""

    def __init__(self) -> None:
        self.level = "warning"

    async def set_level(
        self, ctx: ServerRequestContext[Any, Any], params: SetLevelRequestParams
    ) -> EmptyResult:
        self.level = params.level
        return EmptyResult()

    async def __call__(
        self, ctx: ServerRequestContext[Any, Any], call_next: CallNext
    ) -> HandlerResult:
        result = await call_next(ctx)
        if ctx.method == "tools/call" and self.sends("warning", ctx):
            for warning in _warnings_of(result):
                await ctx.session.send_notification(
                    LoggingMessageNotification(
                        params=LoggingMessageNotificationParams(
                            level="warning", logger=_PROG, data=warning
                        )
                    ),
                    related_request_id=ctx.request_id,
                )
        return result

    def sends(self, level: str, ctx: ServerRequestContext[Any, Any]) -> bool:
        allowed = allowed_log_levels(
            ctx.protocol_version, ctx.params and ctx.params.get("_meta")
        )
        return level in allowed and _LEVELS.index(level) >= _LEVELS.index(self.level)


def _warnings_of(result: object) -> list[str]:
    """The ``warnings`` of a tool result, as the wire dict or the model."""
    structured = (
        result.get("structuredContent")
        if isinstance(result, Mapping)
        else getattr(result, "structured_content", None)
    )
    warnings = structured.get("warnings") if isinstance(structured, Mapping) else None
    return (
        [w for w in warnings if isinstance(w, str)]
        if isinstance(warnings, list)
        else []
    )


# ---------------------------------------------------------------------------
# Resources (each entry) and the recall prompt

# An entry as a resource: its namespace and id, each percent-encoded whole.
ENTRY_URI_TEMPLATE = "memory://{namespace}/{id}"
_SCHEME = "memory://"
# Entries per resources/list page: the list tool's default page.
_RESOURCE_PAGE = 50
_MIME = "application/json"


def entry_uri(namespace: str, ident: str) -> str:
    """The resource URI of an entry: ``memory://{namespace}/{id}``, each part
    percent-encoded whole (a ``/`` in an id is ``%2F``)."""
    return f"{_SCHEME}{quote(namespace, safe='')}/{quote(ident, safe='')}"


def _uri_parts(uri: str) -> tuple[str, str] | None:
    """The namespace and id an entry URI names, or None for any other URI.

    The namespace ends at the first ``/``; the rest is the id, a raw ``/``
    in it as well as ``%2F`` (issue 52: a client filling the template
    without encoding the id got "not found" for an id holding a ``/``)."""
    if not uri.startswith(_SCHEME):
        return None
    namespace, slash, ident = uri[len(_SCHEME) :].partition("/")
    if not (namespace and slash and ident):
        return None
    return unquote(namespace), unquote(ident)


def _resource(namespace: str, entry: Mapping[str, Any]) -> Resource:
    """The listing of one entry: its URI, its id as the name, the start of
    its content as the title (a row that cannot be read says why)."""
    ident = str(entry.get("id", ""))
    content = entry.get("content")
    if isinstance(content, str):
        title = " ".join(content.split())
        title = title if len(title) <= 80 else title[:79] + "…"
        kind = entry.get("type")
        always = " (scope always)" if entry.get("scope") == "always" else ""
        who = entry.get("written_by")
        by = f", written by {who}" if isinstance(who, str) else ""
        description = f"a {kind} entry{always}{by}" if isinstance(kind, str) else None
    else:
        title, description = f"unreadable: {entry.get('unreadable')}", None
    return Resource(
        uri=entry_uri(namespace, ident),
        name=ident,
        title=title,
        description=description,
        mime_type=_MIME,
    )


class _Surface:
    """resources/list, resources/templates/list, resources/read, prompts/list
    and prompts/get over the store of each request (the resolver's).

    A request reaches only its store's namespace: a URI naming another
    namespace, or an id the namespace lacks, is the same "not found" (a
    tenant over HTTP learns nothing of another's entries). Store failures
    are JSON-RPC errors of one line: bad input ``INVALID_PARAMS``, the
    database's ``INTERNAL_ERROR``.
    """

    def __init__(self, server: MCPServer[Any], resolver: StoreResolver) -> None:
        self.server = server
        self.resolver = resolver

    def _store(self, ctx: ServerRequestContext[Any, Any]) -> Store:
        return self.resolver(Context(request_context=ctx, mcp_server=self.server))

    @staticmethod
    async def _run(fn: Callable[[], Any]) -> Any:
        try:
            return await anyio.to_thread.run_sync(fn)
        except InvalidInput as exc:
            raise MCPError(INVALID_PARAMS, str(exc)) from None
        except StoreError as exc:
            raise MCPError(INTERNAL_ERROR, _error_text(exc)) from None

    async def list_resources(
        self, ctx: ServerRequestContext[Any, Any], params: PaginatedRequestParams
    ) -> ListResourcesResult:
        store = self._store(ctx)
        namespace = store.namespace
        page = await self._run(
            functools.partial(store.list, limit=_RESOURCE_PAGE, cursor=params.cursor)
        )
        return ListResourcesResult(
            resources=[_resource(namespace, entry) for entry in page.entries],
            next_cursor=page.next_cursor,
        )

    async def list_templates(
        self, ctx: ServerRequestContext[Any, Any], params: PaginatedRequestParams
    ) -> ListResourceTemplatesResult:
        template = ResourceTemplate(
            uri_template=ENTRY_URI_TEMPLATE,
            name="entry",
            title="A memory entry",
            description="One entry of a namespace, as JSON; the id is what "
            "recall shows in brackets",
            mime_type=_MIME,
        )
        return ListResourceTemplatesResult(resource_templates=[template])

    async def read(
        self, ctx: ServerRequestContext[Any, Any], params: ReadResourceRequestParams
    ) -> ReadResourceResult:
        store = self._store(ctx)
        parts = _uri_parts(params.uri)
        entry = None
        if parts is not None and parts[0] == store.namespace:
            try:
                entry = await self._run(functools.partial(store.get, parts[1]))
            except MCPError as exc:
                if exc.error.code != INVALID_PARAMS:
                    raise
        if entry is None:
            raise MCPError(
                INVALID_PARAMS,
                f"Resource not found: {params.uri}",
                {"uri": params.uri},
            )
        text = json.dumps(entry, ensure_ascii=False, sort_keys=True)
        return ReadResourceResult(
            contents=[TextResourceContents(uri=params.uri, mime_type=_MIME, text=text)]
        )

    async def list_prompts(
        self, ctx: ServerRequestContext[Any, Any], params: PaginatedRequestParams
    ) -> ListPromptsResult:
        return ListPromptsResult(prompts=[_RECALL_PROMPT])

    async def get_prompt(
        self, ctx: ServerRequestContext[Any, Any], params: GetPromptRequestParams
    ) -> GetPromptResult:
        if params.name != "recall":
            raise MCPError(
                INVALID_PARAMS, f"unknown prompt {params.name!r}; expected 'recall'"
            )
        arguments = params.arguments or {}
        unknown = sorted(set(arguments) - {"message"})
        if unknown:
            raise MCPError(
                INVALID_PARAMS,
                f"{unknown[0]}: unknown argument of recall; expected message",
            )
        message = arguments.get("message")
        if not message or not message.strip():
            raise MCPError(INVALID_PARAMS, "message: required, the user's message")
        store = self._store(ctx)
        got = await self._run(functools.partial(store.recall, message))
        return GetPromptResult(
            description="What the memory holds for this message",
            messages=[
                PromptMessage(
                    role="user", content=TextContent(type="text", text=got.chat_text())
                )
            ],
        )


if _MCP_MISSING is None:
    _RECALL_PROMPT = Prompt(
        name="recall",
        title="Recall memory",
        description="The memory's entries for a message, per pool (corrections "
        "that always apply first), each with its [id], as one user message",
        arguments=[
            PromptArgument(
                name="message", description="the user's message", required=True
            )
        ],
    )


def _serve_surface(server: MCPServer[Any], resolver: StoreResolver) -> None:
    """Register the resources and the prompt on ``server``. MCPServer has no
    public way to serve a listing computed per request; its low-level server
    has (the SDK's MCPServer reaches it the same way)."""
    surface = _Surface(server, resolver)
    add = server._lowlevel_server.add_request_handler
    add("resources/list", PaginatedRequestParams, surface.list_resources)
    add("resources/templates/list", PaginatedRequestParams, surface.list_templates)
    add("resources/read", ReadResourceRequestParams, surface.read)
    add("prompts/list", PaginatedRequestParams, surface.list_prompts)
    add("prompts/get", GetPromptRequestParams, surface.get_prompt)


# ---------------------------------------------------------------------------
# The server


def _holding(store: Store | None) -> StoreResolver:
    """The resolver of a server holding one store."""
    assert store is not None

    def resolve(_ctx: Context[Any, Any]) -> Store:
        return store

    return resolve


def _check_tz(tz: str | None, name: str) -> None:
    """Raise ValueError naming ``name`` (the parameter or flag) when ``tz``
    names no time zone."""
    if tz is not None:
        try:
            time_zone(tz)
        except ValueError as exc:
            raise ValueError(f"{name} {exc}") from None


def build_server(
    store: Store | None = None,
    *,
    resolve: StoreResolver | None = None,
    tz: str | None = None,
) -> MCPServer[Any]:
    """The MCP server: the seven memory tools, each entry as a resource
    (``memory://{namespace}/{id}``) and the ``recall`` prompt.

    Give ``store`` (the one store every request uses, as over stdio) or
    ``resolve``, called once per tool call with its ``Context`` to find the
    request's store (a transport with tenants maps the caller to theirs).
    ``tz`` (an IANA name) is the time zone ``recall`` and ``explain`` read
    a message's times in when the call gives none (None: UTC).

    Raises:
        ValueError: neither or both given, or ``tz`` names no time zone.
    """
    if (store is None) == (resolve is None):
        raise ValueError("build_server needs store or resolve, not both")
    _check_tz(tz, "tz")
    held = _Held(resolve if resolve is not None else _holding(store), tz)
    resolver = held.resolve

    @asynccontextmanager
    async def holding(_: MCPServer[Any]) -> AsyncIterator[_Held]:
        yield held

    tools = _tools()
    logging = _Logging()
    server: MCPServer[Any] = MCPServer(
        "poolsplit-memory",
        version=__version__,
        instructions=_INSTRUCTIONS,
        tools=tools,
        lifespan=holding,
        middleware=[logging, _CheckArguments(tools)],
    )
    # MCPServer has no public way to add a request handler; its low-level
    # server has (the SDK's MCPServer reaches it the same way).
    server._lowlevel_server.add_request_handler(
        "logging/setLevel", SetLevelRequestParams, logging.set_level
    )
    _serve_surface(server, resolver)
    return server


def _http_worker_app() -> Any:
    """The ASGI app of one ``--http`` worker (uvicorn calls it in each worker
    process): this module's server over the request's tenant's store."""
    from poolsplit_memory._http import tenant_store, worker_app, worker_config

    return worker_app(build_server(tenant_store(), tz=worker_config().tz))


def _fail(message: str) -> int:
    print(f"{_PROG}: error: {' '.join(message.split())}", file=sys.stderr)
    return 2


def main(argv: list[str] | None = None) -> int:
    """Serve the store over stdio; 2 with one line on stderr if it cannot."""
    argv = sys.argv[1:] if argv is None else argv
    status = subcommand(argv)
    if status is not None:
        return status
    args = build_parser().parse_args(argv)
    if _MCP_MISSING is not None:
        return _fail(
            f"the MCP SDK is missing ({_MCP_MISSING}); install "
            f"'poolsplit-memory[mcp]' (Python 3.10+)"
        )
    try:
        pools = poolsplit.load_pools(args.pools) if args.pools is not None else None
        if pools == []:  # the core reads [] as no pools; a store needs one
            raise ValueError(
                f"{args.pools}: pools must not be empty; leave out --pools "
                "for the default pools"
            )
        url = choose_db(args.db, args.ephemeral)
        _check_tz(args.tz, "--tz")
        if args.pool_size < 1 or args.snapshot_budget < 1:
            raise ValueError("--pool-size and --snapshot-budget must be at least 1")
        if args.writer is not None and not args.writer.strip():
            raise ValueError("--writer must be a non-blank name")
        set_snapshot_budget(args.snapshot_budget * 1024 * 1024)
        http = None
        if args.http is not None:  # issue 28: checked before any store opens
            from poolsplit_memory._http import config_from_args

            http = config_from_args(args, url)
    except ValueError as exc:
        return _fail(str(exc))
    try:
        store = open_store(
            url,
            namespace=args.namespace,
            pools=pools,
            ranking=args.ranking,
            pool_size=args.pool_size,
            read_url=args.read_db,
            writer=args.writer,
        )
    except StoreError as exc:
        return _fail(str(exc))
    with store:
        target = parse_url(url)
        if args.ephemeral:
            where = "in this process only (--ephemeral)"
        elif target.kind == "sqlite":  # the file itself, wherever it was named
            where = f"in {os.path.abspath(target.where)}"
        else:
            where = f"in {store.url}"
        if http is not None:  # issue 28: the same tools over HTTP
            from poolsplit_memory._http import serve

            # issue 36: the workers hold the connections; the supervisor's
            # store only checked the database
            store.close()
            return serve(http, where, f"{_MODULE}:_http_worker_app")
        print(
            f"{_PROG}: memory {where}, namespace {store.namespace!r}", file=sys.stderr
        )
        return run_stdio(build_server(store, tz=args.tz))


if __name__ == "__main__":
    raise SystemExit(main())
