#!/usr/bin/env bash
# Build the lab's golden image once (docs/lab.md): a Debian bookworm root file system made
# by mmdebstrap from Debian's packages (the kernel, openssh-server, Xen 4.17), on a raw
# disk with one ext4 partition (/dev/vda1), root's ssh login by the lab's key, booted
# once (a fresh image's first boot is its slowest) and shut down cleanly.
#
#   lab/build.sh          nothing to do when the image of this recipe exists
#
# Output: $MARGIN_LAB_CACHE/golden-HASH/ (disk.raw, domu.raw and domu2.raw: the PV domUs'
# disks, vmlinuz, initrd.img, xen), HASH that
# of this file and of the public key; an image of an older recipe is removed. The apt
# sources are the host's own (/etc/apt/sources.list and sources.list.d), read here at
# build time, so the repository names no mirror.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

suite=bookworm
size_mib=3072
domu_mib=1200
# e2fsprogs: the initramfs's fsck of the root file system; bonnie++: seed 000 in the lab;
# time (GNU time, /usr/bin/time -v) and sysbench: benchmarks margin parses, for a user's own
packages=(
    systemd-sysv udev kmod ifupdown isc-dhcp-client iproute2 netbase procps e2fsprogs
    openssh-server linux-image-amd64 xen-system-amd64 bonnie++ time sysbench
)

for tool in mmdebstrap qemu-system-x86_64 qemu-img mkfs.ext4 sfdisk ssh-keygen; do
    command -v "$tool" > /dev/null || PATH=$PATH:/usr/sbin command -v "$tool" > /dev/null ||
        die "$tool is missing: just _install mmdebstrap qemu-system-x86 qemu-utils e2fsprogs fdisk openssh-client"
done
[ "$(id -u)" = 0 ] || die "building the image needs root (mmdebstrap's root mode, the image's owners)"

mkdir -p "$cache"
[ -s "$key" ] || { say "a new ssh key pair: $key"; ssh-keygen -q -t ed25519 -N '' -C margin-lab -f "$key"; }

golden=$(golden_dir)
if [ -e "$golden/done" ]; then
    say "the image is up to date: $golden"
    exit 0
fi

# The host's apt sources, the suite names of the host's release replaced by bookworm's.
sources=()
host_suite=$(. /etc/os-release && printf '%s' "${VERSION_CODENAME:-}")
tmp=$golden.tmp
rm -rf "$tmp"
mkdir -p "$tmp/sources"
for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources; do
    if ! [ -f "$f" ] || ! grep -q '^[^#]' "$f"; then continue; fi
    out=$tmp/sources/$(basename "$f")
    if [ -n "$host_suite" ] && [ "$host_suite" != "$suite" ]; then
        sed "s/\b$host_suite\b/$suite/g" "$f" > "$out"
    else
        cp "$f" "$out"
    fi
    sources+=("$out")
