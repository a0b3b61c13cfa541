//! Rendered commands are bounded: a runaway template is stopped, a command too long for
//! `sh -c` is refused before anything runs, and messages quote values shortened.

use std::path::{Path, PathBuf};

use super::{margin, stderr, stdout};

/// An experiment file `name` with `text` in a fresh folder (kept while the guard lives).
fn file(name: &str, text: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(name);
    std::fs::write(&path, text).unwrap();
    (dir, path)
}

/// `margin check FILE` as a user runs it: no MARGIN_* variable set.
fn check(path: &Path) -> std::process::Output {
    let mut cmd = margin();
    cmd.env_remove("MARGIN_REPORTS").current_dir(path.parent().unwrap());
    cmd.arg("check").arg(path.file_name().unwrap()).output().unwrap()
}

#[test]
fn a_runaway_template_is_stopped_with_its_position() {
    let (_dir, path) = file("big.yaml", "name: big\nmatrix: { x: [1] }\nrun: \"{{ 'a' * 100000000 }}\"\n");
    let out = check(&path);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.starts_with("big.yaml:3:6: `run` failed to render for cell x=1: the template was stopped after"),
        "{err}"
    );
    assert!(err.contains("\n  hint: "), "{err}");
    assert!(stdout(&out).is_empty());
}

#[test]
fn a_loop_without_end_is_stopped_too() {
    // 10⁹ turns of a loop that writes one byte each
    let text = "name: loop\nmatrix: { x: [1] }\nrun: |\n  echo start\n  {% set s = 'a' * 1000 %}{% for i in s %}{% for j in s %}{% for k in s %}.{% endfor %}{% endfor %}{% endfor %}\n";
    let (_dir, path) = file("loop.yaml", text);
    let out = check(&path);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("`run` failed to render for cell x=1: the template was stopped after"), "{err}");
}

const LONG: &str = "name: long\nmatrix: { x: [1] }\nrun: \"echo {{ 'a' * 200000 }}\"\n";

#[test]
fn a_command_longer_than_one_argument_can_be_is_refused_by_check_plan_and_run() {
    let (_dir, path) = file("long.yaml", LONG);
    let out = check(&path);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.starts_with("long.yaml:3:6: `run` failed to render for cell x=1: it renders to 200005 bytes: a command can be at most 131071 bytes"),
        "{err}"
    );
    assert!(err.contains("\n  hint: "), "{err}");
    for command in ["plan", "run"] {
        let reports = tempfile::tempdir().unwrap();
        let out = margin()
            .env("MARGIN_REPORTS", reports.path())
            .current_dir(path.parent().unwrap())
            .args([command, "long.yaml"])
            .output()
            .unwrap();
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{command}: {err}");
        assert!(err.contains("long.yaml:3:6: `run` failed to render"), "{command}: {err}");
        assert_eq!(std::fs::read_dir(reports.path()).unwrap().count(), 0, "{command} wrote a report");
    }
}

#[test]
fn the_values_a_command_refers_to_count_towards_its_length() {
    // `a b` is not plain text, so the var's 210 000 bytes go into MARGIN_VALUE_1
    let text = "name: long\nmatrix: { x: [\"a b\"] }\nvars:\n  v: \"{{ x * 70000 }}\"\nrun: |\n  echo hi\n  echo {{ v }}\n";
    let (_dir, path) = file("values.yaml", text);
    let out = check(&path);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("values.yaml:6:3: `run` failed to render for cell x=a b: it renders to"), "{err}");
    assert!(err.contains("and the values it refers to 210016 more"), "{err}");
}

#[test]
fn a_command_just_under_the_limit_checks() {
    let text = "name: fits\nmatrix: { x: [1] }\nrun: \"{{ 'a' * 131071 }}\"\n";
    let (_dir, path) = file("fits.yaml", text);
    let out = check(&path);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

#[test]
fn every_shipped_experiment_still_checks() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir.join("experiments"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    let out = margin().env_remove("MARGIN_REPORTS").arg("check").args(&files).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out).lines().filter(|l| l.starts_with("ok ")).count(), files.len());
}

#[test]
fn a_multi_line_value_is_quoted_by_its_first_line() {
    let text = "name: dup\nmatrix:\n  script:\n    - |\n      dd if=/dev/zero\n      sync\n    - |\n      dd if=/dev/zero\n      sync\nrun: echo\n";
    let (_dir, path) = file("dup.yaml", text);
    let out = check(&path);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains(":8:7: level `dd if=/dev/zero…` appears twice in factor `script`"), "{err}");
    assert!(!err.contains("sync"), "{err}");
}
