"""The agent's turn: relevance floor, loud misconfiguration, render, validate.

Each of the trial's six problems (issue "Fit the agent's turn") has a test
here that fails on the code before it: the floor, the warning, render, the
validate checks, pool sizing in audit, and --help.
"""

import json
import math
import warnings
from datetime import datetime, timezone
from pathlib import Path

import pytest

from poolsplit import (
    Pool,
    PoolsplitWarning,
    audit,
    explain,
    main,
    render,
    retrieve,
    retrieve_pools,
    validate,
)

NOW = datetime(2026, 1, 1, tzinfo=timezone.utc)


def ids(entries):
    return [e["id"] for e in entries]


def by_score(scores, **extra):
    """Entries whose default score is their base_priority (fresh, no tags)."""
    return [
        {"id": f"e{i}", "base_priority": score, "content": "x", **extra}
        for i, score in enumerate(scores)
    ]


# --- min_score ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("floor", "expected"),
    [
        (None, ["e0", "e1", "e2", "e3"]),
        (-math.inf, ["e0", "e1", "e2", "e3"]),
        (2, ["e0", "e1", "e2"]),  # a score exactly at the floor is taken
        (2.0000001, ["e0", "e1"]),
        (3, ["e0", "e1"]),
        (9, []),
        (math.inf, []),
    ],
)
def test_floor_takes_scores_at_or_above_it(floor, expected):
    store = by_score([4, 3, 2, 1])
    got = retrieve(store, Pool("p", 100, 10, min_score=floor), now=NOW)
    assert ids(got) == expected


def test_minus_infinity_score_is_below_any_finite_floor():
    store = [{"id": "a"}, {"id": "b"}]

    def scorer(entry, context, *, now):
        return -math.inf if entry["id"] == "a" else 0.0

    got = retrieve(store, Pool("p", 100, 5, min_score=-1e300), scorer=scorer, now=NOW)
    assert ids(got) == ["b"]
    unfloored = retrieve(store, Pool("p", 100, 5), scorer=scorer, now=NOW)
    assert ids(unfloored) == ["b", "a"]  # without a floor even -inf is taken


def test_floor_leaves_the_entry_to_the_next_pool():
    store = by_score([1, 9], type="task")
    pools = [
        Pool("strict", 100, 5, ("task",), min_score=5),
        Pool("rest", 100, 5),
    ]
    got = retrieve_pools(store, pools, now=NOW)
    assert {name: ids(chosen) for name, chosen in got.items()} == {
        "strict": ["e1"],
        "rest": ["e0"],
    }


def test_always_scope_ignores_the_floor():
    store = [{"id": "c", "scope": "always", "base_priority": 0}, *by_score([1])]
    got = retrieve(store, Pool("p", 100, 5, min_score=3), now=NOW)
    assert ids(got) == ["c"]


def test_floor_none_is_the_default_and_changes_nothing():
    store = by_score([5, 0, -2, 7])
    plain = retrieve(store, Pool("p", 100, 3), now=NOW)
    explicit = retrieve(store, Pool("p", 100, 3, min_score=None), now=NOW)
    assert ids(plain) == ids(explicit) == ["e3", "e0", "e1"]


@pytest.mark.parametrize(
    ("floor", "error", "message"),
    [
        (True, TypeError, "min_score must be a real number or None, got bool"),
        ("3", TypeError, "min_score must be a real number or None, got str"),
        (math.nan, ValueError, "min_score must not be NaN, got nan"),
    ],
)
def test_bad_floor(floor, error, message):
    with pytest.raises(error, match=f"^{message}$"):
        Pool("p", 1, 1, min_score=floor)


def test_floor_accepts_ints_fractions_and_infinities():
    from fractions import Fraction

    for floor in (3, 2.5, Fraction(1, 3), math.inf, -math.inf):
        assert Pool("p", 1, 1, min_score=floor).min_score == floor


