#!/usr/bin/env bash
# Many hosts: `margin run` over 1, 8 and 64 ssh hosts, each a real sshd on 127.0.0.1
# started here (as tests/integration/hosts.rs does: a key pair of its own, a config of
# its own, nothing of the system's ssh configuration touched). Needs root and
# /usr/sbin/sshd (openssh-server; `just test-deps`).
#
# Every host runs REPS trials of `sleep TRIAL` (default 10 × 0.5 s). For each fleet size
# it prints:
#   - the run's wall time, and each host's throughput (its trials ÷ the time from its first
#     trial's start to its last one's end), median and lowest over the hosts, against the
#     single host's: the goal is ≥ 1 ÷ 1.2 of it;
#   - whether two trials of one host ever overlapped (they must not: one trial per machine
#     at a time; every ssh host without `machine:` is a machine of its own);
#   - the most threads and file descriptors margin held, and the most ssh clients
#     running (one per host for its long-lived remote shell, and at the start one more
#     per host that checks its connection; the master connections are daemons of their
#     own, not counted), sampled from /proc every 250 ms;
#   - how busy the machine's CPUs were over the run (from /proc/stat): near 100 %, the
#     figures measure the machine, not margin;
#   - where the CPU of the run went, per trial: margin's own threads, the ssh clients it
#     started and reaped, and the hosts' side (every sshd session and what ran under it,
#     reaped by the daemons: the trials' commands too). The master connections (ssh's
#     daemons of their own, ControlPersist) are in none of them.
#
# The daemons share this machine's cores with margin: with many hosts and short trials
# the figures measure the machine's CPU, not margin's scheduling. A trial that sleeps
# leaves the cores to the ssh clients and daemons; the throughput is then margin's to lose.
#
# usage: bench/hosts.sh path/to/margin [FLEETS] [REPS] [TRIAL]
#        (defaults: "1 8 64", 10, 0.5)
set -euo pipefail
margin=$(realpath "${1:?usage: bench/hosts.sh path/to/margin [FLEETS] [REPS] [TRIAL]}")
fleets=${2:-1 8 64}
reps=${3:-10}
trial=${4:-0.5}
[ -x /usr/sbin/sshd ] || { echo "bench/hosts.sh: needs /usr/sbin/sshd (openssh-server)" >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "bench/hosts.sh: needs root (sshd)" >&2; exit 2; }
dir=$(mktemp -d)
pids=()
stop() {
  for pid in "${pids[@]}"; do kill "$pid" 2> /dev/null || true; done
  wait 2> /dev/null || true
  rm -rf "$dir"
}
trap stop EXIT
mkdir -p /run/sshd # privilege separation needs it (a container may lack it)
ssh-keygen -q -t ed25519 -N "" -f "$dir/client"
ssh-keygen -q -t ed25519 -N "" -f "$dir/host"
user=${USER:-root}
max=0
for n in $fleets; do [ "$n" -gt "$max" ] && max=$n; done

