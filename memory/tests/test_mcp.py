"""poolsplit-mcp end to end: the installed console script, the real mcp client.

Each server is the ``poolsplit-mcp`` script installed next to this
interpreter, spawned over stdio with its working directory in ``tmp_path``
(outside the checkout) and ``XDG_DATA_HOME`` there too. Waits are bounded
loops or ``anyio.fail_after`` guards against a hang; no assertion is about time.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import poolsplit
import pytest
from _mcp_client import run

mcp = pytest.importorskip("mcp")  # the mcp extra needs Python 3.10+

import anyio  # noqa: E402 (an mcp dependency)
from mcp.client import Client  # noqa: E402
from mcp.client.stdio import StdioServerParameters  # noqa: E402

SERVER = Path(sys.executable).with_name("poolsplit-mcp")
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
HANG = 120  # seconds: a guard against a hung server, never a measurement


# --- helpers ----------------------------------------------------------------


def params(tmp_path, *args):
    return StdioServerParameters(
        command=str(SERVER),
        args=[str(arg) for arg in args],
        env={"XDG_DATA_HOME": str(tmp_path / "xdg")},
        cwd=str(tmp_path),
    )


@asynccontextmanager
async def server(tmp_path, *args) -> AsyncIterator[Client]:
    async with Client(params(tmp_path, *args)) as client:
        yield client


def ok(result):
    """The structured content of a successful call."""
    assert not result.is_error, result.content
    assert result.structured_content is not None
    return result.structured_content


def error(result):
    """The one line of a tool error."""
    assert result.is_error, result.structured_content
    (block,) = result.content
    assert "\n" not in block.text and block.text.strip() == block.text
    assert not block.text.startswith("Error executing tool")
    return block.text


def text(result):
    (block,) = result.content
    return block.text


def start_and_fail(tmp_path, *args):
    """Run the script with no client; it must exit before serving."""
    done = subprocess.run(
        [str(SERVER), *map(str, args)],
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env={**os.environ, "XDG_DATA_HOME": str(tmp_path / "xdg")},
        timeout=HANG,
    )
    return done.returncode, done.stderr


async def all_entries(client):
    entries, cursor = [], None
    for _ in range(1000):  # bounded: 1000 pages
        page = ok(await client.call_tool("list", {"limit": 7, "cursor": cursor}))
        entries.extend(page["entries"])
        cursor = page["next_cursor"]
        if cursor is None:
            return entries
    raise AssertionError("list never ended")


# --- installation -----------------------------------------------------------


def test_the_console_script_and_the_package_are_installed():
    import poolsplit_memory

    assert SERVER.is_file() and os.access(SERVER, os.X_OK)
    assert "site-packages" in poolsplit_memory.__file__
    assert "site-packages" in poolsplit.__file__


def test_the_registry_manifest_matches_the_package():
    """server.json names what the README's mcp-name line says, at this version."""
    from importlib.metadata import version

    folder = Path(__file__).resolve().parent.parent
    manifest = json.loads((folder / "server.json").read_text(encoding="utf-8"))
    readme = (folder / "README.md").read_text(encoding="utf-8")
    assert f"mcp-name: {manifest['name']}" in readme
    assert len(manifest["description"]) <= 100  # the registry's limit
    [package] = manifest["packages"]
    assert package["registryType"] == "pypi"
    assert package["identifier"] == "poolsplit-memory"
    import poolsplit_memory

    installed = version("poolsplit-memory")
    assert installed == poolsplit_memory.__version__
    assert manifest["version"] == package["version"] == installed
    assert package["transport"] == {"type": "stdio"}
    # a registry client runs the package's own name: the same command
    assert SERVER.with_name("poolsplit-memory").is_file()
    flags = {argument["name"] for argument in package["packageArguments"]}
    assert flags <= {"--db", "--namespace", "--pools", "--ephemeral"}


def test_no_arguments_stores_under_the_data_directory(tmp_path):
    """Without --db: $XDG_DATA_HOME/poolsplit/memory.db, folder made, path said."""
    status, stderr = start_and_fail(tmp_path)  # stdin at EOF: serves, then ends
    path = tmp_path / "xdg" / "poolsplit" / "memory.db"
    assert status == 0, stderr
    assert str(path) in stderr
    assert path.parent.is_dir()

    async def body():
        async with server(tmp_path) as client:
            ok(await client.call_tool("remember", {"content": "kept in xdg"}))
        db = sqlite3.connect(path)
        try:
            assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        finally:
            db.close()
        async with server(tmp_path, "--db", path) as client:
            contents = [e["content"] for e in await all_entries(client)]
            assert contents == ["kept in xdg"]

    run(body)


