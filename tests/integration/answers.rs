//! The answers beyond the verdicts, through the real binary as the README runs it: a
//! figure someone posted, imported as a single trial, against runs made here (the
//! prediction interval), and an effect pooled over the contexts it was compared in.

use super::{as_a_user, stderr};

/// dd on this machine with and without conv=fdatasync at two block sizes, and a level
/// `machine: post` that this machine never is: the seed 002 post's dd output is imported
/// there as a single trial.
const EXPERIMENT: &str = r#"description: the post's dd figure against runs made here
matrix:
  machine: [post, here]
  io:
    - { bs: 64k, count: 64 }
    - { bs: 1M, count: 4 }
  sync: [none, fdatasync]
environment:
  machine: { probe: "echo here" }
run: >-
  dd if=/dev/zero of={{ workdir }}/zero.tst bs={{ bs }} count={{ count }}
  {% if sync == 'fdatasync' %}conv=fdatasync{% endif %}
conclude: "rm -f {{ workdir }}/zero.tst"
parse: dd
metrics:
  throughput: { better: higher }
repetitions: 5
analysis:
  compare:
    - { factor: machine, baseline: here }
    - { factor: sync, baseline: none }
"#;

/// t(0.975, 4), scipy.stats.t.ppf(0.975, 4).
const T_975_4: f64 = 2.776_445_105_197_799;

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * b.abs()
}

