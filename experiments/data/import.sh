#!/usr/bin/env bash
# Re-analyse the seed posts: import every figure the posts give as tool output into its
# experiment's store, then write each experiment's report.
#
#   experiments/data/import.sh MARGIN REPORTS
#
# MARGIN is the margin binary, REPORTS the store root (`reports` for the committed
# reports; the test suite uses a temporary folder). The stores of the four experiments
# below are rebuilt from scratch, in a fixed order, so that the same binary writes the
# same reports; a store holding trials that were not imported (a real run) is never
# touched: the script stops instead. Which file is which cell: experiments/data/README.md.
set -euo pipefail

if [ $# -ne 2 ]; then
    echo "usage: $0 MARGIN REPORTS" >&2
    exit 2
fi
margin=$1
case $margin in
    */*) margin=$(cd "$(dirname "$margin")" && pwd)/$(basename "$margin") ;;
esac
mkdir -p "$2"
reports=$(cd "$2" && pwd)
# Paths in the stores (each trial's `source`) are relative to the repository's root.
cd "$(dirname "$0")/../.."

data=experiments/data
experiments=(xen-dnetc xen-bonnie xen-iozone xen-dd)

for name in "${experiments[@]}"; do
    store=$reports/$name
    if [ -s "$store/runs.ndjson" ] && grep -qv '"status":"imported"' "$store/runs.ndjson"; then
        echo "error: $store holds trials that were run, not imported; move it aside first" >&2
        exit 2
    fi
done
for name in "${experiments[@]}"; do
    rm -rf "${reports:?}/$name"
done

import() {
    "$margin" import --reports "$reports" "$@"
}

# seed 000: dnetc -bench, one run per kernel, split per benchmark core; both kernels
# booted on the one server the post describes (its bonnie++ rows call it quadopt), each
# once: every core's figure of a kernel comes from that kernel's one boot (--boot), so
# the comparison across boots is unreplicated, however the cores pair up.
for kernel in bare xen; do
    for core in 0 1 2 3 4; do
        import experiments/xen-dnetc.yaml --set host=quadopt --boot quadopt-$kernel \
            --set kernel=$kernel --set contest=RC5-72 --set core=$core \
            $data/seed000/dnetc-$kernel-rc5-72-core$core.txt
    done
    import experiments/xen-dnetc.yaml --set host=quadopt --boot quadopt-$kernel \
        --set kernel=$kernel --set contest=OGR-P2 --set core=0 \
        $data/seed000/dnetc-$kernel-ogr-p2-core0.txt
done

# seed 000: bonnie++, one row per trial, each series run back to back.
import experiments/xen-bonnie.yaml --set host=dom0 --set disk=lvm --set size=5000 \
    $data/seed000/bonnie-dom0-lvm.csv
import experiments/xen-bonnie.yaml --set host=domu --set disk=lvm --set size=5000 \
    $data/seed000/bonnie-domu-lvm.csv
import experiments/xen-bonnie.yaml --set host=domu --set disk=device --set size=5000 \
    $data/seed000/bonnie-domu-xvdb1.csv

# seed 001: iozone, the two guests at once on a Thursday evening, the host alone the
# next morning. The guests wrote at the same time: one trial of the gang `guests`, one
# output per member (its start skew is unknown: only a run measures it). The times are
# the outputs' "Run began:" lines, the machines' local time (the post does not give the
# zone; margin takes a time without one as UTC, and only the hours between them matter
# here); the gang's is the earlier of its members', u1's.
import experiments/xen-iozone.yaml --set host=guests --started-at "2006-11-23 18:25:41" \
    --member u0=$data/seed001/iozone-u0.txt --member u1=$data/seed001/iozone-u1.txt
import experiments/xen-iozone.yaml --set host=dom0 --started-at "2006-11-24 09:05:23" \
    $data/seed001/iozone-dom0.txt

# seed 002: dd without a sync flag, once per boot. `pin=floating` for the two unpinned
# configurations is the README's reading of the post.
dd_cell=(--set host=xen1 --set bs=1k --set count=3145728 --set sync=none)
# One boot each (--boot): the three figures are three configurations' single boots.
import experiments/xen-dd.yaml "${dd_cell[@]}" --set kernel=xen --set dom0_mem=2048M \
    --set dom0_max_vcpus=2 --set pin=pinned --boot xen-2048M \
    $data/seed002/dd-xen-dom0mem2048M-2vcpus-pinned.txt
import experiments/xen-dd.yaml "${dd_cell[@]}" --set kernel=xen --set dom0_mem=unlimited \
    --set dom0_max_vcpus=all --set pin=floating --boot xen-unlimited $data/seed002/dd-xen-unlimited.txt
import experiments/xen-dd.yaml "${dd_cell[@]}" --set kernel=bare --set dom0_mem=unlimited \
    --set dom0_max_vcpus=all --set pin=floating --boot bare $data/seed002/dd-bare.txt

# seeds 003 and 004 posted only tables of their own: nothing to import (see README.md).

for name in "${experiments[@]}"; do
    "$margin" report --reports "$reports" "experiments/$name.yaml"
done
