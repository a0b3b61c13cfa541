#!/usr/bin/env bash
# Seed 000's bonnie++ in the lab (docs/lab.md): boots the lab as a Xen 4.17 dom0
# (dom0_mem 768M), starts the guest margin-domu from it, runs
# lab/experiments/lab-bonnie.yaml as a user does (a scratch copy of lab/, a relative path,
# the default store, no MARGIN_*) — bonnie++ with O_DIRECT in the dom0 and in the guest,
# taking turns on their shared machine — and checks the store: every trial ok with
# bonnie++'s block write, rewrite, read and seeks parsed, the hosts' trials never
# overlapping, a verdict per metric. Stops the lab at the end. About 25 minutes under TCG
# (a trial 80–100 s in the dom0, 250–280 s in the guest).
#
# lab/bonnie.sh [MARGIN]   (default: the debug build, built first)
set -euo pipefail
source "$(dirname "$0")/lib.sh"
lab_begin lab-bonnie "${1:-}"
# the guests destroyed before the lab stops: the dom0's xendomains would take minutes to
# shut them down under TCG, past stop.sh's 90 s
trap 'stop_guests $port margin-domu; "$lab_dir/stop.sh" --port $port > /dev/null 2>&1 || true' EXIT

export MARGIN_LAB_CPU=$guest_cpu
"$lab_dir/boot.sh" xen dom0_mem=768M --port $port
start_guests $port 420 margin-domu=10.0.99.2 || fail "the guest did not come up"
echo "== margin run lab/experiments/lab-bonnie.yaml (bonnie++ in the dom0 and in the domU)"
run_started=$(date +%s)
"$margin" run lab/experiments/lab-bonnie.yaml 2>&1 | tee run.log || fail "margin run"
echo "== margin run took $(($(date +%s) - run_started)) s"

python3 - reports/lab-bonnie <<'PY' || fail "the store"
import sys
from itertools import pairwise
sys.path.insert(0, "lab")
from store import lines, one_at_a_time, smallest_gap, summary

store = sys.argv[1]
trials = lines(store, "runs.ndjson")
ok = [x for x in trials if x.get("status") == "ok"]
assert len(ok) == len(trials) == 6, [(x["host"], x["status"], x.get("error")) for x in trials]
wanted = ("put_block", "rewrite", "get_block", "seeks")
for x in ok:
    missing = [m for m in wanted if m not in x["metrics"]]
    assert not missing, f"trial {x['trial']} on {x['host']}: no {missing}"
iv = one_at_a_time(trials)
print(f"no overlap: {len(iv)} trials, smallest gap {smallest_gap(iv):.3f} s, "
      f"host switches {sum(1 for a, b in pairwise(iv) if a[2] != b[2])}")
for h in ("dom0", "domu"):
    xs = [x for x in ok if x["host"] == h]
    cells = "; ".join(
        f"{m} " + ", ".join(f"{x['metrics'][m] / (2**20 if m != 'seeks' else 1):.1f}" for x in xs)
        for m in wanted)
    walls = ", ".join(f"{x['wall_time']:.0f}" for x in xs)
    print(f"{h} (MiB/s; seeks/s): {cells}; wall {walls} s")
comparisons = summary(store)["comparisons"]
assert comparisons, "no comparison"
for c in comparisons:
    print(f"{c['metric']} ({c['verdict']}): {c['sentence']}")
PY
passed lab-bonnie
