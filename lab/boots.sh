#!/usr/bin/env bash
# margin doing every boot of an experiment in the lab (docs/lab.md, "margin reboots the
# lab itself"): boots the lab bare, runs lab/experiments/lab-boots.yaml as a user does
# (a scratch copy of the repository's lab/, a relative path, the default store, no
# MARGIN_*), and checks what the boot log and the summary say: each of the 3 levels
# (bare, xen-768M, xen-1024M) booted twice and verified, in the seeded balanced order
# (each block of 3 boots every level once), every boot a new boot_id, the levels read off
# the booted host those asked for, every cell complete, and the report's Boots section.
# Stops the lab at the end (or on failure). 12–25 minutes under TCG (boots take 1–6 min each).
#
# lab/boots.sh [MARGIN]   (default: the debug build, built first)
set -euo pipefail
source "$(dirname "$0")/lib.sh"
lab_begin lab-boots "${1:-}"

# the experiment's restart command is `lab/reboot.sh …`, relative to where margin runs

"$lab_dir/boot.sh" bare --port $port
echo "== margin run lab/experiments/lab-boots.yaml (margin reboots the lab 6 times)"
"$margin" run lab/experiments/lab-boots.yaml || fail "margin run"
"$margin" plan lab/experiments/lab-boots.yaml

python3 - reports/lab-boots <<'EOF' || fail "the boot log or the summary"
import sys
sys.path.insert(0, "lab")
from store import measured, per_level, summary, verified_boots
store = sys.argv[1]
verified = verified_boots(store, "kernel", 3, count=6)
assert {r["wanted"]["kernel"] for r in verified} == {"bare", "xen-768M", "xen-1024M"}
assert len(summary(store)["boots"]) >= 6, "summary.json lists fewer than 6 boots"
per = per_level(measured(store), "kernel")
assert per == {"bare": 4, "xen-768M": 4, "xen-1024M": 4}, f"trials per level: {per}"
times = ", ".join(f"{r['wanted']['kernel']} {r['ready_seconds']:.0f} s" for r in verified)
print(f"boots verified in order: {times}")
EOF
grep -q '^## Boots' reports/lab-boots/report.md || fail "no Boots section in the report"
passed lab-boots