# A free port each: bound by the kernel and let go (as free_port() does in the tests).
read -r -a ports < <(python3 -c "
import socket
socks = [socket.socket() for _ in range($max)]
for s in socks: s.bind(('127.0.0.1', 0))
print(' '.join(str(s.getsockname()[1]) for s in socks))")
for port in "${ports[@]}"; do
  cat > "$dir/sshd-$port.conf" <<CONF
Port $port
ListenAddress 127.0.0.1
HostKey $dir/host
AuthorizedKeysFile $dir/client.pub
PermitRootLogin yes
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
PidFile none
CONF
  /usr/sbin/sshd -D -f "$dir/sshd-$port.conf" -E "$dir/sshd-$port.log" < /dev/null &
  pids+=($!)
done
for port in "${ports[@]}"; do
  for _ in $(seq 200); do
    (exec 3<> "/dev/tcp/127.0.0.1/$port") 2> /dev/null && break
    sleep 0.05
  done
done

# CPU ticks the daemons have reaped from their sessions (cutime + cstime)
reaped() {
  local sum=0 pid stat
  for pid in "$@"; do
    stat=$(cat "/proc/$pid/stat" 2> /dev/null) || continue
    # shellcheck disable=SC2086 # the fields after the command's name, split on purpose
    set -- ${stat##*) }
    sum=$((sum + ${14} + ${15}))
  done
  echo "$sum"
}

# sample PID: the most threads, descriptors and ssh processes (under PID) it had, and
# its CPU ticks (its own, its reaped children's) when last seen
sample() {
  local pid=$1 out=$2 threads=0 fds=0 ssh=0 cpu="0 0 0 0" t f s stat
  while kill -0 "$pid" 2> /dev/null; do
    stat=$(cat "/proc/$pid/stat" 2> /dev/null) && cpu=$(echo "${stat##*) }" | cut -d' ' -f12-15)
    t=$(awk '/^Threads:/ { print $2 }' "/proc/$pid/status" 2> /dev/null || echo 0)
    # shellcheck disable=SC2012 # a descriptor's name is its number: ls counts them right
    f=$(ls "/proc/$pid/fd" 2> /dev/null | wc -l)
    s=$(pgrep -c -f "^ssh .*margin-ssh-$pid-" 2> /dev/null || true)
    [ "${t:-0}" -gt "$threads" ] && threads=$t
    [ "${f:-0}" -gt "$fds" ] && fds=$f
    [ "${s:-0}" -gt "$ssh" ] && ssh=$s
    sleep 0.25 # pgrep reads every process's command line: at 50 ms it cost 5 % of the CPU
  done
  echo "$threads $fds $ssh $cpu" > "$out"
}

single=
echo "margin run over N ssh hosts on 127.0.0.1, $reps trials of \`sleep $trial\` each"
for n in $fleets; do
  run="$dir/fleet-$n"
  mkdir -p "$run"
  {
    echo "hosts:"
    for i in $(seq "$n"); do
      echo "  h$i: { ssh: $user@127.0.0.1, port: ${ports[$((i - 1))]}, identity: $dir/client, options: [StrictHostKeyChecking=no, UserKnownHostsFile=/dev/null, LogLevel=ERROR, ConnectTimeout=10] }"
    done
    echo "matrix:"
    echo "  host: [$(seq -s, -f 'h%g' "$n")]"
    echo "run: \"sleep $trial\""
    echo "repetitions: $reps"
  } > "$run/fleet.yaml"
  read -r _ u0 n0 s0 i0 w0 q0 r0 _ < /proc/stat
  remote0=$(reaped "${pids[@]}")
  start=$(date +%s.%N)
  (cd "$run" && exec "$margin" run fleet.yaml > run.out 2>&1) &
  runner=$!
  sleep 0.02
  # the margin process itself (the subshell became it with exec)
  sample "$runner" "$run/sampled" &
  sampler=$!
  status=0
  wait "$runner" || status=$?
  end=$(date +%s.%N)
  read -r _ u1 n1 s1 i1 w1 q1 r1 _ < /proc/stat
  busy=$(( (u1 + n1 + s1 + q1 + r1) - (u0 + n0 + s0 + q0 + r0) ))
  busy_pct=$(( 100 * busy / (busy + (i1 + w1) - (i0 + w0)) ))
  wait "$sampler" || true
  if [ "$status" != 0 ]; then
    echo "$n hosts: margin run failed (exit $status):" >&2
    tail -20 "$run/run.out" >&2
    exit 1
  fi
  read -r threads fds ssh mu ms mcu mcs < "$run/sampled"
  sleep 1 # the sessions end with margin's connections: reaped by their daemons
  remote=$(( $(reaped "${pids[@]}") - remote0 ))
  # per host from its records: trials ÷ (last end − first start), and any overlap
  stats=$(python3 - "$run/reports/fleet/runs.ndjson" <<'PY'
import json
import sys
from datetime import datetime
from itertools import pairwise
hosts = {}
with open(sys.argv[1]) as log:
    records = [json.loads(line) for line in log]
for r in records:
    if r.get("warmup"):
        continue
    # RFC 3339 with nanoseconds: the fraction is read apart (datetime keeps microseconds)
    stamp, _, frac = r["started_at"].rstrip("Z").partition(".")
    start = datetime.fromisoformat(stamp + "+00:00").timestamp() + float("0." + (frac or "0"))
    hosts.setdefault(r["host"], []).append((start, start + r["wall_time"]))
rates, overlaps = [], 0
for spans in hosts.values():
    spans.sort()
    overlaps += sum(1 for a, b in pairwise(spans) if b[0] + 0.002 < a[1])
    rates.append(len(spans) / (spans[-1][1] - spans[0][0]))
rates.sort()
print(len(hosts), sum(len(s) for s in hosts.values()), rates[len(rates) // 2], rates[0], overlaps)
PY
)
  read -r hosts trials median lowest overlaps <<< "$stats"
  [ -z "$single" ] && single=$median
  tick=$(getconf CLK_TCK)
  per() { echo "1000 * $1 / $tick / $trials" | bc -l; }
  printf '%2d hosts: %3d trials in %.1f s; per host %.3f trials/s (median; lowest %.3f): %.2f × one host'"'"'s; overlaps %d; at most %d threads, %d fds, %d ssh clients; CPUs %d %% busy\n' \
    "$n" "$trials" "$(echo "$end - $start" | bc -l)" "$median" "$lowest" \
    "$(echo "$single / $median" | bc -l)" "$overlaps" "$threads" "$fds" "$ssh" "$busy_pct"
  printf '          CPU per trial: margin %.1f ms, its ssh clients %.1f ms, the hosts (sshd, shells, commands) %.1f ms\n' \
    "$(per $((mu + ms)))" "$(per $((mcu + mcs)))" "$(per "$remote")"
  [ "$hosts" = "$n" ] || { echo "expected $n hosts in the log, found $hosts" >&2; exit 1; }
  [ "$overlaps" = 0 ] || { echo "two trials of one host overlapped" >&2; exit 1; }
done
