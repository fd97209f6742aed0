import io
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import poolsplit
from poolsplit import main

ROOT = Path(__file__).resolve().parent.parent
NOW = ["--now", "2026-01-01"]
POOLS = [
    {"name": "core", "max_tokens": 0, "max_entries": 0, "types": ["correction"]},
    {"name": "work", "max_tokens": 50, "max_entries": 2, "types": ["task", "fact"]},
    {"name": "none", "max_tokens": 5, "max_entries": 1, "types": ["zz"]},
]
STORE = (
    '{"id": "c1", "type": "correction", "scope": "always",'
    ' "content": "Never force-push"}\n'
    '{"id": "t1", "type": "task", "content": "Ship the notes", "base_priority": 9}\n'
    "\n"
    '{"id": "f1", "type": "fact", "content": "The DB is postgres",'
    ' "created": "2025-12-01"}\n'
    '{"id": "x", "status": "old"}\n'
)


@pytest.fixture
def files(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Path("s.jsonl").write_text(STORE)
    Path("pools.json").write_text(json.dumps(POOLS))
    Path("q.jsonl").write_text('{"message": "ship notes"}\n{}\n')
    return tmp_path


def run(capsys, *argv):
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def test_retrieve_text_prompt_json(files, capsys):
    assert run(capsys, "retrieve", "s.jsonl", "--pools", "pools.json", *NOW) == (
        0,
        "## core\n- [c1] Never force-push\n\n## work\n- [t1] Ship the notes\n"
        "- [f1] The DB is postgres\n",
        "",
    )
    status, out, _ = run(
        capsys,
        "retrieve",
        "s.jsonl",
        "--pools",
        "pools.json",
        "--format",
        "prompt",
        "--message",
        "postgres db",
        "--tags",
        "a,,b",
        "--project",
        "p",
        *NOW,
    )
    assert (
        out == "## core\n- Never force-push\n\n"
        "## work\n- The DB is postgres\n- Ship the notes\n"
    )
    status, out, _ = run(
        capsys, "retrieve", "s.jsonl", "--pools", "pools.json", "--format", "json", *NOW
    )
    data = json.loads(out)
    assert list(data) == ["core", "work", "none"]  # pool order
    assert [e["id"] for e in data["work"]] == ["t1", "f1"]
    assert out.startswith('{\n  "core": [\n    {\n      "content": "Never force-push",')


def test_explain(files, capsys):
    status, out, _ = run(capsys, "explain", "s.jsonl", "--pools", "pools.json", *NOW)
    assert status == 0
    assert out == (
        "#  id  type        outcome          pool  score  cost  total  other pools\n"
        "0  c1  correction  always           core\n"
        "1  t1  task        selected         work  9.000  3     3\n"
        "2  f1  fact        selected         work  3.794  4     7\n"
        "3  x   note        inactive:status\n"
        "\n"
        "outcomes: selected 2, always 1, inactive 1\n"
        "pool core: tokens 0/0, entries 0/0, left out 0, always 1 (4 tokens)\n"
        "pool work: tokens 7/50, entries 2/2, left out 0, always 0 (0 tokens)\n"
        "pool none: tokens 0/5, entries 0/1, left out 0, always 0 (0 tokens)\n"
        "always-scope total: 4 tokens\n"
        "warning: pool 'none' admits types ['zz'], and no entry of the store has "
        "one of them; check their spelling\n"
    )
    status, out, _ = run(
        capsys, "explain", "s.jsonl", "--pools", "pools.json", "--format", "json", *NOW
    )
    assert json.loads(out)["decisions"][3]["reason"] == "status"


def test_validate(files, capsys, monkeypatch):
    assert run(capsys, "validate", "s.jsonl") == (
        0,
        "s.jsonl:5: entries[3] (id='x') warning: content: content is missing\n"
        "s.jsonl: 4 entries read, 0 errors, 1 warnings\n",
        "",
    )
    monkeypatch.setattr(
        sys,
        "stdin",
        io.TextIOWrapper(
            io.BytesIO(b'[{"id": 1, "content": "a"}, {"id": 1, "content": "b"}]')
        ),
    )
    status, out, _ = run(capsys, "validate", "-", "--format", "json")
    assert status == 1
    assert json.loads(out) == [
        {
            "field": "id",
            "id": 1,
            "file": "<stdin>",
            "index": 1,
            "line": 1,
            "message": "duplicate id 1 (first at entries[0])",
            "severity": "error",
        }
    ]
    Path("bad.json").write_text("[3]")
    assert run(capsys, "validate", "bad.json") == (
        1,
        "bad.json:1: entries[0] (id=None) error: must be an object, got int\n"
        "bad.json: 1 entries read, 1 errors, 0 warnings\n",
        "",
    )


def test_audit(files, capsys):
    status, out, _ = run(
        capsys,
        "audit",
        "s.jsonl",
        "--pools",
        "pools.json",
        "--queries",
        "q.jsonl",
        *NOW,
    )
    assert status == 0
    assert out == (
        "type        queries single  queries pools  share single  share pools\n"
        "correction  2/2             2/2            36.4%         36.4%\n"
        "fact        2/2             2/2            36.4%         36.4%\n"
        "note        0/2             0/2            0.0%          0.0%\n"
        "task        2/2             2/2            27.3%         27.3%\n"
        "\n"
        "single budget: 55 tokens / 3 entries (the pools' caps summed, "
        "always-scope ranked like the rest)\n"
        "always-scope entries loaded on every query: single 1/1, pools 1/1\n"
    )
    status, out, _ = run(
        capsys,
        "audit",
        "s.jsonl",
        "--pools",
        "pools.json",
        "--queries",
        "q.jsonl",
        "--format",
        "json",
        *NOW,
    )
    assert json.loads(out)["queries"] == 2


def test_demo(capsys):
    status, out, err = run(capsys, "demo")
    assert status == 0 and err == ""
    assert out == poolsplit._demo()
    assert "always-scope entries loaded on every query: single 0/8, pools 8/8" in out


@pytest.mark.parametrize(
    ("argv", "setup", "message"),
    [
        (["explain", "s.jsonl"], None, "the following arguments are required: --pools"),
        (
            ["frob"],
            None,
            "argument command: invalid choice: 'frob' "
            "(choose from 'retrieve', 'explain', 'validate', 'audit', 'demo')",
        ),
        (
            ["validate", "missing.jsonl"],
            None,
            "missing.jsonl: cannot read: [Errno 2] No such file or directory: "
            "'missing.jsonl'",
        ),
        (
            ["validate", "bin.jsonl"],
            ("bin.jsonl", b"\xff\xfe"),
            "bin.jsonl: cannot read: 'utf-8' codec can't decode byte 0xff "
            "in position 0: "
            "invalid start byte",
        ),
        (
            ["explain", "broken.jsonl", "--pools", "pools.json"],
            ("broken.jsonl", b'{"a": 1}\n\n{"a": \n'),
            "broken.jsonl:3: invalid JSON: Expecting value",
        ),
        (
            ["validate", "arr.json"],
            ("arr.json", b'[\n{"a": 1},\n{"a" 2}]'),
            "arr.json:3: invalid JSON: Expecting ':' delimiter",
        ),
        (
            ["validate", "deep.json"],
            ("deep.json", b"[" * 100000 + b"]" * 100000),
            "deep.json:1: invalid JSON: nested too deeply",
        ),
        (
            ["explain", "list.jsonl", "--pools", "pools.json"],
            ("list.jsonl", b'{"a": 1}\n[1]\n'),
            "list.jsonl:2: each entry must be a JSON object",
        ),
        (
            ["retrieve", "s.jsonl", "--pools", "p.json"],
            ("p.json", b'{"name": "a"}'),
            "p.json:1: pools must be a JSON array of objects",
        ),
        (
            ["retrieve", "s.jsonl", "--pools", "p.json"],
            ("p.json", b"[3]"),
            "p.json: pools[0]: must be an object, got int",
        ),
        (
            ["retrieve", "s.jsonl", "--pools", "p.json"],
            ("p.json", b'[{"name": "a", "max_tokens": -1, "max_entries": 1}]'),
            "p.json: pools[0]: max_tokens must be >= 0, got -1",
        ),
        (
            ["retrieve", "s.jsonl", "--pools", "p.json"],
            ("p.json", b'[{"name": "a", "max_tokens": 1, "max_entries": 1, "x": 1}]'),
            "p.json: pools[0]: unknown key 'x'; "
            "expected name, max_tokens, max_entries, types, min_score",
        ),
        (
            ["retrieve", "s.jsonl", "--pools", "p.json"],
            (
                "p.json",
                b'[{"name": "a", "max_tokens": 1, "max_entries": 1},'
                b' {"name": "a", "max_tokens": 1, "max_entries": 1}]',
            ),
            "p.json: pools[1]: duplicate pool name 'a'",
        ),
        (
            ["retrieve", "s.jsonl", "--pools", "pools.json", "--now", "soon"],
            None,
            "--now: not an ISO-8601 date or date-time: 'soon'",
        ),
        (
            ["retrieve", "b.jsonl", "--pools", "pools.json"],
            ("b.jsonl", b'{"id": "a", "type": "task", "base_priority": "hi"}'),
            "b.jsonl:1: entries[0] (id='a'): "
            "base_priority must be a real number, got str 'hi'",
        ),
        (
            ["audit", "b.jsonl", "--pools", "pools.json", "--queries", "q.jsonl"],
            ("b.jsonl", b'{"id": "a", "type": "task", "base_priority": "hi"}'),
            "b.jsonl:1: entries[0] (id='a'): "
            "base_priority must be a real number, got str 'hi'",
        ),
        (
            ["audit", "s.jsonl", "--pools", "pools.json", "--queries", "s.jsonl2"],
            ("s.jsonl2", b'{"a": 1}\n"q"\n'),
            "s.jsonl2:2: each query must be a JSON object",
        ),
    ],
)
def test_errors(files, capsys, argv, setup, message):
    if setup:
        Path(setup[0]).write_bytes(setup[1])
    status, out, err = run(capsys, *argv)
    assert (status, out) == (2, "")
    assert err == f"poolsplit: error: {message}\n"


def test_help_and_version(capsys):
    status, out, _ = run(capsys, "--help")
    assert status == 0 and out.startswith("usage: poolsplit")
    assert run(capsys, "--version") == (0, f"{poolsplit.__version__}\n", "")


def test_subprocess_demo_from_copy(tmp_path):
    shutil.copy(ROOT / "poolsplit.py", tmp_path / "poolsplit.py")
    done = subprocess.run(
        [sys.executable, "poolsplit.py", "demo"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0 and done.stderr == ""
    assert done.stdout == poolsplit._demo()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["poolsplit.py"]


def test_subprocess_module_version_and_error():
    done = subprocess.run(
        [sys.executable, "-m", "poolsplit", "--version"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert (done.returncode, done.stdout) == (0, f"{poolsplit.__version__}\n")
    done = subprocess.run(
        [sys.executable, "-m", "poolsplit", "validate", "nope"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 2 and "Traceback" not in done.stderr


def test_run_as_main_in_process(monkeypatch, capsys):
    import runpy

    monkeypatch.setattr(sys, "argv", ["poolsplit", "--version"])
    with pytest.raises(SystemExit) as exit_info:
        runpy.run_path(str(ROOT / "poolsplit.py"), run_name="__main__")
    assert exit_info.value.code == 0
    assert capsys.readouterr().out == f"{poolsplit.__version__}\n"


def test_audit_progress_on_a_terminal(files, capsys, monkeypatch):
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    argv = ["audit", "s.jsonl", "--pools", "pools.json", "--queries", "q.jsonl"]
    status, _, err = run(capsys, *argv, *NOW)
    assert (status, err) == (0, "\rquery 1/2\rquery 2/2\n")


def test_load_pools_is_the_command_lines_reader(tmp_path):
    """load_pools reads what --pools reads and raises ValueError naming the pool."""
    good = tmp_path / "pools.json"
    good.write_text('[{"name": "a", "max_tokens": 10, "max_entries": 1}]')
    assert poolsplit.load_pools(str(good)) == [poolsplit.Pool("a", 10, 1)]
    bad = tmp_path / "bad.json"
    bad.write_text('[{"name": "a", "max_tokens": 10, "max_entries": 1, "typse": []}]')
    with pytest.raises(ValueError, match=r"bad.json: pools\[0\]: unknown key 'typse'"):
        poolsplit.load_pools(str(bad))
    dup = tmp_path / "dup.json"
    dup.write_text(
        '[{"name": "a", "max_tokens": 1, "max_entries": 1},'
        ' {"name": "a", "max_tokens": 1, "max_entries": 1}]'
    )
    with pytest.raises(ValueError, match="duplicate pool name 'a'"):
        poolsplit.load_pools(str(dup))


def test_a_floor_past_the_float_range_in_a_pools_file(files, capsys):
    """A 400-digit min_score was an OverflowError traceback, exit 1."""
    Path("big.json").write_text(
        '[{"name": "a", "max_tokens": 1, "max_entries": 1, "min_score": 1'
        + "0" * 400
        + "}]"
    )
    status, out, err = run(capsys, "retrieve", "s.jsonl", "--pools", "big.json")
    assert (status, out) == (2, "")
    assert err == (
        "poolsplit: error: big.json: pools[0]: min_score must be within the float "
        "range, got an int past it; use inf for a floor no score reaches\n"
    )


def test_a_pool_name_with_a_newline_in_a_pools_file(files, capsys):
    Path("nl.json").write_text(
        '[{"name": "a\\n## System", "max_tokens": 1, "max_entries": 1}]'
    )
    status, out, err = run(capsys, "retrieve", "s.jsonl", "--pools", "nl.json")
    assert (status, out) == (2, "")
    assert err == (
        "poolsplit: error: nl.json: pools[0]: name must be one line of printable "
        "text, got 'a\\n## System'\n"
    )


@pytest.mark.parametrize("tags", ["billing, api", " api ", "api,,", "x ,  api"])
def test_tags_are_trimmed(files, capsys, tags):
    """--tags "billing, api" kept " api" and silently lost the tag boost."""
    Path("t.jsonl").write_text(
        '{"id": "a", "content": "plain"}\n'
        '{"id": "z", "content": "t", "tags": ["api"]}\n'
    )
    Path("one.json").write_text('[{"name": "p", "max_tokens": 9, "max_entries": 1}]')
    argv = ["retrieve", "t.jsonl", "--pools", "one.json", "--format", "json", *NOW]
    assert json.loads(run(capsys, *argv)[1])["p"][0]["id"] == "a"
    status, out, _ = run(capsys, *argv, "--tags", tags)
    assert (status, json.loads(out)["p"][0]["id"]) == (0, "z")
