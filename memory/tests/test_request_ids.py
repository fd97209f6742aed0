"""Every JSON-RPC request gets a reply, whatever its ``id`` (issue 36).

The SDK reads a message with a ``method`` and an ``id`` that is not a
string or an integer as a notification, which nobody answers: a client
waits forever. ``_jsonrpc.invalid_id`` is the one rule; stdio answers such a
line with ``-32600`` and ``id: null`` (HTTP's answer is in test_http). Also:
the version the package says, and the changelog that starts with it.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

pytest.importorskip("mcp")  # the mcp extra needs Python 3.10+

from test_mcp_protocol import Raw  # noqa: E402

import poolsplit_memory  # noqa: E402
from poolsplit_memory._jsonrpc import invalid_id  # noqa: E402

UNANSWERABLE = [{"a": 1}, [1], None, 1.5, 1.0, True, False]
IDS = ["object", "array", "null", "fraction", "float", "true", "false"]


@pytest.mark.parametrize("ident", UNANSWERABLE, ids=IDS)
def test_a_request_with_an_unanswerable_id_is_named(ident):
    message = {"jsonrpc": "2.0", "id": ident, "method": "tools/list"}
    reason = invalid_id(message)
    assert reason is not None
    assert reason.startswith("Invalid request: id must be a string or an integer")


@pytest.mark.parametrize(
    "message",
    [
        {"jsonrpc": "2.0", "id": 0, "method": "ping"},
        {"jsonrpc": "2.0", "id": -7, "method": "ping"},
        {"jsonrpc": "2.0", "id": "", "method": "ping"},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": {"a": 1}, "result": {}},  # a response
        [{"jsonrpc": "2.0", "id": {"a": 1}, "method": "ping"}],  # not an object
        "text",
    ],
    ids=["zero", "negative", "empty-string", "notification", "response", "batch",
         "string"],
)  # fmt: skip
def test_anything_else_is_not_an_unanswerable_request(message):
    assert invalid_id(message) is None


@pytest.fixture
def raw(tmp_path):
    session = Raw(tmp_path, "--db", tmp_path / "memory.db")
    yield session
    session.close()


@pytest.mark.parametrize("ident", UNANSWERABLE, ids=IDS)
def test_stdio_answers_a_request_with_an_unanswerable_id(raw, ident):
    raw.start()
    line = {"jsonrpc": "2.0", "id": ident, "method": "tools/list"}
    raw.send(json.dumps(line).encode())
    got = raw.reply()  # fails after a bound if the server never answers
    assert got["id"] is None, got
    assert got["error"]["code"] == -32600
    assert "id must be a string or an integer" in got["error"]["message"]
    assert raw.call(9, "list", {})["isError"] is False  # still serving


def test_the_version_is_0_2_0_and_the_changelog_starts_with_it():
    """0.2.0: the schema (version 4), the list cursors and the default
    ranking changed since 0.1.0; memory/CHANGELOG.md's first version is the
    package's, under an Unreleased section."""
    assert poolsplit_memory.__version__ == "0.2.0"
    changelog = Path(__file__).parents[1] / "CHANGELOG.md"
    headings = re.findall(r"^## \[([^\]]+)\]", changelog.read_text(), re.M)
    assert headings[:2] == ["Unreleased", poolsplit_memory.__version__]
    assert "0.1.0" in headings
