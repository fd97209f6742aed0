"""poolsplit-mcp --http: the same MCP server over Streamable HTTP, per tenant.

    poolsplit-mcp --http 127.0.0.1:8765 [--tokens FILE] [--workers N] [--db URL]

The transport is the MCP SDK's own (``StreamableHTTPSessionManager``), its
bearer authentication the SDK's (``BearerAuthBackend`` over a
``TokenVerifier``, ``RequireAuthMiddleware``'s 401 with
``WWW-Authenticate``), its DNS-rebinding protection the SDK's
(``TransportSecuritySettings``: Host and Origin checked). This module adds
what a shared memory needs around it:

- **Tenants.** Each request's token grants namespaces (``_tokens``:
  ``poolsplit-write:NS`` / ``poolsplit-read:NS`` scopes). ``/mcp`` serves
  the token's first namespace, ``/mcp/NS`` another one it grants; any other
  is 403 before MCP sees the request, with the same answer whether NS exists
  or not. No tool argument names a namespace (the tools have none, and an
  unknown argument is refused), so a tenant reaches only its own store: ids,
  cursors and explain tables are read inside it. A read-only grant refuses
  every write with ``namespace: 'NS' is read-only for this token``, before
  the store is touched, and its ``tools/list`` lists only the tools that
  declare themselves read-only. Without ``--tokens`` (loopback only) every
  request is the one ``--namespace``, read-write, as over stdio. A tokens
  file is read again when its content changes (``_tokens.WatchedTokens``),
  so an added or removed token takes effect within seconds, without a
  restart; an emptied file revokes every token.
  An empty token list (no one may connect) is refused at start off
  loopback: it is a mistake there, never a way to serve nobody.
- **What a tenant sees of a failure.** An operational failure (``database
  unreachable``...) is the cause and the tenant's namespace; the database
  URL, user, socket path and the driver's own text go to the operator's
  log (stderr) only, in the same line as over stdio.
- **Several workers.** Stateless Streamable HTTP with JSON responses (the
  SDK's ``stateless_http=True, json_response=True``): no session lives in a
  process, so any worker answers any request, a killed worker loses no
  session, and no stream outlives its request: ``GET /mcp`` (the SSE
  stream a stateful server would open) and ``DELETE /mcp`` are 405 with
  ``Allow: POST``. ``--workers N`` runs N processes on one socket
  (uvicorn's supervisor, which replaces a worker that dies); a worker whose
  supervisor died (even by SIGKILL) stops within a second, gracefully, so
  no orphan keeps the port and a restart binds it. Every write is one
  committed transaction before its reply, as over stdio: no acknowledged
  write is lost, ``key`` makes a retry idempotent, on PostgreSQL and on one
  SQLite file alike.
- **Operations.** ``GET /healthz`` reads the store (200 ``{"status": "ok"}``,
  else 503 with the cause, such as ``database unreachable``; the whole line,
  which names the database, goes to stderr only: the route needs no token);
  one JSON access-log line per request on stderr, written by one
  ``write(2)`` so that workers' lines never merge (never a body, header or
  token; a 403 names the token that was refused); a request body over
  ``--max-body-bytes`` (1 MiB by default) is 413 with a JSON-RPC error that
  says the limit; SIGTERM stops accepting, lets in-flight requests finish
  (a write commits and is answered), then closes the stores.
- **Slow or many clients.** A request's head (request line and headers)
  must arrive within ``--header-timeout`` seconds (10) of the connection
  or of the previous response, its body within ``--body-timeout`` seconds
  (30) of its head, else 408 and the connection is closed; a worker holds
  at most ``--max-connections`` connections (256) and answers one more
  with 503 and closes it. A client dribbling bytes holds a connection for
  at most those seconds, and never more than that many at once.
- **Every request answered.** A request whose ``id`` is not a string or an
  integer (an object, an array, null) would be read by the SDK as a
  notification and never answered: it is 400 with ``-32600`` and ``id:
  null`` (``_jsonrpc``, the rule stdio applies too).
"""

from __future__ import annotations

import argparse
import contextlib
import contextvars
import dataclasses
import functools
import ipaddress
import json
import logging
import os
import shutil
import signal
import sys
import tempfile
import threading
import time
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from datetime import datetime, timezone
from typing import Any, Final

import anyio
import anyio.to_thread
import poolsplit
from mcp.server.auth.middleware.auth_context import AuthContextMiddleware
from mcp.server.auth.middleware.bearer_auth import (
    AuthenticatedUser,
    BearerAuthBackend,
    RequireAuthMiddleware,
)
from mcp.server.auth.provider import AccessToken, TokenVerifier
from mcp.server.auth.routes import (
    build_resource_metadata_url,
    create_protected_resource_routes,
)
from mcp.server.auth.settings import AuthSettings
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.mcpserver import MCPServer
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp
from mcp.server.transport_security import TransportSecuritySettings
from mcp_types import ListToolsResult
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.authentication import AuthenticationMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from uvicorn.protocols.http.h11_impl import H11Protocol

from poolsplit_memory import (
    InvalidInput,
    NotGranted,
    Store,
    StoreError,
    StoreUnavailable,
    open_store,
)
from poolsplit_memory._jsonrpc import invalid_id, invalid_id_reply
from poolsplit_memory._tokens import (
    Grant,
    TokenRecord,
    WatchedTokens,
    grants_from_scopes,
    read_tokens,
    scopes_of,
)
from poolsplit_memory._trust import Writer, default_writer_name
from poolsplit_memory.store import set_snapshot_budget

__all__ = [
    "HttpConfig",
    "TokenFileVerifier",
    "build_app",
    "config_from_args",
    "current_store",
    "is_loopback",
    "request_store",
    "serve",
]

