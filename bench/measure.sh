# shellcheck shell=bash
# Sourced by the benchmarks: `measure LABEL COMMAND…` prints the wall time and, with GNU
# time installed, the peak memory of COMMAND (its stdout discarded).
measure() {
  local label=$1; shift
  if [ -x /usr/bin/time ]; then
    /usr/bin/time -f "$label: %e s wall, %M KiB max RSS" "$@" > /dev/null
  else
    local start end
    start=$(date +%s.%N)
    "$@" > /dev/null
    end=$(date +%s.%N)
    echo "$label: $(echo "$end - $start" | bc) s wall (install GNU time for memory)"
  fi
}