# --- every tool -------------------------------------------------------------


def test_every_tool_with_its_output_schema(tmp_path):
    db = tmp_path / "memory.db"

    async def body():
        async with server(tmp_path, "--db", db) as client:
            tools = {tool.name: tool for tool in (await client.list_tools()).tools}
            assert set(tools) == TOOLS
            for tool in tools.values():
                assert tool.output_schema is not None, tool.name
                assert tool.output_schema["type"] == "object"
            assert "key" in tools["remember"].input_schema["properties"]

            rule = ok(
                await client.call_tool(
                    "remember",
                    {
                        "content": "Never deploy on Fridays",
                        "type": "correction",
                        "scope": "always",
                    },
                )
            )
            assert set(rule) == {"id", "warnings", "possible_supersedes"}
            assert rule["possible_supersedes"] == []
            fact = ok(
                await client.call_tool(
                    "remember",
                    {
                        "content": "billing runs on the invoices queue",
                        "type": "fact",
                        "tags": ["billing"],
                        "project": "billing",
                        "base_priority": 7,
                    },
                )
            )
            note = ok(await client.call_tool("remember", {"content": "lunch at noon"}))
            assert json.loads(text(await client.call_tool("get", {"id": note["id"]})))

            recalled = await client.call_tool(
                "recall", {"message": "debug billing", "tags": ["billing"]}
            )
            shape = ok(recalled)
            assert set(shape) == {"pools", "skipped", "warnings"}
            ids = {i for pool in shape["pools"].values() for i in pool}
            assert {rule["id"], fact["id"]} <= ids
            assert shape["skipped"] == []
            assert "Never deploy on Fridays" in text(recalled)
            assert "invoices queue" in text(recalled)

            got = ok(await client.call_tool("get", {"id": fact["id"]}))
            assert got["entry"]["content"] == "billing runs on the invoices queue"
            assert got["entry"]["tags"] == ["billing"]
            assert ok(await client.call_tool("get", {"id": "nope"})) == {"entry": None}

            page = ok(await client.call_tool("list", {"type": "fact"}))
            assert [e["id"] for e in page["entries"]] == [fact["id"]]
            assert page["next_cursor"] is None
            listed = await all_entries(client)
            assert sorted(e["id"] for e in listed) == sorted(
                [rule["id"], fact["id"], note["id"]]
            )

            updated = ok(
                await client.call_tool(
                    "update",
                    {"id": rule["id"], "content": "Never deploy on Fridays or Sundays"},
                )
            )
            assert set(updated) == {"entry", "warnings"}
            assert updated["entry"]["scope"] == "always"  # left out: unchanged
            assert updated["entry"]["content"].endswith("Sundays")
            demoted = ok(
                await client.call_tool("update", {"id": rule["id"], "scope": "context"})
            )
            assert "scope" not in demoted["entry"]  # "context": removed
            assert (
                "tags"
                in ok(
                    await client.call_tool(
                        "update", {"id": fact["id"], "base_priority": 2}
                    )
                )["entry"]
            )

            table = await client.call_tool(
                "explain", {"message": "debug billing", "summary": False}
            )
            assert ok(table) == {"table": text(table), "cut": False}
            assert fact["id"] in text(table)

            assert ok(await client.call_tool("forget", {"id": note["id"]})) == {
                "forgotten": True,
                "count": 1,
                "warnings": [],
            }
            assert ok(await client.call_tool("forget", {"id": note["id"]})) == {
                "forgotten": False,
                "count": 0,
                "warnings": [],
            }
            assert ok(await client.call_tool("get", {"id": note["id"]})) == {
                "entry": None
            }

    run(body)


