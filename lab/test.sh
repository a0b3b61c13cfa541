#!/usr/bin/env bash
# margin against the lab's real Xen (docs/lab.md, "Testing margin against it"): boots the
# lab as a Xen dom0 with dom0_mem=768M, runs lab/experiments/lab-dd.yaml as a user does
# (a scratch working directory, a relative path, the default store, no MARGIN_*), and
# checks what margin read off the real dom0 — hypervisor xen, role dom0, dom0_mem 768M
# from `xl info`'s xen_commandline, xl's own output kept — and that only the cell of
# this boot ran. Then the same after `lab/reboot.sh bare`: the bare cell runs, and the
# store holds both boots. Stops the lab at the end (or on failure).
#
# lab/test.sh [MARGIN]   (default: the debug build, built first)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lab/lib.sh
. "$here/lib.sh"
lab_begin "${1:-}"

work=$(mktemp -d)
mkdir -p "$work/experiments"
cp "$here/experiments/lab-dd.yaml" "$work/experiments/"
cd "$work"
for v in $(compgen -e | grep '^MARGIN_' || true); do unset "$v"; done

fail() { echo "lab-test: FAILED: $*" >&2; exit 1; }
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
    "$margin" plan experiments/lab-dd.yaml | awk -v k="$1" -v m="$2" 'NF >= 5 && $(NF-2) == k && $(NF-1) == m { split($2, t, "/"); print t[1] }'
}

started=$(date +%s)
"$here/boot.sh" xen dom0_mem=768M --port $port
echo "== margin run, Xen dom0 (dom0_mem=768M)"
"$margin" run experiments/lab-dd.yaml || fail "margin run in the Xen boot"
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
echo "== lab/reboot.sh bare"
"$here/reboot.sh" bare
echo "== margin run, bare"
"$margin" run experiments/lab-dd.yaml || fail "margin run in the bare boot"
facts=$(last_facts)
[ "$(fact "$facts" hypervisor)" != xen ] || fail "hypervisor xen after booting bare"
[ "$(fact "$facts" boot_id)" != "$xen_boot" ] || fail "the same boot_id after a reboot"
[ "$(ok_trials bare unlimited)" = 3 ] || fail "the bare cell: $(ok_trials bare unlimited) of 3 trials"
[ "$(ok_trials xen 768M)" = 3 ] || fail "the xen 768M cell changed: $(ok_trials xen 768M)"
"$margin" status experiments/lab-dd.yaml
grep -q 'hypervisor' reports/lab-dd/report.md || fail "no environment in the report"
echo "lab-test: passed in $(( $(date +%s) - started )) s (store: $work/reports/lab-dd)"
