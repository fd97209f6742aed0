"""Serving ``poolsplit-mcp`` over stdio: every request line answered, and
Ctrl-C as one line and status 130.

The SDK's stdio transport reads standard input through :class:`_Stdin`,
which answers here each line the SDK cannot read (invalid UTF-8, invalid
JSON, a lone surrogate, nesting past what the SDK parses, an id no reply
can carry) with one JSON-RPC error, and passes every other line on.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
from typing import Any, Callable, Final

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.stdio import stdio_server
from mcp.shared.dispatcher import as_request_id, coerce_request_id
from mcp.shared.message import SessionMessage
from mcp_types import (
    INVALID_REQUEST,
    PARSE_ERROR,
    ErrorData,
    JSONRPCError,
    JSONRPCMessage,
    JSONRPCNotification,
    JSONRPCRequest,
    JSONRPCResponse,
    jsonrpc_message_adapter,
)
from pydantic import ValidationError

from poolsplit_memory._args import PROG as _PROG
from poolsplit_memory._jsonrpc import invalid_id

__all__ = ["run_stdio"]


def _top_level_id(text: str) -> str | int | None:
    """The ``id`` member of the JSON object ``text`` starts, found without
    parsing the rest (a request too deep or broken to parse still has one),
    or None, also for an id no reply can carry (issue 52: an id nested past
    the recursion limit, a string with a lone surrogate, which UTF-8 cannot
    write, ended the server)."""
    depth, index, in_string = 0, 0, False
    while index < len(text):
        char = text[index]
        if in_string:
            if char == "\\":
                index += 1
            elif char == '"':
                in_string = False
        elif char == '"':
            if depth == 1 and text.startswith('"id"', index):
                after = text[index + 4 :].lstrip()
                if after.startswith(":"):
                    return _answerable(after[1:].lstrip())
            in_string = True
        elif char in "{[":
            depth += 1
        elif char in "}]":
            depth -= 1
        index += 1
    return None


def _answerable(text: str) -> str | int | None:
    """The JSON value ``text`` starts if a reply can carry it as its id: an
    integer, or a string UTF-8 can write; else None."""
    try:
        value, _ = json.JSONDecoder().raw_decode(text)
    except (ValueError, RecursionError):
        return None
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return None
        return value
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _checked(raw: bytes) -> JSONRPCError | JSONRPCMessage | None:
    """The JSON-RPC error answering a line the SDK cannot read; else the
    message the SDK reads in it (its own parse: :class:`_Stdin` notes the
    requests), or None (an unreadable notification, which gets no answer);
    either is passed on.

    Invalid UTF-8 is refused (not read with U+FFFD in place of the bytes);
    invalid JSON is a parse error; a lone surrogate or nesting the SDK's
    parser refuses is an invalid request, answered with the request's id.
    """
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        ident = _top_level_id(raw.decode("utf-8", errors="replace"))
        return _error(
            ident, PARSE_ERROR, f"Parse error: invalid UTF-8 at byte {exc.start}"
        )
    try:
        message = jsonrpc_message_adapter.validate_json(text, by_name=False)
    except ValidationError as exc:
        reason = _unreadable_reason(exc)
    else:  # an id the SDK cannot answer makes it a "notification" (_jsonrpc)
        bad = invalid_id(json.loads(text))
        return message if bad is None else _error(None, INVALID_REQUEST, bad)
    try:
        value = json.loads(text)
    except ValueError as exc:
        return _error(_top_level_id(text), PARSE_ERROR, f"Parse error: {exc}")
    except RecursionError:
        value = None
    if isinstance(value, dict) and "id" not in value and "method" in value:
        print(f"{_PROG}: ignored an unreadable notification: {reason}", file=sys.stderr)
        return None
    return _error(_top_level_id(text), INVALID_REQUEST, f"Invalid request: {reason}")


def _unreadable_reason(exc: ValidationError) -> str:
    """Why the SDK refused a line, in one short line: its JSON parser's
    message (a lone surrogate, nesting past its limit), or the shape."""
    for error in exc.errors():
        if error["type"] == "json_invalid":
            return " ".join(str(error["msg"]).split())
    return "not a JSON-RPC 2.0 request, notification or response"


def _error(ident: str | int | None, code: int, message: str) -> JSONRPCError:
    return JSONRPCError(
        jsonrpc="2.0", id=ident, error=ErrorData(code=code, message=message)
    )


class _Stdin:
    """The lines of standard input the SDK's stdio transport reads: each line
    the SDK can read passes as it is; any other is answered here, through the
    transport's own write stream, and not passed on (the SDK would log it at
    debug level and never answer)."""

    def __init__(self) -> None:
        self.lines = anyio.wrap_file(sys.stdin.buffer)
        self.answer: Callable[[SessionMessage], Any] | None = None
        self.ready = anyio.Event()
        # The ids of the requests passed on and not answered yet, as the
        # SDK correlates them ("7" and 7 are one id): when the client closes
        # stdin, their answers are awaited first (the SDK cancels what is in
        # flight once its input ends).
        self.pending: set[str | int] = set()
        self._answered = anyio.Event()

    def passed(self, message: JSONRPCMessage) -> None:
        """Note a message passed on, as the SDK parsed it: a request's id
        (but a listen's, answered only when the connection ends), or the end
        of one the client cancelled (which the SDK no longer answers)."""
        if isinstance(message, JSONRPCRequest):
            if message.method not in _ANSWERED_AT_THE_END:
                self.pending.add(coerce_request_id(message.id))
        elif (
            isinstance(message, JSONRPCNotification)
            and message.method == "notifications/cancelled"
            and isinstance(message.params, dict)
        ):
            cancelled = as_request_id(message.params.get("requestId"))
            if cancelled is not None:
                self.pending.discard(coerce_request_id(cancelled))

    def answered(self, message: SessionMessage) -> None:
        """Note a message written: a response or an error ends its request."""
        sent = message.message
        if isinstance(sent, (JSONRPCResponse, JSONRPCError)) and sent.id is not None:
            self.pending.discard(coerce_request_id(sent.id))
            self._answered.set()

    async def _drain(self) -> None:
        """Wait for the answers of the requests passed on (stdin has ended),
        at most :data:`_ANSWER_GRACE_S`; a request still unanswered then is
        named on stderr."""
        with anyio.move_on_after(_ANSWER_GRACE_S):
            while self.pending:
                await self._answered.wait()
                self._answered = anyio.Event()
        if self.pending:
            left = ", ".join(sorted(map(repr, self.pending)))
            print(
                f"{_PROG}: stdin closed; no answer within {_ANSWER_GRACE_S:g} s "
                f"to request id {left}",
                file=sys.stderr,
            )

    def __aiter__(self) -> _Stdin:
        return self

    async def __anext__(self) -> str:
        while True:
            raw = await self.lines.readline()
            if not raw:
                await self._drain()
                raise StopAsyncIteration
            line = raw.rstrip(b"\r\n")
            if not line.strip():  # a blank line carries no message
                continue
            refusal = _checked(line)
            if not isinstance(refusal, JSONRPCError):
                if refusal is not None:
                    self.passed(refusal)
                return str(raw.decode("utf-8"))
            await self.ready.wait()
            assert self.answer is not None
            await self.answer(SessionMessage(refusal))


async def _serve_stdio(server: MCPServer[Any]) -> None:
    """Serve over stdio with the SDK's transport, reading stdin through
    :class:`_Stdin` so that every request line gets an answer."""
    stdin = _Stdin()
    async with stdio_server(stdin=stdin) as (read_stream, write_stream):  # type: ignore[arg-type]
        stdin.answer = write_stream.send
        stdin.ready.set()
        lowlevel = server._lowlevel_server  # as MCPServer.run_stdio_async does
        await lowlevel.run(
            read_stream,
            _Noted(write_stream, stdin),
            lowlevel.create_initialization_options(),
        )


class _Noted:
    """The server's write stream, each message noted by :class:`_Stdin` once
    sent (what it waits for when stdin ends)."""

    def __init__(self, stream: Any, stdin: _Stdin) -> None:
        self._stream, self._stdin = stream, stdin

    async def send(self, message: SessionMessage) -> None:
        await self._stream.send(message)
        self._stdin.answered(message)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)

    async def __aenter__(self) -> _Noted:
        await self._stream.__aenter__()
        return self

    async def __aexit__(self, *exc: Any) -> Any:
        return await self._stream.__aexit__(*exc)


def run_stdio(server: MCPServer[Any]) -> int:
    """Serve ``server`` over stdio until the client closes it (0) or Ctrl-C
    (130, one line on stderr, no traceback: the first page says Ctrl-C
    stops it)."""
    interrupted: list[bool] = []
    main = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGINT, _interrupt_early) if main else None
    try:
        anyio.run(_serve_until_interrupted, server, interrupted)
    except BaseException as exc:
        if not _only_interrupts(exc):
            raise _single(exc) from None
        interrupted.append(True)
    finally:
        if main:
            signal.signal(signal.SIGINT, previous)
    if interrupted:
        _say_stopped()
        return 130
    return 0


# When the client closes stdin, how long the answers of the requests it sent
# before may take to be written (a first recall reads its namespace whole).
_ANSWER_GRACE_S: Final = 60.0
# Requests the SDK answers only when the connection ends (a listen's stream):
# never waited for.
_ANSWERED_AT_THE_END: Final = frozenset({"subscriptions/listen"})
# After Ctrl-C, how long the server may take to stop by itself (an answer
# being written, stdin closing) before the process exits without it.
_STOP_GRACE_S: Final = 2.0


def _interrupt_early(signum: int, frame: object) -> None:
    """Ctrl-C before the server watches for it (the event loop starting):
    KeyboardInterrupt as usual, and the grace timer, since a thread reading
    stdin may already hold the exit up. Set before the loop starts, it also
    keeps asyncio from installing its own handler, which cancelled the
    serving task: a cancellation that met stdin's end exited 0."""
    _start_grace()
    raise KeyboardInterrupt


def _start_grace() -> None:
    """After :data:`_STOP_GRACE_S`, exit 130 whatever still runs."""
    timer = threading.Timer(_STOP_GRACE_S, _exit_stopped)
    timer.daemon = True
    timer.start()


async def _serve_until_interrupted(
    server: MCPServer[Any], interrupted: list[bool]
) -> None:
    """:func:`_serve_stdio`, stopped by SIGINT, which is noted in
    ``interrupted``: asyncio's own SIGINT handler cancels the serving task,
    and a cancellation that lands as stdin ends (the client closed it) was
    taken for a clean end (exit 0 after Ctrl-C, seen under load). The
    serving task cannot stop while a thread waits on stdin (a client that
    keeps it open, a terminal): after :data:`_STOP_GRACE_S` the process
    exits 130 without it (every acknowledged write has committed; one in
    flight was not acknowledged and rolls back)."""
    async with anyio.create_task_group() as group:

        async def watch() -> None:
            with anyio.open_signal_receiver(signal.SIGINT) as signals:
                async for _ in signals:
                    interrupted.append(True)
                    _start_grace()
                    group.cancel_scope.cancel()
                    return

        if sys.platform != "win32":  # (no signal receiver there: asyncio's)
            group.start_soon(watch)
        await _serve_stdio(server)
        group.cancel_scope.cancel()


def _exit_stopped() -> None:
    """End the process at once, as Ctrl-C's one line and status 130 (also
    when the interpreter's exit waits on the thread reading stdin)."""
    _say_stopped()
    os._exit(130)


_stopped_said = threading.Lock()


def _say_stopped() -> None:
    """Ctrl-C's one line on stderr, once whoever says it."""
    if _stopped_said.acquire(blocking=False):
        sys.stderr.write(f"{_PROG}: stopped\n")
        sys.stderr.flush()


def _only_interrupts(exc: BaseException) -> bool:
    """Whether ``exc`` is KeyboardInterrupt, or an exception group (the
    task group's) holding only such."""
    if isinstance(exc, KeyboardInterrupt):
        return True
    inner = getattr(exc, "exceptions", None)
    return (
        isinstance(inner, tuple)
        and bool(inner)
        and all(_only_interrupts(e) for e in inner)
    )


def _single(exc: BaseException) -> BaseException:
    """The one exception an exception group of one holds (the task group
    wraps the server's own error), else ``exc``."""
    inner = getattr(exc, "exceptions", None)
    while isinstance(inner, tuple) and len(inner) == 1:
        exc = inner[0]
        inner = getattr(exc, "exceptions", None)
    return exc
