//! `margin run` / `margin status`: real commands through the real binary — resume,
//! hooks, quoting, the lock, timeouts, failures, kill -9, Ctrl-C, environment gating,
//! a full disk, and dd end to end.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use super::{stderr, stdout};

/// A temp folder with one experiment file and its own store root.
struct Fixture {
    dir: tempfile::TempDir,
    file: PathBuf,
}

impl Fixture {
    fn new(yaml: &str) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("exp.yaml");
        std::fs::write(&file, yaml).unwrap();
        Fixture { dir, file }
    }

    fn reports(&self) -> PathBuf {
        self.dir.path().join("reports")
    }

    fn store(&self) -> PathBuf {
        self.reports().join("exp")
    }

    fn margin(&self) -> assert_cmd::Command {
        let mut cmd = super::margin();
        cmd.env("MARGIN_REPORTS", self.reports()).env_remove("MARGIN_SYSROOT");
        cmd
    }

    fn run(&self, extra: &[&str]) -> std::process::Output {
        self.margin().arg("run").arg(&self.file).args(extra).output().unwrap()
    }

    /// `margin run` on a terminal (`script` gives it one): whether it succeeded, and what
    /// it showed there.
    fn run_on_a_terminal(&self, extra: &[&str]) -> (bool, String) {
        let margin = assert_cmd::cargo::cargo_bin!("margin");
        let command = format!("{} run {} {}", margin.display(), self.file.display(), extra.join(" "));
        let out = std::process::Command::new("script")
            .args(["-qec", &command, "/dev/null"])
            .env("MARGIN_REPORTS", self.reports())
            .env_remove("MARGIN_SYSROOT")
            .output()
            .expect("script (bsdutils) runs a command on a terminal");
        (out.status.success(), String::from_utf8_lossy(&out.stdout).into_owned())
    }

    fn spawn(&self) -> Child {
        std::process::Command::new(assert_cmd::cargo::cargo_bin!("margin"))
            .arg("run")
            .arg(&self.file)
            .env("MARGIN_REPORTS", self.reports())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap()
    }

    /// Every record that parses; the count of lines that do not. Zeros at the end are the
    /// room a run lays ahead of its records (README, the store), not a line.
    fn records(&self) -> (Vec<serde_json::Value>, usize) {
        let text = std::fs::read_to_string(self.store().join("runs.ndjson")).unwrap_or_default();
        let text = text.trim_end_matches('\0');
        let mut torn = 0;
        let mut out = Vec::new();
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            match serde_json::from_str(line) {
                Ok(v) => out.push(v),
                Err(_) => torn += 1,
            }
        }
        (out, torn)
    }

    fn ok_per_cell(&self) -> HashMap<String, usize> {
        let mut map = HashMap::new();
        for r in self.records().0 {
            if r["status"] == "ok" && r["warmup"] == false {
                *map.entry(r["levels"].to_string()).or_default() += 1;
            }
        }
        map
    }
}

/// How long a process that should end has to leave the process table (a killed one takes
/// a moment, more on a loaded machine) before the test fails on it.
const GONE_WITHIN: Duration = Duration::from_secs(10);

const VALUE: &str = "metrics:\n  value: { regex: 'value=(\\d+)', better: higher }\n";

