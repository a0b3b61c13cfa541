//! Boots as planned units, against a rebootable test machine on loopback: a real sshd
//! whose "reboot" (machine.sh, the machine's BMC) stops it, lays out the facts of the
//! kernel it boots (the sysroot fixtures the fact tests use, under the daemon's
//! `MARGIN_SYSROOT`) with a new boot_id, and starts it again. Needs `/usr/sbin/sshd` and
//! root, as the hosts tests do.

use std::path::Path;
use std::time::{Duration, Instant};

use super::machine::{Machine, kill_once_boot_is_requested, lines};
use super::{as_a_user, stderr, stdout};

/// The machine's BMC: `boot KERNEL` stops the daemon, boots KERNEL's facts (another one
/// when the file `wrong` exists; none when `dead` exists), starts the daemon; `power`
/// power-cycles (boots bare unless `dead`). Every call is appended to `calls`.
const MACHINE: &str = r#"#!/bin/bash
set -eu
here=$(cd "$(dirname "$0")" && pwd)
echo "$*" >> "$here/calls"
if [ -s "$here/sshd.pid" ]; then
    kill "$(cat "$here/sshd.pid")" 2>/dev/null || true
    rm -f "$here/sshd.pid"
fi
sleep "$(cat "$here/delay" 2>/dev/null || echo 0.5)"
kernel=${2:-bare}
if [ -e "$here/wrong" ]; then
    if [ "$kernel" = xen ]; then kernel=bare; else kernel=xen; fi
fi
[ -e "$here/dead" ] && exit 0
root=$here/root
rm -rf "$root" && mkdir -p "$root"
if [ "$kernel" = xen ]; then tree=xen-dom0; else tree=bare; fi
cp -r "FIXTURES/$tree/." "$root/"
# the boot's own shift of what runs in it, for the tests of boots that differ: boots 1
# and 2 ×1.15, 3 and 4 ×0.85, 5 and 6 ×1.15, … (counted from the first after `new`)
n=$(( $(cat "$here/count" 2>/dev/null || echo 0) + 1 ))
echo "$n" > "$here/count"
if [ $(( (n - 1) / 2 % 2 )) = 0 ]; then echo 1.15 > "$root/shift"; else echo 0.85 > "$root/shift"; fi
mkdir -p "$root/proc/sys/kernel/random"
cat /proc/sys/kernel/random/uuid > "$root/proc/sys/kernel/random/boot_id"
/usr/sbin/sshd -f "$here/sshd.conf" -E "$here/sshd.log"
for _ in $(seq 100); do [ -s "$here/sshd.pid" ] && exit 0; sleep 0.1; done
echo "sshd did not start" >&2
exit 1
"#;

/// The machine, up and booted bare, its boots counted from the next.
fn machine() -> Machine {
    let m = Machine::new(MACHINE, "bare");
    m.touch("count", "0");
    m
}

/// Four cells (kernel × n) on the machine, 6 trials each, compared across kernels.
fn experiment(host: &str) -> String {
    format!(
        "name: reboots
matrix:
  host: [box]
  kernel: [bare, xen]
  n: [1, 2]
environment:
  kernel: {{ fact: hypervisor, map: {{ xen: xen, none: bare }} }}
hosts:
  box: {host}
run: \"awk 'BEGIN {{ printf \\\"time %.4f\\\\n\\\", 1 + (({{{{ repetition }}}} * 37 + {{{{ n }}}} * 11 + length(\\\"{{{{ kernel }}}}\\\") * 5) % 50) / 1000 }}'\"
metrics:
  time: {{ regex: 'time ([0-9.]+)', unit: s, better: lower }}
repetitions: 6
seed: 11
analysis:
  compare: [{{ factor: kernel, baseline: bare }}]
"
    )
}

fn project(yaml: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("experiments")).unwrap();
    std::fs::write(dir.path().join("experiments/reboots.yaml"), yaml).unwrap();
    dir
}

/// (cell's kernel, session) of every measured trial.
fn trials(store: &Path) -> Vec<(String, String, u64)> {
    lines(&store.join("runs.ndjson"))
        .iter()
        .filter(|r| r["status"] == "ok")
        .map(|r| {
            (
                r["levels"]["kernel"].as_str().unwrap().to_string(),
                r["session"].as_str().unwrap().to_string(),
                r["repetition"].as_u64().unwrap(),
            )
        })
        .collect()
}

fn verified(store: &Path) -> Vec<serde_json::Value> {
    lines(&store.join("boots.ndjson")).into_iter().filter(|r| r["event"] == "verified").collect()
}

