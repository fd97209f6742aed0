#!/usr/bin/env bash
# Mutation testing of poolsplit's core with mutmut 3.8.1. Not run by CI: a
# full run takes about half an hour on a 2-core machine.
# See scripts/mutation-equivalents.md for the latest score and the mutants
# set aside as equivalent.
#
# Usage: scripts/mutation.sh [--sample N [--residue K]] [--deselect NODE_ID]...
#                             [--report] [MUTANT_NAME]...
#        MEMORY_VENV=DIR scripts/mutation.sh --memory [MUTANT_ID]...
#
#   --sample N     run only the mutants whose number is a multiple of N, for
#                  N = 1 (all, the default), 2, 5 or 10 (mutmut numbers each
#                  function's mutants 1, 2, 3...; deterministic, no seed)
#   --residue K    with --sample N: the mutants whose number leaves K when
#                  divided by N instead (0 <= K < N; default 0), so that N
#                  runs with K = 0 .. N-1 cover every mutant once and a
#                  reviewer can draw a sample independent of the last one
#   --deselect ID  leave out a test (pytest's --deselect), for a suite that is
#                  red on someone's work in progress; say so with the score
#   --report       only print the summary of the last run
#   MUTANT_NAME    rerun only these mutants (as the summary names them, e.g.
#                  poolsplit.x__read_iso__mutmut_4, or a glob such as
#                  'poolsplit.x_base_score__mutmut_*'), to check a new test
#   MUTATION_CHILDREN=N  mutmut's worker processes (--max-children; default
#                  one per core): 1 leaves a core to others' benchmarks
#   --memory       poolsplit-memory instead: the hand-written mutants of
#                  scripts/memory-mutants.txt, of its HTTP server (issue 36:
#                  _http.py, _tokens.py, _jsonrpc.py and mcp_server.py) and
#                  of its lexical ranking and recall index (issue 35:
#                  _ranking.py and _index.py), each
#                  applied to the module installed in MEMORY_VENV (a venv
#                  scripts/test-memory.sh made; the wheels of this tree are
#                  built and installed into it first) and tested by its
#                  pytest -k selection of memory/tests, run from the wheels
#                  like scripts/test-memory.sh; the module is restored after
#                  each. mutmut cannot reach these: the tests import the
#                  installed wheels (and drive the installed console script
#                  in subprocesses). Survivors not
#                  listed under "## Memory: equivalent mutants" in
#                  scripts/mutation-equivalents.md are reported (exit 1).
#                  Starts a throwaway PostgreSQL unless POOLSPLIT_PG_DSN is set.
#
# What it does:
# 1. Creates .venv-mutmut (git-ignored) with mutmut==3.8.1, pytest and
#    hypothesis, unless it exists ($MUTATION_VENV overrides the path).
# 2. Copies the work tree (tracked and untracked files, not ignored ones) to
#    build/mutation/ ($MUTATION_DIR overrides), so that mutmut's mutants/
#    folder stays out of the repository and edits made during the run do
#    not reach it.
# 3. Sets HYPOTHESIS_PROFILE=quick (20 examples a property, the profile of
#    tests/conftest.py; a property reached by many mutants is run once per
#    mutant), then runs `mutmut run` over the core functions only (CORE below): the entry
#    readers, the defaults, the engine, retrieve_pools, retrieve, render and
#    Pool; not explain, validate, audit, the demo or the command line.
#    mutmut mutates the whole file (it has no per-function option short of
#    `# pragma: no mutate` in the source) but tests only the mutants whose
#    names match the patterns given to `mutmut run`. The tests it runs are
#    [tool.mutmut] pytest_add_cli_args_test_selection in pyproject.toml,
#    with the quick hypothesis profile and a fixed hypothesis seed.
# 4. Prints (killed + timeouts) / non-equivalent for the core, and every
#    mutant neither killed nor listed in scripts/mutation-equivalents.md
#    (under "## Equivalent mutants", or for a timeout that never returns,
#    under "## Caught by a timeout"); exits 1 if there is one.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
venv=${MUTATION_VENV:-$root/.venv-mutmut}
work=${MUTATION_DIR:-$root/build/mutation}
sample=1
residue=0
report_only=0
memory=0
deselect=()
names=()
while (($#)); do
    case $1 in
    --sample) sample=$2; shift 2 ;;
    --residue) residue=$2; shift 2 ;;
    --deselect) deselect+=("$2"); shift 2 ;;
    --report) report_only=1; shift ;;
    --memory) memory=1; shift ;;
    -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d'; exit 0 ;;
    -*) echo "mutation.sh: unknown option $1" >&2; exit 2 ;;
    *) names+=("$1"); shift ;;
    esac
