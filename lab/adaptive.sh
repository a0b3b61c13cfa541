#!/usr/bin/env bash
# Adaptive boots in the lab (docs/lab.md): boots the lab bare, runs
# lab/experiments/lab-adaptive.yaml as a user does (a scratch copy of lab/, a relative
# path, the default store, no MARGIN_*), and checks the boot log and the summary: whole
# blocks of one bare and one xen-768M boot, each verified with the levels read off the
# booted host, at least the first 2 blocks, at most 4; the boots past the first 2 blocks
# log their trials per cell and run exactly that many; the report says how it stopped.
# Stops the lab at the end. 10–30 minutes under TCG.
#
# lab/adaptive.sh [MARGIN]   (default: the debug build, built first)
set -euo pipefail
source "$(dirname "$0")/lib.sh"
lab_begin lab-adaptive "${1:-}"

"$lab_dir/boot.sh" bare --port $port
echo "== margin run lab/experiments/lab-adaptive.yaml (margin reboots the lab in blocks until settled)"
"$margin" run lab/experiments/lab-adaptive.yaml 2>&1 | tee run.log || fail "margin run"

python3 - reports/lab-adaptive <<'PY' || fail "the boot log or the summary"
import sys
sys.path.insert(0, "lab")
from store import lines, measured, verified_boots
import json
store = sys.argv[1]
verified = verified_boots(store, "kernel", 2)
levels = [r["wanted"]["kernel"] for r in verified]
assert len(levels) in (4, 6, 8), f"{len(levels)} verified boots: not 2–4 whole blocks: {levels}"
assert set(levels) == {"bare", "xen-768M"}, levels
log = lines(store, "boots.ndjson")
requested = {r["boot"]: r for r in log if r["event"] == "requested"}
later = [requested[r["boot"]].get("trials_per_boot") for r in verified[4:]]
assert all(m is not None and m == later[0] for m in later), f"trials per boot past the first blocks: {later}"
sessions = lines(store, "sessions.ndjson")
ok = measured(store)
for r, m in zip(verified[4:], later, strict=True):
    ids = {s["session"] for s in sessions if s.get("facts", {}).get("boot_id") == r["boot_id"]}
    n = sum(1 for t in ok if t["session"] in ids)
    assert n == m, f"boot {r['boot']}: {n} trials, logged {m}"
with open(f"{store}/summary.json") as file:
    summary = json.load(file)
assert summary["settings"]["boot_looks"] == [2, 3, 4], summary["settings"]
c = summary["comparisons"][0]
times = ", ".join(f"{r['wanted']['kernel']} {r['ready_seconds']:.0f} s" for r in verified)
print(f"boots verified in order: {times}")
print(f"trials per boot past the first 2 blocks: {later[0] if later else '-'}")
print(f"verdict ({c['verdict']}): {c['sentence']}")
PY
grep -q 'Each level is booted again until the comparisons across boots are resolved' reports/lab-adaptive/report.md \
    || fail "the report does not say how the boots stopped"
passed lab-adaptive
