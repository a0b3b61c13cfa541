#!/usr/bin/env bash
# Bare against Xen dom0 against domU in one run, every boot margin's (docs/lab.md): boots
# the lab bare, runs lab/experiments/lab-systems.yaml as a user does (a scratch copy of
# lab/, a relative path, the default store, no MARGIN_*), and checks the boot log and the
# summary: each of the 3 levels (bare, dom0, domu) booted twice and verified, each block
# of 3 boots every level once, every boot a new boot_id, the system read off the booted
# host the one asked for, 4 trials per level, a comparison of dom0 and of domu with bare,
# and the report's Boots section. Stops the lab at the end. 20–40 minutes under TCG.
#
# lab/systems.sh [MARGIN]   (default: the debug build, built first)
set -euo pipefail
source "$(dirname "$0")/lib.sh"
lab_begin lab-systems "${1:-}"

MARGIN_LAB_CPU=$guest_cpu "$lab_dir/boot.sh" bare --port $port
echo "== margin run lab/experiments/lab-systems.yaml (margin reboots the lab 6 times)"
"$margin" run lab/experiments/lab-systems.yaml || fail "margin run"

python3 - reports/lab-systems <<'EOF_PY' || fail "the boot log or the summary"
import sys
sys.path.insert(0, "lab")
from store import measured, per_level, summary, verified_boots
store = sys.argv[1]
verified = verified_boots(store, "system", 3, count=6)
assert {r["wanted"]["system"] for r in verified} == {"bare", "dom0", "domu"}
per = per_level(measured(store), "system")
assert per == {"bare": 4, "dom0": 4, "domu": 4}, f"trials per level: {per}"
comparisons = summary(store)["comparisons"]
against = sorted(c["level"] for c in comparisons if c["factor"] == "system")
assert against == ["dom0", "domu"], f"comparisons: {against}"
print("boots verified in order: " + ", ".join(f"{r['wanted']['system']} {r['ready_seconds']:.0f} s" for r in verified))
for c in comparisons:
    print(f"{c['level']} against {c['baseline']}: {c['verdict']}: {c['sentence']}")
EOF_PY
grep -q '^## Boots' reports/lab-systems/report.md || fail "no Boots section in the report"
passed lab-systems
