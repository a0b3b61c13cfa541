//! The robust method through the real binary as the README runs it (the default store,
//! relative paths): `method: robust` on one metric of an experiment over real commands,
//! its verdict checked against the Hodges–Lehmann shift and the Moses interval computed
//! here by enumerating every split of the trials; too few trials for its interval; a bad
//! value of the key.

use super::{as_a_user, stderr, stdout};

/// Two metrics printed by `echo`: `a` with a wild value in each cell (30 s among 10 s),
/// compared by ranks; `b` by the default, the means.
const EXPERIMENT: &str = r#"description: a build against the old one, by ranks
matrix:
  build: [old, new]
run: >-
  echo "a={{ [10.1, 9.9, 10.3, 10.0, 9.8, 10.2, 30.0][repetition % 7] * (1.1 if build == 'new' else 1.0) }}
  b={{ [5.1, 4.9, 5.3, 5.0, 4.8, 5.2, 5.05][repetition % 7] }}"
metrics:
  a: { regex: 'a=([0-9.]+)', unit: s, better: lower, method: robust }
  b: { regex: 'b=([0-9.]+)', unit: s, better: lower }
repetitions: 7
analysis:
  compare:
    - { factor: build, baseline: old }
"#;

fn summary(dir: &std::path::Path) -> serde_json::Value {
    let text = std::fs::read_to_string(dir.join("reports/robust/summary.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

fn values(summary: &serde_json::Value, metric: &str, build: &str) -> Vec<f64> {
    let cell = summary["cells"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["metric"] == metric && c["levels"]["build"] == build)
        .unwrap();
    cell["values"].as_array().unwrap().iter().map(|v| v.as_f64().unwrap()).collect()
}

fn comparison<'a>(summary: &'a serde_json::Value, metric: &str) -> &'a serde_json::Value {
    summary["comparisons"].as_array().unwrap().iter().find(|c| c["metric"] == metric).unwrap()
}

/// P(U ≤ u) for every u, by enumerating every way of choosing which m of the m + n
/// ranks belong to the first sample (no ties).
fn u_cdf_by_enumeration(m: usize, n: usize) -> Vec<f64> {
    let mut counts = vec![0u64; m * n + 1];
    let mut total = 0u64;
    for mask in 0u32..(1 << (m + n)) {
        if mask.count_ones() as usize != m {
            continue;
        }
        // U of the second sample: pairs in which its member ranks above the first's
        let mut u = 0;
        let mut firsts_below = 0;
        for rank in 0..m + n {
            if mask & (1 << rank) != 0 {
                firsts_below += 1;
            } else {
                u += firsts_below;
            }
        }
        counts[u] += 1;
        total += 1;
    }
    let mut below = 0;
    counts
        .iter()
        .map(|c| {
            below += c;
            below as f64 / total as f64
        })
        .collect()
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * b.abs()
}

#[test]
fn a_robust_metric_is_compared_by_ranks_and_the_report_names_the_method() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("robust.yaml"), EXPERIMENT).unwrap();
    let out = as_a_user(dir.path()).args(["run", "robust.yaml"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let s = summary(dir.path());
    let metric =
        |name: &str| s["metrics"].as_array().unwrap().iter().find(|m| m["name"] == name).unwrap().clone();
    assert_eq!(metric("a")["method"], "robust");
    assert_eq!(metric("b")["method"], "parametric");

    // a: the Hodges–Lehmann shift of the logs and its Moses interval, computed here
    let (old, new) = (values(&s, "a", "old"), values(&s, "a", "new"));
    assert_eq!((old.len(), new.len()), (7, 7));
    assert!(old.contains(&30.0), "the wild value is among the trials: {old:?}");
    let mut diffs: Vec<f64> = old.iter().flat_map(|x| new.iter().map(move |y| (y / x).ln())).collect();
    diffs.sort_by(f64::total_cmp);
    let estimate = diffs[diffs.len() / 2].exp(); // 49 differences: the 25th
    let cdf = u_cdf_by_enumeration(7, 7);
    let c = cdf.iter().take_while(|&&p| p <= 0.025).count() - 1;
    let a = comparison(&s, "a");
    assert_eq!(a["method"], "robust");
    assert!(close(a["ratio"].as_f64().unwrap(), estimate), "{} against {estimate}", a["ratio"]);
    assert!(close(a["ci_low"].as_f64().unwrap(), diffs[c].exp()));
    assert!(close(a["ci_high"].as_f64().unwrap(), diffs[48 - c].exp()));
    assert!(close(a["coverage_pct"].as_f64().unwrap(), 100.0 * (1.0 - 2.0 * cdf[c])));
    assert_eq!(a["verdict"], "significant");
    // the outlier rule set the wild values aside from the cells' means, not from the ranks
    assert_eq!(a["baseline_arm"]["n"], 7);
    assert!(a["baseline_arm"]["median"]["value"].as_f64().is_some());
    let sentence = a["sentence"].as_str().unwrap();
    assert!(
        sentence.starts_with("new is slower than old: +10.0 % [")
            && sentence.contains("at 95 % confidence (robust: Hodges–Lehmann shift, Mann–Whitney interval, exact coverage 96.2 %)"),
        "{sentence}"
    );
    // b: the means, as ever
    let b = comparison(&s, "b");
    assert_eq!(b["method"], "parametric");
    assert!(b.get("coverage_pct").is_none());
    assert!(!b["sentence"].as_str().unwrap().contains("robust"));

    let report = std::fs::read_to_string(dir.path().join("reports/robust/report.md")).unwrap();
    assert!(report.contains("| verdict         | method            |"), "{report}");
    assert!(report.contains("| ✔ real          | robust: ranks     |"), "{report}");
    assert!(report.contains("| ≈ within margin | parametric: means |"), "{report}");
    assert!(report.contains("a is compared by the robust method: ranks of every value"), "{report}");
    assert!(report.contains("old median "), "{report}");
    // and the terminal answer
    assert!(
        stdout(&out).contains("(robust: Hodges–Lehmann shift, Mann–Whitney interval"),
        "{}",
        stdout(&out)
    );
}

#[test]
fn too_few_trials_for_the_robust_interval_is_a_verdict_of_its_own() {
    let dir = tempfile::tempdir().unwrap();
    let experiment =
        EXPERIMENT.replace("method: robust }", "}").replace("analysis:\n", "analysis:\n  method: robust\n");
    std::fs::write(dir.path().join("robust.yaml"), experiment).unwrap();
    let out = as_a_user(dir.path()).args(["run", "robust.yaml", "--repetitions", "3"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let s = summary(dir.path());
    for metric in ["a", "b"] {
        let c = comparison(&s, metric);
        assert_eq!(c["method"], "robust");
        assert_eq!(c["verdict"], "too_few_for_robust", "{c}");
        assert!(c["ci_low"].is_null() && c["ci_high"].is_null());
        let sentence = c["sentence"].as_str().unwrap();
        // 2 / C(6, 3) = 10 %: even the extreme differences cover only 90 %
        assert!(
            sentence.starts_with(
                "too few for the robust method: at 95 % confidence its interval needs at least 4 trials per \
                 level (3 and 3 here)"
            ) && sentence.contains("nothing is claimed"),
            "{sentence}"
        );
    }
    let report = std::fs::read_to_string(dir.path().join("reports/robust/report.md")).unwrap();
    assert!(report.contains("– too few for robust"), "{report}");
}

#[test]
fn an_unknown_method_is_an_error_with_its_place_and_the_methods_there_are() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("bad.yaml"),
        "matrix:\n  v: [a, b]\nrun: \"true\"\nanalysis:\n  method: fast\n",
    )
    .unwrap();
    for command in ["check", "run"] {
        let out = as_a_user(dir.path()).args([command, "bad.yaml"]).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{command}");
        let err = stderr(&out);
        assert!(err.contains("bad.yaml:5:11: unknown value `fast`"), "{err}");
        assert!(err.contains("expected one of: parametric, robust"), "{err}");
    }
    assert!(!dir.path().join("reports").exists(), "nothing stored");
}
