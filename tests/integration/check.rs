//! `margin check`: the malformed corpus, the shipped experiments, several files at once.

use std::path::{Path, PathBuf};

use super::{margin, stderr, stdout};

/// The `.yaml` files of a folder of the source tree, sorted.
fn yaml_files(folder: &str) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join(folder);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    files
}

/// Each malformed file states what `check` must say, in its leading comments:
/// `# expect: LINE:COL: message start` (one or more) and `# expect-hint: text`.
#[test]
fn every_malformed_file_is_reported_at_its_line_and_column() {
    let files = yaml_files("tests/data/malformed");
    assert!(files.len() >= 30, "the corpus has {} files", files.len());
    let mut failures = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        let expects: Vec<&str> = text.lines().filter_map(|l| l.strip_prefix("# expect: ")).collect();
        let hints: Vec<&str> = text.lines().filter_map(|l| l.strip_prefix("# expect-hint: ")).collect();
        assert!(!expects.is_empty(), "{} states no expectation", file.display());
        let rel = file.strip_prefix(env!("CARGO_MANIFEST_DIR")).unwrap();
        let out = margin().arg("check").arg(rel).output().unwrap();
        let err = stderr(&out);
        if out.status.code() != Some(2) {
            failures.push(format!("{}: exit {:?}, expected 2\n{err}", rel.display(), out.status.code()));
        }
        if err.contains("panicked") {
            failures.push(format!("{}: panicked\n{err}", rel.display()));
        }
        for e in &expects {
            let wanted = format!("{}:{e}", rel.display());
            if !err.lines().any(|l| l.starts_with(&wanted)) {
                failures.push(format!("{}: wanted a line starting `{wanted}`, got:\n{err}", rel.display()));
            }
        }
        for h in &hints {
            if !err.contains(&format!("hint: {h}")) {
                failures.push(format!("{}: wanted hint `{h}`, got:\n{err}", rel.display()));
            }
        }
        let reported = err.lines().filter(|l| l.starts_with(&format!("{}:", rel.display()))).count();
        if reported != expects.len() {
            failures.push(format!(
                "{}: {reported} problems reported, {} expected\n{err}",
                rel.display(),
                expects.len()
            ));
        }
        if !stdout(&out).is_empty() {
            failures.push(format!("{}: printed to stdout on error: {}", rel.display(), stdout(&out)));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn shipped_experiments_pass() {
    let mut files = yaml_files("experiments");
    // the Xen lab's too (docs/lab.md): run by `just lab-*` only, checked here every time
    files.extend(yaml_files("lab/experiments"));
    assert!(!files.is_empty());
    let out = margin().arg("check").args(&files).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    for f in &files {
        assert!(text.contains(&format!("ok {}:", f.display())), "{text}");
    }
}

#[test]
fn several_files_report_every_error_of_every_file() {
    let out = margin()
        .args([
            "check",
            "experiments/dd-write.yaml",
            "tests/data/malformed/05-unknown-top-key.yaml",
            "tests/data/malformed/44-several-errors.yaml",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.contains("05-unknown-top-key.yaml:5:1: unknown key `runn`"), "{err}");
    assert!(err.contains("44-several-errors.yaml:7:8:"), "{err}");
    assert!(err.contains("44-several-errors.yaml:10:15:"), "{err}");
    assert!(err.trim_end().ends_with("4 problems in 2 of 3 files"), "{err}");
    assert!(stdout(&out).contains("ok experiments/dd-write.yaml: 9 cells"));
}

#[test]
fn a_missing_file_is_an_input_error() {
    let out = margin().args(["check", "no/such/file.yaml"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("no/such/file.yaml: cannot read the experiment file"), "{}", stderr(&out));
}

#[test]
fn usage_errors_exit_2() {
    let out = margin().arg("check").output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let out = margin().arg("frobnicate").output().unwrap();
    assert_eq!(out.status.code(), Some(2));
}

/// A `setup` that differs between cells, under interleaved order, gets a note at its
/// line: other cells' trials run after it. Not under sequential order, nor for a setup
/// that is the same for every cell.
#[test]
fn a_setup_that_differs_between_interleaved_cells_gets_a_note() {
    let dir = tempfile::tempdir().unwrap();
    let check = |name: &str, text: &str| {
        let file = dir.path().join(name);
        std::fs::write(&file, text).unwrap();
        let out = margin().arg("check").arg(&file).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap()
    };
    let pin = "matrix:\n  pin: [pinned, floating]\n\
               setup: \"{% if pin == 'pinned' %}xl vcpu-pin Domain-0 0 0{% endif %}\"\nrun: echo\n";
    let text = check("pin.yaml", pin);
    assert!(text.contains("pin.yaml:3:8: `setup` differs between cells"), "{text}");
    assert!(text.contains("do it in `prepare`, before every trial"), "{text}");
    let text = check("seq.yaml", &format!("{pin}order: sequential\n"));
    assert!(!text.contains("note:"), "{text}");
    let same = "matrix:\n  pin: [pinned, floating]\nsetup: \"mkdir -p {{ workdir }}/data\"\nrun: echo\n";
    assert!(!check("same.yaml", same).contains("note:"));
}

/// A `regex:` tried on its metric's `sample:` before any trial (a regex that once
/// matched nothing ran the whole matrix): `check`, `plan` and `run` refuse the file at the
/// sample with exit 2, and `run` runs nothing; a regex that finds its number passes.
#[test]
fn a_regex_that_misses_its_sample_is_refused_before_any_trial() {
    let dir = tempfile::tempdir().unwrap();
    let yaml = |pattern: &str| {
        format!(
            "matrix:\n  n: [1, 2, 3]\nrun: echo value={{{{ n }}}}\nmonitor: none\nmetrics:\n  value:\n    \
             regex: '{pattern}'\n    sample: \"value=12\\n\"\n    better: higher\n"
        )
    };
    std::fs::create_dir(dir.path().join("experiments")).unwrap();
    let file = dir.path().join("experiments/exp.yaml");
    std::fs::write(&file, yaml("valeu=(\\d+)")).unwrap();
    for command in ["check", "plan", "run"] {
        let out = super::as_a_user(dir.path()).args([command, "experiments/exp.yaml"]).output().unwrap();
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{command}: {err}");
        assert!(
            err.contains(
                "experiments/exp.yaml:8:13: metric `value`: its regex finds no number in its `sample:`"
            ),
            "{command}: {err}"
        );
        assert!(
            err.contains("hint: `val` matches (stdout line 1: `value=12`), but nothing follows it"),
            "{err}"
        );
    }
    assert!(!dir.path().join("reports/exp/runs.ndjson").exists(), "no trial ran");
    std::fs::write(&file, yaml("value=(\\d+)")).unwrap();
    let out = super::as_a_user(dir.path()).args(["check", "experiments/exp.yaml"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
}
