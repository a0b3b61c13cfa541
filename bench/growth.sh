#!/usr/bin/env bash
# How the cost of reading a store grows with its trials (docs/performance.md): for each
# LEVELS, a synthetic store of LEVELS × LEVELS cells × 100 trials of one metric
# (examples/synthetic_store.rs; 32, 100 and 316 levels: 10⁵, 10⁶ and 10⁷ trials), and the
# wall time and peak memory (GNU time's maximum resident set) of
#
#   - `margin status` the first time (the whole log parsed, its columns and where the
#     cells stand kept beside it),
#   - `margin status` with the log unchanged (from runs.progress alone), `margin status`
#     read from the columns (runs.progress removed first) and `margin report` (from the
#     columns), twice each in turn (both runs printed: the machine is shared, the range
#     says how noisy it was),
#
# then the store is deleted. A 10⁷-trial store is a 6 GB log (plus 1.1 GB of columns
# and a 0.3 GB CSV) and takes about 20 minutes to generate: check the free disk first
# (`df -h`), or give smaller LEVELS. The load average is printed with each store.
#
# usage: bench/growth.sh path/to/margin path/to/synthetic_store [LEVELS…]
#        (default LEVELS: 32 100 316; `just bench` runs 32 100)
set -euo pipefail
usage="usage: bench/growth.sh path/to/margin path/to/synthetic_store [LEVELS…]"
margin=${1:?$usage}
generator=${2:?$usage}
shift 2
[ $# -gt 0 ] || set -- 32 100 316
[ -x /usr/bin/time ] || { echo "bench/growth.sh needs GNU time for peak memory (apt-get install time)" >&2; exit 2; }

timed() { # timed LABEL COMMAND…: "LABEL: seconds s, KiB KiB" of COMMAND, its output discarded
  local label=$1; shift
  /usr/bin/time -f "$label: %e s, %M KiB" "$@" > /dev/null
}
for levels in "$@"; do
  dir=$(mktemp -d)
  trap 'rm -rf "$dir"' EXIT
  "$generator" "$dir" "$levels" 100 1 > /dev/null
  export MARGIN_REPORTS=$dir/reports
  spec=$dir/synthetic.yaml
  n=$((levels * levels * 100))
  echo "$n trials ($((levels * levels)) cells × 100): runs.ndjson $(du -h "$dir/reports/synthetic/runs.ndjson" | cut -f1); load $(cut -d' ' -f1-3 /proc/loadavg)"
  timed "  $n status, first (log parsed, columns kept)" "$margin" status "$spec"
  echo "  runs.columns $(du -h "$dir/reports/synthetic/runs.columns" | cut -f1), runs.progress $(du -h "$dir/reports/synthetic/runs.progress" | cut -f1)"
  for i in 1 2; do
    timed "  $n status (runs.progress), run $i" "$margin" status "$spec"
    rm "$dir/reports/synthetic/runs.progress"
    timed "  $n status (columns), run $i" "$margin" status "$spec"
    timed "  $n report (columns), run $i" "$margin" report "$spec"
  done
  rm -rf "$dir"
  trap - EXIT
done
