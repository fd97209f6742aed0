"""An MCP memory server over a local file: pooled recall, always-scope first.

    pip install -e '.[integrations]'    # mcp 2.x (Python 3.11+, as pinned)
    python examples/mcp_server.py --db memory.db [--pools pools.json]
    python examples/mcp_server.py --db postgresql://user@host/db   # psycopg

It speaks MCP over stdio (``mcp.server.mcpserver.MCPServer``: ``FastMCP`` of
mcp 1.x is gone in 2.x). Entries live in SQLite (``examples/sqlite_store.py``;
WAL and one transaction per write, so two server processes on one file lose
no write) or, for a ``postgresql://`` URL, in PostgreSQL
(``examples/postgres_store.py``). Tools, with these names and arguments:

- ``remember(content, type="note", scope=None, tags=[], project=None,
  base_priority=None, supersedes=None)`` -> ``{"id": ...}``
- ``recall(message, tags=[], project=None)`` -> rendered pools, and
  ``{"pools": {name: [ids]}}``
- ``forget(id)`` -> ``{"forgotten": true}`` (``false`` for an unknown id)
- ``explain(message, tags=[], project=None)`` -> the explain table

Bad input (an unknown argument, a wrong type, empty content, an invalid
field, a ``supersedes`` id that is not an active entry) is a tool error that
names the field, and nothing is written.

Default pools (when ``--pools`` is absent): ``corrections`` 400 tokens / 4
entries, ``tasks`` 600 / 4, ``facts`` 400 / 4, ``skills`` 300 / 2, ``growth``
200 / 1, ``episodes`` 300 / 2, then ``other`` 400 / 3 for every other type in
the store (``note`` included). Always-scope entries bypass every cap.
"""

from __future__ import annotations

import argparse
import inspect
import json
import sys
import threading
import uuid
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Annotated, Any, Callable, Protocol