def test_supersedes_retires_the_old_entry_and_key_makes_a_retry_idempotent(tmp_path):
    db = tmp_path / "memory.db"

    async def body():
        async with server(tmp_path, "--db", db) as client:
            old = ok(await client.call_tool("remember", {"content": "ship on Mondays"}))
            new = ok(
                await client.call_tool(
                    "remember",
                    {"content": "ship on Tuesdays", "supersedes": old["id"]},
                )
            )
            retired = ok(await client.call_tool("get", {"id": old["id"]}))["entry"]
            assert retired["superseded_by"] == new["id"]
            recall = ok(await client.call_tool("recall", {"message": "ship"}))
            ids = {i for pool in recall["pools"].values() for i in pool}
            assert new["id"] in ids and old["id"] not in ids
            message = error(
                await client.call_tool(
                    "remember", {"content": "x", "supersedes": "no-such-id"}
                )
            )
            assert message.startswith("supersedes:")

            args = {"content": "the retried write", "key": "call-42"}
            first = ok(await client.call_tool("remember", args))
            again = ok(await client.call_tool("remember", args))
            assert again["id"] == first["id"]
            clash = error(
                await client.call_tool(
                    "remember", {"content": "other content", "key": "call-42"}
                )
            )
            assert clash.startswith("key:")
            contents = sorted(e["content"] for e in await all_entries(client))
            assert contents == [
                "ship on Mondays",
                "ship on Tuesdays",
                "the retried write",
            ]

    run(body)


# --- namespaces -------------------------------------------------------------


def test_two_namespaces_on_one_file_never_see_each_other(tmp_path):
    db = tmp_path / "memory.db"

    async def body():
        async with (
            server(tmp_path, "--db", db, "--namespace", "ada") as ada,
            server(tmp_path, "--db", db, "--namespace", "ada/archive") as archive,
        ):
            mine = ok(
                await ada.call_tool(
                    "remember",
                    {"content": "ada likes tea", "type": "fact", "scope": "always"},
                )
            )
            theirs = ok(
                await archive.call_tool(
                    "remember",
                    {
                        "content": "archive likes coffee",
                        "type": "fact",
                        "scope": "always",
                    },
                )
            )
            for client, own, other, word in (
                (ada, mine, theirs, "coffee"),
                (archive, theirs, mine, "tea"),
            ):
                assert [e["id"] for e in await all_entries(client)] == [own["id"]]
                assert ok(await client.call_tool("get", {"id": other["id"]})) == {
                    "entry": None
                }
                recalled = await client.call_tool("recall", {"message": "drinks"})
                assert word not in text(recalled)
                ids = {i for pool in ok(recalled)["pools"].values() for i in pool}
                assert ids == {own["id"]}
                assert other["id"] not in text(
                    await client.call_tool(
                        "explain", {"message": "drinks", "summary": False}
                    )
                )
                message = error(
                    await client.call_tool(
                        "update", {"id": other["id"], "content": "hijacked"}
                    )
                )
                assert message.startswith("id:")
                assert ok(await client.call_tool("forget", {"id": other["id"]})) == {
                    "forgotten": False,
                    "count": 0,
                    "warnings": [],
                }
            assert ok(await archive.call_tool("get", {"id": theirs["id"]}))["entry"][
                "content"
            ] == ("archive likes coffee")

    run(body)


# --- forget deletes ---------------------------------------------------------


def database_bytes(db: Path) -> bytes:
    return b"".join(
        path.read_bytes()
        for path in sorted(db.parent.iterdir())
        if path.name.startswith(db.name)
    )


def test_forget_leaves_no_byte_of_the_content_in_the_database_files(tmp_path):
    db = tmp_path / "memory.db"
    secret = f"the vault code is {uuid.uuid4().hex}"
    kept = f"kept {uuid.uuid4().hex}"

    async def body():
        async with server(tmp_path, "--db", db) as client:
            gone = ok(await client.call_tool("remember", {"content": secret}))
            ok(await client.call_tool("remember", {"content": kept}))
            assert secret.encode() in database_bytes(db)  # the probe can see it
            assert ok(await client.call_tool("forget", {"id": gone["id"]}))["forgotten"]
            files = database_bytes(db)  # the server still runs: as forget returns
            assert secret.encode() not in files
            assert secret.rsplit(maxsplit=1)[-1].encode() not in files
            assert gone["id"].encode() not in files
            assert kept.encode() in files
        assert secret.encode() not in database_bytes(db)

    run(body)


# --- a bad row planted by hand ----------------------------------------------


