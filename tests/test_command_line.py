"""The command line: reading files and stdin, errors on one line, --help.

tests/test_cli.py runs the compliance cases through main(); these pin the
command line's own behaviour: validate's report, warnings on stderr, lines
named, and inputs the fuzzers found.
"""

import io
import json
import sys
from datetime import datetime, timezone
from pathlib import Path

import pytest
from test_explain import SCALE_POOLS, SCALE_STORE

import poolsplit
from poolsplit import Pool, explain, main, render, retrieve_pools

NOW = datetime(2026, 1, 1, tzinfo=timezone.utc)

# --- validate, warnings, help, and what the fuzzers and reviews found -----------


def pools_file(tmp_path):
    path = tmp_path / "pools.json"
    path.write_text('[{"name": "p", "max_tokens": 100, "max_entries": 5}]')
    return str(path)


def run(argv, capsys):
    status = main(argv)
    out, err = capsys.readouterr()
    return status, out, err


def write_pools(tmp_path, pools=None):
    path = tmp_path / "p.json"
    path.write_text(
        json.dumps(pools or [{"name": "all", "max_tokens": 99, "max_entries": 9}])
    )
    return str(path)


def audit_one_entry(tmp_path, queries_text):
    """Run `poolsplit audit` on a one-entry store; assert it fails (exit 2)."""
    store = tmp_path / "s.jsonl"
    store.write_text('{"id": "a", "content": "x"}\n')
    queries = tmp_path / "q.jsonl"
    queries.write_text(queries_text)
    argv = ["audit", str(store), "--pools", write_pools(tmp_path)]
    assert main([*argv, "--queries", str(queries)]) == 2
    return queries


STORE = [
    {"id": "c1", "type": "correction", "scope": "always", "content": "never"},
    {"id": "c2", "type": "corection", "scope": "always", "content": "typo"},
    {"id": "t1", "type": "task", "content": "do"},
]


def test_cli_prints_the_warning_on_stderr(tmp_path, capsys):
    store = tmp_path / "s.jsonl"
    store.write_text("\n".join(json.dumps(e) for e in STORE))
    pools = tmp_path / "p.json"
    pools.write_text(
        '[{"name": "core", "max_tokens": 0, "max_entries": 0, "types": ["correction"]}]'
    )
    status = main(
        ["retrieve", str(store), "--pools", str(pools), "--now", "2026-01-01"]
    )
    out, err = capsys.readouterr()
    assert status == 0
    assert out == "## core\n- [c1] never\n"
    assert err.startswith(f"poolsplit: warning: {store}:2: 1 active always-scope ")
    assert err.count("\n") == 1


def test_cli_validate_goes_on_past_a_bad_line(tmp_path, capsys):
    path = tmp_path / "broken.jsonl"
    path.write_text(
        '{"id": "a", "content": "x"}\n'
        '{"id": "b", "content": \n'
        "\n"
        '{"id": "c", "content": "x", "status": "Active"}\n'
        '{"id": "d", "content": "x", "scop": "always"}\n'
    )
    status = main(["validate", str(path)])
    out, err = capsys.readouterr()
    assert (status, err) == (1, "")
    assert out == (
        f"{path}:2: error: invalid JSON: Expecting value\n"
        f"{path}:4: entries[1] (id='c') error: status: is 'Active', not exactly "
        "'active': the entry is inactive and will never load\n"
        f"{path}:5: entries[2] (id='d') warning: scop: unknown key 'scop', probably "
        "'scope'; poolsplit reads only 'scope', so this value is ignored\n"
        f"{path}: 3 entries read, 2 errors, 1 warnings\n"
    )
    assert main(["validate", str(path), "--format", "json"]) == 1
    rows = json.loads(capsys.readouterr().out)
    assert [(r["line"], r["severity"]) for r in rows] == [
        (2, "error"),
        (4, "error"),
        (5, "warning"),
    ]
    assert rows[0] == {
        "file": str(path),
        "line": 2,
        "index": None,
        "id": None,
        "severity": "error",
        "field": "",
        "message": "invalid JSON: Expecting value",
    }
    assert rows[1]["index"] == 1 and rows[1]["id"] == "c"


