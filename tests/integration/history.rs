//! `margin history`: the labelled runs of a store as a series, run as the README says
//! (in the user's folder, the default store, nothing preset).

use super::{as_a_user, stderr, stdout};

/// A nightly benchmark whose value is 100, or 120 from the night named in `night` on
/// (`step_at`), with 1 % of noise; six runs labelled night1…night6.
fn six_nights(dir: &std::path::Path, step_at: u32) {
    std::fs::write(
        dir.join("nightly.yaml"),
        format!(
            r#"matrix:
  bs: [1M]
run: >-
  awk -v n=$(cat {night}) 'BEGIN {{ srand(n * 7 + {{{{ repetition }}}}); printf "value %.4f\n", 100 * (n >= {step_at} ? 1.2 : 1.0) * (1 + 0.02 * (rand() - 0.5)) }}'
metrics:
  value: {{ regex: 'value ([\d.]+)', better: lower }}
repetitions: 3
"#,
            night = dir.join("night").display()
        ),
    )
    .unwrap();
    for n in 1..=6 {
        std::fs::write(dir.join("night"), n.to_string()).unwrap();
        let out =
            as_a_user(dir).args(["run", "nightly.yaml", "--label", &format!("night{n}")]).output().unwrap();
        assert!(out.status.success(), "{}\n{}", stdout(&out), stderr(&out));
    }
}

#[test]
fn six_labelled_runs_with_a_step_at_the_fourth_change_there_and_fail_the_gate() {
    let dir = tempfile::tempdir().unwrap();
    six_nights(dir.path(), 4);
    let out = as_a_user(dir.path()).args(["history", "nightly"]).output().unwrap();
    let text = stdout(&out);
    assert!(out.status.success(), "{text}\n{}", stderr(&out));
    assert!(text.contains("6 runs in time order"), "{text}");
    assert!(text.contains("**Changed** across 6 runs: between `night3` and `night4`: +"), "{text}");
    assert!(text.contains("worse"), "{text}");
    // the labels on either side of the change, and the commands that measure them again
    assert!(text.contains("run `night3` and `night4` again, back to back: `margin run "), "{text}");
    assert!(text.contains(" --label night4-again`, then `margin history nightly`"), "{text}");
    // margin's own times are not rows beside the benchmark's metric
    assert!(!text.contains("wall_time"), "{text}");
    let gate = as_a_user(dir.path()).args(["history", "nightly", "--fail-on", "worse"]).output().unwrap();
    assert_eq!(gate.status.code(), Some(1), "{}\n{}", stdout(&gate), stderr(&gate));
    assert!(
        stderr(&gate).contains("--fail-on worse: the newest runs are worse beyond ±5.0 %"),
        "{}",
        stderr(&gate)
    );
    let json = as_a_user(dir.path()).args(["history", "nightly", "--json"]).output().unwrap();
    let v: serde_json::Value = serde_json::from_str(&stdout(&json)).unwrap();
    let row = &v["rows"][0];
    assert_eq!(row["metric"], "value");
    assert_eq!(row["verdict"], "changes");
    assert_eq!(row["change_points"][0]["after"], 2);
    assert_eq!(
        (row["rerun"][0]["before"].as_str(), row["rerun"][0]["after"].as_str()),
        (Some("night3"), Some("night4"))
    );
    let commands = row["rerun"][0]["commands"].as_array().unwrap();
    assert!(commands[0].as_str().unwrap().ends_with("nightly.yaml --label night3-again"), "{commands:?}");
    let (low, high) =
        (row["change_points"][0]["low"].as_f64().unwrap(), row["change_points"][0]["high"].as_f64().unwrap());
    assert!(low < 1.2 && 1.2 < high, "[{low}, {high}]");
}

#[test]
fn steady_runs_change_nowhere_and_pass_the_gate() {
    let dir = tempfile::tempdir().unwrap();
    six_nights(dir.path(), 99);
    let out = as_a_user(dir.path()).args(["history", "nightly", "--fail-on", "worse"]).output().unwrap();
    assert!(out.status.success(), "{}\n{}", stdout(&out), stderr(&out));
    assert!(stdout(&out).contains("**No change found** across 6 runs"), "{}", stdout(&out));
}

#[test]
fn a_store_that_does_not_exist_is_an_input_error() {
    let dir = tempfile::tempdir().unwrap();
    let out = as_a_user(dir.path()).args(["history", "nowhere"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
}
