#!/usr/bin/env bash
# A dom0 and its PV guest as two hosts of one machine, in the lab (docs/lab.md): boots the
# lab as a Xen 4.17 dom0 (dom0_mem 768M), starts the guest margin-domu from it (`xl create
# -e`), runs lab/experiments/lab-dom0-domu.yaml as a user does (a scratch copy of lab/, a
# relative path, the default store, no MARGIN_*) — seed 002's dd in the dom0 and in the
# guest, with telemetry — and checks from the store that the two hosts' trials never
# overlapped (margin's turns on their shared `machine:`), while both hosts' sessions ran
# side by side; that the dom0's `xl list` saw the guest idle during the dom0's trials and
# busy during its own; and what the page-cache rule said of each cell. Stops the lab at
# the end. 5–12 minutes under TCG.
#
# lab/dom0-domu.sh [MARGIN]   (default: the debug build, built first)
set -euo pipefail
source "$(dirname "$0")/lib.sh"
lab_begin lab-dom0-domu "${1:-}"
# the guests destroyed before the lab stops: the dom0's xendomains would take minutes to
# shut them down under TCG, past stop.sh's 90 s
trap 'stop_guests $port margin-domu; "$lab_dir/stop.sh" --port $port > /dev/null 2>&1 || true' EXIT

export MARGIN_LAB_CPU=$guest_cpu
"$lab_dir/boot.sh" xen dom0_mem=768M --port $port
start_guests $port 420 margin-domu=10.0.99.2 || fail "the guest did not come up"
echo "== margin run lab/experiments/lab-dom0-domu.yaml (dom0 and domU taking turns on machine lab)"
run_started=$(date +%s)
"$margin" run lab/experiments/lab-dom0-domu.yaml 2>&1 | tee run.log || fail "margin run"
echo "== margin run took $(($(date +%s) - run_started)) s"

python3 - reports/lab-dom0-domu <<'PY' || fail "the store"
import sys
from itertools import pairwise
sys.path.insert(0, "lab")
from store import lines, one_at_a_time, smallest_gap, summary, t

store = sys.argv[1]
trials = lines(store, "runs.ndjson")
ok = [x for x in trials if x.get("status") == "ok"]
assert len(ok) == len(trials) == 20, f"{len(ok)} ok of {len(trials)} trials, wanted 20 (4 cells × 4 + 4 warm-ups)"
per = {}
for x in ok:
    if not x["warmup"]:
        k = (x["host"], x["levels"]["sync"])
        per[k] = per.get(k, 0) + 1
assert per == {(h, s): 4 for h in ("dom0", "domu") for s in ("none", "fdatasync")}, per

# 1. One trial at a time on the machine: each trial (its turn starts at started_at, its
# timed command lasts wall_time after that) ends before the next one of either host starts.
iv = one_at_a_time(trials)
switches = sum(1 for a, b in pairwise(iv) if a[2] != b[2])
# ... while both hosts' sessions were open at once (their threads ran side by side)
sessions = lines(store, "sessions.ndjson")
span = {}
for s in sessions:
    lo, hi = span.get(s["host"], (None, None))
    at = t(s["at"])
    span[s["host"]] = (at if lo is None else min(lo, at), at if hi is None else max(hi, at))
both = min(span["dom0"][1], span["domu"][1]) - max(span["dom0"][0], span["domu"][0])
assert both > 0, f"the sessions never ran at once: {span}"
print(f"no overlap: {len(iv)} trials, the smallest gap between one trial's end and the next "
      f"one's start {smallest_gap(iv):.3f} s, host switches {switches}; both hosts' sessions open "
      f"together for {both:.0f} s")

# 2. What the dom0 saw: the guest's CPU seconds (`xl list`) during the dom0's trials
# against during its own; the guest's disk (vdb) written by the dom0's blkback likewise.
def guest_cpu(x):
    return x.get("telemetry", {}).get("metrics", {}).get("xl_cpu_seconds:margin-domu")
d0 = [guest_cpu(x) for x in ok if x["host"] == "dom0"]
assert all(v is not None for v in d0), "a dom0 trial without the guest's xl CPU seconds"
vdb = [x["telemetry"]["metrics"].get("disk_written_bytes:vdb", 0.0) for x in ok if x["host"] == "dom0"]
guest_wall = [x["wall_time"] for x in ok if x["host"] == "domu"]
print(f"during the dom0's {len(d0)} trials the guest used at most {max(d0):.2f} CPU s "
      f"(mean {sum(d0)/len(d0):.3f}; xl list's Time(s) has 0.1 s steps) and its disk vdb "
      f"took at most {max(vdb)/2**20:.2f} MiB; the guest's own trials lasted "
      f"{min(guest_wall):.2f}–{max(guest_wall):.2f} s")
assert max(vdb) < 2**20, "the guest wrote during a dom0 trial"

# 3. The page cache, as telemetry shows it: bytes dd claims against the busiest disk's
summary = summary(store)
for x in sorted(ok, key=lambda x: (x["host"], x["levels"]["sync"])):
    if x["warmup"]:
        continue
    m = x["telemetry"]["metrics"]
    disks = {k.split(":", 1)[1]: v for k, v in m.items() if k.startswith("disk_written_bytes:")}
    busiest = max(disks.items(), key=lambda kv: kv[1]) if disks else ("-", 0.0)
    x["_w"] = f"{busiest[1]/2**20:.1f} MiB on {busiest[0]}"
for h in ("dom0", "domu"):
    for s in ("none", "fdatasync"):
        ws = [x["_w"] for x in ok if x["host"] == h and x["levels"]["sync"] == s and "_w" in x]
        print(f"{h} sync={s}: dd 32 MiB; written during each trial: {', '.join(ws)}")
pc = [w["message"] for w in summary["warnings"] if w["kind"] == "page_cache"]
print("page_cache warnings:", pc or "none")
for c in summary["comparisons"]:
    print(f"verdict ({c['verdict']}): {c['sentence']}")
PY
grep -q '^# ' reports/lab-dom0-domu/report.md || fail "no report"
passed lab-dom0-domu
