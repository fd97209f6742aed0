"""What the server tests share to talk to ``poolsplit-mcp``: the JSON-RPC
headers and one request over plain HTTP, and a tool called on a server
built in-process by the real ``mcp`` client.

The ``mcp`` SDK (Python 3.10+) is imported inside the functions that use
it, so that a test module may import this one before its
``pytest.importorskip("mcp")``.
"""

from __future__ import annotations

import http.client
import json
from typing import Any

HANG = 120  # seconds: a guard against a hung server, never a measurement
HEADERS = {
    "content-type": "application/json",
    "accept": "application/json, text/event-stream",
    "mcp-protocol-version": "2025-06-18",
}


def request(base, method, path, body=b"", headers=None, timeout=60):
    """(status, lowercase headers, body bytes) of one plain HTTP request."""
    host, port = base.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=timeout)
    try:
        conn.request(method, path, body=body, headers=headers or {})
        response = conn.getresponse()
        data = response.read()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, data
    finally:
        conn.close()


def jsonrpc(base, method, params, token=None, namespace=None, headers=None):
    """(status, body) of one JSON-RPC request (id 1) POSTed to ``/mcp`` (or
    ``/mcp/NAMESPACE``): the reply parsed when the body is JSON, else its
    text."""
    path = "/mcp" if namespace is None else f"/mcp/{namespace}"
    sent = dict(HEADERS)
    if token is not None:
        sent["authorization"] = f"Bearer {token}"
    sent.update(headers or {})
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    status, _, data = request(base, "POST", path, json.dumps(body).encode(), sent)
    try:
        return status, json.loads(data)
    except ValueError:
        return status, data.decode("utf-8", "replace")


def run(fn):
    """Run an async test body under a hang guard."""
    import anyio

    async def guarded():
        with anyio.fail_after(HANG):
            await fn()

    anyio.run(guarded)


def call(store, tool, arguments, **server_options: Any):
    """The result of one tool call on ``build_server(store)``, in-process."""
    from mcp.client import Client

    from poolsplit_memory.mcp_server import build_server

    out = []

    async def body():
        async with Client(build_server(store, **server_options)) as client:
            out.append(await client.call_tool(tool, arguments))

    run(body)
    return out[0]
