#!/usr/bin/env bash
# A PV domU booted by its dom0, in the lab (docs/lab.md): boots the lab as a Xen 4.17 dom0
# (dom0_mem 768M), runs lab/experiments/lab-domu.yaml as a user does (a scratch copy of
# lab/, a relative path, the default store, no MARGIN_*) — margin restarting the guest
# margin-domu through its dom0 (`boot: { by: dom0 }`, `xl create` with 1 or 2 vCPUs) —
# and checks the boot log and the summary: 4 boots verified, the vCPUs read in each guest
# those asked for, a new boot_id each, every block both levels, the trials in the guest,
# the guest left running with the last boot's vCPUs. Stops the lab at the end. 5–15
# minutes under TCG.
#
# lab/domu.sh [MARGIN]   (default: the debug build, built first)
set -euo pipefail
source "$(dirname "$0")/lib.sh"
lab_begin lab-domu "${1:-}"

export MARGIN_LAB_CPU=$guest_cpu
"$lab_dir/boot.sh" xen dom0_mem=768M --port $port
echo "== margin run lab/experiments/lab-domu.yaml (margin restarts the guest through its dom0)"
"$margin" run lab/experiments/lab-domu.yaml 2>&1 | tee run.log || fail "margin run"

python3 - reports/lab-domu <<'PY' || fail "the boot log or the summary"
import sys
sys.path.insert(0, "lab")
from store import lines, measured, summary, verified_boots
store = sys.argv[1]
verified = verified_boots(store, "vcpus", 2, count=4, retried=True)
failed = [r for r in lines(store, "boots.ndjson") if r["event"] in ("rejected", "lost")]
assert {r["wanted"]["vcpus"] for r in verified} == {"1", "2"}
ok = measured(store)
assert len(ok) == 8 and all(t["host"] == "domu" for t in ok), [(t["host"], t["status"]) for t in ok]
c = summary(store)["comparisons"][0]
times = ", ".join(f"vcpus={r['wanted']['vcpus']} {r['ready_seconds']:.0f} s" for r in verified)
print(f"guest boots verified in order: {times}; failed tries: {len(failed)}")
print(f"verdict ({c['verdict']}): {c['sentence']}")
PY
last=$(python3 -c 'import json; print([json.loads(l) for l in open("reports/lab-domu/boots.ndjson") if "verified" in l][-1]["wanted"]["vcpus"])')
running=$(lab_ssh $port "xl list margin-domu | awk 'NR == 2 { print \$4 }'") || fail "xl list on dom0"
[ "$running" = "$last" ] || fail "the guest runs with $running vCPUs, the last boot wanted $last"
grep -q '## Boots' reports/lab-domu/report.md || fail "the report has no Boots section"
passed lab-domu