#[test]
fn five_then_eight_repetitions_runs_exactly_three_more_per_cell() {
    let f =
        Fixture::new(&format!("matrix:\n  n: [1, 2]\nrun: echo value={{{{ n }}}}\n{VALUE}repetitions: 5\n"));
    let out = f.run(&[]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("exp: 2 of 2 cells complete, 0 pending on this host, 0 abandoned"),
        "{}",
        stdout(&out)
    );
    assert!(f.ok_per_cell().values().all(|n| *n == 5), "{:?}", f.ok_per_cell());
    let out = f.run(&["--repetitions", "8"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("this session: 6 ok, 0 failed"), "{}", stdout(&out));
    assert!(f.ok_per_cell().values().all(|n| *n == 8), "{:?}", f.ok_per_cell());
    let out = f.run(&["--repetitions", "8"]);
    assert!(stdout(&out).contains("this session: 0 ok"), "{}", stdout(&out));
    let (records, torn) = f.records();
    assert_eq!((records.len(), torn), (16, 0));
    super::unique_cell_repetitions(&records);
    let values: HashSet<u64> =
        records.iter().map(|r| r["metrics"]["value"].as_f64().unwrap() as u64).collect();
    assert_eq!(values, HashSet::from([1, 2]));
    for r in &records {
        assert!(r["metrics"]["wall_time"].as_f64().unwrap() > 0.0);
        let raw = f.store().join(r["raw"]["stdout"].as_str().unwrap());
        assert_eq!(
            std::fs::read_to_string(raw).unwrap().trim(),
            format!("value={}", r["levels"]["n"].as_str().unwrap())
        );
    }
    let status = f.margin().arg("status").arg(&f.file).output().unwrap();
    assert!(stdout(&status).contains("cells: 2 — 2 done, 0 to run here, 0 pending"), "{}", stdout(&status));
    assert!(stdout(&status).contains("trials: 16 measured, 0 failed"), "{}", stdout(&status));
}

#[test]
fn hooks_run_in_the_documented_order() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("hooks.log");
    let log = log.display();
    let f = Fixture::new(&format!(
        "matrix:\n  n: [1, 2]\norder: sequential\nwarmup: 1\nrepetitions: 2\n\
         setup: echo setup {{{{ n }}}} >> {log}\n\
         prepare: echo prepare {{{{ n }}}} {{{{ repetition }}}} >> {log}\n\
         run: echo run {{{{ n }}}} {{{{ repetition }}}} >> {log}\n\
         conclude: echo conclude {{{{ n }}}} {{{{ repetition }}}} >> {log}\n\
         cleanup: echo cleanup {{{{ n }}}} >> {log}\n"
    ));
    let out = f.run(&[]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = std::fs::read_to_string(dir.path().join("hooks.log")).unwrap();
    let mut expected = Vec::new();
    for n in [1, 2] {
        expected.push(format!("setup {n}"));
        for rep in 1..=3 {
            expected.extend([
                format!("prepare {n} {rep}"),
                format!("run {n} {rep}"),
                format!("conclude {n} {rep}"),
            ]);
        }
        expected.push(format!("cleanup {n}"));
    }
    assert_eq!(text.lines().collect::<Vec<_>>(), expected);
    let (records, _) = f.records();
    let warmups: Vec<bool> = records.iter().map(|r| r["warmup"].as_bool().unwrap()).collect();
    assert_eq!(warmups, [true, false, false, true, false, false]);
    assert!(!f.store().join("work").exists(), "workdirs are removed");
}

#[test]
fn a_failing_hook_fails_the_trial_and_the_run_goes_on() {
    let f = Fixture::new(&format!(
        "matrix:\n  n: [1, 2]\nprepare: test {{{{ n }}}} = 1 || {{ echo no prep >&2; exit 4; }}\n\
         run: echo value=1\n{VALUE}repetitions: 2\nmax_failures: 2\n"
    ));
    let out = f.run(&[]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let (records, _) = f.records();
    let failed: Vec<&serde_json::Value> = records.iter().filter(|r| r["status"] == "failed").collect();
    assert_eq!(failed.len(), 2);
    assert!(failed.iter().all(|r| r["levels"]["n"] == "2"));
    assert!(
        failed[0]["error"].as_str().unwrap().contains("`prepare` failed: exit code 4: no prep"),
        "{}",
        failed[0]
    );
    assert_eq!(f.ok_per_cell().values().copied().collect::<Vec<_>>(), [2]);
    assert!(stdout(&out).contains("abandoned n=2: 2 failures"), "{}", stdout(&out));
    let status = |f: &Fixture| stdout(&f.margin().arg("status").arg(&f.file).output().unwrap());
    let counts = "cells: 2 — 1 done, 0 to run here, 0 pending (other host or boot), 1 abandoned";
    assert!(status(&f).contains(counts), "{}", status(&f));
    // an import runs nothing and abandons nothing: the cell stays abandoned
    let raw = f.dir.path().join("out.txt");
    std::fs::write(&raw, "value=7\n").unwrap();
    let import = f.margin().arg("import").arg(&f.file).args(["--set", "n=1"]).arg(&raw).output().unwrap();
    assert!(import.status.success(), "{}", stderr(&import));
    assert!(status(&f).contains(counts), "{}", status(&f));
}

#[test]
fn shell_metacharacters_in_levels_stay_inert() {
    let dir = tempfile::tempdir().unwrap();
    let pwned = dir.path().join("pwned");
    let attack1 = format!("x; touch {}", pwned.display());
    let attack2 = format!("$(touch {})", pwned.display());
    let attack3 = format!("`touch {}`", pwned.display());
    let yaml = format!(
        "matrix:\n  x: [{:?}, {:?}, {:?}]\nrun: \"printf '%s' {{{{ x }}}}\"\nrepetitions: 1\n",
        attack1, attack2, attack3
    );
    let f = Fixture::new(&yaml);
    let out = f.run(&[]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!pwned.exists(), "a level was executed by the shell");
    let (records, _) = f.records();
    let printed: HashSet<String> = records
        .iter()
        .map(|r| std::fs::read_to_string(f.store().join(r["raw"]["stdout"].as_str().unwrap())).unwrap())
        .collect();
    assert_eq!(printed, HashSet::from([attack1, attack2, attack3]));
}

#[test]
fn a_second_run_exits_2_and_names_the_first() {
    let f = Fixture::new("matrix:\n  n: [1]\nrun: sleep 3\nrepetitions: 1\n");
    let mut first = f.spawn();
    let lock = f.store().join("lock");
    let start = Instant::now();
    while std::fs::read_to_string(&lock).map(|t| t.trim().is_empty()).unwrap_or(true) {
        assert!(start.elapsed() < Duration::from_secs(20), "the first run never took the lock");
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = f.run(&[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains(&format!(
            "another `margin run` (pid {}) is writing this experiment's store",
            first.id()
        )),
        "{}",
        stderr(&out)
    );
    assert!(first.wait().unwrap().success());
}

#[test]
fn a_timeout_kills_the_trial_and_its_grandchildren() {
    let marker = format!("40.{}", std::process::id());
    let f = Fixture::new(&format!(
        "matrix:\n  n: [1]\nrun: sleep {marker} & sleep {marker}; echo value=1\n{VALUE}\
         repetitions: 1\ntimeout: 300ms\nmax_failures: 1\n"
    ));
    let start = Instant::now();
    let out = f.run(&[]);
    assert!(start.elapsed() < Duration::from_secs(10));
    assert_eq!(out.status.code(), Some(1));
    let (records, _) = f.records();
    assert_eq!(records.len(), 1);
    assert_eq!(records[0]["status"], "timeout");
    assert!(records[0]["error"].as_str().unwrap().contains("timed out after"), "{}", records[0]);
    assert!(
        super::wait_until(GONE_WITHIN, || super::running(&marker) == 0),
        "a sleep outlived its trial by {GONE_WITHIN:?}: {} left",
        super::running(&marker)
    );
}

/// A run command killed by a signal (not margin's timeout) is a failed trial whose output
/// was saved all the same: its record links the raw files, which hold what it printed.
#[test]
fn a_trial_killed_by_a_signal_keeps_its_raw_output() {
    let f = Fixture::new(&format!(
        "matrix:\n  n: [1]\nrun: echo value=1; echo dying >&2; kill -9 $$\n{VALUE}repetitions: 1\nmax_failures: 1\n"
    ));
    let out = f.run(&[]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let (records, _) = f.records();
    assert_eq!(records.len(), 1);
    let r = &records[0];
    assert_eq!(r["status"], "failed");
    assert!(r["error"].as_str().unwrap().contains("killed by signal 9"), "{r}");
    let read = |which: &str| {
        let rel = r["raw"][which].as_str().unwrap_or_else(|| panic!("no raw {which}: {r}"));
        std::fs::read_to_string(f.store().join(rel)).unwrap()
    };
    assert_eq!(read("stdout"), "value=1\n");
    assert_eq!(read("stderr"), "dying\n");
}

#[test]
fn an_output_without_the_metric_is_a_parse_error_quoting_it() {
    let f = Fixture::new(&format!(
        "matrix:\n  n: [1]\nrun: echo nothing to see\n{VALUE}repetitions: 1\nmax_failures: 1\n"
    ));
    let out = f.run(&[]);
    assert_eq!(out.status.code(), Some(1));
    let (records, _) = f.records();
    assert_eq!(records[0]["status"], "parse_error");
    assert!(records[0]["error"].as_str().unwrap().contains("nothing to see"), "{}", records[0]);
}

#[test]
fn kill_9_at_twenty_moments_loses_no_trial_and_duplicates_none() {
    let f = Fixture::new(&format!(
        "matrix:\n  n: [1, 2, 3, 4]\nrun: sleep 0.01; echo value={{{{ n }}}}\n{VALUE}repetitions: 12\nwarmup: 1\n"
    ));
    let mut before: Vec<serde_json::Value> = Vec::new();
    for i in 0..20u64 {
        let mut child = f.spawn();
        std::thread::sleep(Duration::from_millis(40 + (i * 61) % 400));
        let _ = child.kill(); // SIGKILL
        let _ = child.wait();
        let (records, torn) = f.records();
        assert!(torn <= 1, "only a last line can be torn: {torn}");
        for r in &before {
            assert!(records.contains(r), "a completed trial was lost after kill {i}: {r}");
        }
        super::unique_cell_repetitions(&records);
        let status = f.margin().arg("status").arg(&f.file).output().unwrap();
        assert!(status.status.success(), "the log does not load after kill {i}: {}", stderr(&status));
        before = records;
    }
    assert!(!before.is_empty(), "no trial ran in 20 attempts");
    let out = f.run(&[]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(f.ok_per_cell().values().all(|n| *n == 12), "{:?}", f.ok_per_cell());
    assert_eq!(f.ok_per_cell().len(), 4);
    super::unique_cell_repetitions(&f.records().0);
    // the workdirs the killed runs left were removed by the next
    assert!(
        !f.store().join("work").exists(),
        "workdirs left: {:?}",
        std::fs::read_dir(f.store().join("work")).map(|d| d.count())
    );
    // the run that finished gave back the room it laid ahead: the log ends with a record
    let log = std::fs::read(f.store().join("runs.ndjson")).unwrap();
    assert!(log.ends_with(b"}\n") && !log.contains(&0), "zeros left in the log");
}

#[test]
fn ctrl_c_records_the_trial_under_way_and_exits_130() {
    let f =
        Fixture::new(&format!("matrix:\n  n: [1]\nrun: sleep 0.4; echo value=1\n{VALUE}repetitions: 4\n"));
    let mut child = f.spawn();
    // a trial done, then into the next one (0.4 s long) before the Ctrl-C
    assert!(
        super::wait_until(Duration::from_secs(20), || !f.records().0.is_empty()),
        "no trial was recorded within 20 s"
    );
    std::thread::sleep(Duration::from_millis(200));
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), nix::sys::signal::Signal::SIGINT)
        .unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    let (records, torn) = f.records();
    assert_eq!(torn, 0);
    assert!(!records.is_empty() && records.len() < 4, "{} records", records.len());
    assert!(records.iter().all(|r| r["status"] == "ok"), "the trial under way finished and was recorded");
    let log = std::fs::read(f.store().join("runs.ndjson")).unwrap();
    assert!(!log.contains(&0), "an interrupted run leaves no zeros in the log");
    let out = f.run(&[]);
    assert!(out.status.success());
    assert_eq!(f.ok_per_cell().values().copied().collect::<Vec<_>>(), [4]);
}

#[test]
fn environment_cells_wait_for_a_matching_host_and_accumulate() {
    let yaml = format!(
        "matrix:\n  kernel: [xen, bare]\n  n: [1, 2]\nenvironment:\n  kernel: {{ fact: hypervisor, map: {{ xen: xen, none: bare }} }}\n\
         run: echo value={{{{ n }}}}\n{VALUE}repetitions: 2\n"
    );
    let f = Fixture::new(&yaml);
    let sysroot = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/sysroot");
    let plan =
        f.margin().env("MARGIN_SYSROOT", sysroot.join("xen-dom0")).arg("plan").arg(&f.file).output().unwrap();
    let text = stdout(&plan);
    assert!(text.contains("on this host: 2 cells to run, 0 done, 2 pending"), "{text}");
    assert!(text.contains("  2 cells: needs kernel=bare; this host is kernel=xen"), "{text}");
    let out =
        f.margin().env("MARGIN_SYSROOT", sysroot.join("xen-dom0")).arg("run").arg(&f.file).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("2 of 4 cells complete, 2 pending on this host"), "{text}");
    assert!(
        text.contains(
            "2 cells (kernel=bare n=1, kernel=bare n=2): needs kernel=bare; this host is kernel=xen"
        ),
        "{text}"
    );
    assert!(text.contains("run `margin run"), "{text}");
    let kernels: HashSet<String> =
        f.records().0.iter().map(|r| r["levels"]["kernel"].as_str().unwrap().to_string()).collect();
    assert_eq!(kernels, HashSet::from(["xen".to_string()]));
    // rebooted bare: the same command completes the experiment
    let out =
        f.margin().env("MARGIN_SYSROOT", sysroot.join("bare")).arg("run").arg(&f.file).output().unwrap();
    assert!(stdout(&out).contains("4 of 4 cells complete, 0 pending"), "{}", stdout(&out));
    assert_eq!(f.ok_per_cell().len(), 4);
    let sessions = std::fs::read_to_string(f.store().join("sessions.ndjson")).unwrap();
    let starts: Vec<serde_json::Value> = sessions
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .filter(|v: &serde_json::Value| v["event"] == "start")
        .collect();
    assert_eq!(starts[0]["facts"]["xen_role"], "dom0");
    assert_eq!(starts[1]["facts"]["hypervisor"], "none");
    assert_eq!(starts[1]["environment"]["kernel"], "bare");
}

#[test]
fn a_full_disk_stops_the_run_and_the_log_still_loads() {
    let f = Fixture::new(&format!(
        "matrix:\n  n: [1, 2, 3]\nrun: echo value=1; head -c 20000 /dev/zero | tr '\\\\0' x\n{VALUE}repetitions: 30\n"
    ));
    let (out, root) = on_a_full_disk(&f);
    let text = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{text}");
    assert!(text.contains("the disk is full"), "{text}");
    assert!(text.contains("run the same command again to resume"), "{text}");
    // whichever write the disk refused, the message names its file
    assert!(text.contains("/raw/") || text.contains(".ndjson"), "which file? {text}");
    // the log that the full disk cut short still loads, with every trial before it
    let log = std::fs::read_to_string(root.join("exp/runs.ndjson")).unwrap();
    let records: Vec<&str> = log.trim_end_matches('\0').lines().collect();
    assert!(records.len() > 1, "trials before the disk filled are kept: {}", records.len());
    assert!(records.iter().filter(|l| serde_json::from_str::<serde_json::Value>(l).is_err()).count() <= 1);
    let status = f.margin().env("MARGIN_REPORTS", &root).arg("status").arg(&f.file).output().unwrap();
    assert!(status.status.success(), "{}", stderr(&status));
    assert!(stdout(&status).contains("trials"), "{}", stdout(&status));
}

#[test]
fn a_full_disk_while_saving_a_trials_output_names_the_file() {
    let f = Fixture::new(&format!(
        "matrix:\n  n: [1]\nrun: echo value=1; head -c 400000 /dev/zero | tr '\\\\0' x\n{VALUE}repetitions: 1\n"
    ));
    let (out, _) = on_a_full_disk(&f);
    let text = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{text}");
    assert!(text.contains("the disk is full"), "{text}");
    assert!(text.contains("/raw/") && text.contains(".out"), "the file is named: {text}");
}

/// `margin run` of the fixture with its store on a 300 KiB tmpfs: mounted as root, or
/// else in a user namespace of our own, where margin runs too and the store is copied
/// out before the namespace ends. Without either there is no full disk to test, and the
/// test says so. The run's output, and where the store's copy is.
fn on_a_full_disk(f: &Fixture) -> (std::process::Output, PathBuf) {
    std::fs::create_dir_all(f.reports()).unwrap();
    let margin = assert_cmd::cargo::cargo_bin!("margin");
    let mounted = std::process::Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=300k", "tmpfs"])
        .arg(f.reports())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if mounted {
        let out = f.run(&[]);
        let copy = f.dir.path().join("copy");
        std::fs::create_dir_all(&copy).unwrap();
        assert!(
            std::process::Command::new("cp").arg("-a").arg(f.store()).arg(&copy).status().unwrap().success()
        );
        let _ = std::process::Command::new("umount").arg("-l").arg(f.reports()).status();
        (out, copy)
    } else {
        let copy = f.dir.path().join("copy");
        let script = "mount -t tmpfs -o size=300k tmpfs \"$1\" || exit 99; \"$3\" run \"$4\"; rc=$?; cp -a \"$1\" \"$2\"; exit $rc";
        let out = std::process::Command::new("unshare")
            .args(["--user", "--map-root-user", "--mount", "sh", "-c", script, "sh"])
            .args([f.reports().as_path(), copy.as_path(), Path::new(&margin), f.file.as_path()])
            .env("MARGIN_REPORTS", f.reports())
            .env_remove("MARGIN_SYSROOT")
            .output()
            .unwrap();
        assert_ne!(
            out.status.code(),
            Some(99),
            "no full disk to test: not root, no user namespace: {}",
            stderr(&out)
        );
        (out, copy)
    }
}

#[test]
fn fresh_moves_the_log_aside_and_changed_commands_set_records_aside() {
    let f = Fixture::new(&format!("matrix:\n  n: [1]\nrun: echo value=1\n{VALUE}repetitions: 2\n"));
    assert!(f.run(&[]).status.success());
    std::fs::write(&f.file, format!("matrix:\n  n: [1]\nrun: echo value=2\n{VALUE}repetitions: 2\n"))
        .unwrap();
    let status = f.margin().arg("status").arg(&f.file).output().unwrap();
    assert!(
        stdout(&status).contains("set aside: 2 records of cells whose commands have changed"),
        "{}",
        stdout(&status)
    );
    let out = f.run(&[]);
    assert!(stdout(&out).contains("set aside: 2 records"), "{}", stdout(&out));
    assert_eq!(f.records().0.len(), 4);
    let out = f.run(&["--fresh"]);
    assert!(out.status.success());
    assert!(stderr(&out).contains("--fresh: the old log is now"), "{}", stderr(&out));
    assert_eq!(f.records().0.len(), 2);
    let aside: Vec<PathBuf> = std::fs::read_dir(f.store())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with("runs.2"))
        .collect();
    assert_eq!(aside.len(), 1);
    assert_eq!(std::fs::read_to_string(&aside[0]).unwrap().lines().count(), 4);
}

#[test]
fn dry_run_shows_the_commands_and_runs_nothing() {
    let f = Fixture::new("matrix:\n  n: [1, 2]\nrun: touch {{ workdir }}/ran-{{ n }}\nrepetitions: 3\n");
    let out = f.run(&["--dry-run"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("n=1: 3 trials of `touch "), "{text}");
    assert!(text.contains("-SESSION/ran-1`"), "the workdir as a session names it: {text}");
    assert!(!f.store().join("runs.ndjson").exists());
    // a value that is not plain text: the command refers to it, and the dry run shows it
    let f = Fixture::new("matrix:\n  x: ['a b; c']\nrun: printf '%s' {{ x }}\nrepetitions: 1\n");
    let text = stdout(&f.run(&["--dry-run"]));
    assert!(text.contains("1 trials of `printf '%s' ${MARGIN_VALUE_1+\"${MARGIN_VALUE_1}\"}`"), "{text}");
    assert!(text.contains("with MARGIN_VALUE_1='a b; c'"), "{text}");
}

#[test]
fn the_default_dd_experiment_runs_end_to_end() {
    let dir = tempfile::tempdir().unwrap();
    let out = super::margin()
        .env("MARGIN_REPORTS", dir.path())
        .args(["run", "experiments/dd-write.yaml", "--repetitions", "2"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}\n{}", stdout(&out), stderr(&out));
    let text = std::fs::read_to_string(dir.path().join("dd-write/runs.ndjson")).unwrap();
    let records: Vec<serde_json::Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(records.len(), 9 * 3, "2 trials and a warm-up per cell");
    for r in &records {
        assert_eq!(r["status"], "ok", "{r}");
        // `metrics: { throughput: … }` selects the one metric the experiment is about
        let names: Vec<&str> = r["metrics"].as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(names, ["system_time", "throughput", "user_time", "wall_time"]);
        let throughput = r["metrics"]["throughput"].as_f64().unwrap();
        // 64 MiB in less than the trial's wall time
        let wall = r["metrics"]["wall_time"].as_f64().unwrap();
        assert!(throughput * wall > 64.0 * 1024.0 * 1024.0 * 0.99, "{throughput} B/s in {wall} s");
        let raw =
            std::fs::read_to_string(dir.path().join("dd-write").join(r["raw"]["stderr"].as_str().unwrap()))
                .unwrap();
        assert!(raw.contains("67108864 bytes"), "{raw}");
        assert_eq!(r["metric_info"]["throughput"]["unit"], "B/s");
        assert_eq!(r["metric_info"]["throughput"]["mean"], "harmonic");
    }
}

#[test]
fn real_fio_runs_end_to_end() {
    let f = Fixture::new(
        "matrix:\n  rw: [write, read]\n\
         run: fio --name=job --rw={{ rw }} --size=4M --bs=64k --directory={{ workdir }} --output-format=json\n\
         parse: fio\nrepetitions: 2\norder: sequential\n",
    );
    let out = f.run(&[]);
    assert!(out.status.success(), "is fio installed? {}\n{}", stdout(&out), stderr(&out));
    let (records, _) = f.records();
    assert_eq!(records.len(), 4);
    for r in &records {
        let rw = r["levels"]["rw"].as_str().unwrap();
        let bw = r["metrics"][format!("job.{rw}.bw")].as_f64().unwrap();
        let io_bytes = r["metrics"][format!("job.{rw}.io_bytes")].as_f64().unwrap();
        assert_eq!(io_bytes, 4.0 * 1024.0 * 1024.0, "{r}");
        assert!(bw > 1e6, "{rw}: {bw} B/s");
        assert_eq!(r["metric_info"][format!("job.{rw}.bw")]["unit"], "B/s");
        assert!(r["metrics"][format!("job.{rw}.iops")].as_f64().unwrap() > 0.0);
    }
}

#[test]
fn adaptive_repetitions_stop_on_precision_or_at_max() {
    // cell `steady` always prints 100: its margin is 0 after `min` trials; cell `noisy`
    // alternates 1 and 100 and never gets within 5 %: it runs to `max`.
    let f = Fixture::new(&format!(
        "matrix:\n  kind: [steady, noisy]\n\
         run: \"{{% if kind == 'steady' or repetition % 2 == 0 %}}echo value=100{{% else %}}echo value=1{{% endif %}}\"\n\
         {VALUE}repetitions: {{ min: 5, max: 9, target: 5% }}\n"
    ));
    let out = f.run(&["--keep-workdir"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let counts = f.ok_per_cell();
    assert_eq!(counts[r#"{"kind":"steady"}"#], 5, "{counts:?}");
    assert_eq!(counts[r#"{"kind":"noisy"}"#], 9, "{counts:?}");
    let kept = || std::fs::read_dir(f.store().join("work")).unwrap().count();
    assert_eq!(kept(), 2, "--keep-workdir keeps each cell's scratch directory");
    // the next session gets fresh ones, and keeps them beside the old
    let out = f.run(&["--keep-workdir", "--repetitions", "10"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(kept(), 4, "each session's workdirs are its own");
}

#[test]
fn a_trial_that_cannot_start_is_a_failed_trial_and_the_run_goes_on() {
    // the first trial's conclude removes the workdir the next ones would start in
    let f = Fixture::new(&format!(
        "matrix:\n  n: [1]\nrun: echo value=1\nconclude: rm -rf {{{{ workdir }}}}\n{VALUE}repetitions: 3\nmax_failures: 5\n"
    ));
    let out = f.run(&[]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let (records, torn) = f.records();
    // one trial ok, then failures until max_failures abandons the cell
    assert_eq!((records.len(), torn), (6, 0));
    assert_eq!(records[0]["status"], "ok");
    for r in &records[1..] {
        assert_eq!(r["status"], "failed");
        let error = r["error"].as_str().unwrap();
        assert!(error.starts_with("the run command: could not start in "), "{error}");
        assert!(error.contains("No such file or directory"), "{error}");
    }
    assert!(stdout(&out).contains("report: "), "the run ends with its report: {}", stdout(&out));
}

/// On a terminal the progress bar takes stderr: the notes said before it is drawn (the
/// log moved aside by `--fresh`, a torn line skipped) still reach the screen.
#[test]
fn notes_before_the_bar_starts_reach_the_terminal() {
    let f = Fixture::new(&format!("matrix:\n  n: [1]\nrun: echo value=1\n{VALUE}repetitions: 1\n"));
    assert!(f.run(&[]).status.success());
    std::fs::OpenOptions::new()
        .append(true)
        .open(f.store().join("runs.ndjson"))
        .and_then(|mut log| std::io::Write::write_all(&mut log, b"{\"torn"))
        .unwrap();
    let (ok, shown) = f.run_on_a_terminal(&["--repetitions", "2"]);
    assert!(ok, "{shown}");
    assert!(shown.contains("skipped a record that does not parse"), "{shown}");
    let (_, shown) = f.run_on_a_terminal(&["--fresh"]);
    assert!(shown.contains("--fresh: the old log is now"), "{shown}");
}

/// A second Ctrl-C stops margin at once and takes the trial under way with it: the
/// benchmark is in its own process group, where the terminal's Ctrl-C never reaches.
#[test]
fn a_second_ctrl_c_ends_the_trial_under_way_too() {
    let marker = format!("{}.{}", 31 + std::process::id() % 1000, 7);
    let f = Fixture::new(&format!(
        "matrix:\n  n: [1]\nrun: sleep {marker} | cat; echo value=1\n{VALUE}repetitions: 2\n"
    ));
    let mut child = f.spawn();
    let start = Instant::now();
    while super::running(&format!("sleep {marker}")) == 0 {
        assert!(start.elapsed() < Duration::from_secs(10), "the trial never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    let pid = nix::unistd::Pid::from_raw(child.id() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT).unwrap();
    std::thread::sleep(Duration::from_millis(200));
    assert!(child.try_wait().unwrap().is_none(), "the first Ctrl-C waits for the trial under way");
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT).unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    assert!(start.elapsed() < Duration::from_secs(10), "margin waited for the trial");
    // killed as margin left; on a loaded machine it takes a moment to leave /proc
    assert!(
        super::wait_until(GONE_WITHIN, || super::running(&format!("sleep {marker}")) == 0),
        "the trial outlived margin by {GONE_WITHIN:?}"
    );
    // nothing was recorded for the trial cut short, and the log loads
    assert_eq!(f.records(), (vec![], 0));
    assert!(f.margin().arg("status").arg(&f.file).output().unwrap().status.success());
}

/// A failed `setup` abandons its cell, a failed `cleanup` is a failure of its cell: the
/// run says both, exits 1, and the report lists them (no trial record holds either).
#[test]
fn failed_setup_and_cleanup_are_reported_with_their_cells() {
    let f = Fixture::new(&format!(
        "matrix:\n  n: [1, 2, 3]\n\
         setup: test {{{{ n }}}} != 1 || {{ echo no setup >&2; exit 3; }}\n\
         cleanup: test {{{{ n }}}} != 2 || {{ echo no cleanup >&2; exit 5; }}\n\
         run: echo value=1\n{VALUE}repetitions: 2\n"
    ));
    let out = f.run(&[]);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{text}{}", stderr(&out));
    assert!(text.contains("abandoned n=1: `setup` failed: exit code 3: no setup"), "{text}");
    assert!(text.contains("cleanup failed n=2: `cleanup` failed: exit code 5: no cleanup"), "{text}");
    assert_eq!(f.ok_per_cell().len(), 2, "n=2 and n=3 ran");
    let report = std::fs::read_to_string(f.store().join("report.md")).unwrap();
    let rows: Vec<&str> =
        report.lines().filter(|l| l.contains("| abandoned ") || l.contains("| cleanup failed ")).collect();
    assert_eq!(rows.len(), 2, "{report}");
    assert!(rows[0].starts_with("| n=1 ") && rows[0].contains("| abandoned "), "{}", rows[0]);
    assert!(rows[0].contains("`setup` failed: exit code 3: no setup"), "{}", rows[0]);
    assert!(rows[1].starts_with("| n=2 ") && rows[1].contains("| cleanup failed "), "{}", rows[1]);
    assert!(
        report.contains(
            "- n=1: abandoned by the last run (`setup` failed: exit code 3: no setup; see Failures)"
        ),
        "{report}"
    );
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(f.store().join("summary.json")).unwrap()).unwrap();
    let cells = summary["cell_failures"].as_array().unwrap();
    assert_eq!(cells.len(), 2);
    assert_eq!((cells[1]["cell"].as_str(), cells[1]["what"].as_str()), (Some("n=2"), Some("cleanup failed")));
}

/// On a terminal the bar counts trials and cells, and the closing summary follows it.
#[test]
fn the_bar_counts_trials_and_cells_on_a_terminal() {
    // in order, so that the first cell's end shows for the second's three trials
    let f = Fixture::new(&format!(
        "matrix:\n  n: [1, 2]\nrun: sleep 0.15; echo value=1\n{VALUE}repetitions: 3\norder: sequential\n"
    ));
    let (ok, shown) = f.run_on_a_terminal(&[]);
    assert!(ok, "{shown}");
    assert!(shown.contains("2 cells, 6 trials"), "{shown}");
    assert!(shown.contains("/6 trials"), "{shown}");
    assert!(shown.contains("/2 cells · ETA"), "{shown}");
    assert!(shown.contains("1/2 cells"), "a cell's end is counted: {shown}");
    assert!(shown.contains("2 of 2 cells complete"), "{shown}");
}

/// Interleaved order: each round visits every unfinished cell once, in an order drawn
/// from the seed; the seed is recorded, and the same seed gives the same order.
#[test]
fn the_interleaved_order_follows_the_seed_and_is_recorded() {
    let yaml = format!("matrix:\n  n: [1, 2, 3, 4]\nrun: echo value=1\n{VALUE}repetitions: 3\n");
    let order = |seed: &str| {
        let f = Fixture::new(&yaml);
        let out = f.run(&["--seed", seed]);
        assert!(out.status.success(), "{}", stderr(&out));
        let (mut records, _) = f.records();
        records.sort_by_key(|r| (r["round"].as_u64(), r["position"].as_u64()));
        let mut rounds: Vec<Vec<String>> = vec![Vec::new(); 3];
        for r in &records {
            let round = r["round"].as_u64().unwrap() as usize;
            assert_eq!(r["position"].as_u64().unwrap() as usize, rounds[round - 1].len() + 1, "{r}");
            rounds[round - 1].push(r["levels"]["n"].as_str().unwrap().to_string());
        }
        for round in &rounds {
            let mut cells = round.clone();
            cells.sort();
            assert_eq!(cells, ["1", "2", "3", "4"], "each round visits every cell once: {rounds:?}");
        }
        let sessions = std::fs::read_to_string(f.store().join("sessions.ndjson")).unwrap();
        let start: serde_json::Value = serde_json::from_str(sessions.lines().next().unwrap()).unwrap();
        assert_eq!(start["seed"].to_string(), seed);
        rounds
    };
    let a = order("5");
    assert_eq!(order("5"), a, "the same seed, the same order");
    let b = order("6");
    assert_ne!(b, a, "another seed, another order");
    assert!(
        a.iter().any(|round| round != &a[0]) || b.iter().any(|round| round != &b[0]),
        "rounds are shuffled anew"
    );
}

/// A cell of a host without ssh (`here: {}`) runs on this machine: abandoned there, it is
/// reported abandoned like any local cell.
#[test]
fn an_abandoned_cell_of_a_host_without_ssh_is_reported_abandoned() {
    let f = Fixture::new(
        "hosts:\n  here: {}\nmatrix:\n  host: [here]\nrun: \"false\"\nrepetitions: 2\nmax_failures: 1\n",
    );
    assert_eq!(f.run(&[]).status.code(), Some(1));
    let status = stdout(&f.margin().arg("status").arg(&f.file).output().unwrap());
    assert!(
        status.contains("cells: 1 — 0 done, 0 to run here, 0 pending (other host or boot), 1 abandoned"),
        "{status}"
    );
    let report = std::fs::read_to_string(f.store().join("report.md")).unwrap();
    assert!(report.contains("- host=here: abandoned by the last run (1 failure;"), "{report}");
}

/// The workdirs of a killed run are removed by the next, unless that run was asked to
/// keep them.
#[test]
fn a_killed_runs_workdirs_go_unless_it_was_asked_to_keep_them() {
    // a trial of about 0.4 s whose command line tells it apart
    let marker = format!("sleep 0.4{}", std::process::id());
    let f = Fixture::new(&format!("matrix:\n  n: [1]\nrun: {marker}; echo value=1\n{VALUE}repetitions: 1\n"));
    let work = || std::fs::read_dir(f.store().join("work")).map_or(0, |d| d.count());
    let killed = |extra: &[&str]| {
        let before = work();
        let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin!("margin"))
            .arg("run")
            .arg(&f.file)
            .args(extra)
            .env("MARGIN_REPORTS", f.reports())
            .env_remove("MARGIN_SYSROOT")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let start = Instant::now();
        while work() == before {
            assert!(start.elapsed() < Duration::from_secs(10), "no workdir appeared");
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = child.kill(); // SIGKILL
        let _ = child.wait();
        // its trial (if it had started) ends on its own: its shell and its sleep
        assert!(
            super::wait_until(GONE_WITHIN, || super::running(&marker) == 0
                && super::running(&marker.replace(' ', "\0")) == 0),
            "the killed run's trial did not end within {GONE_WITHIN:?}"
        );
    };
    killed(&["--keep-workdir"]);
    killed(&[]);
    assert_eq!(work(), 2);
    let out = f.run(&[]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("the workdir of a run that was killed"), "{}", stderr(&out));
    assert_eq!(work(), 1, "the kept one stays, the other goes");
}

/// A `regex:` metric reads output the way a person does: `^` and `$` at every line, and a
/// line may end in `\r\n`. Run as a user runs it: in a folder holding
/// `experiments/x.yaml`, by its relative path, with the default (relative) store root.
#[test]
fn regex_metrics_anchor_at_line_starts_and_ends() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("experiments")).unwrap();
    let yaml = r#"matrix:
  n: [1]
run: >-
  printf 'The numbers are in 1000s of bytes per second processed.\ntype             16 bytes     64 bytes\nsha256           73632.50k   252287.16k\nsha512           50003.13k   201410.84k\r\n'
metrics:
  sha256_64: { regex: '^sha256\s+[\d.]+k\s+([\d.]+)k$', unit: kB/s, better: higher }
  sha512_64: { regex: '^sha512\s+[\d.]+k\s+([\d.]+)k$', unit: kB/s, better: higher }
repetitions: 2
"#;
    std::fs::write(dir.path().join("experiments/x.yaml"), yaml).unwrap();
    let out = assert_cmd::cargo::cargo_bin_cmd!("margin")
        .current_dir(dir.path())
        .env_remove("MARGIN_REPORTS")
        .env_remove("MARGIN_SYSROOT")
        .args(["run", "experiments/x.yaml"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}\n{}", stdout(&out), stderr(&out));
    let text = std::fs::read_to_string(dir.path().join("reports/x/runs.ndjson")).unwrap();
    let records: Vec<serde_json::Value> = text
        .trim_end_matches('\0')
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(records.len() >= 2, "{text}");
    for r in &records {
        assert_eq!(r["status"], "ok", "{r}");
        // the last column of each row, in B/s; sha512's row ends in `\r\n`
        assert_eq!(r["metrics"]["sha256_64"].as_f64(), Some(252287160.0), "{r}");
        assert_eq!(r["metrics"]["sha512_64"].as_f64(), Some(201410840.0), "{r}");
    }
}

/// Hosts of one machine never run at the same time: two `hosts:` entries without `ssh`
/// are both this machine, so their trials take turns (and interleave), where they used
/// to run at once and measure each other.
#[test]
fn hosts_of_one_machine_take_turns() {
    let f = Fixture::new(&format!(
        "hosts:\n  a: {{}}\n  b: {{}}\nmatrix:\n  host: [a, b]\nrun: sleep 0.15; echo value=1\n{VALUE}repetitions: 4\n"
    ));
    let out = f.run(&[]);
    assert!(out.status.success(), "{}", stderr(&out));
    let (records, _) = f.records();
    assert_eq!(records.len(), 8);
    let mut spans: Vec<(f64, f64, String)> = records
        .iter()
        .map(|r| {
            let start: jiff::Timestamp = r["started_at"].as_str().unwrap().parse().unwrap();
            let start = start.as_nanosecond() as f64 / 1e9;
            (
                start,
                start + r["wall_time"].as_f64().unwrap(),
                r["levels"]["host"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    spans.sort_by(|x, y| x.0.total_cmp(&y.0));
    for w in spans.windows(2) {
        assert!(
            w[1].0 >= w[0].1,
            "a trial on {} began before one on {} had ended: {spans:?}",
            w[1].2,
            w[0].2
        );
    }
    let switches = spans.windows(2).filter(|w| w[0].2 != w[1].2).count();
    assert!(switches >= 4, "the hosts take turns, not one after the other: {spans:?}");
}

/// kill -9 of margin does not reach the trial under way: the next run stops it (and what
/// it started) before its own first trial, so two trials never run at once.
#[test]
fn a_trial_left_running_by_a_killed_run_is_stopped_before_the_next_trial() {
    let marker = format!("sleep 7.{}", std::process::id());
    // the sleep's own command line (its arguments end with NULs): the shell's holds the
    // marker too, and waiting for the shell alone let it find the flag gone, under load,
    // before it started the sleep
    let sleeping = marker.replace(' ', "\0");
    let slow = tempfile::tempdir().unwrap();
    let flag = slow.path().join("slow");
    let f = Fixture::new(&format!(
        "matrix:\n  n: [1]\nrun: if [ -e {} ]; then {marker}; fi; echo value=1\n{VALUE}repetitions: 1\n",
        flag.display()
    ));
    std::fs::write(&flag, "").unwrap();
    let mut child = f.spawn();
    let deadline = Instant::now() + Duration::from_secs(20);
    while super::running(&sleeping) == 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(super::running(&sleeping) > 0, "the trial started its sleep");
    let _ = child.kill(); // SIGKILL: margin only
    let _ = child.wait();
    assert!(super::running(&sleeping) > 0, "the trial outlives margin's kill -9");
    std::fs::remove_file(&flag).unwrap();
    let next = f.run(&[]);
    let text = format!("{}{}", stdout(&next), stderr(&next));
    assert!(next.status.success(), "{text}");
    assert!(text.contains("a run that was killed left it running"), "{text}");
    assert!(text.contains(&format!("{marker}`")), "the note names the command: {text}");
    assert_eq!(super::running(&marker), 0, "the orphan is gone");
    assert_eq!(f.ok_per_cell().values().copied().collect::<Vec<_>>(), [1]);
}

/// Hostile trials: an output that never ends is stopped at 256 MiB with the
/// reason, a thousand children left running are killed with the trial, and the run goes
/// on to the next cell.
#[test]
fn an_endless_output_and_a_thousand_children_fail_their_trials_and_the_run_goes_on() {
    let marker = format!("sleep 9.{}", std::process::id());
    let f = Fixture::new(&format!(
        "matrix:\n  t: [endless, fork, fine]\n\
         run: \"{{% if t == 'endless' %}}yes{{% elif t == 'fork' %}}for i in $(seq 1000); do {marker} & done; echo value=1{{% else %}}echo value=1{{% endif %}}\"\n\
         {VALUE}repetitions: 1\nmax_failures: 1\norder: sequential\n"
    ));
    let out = f.run(&[]);
    let (records, _) = f.records();
    let by = |t: &str| records.iter().find(|r| r["levels"]["t"] == t).unwrap().clone();
    let endless = by("endless");
    assert_eq!(endless["status"], "failed", "{endless}");
    assert!(
        endless["error"].as_str().unwrap().contains("stopped after printing more than 256 MiB"),
        "{endless}"
    );
    // what it printed up to the limit is kept
    let raw = f.store().join(endless["raw"]["stdout"].as_str().unwrap());
    assert!(std::fs::metadata(&raw).unwrap().len() >= 256 << 20, "{}", raw.display());
    assert_eq!(by("fork")["status"], "ok", "{}", by("fork"));
    assert_eq!(super::running(&marker), 0, "the children went with their trial");
    assert_eq!(by("fine")["status"], "ok");
    assert_eq!(out.status.code(), Some(1), "a failed cell: {}", stderr(&out));
}

/// A benchmark that is not installed says so: the shell's exit code 127 is named for what
/// it is, on the terminal and in the report, for the experiment run as the README says.
#[test]
fn a_missing_benchmark_is_named_as_not_installed() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("experiments")).unwrap();
    std::fs::write(
        dir.path().join("experiments/missing.yaml"),
        "matrix:\n  n: [1]\nrun: no-such-benchmark-of-margin --quick\nrepetitions: 3\nmax_failures: 2\n",
    )
    .unwrap();
    let out = super::as_a_user(dir.path()).args(["run", "experiments/missing.yaml"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let hint = "exit code 127, the shell's for a command not found: is it installed there?";
    assert!(stderr(&out).contains(hint), "{}", stderr(&out));
    let report = std::fs::read_to_string(dir.path().join("reports/missing/report.md")).unwrap();
    assert!(report.contains(hint), "{report}");
    assert!(report.contains("no-such-benchmark-of-margin: not found"), "{report}");
}

/// A trial gets the signal state std's `Command` gives a command, whatever margin itself
/// catches (Ctrl-C and SIGTERM during a run) or ignores (SIGPIPE): nothing caught, nothing
/// blocked, and what margin's own caller ignored still ignored, as `nohup` leaves SIGHUP
/// (src/run/process/spawn.rs: margin starts commands by `clone`, not `posix_spawn`).
/// The standard signals (1–31) are compared: glibc's `posix_spawn` leaves its own two
/// (32 and 33) ignored in what it starts, which margin's start does not add to.
#[test]
fn a_trial_gets_the_signal_state_a_command_would() {
    let f = Fixture::new(
        "matrix:\n  n: [1]\nrun: grep Sig /proc/self/status\n\
         metrics:\n  queued: { regex: 'SigQ:\\s*(\\d+)', better: lower }\nrepetitions: 2\n",
    );
    // blocked, ignored and caught, each as the mask of the standard signals
    let signals = |text: &str| -> Vec<(String, u64)> {
        ["SigBlk:", "SigIgn:", "SigCgt:"]
            .iter()
            .map(|name| {
                let line =
                    text.lines().find(|l| l.starts_with(name)).unwrap_or_else(|| panic!("{name} in {text}"));
                let mask = u64::from_str_radix(line[name.len()..].trim(), 16).unwrap();
                (name.to_string(), mask & 0x7fff_ffff)
            })
            .collect()
    };
    let margin = assert_cmd::cargo::cargo_bin!("margin");
    let command = format!("trap '' USR1; exec {} run {}", margin.display(), f.file.display());
    let out = std::process::Command::new("sh")
        .args(["-c", &command])
        .env("MARGIN_REPORTS", f.reports())
        .env_remove("MARGIN_SYSROOT")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let by_std = std::process::Command::new("sh")
        .args(["-c", "trap '' USR1; exec grep Sig /proc/self/status"])
        .output()
        .unwrap();
    let expected = signals(&String::from_utf8_lossy(&by_std.stdout));
    // SIGUSR1 (10) ignored: bit 9; SIGSEGV (11) caught by grep itself, SIGPIPE not ignored
    assert_eq!(expected[0].1, 0, "{expected:?}");
    assert_eq!(expected[1].1 & (1 << 9 | 1 << 12), 1 << 9, "{expected:?}");
    let (records, torn) = f.records();
    assert!(records.len() >= 2 && torn == 0, "{records:?}");
    for r in &records {
        assert_eq!(r["status"], "ok", "{r}");
        let raw = std::fs::read_to_string(f.store().join(r["raw"]["stdout"].as_str().unwrap())).unwrap();
        assert_eq!(signals(&raw), expected, "{raw}");
    }
}

/// Cells abandoned for one reason — here a regex that matches nothing in every cell but
/// the first, which runs first and works (so the run does not stop early) — are said
/// once at the end of the run, with how many cells it abandoned, not once a cell (issue
/// 39: 420 paragraphs of the same reason).
#[test]
fn abandonments_of_one_reason_are_said_once() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("experiments")).unwrap();
    std::fs::write(
        dir.path().join("experiments/typo.yaml"),
        "matrix:\n  n: [0, 1, 2, 3, 4, 5, 6, 7]\n\
         run: \"echo {% if n == 0 %}valeu{% else %}value{% endif %}={{ n }}\"\n\
         metrics:\n  value: { regex: 'valeu=(\\d+)', better: higher }\nrepetitions: 2\nmonitor: none\n\
         order: sequential\n",
    )
    .unwrap();
    let out = super::as_a_user(dir.path()).args(["run", "experiments/typo.yaml"]).output().unwrap();
    // the run's summary, on stdout (stderr has each trial's progress)
    let said = super::stdout(&out);
    let lines: Vec<&str> = said.lines().filter(|l| l.trim_start().starts_with("abandoned")).collect();
    assert_eq!(lines.len(), 1, "{said}");
    assert!(
        lines[0].contains("abandoned 7 cells (n=1, n=2, n=3, n=4, n=5 and 2 more) the same way; the first: "),
        "{said}"
    );
    assert!(
        said.contains("stdout| value=1") && !said.contains("stdout| value=2"),
        "the first cell's output: {said}"
    );
    // and the report's failures section says them in one row too
    let report = std::fs::read_to_string(dir.path().join("reports/typo/report.md")).unwrap();
    let failures = report.split("## Failures").nth(1).unwrap().split("\n## ").next().unwrap();
    let rows: Vec<&str> = failures.lines().filter(|l| l.contains("| abandoned |")).collect();
    assert_eq!(rows.len(), 1, "{failures}");
    assert!(rows[0].contains("7 cells: n=1, n=2, n=3, n=4, n=5 and 2 more"), "{failures}");
    assert!(rows[0].contains("3 failures; the last: regex: found no match"), "{failures}");
}

/// A mistake every cell makes (a regex that matched nothing once ran 1 260 trials
/// of a 420-cell matrix) stops the run once the first cells all failed the same way, and
/// is said once; the exit code is 1, a failure of the runs. The next run, with the file
/// unchanged, goes on to cells that have not failed yet before it stops again: a stop
/// that was wrong (cells meant to fail) never keeps a run from the others.
#[test]
fn a_mistake_every_cell_makes_stops_the_run_after_a_few_cells() {
    let levels: Vec<String> = (1..=30).map(|n| n.to_string()).collect();
    let f = Fixture::new(&format!(
        "matrix:\n  n: [{}]\nrun: echo value={{{{ n }}}}\n\
         metrics:\n  value: {{ regex: 'valeu=(\\d+)', better: higher }}\nrepetitions: 3\nmonitor: none\n",
        levels.join(", ")
    ));
    let out = f.run(&[]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let (records, _) = f.records();
    assert_eq!(records.len(), 3, "three cells, one trial each, then the stop");
    let cells: HashSet<String> = records.iter().map(|r| r["cell"].to_string()).collect();
    assert_eq!(cells.len(), 3);
    let said = stdout(&out);
    assert_eq!(
        said.matches("every cell so far fails the same way: regex: found no match").count(),
        1,
        "{said}"
    );
    assert!(said.contains("stopped after 3 trials; fix the file and run again (nothing is lost)"), "{said}");
    assert!(said.contains("stopped early, 30 cells left to run: "), "{said}");
    assert!(!said.contains("abandoned 30 cells"), "said once, not as 30 abandonments: {said}");
    // and on stderr once, as it happened
    let shown = stderr(&out);
    assert_eq!(shown.matches("every cell so far fails the same way").count(), 1, "{shown}");

    // again, unchanged: the three cells that failed count no more, three others do
    let out = f.run(&[]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let (records, _) = f.records();
    let cells: HashSet<String> = records.iter().map(|r| r["cell"].to_string()).collect();
    assert!(cells.len() >= 6 && records.len() <= 9, "{} trials of {} cells", records.len(), cells.len());
    assert!(stdout(&out).contains("every cell so far fails the same way"), "{}", stdout(&out));
}

/// One cell that fails among working ones is abandoned alone, by `max_failures`: the
/// early stop needs every trial so far to have failed, the same way.
#[test]
fn one_failing_cell_among_working_ones_is_abandoned_alone() {
    let f = Fixture::new(
        "matrix:\n  n: [1, 2, 3, 4, 5, 6]\nrun: \"test {{ n }} -ne 3\"\nrepetitions: 3\nmonitor: none\nseed: 7\n",
    );
    let out = f.run(&[]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let said = stdout(&out);
    assert!(said.contains("5 of 6 cells complete, 0 pending on this host, 1 abandoned"), "{said}");
    assert!(said.contains("abandoned n=3: 3 failures; the last: the run command: exit code 1"), "{said}");
    assert!(!said.contains("every cell so far"), "{said}");
    assert_eq!(f.ok_per_cell().values().filter(|&&n| n == 3).count(), 5);
}

/// A descriptor margin's parent left open (fd 7 here, as a script's pipe) reaches no
/// command margin runs: a `restart` that left a daemon behind holding it would keep the
/// parent waiting for ever. The same run without the fix sees fd 7 in every trial.
#[test]
fn a_descriptor_margin_inherits_reaches_no_command_it_runs() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("fds.yaml"),
        r#"matrix:
  x: [a]
setup: "if [ -e /proc/$$/fd/7 ]; then echo 'setup inherited fd 7' >&2; exit 3; fi"
run: "if [ -e /proc/$$/fd/7 ]; then echo 'inherited fd 7' >&2; exit 3; fi; echo value 1"
metrics:
  value: { regex: 'value (\d+)' }
repetitions: 2
"#,
    )
    .unwrap();
    let mut cmd = std::process::Command::new("bash");
    cmd.args(["-c", r#"exec 7</dev/null; [ -e /proc/$$/fd/7 ] || exit 9; exec "$0" run fds.yaml"#])
        .arg(assert_cmd::cargo::cargo_bin!("margin"));
    let out = super::without_margin_env(&mut cmd).current_dir(dir.path()).output().unwrap();
    assert!(out.status.success(), "{}\n{}", stdout(&out), stderr(&out));
    let ok = super::records(&dir.path().join("reports/fds")).iter().filter(|r| r["status"] == "ok").count();
    assert_eq!(ok, 2, "{}", stdout(&out));
}

/// The terminal numbers the measured trials alone: a warm-up is said as one, not as #1.
#[test]
fn a_warm_up_is_not_numbered_as_a_repetition() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("w.yaml"),
        "matrix:\n  x: [a]\nrun: echo value 1\nmetrics:\n  value: { regex: 'value (\\d+)' }\nrepetitions: 2\nwarmup: 1\n",
    )
    .unwrap();
    let out = super::as_a_user(dir.path()).args(["run", "w.yaml"]).output().unwrap();
    let text = format!("{}{}", stdout(&out), stderr(&out));
    assert!(out.status.success(), "{text}");
    for line in ["x=a warm-up: ok", "x=a #1: ok", "x=a #2: ok"] {
        assert!(text.contains(line), "{line:?} in:\n{text}");
    }
    assert!(!text.contains("#3"), "{text}");
}
