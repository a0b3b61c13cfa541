//! Several readers of one store at once: `margin report` run by several people (or
//! scripts) on the same store each finish with a whole report, and leave nothing behind.
//!
//! Run as a user does: a temporary folder as the working directory, relative paths, the
//! default store root (`reports`), no `MARGIN_*` variable set.

use std::process::Stdio;

use super::as_a_user as margin;

const EXP: &str = "matrix:\n  n: [1, 2, 3]\nrun: printf 'value=%s\\n' {{ n }}{{ repetition }}\n\
                   metrics:\n  value: { regex: 'value=(\\d+)', better: higher }\nrepetitions: 3\n";

#[test]
fn reports_made_at_once_all_succeed_and_leave_no_temporary_file() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("experiments")).unwrap();
    std::fs::write(dir.path().join("experiments/exp.yaml"), EXP).unwrap();
    let out = margin(dir.path()).args(["run", "experiments/exp.yaml"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));

    // Six at once, three rounds: one shared temporary name failed about one in three.
    for _ in 0..3 {
        let children: Vec<_> = (0..6)
            .map(|_| {
                margin(dir.path())
                    .args(["report", "exp"])
                    .stdout(Stdio::null())
                    .stderr(Stdio::piped())
                    .spawn()
                    .unwrap()
            })
            .collect();
        for child in children {
            let out = child.wait_with_output().unwrap();
            assert!(
                out.status.success(),
                "a concurrent report failed: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
    let store = dir.path().join("reports/exp");
    let report = std::fs::read_to_string(store.join("report.md")).unwrap();
    assert!(report.contains("value"), "{report}");
    let summary: serde_json::Value =
        serde_json::from_slice(&std::fs::read(store.join("summary.json")).unwrap()).unwrap();
    let cells: std::collections::BTreeSet<&str> =
        summary["cells"].as_array().unwrap().iter().filter_map(|c| c["cell"].as_str()).collect();
    assert_eq!(cells.len(), 3, "{cells:?}");
    let leftovers: Vec<_> =
        walk(&store).into_iter().filter(|p| p.to_string_lossy().contains("partial")).collect();
    assert!(leftovers.is_empty(), "temporary files left: {leftovers:?}");
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut all = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            all.extend(walk(&path));
        } else {
            all.push(path);
        }
    }
    all
}

/// Reports made while a run writes the store never leave an older report behind: the
/// report on disk after the run is the one of every trial (a report of what it read
/// before the run's last trials is not written over the run's own).
#[test]
fn reports_made_during_a_run_leave_the_newest_report() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("experiments")).unwrap();
    let exp =
        EXP.replace("run: printf", "run: sleep 0.05; printf").replace("repetitions: 3", "repetitions: 8");
    std::fs::write(dir.path().join("experiments/exp.yaml"), exp).unwrap();
    let mut run = margin(dir.path())
        .args(["run", "experiments/exp.yaml"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut reports = 0;
    let mut skipped = 0;
    while run.try_wait().unwrap().is_none() {
        let out = margin(dir.path()).args(["report", "exp"]).output().unwrap();
        // before the first trial there is nothing to report yet (exit 2)
        if out.status.success() {
            reports += 1;
            skipped += usize::from(String::from_utf8_lossy(&out.stderr).contains("the store changed"));
        }
    }
    assert!(run.wait().unwrap().success());
    assert!(reports > 0, "no report ran during the run");
    let summary: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("reports/exp/summary.json")).unwrap()).unwrap();
    assert_eq!(
        summary["trials"]["analysed"], 24,
        "the report on disk is of every trial ({reports} reports, {skipped} left out)"
    );
}

/// The guard itself: a report of a large store is still being made when an import adds
/// trials to it, so the report it would write is already old. It says so and writes
/// nothing; the next report is of every trial. The import is started 200 ms into the
/// report; a report that ended first (a fast machine) is no failure of the guard, and the
/// race is run again, up to five times, each import of a file of its own.
#[test]
fn a_report_of_a_store_that_changed_meanwhile_is_not_written() {
    let dir = tempfile::tempdir().unwrap();
    let seed =
        std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/experiments/data/seed000/bonnie-domu-lvm.csv"))
            .unwrap();
    let big = dir.path().join("big.csv");
    std::fs::write(&big, seed.repeat(2500)).unwrap();
    let exp = concat!(env!("CARGO_MANIFEST_DIR"), "/experiments/xen-bonnie.yaml");
    let import = |file: &std::path::Path| {
        margin(dir.path())
            .args(["import", exp, "--set", "host=domu", "--set", "disk=lvm"])
            .arg(file)
            .output()
            .unwrap()
    };
    assert!(import(&big).status.success());
    let store = dir.path().join("reports/xen-bonnie");
    let mut trials = 8 * 2500;
    let mut caught = false;
    for k in 1..=5 {
        let before = std::fs::read(store.join("summary.json")).ok();
        let report = margin(dir.path())
            .args(["report", exp])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(200));
        let small = dir.path().join(format!("small{k}.csv"));
        std::fs::write(&small, seed.repeat(k)).unwrap();
        let imported = import(&small);
        assert!(imported.status.success(), "{}", String::from_utf8_lossy(&imported.stderr));
        trials += 8 * k;
        let out = report.wait_with_output().unwrap();
        let text = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{text}");
        if text.contains("the store changed while this report was made") {
            let after = std::fs::read(store.join("summary.json")).ok();
            assert!(after == before, "an old report was written");
            caught = true;
            break;
        }
    }
    assert!(caught, "in five tries, no import landed while a report was being made");
    // the next report, of a store at rest, is written and has every trial
    assert!(margin(dir.path()).args(["report", exp]).output().unwrap().status.success());
    let summary: serde_json::Value =
        serde_json::from_slice(&std::fs::read(store.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary["trials"]["analysed"], trials);
}
