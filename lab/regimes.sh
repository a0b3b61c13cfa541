#!/usr/bin/env bash
# Two regimes on purpose, in the lab (docs/lab.md, "Two regimes on purpose": the default
# experiment's cell that is two regimes, made so): boots the lab bare unless a bare lab
# answers on the port already, mounts a tmpfs on the guest's /tmp (margin's remote shell
# keeps its status file there: on the disk under test its truncation would wait for the
# experiment's throttled writeback between trials), and runs
# lab/experiments/lab-regimes.yaml as a user does (a scratch copy of lab/, a relative
# path, the default store, no MARGIN_*): dd 64 MiB without a sync flag, bs 64k and 1M
# interleaved, with the guest's dirty limits and its sessions' writeback set so that a
# write lands in the page cache after a trial of its own cell and is throttled to the
# disk's 16 MB/s after one of the other cell. Then checks from summary.json and report.md
# that the 1M cell is reported as two regimes with their shares, without "more trials"
# advice (neither its row's runs needed nor the comparison with 64k), and prints the
# regimes found. Stops the lab at the end (or on failure). 5–6 minutes under TCG.
#
# lab/regimes.sh [MARGIN]   (default: the debug build, built first)
set -euo pipefail
source "$(dirname "$0")/lib.sh"
lab_begin lab-regimes "${1:-}"

# a bare lab already answering is used as it is (its /tmp and dirty limits are set below
# and by the experiment's setup); a Xen one is stopped first
if qemu_pid "$cache/run-$port" > /dev/null && lab_ssh $port true 2> /dev/null; then
    if lab_ssh $port 'test -e /sys/hypervisor/type'; then
        say "the lab on port $port is a Xen boot: stopping it to boot bare"
        "$lab_dir/stop.sh" --port $port
        "$lab_dir/boot.sh" bare --port $port
    else
        say "a bare lab answers on port $port: running in it"
    fi
else
    "$lab_dir/boot.sh" bare --port $port
fi
lab_ssh $port 'mountpoint -q /tmp || mount -t tmpfs -o mode=1777 tmpfs /tmp' || fail "no tmpfs on the guest's /tmp"

echo "== margin run lab/experiments/lab-regimes.yaml (dd without a sync flag, dirty limits set)"
run_started=$(date +%s)
"$margin" run lab/experiments/lab-regimes.yaml 2>&1 | tee run.log || fail "margin run"
echo "== margin run took $(($(date +%s) - run_started)) s"
echo "== the guest's settings afterwards:" \
    "$(lab_ssh $port 'sysctl -n vm.dirty_background_bytes vm.dirty_bytes | tr "\n" " "; cat /sys/fs/cgroup/system.slice/ssh.service/io.max')"

python3 - reports/lab-regimes <<'PY' || fail "the summary or the report"
import math
import sys
from itertools import pairwise
sys.path.insert(0, "lab")
from store import lines, measured, per_level, summary, t

store = sys.argv[1]
per = per_level(measured(store), "bs")
assert per == {"64k": 30, "1M": 30}, f"measured trials per bs: {per}, wanted 30 each"
s = summary(store)

def mb(v):
    return f"{v / 1e6:.1f}"

def cell(bs):
    [c] = [c for c in s["cells"] if c["metric"] == "throughput" and c["levels"].get("bs") == bs]
    return c

def widest_gap(values):
    """The widest ratio between neighbours of the sorted values, at least 2 values on
    each side: what the data say without margin's test."""
    v = sorted(values)
    return max(((v[i + 1] / v[i], v[i], v[i + 1]) for i in range(1, len(v) - 2)), default=(1.0, 0, 0))

for bs in ("64k", "1M"):
    c = cell(bs)
    gap = widest_gap(c["values"])
    print(f"bs={bs}: {c['n']} trials, harmonic mean {mb(c['mean'])} MB/s, CV {c['cv'] * 100:.0f} %; "
          f"sorted values (MB/s): {' '.join(mb(v) for v in sorted(c['values']))}")
    print(f"  widest gap between neighbours: {mb(gap[1])} -> {mb(gap[2])} MB/s (x{gap[0]:.2f})")
    r = c.get("regimes")
    if not r:
        print(f"  margin: one regime; runs needed {c['runs_needed']}")
        continue
    print(f"  margin: two regimes (W = {r['split_ratio']:.4f} < {r['critical']}), boundary "
          f"{mb(r['boundary'])} MB/s, by session: {r['by_session']}")
    for name, g in zip(("lower", "upper"), r["regimes"], strict=False):
        ci = f"[{mb(g['ci_low'])}, {mb(g['ci_high'])}]" if g["ci_low"] and g["ci_high"] else "-"
        print(f"    {name}: {g['n']} trials ({g['share'] * 100:.0f} %), mean {mb(g['mean'])} MB/s {ci}, "
              f"{mb(g['min'])}-{mb(g['max'])}")
    for b in r["beside"]:
        print(f"    beside: {b['metric']} {b['means']}")