def test_cli_validate_clean_store_prints_one_summary_line(tmp_path, capsys):
    path = tmp_path / "ok.jsonl"
    path.write_text('{"id": "a", "content": "x"}\n{"id": "b", "content": "y"}\n')
    assert main(["validate", str(path)]) == 0
    assert capsys.readouterr().out == f"{path}: 2 entries read, 0 errors, 0 warnings\n"


def test_cli_validate_array_file_lines_per_item(tmp_path, capsys):
    path = tmp_path / "s.json"
    path.write_text(
        '[\n  {"id": "a", "content": "x"},\n\n  {"id": "a",\n   "content": "y"}, 3]\n'
    )
    assert main(["validate", str(path)]) == 1
    assert capsys.readouterr().out == (
        f"{path}:4: entries[1] (id='a') error: id: duplicate id 'a' (first at "
        "entries[0])\n"
        f"{path}:5: entries[2] (id=None) error: must be an object, got int\n"
        f"{path}: 3 entries read, 2 errors, 0 warnings\n"
    )


def test_cli_validate_unparsable_array_stays_one_error(tmp_path, capsys):
    path = tmp_path / "s.json"
    path.write_text('[{"id": "a"},\n{"id" 2}]')
    assert main(["validate", str(path)]) == 2
    assert capsys.readouterr().err == (
        f"poolsplit: error: {path}:2: invalid JSON: Expecting ':' delimiter\n"
    )


def test_cli_dangling_superseded_by_says_the_entry_is_lost(tmp_path, capsys):
    path = tmp_path / "s.jsonl"
    path.write_text('{"id": "old", "content": "x", "superseded_by": "gone"}\n')
    assert main(["validate", str(path)]) == 1
    assert capsys.readouterr().out.splitlines()[0] == (
        f"{path}:1: entries[0] (id='old') error: superseded_by: is 'gone', an id "
        "that is not in the store: this entry never loads, and nothing replaces it"
    )


def test_help_explains_every_option(capsys):
    assert main(["retrieve", "--help"]) == 0
    text = capsys.readouterr().out
    for option in ("--pools", "--now", "--tags", "--message", "--project", "--format"):
        line = next(
            line for line in text.splitlines() if line.strip().startswith(option)
        )
        following = text[text.index(line) :].split("\n  -")[0]
        assert len(following.split()) > 2, f"{option} has no help text"
    assert "comma-separated" in text and "the moment recency is measured from" in text
    assert '"min_score": 6.0' in text  # the epilog shows a pools file
    assert '{"message": "fix the billing export"' in text  # and a queries line
    assert main(["--help"]) == 0
    assert "POOLS is a JSON array of pools" in capsys.readouterr().out


def test_pools_file_example_in_help_is_valid(tmp_path, capsys):
    main(["--help"])
    text = capsys.readouterr().out
    start = text.index("  [{")
    example = text[start : text.index("]\n", start) + 1]
    path = Path(tmp_path / "p.json")
    path.write_text(example)
    store = tmp_path / "s.jsonl"
    store.write_text('{"id": "a", "type": "task", "content": "x"}\n')
    assert (
        main(["retrieve", str(store), "--pools", str(path), "--now", "2026-01-01"]) == 0
    )


def test_cli_reads_a_line_separator_inside_a_json_string(tmp_path, capsys):
    """JSON allows U+2028 raw in a string; only "\\n" ends a JSON Lines line."""
    store = tmp_path / "u.jsonl"
    store.write_text(
        json.dumps({"id": "a", "content": "Run it\u2028then stop"}, ensure_ascii=False)
        + '\n{"id": "b", "content": "x", "status": "Active"}\n',
        encoding="utf-8",
    )
    argv = [
        "retrieve",
        str(store),
        "--pools",
        write_pools(tmp_path),
        "--now",
        "2026-01-01",
    ]
    assert main([*argv, "--format", "json"]) == 0
    assert [e["id"] for e in json.loads(capsys.readouterr().out)["all"]] == ["a"]
    assert main(["validate", str(store)]) == 1
    assert capsys.readouterr().out.startswith(f"{store}:2: entries[1] (id='b') error:")


def test_cli_reads_a_byte_order_mark_as_no_data(tmp_path, capsys):
    for name, text in (
        ("bom.jsonl", '{"id": "a", "content": "x"}\n'),
        ("bom.json", '[{"id": "a", "content": "x"}]'),
    ):
        path = tmp_path / name
        path.write_bytes(b"\xef\xbb\xbf" + text.encode())
        assert main(["validate", str(path)]) == 0
        assert (
            capsys.readouterr().out == f"{path}: 1 entries read, 0 errors, 0 warnings\n"
        )


