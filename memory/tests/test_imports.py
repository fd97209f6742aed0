"""The package's rooms: every import points down and none comes back.

Reads the installed package's modules with ``ast`` (not by importing them, so
an import that only a function runs counts as well: the old store dodged its
circle with the backends by importing them inside ``open_store``). A module is
a node; ``from poolsplit_memory import X`` is an arrow to the package root,
and to ``poolsplit_memory.X`` when X is a module. The rooms, bottom up:
``_types`` (errors, rows, protocols, constants) imports nothing of the
package; the backends import it (and ``_sql``); ``store`` imports them.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = "poolsplit_memory"
SHARED = f"{PACKAGE}._types"
BACKENDS = (f"{PACKAGE}._sql", f"{PACKAGE}._sqlite", f"{PACKAGE}._postgres")


def package_files() -> dict[str, Path]:
    """Module name -> source file, for every module of the installed package."""
    spec = importlib.util.find_spec(PACKAGE)
    assert spec is not None and spec.submodule_search_locations
    folder = Path(next(iter(spec.submodule_search_locations)))
    files = {}
    for path in sorted(folder.glob("*.py")):
        name = PACKAGE if path.stem == "__init__" else f"{PACKAGE}.{path.stem}"
        files[name] = path
    return files


FILES = package_files()


def _targets(node: ast.Import | ast.ImportFrom) -> set[str]:
    """The package's modules one import statement loads (outside ones dropped)."""
    if isinstance(node, ast.Import):
        names = {alias.name for alias in node.names}
    elif node.level:  # relative: the package is flat, so level 1 is the package
        assert node.level == 1, ast.dump(node)
        base = PACKAGE if node.module is None else f"{PACKAGE}.{node.module}"
        names = {base, *(f"{base}.{alias.name}" for alias in node.names)}
    else:
        base = node.module or ""
        names = {base, *(f"{base}.{alias.name}" for alias in node.names)}
    return {name for name in names if name in FILES}


def imports(path: Path, *, top_only: bool = False) -> set[str]:
    """The package's modules this file imports: anywhere in it, or only in its
    module-level statements."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    nodes = tree.body if top_only else ast.walk(tree)
    found: set[str] = set()
    for node in nodes:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found |= _targets(node)
    return found


GRAPH = {name: imports(path) - {name} for name, path in FILES.items()}


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every import circle a depth-first walk meets, each as the path that
    closes it (first module repeated at the end)."""
    found = []
    state: dict[str, str] = {}  # "open" while on the walk's path, then "done"

    def walk(name: str, path: list[str]) -> None:
        state[name] = "open"
        for target in sorted(graph[name]):
            if state.get(target) == "open":
                found.append([*path[path.index(target) :], target])
            elif target not in state:
                walk(target, [*path, target])
        state[name] = "done"

    for name in sorted(graph):
        if name not in state:
            walk(name, [name])
    return found


def test_the_reader_sees_the_imports_a_function_makes():
    """The graph is built from every statement, not only the module's top:
    ``_cli`` imports ``_tokens`` inside ``subcommand`` (loaded by the command
    only)."""
    cli = FILES[f"{PACKAGE}._cli"]
    assert f"{PACKAGE}._tokens" in GRAPH[f"{PACKAGE}._cli"]
    assert f"{PACKAGE}._tokens" not in imports(cli, top_only=True)


def test_circles_finds_a_circle_and_its_path():
    """The walk itself, on a graph with one circle of three and one of two."""
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"e"}, "e": {"d"}, "f": set()}
    assert circles(graph) == [["a", "b", "c", "a"], ["d", "e", "d"]]
    assert circles({"a": {"b"}, "b": set()}) == []


def test_the_package_has_no_import_circle():
    assert circles(GRAPH) == []


def test_no_module_imports_a_sibling_that_imports_it_back():
    both_ways = sorted(
        (name, target)
        for name, targets in GRAPH.items()
        for target in targets
        if name in GRAPH[target]
    )
    assert both_ways == []


def test_the_shared_types_import_nothing_of_the_package():
    assert GRAPH[SHARED] == set()


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_backend_imports_only_the_shared_types_and_the_shared_sql(backend):
    assert GRAPH[backend] <= {SHARED, f"{PACKAGE}._sql"}
    assert SHARED in GRAPH[backend]


def test_the_store_imports_its_backends_and_the_shared_types_at_the_top():
    top = imports(FILES[f"{PACKAGE}.store"], top_only=True)
    assert {SHARED, f"{PACKAGE}._sqlite", f"{PACKAGE}._postgres"} <= top


@pytest.mark.parametrize(
    "name",
    [
        "DEFAULT_BUSY_MS",
        "KEEP_CHANGES",
        "Backend",
        "InvalidInput",
        "ReadTx",
        "Row",
        "Stored",
        "StoreError",
        "StoreUnavailable",
        "WriteTx",
    ],
)
def test_a_shared_name_is_the_same_object_where_it_was_before(name):
    """Moved to ``_types``; ``poolsplit_memory.store.X`` still names it, and
    the package root too for the public ones (the errors)."""
    shared = getattr(importlib.import_module(SHARED), name)
    assert getattr(importlib.import_module(f"{PACKAGE}.store"), name) is shared
    root = importlib.import_module(PACKAGE)
    if name in root.__all__:
        assert getattr(root, name) is shared


def test_importing_the_package_leaves_psycopg_unloaded():
    """The store imports the PostgreSQL backend at its top, and the backend
    imports psycopg only when a PostgreSQL store opens: a SQLite user does not
    pay for the driver's import."""
    code = f"import sys, {PACKAGE}; print('psycopg' in sys.modules)"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "False"


@pytest.mark.parametrize(
    ("module", "name"),
    [
        ("_defaults", "DEFAULT_POOLS"),
        ("_defaults", "pool_owners"),
        ("_validate", "build_entry"),
        ("_validate", "check_entry"),
        ("_rows", "_row"),
        ("_rows", "_parse"),
        ("_digests", "_memory_key"),
        ("_dedupe", "_duplicate"),
        ("_dedupe", "_possible_supersedes"),
        ("_dedupe", "_stale_warnings"),
        ("_loadable", "loadable"),
        ("_snapshot", "_Snapshot"),
        ("_results", "Recall"),
        ("_urls", "parse_url"),
        ("_urls", "is_ephemeral"),
    ],
)
def test_a_name_split_out_of_the_store_is_still_named_by_it(module, name):
    """store.py was split into modules of one job (issue 52); what callers,
    benchmarks and the other modules import from ``poolsplit_memory.store``
    is the same object there, and the package root names the public ones."""
    moved = getattr(importlib.import_module(f"{PACKAGE}.{module}"), name)
    assert getattr(importlib.import_module(f"{PACKAGE}.store"), name) is moved
    root = importlib.import_module(PACKAGE)
    if name in root.__all__:
        assert getattr(root, name) is moved
