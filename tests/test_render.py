"""render(): the prompt text of a retrieve_pools result."""

import json
from datetime import datetime, timezone

import pytest

from poolsplit import Pool, main, render, retrieve_pools

# --- render --------------------------------------------------------------------


NOW = datetime(2026, 1, 1, tzinfo=timezone.utc)


STORE = [
    {"id": "c1", "type": "correction", "scope": "always", "content": "never"},
    {"id": "c2", "type": "corection", "scope": "always", "content": "typo"},
    {"id": "t1", "type": "task", "content": "do"},
]


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
