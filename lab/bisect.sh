#!/usr/bin/env bash
# A bisection across boots in the lab (docs/lab.md): boots the lab as a Xen dom0, runs
# `margin bisect lab/experiments/lab-bisect.yaml --factor dom0_mem` as a user does (a
# scratch copy of lab/, a relative path, the default store, no MARGIN_*), and checks what
# the store says: every boot the bisection's, verified with the level read off the booted
# host, each boot_id new, each verified boot's 3 trials in the bisection's sessions; the
# answer found or narrowed the change with its boots and time; the report's Bisect section
# says the same. Stops the lab at the end. About an hour under TCG: 26 boots or more (10
# for the ends, 16 or more for the step).
#
# lab/bisect.sh [MARGIN]   (default: the debug build, built first)
set -euo pipefail
source "$(dirname "$0")/lib.sh"
lab_begin lab-bisect "${1:-}"

"$lab_dir/boot.sh" xen dom0_mem=1536M --port $port
echo "== margin bisect lab/experiments/lab-bisect.yaml --factor dom0_mem (margin reboots the lab)"
status=0
"$margin" bisect lab/experiments/lab-bisect.yaml --factor dom0_mem 2>&1 | tee bisect.md || status=$?
[ "$status" -le 1 ] || fail "margin bisect (exit $status)"
"$margin" bisect lab/experiments/lab-bisect.yaml --factor dom0_mem --json > answer.json || [ $? -eq 1 ] || fail "margin bisect --json"
"$margin" report lab/experiments/lab-bisect.yaml || fail "margin report"

python3 - reports/lab-bisect answer.json <<'PY' || fail "the boot log or the answer"
import json
import sys
sys.path.insert(0, "lab")
from store import lines, measured
store, answer_file = sys.argv[1:3]
with open(answer_file) as file:
    answer = json.load(file)
label = answer["label"]
log = lines(store, "boots.ndjson")
assert all(r.get("bisect") == label for r in log), "a boot not the bisection's"
verified = [r for r in log if r["event"] == "verified"]
for r in verified:
    assert r["detected"] == r["wanted"], f"boot {r['boot']}: detected {r['detected']}, wanted {r['wanted']}"
ids = [r["boot_id"] for r in verified]
assert len(set(ids)) == len(ids), f"boot_ids repeat: {ids}"
sessions = [s for s in lines(store, "sessions.ndjson") if s.get("label") == label and s["event"] == "start"]
by_boot = {}
for s in sessions:
    by_boot.setdefault(s["facts"]["boot_id"], set()).add(s["session"])
ok = measured(store)
for r in verified:
    n = sum(1 for t in ok if t["session"] in by_boot.get(r["boot_id"], set()))
    assert n == 3, f"boot {r['boot']} ({r['wanted']['dom0_mem']}): {n} trials, not 3"
assert answer["verdict"] in ("found", "narrowed"), answer["verdict"]
assert answer["boots"] is not None and 10 <= answer["boots"] <= len(verified), (answer["boots"], len(verified))
times = sorted(r["ready_seconds"] for r in verified)
median = times[len(times) // 2]
print(f"{len(verified)} boots verified, ready in {times[0]:.0f}–{times[-1]:.0f} s (median {median:.0f} s)")
print(f"answer: {answer['verdict']}: last good {answer['last_good']}, first bad {answer['first_bad']}, "
      f"ratio {answer['ratio']:.3f} [{answer['ci_low']:.3f}, {answer['ci_high']:.3f}], "
      f"{answer['boots']} boots, {answer['trials']} trials in {answer['seconds']:.0f} s")
PY
grep -q '^## Bisect' reports/lab-bisect/report.md || fail "the report has no Bisect section"
passed lab-bisect