def test_explain_reports_below_floor_with_score_and_floor():
    store = by_score([9, 1], type="task")
    pools = [Pool("strict", 100, 5, ("task",), min_score=5.5)]
    report = explain(store, pools, now=NOW)
    low = report.decisions[1]
    assert (low.outcome, low.pool, low.reason, low.score) == (
        "below_floor",
        "strict",
        "min_score 5.5",
        1.0,
    )
    assert report.pools[0].below_floor == 1 and report.pools[0].left_out == 0
    assert report.warnings == ()  # a floor that excludes is not a misconfiguration
    text = report.render()
    assert "below_floor:min_score 5.5  strict  1.000" in text
    assert "pool strict: tokens 1/100, entries 1/5, left out 0, below floor 1" in text
    assert report.selected() == retrieve_pools(store, pools, now=NOW)


def test_explain_floor_then_taken_by_a_later_pool():
    store = by_score([1], type="task")
    pools = [Pool("strict", 100, 5, min_score=5), Pool("rest", 100, 5)]
    decision = explain(store, pools, now=NOW).decisions[0]
    assert (decision.outcome, decision.pool) == ("selected", "rest")


def test_cli_pools_file_accepts_min_score(tmp_path, capsys):
    store = tmp_path / "s.jsonl"
    store.write_text(
        '{"id": "hi", "content": "a", "base_priority": 9}\n'
        '{"id": "lo", "content": "b", "base_priority": 1}\n'
    )
    pools = tmp_path / "p.json"
    pools.write_text(
        json.dumps([{"name": "p", "max_tokens": 9, "max_entries": 9, "min_score": 5}])
    )
    args = ["retrieve", str(store), "--pools", str(pools), "--now", "2026-01-01"]
    assert main([*args, "--format", "json"]) == 0
    assert [e["id"] for e in json.loads(capsys.readouterr().out)["p"]] == ["hi"]


# --- PoolsplitWarning ----------------------------------------------------------

STORE = [
    {"id": "c1", "type": "correction", "scope": "always", "content": "never"},
    {"id": "c2", "type": "corection", "scope": "always", "content": "typo"},
    {"id": "t1", "type": "task", "content": "do"},
]


def test_warning_names_count_position_id_and_type():
    pools = [Pool("core", 0, 0, ("correction",)), Pool("work", 10, 2, ("task",))]
    with pytest.warns(PoolsplitWarning) as caught:
        got = retrieve_pools(STORE, pools, now=NOW)
    assert len(caught) == 1
    assert str(caught[0].message) == (
        "1 active always-scope entries are in no pool, so they were not loaded: "
        "entries[1] (id='c2') of type 'corection'; add their types to a pool, "
        "or add a pool with types=None"
    )
    assert caught[0].filename == __file__  # points at the caller
    assert ids(got["core"]) == ["c1"]


def test_warning_lists_the_first_three_and_counts_the_rest():
    store = [{"id": i, "type": f"t{i}", "scope": "always"} for i in range(5)]
    with pytest.warns(
        PoolsplitWarning,
        match=r"^5 active .*entries\[2\] \(id=2\) "
        r"of type 't2' and 2 more; ",
    ):
        retrieve_pools(store, [Pool("p", 1, 1, ("x",))], now=NOW)


def test_no_warning_when_every_always_type_is_admitted():
    pools = [Pool("core", 0, 0, ("correction", "corection")), Pool("w", 9, 1)]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        retrieve_pools(STORE, pools, now=NOW)
        retrieve_pools(STORE, [Pool("all", 0, 0)], now=NOW)  # types=None admits all


def test_no_warning_for_inactive_always_entries_or_single_retrieve():
    store = [{"id": "old", "type": "x", "scope": "always", "status": "archived"}]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        retrieve_pools(store, [Pool("p", 1, 1, ("y",))], now=NOW)
        # retrieve() asks for one pool: other types are not missing, only not asked
        retrieve(STORE, Pool("core", 0, 0, ("correction",)), now=NOW)


def test_warning_is_an_error_under_error_filter():
    with warnings.catch_warnings():
        warnings.simplefilter("error", PoolsplitWarning)
        with pytest.raises(PoolsplitWarning):
            retrieve_pools(STORE, [Pool("core", 0, 0, ("correction",))], now=NOW)


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


