#!/usr/bin/env bash
# margin against the lab's real Xen (docs/lab.md, "Testing margin against it"): boots the
# lab as a Xen dom0 with dom0_mem=768M, runs lab/experiments/lab-dd.yaml as a user does
# (a scratch working directory, a relative path, the default store, no MARGIN_*), and
# checks what margin read off the real dom0 — hypervisor xen, role dom0, dom0_mem 768M
# from `xl info`'s xen_commandline, xl's own output kept — and that only the cell of
# this boot ran. Then lab/experiments/lab-wrong-boot.yaml: margin reboots the lab by a
# recipe that boots the wrong entry (bare when xen is asked for) and waits for the boot
# itself; margin is killed (SIGKILL) while it waits, run again, and must ask for the
# boot again, refuse it by its facts and run no trial in it. Then lab-dd.yaml again in
# that bare boot: the bare cell runs in a boot with another boot_id, the Xen cell's trials
# untouched. Two boots in all; stops the lab at the end (or on failure).
#
# lab/test.sh [MARGIN]   (default: the debug build, built first)
set -euo pipefail
source "$(dirname "$0")/lib.sh"
lab_begin lab-test "${1:-}"

# the facts of the last session started, as JSON
last_facts() {
    python3 -c '
import json, sys
starts = [json.loads(l) for l in open("reports/lab-dd/sessions.ndjson") if l.strip()]
starts = [s for s in starts if s.get("event") == "start"]
print(json.dumps(starts[-1].get("facts", {})))'
}
fact() { python3 -c 'import json, sys; print(json.loads(sys.argv[1]).get(sys.argv[2], ""))' "$1" "$2"; }
ok_trials() { # KERNEL DOM0_MEM: the measured trials of that cell
    "$margin" plan lab/experiments/lab-dd.yaml | awk -v k="$1" -v m="$2" 'NF >= 5 && $(NF-2) == k && $(NF-1) == m { split($2, t, "/"); print t[1] }'
}
# the lines of a store's log FILE whose field EVENT is VALUE, counted
count_events() {
    python3 -c '
import json, sys
path, value = sys.argv[1], sys.argv[2]
try:
    lines = [json.loads(l) for l in open(path) if l.strip()]
except FileNotFoundError:
    lines = []
print(sum(1 for l in lines if l.get("event") == value))' "$1" "$2"
}

"$lab_dir/boot.sh" xen dom0_mem=768M --port $port
echo "== margin run, Xen dom0 (dom0_mem=768M)"
"$margin" run lab/experiments/lab-dd.yaml || fail "margin run in the Xen boot"
facts=$(last_facts)
[ "$(fact "$facts" hypervisor)" = xen ] || fail "hypervisor: $(fact "$facts" hypervisor), wanted xen"
[ "$(fact "$facts" xen_role)" = dom0 ] || fail "xen_role: $(fact "$facts" xen_role), wanted dom0"
[ "$(fact "$facts" dom0_mem)" = 768M ] || fail "dom0_mem: $(fact "$facts" dom0_mem), wanted 768M"
fact "$facts" xen_cmdline | grep 'dom0_mem=768M' > /dev/null || fail "xen_cmdline: $(fact "$facts" xen_cmdline)"
fact "$facts" xl_info | grep '^xen_version' > /dev/null || fail "no xl info kept"
fact "$facts" xl_vcpu_list | grep 'Domain-0' > /dev/null || fail "no xl vcpu-list kept"
xen_boot=$(fact "$facts" boot_id)
[ "$(ok_trials xen 768M)" = 3 ] || fail "the xen 768M cell: $(ok_trials xen 768M) of 3 trials"
[ "$(ok_trials bare unlimited)" = 0 ] || fail "the bare cell ran in a Xen boot"

echo "== margin run lab/experiments/lab-wrong-boot.yaml, killed while it waits for the boot"
wrong=reports/lab-wrong-boot
run_dir=$cache/run-$port
xen_qemu=$(qemu_pid "$run_dir") || fail "no QEMU runs the Xen boot"
"$margin" run lab/experiments/lab-wrong-boot.yaml > wrong-1.log 2>&1 &
first=$!
deadline=$(($(date +%s) + 300))
# requested, then lab/reboot.sh --no-wait has started a new QEMU: margin now waits
until [ "$(count_events "$wrong/boots.ndjson" requested)" = 1 ] &&
    now=$(qemu_pid "$run_dir") && [ "$now" != "$xen_qemu" ] && ! pgrep -f "lab/reboot.sh" > /dev/null; do
    kill -0 $first 2> /dev/null || { cat wrong-1.log; fail "margin ended before it waited for the boot"; }
    [ "$(date +%s)" -lt $deadline ] || { kill -9 $first; cat wrong-1.log; fail "no reboot within 300 s"; }
    sleep 1
done
sleep 5
kill -0 $first 2> /dev/null || { cat wrong-1.log; fail "margin did not wait for the new boot"; }
kill -9 $first
wait $first 2> /dev/null || true
[ "$(count_events "$wrong/boots.ndjson" rejected)" = 0 ] || fail "a boot was judged before margin was killed"
echo "   killed margin (pid $first) while it waited; QEMU $(qemu_pid "$run_dir") booting"
echo "== margin run lab/experiments/lab-wrong-boot.yaml again"
if "$margin" run lab/experiments/lab-wrong-boot.yaml > wrong-2.log 2>&1; then
    cat wrong-2.log; fail "margin accepted a run whose every boot was wrong"
fi
cat wrong-2.log
[ "$(count_events "$wrong/boots.ndjson" requested)" = 2 ] || fail "boot 1 not asked for again after the kill"
[ "$(count_events "$wrong/boots.ndjson" verified)" = 0 ] || fail "the wrong boot was verified"
[ "$(count_events "$wrong/boots.ndjson" rejected)" = 1 ] || fail "the wrong boot was not rejected once"
grep -q '"why":"booted kernel=bare, wanted kernel=xen' "$wrong/boots.ndjson" || fail "the rejection's reason: $(cat "$wrong/boots.ndjson")"
{ grep -q 'booted kernel=bare, wanted kernel=xen' wrong-2.log && grep -q '1 boot failed (.max_failed: 1.)' wrong-2.log; } || fail "margin did not say why it refused the boot"
[ ! -s "$wrong/runs.ndjson" ] || fail "a trial ran in the wrong boot: $(cat "$wrong/runs.ndjson")"
echo "   boot refused (booted kernel=bare, wanted kernel=xen), asked for twice, no trial"
echo "== margin run, bare"
"$margin" run lab/experiments/lab-dd.yaml || fail "margin run in the bare boot"
facts=$(last_facts)
[ "$(fact "$facts" hypervisor)" != xen ] || fail "hypervisor xen after booting bare"
[ "$(fact "$facts" boot_id)" != "$xen_boot" ] || fail "the same boot_id after a reboot"
[ "$(ok_trials bare unlimited)" = 3 ] || fail "the bare cell: $(ok_trials bare unlimited) of 3 trials"
[ "$(ok_trials xen 768M)" = 3 ] || fail "the xen 768M cell changed: $(ok_trials xen 768M)"
"$margin" status lab/experiments/lab-dd.yaml
grep -q 'hypervisor' reports/lab-dd/report.md || fail "no environment in the report"
passed lab-dd
