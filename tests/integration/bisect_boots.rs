//! `margin bisect` across boots, against a rebootable test machine on loopback (as the
//! boots tests have it: a real sshd whose "reboot", this machine's `restart`, stops it,
//! lays out a new boot — a new boot_id, the version booted written where the
//! experiment's probe reads it — and starts it again). Needs `/usr/sbin/sshd` and root,
//! as the hosts tests do.

use std::time::Duration;

use super::machine::{Machine, kill_once_boot_is_requested, lines};
use super::{as_a_user, stderr, stdout, unique_cell_repetitions, wait_until};

/// The machine's BMC: `boot VERSION` stops the daemon, boots VERSION (the file `version`
/// under its root, which the probe reads, and a `shift` of its own, 1 ± 0.5 %, from the
/// boot's count), starts the daemon. Every call is appended to `calls`.
const MACHINE: &str = r#"#!/bin/bash
set -eu
here=$(cd "$(dirname "$0")" && pwd)
echo "$*" >> "$here/calls"
if [ -s "$here/sshd.pid" ]; then
    kill "$(cat "$here/sshd.pid")" 2>/dev/null || true
    rm -f "$here/sshd.pid"
fi
sleep 0.2
root=$here/root
rm -rf "$root" && mkdir -p "$root"
cp -r "FIXTURES/bare/." "$root/"
echo "$2" > "$root/version"
n=$(( $(cat "$here/count" 2>/dev/null || echo 0) + 1 ))
echo "$n" > "$here/count"
echo "1 + (($n * 37) % 11 - 5) / 1000" | bc -l > "$root/shift"
mkdir -p "$root/proc/sys/kernel/random"
cat /proc/sys/kernel/random/uuid > "$root/proc/sys/kernel/random/boot_id"
/usr/sbin/sshd -f "$here/sshd.conf" -E "$here/sshd.log"
for _ in $(seq 100); do [ -s "$here/sshd.pid" ] && exit 0; sleep 0.1; done
echo "sshd did not start" >&2
exit 1
"#;

/// The machine, up and booted into v1.
fn machine() -> Machine {
    Machine::new(MACHINE, "v1")
}

/// A `hosts:` entry for the machine, rebooted by its script into the version asked for.
fn host(m: &Machine) -> String {
    m.host(&format!("restart: '{} boot {{{{ version }}}}', timeout: 60s", m.script().display()))
}

/// Three versions of the machine, each booted (the version read back by a probe); the
/// time 1 s, and 30 % more from v2 on, times the boot's own shift and a deterministic
/// spread of the trial's repetition (±0.4 %).
fn project(host: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("experiments")).unwrap();
    let yaml = format!(
        "name: booted
matrix:
  host: [box]
  version: [v1, v2, v3]
environment:
  version: {{ probe: 'cat \"$MARGIN_SYSROOT/version\"' }}
hosts:
  box: {host}
run: >-
  s=$(cat \"$MARGIN_SYSROOT/shift\");
  awk -v s=\"$s\" -v v={{{{ version }}}} -v r={{{{ repetition }}}} 'BEGIN {{
  printf \"time %.5f\\n\", (substr(v, 2) >= 2 ? 1.3 : 1) * s * (1 + ((r * 7) % 5 - 2) / 500) }}'
metrics:
  time: {{ regex: 'time ([0-9.]+)', unit: s, better: lower }}
repetitions: 2
"
    );
    std::fs::write(dir.path().join("experiments/booted.yaml"), yaml).unwrap();
    dir
}

const LABEL: &str = "bisect:version:v1..v3";

