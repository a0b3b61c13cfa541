//! Levels measured in disjoint boots, as a user gets there: results imported session by
//! session, `margin report` comparing the sessions and advising how to spread more runs
//! (docs/statistics.md, Sessions and boots).

use super::{as_a_user, stderr, stdout};

const EXPERIMENT: &str = "name: boots
matrix:
  kernel: [bare, xen]
environment:
  kernel: { fact: hypervisor, map: { xen: xen, none: bare } }
run: \"true\"
metrics:
  time: { regex: 'time ([0-9.]+)', unit: s, better: lower }
analysis:
  compare: [{ factor: kernel, baseline: bare }]
";

#[test]
fn sessions_that_differ_more_than_their_trials_get_advice_on_boots() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("experiments")).unwrap();
    std::fs::write(dir.path().join("experiments/boots.yaml"), EXPERIMENT).unwrap();
    // two imports (two sessions) per kernel, three trials each, the sessions' centres
    // 0.6 s apart and the trials within them 0.02 s
    for (kernel, session, centre) in
        [("bare", 1, 10.0), ("bare", 2, 10.6), ("xen", 1, 10.3), ("xen", 2, 10.9)]
    {
        let files: Vec<String> = [-0.02, 0.0, 0.02]
            .iter()
            .enumerate()
            .map(|(i, d)| {
                let name = format!("{kernel}-{session}-{i}.txt");
                std::fs::write(dir.path().join(&name), format!("time {:.2}\n", centre + d)).unwrap();
                name
            })
            .collect();
        let out = as_a_user(dir.path())
            .args(["import", "experiments/boots.yaml", "--set", &format!("kernel={kernel}")])
            .args(&files)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}\n{}", stdout(&out), stderr(&out));
    }
    let out = as_a_user(dir.path()).args(["report", "experiments/boots.yaml"]).output().unwrap();
    assert!(out.status.success(), "{}\n{}", stdout(&out), stderr(&out));
    let store = dir.path().join("reports/boots");
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(store.join("summary.json")).unwrap()).unwrap();
    let c = &summary["comparisons"][0];
    assert_eq!(c["verdict"], "inconclusive", "{c}");
    let r = &c["replication"];
    assert_eq!(
        (r["unit"].as_str(), r["baseline_units"].as_u64(), r["level_units"].as_u64()),
        (Some("session"), Some(2), Some(2))
    );
    // the components: within ≈ 0.02/10.3, between ≈ 0.42/10.3 on each side
    for side in ["baseline_components", "level_components"] {
        let within = r[side]["within_cv"].as_f64().unwrap();
        let between = r[side]["between_cv"].as_f64().unwrap();
        assert!((within - 0.02 / 10.3).abs() < 0.0005, "{side}: {within}");
        assert!((between - 0.6 / 2f64.sqrt() / 10.3).abs() < 0.003, "{side}: {between}");
    }
    let advice = &r["advice"];
    assert_eq!(advice["trials_per_unit"], 2, "{advice}");
    assert_eq!(advice["between_dominates"], true, "{advice}");
    let more = advice["more_units"].as_u64().unwrap();
    let report = std::fs::read_to_string(store.join("report.md")).unwrap();
    let words = format!("about {more} more sessions of each level, 2 trials each would settle it");
    assert!(report.contains(&words), "{report}");
    assert!(report.contains("so more trials per session would not help"), "{report}");
}