def plant(db: Path, ident: str, change) -> None:
    """Rewrite the stored JSON of entry ``ident`` with sqlite3, behind the server.

    The store keeps each entry as a JSON text column (the design); the cell is
    found by its content, so the test does not depend on the table's names.
    """
    con = sqlite3.connect(db, timeout=30)
    try:
        tables = [
            name
            for (name,) in con.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table'"
            )
        ]
        for table in tables:
            columns = [row[1] for row in con.execute(f'PRAGMA table_info("{table}")')]
            for column in columns:
                query = (
                    f'SELECT rowid, "{column}" FROM "{table}" '
                    f'WHERE "{column}" LIKE ? OR "{column}" LIKE ?'
                )
                rows = con.execute(
                    query, (f'%"id": "{ident}"%', f'%"id":"{ident}"%')
                ).fetchall()
                for rowid, body in rows:
                    entry = json.loads(body)
                    if isinstance(entry, dict) and entry.get("id") == ident:
                        new = change(entry)
                        with con:
                            con.execute(
                                f'UPDATE "{table}" SET "{column}" = ? WHERE rowid = ?',
                                (new, rowid),
                            )
                        return
        raise AssertionError(f"no stored JSON of entry {ident} found")
    finally:
        con.close()


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        (lambda e: json.dumps({**e, "base_priority": "high"}), "base_priority"),
        (lambda e: "{not json", None),
    ],
    ids=["base_priority-high", "bad-json"],
)
def test_a_bad_row_planted_in_the_database_never_disables_recall(
    tmp_path, change, reason
):
    db = tmp_path / "memory.db"

    async def body():
        async with server(tmp_path, "--db", db) as client:
            bad = ok(
                await client.call_tool(
                    "remember",
                    {
                        "content": "always answer in French",
                        "type": "correction",
                        "scope": "always",
                    },
                )
            )
            good = ok(
                await client.call_tool(
                    "remember",
                    {
                        "content": "never push on red",
                        "type": "correction",
                        "scope": "always",
                    },
                )
            )
            fact = ok(
                await client.call_tool(
                    "remember", {"content": "the queue is invoices", "type": "fact"}
                )
            )
            ok(await client.call_tool("recall", {"message": "queue"}))  # warm
            plant(db, bad["id"], change)
            for _ in range(2):  # the first recall after the change, then a warm one
                recalled = await client.call_tool("recall", {"message": "the queue"})
                shape = ok(recalled)
                ids = {i for pool in shape["pools"].values() for i in pool}
                assert {good["id"], fact["id"]} <= ids
                assert bad["id"] not in ids
                [skipped] = shape["skipped"]
                assert skipped["id"] == bad["id"]
                if reason:
                    assert reason in skipped["reason"]
                assert bad["id"] in text(recalled)  # an always row: named in the text
                assert "never push on red" in text(recalled)
            ok(await client.call_tool("remember", {"content": "still writable"}))

    run(body)


# --- refusing to start ------------------------------------------------------


def one_line_exit_2(status, stderr):
    assert status == 2, stderr
    assert "Traceback" not in stderr
    lines = stderr.splitlines()
    assert len(lines) == 1, stderr
    return lines[0]


@pytest.mark.parametrize(
    "pools",
    [
        [
            {"name": "work", "max_tokens": 100, "max_entries": 2},
            {"name": "work", "max_tokens": 50, "max_entries": 1},
        ],
        [{"name": "work", "max_tokens": 100, "max_entries": 2, "typse": ["task"]}],
        [{"name": "work", "max_tokens": -1, "max_entries": 2}],
        [{"name": "work", "max_tokens": 100, "max_entries": "two"}],
    ],
    ids=["duplicate-name", "unknown-key", "negative-tokens", "entries-not-int"],
)
def test_a_bad_pools_file_refuses_to_start_with_the_core_clis_line(tmp_path, pools):
    path = tmp_path / "pools.json"
    path.write_text(json.dumps(pools), encoding="utf-8")
    db = tmp_path / "memory.db"
    line = one_line_exit_2(*start_and_fail(tmp_path, "--db", db, "--pools", path))
    with pytest.raises(ValueError) as core:
        poolsplit.load_pools(str(path))
    assert line.endswith(str(core.value))  # the core loader's own message
    assert not db.exists()  # refused before opening anything


def test_an_empty_pools_file_names_the_file(tmp_path):
    path = tmp_path / "pools.json"
    path.write_text("[]", encoding="utf-8")
    db = tmp_path / "memory.db"
    line = one_line_exit_2(*start_and_fail(tmp_path, "--db", db, "--pools", path))
    assert f"{path}: pools must not be empty" in line
    assert not db.exists()