#[test]
fn a_step_is_found_across_fresh_boots_and_a_bisect_killed_mid_step_resumes() {
    let began = std::time::Instant::now();
    let m = machine();
    let dir = project(&host(&m));
    let store = dir.path().join("reports/booted");
    // the ends take 10 boots at least; boot 13 is in the first step
    let args = ["bisect", "experiments/booted.yaml", "--factor", "version"];
    kill_once_boot_is_requested(dir.path(), &args, &store, 13, Duration::from_secs(240));
    // the killed run's `restart` may still be rebooting the machine: let it end
    std::thread::sleep(Duration::from_millis(800));
    assert!(wait_until(Duration::from_secs(20), || m.dir.path().join("sshd.pid").exists()));
    // the report of the bisection killed midway: where it stands, and how to go on
    let report = as_a_user(dir.path()).args(["report", "experiments/booted.yaml"]).output().unwrap();
    assert!(report.status.success(), "{}", stderr(&report));
    let md = std::fs::read_to_string(store.join("report.md")).unwrap();
    let section = &md[md.find("## Bisect").unwrap_or_else(|| panic!("{md}"))..];
    let _ = std::fs::write(std::env::temp_dir().join("margin-bisect-boots-under-way.md"), section);
    assert!(section.contains("**Not answered yet**: 12 boots, 24 trials in "), "{section}");
    assert!(section.contains("the ends' comparison settled; it measures `v"), "{section}");
    assert!(
        section.contains("`margin bisect experiments/booted.yaml --factor version` goes on from here"),
        "{section}"
    );
    assert!(md.contains("margin rebooted the host into each level its bisection asked for"), "{md}");
    let out = as_a_user(dir.path())
        .args(["bisect", "experiments/booted.yaml", "--factor", "version"])
        .output()
        .unwrap();
    let text = stdout(&out);
    let _ = std::fs::write(std::env::temp_dir().join("margin-bisect-boots.md"), &text);
    assert!(out.status.success(), "{text}\n{}", stderr(&out));
    assert!(stderr(&out).contains("bisection boot 13 (version=v"), "{}", stderr(&out));
    assert!(stderr(&out).contains("asking for it again"), "{}", stderr(&out));
    // its boots numbered among its own, no total promised
    assert!(stderr(&out).contains("bisection boot 13 back in "), "{}", stderr(&out));
    assert!(!stderr(&out).contains(": boot 13 of "), "{}", stderr(&out));
    let first = text.lines().next().unwrap();
    assert!(first.starts_with("found: `v2` made time worse: +"), "{text}");
    assert!(first.ends_with("; last good `v1`"), "{text}");
    assert!(text.contains("one boot a unit (the mean of its 2 trials)"), "{text}");

    // every boot the bisection's, checked, each number verified once; boot 13 asked for
    // twice, its first request killed
    let boots = lines(&store.join("boots.ndjson"));
    assert!(boots.iter().all(|b| b["bisect"] == LABEL), "{boots:?}");
    let verified: Vec<&serde_json::Value> = boots.iter().filter(|b| b["event"] == "verified").collect();
    let numbers: Vec<u64> = verified.iter().map(|b| b["boot"].as_u64().unwrap()).collect();
    assert_eq!(numbers, (1..=numbers.len() as u64).collect::<Vec<_>>(), "{boots:?}");
    let thirteenth: Vec<(&str, u64)> = boots
        .iter()
        .filter(|b| b["boot"] == 13)
        .map(|b| (b["event"].as_str().unwrap(), b["attempt"].as_u64().unwrap()))
        .collect();
    assert_eq!(thirteenth, [("requested", 1), ("requested", 2), ("verified", 2)], "{boots:?}");
    // the machine was asked for each level the log says, in its order
    let requested: Vec<String> = boots
        .iter()
        .filter(|b| b["event"] == "requested")
        .map(|b| format!("boot {}", b["wanted"]["version"].as_str().unwrap()))
        .collect();
    let calls = m.calls();
    assert!(calls.len() >= requested.len() - 1 && calls.len() <= requested.len(), "{calls:?}\n{requested:?}");
    assert_eq!(calls[calls.len() - 1], requested[requested.len() - 1]);
    // the ends first, interleaved: v1, v3, v1, v3, …
    let wanted: Vec<&str> = verified.iter().map(|b| b["wanted"]["version"].as_str().unwrap()).collect();
    assert_eq!(wanted[..10], ["v1", "v3", "v1", "v3", "v1", "v3", "v1", "v3", "v1", "v3"], "{wanted:?}");
    assert!(wanted[10..].contains(&"v2") && wanted[10..].contains(&"v1"), "{wanted:?}");

    // each verified boot ran its level's 2 trials, in sessions of the bisection; nothing twice
    let sessions = lines(&store.join("sessions.ndjson"));
    let trials: Vec<serde_json::Value> =
        lines(&store.join("runs.ndjson")).into_iter().filter(|r| r["status"] == "ok").collect();
    unique_cell_repetitions(&trials);
    for b in &verified {
        let ids: Vec<&str> = sessions
            .iter()
            .filter(|s| s["event"] == "start" && s["facts"]["boot_id"] == b["boot_id"])
            .map(|s| {
                assert_eq!(s["label"], LABEL);
                s["session"].as_str().unwrap()
            })
            .collect();
        let in_boot: Vec<&serde_json::Value> =
            trials.iter().filter(|t| ids.contains(&t["session"].as_str().unwrap())).collect();
        assert_eq!(in_boot.len(), 2, "boot {}: {in_boot:?}", b["boot"]);
        assert!(in_boot.iter().all(|t| t["levels"]["version"] == b["wanted"]["version"]), "{in_boot:?}");
    }

    // the answer in boots, from the store alone: nothing more runs
    let again = as_a_user(dir.path())
        .args(["bisect", "experiments/booted.yaml", "--factor", "version", "--json"])
        .output()
        .unwrap();
    assert!(again.status.success(), "{}", stderr(&again));
    let v: serde_json::Value = serde_json::from_str(&stdout(&again)).unwrap();
    assert_eq!((v["verdict"].as_str(), v["first_bad"].as_str()), (Some("found"), Some("v2")), "{v}");
    assert_eq!(v["boots"].as_u64(), Some(verified.len() as u64), "{v}");
    assert_eq!(v["trials"].as_u64(), Some(2 * verified.len() as u64), "{v}");
    let step_boots: u64 = v["steps"].as_array().unwrap().iter().map(|s| s["boots"].as_u64().unwrap()).sum();
    assert_eq!(step_boots, verified.len() as u64, "{v}");
    assert!(v["ci_low"].as_f64().unwrap() > 1.2 && v["ci_high"].as_f64().unwrap() < 1.4, "{v}");
    assert_eq!(lines(&store.join("boots.ndjson")).len(), boots.len(), "a finished bisection boots nothing");
    // the time it took: every boot's wait and every session, no more than the test has run
    let ready: f64 = verified.iter().map(|b| b["ready_seconds"].as_f64().unwrap()).sum();
    let seconds = v["seconds"].as_f64().unwrap();
    assert!(ready > 0.0 && seconds >= ready, "{seconds} s spent, the boots ready in {ready} s: {v}");
    assert!(seconds <= began.elapsed().as_secs_f64(), "{seconds} s spent in a test of {:?}", began.elapsed());

    // the report's Bisect section says what `margin bisect` said
    let report = as_a_user(dir.path()).args(["report", "experiments/booted.yaml"]).output().unwrap();
    assert!(report.status.success(), "{}", stderr(&report));
    let md = std::fs::read_to_string(store.join("report.md")).unwrap();
    let _ = std::fs::write(std::env::temp_dir().join("margin-bisect-boots-report.md"), &md);
    let section = &md[md.find("## Bisect").unwrap_or_else(|| panic!("{md}"))..];
    assert!(section.contains("### `version` from `v1` to `v3`"), "{section}");
    assert!(section.contains(first), "{first}\n{section}");
    let header = section.lines().find(|l| l.starts_with("| step")).unwrap();
    let columns: Vec<&str> = header.split('|').map(str::trim).filter(|c| !c.is_empty()).collect();
    assert_eq!(columns[columns.len() - 2..], ["trials", "boots"], "{header}");
    let ends = section.lines().find(|l| l.starts_with("| ends ")).unwrap();
    let cells: Vec<&str> = ends.split('|').map(str::trim).filter(|c| !c.is_empty()).collect();
    assert_eq!(cells[cells.len() - 3..], ["regression", "20", "10"], "{ends}");
    assert!(
        section.contains(&format!("{} boots, {} trials in ", verified.len(), 2 * verified.len())),
        "{section}"
    );
}

