"""poolsplit-mcp: the memory store served to MCP clients over stdio.

    poolsplit-mcp [--db URL] [--namespace NAME] [--pools FILE] [--ephemeral]

Without ``--db`` the store is ``$XDG_DATA_HOME/poolsplit/memory.db`` (else
``~/.local/share/poolsplit/memory.db``), its folder created, the path printed
on standard error. A store that would not outlive the process (``:memory:``,
an empty value such as an unset ``${VAR}`` in a client's configuration) is
refused unless ``--ephemeral`` asks for it. A pools file goes through
``poolsplit.load_pools`` (the core command line's rules and messages). A bad
pools file or a ``--db`` that cannot be opened is one line on standard error
and exit status 2, before anything is served.

Tools (``mcp`` 2.x ``MCPServer``), each with an output schema; each result's
text is the JSON of its structured content, except ``recall`` and ``explain``,
whose text is what the model reads:

- ``remember(content, type="note", scope=None, tags=[], project=None,
  base_priority=None, supersedes=None, key=None)`` -> ``{"id", "warnings"}``
- ``recall(message, tags=[], project=None)`` -> the rendered pools;
  ``{"pools": {name: [ids]}, "skipped": [{"id", "reason"}], "warnings"}``
- ``get(id)`` -> ``{"entry": {...} or null}``
- ``list(type=None, limit=50, cursor=None)`` -> ``{"entries", "next_cursor"}``
- ``update(id, content=None, type=None, scope=None, tags=None, project=None,
  base_priority=None)`` -> ``{"entry", "warnings"}``: an argument left out is
  unchanged; ``scope``, ``tags``, ``project`` or ``base_priority`` sent as
  ``null`` removes that key
- ``forget(id)`` -> ``{"forgotten": true or false, "warnings": [...]}``
- ``explain(message, tags=[], project=None)`` -> the explain table;
  ``{"table": ...}``

Every failure is a tool error of one line: ``field: what is wrong`` for bad
input (an unknown argument or a wrong type too, checked before the tool runs,
so nothing is written), the cause for an operational failure (``database
unreachable``, ``database is locked``, ``disk full``...), and ``internal
error: Type: message`` for anything unexpected (its traceback on stderr).
"""

from __future__ import annotations

import argparse
import contextvars
import inspect
import json
import os
import sys
import traceback
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Callable

import poolsplit

from poolsplit_memory import InvalidInput, Store, StoreError, open_store
from poolsplit_memory.store import RANKINGS, is_ephemeral, parse_url

try:
    from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
    from mcp.server.mcpserver import MCPServer
    from mcp_types import CallToolResult, TextContent
    from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model
    from typing_extensions import TypedDict  # pydantic's TypedDict before 3.12

    _MCP_MISSING: ModuleNotFoundError | None = None
except ModuleNotFoundError as exc:  # the mcp extra is not installed: main says so
    from typing import TypedDict

    _MCP_MISSING = exc

__all__ = ["build_server", "default_db_path", "main"]

_PROG = "poolsplit-mcp"
_INSTRUCTIONS = (
    "Call recall with the user's message before answering and follow what it "
    "returns; remember corrections with type='correction' and scope='always'."
)

# The arguments the client actually sent with the current tools/call, set by
# the argument check below (``update`` tells "left out" from "null" by them).
_sent_arguments: contextvars.ContextVar[frozenset[str]] = contextvars.ContextVar(
    "poolsplit_mcp_sent_arguments", default=frozenset()
)


# ---------------------------------------------------------------------------
# Where the memory lives


def default_db_path(environ: Mapping[str, str] | None = None) -> Path:
    """``$XDG_DATA_HOME/poolsplit/memory.db``, else under ``~/.local/share``.

    An empty or relative ``XDG_DATA_HOME`` is ignored, as the XDG base
    directory specification says.
    """
    env = os.environ if environ is None else environ
    base = env.get("XDG_DATA_HOME", "")
    root = Path(base) if base and os.path.isabs(base) else Path.home() / ".local/share"
    return root / "poolsplit" / "memory.db"


def _is_ephemeral(url: str) -> bool:
    """True for a store that would not outlive the process: an empty value
    (an unset variable), or what the store reads as ``:memory:``.

    Raises:
        InvalidInput: the store cannot read the url at all.
    """
    return not url.strip() or is_ephemeral(url)


