"""What a model and a client meet first, over the real ``mcp`` client.

``update`` as a strict client sends it (every field, null for "unchanged"),
every tool's description and schema as ``tools/list`` delivers them, the
entries as resources and the ``recall`` prompt, over stdio from the
installed ``poolsplit-mcp``; and over ``--http`` with tokens, that no URI
reaches another tenant's entry.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import threading
import time

import pytest
from conftest import unstamped

mcp = pytest.importorskip("mcp")  # the mcp extra needs Python 3.10+

from _mcp_client import jsonrpc  # noqa: E402
from mcp.shared.exceptions import MCPError  # noqa: E402
from test_http import add_token, serve  # noqa: E402
from test_mcp import HANG, SERVER, error, ok, run, server  # noqa: E402

TOOLS = {
    "remember",
    "recall",
    "get",
    "history",
    "list",
    "update",
    "forget",
    "explain",
}


async def a_correction(client):
    """An always-scope correction with every optional field set."""
    written = ok(
        await client.call_tool(
            "remember",
            {
                "content": "Use pnpm, never npm or yarn",
                "type": "correction",
                "scope": "always",
                "tags": ["frontend"],
                "project": "web",
                "base_priority": 9,
            },
        )
    )
    return ok(await client.call_tool("get", {"id": written["id"]}))["entry"]


# --- update: null is "unchanged" --------------------------------------------


def test_update_with_every_field_null_changes_only_the_content(tmp_path):
    async def body():
        async with server(tmp_path, "--db", tmp_path / "m.db") as client:
            before = await a_correction(client)
            assert before["base_priority"] == 9
            updated = ok(
                await client.call_tool(
                    "update",
                    {
                        "id": before["id"],
                        "content": "Use pnpm, never npm, yarn or bun",
                        "type": None,
                        "scope": None,
                        "tags": None,
                        "project": None,
                        "base_priority": None,
                    },
                )
            )
            assert updated["warnings"] == []
            expected = {**before, "content": "Use pnpm, never npm, yarn or bun"}
            assert unstamped(updated["entry"]) == unstamped(expected)
            assert updated["entry"]["written_at"] == before["written_at"]
            got = ok(await client.call_tool("get", {"id": before["id"]}))["entry"]
            assert got == updated["entry"]
            assert type(got["base_priority"]) is int  # 9, not 9.0

    run(body)


def test_update_clears_only_with_the_documented_values(tmp_path):
    async def body():
        async with server(tmp_path, "--db", tmp_path / "m.db") as client:
            entry = await a_correction(client)
            ident = entry["id"]
            call = client.call_tool
            demoted = ok(await call("update", {"id": ident, "scope": "context"}))
            assert "scope" not in demoted["entry"]
            (warning,) = demoted["warnings"]
            assert warning.startswith("scope: ") and ident in warning
            assert "no longer loads on every recall" in warning
            again = ok(await call("update", {"id": ident, "scope": "Always"}))
            assert again["entry"]["scope"] == "always"  # any case: unambiguous
            assert not any("no longer" in w for w in again["warnings"])
            cleared = ok(
                await call("update", {"id": ident, "tags": [], "project": ""})
            )["entry"]
            assert "tags" not in cleared and "project" not in cleared
            assert cleared["scope"] == "always" and cleared["base_priority"] == 9
            priority = ok(await call("update", {"id": ident, "base_priority": 3}))
            assert type(priority["entry"]["base_priority"]) is int
            nothing = error(await call("update", {"id": ident, "content": None}))
            assert nothing.startswith("nothing to update")
            bad = error(await call("update", {"id": ident, "scope": "sometimes"}))
            assert bad == "scope: must be 'always' or 'context', got 'sometimes'"
            refused = error(
                await call("remember", {"content": "x", "scope": "forever"})
            )
            assert refused == "scope: must be 'always' or 'context', got 'forever'"
            kept = ok(await call("get", {"id": ident}))["entry"]
            assert unstamped(kept) == unstamped(cleared) | {"base_priority": 3}

    run(body)


# --- descriptions and schemas, as the client receives them ------------------

# A name no model can resolve: an UPPER_CASE constant (EXPLAIN_LIMIT).
CONSTANT = re.compile(r"\b[A-Z][A-Z0-9]*_[A-Z0-9_]+\b")


def schema_texts(schema, path="schema"):
    """Every (where, title or description) of a JSON schema, nested."""
    if isinstance(schema, dict):
        for key in ("title", "description"):
            if isinstance(schema.get(key), str):
                yield f"{path}.{key}", schema[key]
        for key, value in schema.items():
            yield from schema_texts(value, f"{path}.{key}")
    elif isinstance(schema, list):
        for index, value in enumerate(schema):
            yield from schema_texts(value, f"{path}[{index}]")


def test_every_tool_reads_well_to_a_model(tmp_path):
    """Descriptions without constant names or docstring indentation, input
    schemas titled by the tool, every argument described, enums listed, an
    output schema on every tool."""

    async def body():
        async with server(tmp_path, "--ephemeral") as client:
            tools = (await client.list_tools()).tools
            assert {tool.name for tool in tools} == TOOLS
            for tool in tools:
                where = tool.name
                assert tool.description, where
                texts = [(f"{where}.description", tool.description)]
                texts += schema_texts(tool.input_schema, f"{where}.input")
                texts += schema_texts(tool.output_schema, f"{where}.output")
                for place, text in texts:
                    assert not CONSTANT.search(text), (place, text)
                    assert "\n " not in text and text == text.strip(), (place, text)
                    assert "  " not in text, (place, text)
                title = tool.input_schema["title"]
                assert title == f"{tool.name} arguments", title
                assert tool.output_schema is not None, where
                assert tool.output_schema.get("type") == "object", where
                for name, prop in tool.input_schema["properties"].items():
                    assert prop.get("description"), (where, name)
            by_name = {tool.name: tool for tool in tools}
            explain = by_name["explain"].description
            assert "16,000 characters" in explain
            for name in ("remember", "update"):
                scope = by_name[name].input_schema["properties"]["scope"]
                assert {"enum": ["always", "context"]} in scope["anyOf"], name
            outcomes = by_name["explain"].input_schema["properties"]["outcomes"]
            assert outcomes["anyOf"][0]["items"]["enum"][:2] == ["always", "selected"]
            update = by_name["update"].input_schema["properties"]
            assert "[] to remove" in update["tags"]["description"]
            assert '"" to remove' in update["project"]["description"]
            assert "null: unchanged" in update["base_priority"]["description"]

    run(body)


def test_explain_on_an_empty_store_warns_of_no_pool_never_configured(tmp_path):
    async def body():
        async with server(tmp_path, "--ephemeral") as client:
            for summary in (True, False):
                got = await client.call_tool(
                    "explain", {"message": "hello", "summary": summary}
                )
                table = ok(got)["table"]
                assert "spelling" not in table and "warning" not in table
                assert "no active entry in namespace 'default'" in table
                assert "default pools with no entry yet" in table

    run(body)


def test_explain_reads_an_outcome_in_any_case_and_names_the_accepted(tmp_path):
    async def body():
        async with server(tmp_path, "--ephemeral") as client:
            entry = await a_correction(client)
            args = {"message": "npm", "summary": False}
            any_case = await client.call_tool(
                "explain", {**args, "outcomes": ["Always"]}
            )
            exact = await client.call_tool("explain", {**args, "outcomes": ["always"]})
            assert ok(any_case) == ok(exact)
            assert entry["id"] in ok(exact)["table"]
            refused = error(
                await client.call_tool("explain", {**args, "outcomes": ["chosen"]})
            )
            assert refused.startswith("outcomes: must be among always, selected")

    run(body)


# --- resources and the recall prompt over stdio -----------------------------


def test_resources_list_page_and_read_each_entry(tmp_path):
    async def body():
        async with server(tmp_path, "--db", tmp_path / "m.db") as client:
            (template,) = (await client.list_resource_templates()).resource_templates
            assert template.uri_template == "memory://{namespace}/{id}"
            assert template.mime_type == "application/json"
            assert (await client.list_resources()).resources == []
            ids = set()
            for i in range(57):  # more than one page of 50
                written = await client.call_tool(
                    "remember", {"content": f"fact number {i}", "type": "fact"}
                )
                ids.add(ok(written)["id"])
            uris, cursor, pages = [], None, 0
            for _ in range(10):  # bounded
                page = await client.list_resources(cursor=cursor, cache_mode="bypass")
                pages += 1
                uris += [resource.uri for resource in page.resources]
                cursor = page.next_cursor
                if cursor is None:
                    break
            assert pages == 2 and len(uris) == len(set(uris)) == 57
            assert {uri.rsplit("/", 1)[1] for uri in uris} == ids
            assert all(uri.startswith("memory://default/") for uri in uris)
            ident = sorted(ids)[0]
            read = await client.read_resource(f"memory://default/{ident}")
            (contents,) = read.contents
            assert contents.mime_type == "application/json"
            entry = json.loads(contents.text)
            assert entry == ok(await client.call_tool("get", {"id": ident}))["entry"]
            for uri in (
                f"memory://other/{ident}",
                "memory://default/0123456789abcdef",
                f"memory://default/{ident}/x",
                f"file:///{ident}",
                "memory://default/",
            ):
                with pytest.raises(MCPError) as info:
                    await client.read_resource(uri, cache_mode="bypass")
                assert info.value.error.message == f"Resource not found: {uri}"
            with pytest.raises(MCPError) as info:
                await client.list_resources(cursor="not-a-cursor", cache_mode="bypass")
            assert info.value.error.message.startswith("cursor: ")

    run(body)


def test_the_recall_prompt_is_the_pooled_recall_as_a_user_message(tmp_path):
    async def body():
        async with server(tmp_path, "--db", tmp_path / "m.db") as client:
            (prompt,) = (await client.list_prompts()).prompts
            assert prompt.name == "recall"
            (argument,) = prompt.arguments
            assert argument.name == "message" and argument.required
            entry = await a_correction(client)
            got = await client.get_prompt("recall", {"message": "install deps"})
            (message,) = got.messages
            assert message.role == "user"
            recalled = await client.call_tool("recall", {"message": "install deps"})
            assert message.content.text == recalled.content[0].text
            assert f"[{entry['id']}]" in message.content.text
            for name, arguments, expected in (
                ("recall", {}, "message: required, the user's message"),
                ("recall", {"message": "x", "tags": "a"}, "tags: unknown argument"),
                ("summary", {"message": "x"}, "unknown prompt 'summary'"),
            ):
                with pytest.raises(MCPError) as info:
                    await client.get_prompt(name, arguments)
                assert info.value.error.message.startswith(expected)

    run(body)


@contextlib.contextmanager
def stdio_server(tmp_path, env=None):
    """``poolsplit-mcp --db m.db`` with its three pipes (``env``: more of
    the environment); killed if it is still running at the end, its pipes
    closed."""
    proc = subprocess.Popen(
        [str(SERVER), "--db", str(tmp_path / "m.db")],
        cwd=tmp_path,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=None if env is None else {**os.environ, **env},
    )
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=HANG)
        for pipe in (proc.stdin, proc.stdout, proc.stderr):
            pipe.close()


def test_ctrl_c_stops_the_server_with_one_line_and_no_traceback(tmp_path):
    """The first page says Ctrl-C stops it: SIGINT ends it with status 130."""
    with stdio_server(tmp_path) as proc:
        for _ in range(600):  # bounded: until it says where the memory is
            if (tmp_path / "m.db").exists():
                break
            time.sleep(0.1)
        time.sleep(0.5)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=HANG)
    assert proc.returncode == 130, err
    assert "Traceback" not in err.decode() and err.decode().endswith("stopped\n")


def test_ctrl_c_stops_the_server_while_the_client_keeps_stdin_open(tmp_path):
    """A client (or a terminal) that keeps stdin open: the thread reading it
    cannot be cancelled, so after a grace of 2 s the process exits 130 with
    one line and no traceback (before, it ran on until stdin closed)."""
    hello = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "test", "version": "1"},
        },
    }
    with stdio_server(tmp_path) as proc:
        proc.stdin.write((json.dumps(hello) + "\n").encode())
        proc.stdin.flush()
        assert b'"id":1' in proc.stdout.readline()  # serving: the watch is on
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=HANG)  # stdin still open
        err = proc.stderr.read().decode()
    assert proc.returncode == 130, err
    assert "Traceback" not in err and err.count("stopped") == 1, err


# --- over HTTP: a tenant reads only its own namespace -----------------------


def test_http_a_tenant_cannot_read_another_tenants_resource_by_any_uri(tmp_path):
    a = add_token(tmp_path, "a", "ns-a")
    b = add_token(tmp_path, "b", "ns-b")
    with serve(
        tmp_path, tmp_path / "m.db", "--tokens", tmp_path / "tokens.json"
    ) as srv:
        url = srv.base

        def call(tool, arguments, token):
            params = {"name": tool, "arguments": arguments}
            status, body = jsonrpc(url, "tools/call", params, token)
            assert status == 200, body
            return body["result"]["structuredContent"]

        secret = call("remember", {"content": "SECRET-B plan"}, b)["id"]
        mine = call("remember", {"content": "a's own note"}, a)["id"]
        status, body = jsonrpc(url, "resources/list", {}, b)
        assert [r["uri"] for r in body["result"]["resources"]] == [
            f"memory://ns-b/{secret}"
        ]
        status, body = jsonrpc(
            url, "resources/read", {"uri": f"memory://ns-b/{secret}"}, b
        )
        assert "SECRET-B" in body["result"]["contents"][0]["text"]
        uris = [
            f"memory://ns-b/{secret}",
            f"memory://ns-a/{secret}",
            f"memory://NS-B/{secret}",
            f"memory://ns-b%2F../{secret}",
            f"memory://ns-a/..%2F{secret}",
            f"memory://ns-a/%2E%2E%2Fns-b%2F{secret}",
            f"memory://default/{secret}",
            f"memory://ns-a/{secret}?namespace=ns-b",
            f"memory:///{secret}",
        ]
        replies = []
        for uri in uris:
            for namespace in (None, "ns-a"):
                status, body = jsonrpc(
                    url, "resources/read", {"uri": uri}, a, namespace
                )
                assert status == 200, body
                assert body["error"]["message"] == f"Resource not found: {uri}"
                replies.append(body)
            status, body = jsonrpc(url, "resources/read", {"uri": uri}, a, "ns-b")
            assert status == 403, body  # the path's namespace is not a's
            replies.append(body)
        status, body = jsonrpc(url, "resources/list", {}, a)
        assert [r["uri"] for r in body["result"]["resources"]] == [
            f"memory://ns-a/{mine}"
        ]
        replies.append(body)
        status, body = jsonrpc(
            url,
            "prompts/get",
            {"name": "recall", "arguments": {"message": "SECRET"}},
            a,
        )
        replies.append(body)
    assert "SECRET-B" not in json.dumps(replies)


def test_ctrl_c_during_startup_stops_with_one_line_and_no_traceback(tmp_path):
    """Ctrl-C while the server starts (the MCP SDK's import alone takes most
    of a second, then the store opens and the event loop starts) ends it as
    Ctrl-C does later: status 130, one line, no traceback, also with stdin
    kept open. Python's import timing (-X importtime) says on stderr when
    anyio, the SDK's first import, has been imported; the interrupt is sent
    then, so it lands in the rest of the SDK's import or the startup after
    it, whatever the load."""
    rest: list[bytes] = []
    with stdio_server(tmp_path, {"PYTHONPROFILEIMPORTTIME": "1"}) as proc:
        for line in proc.stderr:
            if re.search(rb"\|\s*anyio$", line.rstrip()):
                break
        else:
            raise AssertionError("the SDK's import was never reported")
        # the rest of stderr, so that the pipe never fills
        reader = threading.Thread(target=lambda: rest.append(proc.stderr.read()))
        reader.start()
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=HANG)  # stdin stays open: a terminal's case
        reader.join(timeout=HANG)
    lines = b"".join(rest).decode().splitlines()
    said = [line for line in lines if not line.startswith("import time:")]
    assert proc.returncode == 130, said
    # (the line saying where the memory is, if it got that far)
    assert said[-1:] == ["poolsplit-mcp: stopped"], said
    assert all(line.startswith("poolsplit-mcp: memory ") for line in said[:-1]), said