DEFAULT_MAX_BODY: Final = 1024 * 1024
# Slow clients: seconds for a request's head and for its body, and the
# connections one worker holds. 10 s is ample for a head (a few hundred
# bytes) on any link; 30 s carries the default 1 MiB body at 35 KB/s; 256
# connections per worker stay far below the usual 1,024 descriptors.
DEFAULT_HEADER_TIMEOUT: Final = 10.0
DEFAULT_BODY_TIMEOUT: Final = 30.0
DEFAULT_MAX_CONNECTIONS: Final = 256
# The file holding the workers' configuration (JSON, mode 0600, in a folder
# of mode 0700): a file, not the variable itself, because Linux caps one
# environment variable at 128 KiB and a thousand token records pass that (the
# workers then never started). It holds token digests, never a database URL.
ENV_CONFIG: Final = "POOLSPLIT_MCP_HTTP_CONFIG"
# The database URLs (``--db``, ``--read-db``: a password may be in them),
# handed to the workers in their environment instead, which only their user
# (and root) may read, and which no file keeps after a SIGKILL.
ENV_URLS: Final = "POOLSPLIT_MCP_HTTP_URLS"
# How long a worker may take to answer its supervisor's health check before it
# is killed and replaced: uvicorn's 5 s killed workers busy loading cold
# namespaces (benchmarks/team_scale.py at 1,000 tenants).
WORKER_HEALTHCHECK_S: Final = 30
ENV_SUPERVISOR: Final = "POOLSPLIT_MCP_HTTP_SUPERVISOR"  # its pid, for workers
_PROG: Final = "poolsplit-mcp"
_TENANT_KEY: Final = "poolsplit.tenant"
# What a read-only grant may use of a store; anything else (remember, update,
# forget, import_jsonl, and whatever a later release adds) is refused, so a
# new write path is closed to it until it is listed here.
_READS: Final = frozenset(
    {
        "recall",
        "get",
        "history",
        "list",
        "explain",
        "export_jsonl",
        "namespace",
        "pools",
        "url",
        "scrub_pending",
        "token_counter",
        "max_entry_tokens",
    }
)


@dataclasses.dataclass(frozen=True)
class HttpConfig:
    """What ``--http`` serves; JSON-able, so that spawned workers get it."""

    url: str
    namespace: str = "default"
    pools_file: str | None = None
    ranking: str = "lexical"
    host: str = "127.0.0.1"
    port: int = 8765
    workers: int = 1
    tokens: tuple[TokenRecord, ...] | None = None
    allowed_hosts: tuple[str, ...] = ()
    max_body: int = DEFAULT_MAX_BODY
    header_timeout: float = DEFAULT_HEADER_TIMEOUT
    body_timeout: float = DEFAULT_BODY_TIMEOUT
    max_connections: int = DEFAULT_MAX_CONNECTIONS
    tokens_path: str | None = None  # the file to watch (None: $POOLSPLIT_MCP_TOKENS)
    verifier: str | None = None  # MODULE:NAME of a TokenVerifier (or factory)
    issuer_url: str | None = None
    resource_url: str | None = None
    pool_size: int = 4  # issue 36: --pool-size, --snapshot-budget (MB), --read-db
    snapshot_mb: int = 256
    read_url: str | None = None
    tz: str | None = None  # issue 48: --tz, the time zone of a recall's message
    # issue 51: --writer, the name stamped on writes when no token names the
    # writer (no --tokens: loopback, as stdio); None: the OS user's name
    writer: str | None = None

    def to_json(self) -> str:
        """The configuration as JSON, without the database URLs (see
        :data:`ENV_URLS`): what the runtime file may hold."""
        data = dataclasses.asdict(self)
        data["url"] = data["read_url"] = None
        return json.dumps(data)

    def urls_json(self) -> str:
        """The database URLs as JSON, for :data:`ENV_URLS`."""
        return json.dumps({"url": self.url, "read_url": self.read_url})

    @classmethod
    def from_json(cls, text: str, urls: str) -> HttpConfig:
        """The configuration of :meth:`to_json`'s ``text``, with the URLs of
        :meth:`urls_json`'s."""
        data = {**json.loads(text), **json.loads(urls)}
        tokens = data["tokens"]
        return cls(
            url=data["url"],
            namespace=data["namespace"],
            pools_file=data["pools_file"],
            ranking=data["ranking"],
            host=data["host"],
            port=data["port"],
            workers=data["workers"],
            tokens=None
            if tokens is None
            else tuple(
                TokenRecord(
                    t["name"],
                    t["sha256"],
                    tuple(t["namespaces"]),
                    t["read_only"],
                    t.get("pin", False),
                    t.get("quarantine", False),
                )
                for t in tokens
            ),
            allowed_hosts=tuple(data["allowed_hosts"]),
            max_body=data["max_body"],
            header_timeout=data["header_timeout"],
            body_timeout=data["body_timeout"],
            max_connections=data["max_connections"],
            tokens_path=data["tokens_path"],
            verifier=data["verifier"],
            issuer_url=data["issuer_url"],
            resource_url=data["resource_url"],
            pool_size=data["pool_size"],
            snapshot_mb=data["snapshot_mb"],
            tz=data.get("tz"),
            read_url=data["read_url"],
            writer=data.get("writer"),
        )


# ---------------------------------------------------------------------------
# Tenants: the namespace of the request, and its store


@dataclasses.dataclass(frozen=True)
class _Tenant:
    """Who is asking (the token's name, "-" without tokens), which namespace
    the request serves, what it may do there (write, ``pin``; whether it is
    ``quarantine``d), the writer's name its writes are stamped with (the
    token's; without tokens ``--writer``'s), and ``call``: what the request
    did, for the access log (the tool, an entry id written)."""

    name: str
    namespace: str
    writable: bool
    pin: bool = False
    quarantine: bool = False
    writer: str | None = None
    call: dict[str, Any] = dataclasses.field(default_factory=dict)

    def acting(self) -> Writer:
        """The writer a store acts for in this request."""
        return Writer(
            self.writer or self.name, pin=self.pin, quarantine=self.quarantine
        )


_tenant: contextvars.ContextVar[_Tenant | None] = contextvars.ContextVar(
    "poolsplit_http_tenant", default=None
)


