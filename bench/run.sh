#!/usr/bin/env bash
# Per-trial overhead: 1 000 trials of `true` through `margin run` (every record made
# durable with fdatasync before the next trial) against `hyperfine -N --runs 1000 true`.
# Goal (issue 3): margin ≤ 1.5 × hyperfine's wall time.
set -euo pipefail
margin=${1:?usage: bench/run.sh path/to/margin}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cat > "$dir/overhead.yaml" <<YAML
matrix:
  cmd: ["true"]
run: "true"
repetitions: 1000
YAML
start=$(date +%s.%N)
MARGIN_REPORTS="$dir/reports" "$margin" run "$dir/overhead.yaml" > /dev/null 2>&1
end=$(date +%s.%N)
margin_s=$(echo "$end - $start" | bc -l)
printf 'margin run, 1000 trials of true: %.3f s (%.3f ms per trial)\n' "$margin_s" "$(echo "$margin_s" | awk '{print $1}')"
if command -v hyperfine > /dev/null; then
  start=$(date +%s.%N)
  hyperfine -N --runs 1000 --warmup 0 --style none --export-json "$dir/h.json" true > /dev/null 2>&1
  end=$(date +%s.%N)
  hyper_s=$(echo "$end - $start" | bc -l)
  printf 'hyperfine -N --runs 1000 true: %.3f s\n' "$hyper_s"
  printf 'ratio margin / hyperfine: %.2f (goal ≤ 1.5)\n' "$(echo "$margin_s / $hyper_s" | bc -l)"
else
  echo "hyperfine is not installed (apt-get install hyperfine): no ratio"
fi