def _choose_db(db: str | None, ephemeral: bool) -> str:
    """The store's url from the flags; raises ValueError with the one line."""
    if ephemeral:
        if db is not None and not _is_ephemeral(db):
            raise ValueError(
                f"--ephemeral keeps memory in this process only; drop it or --db {db!r}"
            )
        return ":memory:"
    if db is None:
        path = default_db_path()
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ValueError(
                f"cannot create {str(path.parent)!r}: {exc.strerror or exc}; "
                f"pass --db PATH"
            ) from None
        return str(path)
    if _is_ephemeral(db):
        raise ValueError(
            f"--db {db!r} keeps nothing after the server exits (an unset "
            f"variable in the client's configuration gives ''); pass a file path "
            f"or a postgresql:// URL, or --ephemeral to mean it"
        )
    return db


# ---------------------------------------------------------------------------
# Results and errors, one shape for every tool


def _result(structured: dict[str, Any], text: str | None = None) -> CallToolResult:
    """A tool result: the structured content, and text (its JSON by default)."""
    if text is None:
        text = json.dumps(structured, ensure_ascii=False, sort_keys=True)
    return CallToolResult(
        content=[TextContent(type="text", text=text)], structured_content=structured
    )


def _tool_error(text: str) -> CallToolResult:
    """An ``is_error`` result with one line of text (no SDK prefix)."""
    line = " ".join(text.split()) or "error"
    return CallToolResult(content=[TextContent(type="text", text=line)], is_error=True)


def _error_text(exc: Exception) -> str:
    """One line naming what went wrong: the field, the cause, or the type.

    Bad input is the caller's to fix and stays off the log; an operational
    failure is also logged on stderr in the same line, a crash with its
    traceback.
    """
    if isinstance(exc, InvalidInput):  # `field: what is wrong`
        return str(exc)
    if isinstance(exc, StoreError):  # StoreUnavailable: the cause, one line
        print(f"{_PROG}: {exc}", file=sys.stderr)
        return str(exc)
    traceback.print_exc(file=sys.stderr)
    return f"internal error: {type(exc).__name__}: {exc}"


def _guarded(fn: Callable[..., CallToolResult]) -> Callable[..., CallToolResult]:
    """``fn`` whose every exception becomes a one-line tool error.

    The SDK would report an exception as ``Error executing tool X`` (the cause
    on the server's stderr only); a result with ``is_error`` passes unchanged.
    The signature is kept, so the SDK builds the same schemas from it.
    """

    def tool(*args: Any, **kwargs: Any) -> CallToolResult:
        try:
            return fn(*args, **kwargs)
        except Exception as exc:
            return _tool_error(_error_text(exc))

    tool.__name__ = fn.__name__
    tool.__doc__ = fn.__doc__
    tool.__signature__ = inspect.signature(fn, eval_str=True)  # type: ignore[attr-defined]
    return tool


# ---------------------------------------------------------------------------
# Output schemas


class RememberResult(TypedDict):
    id: str
    warnings: list[str]


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
    warnings: list[str]


class ExplainResult(TypedDict):
    table: str


# ---------------------------------------------------------------------------
# Arguments checked before a tool runs


class _CheckArguments:
    """Server middleware: a tools/call with bad arguments fails before the tool.

    The SDK ignores an argument the tool lacks, so a misspelt ``supercedes``
    would store a second entry that retires nothing; and it reports a wrong
    type as a multi-line pydantic dump. Here both are one-line tool errors
    naming the field, the tool never runs, and nothing is written. The
    arguments sent are kept for the call (``update`` reads which were sent).
    """

    def __init__(self, tools: Mapping[str, Callable[..., Any]]) -> None:
        self.parameters = {
            name: frozenset(inspect.signature(fn).parameters)
            for name, fn in tools.items()
        }
        self.models = {name: _arguments_model(name, fn) for name, fn in tools.items()}

    async def __call__(
        self, ctx: ServerRequestContext[Any, Any], call_next: CallNext
    ) -> HandlerResult:
        params = ctx.params or {}
        name = params.get("name") if isinstance(params, Mapping) else None
        if ctx.method != "tools/call" or name not in self.parameters:
            return await call_next(ctx)
        arguments = params.get("arguments") or {}
        if not isinstance(arguments, Mapping):
            return _tool_error(
                f"arguments must be an object, got {type(arguments).__name__}"
            )
        known = self.parameters[name]
        unknown = sorted(set(arguments) - known)
        if unknown:
            return _tool_error(
                f"{unknown[0]}: unknown argument of {name}; expected "
                f"{', '.join(sorted(known))}"
            )
        model = self.models[name]
        try:
            model.model_validate(_json_in_strings(model, arguments))
        except ValidationError as exc:
            return _tool_error(
                "; ".join(
                    f"{'.'.join(str(part) for part in error['loc']) or 'arguments'}: "
                    f"{error['msg']}"
                    for error in exc.errors()
                )
            )
        token = _sent_arguments.set(frozenset(arguments))
        try:
            return await call_next(ctx)
        finally:
            _sent_arguments.reset(token)


