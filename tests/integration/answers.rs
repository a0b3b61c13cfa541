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
fn a_posted_figure_is_placed_against_the_runs_and_an_effect_is_pooled_over_block_sizes() {
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
    assert_eq!(p["measured_n"], 5);
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
    let times: Vec<f64> =
        cell["values"].as_array().unwrap().iter().map(|v| 1.0 / v.as_f64().unwrap()).collect();
    let mean = times.iter().sum::<f64>() / 5.0;
    let sd = (times.iter().map(|t| (t - mean).powi(2)).sum::<f64>() / 4.0).sqrt();
    let h = T_975_4 * sd * (1.0 + 1.0 / 5.0f64).sqrt();
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

    // fdatasync against no sync flag, pooled over the two block sizes
    let effects = summary["effects"].as_array().unwrap();
    let e = effects.iter().find(|e| e["factor"] == "sync").expect("an effect of sync");
    assert_eq!(e["level"], "fdatasync");
    assert_eq!(e["contexts"], 2);
    assert_eq!(e["over"], serde_json::json!(["bs", "count"]));
    let ratios: Vec<f64> = summary["comparisons"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["factor"] == "sync" && c["context"]["machine"] == "here")
        .map(|c| c["ratio"].as_f64().unwrap())
        .collect();
    assert_eq!(ratios.len(), 2);
    let ratio = e["ratio"].as_f64().unwrap();
    // a weighted geometric mean lies between the contexts' ratios
    let (lo, hi) = (ratios[0].min(ratios[1]), ratios[0].max(ratios[1]));
    assert!(lo * (1.0 - 1e-12) <= ratio && ratio <= hi * (1.0 + 1e-12), "{ratio} outside {ratios:?}");
    assert!(e["ci_low"].as_f64().unwrap() <= ratio && ratio <= e["ci_high"].as_f64().unwrap());
    let p = e["p_differs"].as_f64().unwrap();
    assert!((0.0..=1.0).contains(&p));
    assert_eq!(e["differs"].as_bool().unwrap(), p < 0.05);
    assert!(report.contains("## Effects across the matrix"), "{report}");
    assert!(report.contains("| sync: fdatasync vs none"), "{report}");
}