# Run as a script from a checkout: poolsplit.py is one folder up; an installed
# poolsplit comes earlier on sys.path and wins.
sys.path.append(str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import sqlite_store
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import CallToolResult, TextContent
from pydantic import Field
from typing_extensions import TypedDict

from poolsplit import Pool, explain, render, retrieve_pools, validate

DEFAULT_POOLS: tuple[Pool, ...] = (
    Pool("corrections", 400, 4, ("correction",)),
    Pool("tasks", 600, 4, ("task",)),
    Pool("facts", 400, 4, ("fact",)),
    Pool("skills", 300, 2, ("skill",)),
    Pool("growth", 200, 1, ("growth",)),
    Pool("episodes", 300, 2, ("episode",)),
)
# The spill-over pool: every type the pools above do not name, read per call.
OTHER = ("other", 400, 3)


class Backend(Protocol):
    """What the tools need from a store; every write is one transaction."""

    def candidates(self, pools: Sequence[Pool]) -> list[Any]: ...
    def active_types(self) -> set[str]: ...
    def add(self, entry: dict[str, Any], supersedes: str | None) -> None: ...
    def retire(self, ident: str) -> bool: ...
    def count(self) -> int: ...


class SQLiteBackend:
    """``examples/sqlite_store.py`` on one shared connection (WAL)."""

    def __init__(self, path: str) -> None:
        self.db = sqlite_store.open_shared(path)
        self.lock = threading.Lock()  # tools run on worker threads
        self.cached: tuple[object, list[Any]] | None = None

    def candidates(self, pools: Sequence[Pool]) -> list[Any]:
        """The candidate rows, parsed again only after a write.

        ``PRAGMA data_version`` changes when another connection commits and
        ``total_changes`` when this one does, so an unchanged pair means the
        parsed rows of the last call are still the store's (poolsplit never
        modifies entries).
        """
        with self.lock:
            version = self.db.execute("PRAGMA data_version").fetchone()[0]
            key = (version, self.db.total_changes, tuple(pools))
            if self.cached is None or self.cached[0] != key:
                self.cached = (key, sqlite_store.load_candidates(self.db, pools))
            return self.cached[1]

    def active_types(self) -> set[str]:
        with self.lock:
            return sqlite_store.active_types(self.db)

    def add(self, entry: dict[str, Any], supersedes: str | None) -> None:
        with self.lock:
            sqlite_store.add(self.db, entry, supersedes=supersedes)

    def retire(self, ident: str) -> bool:
        with self.lock:
            return sqlite_store.retire(self.db, ident)

    def count(self) -> int:
        with self.lock:
            return int(self.db.execute("SELECT count(*) FROM entries").fetchone()[0])


class PostgresBackend:
    """``examples/postgres_store.py`` on one connection (psycopg)."""

    def __init__(self, dsn: str) -> None:
        import postgres_store

        self.store = postgres_store
        self.db = postgres_store.connect(dsn)
        self.lock = threading.Lock()

    def candidates(self, pools: Sequence[Pool]) -> list[Any]:
        sql, params = self.store.candidate_query(pools)
        with self.lock:
            return [body for (body,) in self.db.execute(sql, params)]

    def active_types(self) -> set[str]:
        with self.lock:
            return self.store.active_types(self.db)

    def add(self, entry: dict[str, Any], supersedes: str | None) -> None:
        with self.lock:
            self.store.add(self.db, entry, supersedes=supersedes)

    def retire(self, ident: str) -> bool:
        with self.lock:
            return self.store.retire(self.db, ident)

    def count(self) -> int:
        with self.lock:
            return int(self.db.execute("SELECT count(*) FROM entries").fetchone()[0])


def open_backend(db: str) -> Backend:
    """PostgreSQL for a ``postgres://`` or ``postgresql://`` URL, else SQLite."""
    if db.startswith(("postgres://", "postgresql://")):
        return PostgresBackend(db)
    return SQLiteBackend(db)


def load_pools(path: str) -> list[Pool]:
    """Pools from a JSON list of ``{"name", "max_tokens", "max_entries", "types"}``."""
    try:
        specs = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ValueError(f"{path}: cannot read pools: {exc}") from None
    if not isinstance(specs, list) or not specs:
        raise ValueError(f"{path}: pools must be a non-empty JSON list")
    pools = []
    for number, spec in enumerate(specs):
        try:
            pools.append(Pool(**spec))
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{path}: pools[{number}]: {exc}") from None
    return pools


class RememberResult(TypedDict):
    id: str


class RecallResult(TypedDict):
    pools: dict[str, list[str]]


class ForgetResult(TypedDict):
    forgotten: bool


Message = Annotated[str, Field(description="the user's message to recall for")]
Tags = Annotated[list[str], Field(description="tags of the current context")]
Project = Annotated[str | None, Field(description="the current project")]


class RejectUnknownArguments:
    """Server middleware: a tool call with an argument the tool lacks fails.

    The SDK ignores unknown arguments, so a misspelt ``supercedes`` would
    silently store a second, unsuperseding entry; this turns it into a tool
    error before the tool runs (nothing is written).
    """

    def __init__(self, parameters: Mapping[str, frozenset[str]]) -> None:
        self.parameters = parameters

    async def __call__(
        self, ctx: ServerRequestContext[Any, Any], call_next: CallNext
    ) -> HandlerResult:
        params = ctx.params or {}
        name = params.get("name")
        arguments = params.get("arguments")
        known = self.parameters.get(name) if isinstance(name, str) else None
        if ctx.method == "tools/call" and known and isinstance(arguments, Mapping):
            unknown = sorted(set(arguments) - known)
            if unknown:
                text = (
                    f"Error executing tool {name}: unknown argument(s) "
                    f"{', '.join(unknown)}; expected {', '.join(sorted(known))}"
                )
                return CallToolResult(
                    content=[TextContent(type="text", text=text)], is_error=True
                )
        return await call_next(ctx)


def utc_now() -> datetime:
    return datetime.now(timezone.utc)


def build_server(
    backend: Backend,
    pools: Sequence[Pool] | None = None,
    *,
    now: Callable[[], datetime] = utc_now,
) -> MCPServer[Any]:
    """The MCP server with the four tools over ``backend``.

    ``pools`` None means :data:`DEFAULT_POOLS` plus the ``other`` pool, whose
    types are read from the store on every call.
    """

    def pools_for_call() -> list[Pool]:
        if pools is not None:
            return list(pools)
        named = {t for pool in DEFAULT_POOLS for t in pool.types or ()}
        other = tuple(sorted(backend.active_types() - named))
        return [*DEFAULT_POOLS, Pool(*OTHER, types=other)]

    def context(message: str, tags: list[str], project: str | None) -> dict[str, Any]:
        return {"message": message, "tags": tags, "project": project}

    def remember(
        content: Annotated[str, Field(description="what to remember")],
        type: Annotated[str, Field(description="entry type")] = "note",
        scope: Annotated[
            str | None, Field(description='"always": loaded on every recall')
        ] = None,
        tags: Annotated[list[str], Field(description="tags")] = [],  # noqa: B006
        project: Annotated[str | None, Field(description="project")] = None,
        base_priority: Annotated[
            float | None, Field(strict=True, description="default 5")
        ] = None,
        supersedes: Annotated[
            str | None, Field(description="id of the entry this one replaces")
        ] = None,
    ) -> Annotated[CallToolResult, RememberResult]:
        """Store a memory entry; returns its new id."""
        if not content.strip():
            raise ToolError("content: must not be empty")
        if not type.strip():
            raise ToolError("type: must not be empty")
        if scope not in (None, "always"):
            raise ToolError(f"scope: must be 'always' or null, got {scope!r}")
        entry: dict[str, Any] = {
            "id": uuid.uuid4().hex[:16],
            "type": type,
            "content": content,
            "created": now().isoformat(),
        }
        optional = {
            "scope": scope,
            "tags": list(tags) or None,
            "project": project,
            "base_priority": base_priority,
        }
        entry.update(
            (key, value) for key, value in optional.items() if value is not None
        )
        errors = [p for p in validate([entry]) if p.severity == "error"]
        if errors:
            raise ToolError("; ".join(f"{p.field}: {p.message}" for p in errors))
        try:
            backend.add(entry, supersedes)
        except KeyError as exc:
            field = "supersedes" if supersedes is not None else "id"
            raise ToolError(f"{field}: {exc.args[0]}") from None
        return CallToolResult(
            content=[TextContent(type="text", text=entry["id"])],
            structured_content={"id": entry["id"]},
        )

    def recall(
        message: Message,
        tags: Tags = [],  # noqa: B006 (the schema's default; never mutated)
        project: Project = None,
    ) -> Annotated[CallToolResult, RecallResult]:
        """The entries to inject for this context, rendered per pool."""
        chosen = pools_for_call()
        got = retrieve_pools(
            backend.candidates(chosen),
            chosen,
            context(message, tags, project),
            now=now(),
        )
        ids = {
            name: [str(e.get("id")) for e in entries] for name, entries in got.items()
        }
        return CallToolResult(
            content=[TextContent(type="text", text=render(got))],
            structured_content={"pools": ids},
        )

    def forget(
        id: Annotated[str, Field(description="id of the entry to retire")],
    ) -> ForgetResult:
        """Retire an entry: it never loads again (nothing is deleted)."""
        return {"forgotten": backend.retire(id)}

    def explain_tool(
        message: Message,
        tags: Tags = [],  # noqa: B006 (the schema's default; never mutated)
        project: Project = None,
    ) -> str:
        """Why each candidate entry was or was not selected, per pool."""
        chosen = pools_for_call()
        report = explain(
            backend.candidates(chosen),
            chosen,
            context(message, tags, project),
            now=now(),
        )
        return report.render()

    tools: dict[str, Callable[..., Any]] = {
        "remember": remember,
        "recall": recall,
        "forget": forget,
        "explain": explain_tool,
    }
    parameters = {
        name: frozenset(inspect.signature(fn).parameters) for name, fn in tools.items()
    }
    server: MCPServer[Any] = MCPServer(
        "poolsplit-memory",
        instructions="Call recall with the user's message before answering; "
        "remember corrections with scope='always'.",
        middleware=[RejectUnknownArguments(parameters)],
    )
    for name, fn in tools.items():
        server.add_tool(fn, name=name)
    return server


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="poolsplit MCP memory server (stdio)")
    parser.add_argument(
        "--db", required=True, help="SQLite file, or a postgresql:// URL"
    )
    parser.add_argument("--pools", help="JSON list of pools (default: documented)")
    args = parser.parse_args(argv)
    try:
        pools = load_pools(args.pools) if args.pools else None
    except ValueError as exc:
        parser.error(str(exc))
    build_server(open_backend(args.db), pools).run("stdio")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