done

if ! [[ $residue =~ ^[0-9]+$ ]] || ((residue >= sample)); then
    echo "mutation.sh: --residue takes 0 to $((sample - 1)) with --sample $sample" >&2
    exit 2
fi

# The core, as mutmut names its functions (x_NAME) and methods (xǁCLASSǁNAME).
CORE=(
    # Pool and its checks
    "xǁPoolǁ__post_init__" x__check_cap x__check_types x__is_one_line
    x__check_floor
    # the entry-field readers and the one error builder
    x__label x__entry_error x__content x_entry_type x_is_always x__tags
    x__to_float x__priority x__token_count x__read_iso x_parse_created
    x__created_key x__id_key x_significant_words
    # the one fast-path decision (issue 52: the engines of the memory package
    # call it too)
    x_entry_features
    # the caches of parsed timestamps and content words, bounded in bytes
    "xǁ_Cacheǁ*" x__instant x__word_tuple x__new_turn x_clear_caches
    # the defaults, and the one base-score rule (published: base_score)
    x_default_is_active x_default_token_counter x_entry_cost x__resolve_now
    x__check_context x__query x_base_score x__base_score x__score_from
    x_default_scorer
    # the engine
    x__check_pools x__check_call x__with_context x__as_list x__not_a_mapping
    x__scorer_score x__type_key x__scan "xǁ_Rankingǁ*"
    # the scan's helpers (issue 52: _scan split by what it decides)
    x__accepted_types x__has_words x__repeat_finder x__always_filed
    x__unadmitted x__check_mapping
    x__take_always x__take_ranked x__select
    # the public retrieval functions
    x__unadmitted_warning x_retrieve_pools x_retrieve x__entry_lines x_render
    # the misconfiguration warnings (issue 21)
    x__near_always_warning x__context_warnings
    x__warn_misconfigured
)

