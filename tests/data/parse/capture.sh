#!/usr/bin/env bash
# Re-capture the real-tool fixtures of the parse tests on this machine.
#
# Usage: bash tests/data/parse/capture.sh [OUTDIR]   (default: the directory of this script)
# Needs: fio sysbench iperf3 bonnie++ hyperfine time (Debian packages), GNU dd; run as root
# (bonnie++ wants -u when root). Every fixture name carries the tool version, because the
# formats drift between versions and a test should say which one it pins.
# The values asserted by the tests are those of the committed files, so re-capturing means
# updating the expected numbers too.
set -euo pipefail

out=$(realpath "${1:-$(dirname "$0")}")
mkdir -p "$out"
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
cd "$scratch"

fio_v=$(fio --version)                                           # fio-3.33
sysbench_v=$(sysbench --version | awk '{print $2}')              # 1.0.20
iperf3_v=$(iperf3 --version | awk 'NR==1{print $2}')             # 3.12
hyperfine_v=$(hyperfine --version | awk '{print $2}')            # 1.15.0
dd_v=$(dd --version | awk 'NR==1{print $NF}')                    # 9.1
bonnie_v=$(dpkg-query -W -f '${Version}' bonnie++ | cut -d+ -f1) # 2.00a
time_v=$(dpkg-query -W -f '${Version}' time | cut -d- -f1)       # 1.9

# --- dd (coreutils): the summary goes to stderr -----------------------------------------
dd if=/dev/zero of=zero.tst bs=1M count=17 conv=fdatasync 2> "$out/dd-$dd_v-fdatasync.txt"
dd if=/dev/zero of=/dev/null bs=1M count=4096 2> "$out/dd-$dd_v-gbs.txt"
dd if=/dev/zero of=/dev/null bs=1 count=100 2> "$out/dd-$dd_v-100-bytes.txt"
printf x | dd of=/dev/null 2> "$out/dd-$dd_v-one-byte.txt"
head -c 1000 /dev/zero | dd of=/dev/null bs=512 2> "$out/dd-$dd_v-partial.txt"

# --- /usr/bin/time -v around dd: both write to stderr -------------------------------------
/usr/bin/time -v dd if=/dev/zero of=zero.tst bs=1M count=16 conv=fdatasync \
    2> "$out/time-$time_v-dd.txt"

# --- fio: JSON with a note printed before it (iodepth with a sync engine), json+, an error -
# Options before the first --name are global; --stonewall puts the second job in group 1.
fio --directory="$scratch" --size=8M --bs=4k --ioengine=psync --iodepth=4 \
    --name=seqread --rw=read --name=randwrite --rw=randwrite --stonewall \
    --output-format=json > "$out/fio-${fio_v#fio-}.json"
# Two jobs in one group (no --stonewall) so the group totals differ from each job's.
fio --name=randrw --directory="$scratch" --size=8M --bs=4k --rw=randrw --numjobs=2 \
    --ioengine=sync --output-format=json+ > "$out/fio-${fio_v#fio-}-jsonplus.json"
fio --name=bad --filename=/proc/version --rw=write --size=8M --bs=4k \
    --output-format=json > "$out/fio-${fio_v#fio-}-error.json" \
    2> "$out/fio-${fio_v#fio-}-error.stderr" || true
# --steadystate: a criterion met within the runtime (fio stops the job, attained 1) and
# one it cannot meet (a slope of 0.0001 %: attained 0). --ss_dur must hold two samples
# at least: with one, fio 3.33 prints `-nan` and the JSON does not parse.
fio --directory="$scratch" --size=8M --bs=4k --ioengine=psync --name=ssread --rw=randread \
    --time_based --runtime=4 --steadystate=iops:50% --ss_dur=2 \
    --output-format=json > "$out/fio-${fio_v#fio-}-steadystate-attained.json"
fio --directory="$scratch" --size=8M --bs=4k --ioengine=psync --name=ssread --rw=randread \
    --time_based --runtime=3 --steadystate=iops_slope:0.0001% --ss_dur=2 \
    --output-format=json > "$out/fio-${fio_v#fio-}-steadystate-not-attained.json"

# --- sysbench 1.0 ---------------------------------------------------------------------
sysbench cpu --time=2 run > "$out/sysbench-$sysbench_v-cpu.txt"
sysbench memory --time=2 run > "$out/sysbench-$sysbench_v-memory.txt"
sysbench fileio --file-total-size=32M --file-num=4 prepare > /dev/null
sysbench fileio --file-total-size=32M --file-num=4 --file-test-mode=rndrw --time=3 run \
    > "$out/sysbench-$sysbench_v-fileio.txt"
sysbench fileio --file-total-size=32M --file-num=4 cleanup > /dev/null

# --- iperf3 -J over loopback: TCP, UDP, and a refused connection ------------------------
port=15201
iperf3 -s -p "$port" > /dev/null 2>&1 &
server=$!
sleep 1
iperf3 -c 127.0.0.1 -p "$port" -t 2 -J > "$out/iperf3-$iperf3_v-tcp.json"
iperf3 -c 127.0.0.1 -p "$port" -t 2 -u -b 200M -J > "$out/iperf3-$iperf3_v-udp.json"
kill "$server"
wait "$server" 2>/dev/null || true
iperf3 -c 127.0.0.1 -p "$port" -t 1 -J > "$out/iperf3-$iperf3_v-refused.json" || true

# --- bonnie++: CSV on stdout with -q; two rows with -x 2, the header with -x ------------
bonnie++ -d "$scratch" -s 64 -r 32 -n 1 -u root -q -x 2 \
    > "$out/bonnie++-$bonnie_v.csv" 2>/dev/null

# --- hyperfine --export-json ----------------------------------------------------------
hyperfine --runs 5 --warmup 1 --export-json "$out/hyperfine-$hyperfine_v.json" \
    'sleep 0.01' 'dd if=/dev/zero of=/dev/null bs=1M count=64' > /dev/null 2>&1

echo "captured into $out"