/// `margin run FILE --confirm A,B` on a series factor that margin boots: the two levels
/// measured again in fresh boots of each, in balanced blocks, until the comparison across
/// the boots is settled (adaptive boots, the file's fixed 3 boots notwithstanding), in a
/// store of its own; the step between v1 and v2 confirmed.
#[test]
fn a_booted_change_is_confirmed_in_fresh_boots_of_both_levels() {
    let m = machine();
    let dir = project(&host(&m));
    let file = dir.path().join("experiments/booted.yaml");
    let yaml = std::fs::read_to_string(&file).unwrap();
    // 2 trials a boot over the first look's 3 blocks
    let yaml = yaml.replace("repetitions: 2", "repetitions: 6");
    std::fs::write(&file, format!("{yaml}analysis:\n  series: [ {{ factor: version }} ]\n")).unwrap();
    let out = as_a_user(dir.path())
        .args(["run", "experiments/booted.yaml", "--confirm", "v1,v2"])
        .output()
        .unwrap();
    let text = stdout(&out);
    assert!(out.status.success(), "{text}\n{}", stderr(&out));
    assert!(text.contains("time (host=box): confirmed: v2 is slower than v1"), "{text}");
    let store = dir.path().join("reports/booted-confirm-v1-v2");
    let boots = lines(&store.join("boots.ndjson"));
    let wanted: Vec<&str> = boots
        .iter()
        .filter(|b| b["event"] == "verified")
        .map(|b| b["wanted"]["version"].as_str().unwrap())
        .collect();
    // at least the first look's 3 blocks, each block both levels once
    assert!(wanted.len() >= 6 && wanted.len().is_multiple_of(2), "{wanted:?}");
    for block in wanted.chunks(2) {
        let mut b = block.to_vec();
        b.sort_unstable();
        assert_eq!(b, ["v1", "v2"], "{wanted:?}");
    }
    assert!(
        !store.parent().unwrap().join("booted").join("runs.ndjson").exists(),
        "the series' own store untouched"
    );
}