class _Stores:
    """One open store per namespace in use, opened on first use (a worker
    holds connections only for the namespaces it has served)."""

    def __init__(
        self,
        url: str,
        pools: Sequence[poolsplit.Pool] | None,
        ranking: str,
        **shared: Any,  # open_store's pool_size and read_url (issue 36)
    ) -> None:
        self._url = url
        self._pools = pools
        self._ranking = ranking
        self._shared = shared
        self._open: dict[str, Store] = {}
        self._lock = threading.Lock()

    def get(self, namespace: str) -> Store:
        with self._lock:
            store = self._open.get(namespace)
            if store is None:
                store = open_store(
                    self._url,
                    namespace=namespace,
                    pools=self._pools,
                    ranking=self._ranking,
                    **self._shared,
                )
                self._open[namespace] = store
            return store

    def close(self) -> None:
        with self._lock:
            stores, self._open = list(self._open.values()), {}
        for store in stores:
            store.close()


_stores: list[_Stores] = []  # the stores of this process's app (build_app)


def current_store() -> Store:
    """The store of the request being served: its tenant's namespace.

    The one hook of the tools over HTTP: every tool reads its store through
    this (here through :class:`_TenantStore`). Outside an HTTP request it
    fails closed (there is no default tenant).

    Raises:
        StoreUnavailable: called outside a request the gate let through.
    """
    tenant = _tenant.get()
    if tenant is None or not _stores:
        raise StoreUnavailable(
            "no tenant", "this call came from outside an HTTP request"
        )
    return _stores[-1].get(tenant.namespace)


class TenantFacing(StoreUnavailable):
    """An operational failure as a tenant sees it: ``cause: namespace 'NS'``.

    The store's own line names the database (a URL with its user and
    database, a socket path or a file path, the driver's text), which is
    the operator's business, not a tenant's: a tenant learns the cause only.
    ``operator_line`` keeps the whole line; the server's log writes it.
    """

    def __init__(self, exc: StoreUnavailable, namespace: str) -> None:
        super().__init__(exc.cause, f"namespace {namespace!r}")
        self.operator_line = str(exc)


def _for_tenant(exc: StoreUnavailable, tenant: _Tenant | None) -> StoreUnavailable:
    return exc if tenant is None else TenantFacing(exc, tenant.namespace)


class _TenantStore:
    """A stand-in for the one store ``build_server`` takes: each attribute is
    the current request's store's, looked up at each use; on a read-only
    grant anything but a read raises ``InvalidInput("namespace", ...)``
    before the store is touched. An operational failure, in opening the
    store or in a call, reaches the tenant as :class:`TenantFacing`."""

    def __getattr__(self, name: str) -> Any:
        tenant = _tenant.get()
        if tenant is not None and name == "acting_as":  # never another writer
            raise InvalidInput(
                "writer", "a request acts as its token's writer, never another"
            )
        if tenant is not None and not tenant.writable and name not in _READS:
            if name in _WRITES:
                tenant.call.update(outcome="refused", refused="read-only")
            raise InvalidInput(
                "namespace", f"{tenant.namespace!r} is read-only for this token"
            )
        try:
            store = current_store()
            if tenant is not None:
                store = store.acting_as(tenant.acting())
            value = getattr(store, name)
        except StoreUnavailable as exc:
            raise _for_tenant(exc, tenant) from exc
        if not callable(value):
            return value
        return _call_for(tenant, name, value)


def _call_for(tenant: _Tenant | None, name: str, method: Any) -> Any:
    """``method`` of the request's store as a tool calls it: an operational
    failure as the tenant sees it, and a write's target and outcome in the
    request's access log line (:func:`_log_target`, :func:`_log_outcome`)."""
    facts = tenant.call if tenant is not None and name in _WRITES else None

    @functools.wraps(method)
    def call(*args: Any, **kwargs: Any) -> Any:
        if facts is not None:
            _log_target(facts, name, args, kwargs)
        try:
            result = method(*args, **kwargs)
        except Exception as exc:
            if facts is not None:
                _log_outcome(facts, name, exc)
            if isinstance(exc, StoreUnavailable):
                raise _for_tenant(exc, tenant) from exc
            raise
        if facts is not None:
            _log_outcome(facts, name, result)
        return result

    return call


_WRITES: Final = frozenset({"remember", "update", "forget", "import_jsonl"})


def _log_target(
    facts: dict[str, Any], name: str, args: Sequence[Any], kwargs: Mapping[str, Any]
) -> None:
    """What a write is about, for the request's access log line: the entry
    id (update's and forget's, known before the call; remember's once it
    is written), or the writer whose entries ``forget(written_by=...)``
    deletes; a write refused for a grant adds ``"refused": GRANT``."""
    ident = args[0] if args else kwargs.get("id")
    if name in ("update", "forget") and isinstance(ident, str):
        facts["id"] = ident[:200]
    elif name == "forget" and isinstance(kwargs.get("written_by"), str):
        facts["written_by"] = kwargs["written_by"][:200]


def _log_outcome(facts: dict[str, Any], name: str, result: object) -> None:
    """How a write ended, for its access log line: ``ok`` (remember's new
    id, forget's count deleted), ``refused`` (and the grant it lacked),
    ``error`` (and the field named) or ``unavailable``."""
    if isinstance(result, NotGranted):
        facts["outcome"], facts["refused"] = "refused", result.grant
    elif isinstance(result, StoreUnavailable):
        facts["outcome"] = "unavailable"
    elif isinstance(result, Exception):
        facts["outcome"] = "error"
        field = getattr(result, "field", None)
        if isinstance(field, str):
            facts["field"] = field
    else:
        facts["outcome"] = "ok"
        if name == "remember":
            facts["id"] = getattr(result, "id", None)
        elif name == "forget":
            facts["deleted"] = int(result)  # type: ignore[call-overload]


def tenant_store() -> Any:
    """The store a server over HTTP is built with (:func:`worker_app`): a
    :class:`_TenantStore`, each request's tenant's store."""
    return _TenantStore()