done
[ ${#sources[@]} -gt 0 ] || die "no apt sources on this host (/etc/apt/sources.list, sources.list.d)"

started=$(date +%s)
say "1/4 mmdebstrap $suite (${packages[*]}); a few minutes"
say "    (\"Failed to connect to bus\" below is harmless: packages' install scripts asking for a systemd that does not run in the image being built)"
pub=$(cat "$key.pub")
# shellcheck disable=SC2016 # $1 is mmdebstrap's, the chroot's folder
mmdebstrap --variant=minbase --include="$(IFS=,; printf '%s' "${packages[*]}")" \
    --customize-hook='echo margin-lab > "$1/etc/hostname"' \
    --customize-hook='printf "127.0.0.1 localhost\n127.0.1.1 margin-lab\n" > "$1/etc/hosts"' \
    --customize-hook='echo "/dev/vda1 / ext4 errors=remount-ro 0 1" > "$1/etc/fstab"' \
    --customize-hook='printf "auto lo\niface lo inet loopback\n\nauto eth0\niface eth0 inet dhcp\n" > "$1/etc/network/interfaces"' \
    --customize-hook='printf "%s\n" "" "# the PV domU network: a bridge of its own, no uplink" "auto xenbr0" "iface xenbr0 inet static" \
        "    address 10.0.99.1/24" "    pre-up ip link add xenbr0 type bridge" "    post-down ip link del xenbr0" >> "$1/etc/network/interfaces"' \
    --customize-hook='printf "%s\n" "name = \"margin-domu\"" "type = \"pv\"" "kernel = \"/vmlinuz\"" "ramdisk = \"/initrd.img\"" \
        "extra = \"root=/dev/xvda ro console=hvc0 net.ifnames=0\"" "memory = 384" "vcpus = 1" \
        "disk = [ \"phy:/dev/vdb,xvda,w\" ]" "vif = [ \"bridge=xenbr0\" ]" > "$1/etc/xen/margin-domu.cfg"' \
    --customize-hook='printf "%s\n" "name = \"margin-domu2\"" "type = \"pv\"" "kernel = \"/vmlinuz\"" "ramdisk = \"/initrd.img\"" \
        "extra = \"root=/dev/xvda ro console=hvc0 net.ifnames=0\"" "memory = 384" "vcpus = 1" \
        "disk = [ \"phy:/dev/vdc,xvda,w\" ]" "vif = [ \"bridge=xenbr0\" ]" > "$1/etc/xen/margin-domu2.cfg"' \
    --customize-hook='sed -i "s/^XENDOMAINS_SAVE=.*/XENDOMAINS_SAVE=/; s/^XENDOMAINS_RESTORE=.*/XENDOMAINS_RESTORE=false/" "$1/etc/default/xendomains"' \
    --customize-hook="mkdir -p -m 700 \"\$1/root/.ssh\" && echo '$pub' > \"\$1/root/.ssh/authorized_keys\"" \
    --customize-hook='chroot "$1" systemctl mask apt-daily.timer apt-daily-upgrade.timer e2scrub_all.timer fstrim.timer' \
    --customize-hook='rm -f "$1/etc/ssh/ssh_host_"*; chroot "$1" ssh-keygen -A' \
    --customize-hook='cp "$1/etc/ssh/ssh_host_ed25519_key.pub" "$1/../host_key.pub"' \
    --customize-hook='cp -L "$1/vmlinuz" "$1/../vmlinuz" && cp -L "$1/initrd.img" "$1/../initrd.img"' \
    --customize-hook='gunzip -c "$(ls "$1"/boot/xen-*-amd64.gz | sort -V | tail -n 1)" > "$1/../xen"' \
    "$suite" "$tmp/root" "${sources[@]}"
say "1/4 done after $(($(date +%s) - started)) s"

say "2/4 the PV domUs' disks: copies of the tree as margin-domu and margin-domu2, whole-disk ext4 (their /dev/xvda)"
# The same packages, keys and host key as dom0 (the lab's known_hosts entry fits all);
# each its own name, root device and address on dom0's bridge (xenbr0, 10.0.99.1):
# margin-domu 10.0.99.2 (domu.raw), margin-domu2 10.0.99.3 (domu2.raw, for a gang of two).
cp -a "$tmp/root" "$tmp/domu-root"
rm -f "$tmp/domu-root"/boot/xen-* "$tmp/domu-root"/etc/xen/margin-domu*.cfg
echo "/dev/xvda / ext4 errors=remount-ro 0 1" > "$tmp/domu-root/etc/fstab"
# No Xen daemons in a guest, nor e2scrub's clean-up of snapshots it never makes: under TCG
# inside a TCG dom0 these held its boot for minutes (its ssh after over 420 s, three times,
# on a machine busy compiling; 92–125 s on a quiet one)
for unit in xen xendomains e2scrub_reap; do
    ln -sf /dev/null "$tmp/domu-root/etc/systemd/system/$unit.service"
done
for guest in "margin-domu 10.0.99.2 domu.raw" "margin-domu2 10.0.99.3 domu2.raw"; do
    read -r name address file <<< "$guest"
    echo "$name" > "$tmp/domu-root/etc/hostname"
    printf '127.0.0.1 localhost\n127.0.1.1 %s\n' "$name" > "$tmp/domu-root/etc/hosts"
    printf 'auto lo\niface lo inet loopback\n\nauto eth0\niface eth0 inet static\n    address %s/24\n' \
        "$address" > "$tmp/domu-root/etc/network/interfaces"
    truncate -s "${domu_mib}M" "$tmp/$file"
    PATH=$PATH:/usr/sbin mkfs.ext4 -q -F -L "$name" -E lazy_itable_init=0,lazy_journal_init=0 \
        -d "$tmp/domu-root" "$tmp/$file"
done
rm -rf "$tmp/domu-root"

say "2/4 the disk: ${size_mib} MiB raw, one ext4 partition"
truncate -s "${size_mib}M" "$tmp/disk.raw"
printf 'label: dos\nstart=2048, type=83\n' | sfdisk --quiet "$tmp/disk.raw"
# Inode tables and the journal written now: the lazy init would write them on the first
# boots, slowly under TCG, and into the dd experiments' measurements.
PATH=$PATH:/usr/sbin mkfs.ext4 -q -F -L margin-lab -E offset=1048576,lazy_itable_init=0,lazy_journal_init=0 \
    -d "$tmp/root" "$tmp/disk.raw" "$(((size_mib - 1) * 1024))k"
rm -rf "$tmp/root"
printf 'margin-lab %s\n' "$(cut -d' ' -f1,2 "$tmp/host_key.pub")" > "$tmp/known_hosts"
say "2/4 done after $(($(date +%s) - started)) s"

say "3/4 the first boot (bare, on the raw disk), then a clean shutdown"
port=${MARGIN_LAB_BUILD_PORT:-2299}
run=$cache/run-build
mkdir -p "$run"
kill_qemu "$run"
cp "$tmp/known_hosts" "$cache/known_hosts"
lab_qemu "$run" "$tmp/disk.raw" raw "$port" 2048 bare "root=/dev/vda1 ro console=ttyS0 net.ifnames=0" "" "$tmp"
trap 'kill_qemu "$run"' EXIT
secs=$(wait_ssh "$run" "$port" "${MARGIN_LAB_TIMEOUT:-600}") || die "the first boot failed (above); the image stays unfinished in $tmp"
say "3/4 ssh answered after $secs s on the first boot"
lab_ssh "$port" 'systemctl poweroff' || true
for _ in $(seq 1 120); do qemu_pid "$run" > /dev/null || break; sleep 1; done
if qemu_pid "$run" > /dev/null; then
    kill_qemu "$run"
    die "no clean shutdown after 120 s; the serial log: $run/serial.log"
fi
trap - EXIT
say "3/4 done after $(($(date +%s) - started)) s"

say "4/4 keeping it as the golden image"
for old in "$cache"/golden-*; do
    [ "$old" != "$tmp" ] && [ -e "$old" ] && rm -rf "$old"
done
mv "$tmp" "$golden"
cp "$golden/known_hosts" "$cache/known_hosts"
date -u +%FT%TZ > "$golden/done"
say "built in $(($(date +%s) - started)) s: $golden"
