#!/usr/bin/env bash
# Reboot the lab of a port into a chosen entry (docs/lab.md): the lab's boot command, run
# on margin's machine. The guest is shut down cleanly (lab/stop.sh), then QEMU started
# again with the chosen kernel and command line on the same overlay, so that the disk's
# state persists across the reboot as a real disk's does.
#
#   lab/reboot.sh bare|xen [dom0_mem=SIZE] [NAME=VALUE…] [--port N] [--mem MiB] [--timeout S] [--no-wait]
#   lab/reboot.sh [--port N]          the entry booted last on that port again
#
# Prints the ssh line once the new boot answers; fails as lab/boot.sh fails. With
# --no-wait it returns once QEMU runs again, as `reboot` on a real machine returns, and
# whoever called it waits for the new boot (margin does, in lab/experiments/lab-wrong-boot.yaml).
set -euo pipefail
source "$(dirname "$0")/lib.sh"

args=("$@") port=2222
for ((i = 0; i < ${#args[@]}; i++)); do
    case ${args[i]} in
        --port) port=${args[i + 1]:-} ;;
        --port=*) port=${args[i]#--port=} ;;
    esac
done
case ${1:-} in
    bare | xen) ;;
    *)
        last=$cache/run-$port/args
        [ -s "$last" ] || die "no entry booted on port $port yet: lab/reboot.sh bare|xen …"
        mapfile -t before < "$last"
        say "the entry booted last: ${before[*]}"
        set -- "${before[@]}" "$@"
        ;;
esac
"$lab_dir/stop.sh" --port "$port"
exec "$lab_dir/boot.sh" "$@" --keep