# The 1M cell: two regimes, their shares, no more-trials advice.
c = cell("1M")
r = c.get("regimes")
gap = widest_gap(c["values"])
assert r, (f"bs=1M: margin reports one regime, while its values have a gap of x{gap[0]:.2f} "
           f"({mb(gap[1])} -> {mb(gap[2])} MB/s); the cell: "
           + str({k: c[k] for k in ("n", "mean", "cv", "flagged", "set_aside", "runs_needed")}))
low, high = r["regimes"]
assert low["n"] >= 2 and high["n"] >= 2 and low["n"] + high["n"] == c["n"], r
assert math.isclose(low["share"] + high["share"], 1.0) and math.isclose(high["share"], high["n"] / c["n"]), r
assert low["max"] < r["boundary"] < high["min"], r
assert c["runs_needed"] is None and c.get("runs_needed_exceeds") is None, \
    f"bs=1M is two regimes but its row asks for runs: {c['runs_needed']}, {c.get('runs_needed_exceeds')}"
assert not r["by_session"], "one session: its regimes cannot be the sessions"
[comp] = [x for x in s["comparisons"] if x["metric"] == "throughput"]
assert comp.get("mixtures"), f"the comparison of 1M with 64k does not say it compares mixtures: {comp['sentence']}"
assert comp.get("more_trials") is None, f"more_trials {comp['more_trials']}: {comp['sentence']}"
assert "would settle it" not in comp["sentence"], comp["sentence"]
m = comp["mixtures"]
print(f"comparison ({comp['verdict']}): upper regime (above {mb(m['boundary'])} MB/s): 64k "
      f"{m['baseline_upper_share'] * 100:.0f} %, 1M {m['level_upper_share'] * 100:.0f} % "
      f"({m['share_difference'] * 100:+.0f} points)")
print(f"  {comp['sentence']}")
# What decides the regime, from the trial log (margin does not read the guest's dirty pages
# before a trial on an ssh host): whether the trial before, warm-ups included, was of the
# same cell (its own file's dirty pages dropped by dd's truncation) or of the other.
cut = {x["cell"]: x["regimes"]["boundary"] for x in s["cells"] if x["metric"] == "throughput" and x.get("regimes")}
log = sorted(lines(store, "runs.ndjson"), key=lambda x: t(x["started_at"]))
after = {}
for before, x in pairwise(log):
    if x["warmup"] or x["cell"] not in cut or x.get("status") != "ok":
        continue
    key = ("same cell" if before["cell"] == x["cell"] else "other cell",
           "upper" if x["metrics"]["throughput"] > cut[x["cell"]] else "lower")
    after[key] = after.get(key, 0) + 1
print("trials of two-regime cells by the trial before them and their regime: " +
      ", ".join(f"after the {k[0]}, {k[1]}: {n}" for k, n in sorted(after.items())))
# margin's own test of the trial before (summary.json's regimes.before) names it as the
# cause, with the counts this log gives, cell by cell
for x in s["cells"]:
    if x["metric"] != "throughput" or not x.get("regimes"):
        continue
    b = x["regimes"].get("before")
    assert b and b["decides"], f"{x['label']}: margin does not say the trial before decides: {b}"
    mine = {}
    for before, y in pairwise(log):
        if y["warmup"] or y["cell"] != x["cell"] or y.get("status") != "ok":
            continue
        side = "upper" if y["metrics"]["throughput"] > x["regimes"]["boundary"] else "lower"
        who = "this cell" if before["cell"] == y["cell"] else "other"
        mine.setdefault(who, {"lower": 0, "upper": 0})[side] += 1
    theirs = {("this cell" if a["after"] == "this cell" else "other"): {"lower": a["lower"], "upper": a["upper"]}
              for a in b["after"]}
    assert mine == theirs, f"{x['label']}: the log says {mine}, margin {theirs}"
    print(f"{x['label']}: margin says the trial before decides it (p = {b['p_value']:.4f}, "
          f"{b['predicted'] * 100:.0f} % of trials told): {theirs}")
warned = [w["message"] for w in s["warnings"] if w["kind"] == "regimes"]
assert warned and "bs=1M" in warned[0], f"no regimes warning naming bs=1M: {warned}"
for w in s["warnings"]:
    if w["kind"] == "order":
        print(f"order: {w['message']}")

# report.md: the row, the regimes' table with the shares, no advice to run more trials
with open(f"{store}/report.md") as file:
    report = file.read()
row = [line for line in report.splitlines() if line.startswith("| host=lab bs=1M ")]
assert row and row[0].rstrip(" |").endswith("– (two regimes)"), f"the 1M row: {row}"
assert "**Two regimes.**" in report, "no Two regimes section"
shares = [line for line in report.splitlines() if "| lower " in line or "| upper " in line]
assert any(f"{low['share'] * 100:.1f} %" in line for line in shares), shares
assert any(f"{high['share'] * 100:.1f} %" in line for line in shares), shares
assert "would settle it" not in report, [line for line in report.splitlines() if "would settle it" in line]
assert "the trial that ran just before on its host decides it" in report, "report.md does not name the trial before"
print("report.md: the 1M row reads '– (two regimes)', the regimes' table gives the shares, no 'would settle it'")
PY
passed lab-regimes
