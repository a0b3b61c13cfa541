#!/usr/bin/env bash
# The trial loop alone, in pairs (what margin does between two trials besides the spawn,
# the wait and the durable write): the time from one trial's start to the next, margin's against the durable floor's
# (examples/durable_floor.rs), each pair run back to back so that the machine's drift
# from one second to the next, larger here than margin's whole difference, falls on both.
#
# Each of PAIRS rounds runs, on tmpfs (no flush: the runners' own work, not the disk's),
# 1 200 trials of `true` seven times:
#   1. margin, `monitor: none`;         2. margin, default telemetry (cpu and disks);
#   3. the plain floor (output to /dev/null, as hyperfine's);
#   4. the floor keeping the outputs as margin does (`outputs`: two files in memory a
#      trial, a non-empty one copied out and made durable);
#   5. the floor keeping the outputs and reading margin's counters (`counters outputs`);
#   6. and 7. the floors of 4 and 5 starting `true` as margin does (`clone`: no
#      `posix_spawn`, whose child sets all 64 signals' dispositions one by one): what is
#      left of margin's own work when the start is the same.
# margin's period is the spacing of its trials' `started_at` times (first to last, over the
# trials between), the floor's its `period_s`: no start-up, no closing report.
#
# It prints every round's seven periods (µs) and, for each ratio, the median and the
# quartiles over the rounds: margin without telemetry against the plain floor and against
# the floor that keeps the outputs, margin with telemetry against the floor that keeps the
# outputs and reads the same counters, the same two against the floors starting as margin
# does, and what keeping the outputs and starting by `clone` cost or save the floor.
# Goal (docs/performance.md, The goals): ≤ 1.05.
#
# usage: bench/loop.sh path/to/margin path/to/durable_floor [PAIRS]   (default PAIRS: 20)
set -euo pipefail
margin=${1:?usage: bench/loop.sh path/to/margin path/to/durable_floor [PAIRS]}
floor=${2:?usage: bench/loop.sh path/to/margin path/to/durable_floor [PAIRS]}
pairs=${3:-20}
{ [ -d /dev/shm ] && [ -w /dev/shm ]; } || { echo "bench/loop.sh: needs a writable /dev/shm (tmpfs)" >&2; exit 1; }
dir=$(mktemp -d -p /dev/shm)
trap 'rm -rf "$dir"' EXIT
cat > "$dir/on.yaml" <<YAML
matrix:
  cmd: ["true"]
run: "true"
repetitions: 1200
YAML
printf '%s\n' "$(cat "$dir/on.yaml")" "monitor: none" > "$dir/off.yaml"
period() { # period LOG: µs from the first trial's start to the last one's, over the trials between
  python3 "$(dirname "$0")/period.py" "$1" | awk '{ print $1 * 1e6 }'
}
margin_period() { # margin_period on|off
  rm -rf "$dir/reports"
  MARGIN_REPORTS="$dir/reports" "$margin" run "$dir/$1.yaml" > /dev/null 2>&1
  period "$dir/reports/$1/runs.ndjson"
}
floor_period() { # floor_period [FLAG…]
  "$floor" "$dir" 1200 "$@" | awk '/^period_s/ { print $2 * 1e6 }'
}
echo "round: margin off, margin on, floor, floor keeping outputs, and reading counters; the last two starting as margin does (µs a trial)"
rows=()
for round in $(seq "$pairs"); do
  row="$(margin_period off) $(margin_period on) $(floor_period) $(floor_period outputs) $(floor_period counters outputs)"
  row="$row $(floor_period outputs clone) $(floor_period counters outputs clone)"
  rows+=("$row")
  # shellcheck disable=SC2086 # the row's seven numbers, one argument each
  printf 'round %d: %.0f %.0f %.0f %.0f %.0f %.0f %.0f\n' "$round" $row
done
summary() { # summary WHAT AWK-EXPRESSION: the median and quartiles of the expression over the rounds
  printf '%s\n' "${rows[@]}" | awk "{ print $2 }" | sort -g |
    awk -v what="$1" '{ v[NR] = $1 } END {
      printf "%s: median %.3f, quartiles %.3f–%.3f, range %.3f–%.3f (%d rounds)\n", what,
        (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2,
        v[int((NR + 3) / 4)], v[int((3 * NR + 3) / 4)], v[1], v[NR], NR }'
}
# shellcheck disable=SC2016 # the expressions are awk's, over each round's columns
{
  summary "margin (monitor: none) / the plain floor" '$1 / $3'
  summary "margin (monitor: none) / the floor keeping the outputs" '$1 / $4'
  summary "margin (telemetry) / the floor keeping the outputs and reading the counters" '$2 / $5'
  summary "margin (monitor: none) / the floor keeping the outputs, starting as margin does" '$1 / $6'
  summary "margin (telemetry) / the floor keeping the outputs and reading the counters, starting as margin does" '$2 / $7'
  summary "the floor keeping the outputs / the plain floor" '$4 / $3'
  summary "the floor keeping the outputs, starting as margin does / starting by posix_spawn" '$6 / $4'
}
