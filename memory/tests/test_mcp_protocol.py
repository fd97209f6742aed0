"""poolsplit-mcp as real clients drive it: raw JSON-RPC lines and the mcp client.

Issue 26 §2-§3: every request line gets an answer (a lone surrogate, deep
nesting, invalid UTF-8, any bytes), the string "null" stays a string, numbers
may come as numeric strings, the schemas say what the tools take, tool
annotations, serverInfo.version, --version, the logging capability, recall
and explain texts that fit a chat, identical memories stored once, and list
cursors bound to their namespace. The server is the installed console script
over stdio; every wait is bounded (a missing reply fails, never hangs).
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest
from _mcp_client import run

pytest.importorskip("mcp")  # the mcp extra needs Python 3.10+

from mcp.client import Client  # noqa: E402
from mcp.client.stdio import StdioServerParameters  # noqa: E402

import poolsplit_memory  # noqa: E402

SERVER = Path(sys.executable).with_name("poolsplit-mcp")
REPLY = 20  # seconds a reply may take before the test fails: a guard, not a measure
HANG = 120


# --- a raw JSON-RPC session over the server's stdin and stdout ---------------


class Raw:
    """The server as a process, written to and read from line by line."""

    def __init__(self, tmp_path, *args):
        self.proc = subprocess.Popen(
            [str(SERVER), *map(str, args)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=tmp_path,
            env={**os.environ, "XDG_DATA_HOME": str(tmp_path / "xdg")},
        )
        self.buffer = b""

    def send(self, line: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line + b"\n")
        self.proc.stdin.flush()

    def reply(self) -> dict:
        """The next line the server writes, parsed; fails after REPLY seconds."""
        assert self.proc.stdout is not None
        deadline = time.monotonic() + REPLY
        while b"\n" not in self.buffer:
            left = deadline - time.monotonic()
            ready, _, _ = select.select([self.proc.stdout], [], [], max(left, 0))
            if not ready:
                pytest.fail(f"no reply within {REPLY} s")
            chunk = os.read(self.proc.stdout.fileno(), 65536)
            if not chunk:
                pytest.fail("the server closed its output without a reply")
            self.buffer += chunk
        line, _, self.buffer = self.buffer.partition(b"\n")
        return json.loads(line)

    def request(self, ident, method, params=None) -> dict:
        message = {"jsonrpc": "2.0", "id": ident, "method": method}
        if params is not None:
            message["params"] = params
        self.send(json.dumps(message).encode())
        return self.reply_to(ident)

    def reply_to(self, ident) -> dict:
        """The reply with this id (log notifications before it are kept)."""
        self.notes = []
        for _ in range(100):
            got = self.reply()
            if got.get("id") == ident and "method" not in got:
                return got
            self.notes.append(got)
        pytest.fail(f"no reply with id {ident!r}")

    def start(self) -> dict:
        got = self.request(
            0,
            "initialize",
            {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "raw", "version": "1"},
            },
        )
        self.send(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}')
        return got

    def call(self, ident, tool, arguments) -> dict:
        got = self.request(ident, "tools/call", {"name": tool, "arguments": arguments})
        assert "result" in got, got
        return got["result"]

    def close(self) -> str:
        assert self.proc.stdin is not None and self.proc.stderr is not None
        self.proc.stdin.close()
        try:
            self.proc.wait(HANG)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
        try:
            return self.proc.stderr.read().decode("utf-8", "replace")
        finally:
            self.proc.stderr.close()
            assert self.proc.stdout is not None
            self.proc.stdout.close()


@pytest.fixture
def raw(tmp_path):
    session = Raw(tmp_path, "--db", tmp_path / "memory.db")
    yield session
    session.close()


def tool_call(ident, arguments_json: bytes) -> bytes:
    return (
        b'{"jsonrpc": "2.0", "id": %d, "method": "tools/call", "params": '
        b'{"name": "remember", "arguments": %s}}' % (ident, arguments_json)
    )


def error_line(result) -> str:
    assert result["isError"] is True, result
    [block] = result["content"]
    assert "\n" not in block["text"]
    return block["text"]


# --- every request line gets an answer --------------------------------------


DEEP_LIST = b"[" * 1000 + b"]" * 1000
DEEP_OBJECT = b'{"a": ' * 1000 + b"1" + b"}" * 1000


@pytest.mark.parametrize(
    ("line", "code"),
    [
        (tool_call(7, b'{"content": "\\ud800"}'), -32600),
        (
            tool_call(
                7, b'{"content": "x", "tags": ' + b"[" * 1000 + b"]" * 1000 + b"}"
            ),
            -32600,
        ),
        (
            tool_call(
                7, b'{"content": ' + b'{"a": ' * 1000 + b"1" + b"}" * 1000 + b"}"
            ),
            -32600,
        ),
        (tool_call(7, b'{"content": "caf\xe9"}'), -32700),  # Latin-1, not UTF-8
        (tool_call(7, b'{"content": "x"'), -32700),  # cut short
    ],
    ids=["lone-surrogate", "deep-list", "deep-object", "invalid-utf8", "truncated"],
)
def test_a_request_the_sdk_cannot_read_is_answered_with_its_id(raw, line, code):
    raw.start()
    raw.send(line)
    got = raw.reply()
    assert got["id"] == 7, got
    assert got["error"]["code"] == code
    assert "\n" not in got["error"]["message"]
    # nothing was stored, and the server still serves
    listed = raw.call(8, "list", {})
    assert listed["structuredContent"]["entries"] == []


@pytest.mark.parametrize(
    "ident",
    [b'"\\ud800"', b"[" * 1000 + b"]" * 1000, b'{"a": ' * 1000 + b"1" + b"}" * 1000],
    ids=["lone-surrogate", "deep-list", "deep-object"],
)
def test_an_id_no_reply_can_carry_is_answered_and_the_server_keeps_serving(raw, ident):
    """Issue 52: such an id killed the server (exit 1): the answer echoed a
    lone surrogate UTF-8 cannot write, or finding the id hit the recursion
    limit. JSON-RPC answers a request whose id cannot be read with id null."""
    raw.start()
    raw.send(b'{"jsonrpc": "2.0", "id": %s, "method": "ping"}' % ident)
    got = raw.reply()
    assert got["id"] is None and got["error"]["code"] == -32600, got
    assert "\n" not in got["error"]["message"]
    assert raw.request(2, "ping") == {"jsonrpc": "2.0", "id": 2, "result": {}}
    assert raw.proc.poll() is None


@pytest.mark.parametrize(
    "line",
    [b"\xff\xfe\x00garbage", b"not json at all", b"[]", b"5", b'{"jsonrpc": "2.0"}'],
    ids=["bytes", "text", "batch", "number", "no-method"],
)
def test_any_other_line_is_answered_with_a_null_id_error(raw, line):
    raw.start()
    raw.send(line)
    got = raw.reply()
    assert got["id"] is None and got["error"]["code"] in (-32700, -32600), got
    assert raw.call(9, "list", {})["isError"] is False


def test_invalid_utf8_is_refused_not_stored_as_a_replacement_character(raw):
    raw.start()
    raw.send(tool_call(3, b'{"content": "caf\xc3"}'))
    got = raw.reply()
    assert got["error"]["code"] == -32700 and "UTF-8" in got["error"]["message"]
    entries = raw.call(4, "list", {})["structuredContent"]["entries"]
    assert not any("\ufffd" in e["content"] for e in entries)
    assert entries == []


# --- strings, numbers and schemas -------------------------------------------


def test_the_string_null_stays_a_string(raw):
    raw.start()
    written = raw.call(1, "remember", {"content": "x", "project": "null"})
    ident = written["structuredContent"]["id"]
    got = raw.call(2, "get", {"id": ident})["structuredContent"]["entry"]
    assert got["project"] == "null"
    refused = raw.call(3, "remember", {"content": "y", "supersedes": "null"})
    assert error_line(refused).startswith("supersedes: no entry 'null'")
    kept = raw.call(4, "update", {"id": ident, "base_priority": "null"})
    assert error_line(kept).startswith("base_priority: must be number")
    kept = raw.call(5, "update", {"id": ident, "tags": "null"})
    assert error_line(kept).startswith("tags: must be array")
    assert raw.call(6, "get", {"id": ident})["structuredContent"]["entry"] == got


def test_numbers_sent_as_numeric_strings_are_read_as_numbers(raw):
    raw.start()
    written = raw.call(1, "remember", {"content": "x", "base_priority": "9"})
    ident = written["structuredContent"]["id"]
    entry = raw.call(2, "get", {"id": ident})["structuredContent"]["entry"]
    assert entry["base_priority"] == 9
    for number in range(3):
        raw.call(10 + number, "remember", {"content": f"n{number}"})
    page = raw.call(3, "list", {"limit": "2"})["structuredContent"]
    assert len(page["entries"]) == 2
    assert error_line(raw.call(4, "list", {"limit": "2.5"})).startswith("limit:")
    assert error_line(raw.call(5, "list", {"limit": "501"})).startswith("limit:")
    bad = raw.call(6, "remember", {"content": "y", "base_priority": "high"})
    assert error_line(bad).startswith("base_priority: must be number")


def test_the_schemas_say_what_the_tools_take(tmp_path):
    async def body():
        async with Client(params(tmp_path)) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            remember = tools["remember"].input_schema["properties"]
            assert {"enum": ["always", "context"]} in remember["scope"]["anyOf"]
            limit = tools["list"].input_schema["properties"]["limit"]
            assert (limit["minimum"], limit["maximum"]) == (1, 500)
            assert limit["type"] == "integer"
            summary = tools["explain"].input_schema["properties"]["summary"]
            assert summary["default"] is True
            for name in ("remember", "recall", "get", "list", "update", "explain"):
                schema = tools[name].input_schema
                assert "ctx" not in schema["properties"], name

    run(body)


def test_a_type_the_schema_refuses_is_a_one_line_error_naming_the_field(raw):
    raw.start()
    assert error_line(
        raw.call(1, "remember", {"content": "x", "scope": "sometimes"})
    ).startswith("scope:")
    assert error_line(raw.call(2, "remember", {"content": 5})).startswith("content:")
    unknown = raw.call(3, "remember", {"content": "x", "supercedes": "a"})
    assert error_line(unknown).startswith("supercedes: unknown argument")


# --- what the server says about itself --------------------------------------


def test_server_info_annotations_logging_and_descriptions(raw):
    info = raw.start()["result"]
    assert info["serverInfo"]["version"] == poolsplit_memory.__version__
    assert "logging" in info["capabilities"]
    tools = {t["name"]: t for t in raw.request(1, "tools/list")["result"]["tools"]}
    for name in ("recall", "get", "list", "explain"):
        assert tools[name]["annotations"]["readOnlyHint"] is True, name
    assert tools["forget"]["annotations"]["destructiveHint"] is True
    assert tools["remember"]["annotations"]["readOnlyHint"] is False
    assert tools["remember"]["annotations"]["idempotentHint"] is True
    description = tools["remember"]["description"]
    assert description.startswith(poolsplit_memory.REMEMBER_DESCRIPTION)
    assert "idempotent" in description
    assert '"correction" with scope "always"' in " ".join(description.split())


def test_version_flag_prints_the_package_version(tmp_path):
    done = subprocess.run(
        [str(SERVER), "--version"],
        capture_output=True,
        text=True,
        timeout=HANG,
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0
    assert done.stdout.strip() == f"poolsplit-mcp {poolsplit_memory.__version__}"


def test_set_level_is_honoured_and_warnings_are_sent_as_log_notifications(raw):
    raw.start()
    # a type close to a pool's: the write warns ("did you mean 'correction'?")
    raw.call(1, "remember", {"content": "a", "type": "corection"})
    [note] = raw.notes
    assert note["method"] == "notifications/message"
    assert note["params"]["level"] == "warning"
    assert "corection" in note["params"]["data"]
    assert raw.request(2, "logging/setLevel", {"level": "error"})["result"] == {}
    raw.call(3, "remember", {"content": "b", "type": "corection"})
    assert raw.notes == []  # below the level set
    assert "error" in raw.request(4, "logging/setLevel", {"level": "loud"})


# --- answers that fit a chat ------------------------------------------------


def params(tmp_path, *args):
    return StdioServerParameters(
        command=str(SERVER),
        args=[str(a) for a in (args or ("--db", tmp_path / "memory.db"))],
        env={"XDG_DATA_HOME": str(tmp_path / "xdg")},
        cwd=str(tmp_path),
    )


def text(result) -> str:
    [block] = result.content
    return block.text


def test_recall_text_names_ids_warnings_and_an_empty_store(tmp_path):
    words = " ".join(["rule"] * 1500)

    async def body():
        async with Client(params(tmp_path)) as client:
            empty = text(await client.call_tool("recall", {"message": "hi"}))
            assert "Nothing is stored" in empty
            ids = []
            for number in range(3):  # always-scope past 4,000 tokens together
                got = await client.call_tool(
                    "remember",
                    {
                        "content": f"{number} {words}",
                        "type": "correction",
                        "scope": "always",
                    },
                )
                ids.append(got.structured_content["id"])
            recalled = await client.call_tool("recall", {"message": "rule"})
            shown = text(recalled)
            for ident in ids:
                assert f"[{ident}]" in shown
            warnings = recalled.structured_content["warnings"]
            stale = [w for w in warnings if w.startswith("possible_supersedes:")]
            [budget] = [w for w in warnings if w not in stale]
            assert budget in shown
            # the three differ only by a number, no term: three versions of
            # one rule, as the README's rule reads them, a warning per pair
            assert len(stale) == 3
            assert all(warning in shown for warning in stale)

    run(body)


def test_identical_memories_are_stored_once(tmp_path):
    rule = {
        "content": "Never deploy on Fridays.",
        "type": "correction",
        "scope": "always",
    }

    async def body():
        async with Client(params(tmp_path)) as client:
            first = (await client.call_tool("remember", rule)).structured_content
            assert first["warnings"] == []
            for content in (rule["content"], "  Never deploy\non  Fridays. "):
                again = await client.call_tool("remember", {**rule, "content": content})
                assert again.structured_content["id"] == first["id"]
                [warning] = again.structured_content["warnings"]
                assert warning.startswith("idempotent:")
            recalled = text(await client.call_tool("recall", {"message": "deploy"}))
            assert recalled.count("Never deploy on Fridays.") == 1
            other = await client.call_tool("remember", {**rule, "scope": None})
            assert other.structured_content["id"] != first["id"]  # another scope
            listed = await client.call_tool("list", {})
            assert len(listed.structured_content["entries"]) == 2
            into = await client.call_tool(
                "update",
                {"id": other.structured_content["id"], "scope": "always"},
            )
            assert into.is_error and first["id"] in text(into)

    run(body)


def test_explain_answers_with_a_bounded_summary_and_takes_the_filters(tmp_path):
    from poolsplit_memory import open_store
    from poolsplit_memory.mcp_server import EXPLAIN_LIMIT

    db = tmp_path / "memory.db"
    with open_store(str(db)) as store:
        lines = "".join(
            json.dumps({"id": f"n{i}", "content": f"note number {i} " * 3}) + "\n"
            for i in range(3000)
        )
        import io

        store.import_jsonl(io.StringIO(lines))
        store.remember("Never deploy on Fridays.", type="correction", scope="always")

    async def body():
        async with Client(params(tmp_path, "--db", db)) as client:
            summary = await client.call_tool("explain", {"message": "note"})
            assert not summary.is_error
            assert "n1234" not in text(summary)  # no row per entry by default
            assert "outcomes:" in text(summary)
            assert "check their spelling" not in text(summary)
            assert "admits nothing" not in text(summary)
            assert summary.structured_content == {"table": text(summary), "cut": False}
            rows = await client.call_tool(
                "explain", {"message": "note", "summary": False}
            )
            shown = text(rows)
            assert len(shown) <= EXPLAIN_LIMIT
            assert rows.structured_content == {"table": shown, "cut": True}
            assert shown.rstrip().endswith("or outcomes]")
            assert "summary=true" in shown.splitlines()[-1]
            one = await client.call_tool(
                "explain", {"message": "note", "summary": False, "ids": ["n1234"]}
            )
            assert "n1234" in text(one) and "n1233" not in text(one)
            assert not one.structured_content["cut"]
            picked = await client.call_tool(
                "explain",
                {"message": "x", "summary": False, "types": ["correction"]},
            )
            assert "Never" not in text(picked) and "always" in text(picked)
            bad = await client.call_tool(
                "explain", {"message": "x", "outcomes": ["chosen"]}
            )
            assert bad.is_error and text(bad).startswith("outcomes:")

    run(body)


# --- cursors ----------------------------------------------------------------


def test_a_cursor_belongs_to_its_namespace_and_reveals_no_row_count(tmp_path):
    db = tmp_path / "memory.db"

    async def body():
        async with (
            Client(params(tmp_path, "--db", db, "--namespace", "ada")) as ada,
            Client(params(tmp_path, "--db", db, "--namespace", "bob")) as bob,
        ):
            for number in range(5):
                await bob.call_tool("remember", {"content": f"bob {number}"})
            for number in range(3):
                await ada.call_tool("remember", {"content": f"ada {number}"})
            page = (await ada.call_tool("list", {"limit": 1})).structured_content
            cursor = page["next_cursor"]
            assert not cursor.isdigit()  # not the file's row counter
            refused = await bob.call_tool("list", {"limit": 1, "cursor": cursor})
            assert refused.is_error and text(refused).startswith("cursor:")
            rest = await ada.call_tool("list", {"limit": 5, "cursor": cursor})
            contents = [e["content"] for e in rest.structured_content["entries"]]
            assert contents == ["ada 1", "ada 2"]

    run(body)


def piped(tmp_path, lines) -> subprocess.CompletedProcess[bytes]:
    """The server on ``tmp_path / "memory.db"`` given ``lines`` (JSON-RPC
    messages) on stdin, which is then closed, as a script's pipe does."""
    return subprocess.run(
        [str(SERVER), "--db", str(tmp_path / "memory.db")],
        input="".join(json.dumps(line) + "\n" for line in lines).encode(),
        capture_output=True,
        cwd=tmp_path,
        env={**os.environ, "XDG_DATA_HOME": str(tmp_path / "xdg")},
        timeout=120,
        check=False,
    )