def request_store() -> Any:
    """The current HTTP request's store (a :class:`_TenantStore`: read-only
    grants enforced), or None outside an HTTP request (stdio).

    For a tool resolver that cannot be handed the stand-in: ``return
    _http.request_store() or the_one_store``.
    """
    return _TenantStore() if _tenant.get() is not None else None


async def _tenant_middleware(
    ctx: ServerRequestContext[Any, Any], call_next: CallNext
) -> HandlerResult:
    """Server middleware: the request's tenant (set on the HTTP scope by the
    gate) for the handler and the tool it runs, whatever task or thread the
    SDK runs them in."""
    request = ctx.request
    scope = getattr(request, "scope", None)
    tenant = scope.get(_TENANT_KEY) if isinstance(scope, Mapping) else None
    tenant = tenant if isinstance(tenant, _Tenant) else None
    if tenant is not None and ctx.method == "tools/call":
        params = ctx.params
        tool = params.get("name") if isinstance(params, Mapping) else None
        if isinstance(tool, str):
            tenant.call["tool"] = tool[:100]
    token = _tenant.set(tenant)
    try:
        result = await call_next(ctx)
    finally:
        _tenant.reset(token)
    if tenant is not None and not tenant.writable and ctx.method == "tools/list":
        return _read_only_tools(result)
    return result


def _read_only_tools(result: HandlerResult) -> HandlerResult:
    """``tools/list`` for a read-only grant: only the tools whose annotations
    say they change nothing (``readOnlyHint``), so a client does not offer
    a tool every call of which would be refused. The SDK hands middleware
    the result as its wire dict (a model is read the same way)."""
    if isinstance(result, ListToolsResult):
        result = result.model_dump(by_alias=True, exclude_none=True)
    tools = result.get("tools") if isinstance(result, dict) else None
    if not isinstance(tools, list):
        return result
    assert isinstance(result, dict)

    def reads_only(tool: object) -> bool:
        notes = tool.get("annotations") if isinstance(tool, dict) else None
        return isinstance(notes, dict) and notes.get("readOnlyHint") is True

    return {**result, "tools": [tool for tool in tools if reads_only(tool)]}


class _Gate:
    """ASGI: the request's namespace from its path and its token's grants.

    Inside the SDK's ``RequireAuthMiddleware`` (the token is valid by then):
    ``/mcp`` is the first granted namespace, ``/mcp/NS`` must be granted,
    else 403 (the same for a namespace that exists and one that does not).
    """

    def __init__(
        self, app: ASGIApp, default_namespace: str, default_writer: str
    ) -> None:
        self.app = app
        self.default_namespace = default_namespace
        self.default_writer = default_writer

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        user = scope.get("user")
        writer = None
        if isinstance(user, AuthenticatedUser):
            name = user.access_token.client_id
            grants = grants_from_scopes(user.access_token.scopes)
        else:  # no tokens configured: loopback, the one namespace, as stdio
            name, writer = "-", self.default_writer
            grants = {self.default_namespace: Grant(True, pin=True)}
        asked = scope.get("path_params", {}).get("namespace")
        namespace = asked if asked is not None else next(iter(grants), None)
        if namespace is None or namespace not in grants:
            # the access log names the token refused (a probe is traced to it)
            scope[_TENANT_KEY] = _Tenant(name, namespace or "", False, writer=writer)
            what = "no namespace" if namespace is None else f"namespace {namespace!r}"
            whom = "this token" if name != "-" else "this server (--namespace)"
            await _rpc_error(403, f"{what} is not granted to {whom}")(
                scope, receive, send
            )
            return
        grant = grants[namespace]
        scope[_TENANT_KEY] = _Tenant(
            name, namespace, grant.writable, grant.pin, grant.quarantine, writer
        )
        await self.app(scope, receive, send)


