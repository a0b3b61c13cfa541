#!/usr/bin/env bash
# Start PV guests from the dom0 of a lab booted as Xen, and let the dom0 reach them
# (docs/lab.md, bare, dom0 and domU in one run): `xl create -e` each, wait for its ssh
# through the dom0, then give the dom0 the lab's key and pin the guests' host key (their
# disks are copies of the dom0's tree: its own key), so that a command run in the dom0
# can `ssh root@ADDRESS` into a guest. Part of a boot recipe:
# `lab/reboot.sh xen … && lab/guest.sh margin-domu=10.0.99.2`.
#
#   lab/guest.sh NAME=ADDRESS… [--port N] [--timeout S]
set -euo pipefail
source "$(dirname "$0")/lib.sh"

port=2222 timeout=420 guests=()
while [ $# -gt 0 ]; do
    case $1 in
        --port) port=$2; shift 2 ;;
        --timeout) timeout=$2; shift 2 ;;
        *=*) guests+=("$1"); shift ;;
        *) die "usage: lab/guest.sh NAME=ADDRESS… [--port N] [--timeout S]" ;;
    esac
done
[ ${#guests[@]} -gt 0 ] || die "usage: lab/guest.sh NAME=ADDRESS… [--port N] [--timeout S]"
start_guests "$port" "$timeout" "${guests[@]}" || die "the guests did not come up (above)"
lab_ssh "$port" 'umask 077; mkdir -p /root/.ssh; cat > /root/.ssh/id_ed25519' < "$key"
for g in "${guests[@]}"; do
    lab_ssh "$port" "grep -q '^${g#*=} ' /root/.ssh/known_hosts 2> /dev/null ||
        echo \"${g#*=} \$(cut -d' ' -f1,2 /etc/ssh/ssh_host_ed25519_key.pub)\" >> /root/.ssh/known_hosts"
    lab_ssh "$port" "ssh -o BatchMode=yes root@${g#*=} true" || die "the dom0 cannot ssh into ${g%%=*} (${g#*=})"
done
say "the dom0 reaches ${guests[*]}"