def test_every_request_sent_before_stdin_closed_is_answered(tmp_path):
    """A client that writes its requests and closes stdin at once (a script,
    a pipe) gets every answer, and its memory is stored: before, the SDK
    cancelled what was in flight when its input ended, so the remember was
    made but never acknowledged and the recall never answered."""
    db = tmp_path / "memory.db"
    hello = {"protocolVersion": "2025-06-18", "capabilities": {},
             "clientInfo": {"name": "pipe", "version": "1"}}  # fmt: skip
    fact = {"content": "Ada drinks green tea", "type": "fact"}
    remember = {"name": "remember", "arguments": fact}
    recall = {"name": "recall", "arguments": {"message": "tea"}}
    lines = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": hello},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": remember},
        {"jsonrpc": "2.0", "id": "three", "method": "tools/call", "params": recall},
    ]
    done = piped(tmp_path, lines)
    answers = {m["id"]: m for m in map(json.loads, done.stdout.splitlines())}
    assert set(answers) == {1, 2, "three"}, done.stderr.decode()
    assert done.returncode == 0 and b"no answer" not in done.stderr
    written = json.loads(answers[2]["result"]["content"][0]["text"])
    assert "result" in answers["three"]
    with poolsplit_memory.open_store(str(db)) as store:
        assert store.get(written["id"])["content"] == "Ada drinks green tea"


