#!/usr/bin/env bash
# Seed 001's two guests at once, in the lab (docs/lab.md): boots the lab as a Xen 4.17
# dom0 (dom0_mem 768M), starts the guests margin-domu and margin-domu2 from it, runs
# lab/experiments/lab-gang.yaml as a user does (a scratch copy of lab/, a relative path,
# the default store, no MARGIN_*) — dd in each guest alone and in the gang `guests`, both
# at once — and checks the store: every trial ok, each gang trial with both members'
# throughput, their sum as the gang's, and its start skew as margin measured it; the
# trials of the three hosts' cells never overlapping on their shared machine; the
# report's start skew. Stops the lab at the end. 6–12 minutes under TCG.
#
# lab/gang.sh [MARGIN]   (default: the debug build, built first)
set -euo pipefail
source "$(dirname "$0")/lib.sh"
lab_begin lab-gang "${1:-}"
# the guests destroyed before the lab stops: the dom0's xendomains would take minutes to
# shut them down under TCG, past stop.sh's 90 s
trap 'stop_guests $port margin-domu margin-domu2; "$lab_dir/stop.sh" --port $port > /dev/null 2>&1 || true' EXIT

export MARGIN_LAB_CPU=$guest_cpu
"$lab_dir/boot.sh" xen dom0_mem=768M --port $port
start_guests $port 600 margin-domu=10.0.99.2 margin-domu2=10.0.99.3 || fail "the guests did not come up"
lab_ssh $port "xl list"
for a in 10.0.99.2 10.0.99.3; do
    echo "$a: $(guest_ssh $port $a 'hostname; date +%s.%N')" | tr '\n' ' '
    echo
done
echo "== margin run lab/experiments/lab-gang.yaml (each guest alone, and both at once)"
run_started=$(date +%s)
"$margin" run lab/experiments/lab-gang.yaml 2>&1 | tee run.log || fail "margin run"
echo "== margin run took $(($(date +%s) - run_started)) s"

python3 - reports/lab-gang <<'PY' || fail "the store"
import sys
sys.path.insert(0, "lab")
from store import lines, one_at_a_time, smallest_gap, summary

store = sys.argv[1]
trials = lines(store, "runs.ndjson")
ok = [x for x in trials if x.get("status") == "ok"]
assert len(ok) == len(trials) == 15, [(x["host"], x["status"], x.get("error")) for x in trials]
gang = [x for x in ok if x["host"] == "guests"]
assert len(gang) == 5, f"{len(gang)} gang trials"
skews = []
for x in gang:
    m = x["metrics"]
    a, b = m["throughput@domu"], m["throughput@domu2"]
    assert abs(m["throughput"] - (a + b)) <= 1e-6 * (a + b), f"not the sum: {m}"
    skews.append(x["telemetry"]["metrics"]["gang_start_skew"])
iv = one_at_a_time(trials)
print(f"no overlap between the cells' trials: {len(iv)} trials, smallest gap {smallest_gap(iv):.3f} s")
print("gang start skew (ms): " + ", ".join(f"{s * 1e3:.1f}" for s in skews)
      + "; the gang's wall times (s): " + ", ".join(f"{x['wall_time']:.2f}" for x in gang))
for h in ("domu", "domu2", "guests"):
    v = [x["metrics"]["throughput"] / 1e6 for x in ok if x["host"] == h and not x["warmup"]]
    print(f"{h}: throughput MB/s " + ", ".join(f"{y:.1f}" for y in v))
for x in gang:
    if not x["warmup"]:
        print(f"  gang trial: domu {x['metrics']['throughput@domu'] / 1e6:.1f} + domu2 "
              f"{x['metrics']['throughput@domu2'] / 1e6:.1f} MB/s")
summary = summary(store)
for w in summary["warnings"]:
    if w["kind"] == "gang_skew":
        print("gang_skew warning:", w["message"])
for c in summary["comparisons"]:
    print(f"verdict {c['level']} vs {c['baseline']} ({c['verdict']}): {c['sentence']}")
PY
grep -qi 'start skew' reports/lab-gang/report.md || fail "the report does not show the start skew"
grep -i 'start skew' reports/lab-gang/report.md | head -5
passed lab-gang