def test_cli_query_with_an_unknown_key_is_an_error(tmp_path, capsys):
    queries = audit_one_entry(tmp_path, '{"mesage": "fix billing"}\n')
    assert capsys.readouterr().err == (
        f"poolsplit: error: {queries}:1: unknown key 'mesage'; "
        "expected message, tags, project\n"
    )


def test_cli_names_the_line_of_a_bad_entry_and_of_a_lost_correction(tmp_path, capsys):
    store = tmp_path / "s.jsonl"
    store.write_text(
        '{"id": "a", "content": "x"}\n\n'
        '{"id": "c", "type": "corection", "scope": "always", "content": "y"}\n'
        '{"id": "b", "type": "task", "base_priority": "high"}\n'
    )
    pools = write_pools(
        tmp_path, [{"name": "t", "max_tokens": 9, "max_entries": 9, "types": ["task"]}]
    )
    assert main(["retrieve", str(store), "--pools", pools]) == 2
    assert capsys.readouterr().err == (
        f"poolsplit: error: {store}:4: entries[2] (id='b'): base_priority must be a "
        "real number, got str 'high'\n"
    )
    store.write_text(store.read_text().replace('"high"', "1"))
    assert main(["retrieve", str(store), "--pools", pools]) == 0
    err = capsys.readouterr().err
    assert err.startswith(f"poolsplit: warning: {store}:3: ")
    assert "entries[1] (id='c') of type 'corection'" in err


@pytest.mark.skipif(
    not hasattr(sys, "get_int_max_str_digits"), reason="no int digit limit"
)
def test_cli_integer_past_the_digit_limit_is_one_line_error(tmp_path, capsys):
    """json.loads raises a plain ValueError (not JSONDecodeError) for it."""
    store = tmp_path / "store.jsonl"
    store.write_text('{"id": ' + "9" * 5000 + "}\n")
    status, out, err = run(
        ["retrieve", str(store), "--pools", pools_file(tmp_path)], capsys
    )
    assert status == 2
    assert err.startswith(f"poolsplit: error: {store}:1: invalid JSON: ")
    assert err.count("\n") == 1
    # validate reports the line as an error and goes on
    status, out, err = run(["validate", str(store)], capsys)
    assert (status, err) == (1, "")
    assert out.startswith(f"{store}:1: error: invalid JSON: ")
    assert out.endswith(f"{store}: 0 entries read, 1 errors, 0 warnings\n")


@pytest.mark.parametrize("now", ["9999-12-31T23:00-05:00", "0001-01-01T00:00+05:00"])
def test_cli_now_out_of_range_is_one_line_error(tmp_path, capsys, now):
    store = tmp_path / "store.jsonl"
    store.write_text('{"id": "a"}\n')
    argv = ["retrieve", str(store), "--pools", pools_file(tmp_path), "--now", now]
    status, out, err = run(argv, capsys)
    assert (status, out) == (2, "")
    assert err == f"poolsplit: error: --now: out of range: {now!r}\n"


def test_cli_lone_surrogate_is_written_escaped(tmp_path, capsys):
    """JSON's "\\ud800" is a str that UTF-8 output cannot encode."""
    store = tmp_path / "store.jsonl"
    store.write_text('{"id": "\\ud800", "content": "x\\udfff"}\n')
    argv = ["retrieve", str(store), "--pools", pools_file(tmp_path), "--now", "2026"]
    argv[-1] = "2026-01-01"
    status, out, err = run(argv, capsys)
    assert (status, err) == (0, "")
    assert out == "## p\n- [\\ud800] x\\udfff\n"


def test_strict_utf8_stdout_is_what_capsys_gives():
    """The surrogate test relies on capsys encoding strictly, as a pipe does."""
    stream = io.TextIOWrapper(io.BytesIO(), encoding="utf-8")
    with pytest.raises(UnicodeEncodeError):
        stream.write("\ud800")