def test_a_relative_db_is_said_as_the_absolute_path(tmp_path):
    status, stderr = start_and_fail(tmp_path, "--db", "rel/memory.db")
    assert status == 2  # the folder rel/ does not exist
    (tmp_path / "rel").mkdir()
    for db in ("rel/memory.db", "sqlite:///rel/memory.db"):
        status, stderr = start_and_fail(tmp_path, "--db", db)
        assert status == 0, stderr  # stdin at EOF: serves, then ends
        assert f"memory in {tmp_path / 'rel' / 'memory.db'}, namespace" in stderr


def test_a_good_pools_file_is_used(tmp_path):
    path = tmp_path / "pools.json"
    path.write_text(
        json.dumps(
            [{"name": "work", "max_tokens": 200, "max_entries": 1, "types": ["task"]}]
        ),
        encoding="utf-8",
    )

    async def body():
        async with server(
            tmp_path, "--db", tmp_path / "m.db", "--pools", path
        ) as client:
            task = ok(
                await client.call_tool(
                    "remember", {"content": "fix the build", "type": "task"}
                )
            )
            ok(await client.call_tool("remember", {"content": "a note"}))
            shape = ok(await client.call_tool("recall", {"message": "build"}))
            assert shape["pools"] == {"work": [task["id"]]}

    run(body)


def test_a_type_no_pool_admits_is_a_warning_on_the_write(tmp_path):
    """A pools file with a typo in types: the write says so, with the fix."""
    path = tmp_path / "pools.json"
    path.write_text(
        json.dumps(
            [{"name": "work", "max_tokens": 200, "max_entries": 2, "types": ["tsk"]}]
        ),
        encoding="utf-8",
    )

    async def body():
        async with server(
            tmp_path, "--db", tmp_path / "m.db", "--pools", path
        ) as client:
            written = ok(
                await client.call_tool(
                    "remember", {"content": "fix the build", "type": "task"}
                )
            )
            [warning] = written["warnings"]
            assert "'task'" in warning and "'tsk'" in warning

    run(body)


@pytest.mark.parametrize(
    ("db", "needle"),
    [
        ("missing/folder/memory.db", "missing"),
        ("", "--ephemeral"),
        (":memory:", "--ephemeral"),
        ("sqlite:///:memory:", "--ephemeral"),
        ("sqlite:///:memory:?busy_timeout=5", "--ephemeral"),
        ("postgresql://nobody@127.0.0.1:1/nothing", "unreachable"),
        ("postgresql://[bad/x", "url: cannot be read"),
        ("postgresql://nobody:hunter2@[bad/x", "url: cannot be read"),
    ],
    ids=[
        "missing-folder",
        "empty",
        "memory",
        "sqlite-memory",
        "sqlite-memory-with-a-query",
        "postgres-down",
        "postgres-unreadable",
        "postgres-unreadable-with-a-password",
    ],
)
def test_a_db_that_cannot_be_opened_refuses_to_start(tmp_path, db, needle):
    line = one_line_exit_2(*start_and_fail(tmp_path, "--db", db))
    assert needle in line
    assert "hunter2" not in line


@pytest.mark.parametrize(
    "db",
    [":memory:", "sqlite:///:memory:", "sqlite:///:memory:?busy_timeout=5", ""],
)
def test_ephemeral_takes_every_spelling_of_memory(tmp_path, db):
    status, stderr = start_and_fail(tmp_path, "--ephemeral", "--db", db)
    assert status == 0, stderr  # stdin at EOF: serves, then ends
    assert "in this process only" in stderr


def test_a_file_that_is_not_a_database_or_an_empty_namespace_refuses_to_start(
    tmp_path,
):
    notes = tmp_path / "notes.txt"
    notes.write_text("my shopping list\n" * 100, encoding="utf-8")
    line = one_line_exit_2(*start_and_fail(tmp_path, "--db", notes))
    assert "not a database" in line or "corrupt" in line
    assert notes.read_text(encoding="utf-8") == "my shopping list\n" * 100
    line = one_line_exit_2(
        *start_and_fail(tmp_path, "--db", tmp_path / "m.db", "--namespace", "")
    )
    assert "namespace" in line


def test_ephemeral_means_it(tmp_path):
    async def body():
        async with server(tmp_path, "--ephemeral") as client:
            entry = ok(await client.call_tool("remember", {"content": "for now"}))
            assert ok(await client.call_tool("get", {"id": entry["id"]}))["entry"]
        assert not (tmp_path / "xdg").exists()

    run(body)


