"""The cut line: poolsplit.py is the runtime, then ``# ---- tools ----``, then
audit, the demo and the command line, built on the runtime's public names.

Someone who vendors the runtime deletes everything below the line; these
tests cut the file there and prove that what is left works on its own.
"""

import ast
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import poolsplit

ROOT = Path(__file__).resolve().parent.parent
CUT = "# ---- tools ----"
# The tests of the runtime: none of them imports audit, the demo or main.
RUNTIME_TESTS = [
    "test_pool.py",
    "test_retrieve.py",
    "test_scorer.py",
    "test_cases.py",
    "test_oracle_cases.py",
    "test_fast_path.py",
    "test_explain.py",
    "test_validate.py",
    "test_render.py",
    "test_properties.py",
    "test_stateful.py",
    "test_concurrency.py",
    "test_caches.py",
]
TOOLS = {"audit", "Audit", "TypeAudit", "DEMO_NOW", "demo_pools", "demo_store", "main"}


def halves():
    lines = (ROOT / "poolsplit.py").read_text().splitlines(keepends=True)
    assert [line.rstrip("\n") for line in lines].count(CUT) == 1
    at = next(i for i, line in enumerate(lines) if line.rstrip("\n") == CUT)
    return "".join(lines[:at]), "".join(lines[at:])


def bound_at_module_level(tree):
    """Names a module binds by def, class or assignment (not by import)."""
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(t.id for t in targets if isinstance(t, ast.Name))
    return names


def test_the_tools_use_only_public_names_of_the_runtime():
    runtime, tools = halves()
    defined = bound_at_module_level(ast.parse(runtime))
    used = {
        node.id
        for node in ast.walk(ast.parse(tools))
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)
    }
    dunder = {name for name in used if name.startswith("__")}
    runtime_all = set(poolsplit.__all__) - TOOLS
    private = sorted((used & defined) - runtime_all - dunder)
    assert private == []
    # the check sees what it should: the tools do use runtime names
    assert {"retrieve_pools", "render", "load_pools", "Pool"} <= used & defined


def test_the_check_catches_a_private_name(tmp_path):
    runtime = "def _hidden(): ...\ndef shown(): ...\n"
    tools = "shown()\n_hidden()\n"
    defined = bound_at_module_level(ast.parse(runtime))
    used = {n.id for n in ast.walk(ast.parse(tools)) if isinstance(n, ast.Name)}
    assert sorted((used & defined) - {"shown"}) == ["_hidden"]


def test_the_runtime_lists_only_its_own_names_and_the_tools_add_theirs():
    runtime, tools = halves()
    runtime_all = set(poolsplit.__all__) - TOOLS
    assert runtime_all <= bound_at_module_level(ast.parse(runtime))
    assert TOOLS - {"main"} <= set(poolsplit.__all__)
    assert "main" not in poolsplit.__all__  # the command line stays out
    assert TOOLS - {"main"} <= bound_at_module_level(ast.parse(tools))


def test_the_runtime_alone_imports_and_passes_the_runtime_tests(tmp_path):
    runtime, _ = halves()
    (tmp_path / "poolsplit.py").write_text(runtime)
    runner = textwrap.dedent(
        f"""
        import sys
        sys.path.insert(0, {str(tmp_path)!r})
        import poolsplit
        assert poolsplit.__file__ == {str(tmp_path / "poolsplit.py")!r}
        assert not hasattr(poolsplit, "main") and not hasattr(poolsplit, "audit")
        from poolsplit import *  # every name of the runtime's __all__ exists
        import pytest
        sys.exit(pytest.main(sys.argv[1:]))
        """
    )
    tests = [str(ROOT / "tests" / name) for name in RUNTIME_TESTS]
    done = subprocess.run(
        [sys.executable, "-c", runner, "-q", "-p", "no:cacheprovider"]
        + ["-o", "addopts=", "--rootdir", str(ROOT), "-W", "error"]
        + ["--doctest-modules", str(tmp_path / "poolsplit.py"), *tests],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
        # the properties already ran on the whole file: a quick pass suffices
        env={
            **os.environ,
            "PYTHONDONTWRITEBYTECODE": "1",
            "HYPOTHESIS_PROFILE": "quick",
        },
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert " passed" in done.stdout and " failed" not in done.stdout