class _PostOnly:
    """ASGI, outermost on ``/mcp``: anything but POST is 405 with ``Allow:
    POST``. The server is stateless, so it opens no SSE stream (``GET``,
    which the SDK would hold open forever) and has no session to end
    (``DELETE``); MCP's Streamable HTTP says to answer 405 then."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope.get("method") != "POST":
            refusal = _rpc_error(
                405,
                f"method {scope.get('method')} is not allowed: this server is "
                "stateless (no stream, no session); POST JSON-RPC requests",
            )
            refusal.headers["allow"] = "POST"
            await refusal(scope, receive, send)
            return
        await self.app(scope, receive, send)


def _rpc_error(
    status: int, message: str, code: int = -32600, *, close: bool = False
) -> Response:
    """A JSON-RPC error (no id) with an HTTP status: one line a client shows.
    ``close``: the connection ends after it (the body was not read whole)."""
    body = {"jsonrpc": "2.0", "id": None, "error": {"code": code, "message": message}}
    headers = {"connection": "close"} if close else None
    return JSONResponse(body, status_code=status, headers=headers)


# ---------------------------------------------------------------------------
# Tokens: the file's, through the SDK's TokenVerifier protocol


class TokenFileVerifier(TokenVerifier):
    """The SDK's ``TokenVerifier`` over a tokens file's records.

    A match is an ``AccessToken`` whose ``client_id`` is the record's name
    and whose scopes are its grants; ``token`` holds the hash, never the
    secret. Any other ``TokenVerifier`` (a real authorization server's) can
    take its place: it grants namespaces by the same scopes.
    """

    def __init__(self, records: Sequence[TokenRecord] | WatchedTokens) -> None:
        self.tokens = (
            records if isinstance(records, WatchedTokens) else WatchedTokens(records)
        )

    async def verify_token(self, token: str) -> AccessToken | None:
        record = self.tokens.match(token)
        if record is None:
            return None
        return AccessToken(
            token=f"sha256:{record.sha256}",
            client_id=record.name,
            scopes=scopes_of(record),
        )


# ---------------------------------------------------------------------------
# Operations: access log, body limit, health


class _AccessLog:
    """ASGI: one JSON line per request on stderr, after it is answered:
    time, worker pid, method, path, status, duration, bytes in and out, and
    the tenant's name and namespace. Never a body, a header or a query."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()
        facts: dict[str, int] = {"status": 0, "in": 0, "out": 0}

        async def counted_receive() -> Message:
            message = await receive()
            if message["type"] == "http.request":
                facts["in"] += len(message.get("body", b""))
            return message

        async def watched_send(message: Message) -> None:
            if message["type"] == "http.response.start":
                facts["status"] = message["status"]
            elif message["type"] == "http.response.body":
                facts["out"] += len(message.get("body", b""))
            await send(message)

        try:
            await self.app(scope, counted_receive, watched_send)
        finally:
            tenant = scope.get(_TENANT_KEY)
            line = {
                "time": datetime.now(timezone.utc).isoformat(timespec="milliseconds"),
                "pid": os.getpid(),
                "method": scope.get("method"),
                "path": scope.get("path"),
                "status": facts["status"],
                "ms": round((time.perf_counter() - start) * 1000, 2),
                "in": facts["in"],
                "out": facts["out"],
                "tenant": tenant.name if isinstance(tenant, _Tenant) else None,
                "namespace": tenant.namespace if isinstance(tenant, _Tenant) else None,
            }
            if isinstance(tenant, _Tenant):  # the tool called, the entry written
                line.update(tenant.call)
            # (U+2028, U+2029 and U+0085 escaped: a reader splitting lines
            # by Unicode's rules must still see one line a request)
            text = json.dumps(line, ensure_ascii=False)
            for char in "\u2028\u2029\x85":
                text = text.replace(char, f"\\u{ord(char):04x}")
            _write_line(text)


def _write_line(text: str) -> None:
    """``text`` and its newline on stderr in one ``write(2)`` (looping only
    if the kernel takes part of it), so that lines of several workers
    sharing one stderr never interleave: ``print`` may write the line and
    its newline separately, and two workers' lines then merge as ``}{``."""
    sys.stderr.flush()  # anything printed before stays before
    data = (text + "\n").encode("utf-8", "backslashreplace")
    while data:
        written = os.write(2, data)
        data = data[written:]


class _BodyLimit:
    """ASGI: a body over ``limit`` bytes is 413 with a JSON-RPC error naming
    the limit, before anything parses it (declared or streamed); a body not
    read whole within ``timeout`` seconds is 408; a request whose ``id`` no
    reply can carry is 400 with ``-32600`` and ``id: null`` (``_jsonrpc``)."""

    def __init__(self, app: ASGIApp, limit: int, timeout: float) -> None:
        self.app = app
        self.limit = limit
        self.timeout = timeout

    def _refusal(self) -> Response:
        return _rpc_error(
            413,
            f"request body too large: this server accepts at most {self.limit} "
            f"bytes (poolsplit-mcp --max-body-bytes)",
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("method") != "POST":
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers", [])).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.limit:
            await self._refusal()(scope, receive, send)
            return
        body = bytearray()
        complete = False
        with anyio.move_on_after(self.timeout):
            while True:
                message = await receive()
                if message["type"] != "http.request":  # the client went away
                    return
                body += message.get("body", b"")
                if len(body) > self.limit:
                    await self._refusal()(scope, receive, send)
                    return
                if not message.get("more_body", False):
                    complete = True
                    break
        if not complete:
            await _rpc_error(
                408,
                f"request body not received within {self.timeout:g} s "
                f"(poolsplit-mcp --body-timeout)",
                close=True,
            )(scope, receive, send)
            return
        reason = _bad_id(bytes(body))
        if reason is not None:
            await JSONResponse(invalid_id_reply(reason), status_code=400)(
                scope, receive, send
            )
            return
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": bytes(body), "more_body": False}
            return await receive()

        await self.app(scope, replay, send)


def _bad_id(body: bytes) -> str | None:
    """Why the JSON body is a request no reply can carry (``_jsonrpc``), or
    None; a body that is not JSON is the SDK's to answer (a parse error)."""
    try:
        message = json.loads(body)
    except (ValueError, RecursionError):
        return None
    return invalid_id(message)


def _health(stores: _Stores, namespace: str) -> Route:
    """``GET /healthz``: one read of the store; 503 with the cause if not."""

    def check() -> None:
        stores.get(namespace).get("healthz")

    async def healthz(request: Request) -> Response:
        try:
            with anyio.fail_after(10):
                await anyio.to_thread.run_sync(check)
        except TimeoutError:
            return JSONResponse(
                {"status": "unavailable", "error": "store did not answer in 10 s"},
                status_code=503,
            )
        except StoreError as exc:  # the cause only: no URL to the unauthenticated
            line = " ".join(str(exc).split())
            print(f"{_PROG}: /healthz: {line}", file=sys.stderr, flush=True)
            cause = exc.cause if isinstance(exc, StoreUnavailable) else "store error"
            return JSONResponse(
                {"status": "unavailable", "error": cause}, status_code=503
            )
        return JSONResponse({"status": "ok", "pid": os.getpid()})

    return Route("/healthz", healthz, methods=["GET"])


# ---------------------------------------------------------------------------
# The app


def is_loopback(host: str) -> bool:
    """True for localhost and loopback addresses (127.0.0.0/8, ::1)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _security(config: HttpConfig) -> TransportSecuritySettings:
    """Host and Origin checks: the loopback names, the bound host unless it
    is a wildcard (0.0.0.0, ::), and each ``--allowed-host``."""
    hosts = ["127.0.0.1", "localhost", "[::1]"]
    bound = config.host.strip("[]")
    try:
        wildcard = ipaddress.ip_address(bound).is_unspecified
    except ValueError:  # a name
        wildcard = False
    if not wildcard:
        hosts.append(f"[{bound}]" if ":" in bound else bound)
    hosts.extend(config.allowed_hosts)
    allowed = list(dict.fromkeys(hosts))
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=[h for host in allowed for h in (host, f"{host}:*")],
        allowed_origins=[
            f"{scheme}://{h}"
            for host in allowed
            for scheme in ("http", "https")
            for h in (host, f"{host}:*")
        ],
    )


def build_app(
    server: MCPServer[Any],
    config: HttpConfig,
    *,
    token_verifier: TokenVerifier | None = None,
    auth: AuthSettings | None = None,
) -> Starlette:
    """The ASGI app serving ``server`` (built over a :class:`_TenantStore`)
    per tenant, statelessly, with the operations routes.

    ``token_verifier`` defaults to the config's tokens file (none: no
    authentication, the one ``config.namespace``); a real authorization
    server plugs in here with ``auth`` (its ``AuthSettings``: issuer and
    ``resource_server_url``, which also publishes the protected-resource
    metadata that 401s point to).
    """
    if token_verifier is None and config.tokens is not None:
        token_verifier = TokenFileVerifier(
            WatchedTokens(config.tokens, config.tokens_path)
        )
    pools = (
        poolsplit.load_pools(config.pools_file)
        if config.pools_file is not None
        else None
    )
    stores = _Stores(
        config.url,
        pools,
        config.ranking,
        pool_size=config.pool_size,
        read_url=config.read_url,
    )
    set_snapshot_budget(config.snapshot_mb * 1024 * 1024)
    _stores[:] = [stores]
    server.middleware.append(_tenant_middleware)
    # What a request writes on stderr is its one JSON access line: the SDK's
    # own per-request INFO lines ("Terminating session: None" after every
    # stateless request, issue 52) are not, nor the connection pool's ("adding
    # new connection to the pool"); their warnings and errors still are.
    for name in ("mcp", "psycopg.pool"):
        logging.getLogger(name).setLevel(logging.WARNING)
    # The SDK builds its session manager here; its routes are replaced below
    # (the gate sits between the SDK's auth check and its transport).
    server.streamable_http_app(
        json_response=True,
        stateless_http=True,
        transport_security=_security(config),
        max_request_body_size=config.max_body,
    )
    manager = server.session_manager
    endpoint: ASGIApp = _Gate(
        StreamableHTTPASGIApp(manager),
        config.namespace,
        config.writer or default_writer_name(),
    )
    middleware: list[Middleware] = [
        Middleware(_AccessLog),
        Middleware(_BodyLimit, limit=config.max_body, timeout=config.body_timeout),
    ]
    routes: list[BaseRoute] = [_health(stores, config.namespace)]
    if token_verifier is not None:
        resource = auth.resource_server_url if auth is not None else None
        middleware += [
            Middleware(
                AuthenticationMiddleware,
                backend=BearerAuthBackend(
                    token_verifier,
                    resource_server_url=resource
                    if auth is not None and auth.validate_token_resource
                    else None,
                ),
            ),
            Middleware(AuthContextMiddleware),
        ]
        endpoint = RequireAuthMiddleware(
            endpoint,
            auth.required_scopes or [] if auth is not None else [],
            build_resource_metadata_url(resource) if resource is not None else None,
        )
        if auth is not None and resource is not None:
            routes += create_protected_resource_routes(
                resource_url=resource,
                authorization_servers=[auth.issuer_url],
                scopes_supported=auth.required_scopes,
            )
    endpoint = _PostOnly(endpoint)
    routes += [Route("/mcp", endpoint), Route("/mcp/{namespace:path}", endpoint)]

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        try:
            async with manager.run():
                yield
        finally:  # after uvicorn has let every in-flight request finish
            await anyio.to_thread.run_sync(stores.close)

    return Starlette(routes=routes, middleware=middleware, lifespan=lifespan)


def load_verifier(config: HttpConfig) -> tuple[TokenVerifier, AuthSettings] | None:
    """``--token-verifier MODULE:NAME``: the object NAME of MODULE (a
    ``TokenVerifier``, its class, or a callable without arguments returning
    one), with
    the ``AuthSettings`` of ``--issuer-url`` and ``--resource-url``; tokens
    must be issued for the resource URL (``AccessToken.resource``)."""
    if config.verifier is None:
        return None
    import importlib

    module, _, name = config.verifier.partition(":")
    found: Any = importlib.import_module(module)
    for part in name.split("."):
        found = getattr(found, part)
    # an instance as it is; a class or a factory called without arguments
    plain = hasattr(found, "verify_token") and not isinstance(found, type)
    verifier = found if plain else found()
    auth = AuthSettings.model_validate(
        {
            "issuer_url": config.issuer_url,
            "resource_server_url": config.resource_url,
            "validate_token_resource": True,
        }
    )
    return verifier, auth


def check_verifier(config: HttpConfig) -> None:
    """Load ``--token-verifier`` once before serving; ValueError with one
    line if it cannot be loaded or a URL is not one."""
    try:
        load_verifier(config)
    except Exception as exc:
        errors = getattr(exc, "errors", None)  # pydantic: name the field
        first = (
            "; ".join(f"{e['loc'][0]}: {e['msg']}" for e in errors())
            if callable(errors)
            else (str(exc).splitlines() or [""])[0]
        )
        raise ValueError(
            f"--token-verifier {config.verifier}: {type(exc).__name__}: {first}"
        ) from None


def _address(http: str) -> tuple[str, int]:
    """``--http HOST:PORT`` as (host, port), brackets of an IPv6 host off."""
    host, sep, port = http.rpartition(":")
    host = host.strip("[]")
    if not sep or not host or not port.isdigit() or int(port) > 65535:
        raise ValueError(f"--http {http!r}: must be HOST:PORT, e.g. 127.0.0.1:8765")
    return host, int(port)


def _check_limits(args: argparse.Namespace) -> None:
    """The counts, the timeouts and --ephemeral beside --workers."""
    for flag, value in (
        ("--workers", args.workers),
        ("--max-body-bytes", args.max_body_bytes),
        ("--max-connections", args.max_connections),
    ):
        if value < 1:
            raise ValueError(f"{flag} must be at least 1, got {value}")
    for flag, seconds in (
        ("--header-timeout", args.header_timeout),
        ("--body-timeout", args.body_timeout),
    ):
        if not seconds > 0 or seconds == float("inf"):
            raise ValueError(
                f"{flag} must be a positive number of seconds, got {seconds}"
            )
    if args.ephemeral and args.workers > 1:
        raise ValueError("--ephemeral keeps memory in one process; drop --workers")


def _tokens_for(args: argparse.Namespace, host: str) -> list[TokenRecord] | None:
    """The tokens of --tokens (or the environment), None for none given,
    once the way in is known to be one: tokens or a verifier, not both,
    and some way in off loopback."""
    tokens = read_tokens(args.tokens)  # TokensError is a ValueError
    plugged = (args.token_verifier, args.issuer_url, args.resource_url)
    if any(plugged) and not all(plugged):
        raise ValueError(
            "--token-verifier, --issuer-url and --resource-url go together"
        )
    if args.token_verifier is not None and tokens is not None:
        raise ValueError("give --tokens or --token-verifier, not both")
    if tokens is None and args.token_verifier is None and not is_loopback(host):
        raise ValueError(
            f"--http {args.http}: a non-loopback address needs --tokens FILE "
            f"(poolsplit-mcp token add NAME --namespace NS)"
        )
    if tokens == [] and not is_loopback(host):
        source = "$POOLSPLIT_MCP_TOKENS" if args.tokens is None else args.tokens
        raise ValueError(
            f"--http {args.http}: {source} holds no token, so no one could "
            f"connect (poolsplit-mcp token add NAME --namespace NS)"
        )
    return tokens


def config_from_args(args: argparse.Namespace, url: str) -> HttpConfig:
    """``--http``'s configuration from ``poolsplit-mcp``'s flags, checked
    before any store is opened; raises ValueError with the one line."""
    host, port = _address(args.http)
    _check_limits(args)
    tokens = _tokens_for(args, host)
    config = HttpConfig(
        url=url,
        namespace=args.namespace,
        pools_file=args.pools,
        ranking=args.ranking,
        host=host,
        port=port,
        workers=args.workers,
        tokens=None if tokens is None else tuple(tokens),
        allowed_hosts=tuple(args.allowed_host),
        max_body=args.max_body_bytes,
        header_timeout=args.header_timeout,
        body_timeout=args.body_timeout,
        max_connections=args.max_connections,
        tokens_path=args.tokens if tokens is not None and args.tokens else None,
        verifier=args.token_verifier,
        issuer_url=args.issuer_url,
        resource_url=args.resource_url,
        pool_size=args.pool_size,
        snapshot_mb=args.snapshot_budget,
        read_url=args.read_db,
        tz=args.tz,
        writer=args.writer,
    )
    check_verifier(config)
    return config


def worker_config() -> HttpConfig:
    """A spawned worker's configuration: the file ``$POOLSPLIT_MCP_HTTP_CONFIG``
    names, and the database URLs of ``$POOLSPLIT_MCP_HTTP_URLS``."""
    with open(os.environ[ENV_CONFIG], encoding="utf-8") as f:
        return HttpConfig.from_json(f.read(), os.environ[ENV_URLS])


def worker_app(server: MCPServer[Any]) -> Starlette:
    """The app of one spawned worker (``--workers N``) serving ``server``
    (built over :func:`tenant_store`), from the parent's configuration in
    the file ``$POOLSPLIT_MCP_HTTP_CONFIG`` names."""
    config = worker_config()
    supervisor = os.environ.get(ENV_SUPERVISOR)
    if supervisor is not None and int(supervisor) != os.getpid():
        _exit_with_supervisor(int(supervisor))
    plugged = load_verifier(config)
    if plugged is None:
        return build_app(server, config)
    return build_app(server, config, token_verifier=plugged[0], auth=plugged[1])


def _exit_with_supervisor(supervisor: int, interval: float = 0.5) -> None:
    """Stop this worker (SIGTERM to itself: uvicorn's graceful shutdown, so
    in-flight requests finish) once its supervisor is gone.

    The supervisor replaces dead workers and owns the socket; a worker that
    outlives it (the supervisor was SIGKILLed, so it told no one) would
    serve on with nothing to replace it and keep the port bound, and a
    restart would fail with ``Address already in use``. A daemon thread
    polls ``getppid()`` (a dead parent's children are re-parented, so their
    parent pid changes), on every platform; ``prctl(PR_SET_PDEATHSIG)``
    would be Linux only and is tied to the thread that forked the worker.
    """

    def watch() -> None:
        while os.getppid() == supervisor:
            time.sleep(interval)
        print(
            f"{_PROG}: worker {os.getpid()}: supervisor {supervisor} is gone; stopping",
            file=sys.stderr,
            flush=True,
        )
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=watch, name="supervisor-watch", daemon=True).start()


class _Connection(H11Protocol):
    """uvicorn's HTTP/1.1 protocol (h11) with a deadline on each request's
    head and a cap on a worker's connections.

    A request's head must arrive within ``header_timeout`` seconds of the
    connection or of the previous response (uvicorn's own keep-alive
    timeout stops at the first byte, so a client sending one byte a second
    held a connection forever); when it does not, a client that sent part
    of one gets 408, and the connection is closed. A connection beyond
    ``max_connections`` is answered 503 and closed at once, before it is
    read (uvicorn's ``limit_concurrency`` looks only once a head arrived).
    """

    def __init__(
        self,
        *args: Any,
        header_timeout: float,
        max_connections: int,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        self._header_timeout = header_timeout
        self._max_connections = max_connections
        self._head_timer: Any = None
        self._waiting_since: Any = None  # the cycle a new head must replace
        self._partial = False

    def connection_made(self, transport: Any) -> None:
        super().connection_made(transport)
        if len(self.connections) > self._max_connections:
            _raw_refusal(
                transport,
                503,
                f"too many connections: a worker holds at most "
                f"{self._max_connections} (poolsplit-mcp --max-connections)",
            )
            return
        self._await_head()

    def data_received(self, data: bytes) -> None:
        self._partial = True
        super().data_received(data)

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing():
            self._await_head()

    def connection_lost(self, exc: Exception | None) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
        super().connection_lost(exc)

    def _await_head(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
        self._waiting_since = self.cycle
        self._partial = False
        self._head_timer = self.loop.call_later(
            self._header_timeout, self._head_deadline
        )

    def _head_deadline(self) -> None:
        self._head_timer = None
        cycle = self.cycle
        if cycle is not self._waiting_since:  # a new request's head arrived
            return
        if cycle is not None and not cycle.response_complete:
            return  # a request is being served
        if self.transport.is_closing():
            return
        if self._partial:
            _raw_refusal(
                self.transport,
                408,
                f"request head not received within {self._header_timeout:g} s "
                f"(poolsplit-mcp --header-timeout)",
            )
        else:
            self.transport.close()


def _raw_refusal(transport: Any, status: int, message: str) -> None:
    """A JSON-RPC error written straight to a connection, which is closed:
    for refusals made before (or instead of) reading a request."""
    body = json.dumps(
        {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": message}}
    ).encode("utf-8")
    reason = {408: "Request Timeout", 503: "Service Unavailable"}[status]
    head = (
        f"HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\n"
        f"content-length: {len(body)}\r\nconnection: close\r\n\r\n"
    )
    transport.write(head.encode("ascii") + body)
    transport.close()


def serve(config: HttpConfig, where: str, app: str) -> int:
    """Bind, say where on stderr, and serve until SIGTERM or SIGINT.

    ``app`` is the ``module:function`` each worker calls for its ASGI app (the
    server module's, which builds its server and calls :func:`worker_app`):
    named by the caller, so this module imports nothing above it. The
    workers' configuration goes in a runtime file, ``config.json`` (mode
    0600) in a folder of its own (``poolsplit-mcp-*`` in the temporary
    folder, mode 0700), removed when the server stops: a return, SIGTERM or
    SIGINT, one worker or several. Only a SIGKILL leaves it, and it holds
    token digests, never a token or a database URL (those go in the
    workers' environment, :data:`ENV_URLS`).

    A SIGTERM or SIGINT is raised again once the folder is gone, as uvicorn
    does, with its default action: the process ends by the signal it
    handled (systemd's clean stop), without a traceback.
    """
    try:
        with _unwound_by_signals():
            folder = tempfile.mkdtemp(prefix="poolsplit-mcp-")  # 0700, ours alone
            try:
                path = os.path.join(folder, "config.json")
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
                with os.fdopen(fd, "w", encoding="utf-8") as f:
                    f.write(config.to_json())
                os.environ[ENV_CONFIG] = path
                os.environ[ENV_URLS] = config.urls_json()
                os.environ[ENV_SUPERVISOR] = str(os.getpid())
                return _run(config, where, app)
            finally:
                _remove(folder)
    except _Stopped as stop:
        # ended by the signal, as a process without a handler for it ends
        # (a SIGINT too: no KeyboardInterrupt traceback after a clean stop)
        signal.signal(stop.signum, signal.SIG_DFL)
        signal.raise_signal(stop.signum)
        return 128 + stop.signum  # not reached where the default ends us


def _remove(folder: str) -> None:
    """Remove the runtime folder whole: a second signal meanwhile (a
    second Ctrl-C) is raised once it is gone, never halfway."""
    pending: _Stopped | None = None
    while True:
        try:
            shutil.rmtree(folder, ignore_errors=True)
            break
        except _Stopped as stop:
            pending = stop
    if pending is not None:
        raise pending


class _Stopped(BaseException):
    """A SIGTERM or SIGINT, unwinding :func:`serve` so that its runtime
    folder is removed before the signal is raised again."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def _stop(signum: int, frame: object) -> None:
    raise _Stopped(signum)


@contextlib.contextmanager
def _unwound_by_signals() -> Iterator[None]:
    """SIGTERM and SIGINT raise :class:`_Stopped` while inside, and their
    handlers of before are back after.

    uvicorn's single-worker server handles both itself, restores the
    handlers it found (these) when it has shut down, and raises the signal
    again: without them, the default SIGTERM ended the process there, and
    no ``finally`` ran (the runtime file stayed behind, 6 times of 6). A
    signal before uvicorn takes over unwinds as well. Outside the main
    thread no handler can be set, and nothing is changed.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    signals = (signal.SIGTERM, signal.SIGINT)
    before = {signum: signal.signal(signum, _stop) for signum in signals}
    try:
        yield
    finally:
        for signum, handler in before.items():
            signal.signal(signum, handler)


def _run(config: HttpConfig, where: str, app: str) -> int:
    """:func:`serve`, its workers' configuration written."""
    import uvicorn
    from uvicorn.supervisors import Multiprocess

    uv = uvicorn.Config(
        app,
        factory=True,
        http=functools.partial(  # type: ignore[arg-type]
            _Connection,
            header_timeout=config.header_timeout,
            max_connections=config.max_connections,
        ),
        host=config.host,
        port=config.port,
        workers=config.workers,
        log_config=None,
        access_log=False,
        server_header=False,
        lifespan="on",
        timeout_graceful_shutdown=None,  # in-flight writes always finish
        timeout_worker_healthcheck=WORKER_HEALTHCHECK_S,
    )
    try:
        sock = uv.bind_socket()
    except SystemExit:
        print(
            f"{_PROG}: error: cannot bind {config.host}:{config.port}", file=sys.stderr
        )
        return 2
    # Listening before the line below is printed: a client that connects on
    # reading it waits in the backlog for a worker instead of being refused.
    sock.listen(uv.backlog)
    port = sock.getsockname()[1]
    host = f"[{config.host}]" if ":" in config.host else config.host
    if config.verifier is not None:
        auth = f"tokens verified by {config.verifier}"
    elif config.tokens is not None:
        auth = f"{len(config.tokens)} token(s)"
    else:
        auth = "no tokens (loopback only)"
    print(
        f"{_PROG}: serving http://{host}:{port}/mcp ({config.workers} worker(s), "
        f"stateless), memory {where}, {auth}",
        file=sys.stderr,
        flush=True,
    )
    if config.workers > 1:
        Multiprocess(uv, sockets=[sock]).run()
    else:
        uvicorn.Server(uv).run(sockets=[sock])
    return 0
