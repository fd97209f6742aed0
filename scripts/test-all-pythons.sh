#!/usr/bin/env bash
# Run the test suite on every CPython >= 3.9 that pyenv has installed, two at
# a time (the machines have 2 cores). A missing interpreter is skipped with a
# notice; any failure fails the run. SKIP_PYTHON=3.11 skips that version (CI
# has just run the suite on it, with coverage). Hypothesis uses its "quick"
# profile here unless HYPOTHESIS_PROFILE says otherwise.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pyenv root 2>/dev/null || echo "$HOME/.pyenv")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
run_one() {  # minor, interpreter: install the test extra and run the suite
  "$2" -m venv "$work/3.$1" &&
    "$work/3.$1/bin/python" -m pip install -q -e '.[test]' &&
    HYPOTHESIS_PROFILE=${HYPOTHESIS_PROFILE:-quick} "$work/3.$1/bin/python" -m pytest -q -p no:cacheprovider
}
versions=()
for minor in 9 10 11 12 13 14; do
  py=$(ls -d "$root"/versions/3."$minor".*/bin/python3."$minor" 2>/dev/null | sort -V | tail -n 1 || true)
  if [ -z "$py" ]; then
    echo "notice: no CPython 3.$minor installed, skipped"
  elif [ "3.$minor" = "${SKIP_PYTHON:-}" ]; then
    echo "notice: CPython 3.$minor skipped (SKIP_PYTHON)"
  else
    versions+=("$minor:$py")
  fi
done
[ "${#versions[@]}" -gt 0 ] || { echo "no interpreter ran the suite"; exit 1; }
failed=0
for ((i = 0; i < ${#versions[@]}; i += 2)); do
  pids=()
  for pair in "${versions[@]:i:2}"; do
    minor=${pair%%:*}
    py=${pair#*:}
    (run_one "$minor" "$py" >"$work/log.3.$minor" 2>&1) &
    pids+=("$!:$minor:$py")
  done
  for entry in "${pids[@]}"; do
    pid=${entry%%:*}
    rest=${entry#*:}
    minor=${rest%%:*}
    status=0
    wait "$pid" || status=$?
    echo "-- $("${rest#*:}" --version): exit $status"
    grep -v '^WARNING: Location' "$work/log.3.$minor" | tail -n 3
    [ "$status" -eq 0 ] || failed=1
  done
done
exit "$failed"
