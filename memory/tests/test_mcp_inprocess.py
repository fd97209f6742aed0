"""poolsplit_memory.mcp_server in-process: what stdio cannot provoke on demand.

The server is built on a real store, or on a store whose calls fail the way a
broken dependency would, and driven by the real ``mcp`` client in-process.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from _mcp_client import call
from conftest import unstamped

pytest.importorskip("mcp")  # the mcp extra needs Python 3.10+

import anyio  # noqa: E402 (an mcp dependency)
from mcp.client import Client  # noqa: E402

from poolsplit_memory import InvalidInput, StoreUnavailable, open_store  # noqa: E402
from poolsplit_memory.mcp_server import build_server, default_db_path  # noqa: E402


class Failing:
    """A store whose every call raises ``exc``."""

    namespace = "default"

    def __init__(self, exc):
        self.exc = exc

    def __getattr__(self, name):
        def fail(*args, **kwargs):
            raise self.exc

        return fail


def error_line(result):
    assert result.is_error
    (block,) = result.content
    assert "\n" not in block.text
    return block.text


@pytest.mark.parametrize(
    ("exc", "expected"),
    [
        (
            StoreUnavailable("database unreachable", "postgresql://u@h/db", "refused"),
            "database unreachable: postgresql://u@h/db (refused)",
        ),
        (InvalidInput("content", "must not be empty"), "content: must not be empty"),
        (
            RuntimeError("boom\nsecond line"),
            "internal error: RuntimeError: boom second line",
        ),
        (KeyError("x"), "internal error: KeyError: 'x'"),
    ],
    ids=["unavailable", "invalid", "unexpected", "unexpected-keyerror"],
)
@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        ("remember", {"content": "x"}),
        ("recall", {"message": "x"}),
        ("get", {"id": "x"}),
        ("history", {"id": "x"}),
        ("list", {}),
        ("update", {"id": "x", "content": "y"}),
        ("forget", {"id": "x"}),
        ("explain", {"message": "x"}),
    ],
)
def test_every_failure_reaches_the_client_as_one_line_naming_it(
    tool, arguments, exc, expected, capsys
):
    assert error_line(call(Failing(exc), tool, arguments)) == expected
    stderr = capsys.readouterr().err
    if expected.startswith("internal error"):
        assert "Traceback" in stderr  # the server's log keeps the whole story
    elif isinstance(exc, InvalidInput):
        assert stderr == ""  # the caller's mistake, not the operator's
    else:
        assert stderr == f"poolsplit-mcp: {expected}\n"


def test_update_reads_a_null_argument_as_a_left_out_one(tmp_path):
    with open_store(str(tmp_path / "m.db")) as store:
        entry = store.remember(
            "keep", type="fact", scope="always", tags=("a",), project="p"
        ).entry

        async def body():
            async with Client(build_server(store)) as client:
                kept = await client.call_tool(
                    "update", {"id": entry["id"], "content": "kept"}
                )
                assert kept.structured_content["entry"]["tags"] == ["a"]
                assert kept.structured_content["entry"]["scope"] == "always"
                nulls = await client.call_tool(
                    "update",
                    {"id": entry["id"], "content": "k2", "tags": None, "scope": None},
                )
                assert unstamped(nulls.structured_content["entry"]) == {
                    **unstamped(kept.structured_content["entry"]),
                    "content": "k2",
                }
                cleared = await client.call_tool(
                    "update",
                    {"id": entry["id"], "tags": [], "project": "", "scope": "context"},
                )
                after = cleared.structured_content["entry"]
                assert not {"tags", "project", "scope"} & set(after)
                assert after["content"] == "k2"
                nothing = await client.call_tool("update", {"id": entry["id"]})
                assert error_line(nothing)  # no field given: the store says so

        anyio.run(body)


@pytest.mark.parametrize(
    ("environ", "expected"),
    [
        ({"XDG_DATA_HOME": "/data"}, Path("/data/poolsplit/memory.db")),
        ({"XDG_DATA_HOME": ""}, Path.home() / ".local/share/poolsplit/memory.db"),
        ({"XDG_DATA_HOME": "rel"}, Path.home() / ".local/share/poolsplit/memory.db"),
        ({}, Path.home() / ".local/share/poolsplit/memory.db"),
    ],
    ids=["set", "empty", "relative", "unset"],
)
def test_the_default_store_follows_the_xdg_rules(environ, expected):
    assert default_db_path(environ) == expected


def test_a_list_sent_as_a_json_string_is_accepted_as_the_sdk_accepts_it(tmp_path):
    """Some clients send ``tags`` as '["a"]'; the SDK parses it, so does the check."""
    with open_store(str(tmp_path / "m.db")) as store:

        async def body():
            async with Client(build_server(store)) as client:
                written = await client.call_tool(
                    "remember", {"content": "x", "tags": '["billing"]'}
                )
                assert not written.is_error, written.content
                got = store.get(written.structured_content["id"])
                assert got["tags"] == ["billing"]
                bad = await client.call_tool(
                    "remember", {"content": "x", "tags": "billing"}
                )
                assert error_line(bad).startswith("tags:")

        anyio.run(body)


def test_forget_says_when_a_reader_holds_the_content_in_the_wal(tmp_path):
    import sqlite3

    path = tmp_path / "memory.db"
    with open_store(str(path)) as store:
        written = store.remember("secret words")
        other = sqlite3.connect(str(path), isolation_level=None)
        other.execute("BEGIN")
        other.execute("SELECT count(*) FROM poolsplit_entries").fetchone()
        try:
            result = call(store, "forget", {"id": written.id})
        finally:
            other.execute("COMMIT")
            other.close()
        assert not result.is_error
        structured = result.structured_content
        assert structured["forgotten"] is True
        (warning,) = structured["warnings"]
        assert warning.startswith("forget: deleted, but the content stays in")
        again = call(store, "forget", {"id": written.id})  # the reader is gone
        assert again.structured_content == {
            "forgotten": False,
            "count": 0,
            "warnings": [],
        }


def test_each_tool_call_finds_its_store_through_the_resolver(tmp_path):
    """build_server(resolve=...): one call per tool call, with its context,
    so a transport with tenants can map each request to its namespace."""
    with (
        open_store(str(tmp_path / "m.db"), namespace="ada") as ada,
        open_store(str(tmp_path / "m.db"), namespace="bob") as bob,
    ):
        calls = []

        def resolve(ctx):
            calls.append(ctx.request_id)
            return ada if len(calls) % 2 else bob

        async def body():
            async with Client(build_server(resolve=resolve)) as client:
                await client.list_tools()
                assert calls == []  # listing tools needs no store
                first = await client.call_tool("remember", {"content": "for ada"})
                second = await client.call_tool("remember", {"content": "for bob"})
                assert not first.is_error and not second.is_error
            assert len(calls) == 2
            assert [e["content"] for e in ada.list().entries] == ["for ada"]
            assert [e["content"] for e in bob.list().entries] == ["for bob"]

        anyio.run(body)


def test_build_server_takes_a_store_or_a_resolver():
    with pytest.raises(ValueError):
        build_server()
    with pytest.raises(ValueError):
        build_server(Failing(RuntimeError()), resolve=lambda ctx: None)


def test_warnings_reach_a_client_that_asks_for_log_messages(tmp_path):
    """A client that opts in to log messages at "warning" receives each
    warning of a write as a notification (any protocol era)."""
    received = []

    async def on_log(params):
        received.append(params)

    with open_store(str(tmp_path / "m.db")) as store:

        async def body():
            async with Client(
                build_server(store), logging_callback=on_log, log_level="warning"
            ) as client:
                got = await client.call_tool(
                    "remember", {"content": "x", "type": "corection"}
                )
                [warning] = got.structured_content["warnings"]
                for _ in range(100):  # bounded: the notification may trail
                    if received:
                        break
                    await anyio.sleep(0.01)
            assert [p.data for p in received] == [warning]
            assert received[0].level == "warning"

        anyio.run(body)


# --- issue 48: the user's time zone ---------------------------------------------


class Recording:
    """A real store whose recall and explain note the ``tz`` they are given."""

    def __init__(self, store):
        self.store = store
        self.zones = []

    def __getattr__(self, name):
        return getattr(self.store, name)

    def recall(self, *args, **kwargs):
        self.zones.append(kwargs["tz"])
        return self.store.recall(*args, **kwargs)

    def explain(self, *args, **kwargs):
        self.zones.append(kwargs["tz"])
        return self.store.explain(*args, **kwargs)


@pytest.mark.parametrize("tool", ["recall", "explain"])
def test_a_tool_reads_the_calls_time_zone_else_the_servers(tmp_path, tool):
    """ "yesterday" is the user's: the call's tz, else poolsplit-mcp --tz's
    (build_server's tz), else none (the store reads UTC)."""
    with open_store(str(tmp_path / "m.db")) as store:
        recording = Recording(store)

        async def body():
            for default in (None, "Europe/Paris"):
                server = build_server(recording, tz=default)
                async with Client(server) as client:
                    message = {"message": "what did we do yesterday?"}
                    for extra in ({}, {"tz": "Asia/Tokyo"}):
                        got = await client.call_tool(tool, {**message, **extra})
                        assert not got.is_error, got

        anyio.run(body)
    assert recording.zones == [None, "Asia/Tokyo", "Europe/Paris", "Asia/Tokyo"]


@pytest.mark.parametrize("tool", ["recall", "explain"])
def test_a_bad_time_zone_is_a_tool_error_naming_tz(tmp_path, tool):
    with open_store(str(tmp_path / "m.db")) as store:
        got = call(store, tool, {"message": "yesterday", "tz": "Mars/Olympus"})
    assert error_line(got) == (
        "tz: must be an IANA time zone name such as 'Europe/Paris', got 'Mars/Olympus'"
    )


def test_a_bad_default_time_zone_is_refused(tmp_path, capsys):
    from poolsplit_memory.mcp_server import main

    with pytest.raises(ValueError, match="^tz must be an IANA .* got 'Mars/Olympus'$"):
        build_server(Failing(RuntimeError()), tz="Mars/Olympus")
    assert main(["--ephemeral", "--tz", "Mars/Olympus"]) == 2
    assert capsys.readouterr().err == (
        "poolsplit-mcp: error: --tz must be an IANA time zone name such as "
        "'Europe/Paris', got 'Mars/Olympus'\n"
    )


def test_the_http_workers_get_the_default_time_zone():
    from poolsplit_memory._http import HttpConfig

    config = HttpConfig(url="m.db", tz="Asia/Tokyo")
    assert HttpConfig.from_json(config.to_json(), config.urls_json()).tz == (
        "Asia/Tokyo"
    )


def test_a_resource_uri_with_a_raw_slash_in_the_id_reads_the_entry(tmp_path):
    """Issue 52: the namespace ends at the first ``/``, so the rest of the
    URI is the id, raw ``/`` and all (a client that builds the URI from the
    template without encoding the id); the encoded form reads the same."""
    source = tmp_path / "in.jsonl"
    source.write_text('{"id": "team/notes/1", "content": "Deploy on Fridays"}\n')
    got = []

    async def body():
        with open_store(tmp_path / "m.db", namespace="ns") as store:
            store.import_jsonl(source)
            async with Client(build_server(store)) as client:
                for uri in ("memory://ns/team/notes/1", "memory://ns/team%2Fnotes%2F1"):
                    read = await client.read_resource(uri)
                    got.append(read.contents[0].text)
                listed = await client.list_resources()
                got.append([r.uri for r in listed.resources])

    anyio.run(body)
    raw, encoded, listed = got
    assert raw == encoded and '"content": "Deploy on Fridays"' in raw
    assert listed == ["memory://ns/team%2Fnotes%2F1"]
