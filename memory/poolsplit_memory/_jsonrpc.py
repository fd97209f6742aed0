"""The one rule for a JSON-RPC request's ``id``, shared by stdio and HTTP.

MCP requests carry a string or an integer ``id`` (never null). The SDK reads
a message with a ``method`` and any other ``id`` (an object, an array, null,
a boolean, a fraction, even ``1.0``) as a notification, and a notification
gets no answer: the client would wait forever. Both transports answer such a
request here with ``-32600`` (invalid request) and ``id: null``, as JSON-RPC
2.0 says for a request whose id cannot be read.

Standard library only, so that both transports import it cheaply.
"""

from __future__ import annotations

from typing import Any, Final

__all__ = ["INVALID_ID", "invalid_id", "invalid_id_reply"]

INVALID_ID: Final = (
    "Invalid request: id must be a string or an integer (MCP), got {kind}"
)


def _kind(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, float):
        return "a number with a fraction or exponent"
    if isinstance(value, list):
        return "an array"
    return "an object" if isinstance(value, dict) else type(value).__name__


def invalid_id(message: object) -> str | None:
    """Why ``message`` (parsed JSON) is a request whose ``id`` no reply can
    carry, or None when it is not one (a good id, a notification without an
    ``id`` member, a response, anything that is not an object).

    >>> invalid_id({"jsonrpc": "2.0", "id": {"a": 1}, "method": "ping"})
    'Invalid request: id must be a string or an integer (MCP), got an object'
    >>> invalid_id({"jsonrpc": "2.0", "id": 7, "method": "ping"}) is None
    True
    """
    if not isinstance(message, dict) or "id" not in message:
        return None
    if "method" not in message:
        return None
    ident = message["id"]
    if isinstance(ident, (str, int)) and not isinstance(ident, bool):
        return None
    return INVALID_ID.format(kind=_kind(ident))


def invalid_id_reply(reason: str) -> dict[str, Any]:
    """The JSON-RPC error answering such a request (``id`` null)."""
    return {
        "jsonrpc": "2.0",
        "id": None,
        "error": {"code": -32600, "message": reason},
    }
