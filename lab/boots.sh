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
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lab/lib.sh
. "$here/lib.sh"
lab_begin "${1:-}"

# the experiment's restart command is `lab/reboot.sh …`, relative to where margin runs
enter_scratch

fail() { echo "lab-boots: FAILED: $*" >&2; exit 1; }

started=$(date +%s)
"$here/boot.sh" bare --port $port
echo "== margin run lab/experiments/lab-boots.yaml (margin reboots the lab 6 times)"
"$margin" run lab/experiments/lab-boots.yaml || fail "margin run"
"$margin" plan lab/experiments/lab-boots.yaml

python3 - reports/lab-boots <<'EOF' || fail "the boot log or the summary"
import json, sys
store = sys.argv[1]
log = [json.loads(l) for l in open(f"{store}/boots.ndjson") if l.strip()]
verified = [r for r in log if r["event"] == "verified"]
bad = [r for r in log if r["event"] in ("rejected", "lost")]
assert not bad, f"failed boots: {bad}"
levels = [r["wanted"]["kernel"] for r in verified]
assert len(levels) == 6, f"{len(levels)} verified boots, wanted 6: {levels}"
for block in (levels[:3], levels[3:]):
    assert sorted(block) == ["bare", "xen-1024M", "xen-768M"], f"an unbalanced block: {levels}"
for r in verified:
    assert r["detected"] == r["wanted"], f"boot {r['boot']}: detected {r['detected']}, wanted {r['wanted']}"
ids = [r["boot_id"] for r in verified]
assert len(set(ids)) == 6, f"boot_ids repeat: {ids}"
summary = json.load(open(f"{store}/summary.json"))
assert len(summary["boots"]) >= 6, "summary.json lists fewer than 6 boots"
trials = [json.loads(l) for l in open(f"{store}/runs.ndjson") if l.strip()]
ok = [t for t in trials if t.get("status") == "ok" and not t.get("warmup")]
per = {}
for t in ok:
    per[t["levels"]["kernel"]] = per.get(t["levels"]["kernel"], 0) + 1
assert per == {"bare": 4, "xen-768M": 4, "xen-1024M": 4}, f"trials per level: {per}"
times = ", ".join(f"{r['wanted']['kernel']} {r['ready_seconds']:.0f} s" for r in verified)
print(f"boots verified in order: {times}")
EOF
grep -q '^## Boots' reports/lab-boots/report.md || fail "no Boots section in the report"
echo "lab-boots: passed in $(( $(date +%s) - started )) s (store: $work/reports/lab-boots)"
