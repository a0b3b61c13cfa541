#!/usr/bin/env bash
# Report speed and memory: `margin report` on a synthetic store of 1 000 000 trials (100 ×
# 100 cells × 100 trials, four metrics each as `margin run` records them: wall, user and
# system time, and dd's throughput, with the default `monitor:`'s nine secondary metrics;
# every variant compared with its baseline). Goal (docs/performance.md): ≤ 2 s and ≤ 500
# MB peak memory on the 2-core CI machine. The first report parses the whole log and keeps
# its columns beside it (docs/store.md); the second and third read the columns.
#
# usage: bench/report.sh path/to/margin path/to/synthetic_store [LEVELS [TRIALS]]
# (`just bench` builds both; smaller LEVELS and TRIALS make a quick trial of the script).
set -euo pipefail
margin=${1:?usage: bench/report.sh path/to/margin path/to/synthetic_store [LEVELS [TRIALS]]}
generator=${2:?usage: bench/report.sh path/to/margin path/to/synthetic_store [LEVELS [TRIALS]]}
levels=${3:-100}
trials=${4:-100}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

"$generator" "$dir" "$levels" "$trials"
echo "store: $(du -h "$dir/reports/synthetic/runs.ndjson" | cut -f1) of trial records"

# shellcheck source=bench/measure.sh
source "$(dirname "$0")/measure.sh"

echo "margin report, $((levels * levels)) cells × $trials trials (goal: ≤ 2 s, ≤ 500 MB = 488281 KiB)"
for i in 1 2 3; do
  MARGIN_REPORTS="$dir/reports" measure "report run $i" "$margin" report "$dir/synthetic.yaml"
done
stat -c '%s %n' "$dir/reports/synthetic/report.md" "$dir/reports/synthetic/summary.json"
# status: from the columns (runs.progress removed first), then with the log unchanged,
# from runs.progress alone (docs/store.md, Where the cells stand)
for i in 1 2; do
  rm -f "$dir/reports/synthetic/runs.progress"
  MARGIN_REPORTS="$dir/reports" measure "status (columns) run $i" "$margin" status "$dir/synthetic.yaml"
  MARGIN_REPORTS="$dir/reports" measure "status (runs.progress) run $i" "$margin" status "$dir/synthetic.yaml"
done
# status after a run appended 1 000 records (here: the log's last 1 000 lines again):
# runs.progress extended by them alone
for i in 1 2; do
  tail -n 1000 "$dir/reports/synthetic/runs.ndjson" > "$dir/appended"
  cat "$dir/appended" >> "$dir/reports/synthetic/runs.ndjson"
  MARGIN_REPORTS="$dir/reports" measure "status (runs.progress + 1000 appended) run $i" "$margin" status "$dir/synthetic.yaml"
done
