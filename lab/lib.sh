# shellcheck shell=bash
# The lab's shared pieces, sourced by every lab script (docs/lab.md): the cache, ssh into
# the lab and its guests, QEMU, and the preamble of the scripts that drive margin.
# Everything lives under $MARGIN_LAB_CACHE (default ~/.cache/margin/lab), outside the
# repository: the ssh key pair, the golden image (golden-HASH/) and one folder per
# running lab (run-PORT/: the qcow2 overlay, QEMU's pidfile and the serial log).

lab_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cache=${MARGIN_LAB_CACHE:-$HOME/.cache/margin/lab}
key=$cache/id_ed25519

say() { printf 'lab: %s\n' "$*" >&2; }
die() { printf 'lab: %s\n' "$*" >&2; exit 1; }

# The key of the golden image: a hash of the image's recipe (build.sh) and of the public
# key it installs, so that a changed recipe builds a new image.
golden_hash() {
    cat "$lab_dir/build.sh" "$key.pub" | sha256sum | cut -c1-16
}
golden_dir() { printf '%s/golden-%s' "$cache" "$(golden_hash)"; }

ssh_opts() { # PORT
    printf '%s\n' -i "$key" -o IdentitiesOnly=yes -o BatchMode=yes \
        -o UserKnownHostsFile="$cache/known_hosts" -o HostKeyAlias=margin-lab \
        -o StrictHostKeyChecking=yes -o ConnectTimeout=10 -o LogLevel=ERROR -p "$1"
}
ssh_line() { # PORT: what a person types
    printf 'ssh -i %s -o UserKnownHostsFile=%s -o HostKeyAlias=margin-lab -p %s root@127.0.0.1\n' \
        "$key" "$cache/known_hosts" "$1"
}
lab_ssh() { # PORT COMMAND...
    local port=$1
    shift
    local opts
    mapfile -t opts < <(ssh_opts "$port")
    # shellcheck disable=SC2029 # COMMAND is the lab's shell's to expand, as ssh passes it
    ssh "${opts[@]}" root@127.0.0.1 "$@"
}

# The pid of the QEMU of run folder $1, when it is alive and is a QEMU (a stale pidfile
# whose number was reused by another process is not ours).
qemu_pid() {
    local pid
    [ -s "$1/qemu.pid" ] || return 1
    pid=$(cat "$1/qemu.pid")
    [ -d "/proc/$pid" ] && grep -q qemu-system "/proc/$pid/cmdline" 2> /dev/null || return 1
    printf '%s\n' "$pid"
}

# Start QEMU in the background:
#   lab_qemu RUNDIR DISK FORMAT PORT MEM_MIB KIND APPEND DOM0_ARGS IMAGE_DIR [DOMU_DISK [DOMU2_DISK]]
# KIND bare: -kernel vmlinuz -initrd initrd.img -append APPEND (the Linux command line).
# KIND xen: multiboot, -kernel xen (gunzipped), -append APPEND (Xen's command line), the
# modules "vmlinuz DOM0_ARGS" and initrd.img. The kernels are IMAGE_DIR's. DOMU_DISK, a
# qcow2 file, is the second disk (/dev/vdb): the PV domU's, which dom0 gives it;
# DOMU2_DISK the third (/dev/vdc), the second guest's (margin-domu2).
lab_qemu() {
    local run=$1 disk=$2 format=$3 port=$4 mem=$5 kind=$6 append=$7 dom0=$8 img=$9 domu=${10:-} domu2=${11:-}
    local boot=() second=()
    [ -z "$domu" ] || second=(-drive "file=$domu,if=virtio,format=qcow2")
    [ -z "$domu2" ] || second+=(-drive "file=$domu2,if=virtio,format=qcow2")
    case $kind in
        bare) boot=(-kernel "$img/vmlinuz" -initrd "$img/initrd.img" -append "$append") ;;
        # commas separate multiboot modules: the dom0 command line can hold none
        xen) boot=(-kernel "$img/xen" -append "$append" -initrd "$img/vmlinuz $dom0,$img/initrd.img") ;;
        *) die "kind: bare or xen, not $kind" ;;
    esac
    rm -f "$run/qemu.pid"
    : > "$run/serial.log"
    # KVM guests hang on this kind of machine (nested virtualisation is partial): TCG.
    # MARGIN_LAB_CPU: QEMU's CPU model (default max; lab/domu.sh takes one without AVX).
    qemu-system-x86_64 -accel tcg -cpu "${MARGIN_LAB_CPU:-max}" -smp 2 -m "$mem" \
        -display none -monitor none -serial "file:$run/serial.log" \
        -drive "file=$disk,if=virtio,format=$format" "${second[@]}" \
        -nic "user,model=virtio-net-pci,hostfwd=tcp:127.0.0.1:$port-:22" \
        "${boot[@]}" -daemonize -pidfile "$run/qemu.pid" 2> "$run/qemu.err" ||
        { cat "$run/qemu.err" >&2; die "QEMU did not start (above)"; }
}