def test_cli_retrieve_calls_retrieve_pools_not_explain(tmp_path, capsys, monkeypatch):
    """7: the command line's retrieve went through the traced explain path."""
    calls = []
    real = poolsplit.retrieve_pools

    def spy(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    def forbidden(*args, **kwargs):
        raise AssertionError("retrieve must not trace")

    monkeypatch.setattr(poolsplit, "retrieve_pools", spy)
    monkeypatch.setattr(poolsplit, "explain", forbidden)
    store = tmp_path / "s.jsonl"
    store.write_text('{"id": "a", "content": "x"}\n')
    argv = [
        "retrieve",
        str(store),
        "--pools",
        pools_file(tmp_path),
        "--now",
        "2026-01-01",
    ]
    assert main(argv) == 0
    assert capsys.readouterr().out == "## p\n- [a] x\n"
    assert calls == [1]


def test_cli_validate_takes_now(tmp_path, capsys):
    store = tmp_path / "s.jsonl"
    store.write_text('{"id": "e", "content": "x", "created": "2026-01-05"}\n')
    assert main(["validate", str(store), "--now", "2026-01-01"]) == 0
    out = capsys.readouterr().out
    assert "entries[0] (id='e') warning: created: is '2026-01-05', 4 days" in out
    assert main(["validate", str(store), "--now", "2026-01-05"]) == 0
    assert "0 errors, 0 warnings" in capsys.readouterr().out


def test_render_is_the_cli_prompt_format(tmp_path, capsys):
    store = tmp_path / "s.json"
    store.write_text(json.dumps(STORE))
    pools = tmp_path / "p.json"
    pools.write_text('[{"name": "all", "max_tokens": 99, "max_entries": 9}]')
    main(
        [
            "retrieve",
            str(store),
            "--pools",
            str(pools),
            "--now",
            "2026-01-01",
            "--format",
            "prompt",
        ]
    )
    expected = render(retrieve_pools(STORE, [Pool("all", 99, 9)], now=NOW))
    assert capsys.readouterr().out == expected == "## all\n- never\n- typo\n- do\n"


def test_cli_explain_filters_and_summary(tmp_path, capsys):
    store = tmp_path / "s.jsonl"
    store.write_text("\n".join(json.dumps(e) for e in SCALE_STORE))
    pools = tmp_path / "p.json"
    pools.write_text(json.dumps([vars(p) | {"types": p.types} for p in SCALE_POOLS]))
    base = ["explain", str(store), "--pools", str(pools), "--now", "2026-01-01"]

    def rows(*extra):
        assert main([*base, *extra]) == 0
        out = capsys.readouterr().out
        return [line.split()[1] for line in out.split("\n\n")[0].splitlines()[1:]]

    assert rows("--id", "7", "--id", "t1") == ["t1", "7"]
    assert rows("--id", "true", "--id", "null") == []  # JSON, but not a number
    assert rows("--type", "task") == ["t1", "t2", "old"]
    assert rows("--outcome", "entry_cap") == ["t2", "c1"]
    assert rows("--type", "correction", "--outcome", "entry_cap") == ["c1"]
    assert rows("--outcome", "inactive", "--outcome", "taken_earlier") == ["t1", "old"]
    assert main([*base, "--summary"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("outcomes: selected 4, inactive 1\npool core:")
    assert main([*base, "--summary", "--format", "json", "--id", "t1"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert "decisions" not in data
    assert data["counts"] == {"selected": 1}
    assert main([*base, "--outcome", "picked"]) == 2
    assert "invalid choice: 'picked'" in capsys.readouterr().err


def test_explain_json_taken_earlier_in_is_a_list(tmp_path, capsys):
    """5: --format json wrote "('work',)", a Python repr."""
    store = tmp_path / "s.jsonl"
    store.write_text('{"id": "c", "scope": "always", "type": "x"}\n')
    pools = tmp_path / "p.json"
    pools.write_text(
        '[{"name": "a", "max_tokens": 0, "max_entries": 0},'
        ' {"name": "b", "max_tokens": 0, "max_entries": 0}]'
    )
    argv = ["explain", str(store), "--pools", str(pools), "--format", "json"]
    assert main(argv) == 0
    decision = json.loads(capsys.readouterr().out)["decisions"][0]
    assert decision["taken_earlier_in"] == ["b"]
    assert (
        explain([{"id": ("t",)}], [Pool("p", 1, 1)], now=NOW).to_dict()["decisions"][0][
            "id"
        ]
        == "('t',)"
    )
