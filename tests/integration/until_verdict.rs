//! `repetitions: { min, max, until: verdict }` run as a user runs it: a temporary folder
//! as the working directory, `experiments/x.yaml`, the default store root, no `MARGIN_*`
//! variable set. The trials print deterministic values, so where the cells stop is known.

use std::path::Path;

use serde_json::Value;

use super::{stderr, stdout};

/// margin in `dir`, with nothing of margin's preset.
fn as_a_user(dir: &Path, args: &[&str]) -> std::process::Output {
    super::as_a_user(dir).args(args).output().unwrap()
}

/// Runs `experiments/x.yaml` holding `yaml` and reads its `summary.json`.
fn run(yaml: &str) -> Value {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("experiments")).unwrap();
    std::fs::write(dir.path().join("experiments/x.yaml"), yaml).unwrap();
    let out = as_a_user(dir.path(), &["run", "experiments/x.yaml"]);
    assert!(out.status.success(), "{}\n{}", stdout(&out), stderr(&out));
    let summary = std::fs::read_to_string(dir.path().join("reports/x/summary.json")).unwrap();
    let mut summary: Value = serde_json::from_str(&summary).unwrap();
    let report = std::fs::read_to_string(dir.path().join("reports/x/report.md")).unwrap();
    summary["report.md"] = Value::String(report);
    summary
}

/// The trials of each side of the one comparison, and its verdict.
fn stopped(summary: &Value) -> (u64, u64, String) {
    let comparisons = summary["comparisons"].as_array().unwrap();
    assert_eq!(comparisons.len(), 1, "{summary}");
    let c = &comparisons[0];
    let n = |arm: &str| c[arm]["n"].as_u64().unwrap();
    (n("baseline_arm"), n("level_arm"), c["verdict"].as_str().unwrap().to_owned())
}

#[test]
fn until_verdict_stops_a_large_difference_at_the_first_look() {
    // 100.1, 100.2, … against 200.1, 200.2, …: twice as high, with a spread of 0.1 %
    let summary = run("matrix:\n  n: [100, 200]\nrun: printf 'value=%s.%s\\n' {{ n }} {{ repetition }}\n\
         metrics:\n  value: { regex: 'value=([0-9.]+)', better: higher }\n\
         repetitions: { min: 5, max: 30, until: verdict }\n\
         analysis:\n  compare:\n    - { factor: n, baseline: 100 }\n");
    assert_eq!(stopped(&summary), (5, 5, "significant".to_owned()));
    // the report's intervals are those the stop was decided on: 1 − α/6 (6 looks)
    let c = summary["settings"]["interval_confidence"].as_f64().unwrap();
    assert!((c - (1.0 - 0.05 / 6.0)).abs() < 1e-9, "{c}");
    assert_eq!(summary["settings"]["looks"], serde_json::json!([5, 8, 12, 18, 27, 30]));
    let report = summary["report.md"].as_str().unwrap();
    assert!(report.contains("`until: verdict`"), "{report}");
    assert!(report.contains("after 5, 8, 12, 18, 27, 30 trials"), "{report}");
    // that level, named once as adaptive, where the answer's intervals and the cells' ± are
    assert!(report.contains("| 99.17 % CI (adaptive) |"), "{report}");
    assert!(report.contains("± is the half-width of the 99.17 % (adaptive) confidence interval"), "{report}");
    assert!(!report.contains("95 % confidence interval"), "{report}");
}

#[test]
fn until_verdict_stops_no_difference_once_it_is_within_the_band() {
    // both levels print the same values: 100.1, 100.2, …, 100.9, 100.10
    let summary = run("matrix:\n  v: [a, b]\nrun: printf 'value=100.%s\\n' {{ repetition }}\n\
         metrics:\n  value: { regex: 'value=([0-9.]+)' }\n\
         repetitions: { min: 5, max: 30, until: verdict }\n\
         analysis:\n  compare:\n    - { factor: v, baseline: a }\n");
    assert_eq!(stopped(&summary), (5, 5, "no_meaningful_difference".to_owned()));
}

#[test]
fn until_verdict_runs_a_noisy_comparison_to_max() {
    // values 50 and 150 in turn: a CV of 50 % never resolves within 12 trials
    let summary = run("matrix:\n  v: [a, b]\n\
         run: \"if [ $(( {{ repetition }} % 2 )) -eq 0 ]; then echo value=50; else echo value=150; fi\"\n\
         metrics:\n  value: { regex: 'value=([0-9.]+)' }\n\
         repetitions: { min: 5, max: 12, until: verdict }\n\
         analysis:\n  compare:\n    - { factor: v, baseline: a }\n");
    assert_eq!(stopped(&summary), (12, 12, "inconclusive".to_owned()));
}

#[test]
fn until_verdict_and_target_are_exclusive() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("experiments")).unwrap();
    let base = "matrix:\n  v: [a, b]\nrun: \"true\"\n";
    for (repetitions, message) in [
        ("{ min: 5, max: 30, target: 2%, until: verdict }", "`target` and `until` cannot both be set"),
        ("{ min: 5, max: 30 }", "adaptive needs `target` or `until`"),
        ("{ min: 5, max: 30, until: answer }", "until: expected `verdict`"),
    ] {
        std::fs::write(dir.path().join("experiments/x.yaml"), format!("{base}repetitions: {repetitions}\n"))
            .unwrap();
        let out = as_a_user(dir.path(), &["check", "experiments/x.yaml"]);
        assert_eq!(out.status.code(), Some(2), "{repetitions}: {}", stderr(&out));
        let text = format!("{}{}", stdout(&out), stderr(&out));
        assert!(text.contains("experiments/x.yaml:4:"), "{repetitions}: {text}");
        assert!(text.contains(message), "{repetitions}: {text}");
        assert!(text.contains("hint"), "{repetitions}: {text}");
    }
}