# --- bad arguments ----------------------------------------------------------


@pytest.mark.parametrize(
    ("arguments", "field"),
    [
        ({"content": "x", "supercedes": "abc"}, "supercedes"),
        ({"content": "x", "base_priority": "high"}, "base_priority"),
        ({"content": "x", "tags": "billing"}, "tags"),
        ({"content": ""}, "content"),
        ({"content": "x\x00y"}, "content"),
        ({"content": "word " * 20_000, "scope": "always"}, "content"),
        ({}, "content"),
    ],
    ids=[
        "unknown",
        "priority-text",
        "tags-text",
        "empty",
        "nul",
        "oversized",
        "missing",
    ],
)
def test_a_bad_argument_is_a_tool_error_naming_it_and_nothing_is_written(
    tmp_path, arguments, field
):
    async def body():
        async with server(tmp_path, "--db", tmp_path / "m.db") as client:
            message = error(await client.call_tool("remember", arguments))
            assert message.startswith(f"{field}:"), message
            assert await all_entries(client) == []

    run(body)


def test_always_scope_past_the_budget_warns_on_the_write_and_every_recall(tmp_path):
    """Always-scope entries together past 4,000 tokens: a warning, not silence."""
    words = ["rule"]
    while poolsplit.default_token_counter(" ".join(words)) < 1500:
        words.append("rule")  # bounded: each word adds a token or so
    content = " ".join(words)
    assert poolsplit.default_token_counter(content) < 2000  # each one is allowed

    async def body():
        async with server(tmp_path, "--db", tmp_path / "m.db") as client:
            warned = []
            for number in range(3):
                written = ok(
                    await client.call_tool(
                        "remember",
                        {
                            "content": f"{number} {content}",
                            "type": "correction",
                            "scope": "always",
                        },
                    )
                )
                warned.append(written["warnings"])
            assert warned[0] == []
            assert any("4,000" in w or "4000" in w for w in warned[-1]), warned
            for message in ("one", "two"):
                shape = ok(await client.call_tool("recall", {"message": message}))
                assert shape["warnings"], shape

    run(body)


def test_an_unknown_argument_of_update_writes_nothing(tmp_path):
    async def body():
        async with server(tmp_path, "--db", tmp_path / "m.db") as client:
            entry = ok(await client.call_tool("remember", {"content": "as it was"}))
            message = error(
                await client.call_tool(
                    "update",
                    {"id": entry["id"], "content": "changed", "scop": "always"},
                )
            )
            assert message.startswith("scop:")
            assert (
                ok(await client.call_tool("get", {"id": entry["id"]}))["entry"][
                    "content"
                ]
                == "as it was"
            )
            assert error(await client.call_tool("list", {"limit": 0})).startswith(
                "limit:"
            )

    run(body)


# --- concurrency and faults on SQLite ---------------------------------------


def test_two_servers_writing_to_one_file_lose_nothing(tmp_path):
    db = tmp_path / "memory.db"
    acknowledged: list[str] = []

    async def writer(client, name):
        for number in range(40):
            got = ok(
                await client.call_tool("remember", {"content": f"{name} {number}"})
            )
            acknowledged.append(got["id"])

    async def body():
        async with (
            server(tmp_path, "--db", db) as one,
            server(tmp_path, "--db", db) as two,
        ):
            async with anyio.create_task_group() as group:
                group.start_soon(writer, one, "one")
                group.start_soon(writer, two, "two")
            for client in (one, two):
                ids = [e["id"] for e in await all_entries(client)]
                assert sorted(ids) == sorted(acknowledged)
        assert len(set(acknowledged)) == 80

    run(body)