#[test]
fn one_run_boots_each_kernel_three_times_in_a_balanced_order_and_compares_across_boots() {
    let m = machine();
    let host =
        m.host(&format!("reboot: '{} boot {{{{ kernel }}}}', boots: 3, timeout: 60s", m.script().display()));
    let dir = project(&experiment(&host));
    let out = as_a_user(dir.path()).args(["run", "experiments/reboots.yaml"]).output().unwrap();
    assert!(out.status.success(), "{}\n{}", stdout(&out), stderr(&out));
    let store = dir.path().join("reports/reboots");
    // six boots, each verified once, in blocks of one xen and one bare
    let boots = verified(&store);
    let wanted: Vec<&str> = boots.iter().map(|b| b["wanted"]["kernel"].as_str().unwrap()).collect();
    assert_eq!(wanted.len(), 6, "{wanted:?}");
    for block in wanted.chunks(2) {
        assert!(block.contains(&"xen") && block.contains(&"bare"), "{wanted:?}");
    }
    let numbers: Vec<u64> = boots.iter().map(|b| b["boot"].as_u64().unwrap()).collect();
    assert_eq!(numbers, [1, 2, 3, 4, 5, 6]);
    let mut ids: Vec<&str> = boots.iter().map(|b| b["boot_id"].as_str().unwrap()).collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), 6, "a new boot_id each time");
    // the machine was asked for exactly those boots, over ssh
    let calls = m.calls();
    assert_eq!(calls, wanted.iter().map(|k| format!("boot {k}")).collect::<Vec<_>>());
    // every cell has its 6 trials, 2 in each of its kernel's 3 boots; no repetition twice
    let t = trials(&store);
    assert_eq!(t.len(), 24, "{t:?}");
    for kernel in ["bare", "xen"] {
        let mut sessions: Vec<&str> =
            t.iter().filter(|(k, _, _)| k == kernel).map(|(_, s, _)| s.as_str()).collect();
        sessions.sort_unstable();
        let per: Vec<usize> = sessions.chunk_by(|a, b| a == b).map(<[&str]>::len).collect();
        assert_eq!(per, [4, 4, 4], "{kernel}: 2 trials of each of its 2 cells per boot");
    }
    // the comparison has 3 boots a side
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(store.join("summary.json")).unwrap()).unwrap();
    let r = &summary["comparisons"][0]["replication"];
    assert_eq!((r["baseline_units"].as_u64(), r["level_units"].as_u64()), (Some(3), Some(3)), "{r}");
    assert_eq!(r["unit"], "boot", "{r}");
    // the report lists the boots: levels, outcome, time to ready, trials in each
    let report = std::fs::read_to_string(store.join("report.md")).unwrap();
    let _ = std::fs::write(std::env::temp_dir().join("margin-reboots-report.md"), &report);
    assert!(report.contains("## Boots"), "{report}");
    // one run compared across boots: the period its boots spanned, and how to replicate it
    let period = report.lines().find(|l| l.starts_with("The boots of this run spanned ")).expect(&report);
    assert!(period.contains(" UTC ("), "{period}");
    assert!(
        period.contains("`margin run experiments/reboots.yaml --label later`, then `margin report reboots`"),
        "{period}"
    );
    assert!(summary["across_runs"]["period"]["units"] == "boots", "{}", summary["across_runs"]);
    let rows: Vec<&str> = report.lines().filter(|l| l.starts_with("| box | ")).collect();
    assert_eq!(rows.len(), 6, "{report}");
    for (row, kernel) in rows.iter().zip(&wanted) {
        assert!(row.contains(&format!("| kernel={kernel} | verified | ")), "{row}");
        assert!(row.contains(" s | 4 | `"), "{row}");
    }
    let boots = &summary["boots"];
    assert_eq!(boots.as_array().map(Vec::len), Some(6), "{boots}");
    // the answer in boots: each side's boots and their trials, not "n = 3 and 3"; the
    // cells' interval within boots, and the boots (of how many trials) a cell needs
    assert_eq!(report.matches("; 3 boots and 3 boots, 6 trials each (2 a boot)").count(), 2, "{report}");
    assert!(!report.contains("n = 3 and 3"), "{report}");
    let header = report.lines().find(|l| l.starts_with("| cell ") && l.contains(" CV ")).unwrap();
    // (a column is padded to its widest value, right-aligned ones on the left)
    let columns: Vec<&str> = header.split('|').map(str::trim).filter(|c| !c.is_empty()).collect();
    assert!(columns.contains(&"± within boots") && columns.last() == Some(&"boots needed"), "{header}");
    // the Boots section, before Environment, gives each cell's mean in each of its boots
    let (at_boots, at_env) = (report.find("## Boots").unwrap(), report.find("## Environment").unwrap());
    assert!(at_boots < at_env, "{report}");
    let section = &report[report.find("### time in each boot").expect("each boot's means")..at_env];
    let rows: Vec<&str> = section.lines().filter(|l| l.starts_with("| ") && l.contains(" `")).collect();
    assert_eq!(rows.len(), 12, "4 cells × 3 boots: {section}");
    for (i, row) in rows.iter().enumerate() {
        let kernel = wanted_of(&rows, i, &report);
        let number: usize =
            row.split('|').nth(2).unwrap().split_whitespace().next().unwrap().parse().unwrap();
        assert_eq!(wanted[number - 1], kernel, "{row}\n{section}");
        assert!(row.contains(" |      2 | "), "2 trials of the cell in each boot: {row}");
    }
    // the environment: a column per kernel, headed by its boots and levels, not one per
    // session headed by a uuid; the boot ids, which differ in every boot, not marked ≠
    let env = &report[at_env..report.find("## Failures").unwrap()];
    let header = env.lines().find(|l| l.starts_with("| fact ")).unwrap();
    for kernel in ["bare", "xen"] {
        let numbers: Vec<String> =
            (1..=6).filter(|n| wanted[n - 1] == kernel).map(|n| n.to_string()).collect();
        let heading = format!("| box · boots {} · kernel={kernel} ", numbers.join(", "));
        assert!(header.contains(&heading), "{heading}\n{env}");
    }
    assert_eq!(header.matches(" · boots ").count(), 2, "{env}");
    assert!(env.contains("\n| boot_id ") && !env.contains("≠ boot_id"), "{env}");
    assert!(env.contains("≠ hypervisor"), "{env}");
}

/// The kernel of the cell whose rows of each boot's means `rows[i]` is one of (the cell
/// named on the first row of its boots).
fn wanted_of<'r>(rows: &[&'r str], i: usize, report: &str) -> &'r str {
    let first =
        rows[..=i].iter().rev().find(|r| r.starts_with("| host=")).unwrap_or_else(|| panic!("{report}"));
    if first.contains("kernel=xen") { "xen" } else { "bare" }
}