_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": {"name": "pipe", "version": "1"},
    "io.modelcontextprotocol/clientCapabilities": {},
}
_RECALL = {"name": "recall", "arguments": {"message": "tea"}}


@pytest.mark.parametrize(
    "lines",
    [
        [  # a listen is answered only when the connection ends
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "tools/list",
                "params": {"_meta": _META},
            },
            {
                "jsonrpc": "2.0",
                "id": 2,
                "method": "subscriptions/listen",
                "params": {"notifications": {"toolsListChanged": True}, "_meta": _META},
            },
        ],
        [  # cancelled as "7": one id with 7 for the SDK, which never answers it
            {
                "jsonrpc": "2.0",
                "id": 7,
                "method": "tools/call",
                "params": {**_RECALL, "_meta": _META},
            },
            {
                "jsonrpc": "2.0",
                "method": "notifications/cancelled",
                "params": {"requestId": "7"},
            },
        ],
        [  # a request-shaped error: the SDK reads a response, and drops it
            {
                "jsonrpc": "2.0",
                "id": 9,
                "method": "ping",
                "error": {"code": 1, "message": "x"},
            },
        ],
    ],  # fmt: skip
    ids=["listen", "cancelled-as-a-string", "method-and-error"],
)
def test_stdin_closing_waits_only_for_answers_the_sdk_will_write(tmp_path, lines):
    """What the SDK will never answer is not waited for at stdin's end (a
    wait would hold every exit for 60 s and name the id on stderr)."""
    done = piped(tmp_path, lines)
    assert done.returncode == 0
    assert b"no answer" not in done.stderr, done.stderr.decode()