def server_pids(db: Path) -> list[int]:
    """The running poolsplit-mcp processes whose command line names ``db``."""
    pids = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            argv = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if str(db).encode() in argv and any(b"poolsplit-mcp" in a for a in argv):
            pids.append(int(proc.name))
    return pids


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="finds the server in /proc")
def test_sigkill_mid_burst_keeps_every_acknowledged_write(tmp_path):
    db = tmp_path / "memory.db"
    acknowledged: list[str] = []

    async def burst(client):
        for number in range(10_000):  # bounded; the kill ends it much sooner
            got = await client.call_tool("remember", {"content": f"burst {number}"})
            acknowledged.append(ok(got)["id"])

    async def kill_mid_burst(client):
        async with anyio.create_task_group() as group:
            group.start_soon(burst, client)
            for _ in range(100_000):  # bounded: until 30 writes landed
                if len(acknowledged) >= 30:
                    break
                await anyio.sleep(0.01)
            [pid] = server_pids(db)
            os.kill(pid, signal.SIGKILL)
            for _ in range(100_000):  # the burst ends with an error, this with it
                await anyio.sleep(0.01)

    async def body():
        with pytest.raises(Exception):  # the connection dies under the call
            async with server(tmp_path, "--db", db) as client:
                await kill_mid_burst(client)
        assert len(acknowledged) >= 30
        con = sqlite3.connect(db)
        try:
            assert con.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        finally:
            con.close()
        async with server(tmp_path, "--db", db) as client:
            stored = {e["id"] for e in await all_entries(client)}
        assert set(acknowledged) <= stored
        # at most the one call in flight landed without its acknowledgement
        assert len(stored - set(acknowledged)) <= 1

    run(body)


# --- PostgreSQL -------------------------------------------------------------


@pytest.fixture
def pg_database():
    """A fresh, empty PostgreSQL database: its URL (the server's --db)."""
    dsn = os.environ.get("POOLSPLIT_PG_DSN")
    if not dsn:
        if os.environ.get("POOLSPLIT_REQUIRE_PG"):
            pytest.fail("POOLSPLIT_REQUIRE_PG is set but POOLSPLIT_PG_DSN is not")
        pytest.skip("no PostgreSQL (scripts/test-memory.sh starts one)")
    psycopg = pytest.importorskip("psycopg")
    name = f"mcp_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(dsn, autocommit=True) as con:
        con.execute(f'CREATE DATABASE "{name}"')
    base, _, _ = dsn.rpartition("/")
    yield f"{base}/{name}"
    with psycopg.connect(dsn, autocommit=True) as con:
        con.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def pg_ctl(*args):
    """pg_ctl on the test server's data directory, as its owner.

    The postmaster it starts writes to the server's log file, not to our
    pipes: a child holding them open would keep subprocess.run waiting.
    """
    folder = os.environ.get("POOLSPLIT_PG_DIR")
    if not folder:
        pytest.skip("POOLSPLIT_PG_DIR is not set (scripts/test-memory.sh sets it)")
    [binary] = sorted(Path("/usr/lib/postgresql").glob("*/bin/pg_ctl"))[-1:]
    command = [str(binary), "-D", f"{folder}/data", "-l", f"{folder}/server.log", *args]
    if os.geteuid() == 0:
        command = ["runuser", "-u", "postgres", "--", *command]
    subprocess.run(
        command,
        check=True,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        timeout=HANG,
    )


@pytest.mark.restarts_postgres
def test_postgres_restart_under_a_running_server(tmp_path, pg_database):
    async def body():
        async with server(tmp_path, "--db", pg_database) as client:
            before = ok(await client.call_tool("remember", {"content": "before"}))
            pg_ctl("stop", "-m", "fast", "-w")
            try:
                down = error(await client.call_tool("remember", {"content": "during"}))
                assert "database unreachable" in down
                down = error(await client.call_tool("recall", {"message": "before"}))
                assert "database unreachable" in down
            finally:
                pg_ctl("restart", "-m", "fast", "-w")  # starts it with its options
            after = ok(await client.call_tool("remember", {"content": "after"}))
            contents = sorted(e["content"] for e in await all_entries(client))
            assert contents == ["after", "before"]
            shape = ok(await client.call_tool("recall", {"message": "before after"}))
            ids = {i for pool in shape["pools"].values() for i in pool}
            assert {before["id"], after["id"]} <= ids

    run(body)


def test_six_servers_starting_at_once_on_an_empty_postgres_database_all_serve(
    tmp_path, pg_database
):
    acknowledged: list[str] = []

    async def one(number):
        async with server(tmp_path, "--db", pg_database) as client:
            got = ok(
                await client.call_tool("remember", {"content": f"server {number}"})
            )
            acknowledged.append(got["id"])
            ok(await client.call_tool("recall", {"message": "server"}))

    async def body():
        async with anyio.create_task_group() as group:
            for number in range(6):
                group.start_soon(one, number)
        assert len(acknowledged) == 6
        async with server(tmp_path, "--db", pg_database) as client:
            assert sorted(e["id"] for e in await all_entries(client)) == sorted(
                acknowledged
            )

    run(body)
