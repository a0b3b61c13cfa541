#!/usr/bin/env bash
# Stop the lab of a port (docs/lab.md): a clean shutdown over ssh when the guest answers
# (up to 90 s), else QEMU killed; its overlay is kept (lab/boot.sh --keep boots on it).
#
#   lab/stop.sh [--port N] [--hard]      --hard: no shutdown, QEMU killed at once
set -euo pipefail
source "$(dirname "$0")/lib.sh"

port=2222 hard=no
while [ $# -gt 0 ]; do
    case $1 in
        --port) port=$2; shift 2 ;;
        --port=*) port=${1#--port=}; shift ;;
        --hard) hard=yes; shift ;;
        *) die "usage: lab/stop.sh [--port N] [--hard]" ;;
    esac
done
run=$cache/run-$port
if ! pid=$(qemu_pid "$run"); then
    say "no lab runs on port $port"
    exit 0
fi
# PV guests destroyed first: the dom0's xendomains takes minutes to shut one down under
# TCG, past the 90 s below (what a real machine's reboot would wait for)
guests="xl list 2> /dev/null | awk 'NR > 1 && \$1 != \"Domain-0\" { print \$1 }' | xargs -r -n 1 xl destroy"
if [ "$hard" = no ] && lab_ssh "$port" "$guests; systemctl poweroff" 2> /dev/null; then
    say "shutting down (QEMU $pid)…"
    for _ in $(seq 1 90); do
        qemu_pid "$run" > /dev/null || { say "stopped cleanly"; exit 0; }
        sleep 1
    done
    say "no clean shutdown after 90 s"
fi
kill_qemu "$run"
say "QEMU $pid killed"
