//! Drift within a session and the order within a round, through the real binary as a
//! user runs it (docs/statistics.md, Drift within a session; Order within a round): a
//! command whose values step up by 15 % after its 20th trial (a counter in a file, across
//! the cells of the session) is said to drift, where and by how much; one whose first
//! trial of each round is 20 % higher is said to depend on its place; the same command
//! without either is said to do neither.

use serde_json::Value;

/// Runs `experiments/x.yaml` with a counter file beside it: every trial adds one, and
/// `step` (0 or 15) % is added to the values from its 21st trial on. With `first`, a
/// third cell, and `first` % added to the value of every trial first in its round (the
/// counter a multiple of 3: no warm-ups, every cell in every round).
fn run_with(step: u32, first: Option<u32>) -> (Value, String) {
    run_in(tempfile::tempdir().unwrap().path(), step, first)
}

/// [`run_with`] in `dir`, whose store stays for the test to read.
fn run_in(dir: &std::path::Path, step: u32, first: Option<u32>) -> (Value, String) {
    let counter = dir.join("count");
    let (levels, first) = match first {
        Some(pct) => ("[a, b, c]", pct),
        None => ("[a, b]", 0),
    };
    let yaml = format!(
        "matrix:\n  v: {levels}\n\
         run: >-\n  n=$(cat {counter} 2>/dev/null || echo 0); echo $((n + 1)) > {counter};\n  \
         awk -v n=$n -v v={{{{ v }}}} 'BEGIN {{ srand(n + 7); base = (v == \"a\") ? 100 : 50;\n  \
         if (n >= 20) base = base * (1 + {step} / 100); if (n % 3 == 0) base = base * (1 + {first} / 100);\n  \
         printf \"value=%.4f\\n\", base * (1 + 0.02 * (rand() - 0.5)) }}'\n\
         metrics:\n  value: {{ regex: 'value=([0-9.]+)' }}\n\
         repetitions: 20\nseed: 3\n\
         analysis:\n  compare:\n    - {{ factor: v, baseline: a }}\n",
        counter = counter.display()
    );
    super::run_experiment(dir, &yaml)
}

fn run(step: u32) -> (Value, String) {
    run_with(step, None)
}

#[test]
fn a_step_within_a_session_is_a_drift_with_its_place_and_size() {
    let dir = tempfile::tempdir().unwrap();
    let (summary, report) = run_in(dir.path(), 15, None);
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
    // its plot: the 40 trials against time, the change's line after the 20th
    let link = "![value drifting in session ";
    let line =
        report.lines().find(|l| l.starts_with(link)).unwrap_or_else(|| panic!("no drift plot: {report}"));
    assert!(line.ends_with("(plots/drift-value-1.svg)"), "{line}");
    let svg = std::fs::read_to_string(dir.path().join("reports/x/plots/drift-value-1.svg")).unwrap();
    assert_eq!(svg.matches("<circle").count(), 40, "a dot per trial");
    assert!(svg.contains("the change, after 20 of 40 trials"), "{svg}");
}

#[test]
fn a_session_without_a_step_does_not_drift() {
    let (summary, report) = run(0);
    assert!(summary.get("drifts").is_none(), "{}", summary["drifts"]);
    assert!(summary.get("order_effects").is_none(), "{}", summary["order_effects"]);
    assert!(!summary["warnings"].as_array().unwrap().iter().any(|w| w["kind"] == "drift"));
    assert!(!report.contains("drifts within session"), "{report}");
}

#[test]
fn a_first_trial_of_each_round_higher_is_an_order_effect_not_a_drift() {
    let (summary, report) = run_with(0, Some(20));
    let orders = summary["order_effects"].as_array().expect("order_effects in summary.json");
    let [o] = &orders[..] else { panic!("one order effect: {orders:?}") };
    assert_eq!(o["metric"], "value");
    assert_eq!(
        (o["trials"].as_u64(), o["cells"].as_u64(), o["places"].as_u64(), o["up_to_place"].as_u64()),
        (Some(60), Some(3), Some(3), Some(1)),
        "{o}"
    );
    // the later places against the first: 1 / 1.2 - 1
    let pct = o["change_pct"].as_f64().unwrap();
    assert!((pct - (1.0 / 1.2 - 1.0) * 100.0).abs() < 2.0, "{o}");
    assert!(o["p_value"].as_f64().unwrap() < 0.01, "{o}");
    assert!(summary.get("drifts").is_none(), "{}", summary["drifts"]);
    let warnings = summary["warnings"].as_array().unwrap();
    let w = warnings.iter().find(|w| w["kind"] == "order").expect("an order warning");
    let message = w["message"].as_str().unwrap();
    assert!(
        message.starts_with("value depends on the order within a round in session ")
            && message.contains("the trials after the first of their round are lower by 16."),
        "{message}"
    );
    assert!(report.contains("value depends on the order within a round"), "{report}");
}

#[test]
fn three_cells_without_an_effect_of_their_place_have_none() {
    let (summary, _) = run_with(0, Some(0));
    assert!(summary.get("order_effects").is_none(), "{}", summary["order_effects"]);
    assert!(!summary["warnings"].as_array().unwrap().iter().any(|w| w["kind"] == "order"));
}
