#!/usr/bin/env bash
# Boot the lab's golden image under QEMU (TCG) in the background and wait for ssh
# (docs/lab.md).
#
#   lab/boot.sh bare|xen [dom0_mem=SIZE] [NAME=VALUE…] [--port N] [--mem MiB] [--timeout S] [--keep] [--no-wait]
#
# bare: Debian's kernel booted directly. xen: Xen 4.17 by multiboot, Debian's kernel as its
# dom0; dom0_mem=SIZE (default 1024M) becomes Xen's dom0_mem=SIZE,max:SIZE. Any other
# NAME=VALUE goes on the command line of the kernel booted: Linux's for bare, Xen's for xen.
# --port: the host's port forwarded to the guest's ssh (default 2222); one lab per port,
# its files in $MARGIN_LAB_CACHE/run-PORT/ (overlay.qcow2, domu.qcow2 and domu2.qcow2: the
# PV domUs' disks, qemu.pid, serial.log, entry).
# --mem: the machine's memory (default 2048 MiB). --timeout: seconds to wait for ssh
# (default 420). --keep: boot on the overlay the lab has (a reboot: the disk kept);
# without it, a fresh overlay of the golden image. --no-wait: return once QEMU runs, as a
# real machine's `reboot` returns, leaving the wait for ssh in the new boot to the caller
# (margin's own wait, in a boot recipe's `restart`).
#
# Prints the ssh line on success. On a timeout: the serial log's last 30 lines, QEMU
# killed, status 1; QEMU is never left running after a failure.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

all=("$@")
kind=${1:-}
case $kind in bare | xen) shift ;; *) die "usage: lab/boot.sh bare|xen [dom0_mem=SIZE] [--port N] [--mem MiB] [--timeout S] [--keep] [--no-wait]" ;; esac
port=2222 mem=2048 timeout=${MARGIN_LAB_TIMEOUT:-420} keep=no wait=yes dom0_mem=1024M extra=()
while [ $# -gt 0 ]; do
    case $1 in
        --port) port=$2; shift 2 ;;
        --port=*) port=${1#--port=}; shift ;;
        --mem) mem=$2; shift 2 ;;
        --mem=*) mem=${1#--mem=}; shift ;;
        --timeout) timeout=$2; shift 2 ;;
        --timeout=*) timeout=${1#--timeout=}; shift ;;
        --keep) keep=yes; shift ;;
        --no-wait) wait=no; shift ;;
        dom0_mem=*)
            [ "$kind" = xen ] || die "dom0_mem is Xen's: lab/boot.sh xen $1"
            dom0_mem=${1#dom0_mem=}; shift ;;
        *=* | [a-z]*) extra+=("$1"); shift ;;
        *) die "unknown argument: $1" ;;
    esac
done
[[ $port =~ ^[0-9]+$ ]] || die "--port: a number, not $port"

golden=$(golden_dir)
[ -e "$golden/done" ] || die "no image of this recipe: lab/build.sh (or just lab) builds it"
run=$cache/run-$port
mkdir -p "$run"
if pid=$(qemu_pid "$run"); then
    die "the lab of port $port runs already (QEMU $pid): lab/stop.sh --port $port, or lab/reboot.sh"
fi

if [ "$keep" = no ] || [ ! -s "$run/overlay.qcow2" ] || [ ! -s "$run/domu.qcow2" ] || [ ! -s "$run/domu2.qcow2" ]; then
    rm -f "$run/overlay.qcow2" "$run/domu.qcow2" "$run/domu2.qcow2"
    qemu-img create -q -f qcow2 -F raw -b "$golden/disk.raw" "$run/overlay.qcow2"
    # the PV domUs' disks (/dev/vdb and /dev/vdc in the machine), which dom0 gives the guests
    qemu-img create -q -f qcow2 -F raw -b "$golden/domu.raw" "$run/domu.qcow2"
    qemu-img create -q -f qcow2 -F raw -b "$golden/domu2.raw" "$run/domu2.qcow2"
fi

linux="root=/dev/vda1 ro net.ifnames=0"
if [ "$kind" = bare ]; then
    append="$linux console=ttyS0 ${extra[*]}"
    dom0=""
else
    case $dom0_mem in *,*) xen_mem=$dom0_mem ;; *) xen_mem="$dom0_mem,max:$dom0_mem" ;; esac
    # without smap=0 smep=0 dom0 faults in a loop under TCG (d0v0 Unhandled: vec 14, #PF)
    append="dom0_mem=$xen_mem dom0_max_vcpus=2 console=com1 com1=115200,8n1 smap=0 smep=0 ${extra[*]}"
    dom0="$linux console=hvc0"
fi
append=${append% }
printf '%s\n' "$kind" "$append" "$dom0" > "$run/entry"
# the arguments of this boot, for lab/reboot.sh without any
printf '%s\n' "${all[@]}" | grep -vx -e --keep -e --no-wait > "$run/args" || true

say "booting $kind on port $port (${mem} MiB, TCG): $append${dom0:+ | dom0: $dom0}"
# The golden image's disk: the overlay's backing file, read where the image lies.
lab_qemu "$run" "$run/overlay.qcow2" qcow2 "$port" "$mem" "$kind" "$append" "$dom0" "$golden" "$run/domu.qcow2" "$run/domu2.qcow2"
if [ "$wait" = no ]; then
    say "QEMU started ($(qemu_pid "$run")); not waiting for ssh (--no-wait): the serial log is $run/serial.log"
    exit 0
fi
trap 'kill_qemu "$run"' EXIT
secs=$(wait_ssh "$run" "$port" "$timeout") || exit 1
trap - EXIT
boot_id=$(lab_ssh "$port" cat /proc/sys/kernel/random/boot_id 2> /dev/null || true)
say "ssh answered after $secs s ($kind, boot_id $boot_id); the serial log: $run/serial.log"
ssh_line "$port"