def test_explain_warns_about_a_pool_whose_types_match_no_entry():
    pools = [Pool("core", 0, 0, ("corrections",)), Pool("work", 9, 1, ("task",))]
    report = explain(STORE, pools, now=NOW)
    assert (
        "pool 'core' admits types ['corrections'], and no entry of the store has "
        "one of them; check their spelling"
    ) in report.warnings
    assert not any("'work' admits" in w for w in report.warnings)


# --- render --------------------------------------------------------------------


def test_render_pools_in_order_with_headers_and_empty_pools_silent():
    results = {
        "core": [{"content": "Never force-push."}],
        "empty": [],
        "work": [{"content": "Ship it"}, {"content": None}, {"content": 42}],
    }
    assert render(results) == (
        "## core\n- Never force-push.\n\n## work\n- Ship it\n-\n- 42\n"
    )
    assert render(results, headers={"work": "Tasks"}).endswith(
        "## Tasks\n- Ship it\n-\n- 42\n"
    )


def test_render_indents_multi_line_content():
    text = render({"p": [{"content": "one\ntwo\r\n\nthree"}, {"content": "next"}]})
    assert text == "## p\n- one\n  two\n\n  three\n- next\n"


def test_render_of_nothing_is_empty():
    assert render({}) == "" == render({"a": [], "b": []})


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


@pytest.mark.parametrize(
    ("results", "headers", "error", "message"),
    [
        ([], None, TypeError, "results must be a Mapping, got list"),
        (
            {"a": [3]},
            None,
            TypeError,
            r"results\['a'\]\[0\] must be a Mapping, got int",
        ),
        (
            {"a": []},
            {"b": "B"},
            ValueError,
            r"headers names pool 'b', which is not in results; expected one of \['a'\]",
        ),
        ({"a": []}, {"a": 1}, TypeError, r"headers\['a'\] must be a str, got int"),
    ],
)
def test_render_errors(results, headers, error, message):
    with pytest.raises(error, match=f"^{message}$"):
        render(results, headers=headers)


# --- validate ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("entry", "field", "message"),
    [
        (
            {"status": "Active"},
            "status",
            "is 'Active', not exactly 'active': the entry is inactive and will "
            "never load",
        ),
        (
            {"status": " active "},
            "status",
            "is ' active ', not exactly 'active': the entry is inactive and will "
            "never load",
        ),
        (
            {"scope": "ALWAYS"},
            "scope",
            "is 'ALWAYS', not exactly 'always': the entry competes for room instead of "
            "loading unconditionally",
        ),
    ],
)
def test_validate_near_miss_status_and_scope_are_errors(entry, field, message):
    problems = validate([{"id": "a", "content": "x", **entry}])
    assert [(p.severity, p.field, p.message) for p in problems] == [
        ("error", field, message)
    ]


@pytest.mark.parametrize(
    ("key", "likely"),
    [
        ("scop", "scope"),
        ("stauts", "status"),
        ("token_cont", "token_count"),
        ("created_at", "created"),
        ("Scope", "scope"),
        ("TAGS", "tags"),
    ],
)
def test_validate_near_miss_keys_warn(key, likely):
    problems = validate([{"id": "a", "content": "x", key: "always"}])
    assert [(p.severity, p.field, p.message) for p in problems] == [
        (
            "warning",
            key,
            f"unknown key {key!r}, probably {likely!r}; poolsplit reads "
            f"only {likely!r}, so this value is ignored",
        )
    ]


@pytest.mark.parametrize("key", ["score", "source", "trust", "expires_at", "user", 3])
def test_validate_other_extra_keys_are_the_users_own(key):
    assert validate([{"id": "a", "content": "x", key: 1}]) == []


# --- validate on the command line -------------------------------------------------


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


# --- pool sizing and --help --------------------------------------------------------


def test_audit_reports_the_single_budget_it_compared():
    store = [{"id": "t", "type": "task", "content": "x"}]
    pools = [Pool("a", 30, 2, ("task",)), Pool("b", 12, 1)]
    result = audit(store, pools, [None], now=NOW)
    assert (result.single_tokens, result.single_entries) == (42, 3)
    assert (
        "single budget: 42 tokens / 3 entries (the pools' caps summed, "
        "always-scope ranked like the rest)\n"
    ) in result.render()


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