def _json_in_strings(
    model: type[BaseModel], arguments: Mapping[str, Any]
) -> dict[str, Any]:
    """The arguments as the SDK will validate them: a list or object sent as
    a JSON string (some clients do) parsed, for a parameter that is not a str.

    The SDK's own rule (``FuncMetadata.pre_parse_json``), so that this check
    and the SDK's accept the same calls.
    """
    parsed = dict(arguments)
    for key, value in arguments.items():
        field = model.model_fields.get(key)
        if field is None or not isinstance(value, str) or field.annotation is str:
            continue
        try:
            loaded = json.loads(value)
        except (ValueError, RecursionError):
            continue
        if not isinstance(loaded, (str, int, float)):
            parsed[key] = loaded
    return parsed


def _arguments_model(name: str, fn: Callable[..., Any]) -> type[BaseModel]:
    """A pydantic model of ``fn``'s parameters (the SDK's rules, one-line errors)."""
    fields: dict[str, Any] = {}
    for parameter in inspect.signature(fn, eval_str=True).parameters.values():
        default = (
            ... if parameter.default is inspect.Parameter.empty else parameter.default
        )
        fields[parameter.name] = (parameter.annotation, default)
    return create_model(
        f"{name}_arguments", __config__=ConfigDict(extra="forbid"), **fields
    )


# ---------------------------------------------------------------------------
# The server