# Kill the QEMU of RUNDIR (TERM, then KILL after 10 s) and wait until it is gone.
kill_qemu() {
    local pid
    pid=$(qemu_pid "$1") || return 0
    kill "$pid" 2> /dev/null || true
    for _ in $(seq 1 100); do
        [ -d "/proc/$pid" ] || return 0
        sleep 0.1
    done
    kill -9 "$pid" 2> /dev/null || true
    while [ -d "/proc/$pid" ]; do sleep 0.1; done
}

# Wait for an ssh login on PORT while the QEMU of RUNDIR lives: wait_ssh RUNDIR PORT TIMEOUT.
# Shows progress (elapsed seconds and the serial log's last line) every 15 s; prints the
# seconds it took. On a timeout or a dead QEMU: the serial log's last 30 lines, QEMU
# killed, status 1.
wait_ssh() {
    local run=$1 port=$2 timeout=$3 start now last=0 line
    start=$(date +%s)
    while :; do
        now=$(date +%s)
        if ! qemu_pid "$run" > /dev/null; then
            say "QEMU exited after $((now - start)) s; the serial log's last 30 lines ($run/serial.log):"
            tail -n 30 "$run/serial.log" | tr -d '\r' >&2
            cat "$run/qemu.err" >&2 2> /dev/null || true
            return 1
        fi
        if lab_ssh "$port" true 2> /dev/null; then
            printf '%s\n' "$((now - start))"
            return 0
        fi
        if [ $((now - start)) -ge "$timeout" ]; then
            say "no ssh on port $port after $timeout s; the serial log's last 30 lines ($run/serial.log):"
            tail -n 30 "$run/serial.log" | tr -d '\r' >&2
            kill_qemu "$run"
            say "QEMU stopped"
            return 1
        fi
        if [ $((now - last)) -ge 15 ]; then
            last=$now
            line=$(tail -c 2000 "$run/serial.log" | tr -d '\r' | grep -a . | tail -n 1 | cut -c1-100)
            say "$((now - start)) s, waiting for ssh… ${line:+[$line]}"
        fi
        sleep 3
    done
}

# The margin a lab script drives: the one given, else the repository's debug build, built
# first (cargo's progress on stderr). REPO [MARGIN]
margin_binary() {
    if [ -n "${2:-}" ]; then
        printf '%s\n' "$2"
        return
    fi
    (cd "$1" && cargo build --quiet --bin margin) >&2
    printf '%s\n' "${CARGO_TARGET_DIR:-$1/target}/debug/margin"
}

