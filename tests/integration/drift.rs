//! Drift within a session, through the real binary as a user runs it (docs/statistics.md,
//! Drift within a session): a command whose values step up by 15 % after its 20th trial
//! (a counter in a file, across the cells of the session) is said to drift, where and by
//! how much; the same command without the step is not.

use serde_json::Value;

/// Runs `experiments/x.yaml` with a counter file beside it: every trial adds one, and
/// `step` (0 or 15) % is added to the values from its 21st trial on.
fn run(step: u32) -> (Value, String) {
    let dir = tempfile::tempdir().unwrap();
    let counter = dir.path().join("count");
    let yaml = format!(
        "matrix:\n  v: [a, b]\n\
         run: >-\n  n=$(cat {counter} 2>/dev/null || echo 0); echo $((n + 1)) > {counter};\n  \
         awk -v n=$n -v v={{{{ v }}}} 'BEGIN {{ srand(n + 7); base = (v == \"a\") ? 100 : 50;\n  \
         if (n >= 20) base = base * (1 + {step} / 100); printf \"value=%.4f\\n\", base * (1 + 0.02 * (rand() - 0.5)) }}'\n\
         metrics:\n  value: {{ regex: 'value=([0-9.]+)' }}\n\
         repetitions: 20\nseed: 3\n\
         analysis:\n  compare:\n    - {{ factor: v, baseline: a }}\n",
        counter = counter.display()
    );
    super::run_experiment(dir.path(), &yaml)
}

#[test]
fn a_step_within_a_session_is_a_drift_with_its_place_and_size() {
    let (summary, report) = run(15);
    let drifts = summary["drifts"].as_array().expect("drifts in summary.json");
    let [d] = &drifts[..] else { panic!("one drift: {drifts:?}") };
    assert_eq!(d["metric"], "value");
    assert_eq!(
        (d["trials"].as_u64(), d["cells"].as_u64(), d["before"].as_u64()),
        (Some(40), Some(2), Some(20)),
        "{d}"
    );
    let pct = d["change_pct"].as_f64().unwrap();
    assert!((pct - 15.0).abs() < 2.0, "{d}");
    assert!(d["p_value"].as_f64().unwrap() < 0.01, "{d}");
    let warnings = summary["warnings"].as_array().unwrap();
    let w = warnings.iter().find(|w| w["kind"] == "drift").expect("a drift warning");
    let message = w["message"].as_str().unwrap();
    assert!(
        message.starts_with("value drifts within session ")
            && message.contains("after its first 20 of 40 trials"),
        "{message}"
    );
    assert!(report.contains("value drifts within session"), "{report}");
}

#[test]
fn a_session_without_a_step_does_not_drift() {
    let (summary, report) = run(0);
    assert!(summary.get("drifts").is_none(), "{}", summary["drifts"]);
    assert!(!summary["warnings"].as_array().unwrap().iter().any(|w| w["kind"] == "drift"));
    assert!(!report.contains("drifts within session"), "{report}");
}
