#!/usr/bin/env bash
# Per-trial overhead: 1 000 trials of `true` through `margin run` (every record made
# durable with fdatasync before the next trial) against `hyperfine -N --runs 1000 true`.
# Goals (docs/performance.md): margin ≤ 1.05 × the durable floor below; ≤ 1.0 × hyperfine is out of
# reach of any runner that makes each record durable, by what floor ÷ hyperfine says.
#
# A virtual machine's timings wander by ±5 % from one second to the next, so the two
# are run in turns, ROUNDS times (default 5), and every ratio is printed with the median.
# The store is written where TMPDIR points: a disk, not tmpfs, or fdatasync costs nothing.
#
# With FLOOR (examples/durable_floor.rs), each round also times the floor: 1 000 spawns
# of `true`, each followed by one line written and fdatasync'd and nothing else. What
# durability costs is floor ÷ hyperfine, which no runner can go under on this disk; what
# margin adds of its own is margin ÷ floor.
#
# Wall time here is the disk's: one fdatasync per trial costs 3–10 ms on a shared virtual
# disk, and its jitter from round to round is larger than all margin does besides. Two
# measurements leave the disk out:
#   - CPU time of the runner's own threads per trial: margin's (its CPU, from wait4,
#     less the trials' own user and system time, which its records hold) against the
#     floor's (its thread's, from schedstat: it prints `own_cpu_s`);
#   - the same runs with the store on tmpfs (/dev/shm), where fdatasync returns at once,
#     margin and the floor in turn, ROUNDS times.
#
# Each round also times the same run with `monitor: none`: what telemetry (on by default:
# /proc/stat and /proc/diskstats read before and after every trial, kept under raw/)
# costs per trial is (on − off) ÷ 1000.
#
# A run's start (the binary loaded, the store and the plan read, the host's facts) and its
# end (the analysis and the report) are in every figure above, spread over its 1 000
# trials. What one more trial costs is measured apart, on tmpfs: runs of 1 200 and of 200
# trials, margin's and the floor's in turn, (T1200 − T200) ÷ 1 000, wall and own CPU (the
# report still reads every record, so its share per record stays in margin's figure).
# Twice more: margin with `monitor: none` against the plain floor, and margin with its
# default telemetry against the floor that also reads the same counters around each trial
# (`durable_floor … counters`: /proc/stat and /proc/diskstats before and after, and
# /proc/meminfo before, their text kept): what the kernel spends writing those files out
# is in any runner that keeps them. Both are held to ≤ 1.05 ×.
# And the trial loop alone, from the runs of 1 200: the spacing of margin's `started_at`
# times (first to last, over the trials between) against the floor's (`period_s`), which
# leaves out the start-up and the closing report (whose reading of the records is part of
# one more trial above) and needs no difference of two runs: what margin does between
# two trials, the issue's words. Both once more against the floor that also keeps each
# trial's output as margin does (`durable_floor … outputs`: stdout and stderr into two
# files in memory made for the trial, a non-empty one copied out and made durable): what
# any runner that keeps every raw output spends, which the plain floor does not (its
# output goes to /dev/null, as hyperfine's does).
#
# usage: bench/run.sh path/to/margin [ROUNDS] [path/to/durable_floor]
set -euo pipefail
margin=${1:?usage: bench/run.sh path/to/margin [ROUNDS] [path/to/durable_floor]}
rounds=${2:-5}
floor=${3:-}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cat > "$dir/overhead.yaml" <<YAML
matrix:
  cmd: ["true"]
run: "true"
repetitions: 1000
YAML
sed 's/^repetitions: 1000$/repetitions: 1000\nmonitor: none/' "$dir/overhead.yaml" > "$dir/overhead-off.yaml"
for n in 200 1200; do
  sed "s/^repetitions: 1000\$/repetitions: $n/" "$dir/overhead.yaml" > "$dir/overhead-$n.yaml"
  sed "s/^repetitions: 1000\$/repetitions: $n/" "$dir/overhead-off.yaml" > "$dir/overhead-off-$n.yaml"
