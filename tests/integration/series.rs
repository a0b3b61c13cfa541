//! Series (`analysis.series`): a metric along the ordered levels of a factor, its change
//! points found with their steps' intervals, or none; run as the README says, in a folder
//! of the user's, the default store.

use super::run_experiment;

/// An experiment of 20 levels `v01`…`v20` whose value is 100 until level `step_at`
/// and `100 × factor` from there, with normal noise of 3 % drawn from a seed of the level
/// and the trial's count within it: the same values whatever order the trials ran in.
fn stepping(dir: &std::path::Path, step_at: u32, factor: f64) -> String {
    let counts = dir.join("counts");
    std::fs::create_dir_all(&counts).unwrap();
    let levels: Vec<String> = (1..=20).map(|v| format!("v{v:02}")).collect();
    format!(
        r#"matrix:
  version: [{levels}]
run: >-
  f={counts}/{{{{ version }}}}; c=$(( $(cat $f 2> /dev/null || echo 0) + 1 )); echo $c > $f;
  awk -v level={{{{ version }}}} -v c=$c 'BEGIN {{ v = substr(level, 2) + 0; srand(v * 1000 + c);
  u = rand(); w = rand(); z = sqrt(-2 * log(u + 1e-12)) * cos(6.283185307 * w);
  printf "value %.6f\n", 100 * (v >= {step_at} ? {factor} : 1) * (1 + 0.03 * z) }}'
metrics:
  value: {{ regex: 'value ([\d.]+)', better: lower }}
repetitions: 4
analysis:
  series:
    - {{ factor: version }}
"#,
        levels = levels.join(", "),
        counts = counts.display(),
    )
}

#[test]
fn a_step_at_level_13_is_found_between_12_and_13_with_an_interval_covering_it() {
    let dir = tempfile::tempdir().unwrap();
    let (summary, report) = run_experiment(dir.path(), &stepping(dir.path(), 13, 1.08));
    let series = summary["series"].as_array().unwrap();
    assert_eq!(series.len(), 1, "{series:?}");
    let s = &series[0];
    assert_eq!(s["verdict"], "changes", "{s}");
    assert_eq!(s["observation"], "trial");
    let changes = s["change_points"].as_array().unwrap();
    assert_eq!(changes.len(), 1, "{changes:?}");
    let names = s["level_names"].as_array().unwrap();
    let after = changes[0]["after"].as_u64().unwrap() as usize;
    assert_eq!((names[after].as_str(), names[after + 1].as_str()), (Some("v12"), Some("v13")));
    let (low, high) = (changes[0]["low"].as_f64().unwrap(), changes[0]["high"].as_f64().unwrap());
    assert!(low < 1.08 && 1.08 < high, "the step's interval [{low}, {high}] misses ×1.08");
    assert_eq!(s["segments"].as_array().unwrap().len(), 2);
    assert!(report.contains("## Series: where it changed"), "{report}");
    assert!(report.contains("between `v12` and `v13`: +"), "{report}");
    assert!(report.contains(", worse."), "a rise of a lower-is-better metric is worse:\n{report}");
    // no comparison asked for, and the report does not pretend one is missing
    assert!(!report.contains("No comparisons yet"), "{report}");
}

#[test]
fn a_series_without_a_step_has_no_change_point_and_says_what_it_could_have_found() {
    let dir = tempfile::tempdir().unwrap();
    let (summary, report) = run_experiment(dir.path(), &stepping(dir.path(), 99, 1.0));
    let s = &summary["series"][0];
    assert_eq!(s["verdict"], "no_change", "{s}");
    assert!(s["change_points"].as_array().unwrap().is_empty());
    let middle = s["detectable"]["middle"].as_f64().unwrap();
    // 80 trials of 3 % noise: a step in the middle of the series of a few per cent
    assert!(middle > 0.005 && middle < 0.05, "detectable step {middle}");
    assert!(report.contains("**No change found** along 20 levels"), "{report}");
}