memory_mutants() {
    mvenv=${MEMORY_VENV:?--memory needs MEMORY_VENV (a venv scripts/test-memory.sh made)}
    pg_dir=""
    dist=$(mktemp -d /tmp/poolsplit-memory-mutants.XXXXXX)
    trap 'rm -rf "$dist"; if [[ -n $pg_dir ]]; then bash "$root/scripts/start-postgres.sh" stop "$pg_dir" >/dev/null 2>&1 || true; fi' EXIT
    "$mvenv/bin/python" -m build -q --wheel --outdir "$dist" "$root" >/dev/null
    "$mvenv/bin/python" -m build -q --wheel --outdir "$dist" "$root/memory" >/dev/null
    "$mvenv/bin/python" -m pip install -q --force-reinstall --no-deps "$dist"/*.whl
    if [[ -z ${POOLSPLIT_PG_DSN:-} ]]; then
        eval "$(bash "$root/scripts/start-postgres.sh")"
        pg_dir=$POOLSPLIT_PG_DIR
    fi
    export POOLSPLIT_PG_DSN POOLSPLIT_REQUIRE_PG=1 PYTHONDONTWRITEBYTECODE=1
    mkdir -p "$dist/run"
    (cd "$dist/run" && "$mvenv/bin/python" - "$root" "${names[@]}" <<'PY')
import re
import shutil
import subprocess
import sys
from pathlib import Path

import poolsplit_memory

root, chosen = Path(sys.argv[1]), set(sys.argv[2:])
package = Path(poolsplit_memory.__file__).parent
mutants = []
for block in (root / "scripts/memory-mutants.txt").read_text().split("\n== ")[1:]:
    lines = block.splitlines()
    ident, fields = lines[0].strip(), {}
    for line in lines[1:]:
        if ": " in line and line[0] not in "-+":
            key, _, value = line.partition(": ")
            fields[key] = value
    old = "\n".join(x[1:] for x in lines if x.startswith("-")) + "\n"
    new = "\n".join(x[1:] for x in lines if x.startswith("+")) + "\n"
    mutants.append((ident, fields["module"], fields["tests"], old, new))
listing = (root / "scripts/mutation-equivalents.md").read_text()
section = listing.partition("## Memory: equivalent mutants")[2].partition("\n## ")[0]
equivalent = set(re.findall(r"`memory:([\w-]+)`", section))


def pytest(selection):
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider",
         "-c", str(root / "memory/pyproject.toml"), "--rootdir", str(root / "memory"),
         str(root / "memory/tests"), "-k", selection],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=1800,
    )


selections = sorted({m[2] for m in mutants if not chosen or m[0] in chosen})
baseline = pytest(" or ".join(f"({s})" for s in selections))
if baseline.returncode != 0:
    print(baseline.stdout.decode("utf-8", "replace")[-4000:])
    sys.exit("mutation.sh --memory: the selected tests fail unmutated")
survivors, killed, ran = [], 0, 0
for ident, module, selection, old, new in mutants:
    if chosen and ident not in chosen:
        continue
    path = package / module
    source = path.read_text()
    if source.count(old) != 1:
        sys.exit(f"mutation.sh --memory: {ident}: its text occurs "
                 f"{source.count(old)} times in {module}, not once")
    saved = path.with_suffix(".unmutated")
    shutil.copy2(path, saved)
    try:
        path.write_text(source.replace(old, new))
        status = pytest(selection).returncode
    finally:
        shutil.move(saved, path)
    ran += 1
    outcome = "killed" if status != 0 else "survived"
    killed += status != 0
    if status == 0:
        survivors.append(ident)
    print(f"{ident}: {outcome}", flush=True)
listed = [s for s in survivors if s in equivalent]
print(f"memory mutants: {ran}, killed {killed}, survived {len(survivors)} "
      f"({len(listed)} listed as equivalent); score {killed} / {ran - len(listed)}")
for ident in sorted(set(survivors) - equivalent):
    print(f"not killed, not listed: memory:{ident}")
sys.exit(1 if set(survivors) - equivalent else 0)
PY
}

if ((memory)); then
    memory_mutants
    exit
fi

if [[ ! -x $venv/bin/mutmut ]]; then
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet mutmut==3.8.1 'pytest>=7' 'hypothesis>=6.80'
fi

summary() {
    cd "$work"
    "$venv/bin/python" - "$root/scripts/mutation-equivalents.md" "$sample" "$residue" "${CORE[@]}" <<'PY'
import fnmatch
import json
import re
import sys

from mutmut.stats import status_by_exit_code

listing, sample, residue = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
core = sys.argv[4:]
with open(listing, encoding="utf-8") as f:
    text = f.read()
# Only that section: the ones after it name mutants that were killed.
listed = text.partition("## Equivalent mutants")[2].partition("\n## ")[0]
equivalent = set(re.findall(r"poolsplit\.x\S+?__mutmut_\d+", listed))
# Timeouts a reader checked: the call never returns (an endless loop), so the
# mutant is caught; any other timeout may only be slower, and is reported.
hanging = text.partition("## Caught by a timeout")[2].partition("\n## ")[0]
hangs = set(re.findall(r"poolsplit\.x\S+?__mutmut_\d+", hanging))
# Survivors killed, by hand, by a test mutmut must deselect (a warning's
# stacklevel points into its trampoline): caught, and counted so.
deselected = text.partition("## Killed outside mutmut")[2].partition("\n## ")[0]
outside = set(re.findall(r"poolsplit\.x\S+?__mutmut_\d+", deselected))
with open("mutants/poolsplit.py.meta", encoding="utf-8") as f:
    codes = json.load(f)["exit_code_by_key"]


def in_core(key):
    function, _, number = key.partition("__mutmut_")
    chosen = int(number) % sample == residue
    return chosen and any(fnmatch.fnmatchcase(function, f"poolsplit.{c}") for c in core)


statuses = {key: status_by_exit_code[code] for key, code in codes.items() if in_core(key)}
unchecked = [key for key, status in statuses.items() if status == "not checked"]
for key in unchecked:
    del statuses[key]
if unchecked:
    print(f"not checked (not in this run): {len(unchecked)}")
counts = {}
for status in statuses.values():
    counts[status] = counts.get(status, 0) + 1
survived = sorted(
    k
    for k, s in statuses.items()
    if s != "killed"
    and k not in equivalent | outside
    and not (s == "timeout" and k in hangs)
)
stale = sorted(k for k in equivalent | outside if statuses.get(k) == "killed")
caught = sum(1 for k, s in statuses.items() if s in ("killed", "timeout"))
caught += sum(1 for k, s in statuses.items() if s == "survived" and k in outside)
considered = len(statuses) - len(equivalent & set(statuses))
print(f"core mutants: {len(statuses)} ({', '.join(f'{v} {k}' for k, v in sorted(counts.items()))})")
print(f"listed equivalent: {len(equivalent & set(statuses))}")
print(f"listed as hanging, timed out: {sum(1 for k in hangs if statuses.get(k) == 'timeout')}")
print(f"listed as killed outside mutmut: {sum(1 for k in outside if statuses.get(k) == 'survived')}")
print(f"score: {caught} / {considered} = {100 * caught / max(considered, 1):.1f}%")
for key in survived:
    print(f"not killed, not listed: {key} ({statuses[key]})")
for key in stale:
    print(f"listed as equivalent but killed or gone: {key}")
sys.exit(1 if survived else 0)
PY
}

if ((report_only)); then
    summary
    exit
fi

# Every oracle test file must be in the selection (a file that is missing
# from it would silently not count).
for test in "$root"/tests/test_oracle*.py; do
    [[ -e $test ]] || continue
    name=tests/$(basename "$test")
    grep -q "\"$name\"" "$root/pyproject.toml" ||
        { echo "mutation.sh: add $name to [tool.mutmut] in pyproject.toml" >&2; exit 2; }
done

# CORE must name every runtime function of poolsplit.py (above its banner
# "Tooling of the runtime": explain, validate and the file readers, then the
# tools, stay out by design), but the hooks' Protocols and the exceptions'
# __init__s, and nothing that is gone: base_score, published by rule36,
# went unmutated while the list named a function removed before it.
"$venv/bin/python" - "$root/poolsplit.py" "${CORE[@]}" <<'PY'
import ast
import fnmatch
import sys

path, core = sys.argv[1], sys.argv[2:]
with open(path, encoding="utf-8") as f:
    source = f.read()
end = source[: source.index("\n# Tooling of the runtime")].count("\n") + 1
outside = ("Protocol", "Exception", "Error", "Warning")
names = []
for node in ast.parse(source).body:
    if node.lineno > end:
        break
    if isinstance(node, ast.FunctionDef):
        names.append(f"x_{node.name}")
    elif isinstance(node, ast.ClassDef):
        bases = [ast.unparse(base) for base in node.bases]
        if not any(base.endswith(outside) for base in bases):
            names += [f"xǁ{node.name}ǁ{f.name}" for f in node.body
                      if isinstance(f, ast.FunctionDef)]
missing = [n for n in names if not any(fnmatch.fnmatchcase(n, c) for c in core)]
stale = [c for c in core if not any(fnmatch.fnmatchcase(n, c) for n in names)]
for name in missing:
    print(f"mutation.sh: add {name} to CORE (a runtime function of poolsplit.py)")
for pattern in stale:
    print(f"mutation.sh: CORE names {pattern}, which poolsplit.py no longer defines")
sys.exit(2 if missing or stale else 0)
PY

mkdir -p "$work"
# A fresh copy of the sources; mutmut's results (mutants/) are kept, and
# mutmut regenerates the mutants of any function whose source changed.
(cd "$root" && git ls-files -z -co --exclude-standard) |
    (cd "$root" && tar --null -T - -cf -) | (cd "$work" && tar -xf -)
if ((${#deselect[@]})); then
    "$venv/bin/python" - "$work/pyproject.toml" "${deselect[@]}" <<'PY'
import json
import sys

path, nodes = sys.argv[1], sys.argv[2:]
text = open(path, encoding="utf-8").read()
line = "pytest_add_cli_args = ["
assert text.count(line) == 1, "pyproject.toml: [tool.mutmut] pytest_add_cli_args"
extra = "".join(f"{json.dumps('--deselect=' + node)}, " for node in nodes)
open(path, "w", encoding="utf-8").write(text.replace(line, line + extra))
PY
fi

# The last digit of a mutant's number decides its residue for N = 2, 5, 10.
case $sample in
1) last="" ;;
2) last=$( ((residue)) && echo "[13579]" || echo "[02468]") ;;
5) last="[$residue$((residue + 5))]" ;;
10) last="$residue" ;;
*) echo "mutation.sh: --sample takes 1, 2, 5 or 10" >&2; exit 2 ;;
esac
patterns=("${names[@]}")
if ((${#names[@]} == 0)); then
    for function in "${CORE[@]}"; do
        patterns+=("poolsplit.${function}__mutmut_*$last")
    done
fi

cd "$work"
export HYPOTHESIS_PROFILE=quick
start=$(date +%s)
status=0
"$venv/bin/mutmut" run ${MUTATION_CHILDREN:+--max-children "$MUTATION_CHILDREN"} \
    "${patterns[@]}" >mutmut.log 2>&1 || status=$?
tr '\r' '\n' <mutmut.log | grep -v '^ *$' | tail -n 5
if ((status)); then
    echo "mutation.sh: mutmut failed ($status); see $work/mutmut.log" >&2
    exit "$status"
fi
echo "mutmut ran $(($(date +%s) - start)) s (commit $(git -C "$root" rev-parse --short HEAD))"
summary
