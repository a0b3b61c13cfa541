//! Several readers of one store at once: `margin report` run by several people (or
//! scripts) on the same store each finish with a whole report, and leave nothing behind.
//!
//! Run as a user does: a temporary folder as the working directory, relative paths, the
//! default store root (`reports`), no `MARGIN_*` variable set.

use std::process::{Command, Stdio};

const EXP: &str = "matrix:\n  n: [1, 2, 3]\nrun: printf 'value=%s\\n' {{ n }}{{ repetition }}\n\
                   metrics:\n  value: { regex: 'value=(\\d+)', better: higher }\nrepetitions: 3\n";

fn margin(dir: &std::path::Path) -> Command {
    let mut cmd = Command::new(assert_cmd::cargo::cargo_bin!("margin"));
    for (name, _) in std::env::vars_os() {
        if name.to_string_lossy().starts_with("MARGIN_") {
            cmd.env_remove(name);
        }
    }
    cmd.current_dir(dir);
    cmd
}

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