/// `--confirm A,B` measures the two sides of a change point again, interleaved, in a store
/// of their own, until their comparison is settled: the true step at v13 is confirmed,
/// two neighbours without a step are not, and levels that are not neighbours are refused.
#[test]
fn a_change_point_is_confirmed_by_measuring_its_two_sides_again() {
    let dir = tempfile::tempdir().unwrap();
    let (_, report) = run_experiment(dir.path(), &stepping(dir.path(), 13, 1.08));
    assert!(report.contains("`margin run experiments/x.yaml --confirm v12,v13`"), "{report}");
    let confirm = |pair: &str| {
        super::as_a_user(dir.path()).args(["run", "experiments/x.yaml", "--confirm", pair]).output().unwrap()
    };
    let out = confirm("v12,v13");
    let text = super::stdout(&out);
    assert!(out.status.success(), "{text}\n{}", super::stderr(&out));
    assert!(text.contains("value: confirmed: "), "{text}");
    let store = dir.path().join("reports/x-confirm-v12-v13");
    let trials = super::records(&store);
    assert!(
        trials.len() >= 10
            && trials.iter().all(|r| r["levels"]["version"] == "v12" || r["levels"]["version"] == "v13"),
        "{trials:?}"
    );
    // the experiment's own store is as it was: 80 trials
    assert_eq!(super::records(&dir.path().join("reports/x")).len(), 80);
    // its report names a file that exists, to run it again
    let kept = std::fs::read_to_string(store.join("report.md")).unwrap();
    let file = kept.split("margin run ").nth(1).and_then(|r| r.split_whitespace().next()).unwrap();
    assert!(dir.path().join(file).is_file(), "{file}");

    let out = confirm("v05,v06");
    let text = super::stdout(&out);
    assert!(out.status.success(), "{text}\n{}", super::stderr(&out));
    assert!(
        text.contains("value: not confirmed: no meaningful difference: v06 is within ±5.0 % of v05"),
        "{text}"
    );

    let out = confirm("v05,v07");
    assert_eq!(out.status.code(), Some(2), "{}", super::stdout(&out));
    assert!(
        super::stderr(&out)
            .contains("no series of experiments/x.yaml has `v05` and then `v07` as neighbouring levels"),
        "{}",
        super::stderr(&out)
    );
}

/// A confirmation killed with SIGKILL midway resumes with the same command: every trial
/// before the kill kept as it was, no trial of a cell measured twice, and the answer given.
#[test]
fn a_confirmation_killed_midway_resumes_to_its_answer() {
    use std::time::{Duration, Instant};
    let dir = tempfile::tempdir().unwrap();
    run_experiment(dir.path(), &stepping(dir.path(), 13, 1.08));
    let store = dir.path().join("reports/x-confirm-v12-v13");
    let logged = || std::fs::read_to_string(store.join("runs.ndjson")).map_or(0, |t| t.lines().count());
    let confirm = || {
        let mut c = super::as_a_user(dir.path());
        c.args(["run", "experiments/x.yaml", "--confirm", "v12,v13"]);
        c
    };
    let mut child =
        confirm().stdout(std::process::Stdio::null()).stderr(std::process::Stdio::null()).spawn().unwrap();
    let start = Instant::now();
    while logged() < 8 && start.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_millis(10));
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    // the whole records the kill left (a torn last line is the store's to mend)
    let before: Vec<serde_json::Value> = std::fs::read_to_string(store.join("runs.ndjson"))
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    assert!(before.len() >= 6, "killed before 6 trials were logged: {}", before.len());

    let out = confirm().output().unwrap();
    let text = super::stdout(&out);
    assert!(out.status.success(), "{text}\n{}", super::stderr(&out));
    // confirmed (its size settled or not: the values after the kill are not the ones an
    // uninterrupted run would have drawn)
    assert!(text.contains("value: confirmed"), "{text}");
    let after = super::records(&store);
    assert!(after.len() > before.len(), "the resumed confirmation measured nothing more");
    for (a, b) in before.iter().zip(&after) {
        assert_eq!(a["trial"], b["trial"], "a trial before the kill was changed or lost");
    }
    let mut seen = std::collections::HashSet::new();
    for r in after.iter().filter(|r| r["warmup"] != true) {
        let key = (r["cell"].to_string(), r["repetition"].to_string());
        assert!(seen.insert(key.clone()), "measured twice: {key:?}");
    }
}
