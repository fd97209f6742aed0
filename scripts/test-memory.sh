#!/usr/bin/env bash
# Test poolsplit-memory as a user gets it: from built wheels, in a fresh venv,
# with the working directory outside the checkout.
#
#   bash scripts/test-memory.sh                  # every memory test
#   bash scripts/test-memory.sh -k conformance   # extra args go to pytest (the newest-llama-index rerun at the end ignores them)
#
# Builds the core wheel (the repository root) and the memory wheel (memory/),
# installs both with every extra into a new venv (python3.11), starts a
# throwaway PostgreSQL (scripts/start-postgres.sh) unless POOLSPLIT_PG_DSN is
# set already, and runs pytest over memory/tests with memory/pyproject.toml's
# settings. POOLSPLIT_REQUIRE_PG=1 turns a missing PostgreSQL into a failure,
# never a skip. MEMORY_VENV=DIR reuses (or creates) that venv, reinstalling the
# two wheels, for quick reruns. The tests run in MEMORY_TEST_WORKERS
# pytest-xdist workers (1 unless set; -n 0 after the script runs them in the
# main process), with their temporary files on /dev/shm where it is writable.
set -euo pipefail
cd "$(dirname "$0")/.."
export PYTHONDONTWRITEBYTECODE=1 PIP_DISABLE_PIP_VERSION_CHECK=1
root=$(pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/poolsplit-memory-test.XXXXXX")
pg_dir=""
cleanup() {
    if [ -n "$pg_dir" ]; then
        bash "$root/scripts/start-postgres.sh" stop "$pg_dir" >/dev/null 2>&1 || true
    fi
    rm -rf "$work" "${tests_tmp:-}"
}
trap cleanup EXIT

python=${PYTHON:-python3.11}
venv=${MEMORY_VENV:-$work/venv}

echo "== build the core and memory wheels"
if [ ! -x "$venv/bin/python" ]; then
    "$python" -m venv "$venv"
    "$venv/bin/python" -m pip install -q --upgrade pip
    "$venv/bin/python" -m pip install -q build
fi
"$venv/bin/python" -m build -q --wheel --outdir "$work/dist" "$root" >/dev/null
"$venv/bin/python" -m build -q --wheel --outdir "$work/dist" "$root/memory" >/dev/null
core=$(ls "$work"/dist/poolsplit-*.whl)
memory=$(ls "$work"/dist/poolsplit_memory-*.whl)
echo "built: $(basename "$core") $(basename "$memory")"

echo "== install them with every extra into $venv"
"$venv/bin/python" -m pip install -q --force-reinstall --no-deps "$core" "$memory"
"$venv/bin/python" -m pip install -q "$core" "$memory[mcp,postgres,langgraph,llamaindex,semantic,test]"

if [ -z "${POOLSPLIT_PG_DSN:-}" ]; then
    echo "== start PostgreSQL"
    pg_env=$(bash scripts/start-postgres.sh)
    eval "$pg_env"
    pg_dir=$POOLSPLIT_PG_DIR
fi
export POOLSPLIT_PG_DSN POOLSPLIT_PG_DIR="${POOLSPLIT_PG_DIR:-}"
export POOLSPLIT_REQUIRE_PG=1 POOLSPLIT_REQUIRE_SEMANTIC=1

# The tests' temporary files (their SQLite databases, the servers' folders) in
# memory where the machine has /dev/shm: the store commits with synchronous=FULL,
# and an fsync to this machine's disk took 3.5 ms a commit against 0.05 ms on
# tmpfs (the SQLite half of test_conformance and test_store_sqlite: 50 s against
# 20 s). No test cuts the power, so what they check is the same on either.
tests_tmp=""
if [ -d /dev/shm ] && [ -w /dev/shm ]; then
    tests_tmp=$(mktemp -d /dev/shm/poolsplit-memory-tests.XXXXXX)
    # Readable by all, as /tmp is: test_replication's servers run as the user
    # "postgres" in a folder of their own made here (mktemp -d makes it 0700).
    chmod 755 "$tests_tmp"
fi
# One xdist worker unless MEMORY_TEST_WORKERS says more: in CI the core lane
# runs beside this one on the machine's 2 cores, and a second worker took the
# memory tests from 965 to 869 s but the whole run from 1,289 to 1,453 s. The
# tests that restart the shared PostgreSQL (marked restarts_postgres:
# test_store_faults, test_mcp) would cut the connections of whatever another
# worker runs on it (CI saw AdminShutdown), so they run after the rest, in
# this process alone, and more workers are safe for local reruns.
# --dist loadgroup keeps each xdist_group (test_replication's primary and
# standby) in one worker.
echo "== memory tests, from the installed wheels, outside the checkout"
mkdir -p "$work/run"
run_tests() {
    (cd "$work/run" && TMPDIR="${tests_tmp:-${TMPDIR:-/tmp}}" "$venv/bin/python" -m pytest \
        -q -p no:cacheprovider -c "$root/memory/pyproject.toml" --rootdir "$root/memory" \
        "$root/memory/tests" "$@")
}
status=0
run_tests -n "${MEMORY_TEST_WORKERS:-1}" --dist loadgroup -m "not restarts_postgres" "$@" ||
    status=$?
echo "== the tests that restart PostgreSQL, alone"
run_tests -n 0 -m restarts_postgres "$@" || {
    rc=$?
    # 5: none collected (a -k that names none of them)
    if [ "$rc" -ne 5 ]; then status=$rc; fi
}
[ "$status" -eq 0 ] || exit "$status"

# --- adapters: the newest llama-index-core (this section: the adapters helper) --
# Memory's truncation order has changed between llama-index-core versions
# (run-llama/llama_index#23090), and the llamaindex extra pins a range. So
# the block's tests run again in the same venv on the newest llama-index-core
# the package index serves, and a probe prints which end that version
# truncates first (two static blocks, priority 1 and 2, room for one).
echo "== the LlamaIndex block on the newest llama-index-core"
"$venv/bin/python" -m pip install -q --upgrade llama-index-core
(cd "$work/run" && "$venv/bin/python" - <<'PROBE'
import asyncio

from llama_index.core import __version__
from llama_index.core.memory import Memory, StaticMemoryBlock
from sqlalchemy.ext.asyncio import create_async_engine


async def kept() -> list[int]:
    engine = create_async_engine("sqlite+aiosqlite:///:memory:")
    blocks = [
        StaticMemoryBlock(name=f"p{p}", static_content=f"p{p}x " * 20, priority=p)
        for p in (1, 2)
    ]
    memory = Memory.from_defaults(
        session_id="probe",
        token_limit=30,
        memory_blocks=blocks,
        tokenizer_fn=str.split,
        async_engine=engine,
    )
    try:
        text = " ".join(str(m.content) for m in await memory.aget())
    finally:
        await engine.dispose()
    return [p for p in (1, 2) if f"p{p}x" in text]


left = asyncio.run(kept())
first = {(2,): "priority=1 first (opposite of the documented meaning)",
         (1,): "priority=2 first (the documented meaning)"}.get(tuple(left))
print(f"llama-index-core {__version__}: Memory truncates "
      f"{first or f'unexpectedly (blocks kept: {left})'}")
PROBE
)
(cd "$work/run" && "$venv/bin/python" -m pytest -q -p no:cacheprovider \
    -c "$root/memory/pyproject.toml" --rootdir "$root/memory" \
    "$root/memory/tests/test_llamaindex.py")
