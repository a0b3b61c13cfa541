#!/usr/bin/env bash
# The series' analysis at scale (docs/performance.md): `margin report` of a series of
# LEVELS levels × TRIALS trials (examples/synthetic_store.rs, SHAPE `series`: one factor
# whose change points the report searches), beside the report of as many trials whose
# variants are each compared with the first instead (SHAPE `compared`: the report of
# today). Goal: the series within 2 × the compared store's time. Each report runs three
# times: the first parses the log and keeps its columns, the next two read the columns.
#
# usage: bench/series.sh path/to/margin path/to/synthetic_store [LEVELS [TRIALS]]
#        (default 1000 levels × 20 trials)
set -euo pipefail
usage="usage: bench/series.sh path/to/margin path/to/synthetic_store [LEVELS [TRIALS]]"
margin=${1:?$usage}
generator=${2:?$usage}
levels=${3:-1000}
trials=${4:-20}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

# shellcheck source=bench/measure.sh
source "$(dirname "$0")/measure.sh"

for shape in series compared; do
  "$generator" "$dir/$shape" "$levels" "$trials" 4 "$shape" > /dev/null
  echo "margin report, $levels levels × $trials trials, $shape"
  for i in 1 2 3; do
    MARGIN_REPORTS="$dir/$shape/reports" measure "$shape report run $i" \
      "$margin" report "$dir/$shape/synthetic.yaml"
  done
done
# what the series' report found
python3 - "$dir/series/reports/synthetic/summary.json" <<'PY'
import json
import sys

with open(sys.argv[1]) as f:
    summary = json.load(f)
series = summary.get("series", [])
changes = sum(len(s.get("change_points", [])) for s in series)
print(f"series analysed: {len(series)}, change points found: {changes}")
PY