def build_server(store: Store) -> MCPServer[Any]:
    """The MCP server with the seven memory tools over ``store``."""

    def remember(
        content: Annotated[str, Field(description="what to remember")],
        type: Annotated[
            str, Field(description="entry type: correction, task, fact, skill, ...")
        ] = "note",
        scope: Annotated[
            str | None,
            Field(description='"always": loaded on every recall, outside every cap'),
        ] = None,
        tags: Annotated[list[str], Field(description="tags")] = [],  # noqa: B006
        project: Annotated[str | None, Field(description="project")] = None,
        base_priority: Annotated[
            float | None,
            Field(strict=True, description="priority, default 5"),
        ] = None,
        supersedes: Annotated[
            str | None,
            Field(description="id of the active entry this one replaces"),
        ] = None,
        key: Annotated[
            str | None,
            Field(
                description="a client key: a retry with the same key and content "
                "returns the first call's id and writes nothing"
            ),
        ] = None,
    ) -> Annotated[CallToolResult, RememberResult]:
        """Store a memory entry; returns its new id and any warnings."""
        written = store.remember(
            content,
            type=type,
            scope=scope,
            tags=tuple(tags),
            project=project,
            base_priority=base_priority,
            supersedes=supersedes,
            key=key,
        )
        return _result({"id": written.id, "warnings": list(written.warnings)})

    def recall(
        message: Annotated[str, Field(description="the user's message")],
        tags: Annotated[
            list[str], Field(description="tags of the current context")
        ] = [],  # noqa: B006 (the schema's default; never mutated)
        project: Annotated[str | None, Field(description="the current project")] = None,
    ) -> Annotated[CallToolResult, RecallResult]:
        """The entries to inject for this context, rendered per pool."""
        got = store.recall(message, tags=tuple(tags), project=project)
        return _result(got.to_dict(), got.text)

    def get(
        id: Annotated[str, Field(description="an entry's id")],
    ) -> Annotated[CallToolResult, GetResult]:
        """One entry by id, or null when this namespace has none."""
        return _result({"entry": store.get(id)})

    def list_(
        type: Annotated[
            str | None,
            Field(description="only entries of this type"),
        ] = None,
        limit: Annotated[
            int, Field(strict=True, description="entries per page, 1 to 500")
        ] = 50,
        cursor: Annotated[
            str | None,
            Field(description="next_cursor of the previous page"),
        ] = None,
    ) -> Annotated[CallToolResult, ListResult]:
        """Entries in a stable order, a page at a time; each once across pages."""
        page = store.list(type=type, limit=limit, cursor=cursor)
        return _result({"entries": page.entries, "next_cursor": page.next_cursor})

    def update(
        id: Annotated[str, Field(description="the entry's id")],
        content: Annotated[str | None, Field(description="new content")] = None,
        type: Annotated[str | None, Field(description="new type")] = None,
        scope: Annotated[
            str | None,
            Field(description='"always", or null to remove'),
        ] = None,
        tags: Annotated[
            list[str] | None,
            Field(description="new tags, or null to remove"),
        ] = None,
        project: Annotated[
            str | None,
            Field(description="new project, or null to remove"),
        ] = None,
        base_priority: Annotated[
            float | None,
            Field(strict=True, description="new priority, or null to remove"),
        ] = None,
    ) -> Annotated[CallToolResult, UpdateResult]:
        """Change fields of one entry; an argument left out stays as it is."""
        sent = _sent_arguments.get()
        changes: dict[str, Any] = {}
        for field, value in (("content", content), ("type", type)):
            if value is not None:
                changes[field] = value
        removable: dict[str, Any] = {
            "scope": scope,
            "tags": None if tags is None else tuple(tags),
            "project": project,
            "base_priority": base_priority,
        }
        for field, value in removable.items():
            if value is not None or field in sent:
                changes[field] = value
        updated = store.update(id, **changes)
        return _result({"entry": updated.entry, "warnings": list(updated.warnings)})

    def forget(
        id: Annotated[str, Field(description="an entry's id")],
    ) -> Annotated[CallToolResult, ForgetResult]:
        """Delete an entry (and those it superseded); false if there is none."""
        forgotten = store.forget(id)
        warnings = []
        if store.scrub_pending:
            warnings.append(
                "forget: deleted, but the content stays in the SQLite -wal file "
                "while another connection holds a read open; the server "
                "removes it on its next call after that read ends, or at exit"
            )
        return _result({"forgotten": forgotten, "warnings": warnings})

    def explain(
        message: Annotated[str, Field(description="the user's message")],
        tags: Annotated[
            list[str], Field(description="tags of the current context")
        ] = [],  # noqa: B006 (the schema's default; never mutated)
        project: Annotated[str | None, Field(description="the current project")] = None,
    ) -> Annotated[CallToolResult, ExplainResult]:
        """Why each stored entry was or was not selected, per pool."""
        table = store.explain(message, tags=tuple(tags), project=project)
        return _result({"table": table}, table)

    tools: dict[str, Callable[..., CallToolResult]] = {
        "remember": remember,
        "recall": recall,
        "get": get,
        "list": list_,
        "update": update,
        "forget": forget,
        "explain": explain,
    }
    server: MCPServer[Any] = MCPServer(
        "poolsplit-memory",
        instructions=_INSTRUCTIONS,
        middleware=[_CheckArguments(tools)],
    )
    for name, fn in tools.items():
        server.add_tool(_guarded(fn), name=name, structured_output=True)
    return server


# ---------------------------------------------------------------------------
# The command line


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=_PROG, description="poolsplit memory served over MCP (stdio)"
    )
    parser.add_argument(
        "--db",
        metavar="URL",
        help="a SQLite file, sqlite:///path or a postgresql:// URL "
        "(default: $XDG_DATA_HOME/poolsplit/memory.db)",
    )
    parser.add_argument(
        "--namespace",
        metavar="NAME",
        default="default",
        help="whose memory (default: default)",
    )
    parser.add_argument(
        "--pools",
        metavar="FILE",
        help="a JSON array of pools, as `poolsplit --pools` reads",
    )
    parser.add_argument(
        "--ranking",
        choices=RANKINGS,
        default="lexical",
        help="how recall ranks: lexical (BM25+ with the core's signals, the "
        "default), core (poolsplit's default scorer) or semantic (needs "
        "'poolsplit-memory[semantic]')",
    )
    parser.add_argument(
        "--ephemeral",
        action="store_true",
        help="keep memory in this process only (:memory:); lost at exit",
    )
    return parser


def _fail(message: str) -> int:
    print(f"{_PROG}: error: {' '.join(message.split())}", file=sys.stderr)
    return 2


def main(argv: list[str] | None = None) -> int:
    """Serve the store over stdio; 2 with one line on stderr if it cannot."""
    args = _parser().parse_args(argv)
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
        url = _choose_db(args.db, args.ephemeral)
    except ValueError as exc:
        return _fail(str(exc))
    try:
        store = open_store(
            url, namespace=args.namespace, pools=pools, ranking=args.ranking
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
        print(
            f"{_PROG}: memory {where}, namespace {store.namespace!r}", file=sys.stderr
        )
        build_server(store).run("stdio")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