#[test]
fn a_posted_figure_is_placed_against_the_prediction_interval_of_the_runs() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("post.yaml"), EXPERIMENT).unwrap();
    let post = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("experiments/data/seed002/dd-bare.txt");
    let out = as_a_user(dir.path()).args(["run", "post.yaml"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let out = as_a_user(dir.path())
        .args(["import", "post.yaml", "--set", "machine=post", "--set", "bs=1M", "--set", "count=4"])
        .args(["--set", "sync=none"])
        .arg(&post)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let out = as_a_user(dir.path()).args(["report", "post.yaml"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));

    let store = dir.path().join("reports/post");
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(store.join("summary.json")).unwrap()).unwrap();
    let report = std::fs::read_to_string(store.join("report.md")).unwrap();

    // The post's 502 MB/s against one more run here without a sync flag at bs=1M.
    let c = summary["comparisons"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["factor"] == "machine")
        .expect("machine: post vs here");
    let p = &c["prediction"];
    assert_eq!(p["single_level"], "post");
    assert_eq!(p["measured_level"], "here");
    // dd's own bytes and seconds: 3221225472 bytes copied in 6.42111 s
    let posted = 3_221_225_472.0 / 6.42111;
    assert!(close(p["value"].as_f64().unwrap(), posted));
    // by hand, from the runs' own values: a rate is predicted on its reciprocals
    let cell = summary["cells"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| {
            c["levels"]["machine"] == "here" && c["levels"]["bs"] == "1M" && c["levels"]["sync"] == "none"
        })
        .unwrap();
    // every value of the cell, those the outlier rule set aside too: a value set aside
    // would narrow the interval (docs/statistics.md, A single number against measured runs)
    let times: Vec<f64> =
        cell["values"].as_array().unwrap().iter().map(|v| 1.0 / v.as_f64().unwrap()).collect();
    let n = times.len() as f64;
    assert_eq!(p["measured_n"], 5);
    let t = T_975_4;
    let mean = times.iter().sum::<f64>() / n;
    let sd = (times.iter().map(|t| (t - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt();
    let h = t * sd * (1.0 + 1.0 / n).sqrt();
    let low = p["low"].as_f64().unwrap();
    assert!(close(low, 1.0 / (mean + h)), "{low} against {}", 1.0 / (mean + h));
    if mean > h {
        assert!(close(p["high"].as_f64().unwrap(), 1.0 / (mean - h)));
    } else {
        assert!(p["high"].is_null());
    }
    let place = p["place"].as_str().unwrap();
    let expected = if posted < low {
        "below"
    } else if p["high"].as_f64().is_some_and(|h| posted > h) {
        "above"
    } else {
        "inside"
    };
    assert_eq!(place, expected);
    let sentence = c["sentence"].as_str().unwrap();
    assert!(sentence.contains("the single trial of machine=post, 501.7 MB/s, lies"), "{sentence}");
    assert!(sentence.contains("95 % prediction interval of one more trial of machine=here"), "{sentence}");
    assert!(report.contains(sentence), "the report gives the sentence");
    assert!(report.contains("PI ["), "the glance table shows the prediction interval:\n{report}");
}

/// Three contexts (a zipped group) whose trials print known values: b is 10–14 % above a,
/// with its own pattern of spread, so the pooled effect can be computed by hand.
const CONTEXTS: &str = r#"matrix:
  v: [a, b]
  ctx:
    - { c: 1, base: 10 }
    - { c: 2, base: 20 }
    - { c: 3, base: 40 }
run: >-
  echo "value={{ base * (100 + (repetition * (c + (3 if v == 'b' else 1))) % 7) / 100 * ((1.08 + 0.02 * c) if v == 'b' else 1.0) }}"
metrics:
  value: { regex: 'value=([0-9.]+)', better: lower }
repetitions: 5
analysis:
  compare:
    - { factor: v, baseline: a }
"#;

/// t(0.975, 2), scipy.stats.t.ppf(0.975, 2).
const T_975_2: f64 = 4.302_652_729_749_464;

#[test]
fn an_effect_is_pooled_over_the_contexts_as_a_hand_computation_does() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("contexts.yaml"), CONTEXTS).unwrap();
    let out = as_a_user(dir.path()).args(["run", "contexts.yaml"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let store = dir.path().join("reports/contexts");
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(store.join("summary.json")).unwrap()).unwrap();
    let report = std::fs::read_to_string(store.join("report.md")).unwrap();

    let values = |level: &str, c: &str| -> Vec<f64> {
        let cell = summary["cells"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["levels"]["v"] == level && x["levels"]["c"] == c)
            .unwrap();
        cell["values"].as_array().unwrap().iter().map(|v| v.as_f64().unwrap()).collect()
    };
    let mean = |x: &[f64]| x.iter().sum::<f64>() / x.len() as f64;
    let var = |x: &[f64]| {
        let m = mean(x);
        x.iter().map(|v| (v - m).powi(2)).sum::<f64>() / (x.len() - 1) as f64
    };
    // each context: y = ln(mean_b / mean_a), v = CV_a²/5 + CV_b²/5
    let (mut y, mut w) = (Vec::new(), Vec::new());
    for c in ["1", "2", "3"] {
        let (a, b) = (values("a", c), values("b", c));
        assert_eq!((a.len(), b.len()), (5, 5));
        y.push((mean(&b) / mean(&a)).ln());
        w.push(1.0 / (var(&a) / mean(&a).powi(2) / 5.0 + var(&b) / mean(&b).powi(2) / 5.0));
    }
    // equal trial counts: equal weights for the main effect, Hartung–Knapp with t(2)
    let centre = mean(&y);
    let se = (y.iter().map(|v| (v - centre).powi(2)).sum::<f64>() / (2.0 * 3.0)).sqrt();
    let fixed = y.iter().zip(&w).map(|(y, w)| y * w).sum::<f64>() / w.iter().sum::<f64>();
    let q: f64 = y.iter().zip(&w).map(|(y, w)| w * (y - fixed).powi(2)).sum();

    let e = &summary["effects"].as_array().unwrap()[0];
    assert_eq!(
        (e["factor"].as_str(), e["level"].as_str(), e["contexts"].as_u64()),
        (Some("v"), Some("b"), Some(3))
    );
    assert_eq!(e["over"], serde_json::json!(["c", "base"]));
    let got = |k: &str| e[k].as_f64().unwrap();
    assert!(close(got("ratio"), centre.exp()), "{} against {}", got("ratio"), centre.exp());
    assert!(close(got("ci_low"), (centre - T_975_2 * se).exp()));
    assert!(close(got("ci_high"), (centre + T_975_2 * se).exp()));
    assert!(close(got("q"), q), "{} against {q}", got("q"));
    let i2 = if q > 2.0 { (q - 2.0) / q * 100.0 } else { 0.0 };
    assert!((got("i2_pct") - i2).abs() < 1e-9);
    let p = got("p_differs");
    assert!((0.0..=1.0).contains(&p) && e["differs"].as_bool().unwrap() == (p < 0.05));
    let sentence = e["sentence"].as_str().unwrap();
    assert!(sentence.starts_with("v: b vs a · value: +"), "{sentence}");
    assert!(sentence.contains("at 95 % confidence over 3 contexts;"), "{sentence}");
    assert!(report.contains("## Effects across the matrix"), "{report}");
    assert!(report.contains("| v: b vs a "), "{report}");
}

/// The reduced calibration of both, through the real binary at a fixed seed (the full
/// tables: docs/statistics.md): a single value inside its prediction interval, and the
/// pooled effect's coverage and false "differs" rate, each within 3 standard errors of
/// their goals.
#[test]
fn calibrate_checks_the_prediction_interval_and_the_pooled_effect() {
    const N: f64 = 400.0;
    let out = super::margin()
        .args(["calibrate", "--json", "--seed", "20240613", "--experiments", "400"])
        .args(["--scenario", "^single-n5-cv5-rate$", "--scenario", "^effects-k3-n5-cv5$"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["scenarios"].as_array().unwrap().len(), 0, "no scenario of the main table matches");
    let checks = report["answers"].as_array().unwrap();
    let names: Vec<&str> = checks.iter().map(|c| c["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["single-n5-cv5-rate", "effects-k3-n5-cv5"]);
    let se = |p: f64| (p * (1.0 - p) / N).sqrt();
    for check in checks {
        assert_eq!(check["not_analysed"], 0, "{check}");
        for r in check["coverage"].as_array().unwrap() {
            assert_eq!(r["of"].as_f64().unwrap(), N);
            let rate = r["rate"].as_f64().unwrap();
            assert!(rate >= 0.95 - 3.0 * se(0.95), "{}: coverage {rate}", check["name"]);
        }
        for r in check["false_differs"].as_array().into_iter().flatten() {
            let rate = r["rate"].as_f64().unwrap();
            assert!(rate <= 0.05 + 3.0 * se(0.05), "{}: false differs {rate}", check["name"]);
        }
    }
    assert_eq!(checks[1]["false_differs"].as_array().unwrap().len(), 2);
}