/// A host lost in one of the bisection's boots (the machine's ssh gone in the middle of a
/// trial, as a hung boot's is): the bisection stops, says which level could not be
/// measured and how to go on, exit 1; once the machine is up again, the same command
/// resumes in a fresh boot and finds the step.
#[test]
fn a_host_lost_in_a_bisection_boot_stops_it_and_the_same_command_goes_on() {
    let m = machine();
    let dir = project(&host(&m));
    // in the machine's third boot (the bisection's second), the first trial takes the
    // daemon and its own connection down
    let yaml = dir.path().join("experiments/booted.yaml");
    let text = std::fs::read_to_string(&yaml).unwrap().replace(
        "run: >-\n",
        "run: >-\n  here=\"$MARGIN_SYSROOT/..\"; if [ -f \"$here/die\" ] && [ \"$(cat \"$here/count\")\" -ge 3 ]; then\n  \
         rm \"$here/die\"; p=$PPID; while [ \"$p\" -gt 1 ]; do q=$(awk '{print $4}' /proc/$p/stat);\n  \
         case $(cat /proc/$p/comm) in sshd*) kill -9 \"$p\";; esac; p=$q; done; fi;\n",
    );
    std::fs::write(&yaml, text).unwrap();
    m.touch("die", "");
    let args = ["bisect", "experiments/booted.yaml", "--factor", "version"];
    let out = as_a_user(dir.path()).args(args).output().unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{}\n{err}", stdout(&out));
    assert!(!m.dir.path().join("die").exists(), "the machine was not taken down: {err}");
    assert!(err.contains("host box failed: "), "{err}");
    assert!(
        err.contains("bisect: version=v3 could not be measured in its boot; its trials are in "),
        "{err}"
    );
    assert!(err.contains("run the same command again to resume"), "{err}");

    m.call(&[&m.script().display().to_string(), "boot", "v1"]);
    let out = as_a_user(dir.path()).args(args).output().unwrap();
    let text = stdout(&out);
    assert!(out.status.success(), "{text}\n{}", stderr(&out));
    assert!(text.starts_with("found: `v2` made time worse: +"), "{text}");
    // the lost boot's trial stays in the store, unused: every other verified boot ran 2
    let boots = lines(&dir.path().join("reports/booted/boots.ndjson"));
    let verified: Vec<&serde_json::Value> = boots.iter().filter(|b| b["event"] == "verified").collect();
    assert_eq!(verified[1]["wanted"]["version"], "v3", "{boots:?}");
    assert_eq!(verified[2]["wanted"]["version"], "v3", "the lost boot's level booted again: {boots:?}");
}