# --- What the adversarial review and the newcomer trial found -------------------


def write_pools(tmp_path, pools=None):
    path = tmp_path / "p.json"
    path.write_text(
        json.dumps(pools or [{"name": "all", "max_tokens": 99, "max_entries": 9}])
    )
    return str(path)


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


@pytest.mark.parametrize("falsy", ["", 0, [], {}, False])
def test_validate_a_falsy_superseded_by_retires_nothing(falsy):
    entry = {"id": "a", "content": "x", "superseded_by": falsy}
    assert validate([entry]) == []
    assert retrieve([entry], Pool("p", 9, 1), now=NOW) == [entry]


def test_validate_an_entry_superseded_by_itself_is_lost():
    problems = validate([{"id": "e", "content": "x", "superseded_by": "e"}])
    assert [(p.severity, p.message) for p in problems] == [
        ("error", "is 'e', its own id: this entry never loads, and nothing replaces it")
    ]


def test_audit_warns_once_per_call_at_the_callers_line():
    with pytest.warns(PoolsplitWarning) as caught:
        audit(STORE, [Pool("core", 0, 0, ("correction",))], [None] * 4, now=NOW)
    assert len(caught) == 1
    assert caught[0].filename == __file__


def audit_one_entry(tmp_path, queries_text):
    """Run `poolsplit audit` on a one-entry store; assert it fails (exit 2)."""
    store = tmp_path / "s.jsonl"
    store.write_text('{"id": "a", "content": "x"}\n')
    queries = tmp_path / "q.jsonl"
    queries.write_text(queries_text)
    argv = ["audit", str(store), "--pools", write_pools(tmp_path)]
    assert main([*argv, "--queries", str(queries)]) == 2
    return queries


def test_audit_names_a_bad_context_by_position(tmp_path, capsys):
    with pytest.raises(TypeError, match=r"^contexts\[1\]: context\['tags'\] must be"):
        audit(STORE, [Pool("all", 9, 1)], [{}, {"tags": 5}], now=NOW)
    queries = audit_one_entry(tmp_path, '{"message": "a"}\n\n{"tags": 5}\n')
    assert capsys.readouterr().err == (
        f"poolsplit: error: {queries}:3: contexts[1]: context['tags'] must be a str "
        "or a list of str, got int\n"
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


@pytest.mark.parametrize(
    ("results", "headers", "error", "message"),
    [
        (
            {"a": []},
            [("a", "A")],
            TypeError,
            "headers must be a Mapping or None, got list",
        ),
        (
            {"a": None},
            None,
            TypeError,
            r"results\['a'\] must be a list of entries, got NoneType",
        ),
        (
            {"a": "xy"},
            None,
            TypeError,
            r"results\['a'\] must be a list of entries, got str",
        ),
        (
            {"a": []},
            {"a": "two\nlines"},
            ValueError,
            r"headers\['a'\] must be one non-blank line, got 'two\\nlines'",
        ),
        (
            {"a": []},
            {"a": " "},
            ValueError,
            r"headers\['a'\] must be one non-blank line, got ' '",
        ),
    ],
)
def test_render_rejects_what_would_garble_the_prompt(results, headers, error, message):
    with pytest.raises(error, match=f"^{message}$"):
        render(results, headers=headers)


def test_explain_says_an_empty_types_pool_admits_nothing():
    report = explain(STORE, [Pool("none", 9, 1, ()), Pool("all", 9, 9)], now=NOW)
    assert "pool 'none' has types=(), so it admits nothing" in report.warnings
    assert not any("check their spelling" in w for w in report.warnings)


def test_explain_json_writes_an_infinite_score_as_a_string():
    report = explain([{"id": "a", "base_priority": 1e999}], [Pool("p", 99, 1)], now=NOW)
    decision = report.to_dict()["decisions"][0]
    assert decision["score"] == "inf"
    json.loads(json.dumps(report.to_dict(), allow_nan=False))