# Run margin as a user does, from a scratch copy of lab/ (the experiments' relative paths,
# `lab/reboot.sh` among them, hold there; the default store lands under it) with no
# MARGIN_* in the environment: sets $work and enters it. Not in a subshell: enter_scratch.
enter_scratch() {
    work=$(mktemp -d)
    cp -r "$lab_dir" "$work/lab"
    cd "$work" || die "cannot enter $work"
    local v
    for v in $(compgen -e | grep '^MARGIN_' || true); do unset "$v"; done
}

# The start of a lab script that drives margin: $margin (the one given, else the debug
# build), the lab on $port 2222 and stopped when the script ends, whichever way (a script
# whose guests must go first sets its own trap after), the script in a scratch copy of
# lab/ (enter_scratch), and $started, when its lab work began. NAME is what `fail` and
# `passed` say. lab_begin NAME [MARGIN]
lab_begin() {
    lab_name=$1
    # shellcheck disable=SC2034 # the sourcing script runs "$margin"
    margin=$(margin_binary "$(dirname "$lab_dir")" "${2:-}")
    port=2222
    trap '"$lab_dir/stop.sh" --port $port > /dev/null 2>&1 || true' EXIT
    enter_scratch
    started=$(date +%s)
}

# A lab script's check failed: fail WHAT (after lab_begin).
fail() { echo "$lab_name: FAILED: $*" >&2; exit 1; }

# A lab script's end, its time and its store: passed STORE (the store's name under
# reports/ of the scratch copy).
passed() { echo "$lab_name: passed in $(($(date +%s) - started)) s (store: $work/reports/$1)"; }

# QEMU's CPU model for a lab whose PV guests boot (MARGIN_LAB_CPU): one without AVX. With
# QEMU 7.2's `max` (AVX, XSAVE of YMM state under TCG) the guest's systemd crashed in 2 of
# 4 boots (segfaults in libc); with Nehalem 4 of 4 came up.
# shellcheck disable=SC2034 # used by the scripts that source this file
guest_cpu=Nehalem

# ssh into a PV guest of the lab of PORT, through its dom0 (as the experiments' hosts do:
# ProxyCommand): guest_ssh PORT ADDRESS COMMAND...
guest_ssh() {
    local port=$1 address=$2
    shift 2
    local opts proxy
    mapfile -t opts < <(ssh_opts 22)
    proxy="ssh $(ssh_opts "$port" | tr '\n' ' ')-W %h:%p root@127.0.0.1"
    ssh "${opts[@]}" -o ProxyCommand="$proxy" "root@$address" "$@"
}

# Start PV guests from the lab's dom0 (`xl create -e`, all at once) and wait for each
# one's ssh through the dom0: start_guests PORT TIMEOUT NAME=ADDRESS... Says when each
# answered (seconds from the first xl create); on a timeout `xl list` and status 1.
start_guests() {
    local port=$1 timeout=$2 g name address start now last=0
    shift 2
    start=$(date +%s)
    for g in "$@"; do
        name=${g%%=*}
        lab_ssh "$port" "xl create -e /etc/xen/$name.cfg" > /dev/null || { say "xl create $name failed"; return 1; }
    done
    for g in "$@"; do
        name=${g%%=*} address=${g#*=}
        until guest_ssh "$port" "$address" true 2> /dev/null; do
            now=$(date +%s)
            if [ $((now - start)) -ge "$timeout" ]; then
                say "no ssh in the guest $name ($address) after $timeout s; xl list on the dom0:"
                lab_ssh "$port" "xl list" >&2 || true
                return 1
            fi
            if [ $((now - last)) -ge 30 ]; then
                last=$now
                say "$((now - start)) s, waiting for the guest $name's ssh ($address)…"
            fi
            sleep 5
        done
        say "the guest $name ($address) answered after $(($(date +%s) - start)) s"
    done
}

# Destroy PV guests of the lab of PORT (no clean shutdown): stop_guests PORT NAME...
stop_guests() {
    local port=$1 name
    shift
    for name in "$@"; do lab_ssh "$port" "xl destroy $name" > /dev/null 2>&1 || true; done
}
