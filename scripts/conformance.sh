#!/usr/bin/env bash
# The official MCP conformance suite's server scenarios against the installed
# `poolsplit-mcp --http` on loopback, with scripts/conformance-expected-failures.yml.
#
#   bash scripts/conformance.sh            # builds the wheels into a fresh venv
#   MEMORY_VENV=DIR bash scripts/conformance.sh   # reuses (or creates) that venv
#
# Node 22 (Node 20 crashes on fs.globSync) and the suite come from the npm
# registry as packages, pinned, into a temporary prefix. Exit status: the
# suite's (0 when only the listed scenarios fail and none of them passes).
set -euo pipefail
cd "$(dirname "$0")/.."
export PYTHONDONTWRITEBYTECODE=1 PIP_DISABLE_PIP_VERSION_CHECK=1
NODE_VERSION=22.23.3
SUITE_VERSION=0.1.16
root=$(pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/poolsplit-conformance.XXXXXX")
server_pid=""
cleanup() {
    if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi
    rm -rf "$work"
}
trap cleanup EXIT

echo "== Node $NODE_VERSION and @modelcontextprotocol/conformance@$SUITE_VERSION"
npm install -q --prefix "$work/npm" --no-audit --no-fund \
    "node@$NODE_VERSION" "@modelcontextprotocol/conformance@$SUITE_VERSION" >/dev/null
export PATH="$work/npm/node_modules/.bin:$PATH"
echo "node $(node --version)"

echo "== poolsplit-memory[mcp] from the built wheels"
venv=${MEMORY_VENV:-$work/venv}
if [ ! -x "$venv/bin/python" ]; then
    python3.11 -m venv "$venv"
    "$venv/bin/python" -m pip install -q --upgrade pip build
fi
"$venv/bin/python" -m build -q --wheel --outdir "$work/dist" "$root" >/dev/null
"$venv/bin/python" -m build -q --wheel --outdir "$work/dist" "$root/memory" >/dev/null
core=$(ls "$work"/dist/poolsplit-*.whl)
memory=$(ls "$work"/dist/poolsplit_memory-*.whl)
"$venv/bin/python" -m pip install -q --force-reinstall --no-deps "$core" "$memory"
"$venv/bin/python" -m pip install -q "$core" "$memory[mcp]"

echo "== poolsplit-mcp --http on loopback"
mkdir -p "$work/run"
(cd "$work/run" && exec "$venv/bin/poolsplit-mcp" --http 127.0.0.1:0 --db "$work/run/memory.db" \
    2>"$work/server.err") &
server_pid=$!
url=""
for _ in $(seq 1 120); do  # at most 60 s for the server to bind
    url=$(grep -o 'http://127\.0\.0\.1:[0-9]*/mcp' "$work/server.err" | head -n 1 || true)
    if [ -n "$url" ]; then break; fi
    if ! kill -0 "$server_pid" 2>/dev/null; then cat "$work/server.err" >&2; exit 1; fi
    sleep 0.5
done
[ -n "$url" ] || { echo "the server did not start" >&2; cat "$work/server.err" >&2; exit 1; }
base=${url%/mcp}
for _ in $(seq 1 60); do
    if "$venv/bin/python" -c "import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=5)" "$base/healthz" 2>/dev/null; then break; fi
    sleep 0.5
done
echo "serving $url"

echo "== conformance server scenarios"
status=0
(cd "$work" && conformance server --url "$url" \
    --expected-failures "$root/scripts/conformance-expected-failures.yml" \
    -o "$work/results") > "$work/suite.log" 2>&1 || status=$?
sed -n '/=== SUMMARY ===/,$p' "$work/suite.log"
if [ "$status" != 0 ]; then
    echo "conformance: exit $status; the whole log:" >&2
    cat "$work/suite.log" >&2
fi
exit "$status"
