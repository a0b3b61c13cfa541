//! One integration test binary driving the real `margin` executable, a file per command.

mod allocator;
mod answers;
mod bisect;
mod bisect_boots;
mod boots;
mod bounded;
mod calibrate;
mod campaign;
mod check;
mod columns;
mod compare;
mod docs_paths;
mod drift;
mod first_run;
mod gangs;
mod gitrange;
mod history;
mod hosts;
mod import;
mod machine;
mod modules;
mod output;
mod plan;
mod readers;
mod reboots;
mod regimes;
mod report_structure;
mod robust;
mod run;
mod runs;
mod schema;
mod seeds;
mod series;
mod services;
mod standing;
mod store_copy;
mod telemetry;
mod until_verdict;
mod warnings;

use assert_cmd::Command;

/// The binary under test, with the store root pointed away from the source tree.
pub fn margin() -> Command {
    let mut cmd = assert_cmd::cargo::cargo_bin_cmd!("margin");
    let reports = std::env::temp_dir().join("margin-tests-reports");
    cmd.env("MARGIN_REPORTS", reports);
    cmd.current_dir(env!("CARGO_MANIFEST_DIR"));
    cmd
}

/// margin as a user starts it: in `dir`, with no `MARGIN_*` variable set, so the store
/// is the default `reports` under `dir`.
pub fn as_a_user(dir: &std::path::Path) -> std::process::Command {
    let mut cmd = std::process::Command::new(assert_cmd::cargo::cargo_bin!("margin"));
    without_margin_env(&mut cmd).current_dir(dir);
    cmd
}

/// Writes `yaml` to `DIR/experiments/x.yaml`, runs it there as a user would (`margin run
/// experiments/x.yaml`, the default store; it must succeed) and reads its summary.json and
/// report.md.
pub fn run_experiment(dir: &std::path::Path, yaml: &str) -> (serde_json::Value, String) {
    std::fs::create_dir_all(dir.join("experiments")).unwrap();
    std::fs::write(dir.join("experiments/x.yaml"), yaml).unwrap();
    let out = as_a_user(dir).args(["run", "experiments/x.yaml"]).output().unwrap();
    assert!(out.status.success(), "{}\n{}", stdout(&out), stderr(&out));
    let summary = std::fs::read_to_string(dir.join("reports/x/summary.json")).unwrap();
    let report = std::fs::read_to_string(dir.join("reports/x/report.md")).unwrap();
    (serde_json::from_str(&summary).unwrap(), report)
}

/// `cmd` with every `MARGIN_*` variable of the test's environment removed.
pub fn without_margin_env(cmd: &mut std::process::Command) -> &mut std::process::Command {
    for (name, _) in std::env::vars_os() {
        if name.to_string_lossy().starts_with("MARGIN_") {
            cmd.env_remove(name);
        }
    }
    cmd
}

/// The records of a store's trial log (`runs.ndjson`), each line parsed.
pub fn records(store: &std::path::Path) -> Vec<serde_json::Value> {
    let text = std::fs::read_to_string(store.join("runs.ndjson")).unwrap();
    text.lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

/// What `read` says of a copy of the project in `dir` holding only `experiments/exp.yaml`
/// and the logs of `reports/exp` (no columns, no runs.progress), with the copy's path
/// written as `dir`'s: what the same commands would say reading the logs alone.
pub fn from_the_logs<const N: usize>(
    dir: &std::path::Path,
    read: impl FnOnce(&std::path::Path) -> [String; N],
) -> [String; N] {
    let copy = tempfile::tempdir().unwrap();
    for sub in ["experiments", "reports/exp"] {
        std::fs::create_dir_all(copy.path().join(sub)).unwrap();
    }
    std::fs::copy(dir.join("experiments/exp.yaml"), copy.path().join("experiments/exp.yaml")).unwrap();
    for file in ["runs.ndjson", "sessions.ndjson"] {
        std::fs::copy(dir.join("reports/exp").join(file), copy.path().join("reports/exp").join(file))
            .unwrap();
    }
    let said = read(copy.path());
    let (from, to) = (copy.path().display().to_string(), dir.display().to_string());
    said.map(|s| s.replace(&from, &to))
}

pub fn stdout(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

pub fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// How many processes have `marker` in their command line (to prove none survived).
pub fn running(marker: &str) -> usize {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|d| std::fs::read(d.ok()?.path().join("cmdline")).ok())
        .filter(|c| String::from_utf8_lossy(c).contains(marker))
        .count()
}

/// Polls `cond` every 20 ms until it holds or `within` has passed: whether it held. For
/// what a test waits to see happen (a process gone, a file there, a line logged) — a wrong
/// behaviour still fails the test, after `within` instead of after a guessed sleep.
pub fn wait_until(within: std::time::Duration, mut cond: impl FnMut() -> bool) -> bool {
    let start = std::time::Instant::now();
    loop {
        if cond() {
            return true;
        }
        if start.elapsed() >= within {
            return false;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// How many whole lines (records) a store's `runs.ndjson` holds so far, while a run may be
/// writing it: none if it is not there yet; the zeros a run lays ahead are no line.
pub fn logged(store: &std::path::Path) -> usize {
    std::fs::read(store.join("runs.ndjson")).map_or(0, |log| log.iter().filter(|b| **b == b'\n').count())
}

/// Asserts that no (cell, repetition) is recorded twice in a store's trial records.
pub fn unique_cell_repetitions(records: &[serde_json::Value]) {
    let mut seen = std::collections::HashSet::new();
    for r in records {
        let key = (r["cell"].as_str().unwrap().to_string(), r["repetition"].as_u64().unwrap());
        assert!(seen.insert(key.clone()), "duplicate (cell, repetition) {key:?}");
    }
}
