#!/usr/bin/env bash
# Run the test suite on every CPython >= 3.9 that pyenv has installed.
# A missing interpreter is skipped with a notice; any failure fails the run.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pyenv root 2>/dev/null || echo "$HOME/.pyenv")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
ran=0
for minor in 9 10 11 12 13 14; do
  py=$(ls -d "$root"/versions/3."$minor".*/bin/python3."$minor" 2>/dev/null | sort -V | tail -n 1 || true)
  if [ -z "$py" ]; then
    echo "notice: no CPython 3.$minor installed, skipped"
    continue
  fi
  echo "-- $("$py" --version)"
  "$py" -m venv "$work/3.$minor"
  "$work/3.$minor/bin/python" -m pip install -q -e '.[test]'
  "$work/3.$minor/bin/python" -m pytest -q
  ran=$((ran + 1))
done
[ "$ran" -gt 0 ] || { echo "no interpreter ran the suite"; exit 1; }
