#!/usr/bin/env bash
# pandas and DuckDB read a store's columns (runs.columns/, docs/store.md) as a user does:
# margin runs an experiment from a scratch folder (a relative path, the default store, no
# MARGIN_* variable), twice (the second run's trials become a part of their own), and
# tests/interop/columns.py reads the store with pandas and DuckDB and checks every trial,
# metric value and secondary metric against the trial log, and DuckDB's cell means.
#
# pandas, pyarrow and DuckDB come from pip into a virtual environment of this check's own,
# INTEROP_VENV (default ~/.cache/margin/interop-venv), made on the first run: that needs
# python3 with its venv module (Debian: python3-venv) and pip's usual package index.
#
# usage: tests/interop/run.sh path/to/margin
set -euo pipefail
margin=$(realpath "${1:?usage: tests/interop/run.sh path/to/margin}")
here=$(cd "$(dirname "$0")" && pwd)
venv=${INTEROP_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/margin/interop-venv}
if ! "$venv/bin/python" -c 'import pandas, pyarrow, duckdb' 2> /dev/null; then
    echo "installing pandas, pyarrow and duckdb into $venv"
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet pandas pyarrow duckdb
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
for v in $(compgen -e | grep '^MARGIN_' || true); do unset "$v"; done
mkdir experiments
# three cells, a failing trial in one (exit 3 on its 4th repetition), the default
# telemetry (cpu, disks) and vmstat
cat > experiments/interop.yaml <<'YAML'
matrix:
  n: [1, 2, 3]
run: "test {{ n }}{{ repetition }} != 24 || exit 3; printf 'value=%s\n' {{ n }}{{ repetition }}"
metrics:
  value: { regex: 'value=(\d+)', better: higher, unit: ops }
monitor: [cpu, disks, vmstat]
repetitions: 6
warmup: 1
max_failures: 3
YAML
# a run with a failed trial exits 1 ("some trials or hosts failed"), its store complete
run() {
    local rc=0
    "$margin" run experiments/interop.yaml "$@" > run.log 2>&1 || rc=$?
    { [ "$rc" -le 1 ] && grep -q 'some trials or hosts failed\|complete' run.log; } || { cat run.log; exit 1; }
}
run
"$venv/bin/python" "$here/columns.py" reports/interop
run --repetitions 12
"$margin" status interop > /dev/null
"$venv/bin/python" "$here/columns.py" reports/interop
parts=$(find reports/interop/runs.columns/trials -mindepth 1 -maxdepth 1 -not -name '.*' | wc -l)
[ "$parts" -ge 2 ] || { echo "interop: the second run's trials are not a part of their own ($parts part)" >&2; exit 1; }
echo "interop: passed"
