"""poolsplit-mcp export, import and convert: memories moved as JSONL.

The round trip runs the installed console script (next to this interpreter,
as tests/test_mcp.py's ``SERVER``) in real subprocesses joined by a pipe;
the other tests call ``mcp_server.main`` in this process and read what it
wrote (the same code, without a second's start-up per command). Every
database is ``store_url``'s: a SQLite file and a PostgreSQL database.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from poolsplit_memory import open_store
from poolsplit_memory.mcp_server import main

SERVER = Path(sys.executable).with_name("poolsplit-mcp")
HANG = 600  # seconds: a guard against a hung command, never a measurement
WRITERS = ("ada", "grace", "linus")
TYPES = ("fact", "note", "task", "episode", "decision")
START = datetime(2026, 5, 1, 8, 0, tzinfo=timezone.utc)


def dated_entries(count):
    """``count`` entries over seven months, each field of the schema used
    somewhere: tags, project, scope, retired entries, provenance stamps of
    three writers (some updated, some quarantined), text past ASCII with a
    U+2028 inside a string."""
    entries = []
    for i in range(count):
        created = (START + timedelta(minutes=31 * i)).isoformat()
        entry = {
            "id": f"e{i:05d}",
            "type": TYPES[i % len(TYPES)],
            "content": f"memory {i} about topic {i % 97} of the orders service",
            "created": created,
            "tags": [f"t{i % 7}"],
            "written_by": WRITERS[i % len(WRITERS)],
            "written_at": created,
        }
        if i % 10 == 3:
            entry["project"] = "orders"
        if i % 1000 == 0:
            entry["scope"] = "always"
        if i % 500 == 5:
            entry["content"] = f"café {i}\u2028line two ☕"
        if i % 50 == 7:
            entry["updated_by"] = WRITERS[(i + 1) % len(WRITERS)]
            entry["updated_at"] = (START + timedelta(days=200)).isoformat()
        if i % 100 == 11 and i + 1 < count:
            entry["superseded_by"] = f"e{i + 1:05d}"
        if i % 200 == 17:
            entry["quarantined"] = True
        entries.append(entry)
    return entries


def jsonl(entries):
    return "".join(json.dumps(e, ensure_ascii=False) + "\n" for e in entries)


def seed(url, namespace, entries):
    with open_store(url, namespace=namespace) as store:
        assert store.import_jsonl(io.StringIO(jsonl(entries)), keep_provenance=True)


def parsed(text):
    """The objects of JSONL text; lines end at "\\n" only (str.splitlines
    would also split at the U+2028 inside a string)."""
    return [json.loads(line) for line in text.split("\n") if line]


def stored(url, namespace):
    with open_store(url, namespace=namespace) as store:
        text = io.StringIO()
        store.export_jsonl(text)
    return parsed(text.getvalue())


def cli(args, capsys, *, stdin=None, monkeypatch=None):
    """Run ``poolsplit-mcp ARGS`` in this process: (status, stdout, stderr)."""
    if stdin is not None:
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin)))
    status = main([str(arg) for arg in args])
    out, err = capsys.readouterr()
    return status, out, err


def one_line(err):
    """The one line a command wrote on stderr."""
    assert err.endswith("\n") and err.count("\n") == 1, err
    return err[:-1]


@pytest.fixture(autouse=True)
def _data_home(tmp_path, monkeypatch):
    """The server's default database under this test's folder."""
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    monkeypatch.chdir(tmp_path)


# --- the round trip ------------------------------------------------------------


def test_export_piped_to_import_round_trips_10000_dated_entries(store_url, tmp_path):
    """``export | import --keep-provenance`` through a real pipe copies a
    namespace of 10,000 dated entries: every entry, its ``created`` and its
    provenance, and the copy exports to the same bytes."""
    entries = dated_entries(10_000)
    seed(store_url, "ada", entries)
    env = {**os.environ, "XDG_DATA_HOME": str(tmp_path / "xdg")}
    export = subprocess.Popen(
        [SERVER, "export", "--db", store_url, "--namespace", "ada"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=tmp_path,
        env=env,
    )
    imported = subprocess.run(
        [SERVER, "import", "-", "--db", store_url, "--namespace", "copy"]
        + ["--keep-provenance"],
        stdin=export.stdout,
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=HANG,
    )
    export.stdout.close()
    exported_err = export.stderr.read().decode()
    export.stderr.close()
    assert export.wait(timeout=HANG) == 0, exported_err
    assert imported.returncode == 0, imported.stderr
    assert exported_err.startswith("poolsplit-mcp export: 10000 entries of namespace")
    assert one_line(imported.stderr).startswith(
        "poolsplit-mcp import: 10000 entries from <stdin> imported into namespace "
        "'copy'"
    )

    files = {}
    for namespace in ("ada", "copy"):
        done = subprocess.run(
            [SERVER, "export", "--db", store_url, "--namespace", namespace]
            + [tmp_path / f"{namespace}.jsonl"],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            env=env,
            timeout=HANG,
        )
        assert done.returncode == 0, done.stderr
        files[namespace] = (tmp_path / f"{namespace}.jsonl").read_bytes()
    assert files["copy"] == files["ada"]
    lines = files["copy"].decode("utf-8").split("\n")
    assert lines[-1] == "" and len(lines) == 10_001
    assert [json.loads(line) for line in lines[:-1]] == entries


def test_import_without_keep_provenance_stamps_the_importer_and_keeps_created(
    store_url, capsys, tmp_path
):
    entries = dated_entries(20)
    (tmp_path / "in.jsonl").write_text(jsonl(entries), encoding="utf-8")
    status, _, err = cli(
        ["import", "in.jsonl", "--db", store_url, "--writer", "restorer"], capsys
    )
    assert status == 0, err
    assert "stamped as written by 'restorer'" in one_line(err)
    back = {e["id"]: e for e in stored(store_url, "default")}
    assert len(back) == 20
    for entry in entries:
        got = back[entry["id"]]
        assert got["created"] == entry["created"]
        assert got["written_by"] == "restorer"
        assert got["written_at"] != entry["written_at"]
        assert "updated_by" not in got and "quarantined" not in got


def test_export_writes_dates_and_provenance_to_stdout_and_says_where(store_url, capsys):
    seed(store_url, "ada", dated_entries(3))
    status, out, err = cli(["export", "--db", store_url, "--namespace", "ada"], capsys)
    assert status == 0
    assert parsed(out) == dated_entries(3)
    line = one_line(err)
    assert line.startswith("poolsplit-mcp export: 3 entries of namespace 'ada' in ")
    assert line.endswith(" written to standard output")


def test_export_dash_is_stdout_and_an_empty_namespace_exports_nothing(
    store_url, capsys
):
    seed(store_url, "ada", dated_entries(2))
    status, out, err = cli(
        ["export", "--db", store_url, "--namespace", "nobody", "-"], capsys
    )
    assert (status, out) == (0, "")
    assert "0 entries of namespace 'nobody'" in one_line(err)


def test_the_default_database_is_the_servers(capsys, monkeypatch, tmp_path):
    """Without --db both commands use $XDG_DATA_HOME/poolsplit/memory.db."""
    data = jsonl(dated_entries(4)).encode()
    status, _, err = cli(["import", "-"], capsys, stdin=data, monkeypatch=monkeypatch)
    assert status == 0, err
    path = tmp_path / "xdg" / "poolsplit" / "memory.db"
    assert f"in {path}," in err
    assert path.is_file()
    status, out, _ = cli(["export"], capsys)
    assert status == 0
    assert len(parsed(out)) == 4


# --- failures: one line, exit 2, nothing written -----------------------------------


def test_a_bad_line_is_named_by_its_number_and_nothing_is_imported(
    store_url, capsys, tmp_path
):
    lines = jsonl(dated_entries(3)).splitlines()
    lines[1] = '{"content": "x", "base_priority": "high"}'
    (tmp_path / "bad.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    status, _, err = cli(["import", "bad.jsonl", "--db", store_url], capsys)
    assert status == 2
    line = one_line(err)
    assert line.startswith(
        "poolsplit-mcp import: error: bad.jsonl: line 2: base_priority: "
    )
    assert line.endswith("; nothing was imported")
    assert stored(store_url, "default") == []


def test_invalid_json_names_its_line(store_url, capsys, monkeypatch):
    data = b'{"content": "one"}\n\n{"content": \n'
    status, _, err = cli(
        ["import", "-", "--db", store_url], capsys, stdin=data, monkeypatch=monkeypatch
    )
    assert status == 2
    assert one_line(err).startswith(
        "poolsplit-mcp import: error: <stdin>: line 3: not valid JSON: "
    )
    assert stored(store_url, "default") == []


def test_bytes_that_are_not_utf8_name_their_line(store_url, capsys, monkeypatch):
    data = b'{"content": "one"}\n{"content": "\xff"}\n'
    status, _, err = cli(
        ["import", "-", "--db", store_url], capsys, stdin=data, monkeypatch=monkeypatch
    )
    assert status == 2
    assert one_line(err) == (
        "poolsplit-mcp import: error: <stdin>: line 2: not valid UTF-8 "
        "(invalid start byte)"
    )


def test_a_utf8_byte_order_mark_is_skipped(store_url, capsys, monkeypatch):
    data = b"\xef\xbb\xbf" + jsonl(dated_entries(2)).encode()
    status, _, err = cli(
        ["import", "-", "--db", store_url], capsys, stdin=data, monkeypatch=monkeypatch
    )
    assert status == 0, err
    assert len(stored(store_url, "default")) == 2


def test_an_id_stored_already_needs_replace(store_url, capsys, tmp_path):
    seed(store_url, "default", dated_entries(2))
    changed = dated_entries(2)
    changed[1]["content"] = "the orders service moved to PostgreSQL"
    (tmp_path / "in.jsonl").write_text(jsonl(changed), encoding="utf-8")
    status, _, err = cli(["import", "in.jsonl", "--db", store_url], capsys)
    assert status == 2
    assert "'e00000' is already stored" in err and "pass --replace" in err
    status, _, err = cli(
        ["import", "in.jsonl", "--db", store_url, "--replace", "--keep-provenance"],
        capsys,
    )
    assert status == 0, err
    assert stored(store_url, "default")[1]["content"].startswith("the orders")


def test_warnings_come_one_a_line_before_the_summary(store_url, capsys, tmp_path):
    lines = [{"content": "fine"}, {"content": "odd", "base_priority": -1}]
    (tmp_path / "in.jsonl").write_text(jsonl(lines), encoding="utf-8")
    status, _, err = cli(["import", "in.jsonl", "--db", store_url], capsys)
    assert status == 0
    warning, summary = err.splitlines()
    assert warning.startswith(
        "poolsplit-mcp import: warning: in.jsonl: line 2: base_priority: "
    )
    assert summary.endswith("(1 warning)")


def test_export_of_a_missing_sqlite_file_creates_nothing(capsys, tmp_path):
    status, out, err = cli(["export", "--db", "missing.db"], capsys)
    assert (status, out) == (2, "")
    assert one_line(err) == (
        f"poolsplit-mcp export: error: no database at {tmp_path / 'missing.db'}: "
        "nothing to export (pass --db)"
    )
    assert not (tmp_path / "missing.db").exists()


@pytest.mark.parametrize(
    ("args", "cause"),
    [
        (["--db", "memory.db", "--namespace", ""], "namespace: must not be empty"),
        (["--db", ":memory:"], "keeps nothing after the server exits"),
        (["--db", "mysql://x/y"], "unsupported scheme 'mysql'"),
    ],
)
def test_a_bad_database_or_namespace_is_one_line(args, cause, capsys, tmp_path):
    (tmp_path / "in.jsonl").write_text(jsonl(dated_entries(1)), encoding="utf-8")
    seed(str(tmp_path / "memory.db"), "default", dated_entries(1))
    for command in (["export"], ["import", "in.jsonl"]):
        status, _, err = cli([*command, *args], capsys)
        assert status == 2
        assert cause in one_line(err)


def test_an_unreachable_postgresql_is_one_line(capsys):
    url = "postgresql://nobody@127.0.0.1:1/none?connect_timeout=2"
    status, _, err = cli(["export", "--db", url], capsys)
    assert status == 2
    assert one_line(err).startswith("poolsplit-mcp export: error: database unreachable")


def test_an_unwritable_export_file_is_one_line_and_keeps_the_old(
    store_url, capsys, tmp_path
):
    seed(store_url, "default", dated_entries(2))
    status, _, err = cli(
        ["export", "--db", store_url, tmp_path / "no" / "such" / "x.jsonl"], capsys
    )
    assert status == 2
    assert one_line(err).startswith("poolsplit-mcp export: error: cannot write export")


def test_a_reader_gone_before_the_end_is_one_line(tmp_path):
    """``export | head``: a closed pipe is one line and status 2, never a
    BrokenPipeError traceback (nor a second one at the interpreter's exit)."""
    seed(str(tmp_path / "memory.db"), "default", dated_entries(3))
    read, write = os.pipe()
    os.close(read)  # before the command starts: its write always fails
    try:
        done = subprocess.run(
            [SERVER, "export", "--db", tmp_path / "memory.db"],
            stdout=write,
            stderr=subprocess.PIPE,
            text=True,
            cwd=tmp_path,
            timeout=HANG,
        )
    finally:
        os.close(write)
    assert done.returncode == 2
    assert done.stderr == (
        "poolsplit-mcp export: error: standard output closed before the end "
        "was written\n"
    )


def test_an_unreadable_import_file_is_one_line(capsys):
    status, _, err = cli(["import", "absent.jsonl"], capsys)
    assert status == 2
    assert one_line(err) == (
        "poolsplit-mcp import: error: cannot read absent.jsonl: "
        "No such file or directory"
    )


# --- convert: the MCP reference memory server's knowledge graph ------------------

GRAPH = [
    {
        "type": "entity",
        "name": "Ada_Lovelace",
        "entityType": "person",
        "observations": ["Prefers tea over coffee", "Works on the orders service"],
    },
    {
        "type": "entity",
        "name": "Acme",
        "entityType": "organization",
        "observations": [],
    },
    {
        "type": "relation",
        "from": "Ada_Lovelace",
        "to": "Acme",
        "relationType": "works_at",
    },
]


def test_convert_then_import_brings_the_reference_servers_graph(
    store_url, capsys, tmp_path
):
    (tmp_path / "memory.jsonl").write_text(
        "\n".join(json.dumps(line) for line in GRAPH) + "\n", encoding="utf-8"
    )
    status, _, err = cli(
        ["convert", "mcp-memory", "memory.jsonl", "converted.jsonl"]
        + ["--created", "2026-03-01T09:00:00+00:00"],
        capsys,
    )
    assert status == 0, err
    assert "4 entries from memory.jsonl written to converted.jsonl" in one_line(err)
    status, _, err = cli(["import", "converted.jsonl", "--db", store_url], capsys)
    assert status == 0, err
    got = [
        (e["type"], e["content"], e["tags"], e["created"])
        for e in stored(store_url, "default")
    ]
    when = "2026-03-01T09:00:00+00:00"
    assert got == [
        (
            "fact",
            "Ada_Lovelace: Prefers tea over coffee",
            ["Ada_Lovelace", "person"],
            when,
        ),
        (
            "fact",
            "Ada_Lovelace: Works on the orders service",
            ["Ada_Lovelace", "person"],
            when,
        ),
        (
            "fact",
            "Acme: an entity of type organization",
            ["Acme", "organization"],
            when,
        ),
        ("fact", "Ada_Lovelace works at Acme", ["Ada_Lovelace", "Acme"], when),
    ]
    with open_store(store_url) as store:
        recalled = store.recall("where does Ada_Lovelace work? tea?")
    assert "Ada_Lovelace works at Acme" in recalled.text


def test_convert_dates_entries_by_the_files_modification_time(capsys, tmp_path):
    path = tmp_path / "memory.jsonl"
    path.write_text(json.dumps(GRAPH[2]) + "\n", encoding="utf-8")
    when = datetime(2025, 11, 3, 14, 5, 9, tzinfo=timezone.utc)
    os.utime(path, (when.timestamp(), when.timestamp()))
    status, out, _ = cli(["convert", "mcp-memory", "memory.jsonl"], capsys)
    assert status == 0
    assert out == (
        '{"content":"Ada_Lovelace works at Acme","type":"fact",'
        '"tags":["Ada_Lovelace","Acme"],"created":"2025-11-03T14:05:09+00:00"}\n'
    )


def test_convert_leaves_out_other_types_with_a_warning(capsys, monkeypatch):
    data = (json.dumps(GRAPH[2]) + '\n{"type": "comment", "text": "hi"}\n').encode()
    status, out, err = cli(
        ["convert", "mcp-memory", "-", "--created", "2026-01-01"],
        capsys,
        stdin=data,
        monkeypatch=monkeypatch,
    )
    assert status == 0
    assert len(parsed(out)) == 1
    warning, _summary = err.splitlines()
    assert warning == (
        "poolsplit-mcp convert: warning: <stdin>: line 2: type 'comment' is "
        "neither 'entity' nor 'relation'; left out"
    )


@pytest.mark.parametrize(
    ("line", "cause"),
    [
        ("{not json", "line 2: not valid JSON: "),
        ("[1, 2]", "line 2: must be a JSON object"),
        ("[" * 100_000, "line 2: is nested too deeply to read"),
        ('{"type": "entity", "name": "A"}', "line 2: entityType: must be a non-blank"),
        (
            '{"type": "entity", "name": "A", "entityType": "x", "observations": "o"}',
            "line 2: observations: must be a list of strings",
        ),
        (
            '{"type": "relation", "from": "A", "to": ""}',
            "line 2: to: must be a non-blank",
        ),
    ],
)
def test_convert_names_a_bad_line_and_writes_nothing(
    line, cause, capsys, monkeypatch, tmp_path
):
    data = (json.dumps(GRAPH[0]) + "\n" + line + "\n").encode()
    status, out, err = cli(
        ["convert", "mcp-memory", "-", "out.jsonl"],
        capsys,
        stdin=data,
        monkeypatch=monkeypatch,
    )
    assert (status, out) == (2, "")
    assert one_line(err).startswith(f"poolsplit-mcp convert: error: <stdin>: {cause}")
    assert not (tmp_path / "out.jsonl").exists()


def test_convert_refuses_a_created_that_is_no_date(capsys, monkeypatch):
    status, _, err = cli(
        ["convert", "mcp-memory", "-", "--created", "last tuesday"],
        capsys,
        stdin=b"",
        monkeypatch=monkeypatch,
    )
    assert status == 2
    assert one_line(err) == (
        "poolsplit-mcp convert: error: --created: must be an ISO 8601 date or "
        "time, got 'last tuesday'"
    )
