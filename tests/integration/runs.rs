//! The runs as a level: the same comparison in several labelled runs, set side by side
//! by `margin report` and `margin history`, run as the README says (in the user's folder,
//! the default store, nothing preset).

use std::path::Path;

use super::{as_a_user, stderr, stdout};

/// `experiments/pin.yaml`: level b is the factor in the file `factor` times level a, both
/// scaled by the run's period (the file's second number), with ±1 % of noise that depends
/// on the repetition, the level and the run (the third).
fn project(dir: &Path) {
    std::fs::create_dir_all(dir.join("experiments")).unwrap();
    std::fs::write(
        dir.join("experiments/pin.yaml"),
        format!(
            r#"matrix:
  pin: [floating, pinned]
run: >-
  awk '{{ printf "value %.4f\n", 100 * $2 * ("{{{{ pin }}}}" == "pinned" ? $1 : 1.0) * (1 + 0.02 * ((({{{{ repetition }}}} * 37 + $3 * 5 + length("{{{{ pin }}}}") * 3) % 11) / 10 - 0.5)) }}' {factor}
metrics:
  value: {{ regex: 'value ([\d.]+)', better: lower }}
repetitions: 5
analysis:
  compare:
    - {{ factor: pin, baseline: floating }}
"#,
            factor = dir.join("factor").display()
        ),
    )
    .unwrap();
}

/// One labelled run with level b at `factor` × level a, in a period that scales both.
fn run(dir: &Path, label: &str, factor: f64, period: f64, noise: u32) {
    std::fs::write(dir.join("factor"), format!("{factor} {period} {noise}")).unwrap();
    let out = as_a_user(dir).args(["run", "experiments/pin.yaml", "--label", label]).output().unwrap();
    assert!(out.status.success(), "{}\n{}", stdout(&out), stderr(&out));
}

fn summary(dir: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(dir.join("reports/pin/summary.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

#[test]
fn two_runs_whose_verdicts_disagree_depend_on_the_run() {
    let dir = tempfile::tempdir().unwrap();
    project(dir.path());
    run(dir.path(), "day1", 1.2, 1.0, 1);
    run(dir.path(), "day2", 0.8, 1.0, 2);
    let report = std::fs::read_to_string(dir.path().join("reports/pin/report.md")).unwrap();
    assert!(report.contains("## Across runs"), "{report}");
    let line = report.lines().find(|l| l.starts_with("- **pin: pinned vs floating · value**: ")).unwrap();
    assert!(line.contains("**: depends on the run: +2"), "{line}");
    assert!(line.contains("in `day1` (significant), -"), "{line}");
    assert!(line.contains("in `day2` (significant)"), "{line}");
    assert!(!line.contains("pooled at"), "a flip is not pooled away: {line}");
    let c = &summary(dir.path())["across_runs"]["comparisons"][0];
    assert_eq!(c["answer"], "depends_on_the_run", "{c}");
    assert_eq!(c["per_run"].as_array().map(Vec::len), Some(2), "{c}");
    // margin history says the same of the store's runs
    let out = as_a_user(dir.path()).args(["history", "pin"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("**: depends on the run: +2"), "{}", stdout(&out));
    let out = as_a_user(dir.path()).args(["history", "pin", "--json"]).output().unwrap();
    let v: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(v["across_runs"][0]["answer"], "depends_on_the_run", "{v}");
}

#[test]
fn three_runs_that_agree_hold_in_all_three_pooled() {
    let dir = tempfile::tempdir().unwrap();
    project(dir.path());
    for (label, period, noise) in [("mon", 1.0, 1), ("tue", 1.3, 2), ("wed", 0.9, 3)] {
        run(dir.path(), label, 1.2, period, noise);
    }
    let report = std::fs::read_to_string(dir.path().join("reports/pin/report.md")).unwrap();
    let line = report.lines().find(|l| l.starts_with("- **pin: pinned vs floating · value**: ")).unwrap();
    assert!(line.contains("holds in all 3 runs: +20."), "{line}");
    assert!(line.contains("pooled at 95 %, the runs as units"), "{line}");
    assert!(!line.contains("**: depends on the run"), "{line}");
    let c = &summary(dir.path())["across_runs"]["comparisons"][0];
    assert_eq!(c["answer"], "holds", "{c}");
    let (low, high) = (c["ci_low"].as_f64().unwrap(), c["ci_high"].as_f64().unwrap());
    assert!(low < 1.2 && 1.2 < high && low > 1.1, "[{low}, {high}]");
    let s = summary(dir.path());
    let names: Vec<&str> =
        s["across_runs"]["runs"].as_array().unwrap().iter().map(|r| r["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["mon", "tue", "wed"]);
}

#[test]
fn one_run_says_nothing_across_runs() {
    let dir = tempfile::tempdir().unwrap();
    project(dir.path());
    run(dir.path(), "only", 1.2, 1.0, 1);
    let report = std::fs::read_to_string(dir.path().join("reports/pin/report.md")).unwrap();
    assert!(!report.contains("## Across runs"), "{report}");
    assert!(summary(dir.path()).get("across_runs").is_none());
}