done
seconds() { # seconds COMMAND…: the wall time of COMMAND, its output discarded
  local start end
  start=$(date +%s.%N)
  "$@" > /dev/null 2>&1
  end=$(date +%s.%N)
  echo "$end - $start" | bc -l
}
cpu() { # cpu COMMAND…: "WALL CPU" of COMMAND, CPU its own and its children's (wait4)
  python3 -c '
import os, sys, time
start = time.monotonic()
pid = os.fork()
if pid == 0:
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1); os.dup2(null, 2)
    os.execvp(sys.argv[1], sys.argv[1:])
_, status, usage = os.wait4(pid, 0)
print(time.monotonic() - start, usage.ru_utime + usage.ru_stime)
sys.exit(os.waitstatus_to_exitcode(status))' "$@"
}
trials_cpu() { # trials_cpu STORE [NAME]: the trials' own user + system time, summed
  python3 -c '
import json, sys
print(sum(r.get("metrics", {}).get("user_time", 0) + r.get("metrics", {}).get("system_time", 0)
          for r in map(json.loads, open(sys.argv[1]))))' "$1/${2:-overhead}/runs.ndjson"
}
period() { # period LOG: seconds from the first trial's start to the last one's, over the trials between
  python3 "$(dirname "$0")/period.py" "$1"
}
margin_n() { # margin_n DIR N [off]: "WALL CPU PERIOD" of margin's run of N trials (`monitor: none` with off), stored in DIR (tmpfs), CPU less the trials'
  local wall total name=overhead${3:+-off}-$2
  rm -rf "$1/reports"
  read -r wall total < <(MARGIN_REPORTS="$1/reports" cpu "$margin" run "$dir/$name.yaml")
  echo "$wall $(echo "$total - $(trials_cpu "$1/reports" "$name")" | bc -l) $(period "$1/reports/$name/runs.ndjson")"
  rm -rf "$1/reports"
}
floor_n() { # floor_n DIR N [FLAG…]: "WALL CPU PERIOD" of the floor's N trials in DIR (flags: counters, outputs), CPU and period from a second run
  local wall
  read -r wall _ < <(cpu "$floor" "$@")
  echo "$wall $("$floor" "$@" | awk '/^own_cpu_s/ { c = $2 } /^period_s/ { p = $2 } END { print c, p }')"
}
own_cpu() { # own_cpu FLOOR DIR: the floor's own CPU time for 1000 trials in DIR
  "$1" "$2" 1000 | awk '/^own_cpu_s/ { print $2 }'
}
median() { # median NUMBER…
  printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
range() { printf '%s\n' "$@" | sort -g | sed -n '1p;$p' | paste -sd' '; } # range NUMBER…: "LOWEST HIGHEST"
ratios=()
floors=()
owns=()
costs=()
cpus=()
shms=()
margins=()
shm_hypers=()
margin_cpus=()
floor_cpus=()
counter_cpus=()
offs=()
withs=()
loop_with=()
loop_off=()
loop_with_kept=()
loop_off_kept=()
for round in $(seq "$rounds"); do
  rm -rf "$dir/reports"
  margin_s=$(MARGIN_REPORTS="$dir/reports" seconds "$margin" run "$dir/overhead.yaml")
  line=$(printf 'round %d: margin run, 1000 trials of true: %.3f s' "$round" "$margin_s")
  rm -rf "$dir/reports"
  off_s=$(MARGIN_REPORTS="$dir/reports" seconds "$margin" run "$dir/overhead-off.yaml")
  costs+=("$(echo "($margin_s - $off_s) / 1000 * 1000000" | bc -l)")
  line+=$(printf ' (monitor: none %.3f s: telemetry %.0f µs per trial)' "$off_s" "${costs[-1]}")
  if command -v hyperfine > /dev/null; then
    hyper_s=$(seconds hyperfine -N --runs 1000 --warmup 0 --style none true)
    ratio=$(echo "$margin_s / $hyper_s" | bc -l)
    ratios+=("$ratio")
    line+=$(printf '; hyperfine -N --runs 1000 true: %.3f s; ratio %.2f' "$hyper_s" "$ratio")
  fi
  if [ -n "$floor" ]; then
    floor_s=$(seconds "$floor" "$dir" 1000)
    owns+=("$(echo "$margin_s / $floor_s" | bc -l)")
    line+=$(printf '; floor %.3f s (margin ÷ floor %.2f' "$floor_s" "${owns[-1]}")
    if [ -n "${hyper_s:-}" ]; then
      floors+=("$(echo "$floor_s / $hyper_s" | bc -l)")
      line+=$(printf ', floor ÷ hyperfine %.2f' "${floors[-1]}")
    fi
    line+=")"
    # own CPU: margin's threads against the floor's (on the same disk)
    rm -rf "$dir/reports"
    read -r _ total < <(MARGIN_REPORTS="$dir/reports" cpu "$margin" run "$dir/overhead.yaml")
    mine=$(echo "$total - $(trials_cpu "$dir/reports")" | bc -l)
    theirs=$(own_cpu "$floor" "$dir")
    cpus+=("$(echo "$mine / $theirs" | bc -l)")
    line+=$(printf '; own CPU per trial: margin %.0f µs, floor %.0f µs (%.2f ×)' \
      "$(echo "$mine * 1000" | bc -l)" "$(echo "$theirs * 1000" | bc -l)" "${cpus[-1]}")
    # on tmpfs: no flush, margin and the floor in turn
    if [ -d /dev/shm ] && [ -w /dev/shm ]; then
      shm=$(mktemp -d -p /dev/shm)
      read -r shm_margin _ < <(MARGIN_REPORTS="$shm/reports" cpu "$margin" run "$dir/overhead.yaml")
      read -r shm_floor _ < <(cpu "$floor" "$shm" 1000)
      rm -rf "$shm"
      shms+=("$(echo "$shm_margin / $shm_floor" | bc -l)")
      line+=$(printf '; on tmpfs margin %.3f s, floor %.3f s (%.2f ×, margin adds %.0f µs per trial)' \
        "$shm_margin" "$shm_floor" "${shms[-1]}" "$(echo "($shm_margin - $shm_floor) * 1000" | bc -l)")
      # where a flush costs nothing: margin's whole run (start, telemetry, report) against
      # hyperfine's, which keeps nothing
      if [ -n "${hyper_s:-}" ]; then
        shm_hypers+=("$(echo "$shm_margin / $hyper_s" | bc -l)")
        line+=$(printf ' (margin on tmpfs ÷ hyperfine %.2f)' "${shm_hypers[-1]}")
      fi
      # one more trial, past the start and the end: (T1200 − T200) ÷ 1000, in turn; margin
      # with telemetry against the plain floor and against the floor that reads the same
      # counters, and margin with `monitor: none` against the plain floor
      shm=$(mktemp -d -p /dev/shm)
      read -r mw1 mc1 _ < <(margin_n "$shm" 200)
      read -r mw2 mc2 mp < <(margin_n "$shm" 1200)
      read -r fw1 fc1 _ < <(floor_n "$shm" 200)
      read -r fw2 fc2 fp < <(floor_n "$shm" 1200)
      read -r ow1 _ _ < <(margin_n "$shm" 200 off)
      read -r ow2 _ op < <(margin_n "$shm" 1200 off)
      read -r cw1 cc1 _ < <(floor_n "$shm" 200 counters)
      read -r cw2 cc2 cp < <(floor_n "$shm" 1200 counters)
      read -r _ _ kp < <(floor_n "$shm" 1200 outputs)
      read -r _ _ kcp < <(floor_n "$shm" 1200 counters outputs)
      rm -rf "$shm"
      per() { echo "($2 - $1) * 1000" | bc -l; } # µs per trial
      per_wall=$(per "$mw1" "$mw2")
      per_cpu=$(per "$mc1" "$mc2")
      floor_wall=$(per "$fw1" "$fw2")
      floor_cpu=$(per "$fc1" "$fc2")
      off_wall=$(per "$ow1" "$ow2")
      counters_wall=$(per "$cw1" "$cw2")
      counters_cpu=$(per "$cc1" "$cc2")
      margins+=("$(echo "$per_wall / $floor_wall" | bc -l)")
      offs+=("$(echo "$off_wall / $floor_wall" | bc -l)")
      withs+=("$(echo "$per_wall / $counters_wall" | bc -l)")
      margin_cpus+=("$per_cpu")
      floor_cpus+=("$floor_cpu")
      counter_cpus+=("$counters_cpu")
      line+=$(printf '; one more trial on tmpfs: margin %.0f µs (own CPU %.0f µs), floor %.0f µs (own CPU %.0f µs): %.2f ×' \
        "$per_wall" "$per_cpu" "$floor_wall" "$floor_cpu" "${margins[-1]}")
      line+=$(printf '; monitor: none %.0f µs: %.2f × the floor; the floor reading the counters %.0f µs (own CPU %.0f µs): margin %.2f × it' \
        "$off_wall" "${offs[-1]}" "$counters_wall" "$counters_cpu" "${withs[-1]}")
      # the trial loop alone (start to start in the runs of 1 200): no start-up, no report
      loop_with+=("$(echo "$mp / $cp" | bc -l)")
      loop_off+=("$(echo "$op / $fp" | bc -l)")
      line+=$(printf '; the loop, start to start: margin %.0f µs against the counting floor'"'"'s %.0f µs (%.2f ×), monitor: none %.0f µs against the floor'"'"'s %.0f µs (%.2f ×)' \
        "$(echo "$mp * 1000000" | bc -l)" "$(echo "$cp * 1000000" | bc -l)" "${loop_with[-1]}" \
        "$(echo "$op * 1000000" | bc -l)" "$(echo "$fp * 1000000" | bc -l)" "${loop_off[-1]}")
      loop_with_kept+=("$(echo "$mp / $kcp" | bc -l)")
      loop_off_kept+=("$(echo "$op / $kp" | bc -l)")
      line+=$(printf '; against the floors that keep the outputs too: %.0f µs counting (%.2f ×), %.0f µs plain (%.2f ×)' \
        "$(echo "$kcp * 1000000" | bc -l)" "${loop_with_kept[-1]}" "$(echo "$kp * 1000000" | bc -l)" "${loop_off_kept[-1]}")
    fi
  fi
  echo "$line"
done
printf 'telemetry per trial (monitor default − monitor: none), median of %d: %.0f µs\n' \
  "${#costs[@]}" "$(median "${costs[@]}")"
if [ ${#owns[@]} -gt 0 ]; then
  printf 'margin / floor, median of %d: %.2f (what margin adds to the spawn and the durable record)\n' \
    "${#owns[@]}" "$(median "${owns[@]}")" # goal ≤ 1.05
  printf 'own CPU per trial, margin / floor, median of %d: %.2f (range %.2f–%.2f)\n' \
    "${#cpus[@]}" "$(median "${cpus[@]}")" "$(printf '%s\n' "${cpus[@]}" | sort -g | head -1)" \
    "$(printf '%s\n' "${cpus[@]}" | sort -g | tail -1)"
  if [ ${#shms[@]} -gt 0 ]; then
    printf 'on tmpfs, margin / floor, median of %d: %.2f (range %.2f–%.2f)\n' \
      "${#shms[@]}" "$(median "${shms[@]}")" "$(printf '%s\n' "${shms[@]}" | sort -g | head -1)" \
      "$(printf '%s\n' "${shms[@]}" | sort -g | tail -1)"
    printf 'one more trial on tmpfs, margin / floor, median of %d: %.2f (range %.2f–%.2f); own CPU margin %.0f µs (%.0f–%.0f), floor %.0f µs (%.0f–%.0f)\n' \
      "${#margins[@]}" "$(median "${margins[@]}")" "$(printf '%s\n' "${margins[@]}" | sort -g | head -1)" \
      "$(printf '%s\n' "${margins[@]}" | sort -g | tail -1)" \
      "$(median "${margin_cpus[@]}")" "$(printf '%s\n' "${margin_cpus[@]}" | sort -g | head -1)" \
      "$(printf '%s\n' "${margin_cpus[@]}" | sort -g | tail -1)" \
      "$(median "${floor_cpus[@]}")" "$(printf '%s\n' "${floor_cpus[@]}" | sort -g | head -1)" \
      "$(printf '%s\n' "${floor_cpus[@]}" | sort -g | tail -1)"
    read -r lo hi < <(range "${offs[@]}")
    printf 'one more trial on tmpfs, monitor: none, margin / floor, median of %d: %.2f (range %.2f–%.2f)\n' \
      "${#offs[@]}" "$(median "${offs[@]}")" "$lo" "$hi" # goal ≤ 1.05
    read -r lo hi < <(range "${withs[@]}")
    printf 'one more trial on tmpfs, telemetry on, margin / the floor reading the same counters, median of %d: %.2f (range %.2f–%.2f); the floor'"'"'s own CPU with them %.0f µs\n' \
      "${#withs[@]}" "$(median "${withs[@]}")" "$lo" "$hi" "$(median "${counter_cpus[@]}")" # goal ≤ 1.05
    read -r lo hi < <(range "${loop_with[@]}")
    printf 'the trial loop (start to start), telemetry on, margin / the counting floor, median of %d: %.2f (range %.2f–%.2f)\n' \
      "${#loop_with[@]}" "$(median "${loop_with[@]}")" "$lo" "$hi" # goal ≤ 1.05
    read -r lo hi < <(range "${loop_off[@]}")
    printf 'the trial loop (start to start), monitor: none, margin / the floor, median of %d: %.2f (range %.2f–%.2f)\n' \
      "${#loop_off[@]}" "$(median "${loop_off[@]}")" "$lo" "$hi" # goal ≤ 1.05
    read -r lo hi < <(range "${loop_with_kept[@]}")
    printf 'the trial loop, telemetry on, margin / the counting floor that keeps the outputs as margin does, median of %d: %.2f (range %.2f–%.2f)\n' \
      "${#loop_with_kept[@]}" "$(median "${loop_with_kept[@]}")" "$lo" "$hi"
    read -r lo hi < <(range "${loop_off_kept[@]}")
    printf 'the trial loop, monitor: none, margin / the floor that keeps the outputs as margin does, median of %d: %.2f (range %.2f–%.2f)\n' \
      "${#loop_off_kept[@]}" "$(median "${loop_off_kept[@]}")" "$lo" "$hi"
  fi
fi
if [ ${#ratios[@]} -eq 0 ]; then
  echo "hyperfine is not installed (apt-get install hyperfine): no ratio"
  exit 0
fi
printf 'ratio margin / hyperfine, median of %d: %.2f\n' "${#ratios[@]}" "$(median "${ratios[@]}")"
if [ ${#shm_hypers[@]} -gt 0 ]; then
  read -r lo hi < <(range "${shm_hypers[@]}")
  printf 'margin with its store on tmpfs (no flush) / hyperfine, median of %d: %.2f (range %.2f–%.2f)\n' \
    "${#shm_hypers[@]}" "$(median "${shm_hypers[@]}")" "$lo" "$hi"
fi
if [ ${#floors[@]} -gt 0 ]; then
  printf 'floor / hyperfine, median of %d: %.2f (what durability costs on this disk, for any runner)\n' \
    "${#floors[@]}" "$(median "${floors[@]}")"
fi