#[test]
fn a_boot_into_the_wrong_kernel_is_refused_and_records_no_trial() {
    let m = machine();
    m.touch("wrong", "");
    let host = m.host(&format!(
        "restart: '{} boot {{{{ kernel }}}}', boots: 2, max_failed: 2, timeout: 30s",
        m.script().display()
    ));
    let dir = project(&experiment(&host));
    let out = as_a_user(dir.path()).args(["run", "experiments/reboots.yaml"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}\n{}", stdout(&out), stderr(&out));
    let store = dir.path().join("reports/reboots");
    let boots = lines(&store.join("boots.ndjson"));
    let rejected: Vec<&serde_json::Value> = boots.iter().filter(|b| b["event"] == "rejected").collect();
    assert_eq!(rejected.len(), 2, "{boots:?}");
    let why = rejected[0]["why"].as_str().unwrap();
    let wanted = rejected[0]["wanted"]["kernel"].as_str().unwrap();
    let got = if wanted == "xen" { "bare" } else { "xen" };
    assert!(why.contains(&format!("booted kernel={got}, wanted kernel={wanted}")), "{why}");
    assert!(trials(&store).is_empty(), "no trial in a wrong boot");
    let text = stdout(&out);
    let _ = std::fs::write(std::env::temp_dir().join("margin-wrong-boot-stdout.txt"), &text);
    assert!(text.contains("2 boots failed"), "{text}");
    assert!(text.contains(&format!("booted kernel={got}, wanted kernel={wanted}")), "{text}");
    // pending on the ssh host, named; the host's failure said once, not for every cell
    assert!(text.contains("0 of 4 cells complete, 4 pending on host `box`"), "{text}");
    assert_eq!(text.matches("2 boots failed").count(), 1, "{text}");
    assert!(text.contains("    4 cells (host=box kernel=bare n=1, "), "{text}");
    assert!(text.contains("): host box failed (above)\n"), "{text}");
    // the report's top says the boots were refused and why, each reason once with its
    // boots, not that the file asks for no comparison; Failures lists them
    let report = std::fs::read_to_string(store.join("report.md")).unwrap();
    let _ = std::fs::write(std::env::temp_dir().join("margin-wrong-boot-report.md"), &report);
    let top = &report[report.find("## The answer").unwrap()..report.find("## Results by metric").unwrap()];
    assert!(
        top.contains("No answer: no trial ran, because every boot margin asked for failed (2 tries)"),
        "{top}"
    );
    assert!(!top.contains("asks for none"), "{top}");
    for b in &rejected {
        let line = format!(": refused: {}", b["why"].as_str().unwrap());
        assert_eq!(top.matches(&line).count(), 1, "each reason once: {line}\n{top}");
    }
    let failures = &report[report.find("## Failures").unwrap()..report.find("## Pending cells").unwrap()];
    assert!(!failures.contains("None."), "{failures}");
    let rows: Vec<&str> = failures.lines().filter(|l| l.starts_with("| box ")).collect();
    assert_eq!(rows.len(), 2, "{failures}");
    assert!(rows.iter().all(|r| r.contains("| refused | booted kernel=")), "{failures}");
}

#[test]
fn a_machine_that_never_comes_back_is_power_cycled_then_left_pending() {
    let m = machine();
    m.touch("dead", "");
    let host = m.host(&format!(
        "restart: '{s} boot {{{{ kernel }}}}', power_cycle: '{s} power', boots: 2, max_failed: 1, timeout: 4s",
        s = m.script().display()
    ));
    let dir = project(&experiment(&host));
    let started = Instant::now();
    let out = as_a_user(dir.path()).args(["run", "experiments/reboots.yaml"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}\n{}", stdout(&out), stderr(&out));
    assert!(started.elapsed() < Duration::from_secs(60), "{:?}", started.elapsed());
    let calls = m.calls();
    assert_eq!(calls.len(), 2, "one boot, then the power cycle: {calls:?}");
    assert!(calls[0].starts_with("boot ") && calls[1] == "power", "{calls:?}");
    let store = dir.path().join("reports/reboots");
    let boots = lines(&store.join("boots.ndjson"));
    let lost: Vec<&serde_json::Value> = boots.iter().filter(|b| b["event"] == "lost").collect();
    assert_eq!(lost.len(), 1, "{boots:?}");
    assert!(lost[0]["why"].as_str().unwrap().contains("after the power cycle"), "{boots:?}");
    let text = stdout(&out);
    assert!(text.contains("4 pending"), "{text}");
    assert!(text.contains("host `box`: 1 boot failed (`max_failed: 1`)"), "{text}");
}

#[test]
fn margin_killed_while_the_machine_reboots_resumes_the_plan_with_nothing_lost_or_twice() {
    let m = machine();
    m.touch("delay", "3");
    let host =
        m.host(&format!("restart: '{} boot {{{{ kernel }}}}', boots: 2, timeout: 60s", m.script().display()));
    let dir = project(&experiment(&host));
    let store = dir.path().join("reports/reboots");
    // kill -9 while boot 2 is being waited for
    kill_once_boot_is_requested(
        dir.path(),
        &["run", "experiments/reboots.yaml"],
        &store,
        2,
        Duration::from_secs(120),
    );
    let out = as_a_user(dir.path()).args(["run", "experiments/reboots.yaml"]).output().unwrap();
    assert!(out.status.success(), "{}\n{}", stdout(&out), stderr(&out));
    let boots = verified(&store);
    let numbers: Vec<u64> = boots.iter().map(|b| b["boot"].as_u64().unwrap()).collect();
    assert_eq!(numbers, [1, 2, 3, 4], "each boot of the plan verified once: {boots:?}");
    let t = trials(&store);
    assert_eq!(t.len(), 24, "{t:?}");
    super::unique_cell_repetitions(&lines(&store.join("runs.ndjson")));
    // boot 2 was asked for twice (the kill, then the resume), and counted once
    let requested = lines(&store.join("boots.ndjson"))
        .iter()
        .filter(|b| b["boot"] == 2 && b["event"] == "requested")
        .count();
    assert_eq!(requested, 2);
    // and the resumed run said so, before it asked again
    let said = format!("{}{}", stdout(&out), stderr(&out));
    assert!(said.contains("resuming: boot 2 of 4"), "{said}");
}

#[test]
fn a_boot_recipe_on_the_machine_margin_runs_on_is_refused_in_check() {
    let dir = project(
        "name: reboots
matrix:
  host: [here]
  kernel: [bare, xen]
environment:
  kernel: { fact: hypervisor, map: { xen: xen, none: bare } }
hosts:
  here: { boot: { reboot: reboot } }
run: 'true'
",
    );
    let out = as_a_user(dir.path()).args(["check", "experiments/reboots.yaml"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}\n{}", stdout(&out), stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("experiments/reboots.yaml:8:"), "{err}");
    assert!(err.contains("margin never reboots the machine it runs on"), "{err}");
    assert!(err.contains("run margin on another machine"), "{err}");
}

#[test]
fn plan_shows_the_boots_in_order_and_a_dry_run_the_next_boots_commands() {
    let host = "{ ssh: root@box.example, boot: { select: \"grub-reboot {{ kernel }}\", boots: 4, power_cycle: 'ipmitool -H bmc-{{ host }} power cycle' } }";
    let dir = project(&experiment(host));
    let out = as_a_user(dir.path()).args(["plan", "experiments/reboots.yaml"]).output().unwrap();
    assert!(out.status.success(), "{}\n{}", stdout(&out), stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains("boots of host `box` (seed 11): 8 in all, 0 done; time per boot unknown"),
        "{text}"
    );
    let boots = &text[text.find("boots of host").unwrap()..];
    let order: Vec<&str> = boots
        .lines()
        .filter(|l| l.split_whitespace().next().is_some_and(|n| n.parse::<u32>().is_ok()))
        .filter_map(|l| l.split_whitespace().last())
        .collect();
    assert_eq!(order.len(), 8, "{text}");
    for block in order.chunks(2) {
        assert!(block.contains(&"kernel=xen") && block.contains(&"kernel=bare"), "{text}");
    }
    let out = as_a_user(dir.path()).args(["run", "--dry-run", "experiments/reboots.yaml"]).output().unwrap();
    assert!(out.status.success(), "{}\n{}", stdout(&out), stderr(&out));
    let text = stdout(&out);
    let first = order[0].trim_start_matches("kernel=");
    assert!(text.contains(&format!("next boot, on host `box`: grub-reboot {first}")), "{text}");
    assert!(text.contains("next boot, on host `box`: reboot"), "{text}");
    assert!(
        text.contains("if it does not come back, on this machine: ipmitool -H bmc-box power cycle"),
        "{text}"
    );
    assert!(!dir.path().join("reports/reboots/boots.ndjson").exists(), "a dry run boots nothing");
}

/// Two cells (kernel), compared across boots with adaptive boots `{ min: 2, max: 6 }`;
/// `run` is the benchmark (a block scalar's lines).
fn adaptive_experiment(host: &str, run: &str) -> String {
    format!(
        "name: reboots
matrix:
  host: [box]
  kernel: [bare, xen]
environment:
  kernel: {{ fact: hypervisor, map: {{ xen: xen, none: bare }} }}
hosts:
  box: {host}
run: |
{run}
metrics:
  time: {{ regex: 'time ([0-9.]+)', unit: s, better: lower }}
repetitions: 4
seed: 5
analysis:
  compare: [{{ factor: kernel, baseline: bare }}]
"
    )
}

/// A uniform draw from /dev/urandom into `r` (dash has no $RANDOM), then the time:
/// `centre` × (1 ± 2.5 %).
const NOISE: &str = "  r=$(od -An -N2 -tu2 /dev/urandom | tr -d ' ')\n";

/// Per boot: each verified boot's number, its levels, its trials per cell if logged.
fn boot_trials(store: &Path) -> Vec<(u64, String, Option<u64>)> {
    verified(store)
        .iter()
        .map(|b| {
            let number = b["boot"].as_u64().unwrap();
            let requested = lines(&store.join("boots.ndjson"))
                .into_iter()
                .rfind(|r| r["boot"] == number && r["event"] == "requested")
                .unwrap();
            (
                number,
                b["wanted"]["kernel"].as_str().unwrap().to_string(),
                requested["trials_per_boot"].as_u64(),
            )
        })
        .collect()
}

/// A draw repeated in every run, into `r`: the trial's repetition × 40503 mod 2¹⁶ (the
/// same four repetitions in each kernel's first two boots: +0.6, -1.3, +1.8, -0.1 % a
/// trial, with the time below).
const REPEATED_NOISE: &str = "  r=$(( {{ repetition }} * 40503 % 65536 ))\n";

/// No true difference, but each boot shifts its trials by `scale` × ±15 % (the machine's
/// `shift`: with the plan of seed 5, each kernel's first two boots one up, one down), so
/// that 2 or 3 boots a side cannot settle it; the trials within a boot ±2.5 %. The draws
/// repeat ([`REPEATED_NOISE`]): with /dev/urandom's, a first look stopped for futility
/// now and then (boots' means drawn 4.5 % apart on both sides), where the tests need it
/// open.
fn differing_boots(scale: f64) -> String {
    format!(
        "{REPEATED_NOISE}  s=$(cat \"$MARGIN_SYSROOT/shift\")\n  \
         awk -v r=\"$r\" -v s=\"$s\" 'BEGIN {{ printf \"time %.4f\\n\", (1 + (s - 1) * {scale}) * (1 + (r / 65536 - 0.5) / 20) }}'"
    )
}

/// Each verified boot's trials: (boot, trials in the sessions of its boot_id).
fn trials_in_boots(store: &Path) -> Vec<(u64, usize)> {
    let t = trials(store);
    let sessions = lines(&store.join("sessions.ndjson"));
    verified(store)
        .iter()
        .map(|b| {
            let ids: Vec<&str> = sessions
                .iter()
                .filter(|s| s["facts"]["boot_id"] == b["boot_id"])
                .filter_map(|s| s["session"].as_str())
                .collect();
            (b["boot"].as_u64().unwrap(), t.iter().filter(|(_, s, _)| ids.contains(&s.as_str())).count())
        })
        .collect()
}

#[test]
fn adaptive_boots_stop_at_the_first_look_that_settles_the_comparison() {
    // xen twice as slow, boots alike: 2 boots a side settle it at the first look. The
    // noise is ±0.5 %: two boots' means then differ by 1 % at most, so even at Welch's 1
    // degree of freedom (t = 50.9 at 1 − 0.05/8) the interval stays within [×1.55, ×2.58],
    // away from the band; at ±2.5 % it was unsettled in 2 of about 14 runs (once in CI)
    let m = machine();
    let host = m.host(&format!(
        "restart: '{} boot {{{{ kernel }}}}', boots: {{ min: 2, max: 6, until: verdict }}, timeout: 60s",
        m.script().display()
    ));
    let run = format!(
        "{NOISE}  c=1; [ \"{{{{ kernel }}}}\" = xen ] && c=2\n  \
         awk -v r=\"$r\" -v c=\"$c\" 'BEGIN {{ printf \"time %.5f\\n\", c * (1 + (r / 65536 - 0.5) / 100) }}'"
    );
    let dir = project(&adaptive_experiment(&host, &run));
    let out = as_a_user(dir.path()).args(["run", "experiments/reboots.yaml"]).output().unwrap();
    assert!(out.status.success(), "{}\n{}", stdout(&out), stderr(&out));
    let store = dir.path().join("reports/reboots");
    let boots = boot_trials(&store);
    assert_eq!(boots.len(), 4, "2 blocks, then settled: {boots:?}\n{}", stderr(&out));
    assert!(boots.iter().all(|(_, _, m)| m.is_none()), "no boot past the first blocks: {boots:?}");
    let said = format!("{}{}", stdout(&out), stderr(&out));
    assert!(said.contains("settled after 2 boots of each combination"), "{said}");
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(store.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary["settings"]["boot_looks"], serde_json::json!([2, 3, 5, 6]));
    let confidence = summary["settings"]["interval_confidence"].as_f64().unwrap();
    assert!((confidence - (1.0 - 0.05 / 4.0)).abs() < 1e-9, "{confidence}");
    let c = &summary["comparisons"][0];
    assert_eq!(c["verdict"], "significant", "{c}");
    assert_eq!(c["replication"]["baseline_units"], 2, "{c}");
    let report = std::fs::read_to_string(store.join("report.md")).unwrap();
    assert!(report.contains("looked at after 2, 3, 5, 6 boots of each"), "{report}");
}

#[test]
fn adaptive_boots_go_on_while_the_boots_differ_with_the_trials_per_boot_logged() {
    // no true difference, but the boots differ by ±1.5 %: the blocks go on past the first
    // look (a few boots more would settle it: no stop for futility)
    let m = machine();
    let host = m.host(&format!(
        "restart: '{} boot {{{{ kernel }}}}', boots: {{ min: 2, max: 4, until: verdict }}, timeout: 60s",
        m.script().display()
    ));
    let run = differing_boots(0.1);
    let dir = project(&adaptive_experiment(&host, &run));
    let out = as_a_user(dir.path()).args(["run", "experiments/reboots.yaml"]).output().unwrap();
    assert!(out.status.success(), "{}\n{}", stdout(&out), stderr(&out));
    let store = dir.path().join("reports/reboots");
    let boots = boot_trials(&store);
    assert!(boots.len() > 4, "past the first look (2 blocks): {boots:?}\n{}", stderr(&out));
    // the look after 3 blocks is said, settled or not
    let said = format!("{}{}", stdout(&out), stderr(&out));
    assert!(said.contains("look 2 of 3 "), "{said}");
    assert_eq!(boots.len() % 2, 0, "whole blocks: {boots:?}");
    // the first 2 blocks share the 4 repetitions; each later boot logs its trials per
    // cell, decided once, and runs exactly that many
    let later: Vec<u64> = boots[4..].iter().map(|(_, _, m)| m.expect("logged")).collect();
    assert!(later.iter().all(|&m| m == later[0] && (2..=30).contains(&m)), "{boots:?}");
    assert!(boots[..4].iter().all(|(_, _, m)| m.is_none()), "{boots:?}");
    let t = trials(&store);
    let sessions = lines(&store.join("sessions.ndjson"));
    for (number, kernel, m) in &boots {
        let id = verified(&store).into_iter().find(|b| b["boot"] == *number).unwrap()["boot_id"].clone();
        let ids: Vec<&str> = sessions
            .iter()
            .filter(|s| s["facts"]["boot_id"] == id)
            .filter_map(|s| s["session"].as_str())
            .collect();
        let in_boot: Vec<&String> =
            t.iter().filter(|(_, s, _)| ids.contains(&s.as_str())).map(|(k, _, _)| k).collect();
        assert!(in_boot.iter().all(|k| *k == kernel), "boot {number}: {in_boot:?}");
        assert_eq!(in_boot.len() as u64, m.unwrap_or(2), "boot {number} ({kernel}): {boots:?}");
    }
}

#[test]
fn margin_killed_in_an_adaptive_boots_wait_resumes_with_the_same_trials_per_boot() {
    let m = machine();
    m.touch("delay", "2");
    let host = m.host(&format!(
        "restart: '{} boot {{{{ kernel }}}}', boots: {{ min: 2, max: 3, until: verdict }}, timeout: 60s",
        m.script().display()
    ));
    let dir = project(&adaptive_experiment(&host, &differing_boots(0.1)));
    let store = dir.path().join("reports/reboots");
    // kill -9 while boot 6 (the second past the first look) is waited for
    kill_once_boot_is_requested(
        dir.path(),
        &["run", "experiments/reboots.yaml"],
        &store,
        6,
        Duration::from_secs(180),
    );
    let out = as_a_user(dir.path()).args(["run", "experiments/reboots.yaml"]).output().unwrap();
    assert!(out.status.success(), "{}\n{}", stdout(&out), stderr(&out));
    let boots = boot_trials(&store);
    let numbers: Vec<u64> = boots.iter().map(|(n, _, _)| *n).collect();
    assert_eq!(numbers, [1, 2, 3, 4, 5, 6], "each boot verified once, 3 blocks: {boots:?}");
    let logged: Vec<u64> = boots[4..].iter().map(|(_, _, m)| m.expect("logged")).collect();
    assert_eq!(logged[0], logged[1], "the resumed boot keeps the trials per boot: {boots:?}");
    let per_boot = trials_in_boots(&store);
    for (boot, n) in &per_boot {
        let want = if *boot <= 4 { 2 } else { logged[0] as usize };
        assert_eq!(*n, want, "boot {boot}: {per_boot:?}");
    }
    super::unique_cell_repetitions(&lines(&store.join("runs.ndjson")));
}

/// The seed experiments' boot recipes, as `margin run --dry-run` renders them for the
/// first boot of a seeded plan: seed 002's Xen command line written from the levels (the
/// limits it was booted with are what `xl info` reads back), seed 000's GRUB entry.
#[test]
fn the_seed_experiments_boot_recipes_render_from_the_levels() {
    // a user's folder holding the two files, the default store
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("experiments")).unwrap();
    for name in ["xen-dd.yaml", "xen-dnetc.yaml"] {
        let shipped = Path::new(env!("CARGO_MANIFEST_DIR")).join("experiments").join(name);
        std::fs::copy(shipped, dir.path().join("experiments").join(name)).unwrap();
    }
    let next = |file: &str| {
        let out = as_a_user(dir.path()).args(["run", "--dry-run", "--seed", "3", file]).output().unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        let text = stdout(&out);
        let plan: Vec<String> = text
            .lines()
            .filter(|l| {
                l.starts_with("  ") && l.split_whitespace().next().is_some_and(|n| n.parse::<u32>().is_ok())
            })
            .map(|l| l.trim().to_owned())
            .collect();
        let commands: Vec<String> =
            text.lines().filter(|l| l.starts_with("  next boot")).map(str::to_owned).collect();
        (plan, commands)
    };
    let (plan, commands) = next("experiments/xen-dd.yaml");
    // 5 combinations (4 Xen, 1 bare) × 3 boots, every block of 5 each combination once
    assert_eq!(plan.len(), 15, "{plan:?}");
    for block in plan.chunks(5) {
        let mut levels: Vec<&str> = block
            .iter()
            .map(|l| l.split_once(' ').unwrap().1.trim().trim_start_matches("next ").trim())
            .collect();
        levels.sort();
        levels.dedup();
        assert_eq!(levels.len(), 5, "{plan:?}");
    }
    let first = plan[0].trim_start_matches("1 next ");
    let (mem, vcpus) = (
        first.split("dom0_mem=").nth(1).unwrap().split(' ').next().unwrap(),
        first.split("dom0_max_vcpus=").nth(1).unwrap(),
    );
    let mut xen_line = Vec::new();
    if mem != "unlimited" {
        xen_line.push(format!("dom0_mem={mem},max:{mem}"));
    }
    if vcpus != "all" {
        xen_line.push(format!("dom0_max_vcpus={vcpus}"));
    }
    let select = if first.contains("kernel=bare") {
        "next boot, on host `xen1`: grub-reboot 'Debian GNU/Linux'".to_owned()
    } else {
        format!(
            "next boot, on host `xen1`: echo 'GRUB_CMDLINE_XEN_DEFAULT=\"{}\"' > /etc/default/grub.d/zz-margin.cfg \
             && update-grub && grub-reboot 'Debian GNU/Linux, with Xen hypervisor'",
            xen_line.join(" ")
        )
    };
    assert_eq!(
        commands,
        [format!("  {select}"), "  next boot, on host `xen1`: reboot".to_owned()],
        "{first}"
    );

    let (plan, commands) = next("experiments/xen-dnetc.yaml");
    assert_eq!(plan.len(), 12, "{plan:?}");
    let entry = if plan[0].contains("kernel=xen") {
        "Debian GNU/Linux, with Xen hypervisor"
    } else {
        "Debian GNU/Linux"
    };
    assert_eq!(commands[0], format!("  next boot, on host `quadopt`: grub-reboot '{entry}'"), "{plan:?}");
}

/// A guest booted by its dom0 (`by:`): the restart runs on the dom0 over ssh — here a
/// second loopback daemon that stays up, whose session's `SSH_CONNECTION` the command
/// logs — and the guest is waited for and checked as any host is.
#[test]
fn a_guest_is_booted_by_its_dom0_over_ssh() {
    let (dom0, guest) = (machine(), machine());
    let by = guest.dir.path().join("by");
    let host = guest.host(&format!(
        "by: dom0, restart: 'echo \"$SSH_CONNECTION\" >> {}; {} boot {{{{ kernel }}}}', boots: 2, timeout: 60s",
        by.display(),
        guest.script().display()
    ));
    let yaml =
        experiment(&host).replace("hosts:\n  box:", &format!("hosts:\n  dom0: {}\n  box:", dom0.entry()));
    let dir = project(&yaml);
    let out = as_a_user(dir.path()).args(["run", "--dry-run", "experiments/reboots.yaml"]).output().unwrap();
    assert!(out.status.success(), "{}\n{}", stdout(&out), stderr(&out));
    assert!(stdout(&out).contains("  next boot, on host `dom0`: echo"), "{}", stdout(&out));

    let out = as_a_user(dir.path()).args(["run", "experiments/reboots.yaml"]).output().unwrap();
    assert!(out.status.success(), "{}\n{}", stdout(&out), stderr(&out));
    let store = dir.path().join("reports/reboots");
    let boots = verified(&store);
    let wanted: Vec<&str> = boots.iter().map(|b| b["wanted"]["kernel"].as_str().unwrap()).collect();
    assert_eq!(wanted.len(), 4, "{wanted:?}");
    assert_eq!(guest.calls(), wanted.iter().map(|k| format!("boot {k}")).collect::<Vec<_>>());
    // each restart ran in an ssh session on the dom0's daemon, none here
    let sessions = std::fs::read_to_string(&by).unwrap();
    let ports: Vec<&str> = sessions.lines().map(|l| l.split_whitespace().last().unwrap_or("")).collect();
    assert_eq!(ports, vec![dom0.port.to_string(); 4], "{sessions}");
    assert!(dom0.calls().is_empty(), "the dom0 itself was never rebooted: {:?}", dom0.calls());
    assert_eq!(trials(&store).len(), 24);
}

/// `by:` checked at file:line:col: a key of `hosts:`, not the host itself, not a host
/// rebooted by a plan of its own, and with a `restart` to run.
#[test]
fn a_boot_by_another_host_is_checked() {
    let check = |hosts: &str| {
        let yaml = format!(
            "name: reboots\nmatrix:\n  host: [guest]\n  kernel: [bare, xen]\nenvironment:\n  kernel: {{ fact: hypervisor, map: {{ xen: xen, none: bare }} }}\nhosts:\n{hosts}run: 'true'\n"
        );
        let dir = project(&yaml);
        let out = as_a_user(dir.path()).args(["check", "experiments/reboots.yaml"]).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{hosts}: {}\n{}", stdout(&out), stderr(&out));
        stderr(&out)
    };
    let err = check(
        "  dom0: { ssh: root@dom0.example }\n  guest: { ssh: root@guest.example, boot: { by: domo, restart: 'xl create g.cfg' } }\n",
    );
    assert!(err.contains("experiments/reboots.yaml:9:"), "{err}");
    assert!(err.contains("boot `by: domo` is not a key of `hosts:`"), "{err}");
    assert!(err.contains("dom0"), "the hint names the close key: {err}");
    let err =
        check("  guest: { ssh: root@guest.example, boot: { by: guest, restart: 'xl create g.cfg' } }\n");
    assert!(err.contains("boot `by:` names the host itself"), "{err}");
    let err = check(
        "  dom0: { ssh: root@dom0.example, boot: { reboot: reboot } }\n  guest: { ssh: root@guest.example, boot: { by: dom0, restart: 'xl create g.cfg' } }\n",
    );
    assert!(err.contains("names a host that is itself rebooted by the plan"), "{err}");
    let err = check(
        "  dom0: { ssh: root@dom0.example }\n  guest: { ssh: root@guest.example, boot: { by: dom0 } }\n",
    );
    assert!(err.contains("boot `by: dom0` runs `restart` there, and `boot:` has none"), "{err}");
}

fn summary_of(store: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(store.join("summary.json")).unwrap()).unwrap()
}

#[test]
fn adaptive_boots_stop_for_futility_when_far_more_boots_than_max_would_be_needed() {
    // no true difference, the boots ±15 % apart and their trials ±2.5 %: two boots a side
    // already show that a hundred would not settle it within ±5 %, so the look after 2
    // blocks stops rather than booting on to 6
    let m = machine();
    let host = m.host(&format!(
        "restart: '{} boot {{{{ kernel }}}}', boots: {{ min: 2, max: 6, until: verdict }}, timeout: 60s",
        m.script().display()
    ));
    let dir = project(&adaptive_experiment(&host, &differing_boots(1.0)));
    let out = as_a_user(dir.path()).args(["run", "experiments/reboots.yaml"]).output().unwrap();
    assert!(out.status.success(), "{}\n{}", stdout(&out), stderr(&out));
    let store = dir.path().join("reports/reboots");
    let boots = boot_trials(&store);
    assert_eq!(boots.len(), 4, "2 blocks, then the stop: {boots:?}\n{}", stderr(&out));
    assert_eq!(m.calls().len(), 4, "{:?}", m.calls());
    let said = format!("{}{}", stdout(&out), stderr(&out));
    let line =
        said.lines().find(|l| l.contains("more boots cannot settle it")).unwrap_or_else(|| panic!("{said}"));
    assert!(
        line.contains(
            "look 1 of 4 after 2 boots of each combination of levels: more boots cannot settle it — "
        ),
        "{line}"
    );
    assert!(line.contains("boots of each would be needed, max is 6; stopping"), "{line}");
    // the summary and the report say why the boots stopped; the verdict claims nothing
    let summary = summary_of(&store);
    let stop = &summary["boots_stopped"];
    assert_eq!(stop.as_array().map(Vec::len), Some(1), "{stop}");
    assert_eq!((stop[0]["host"].as_str(), stop[0]["blocks"].as_u64()), (Some("box"), Some(2)), "{stop}");
    assert_eq!(
        (stop[0]["look"].as_u64(), stop[0]["looks"].as_u64(), stop[0]["max"].as_u64()),
        (Some(1), Some(4), Some(6))
    );
    let needed = stop[0]["needed"].as_u64().unwrap_or(101);
    assert!(needed > 12, "{stop}");
    let verdict = summary["comparisons"][0]["verdict"].as_str().unwrap();
    assert!(["inconclusive", "unbounded"].contains(&verdict), "{verdict}");
    let report = std::fs::read_to_string(store.join("report.md")).unwrap();
    let _ = std::fs::write(std::env::temp_dir().join("margin-futility-report.md"), &report);
    let boots_section = &report[report.find("## Boots").unwrap()..report.find("## Environment").unwrap()];
    assert!(
        boots_section.contains("**Stopped for futility:** margin stopped booting host `box` after 2 boots of each combination of levels (look 1 of 4)"),
        "{boots_section}"
    );
    assert!(boots_section.contains("and `max` is 6."), "{boots_section}");
    // the same command again boots no more: the look stands
    let again = as_a_user(dir.path()).args(["run", "experiments/reboots.yaml"]).output().unwrap();
    assert!(again.status.success(), "{}\n{}", stdout(&again), stderr(&again));
    assert_eq!(m.calls().len(), 4, "{:?}", m.calls());
}

/// Two cells (kernel) compared across `boots: 3` of 3 trials each, `run` the benchmark.
fn fixed_boots(m: &Machine, run: &str) -> (tempfile::TempDir, serde_json::Value, String) {
    let host =
        m.host(&format!("restart: '{} boot {{{{ kernel }}}}', boots: 3, timeout: 60s", m.script().display()));
    let yaml = adaptive_experiment(&host, run).replace("repetitions: 4\n", "repetitions: 9\n");
    let dir = project(&yaml);
    let out = as_a_user(dir.path()).args(["run", "experiments/reboots.yaml"]).output().unwrap();
    assert!(out.status.success(), "{}\n{}", stdout(&out), stderr(&out));
    let store = dir.path().join("reports/reboots");
    assert_eq!(trials_in_boots(&store).iter().map(|(_, n)| *n).collect::<Vec<_>>(), [3; 6]);
    let report = std::fs::read_to_string(store.join("report.md")).unwrap();
    (dir, summary_of(&store), report)
}

#[test]
fn fixed_boots_of_few_noisy_trials_say_more_trials_per_boot_would_have_been_cheaper() {
    // each boot's 3 trials 1, 1.5 and 0.5 s-worth (by repetition), so the boots' means
    // agree: a CV of 50 % within a boot, none between boots; a reboot costs far more than
    // a trial, so boots of 30 trials reach the same standard error for much less
    let m = machine();
    let run = "  awk 'BEGIN { printf \"time %.4f\\n\", 1 + 0.5 * (({{ repetition }} % 3) - 1) }'";
    let (_dir, summary, report) = fixed_boots(&m, run);
    let design = &summary["boot_design"];
    assert_eq!(design.as_array().map(Vec::len), Some(1), "{design}\n{report}");
    let d = &design[0];
    assert_eq!(
        (d["trials_per_boot"].as_f64(), d["better_trials_per_boot"].as_u64()),
        (Some(3.0), Some(30)),
        "{d}"
    );
    assert!(
        d["between_cv_pct"].as_f64().unwrap() < 1e-6 && d["within_cv_pct"].as_f64().unwrap() > 40.0,
        "{d}"
    );
    let (boot, trial) = (d["boot_seconds"].as_f64().unwrap(), d["trial_seconds"].as_f64().unwrap());
    // the ratio is the one the components and times give: (σ²_w/3)(T_b + 3T_t) / ((σ²_w/30)(T_b + 30T_t))
    let expected = 10.0 * (boot + 3.0 * trial) / (boot + 30.0 * trial);
    let ratio = d["cost_ratio"].as_f64().unwrap();
    assert!((ratio - expected).abs() < 1e-9 && ratio >= 1.5, "{d}");
    let _ = std::fs::write(std::env::temp_dir().join("margin-boot-design-report.md"), &report);
    let section = &report[report.find("## Boots").unwrap()..report.find("## Environment").unwrap()];
    assert!(
        section.contains("**The reboots were used poorly** for xen against bare: a reboot took "),
        "{section}"
    );
    assert!(section.contains("boots of 30 trials each would take about "), "{section}");
    assert!(section.contains("than boots of 3 (fewer boots, more trials in each"), "{section}");
    assert!(
        section.contains("next time, more trials per boot, or `boots: { min, max, until: verdict }`"),
        "{section}"
    );
}

#[test]
fn fixed_boots_that_differ_more_than_their_trials_get_no_advice_on_trials_per_boot() {
    // the boots ±15 % apart, their trials within 0.2 %: only boots help, and 3 trials a
    // boot are already about as few as a boot should run
    let m = machine();
    let run = "  s=$(cat \"$MARGIN_SYSROOT/shift\")\n  \
               awk -v s=\"$s\" 'BEGIN { printf \"time %.5f\\n\", s * (1 + 0.001 * ({{ repetition }} % 3)) }'";
    let (_dir, summary, report) = fixed_boots(&m, run);
    assert!(summary.get("boot_design").is_none(), "{}", summary["boot_design"]);
    assert!(report.contains("### time in each boot"), "{report}");
    assert!(!report.contains("used poorly"), "{report}");
}
