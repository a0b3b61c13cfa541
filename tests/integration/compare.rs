//! `margin run --label` and `margin compare`, as a user runs them: real `sleep` trials in
//! a folder with the default store, the candidate made slower by the software it runs
//! (here the nap length it reads from its environment), the command unchanged.

use std::collections::HashMap;
use std::path::Path;
use std::process::Output;

use super::{as_a_user, stderr, stdout};

/// One cell; the nap is what the "software under test" decides, the benchmark stays the
/// same. A 10 % margin keeps an A/A comparison of a loaded machine's timer inside it.
/// Outliers are only flagged, so that every trial stays in the means the test recomputes
/// from the log (the default rule may set a slow nap of a loaded machine aside).
const NAP: &str = "\
description: a nap whose length the software under test decides
matrix:
  tool: [sleep]
run: '{{ tool }} \"$NAP\"'
repetitions: 5
analysis:
  threshold: 10%
  outliers: { method: mad }
";

fn folder() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("experiments")).unwrap();
    std::fs::write(dir.path().join("experiments/nap.yaml"), NAP).unwrap();
    dir
}

fn margin(dir: &Path, args: &[&str]) -> Output {
    as_a_user(dir).args(args).output().unwrap()
}

/// `margin run` with the nap of this version of the software.
fn run(dir: &Path, nap: &str, args: &[&str]) {
    let out =
        as_a_user(dir).env("NAP", nap).arg("run").arg("experiments/nap.yaml").args(args).output().unwrap();
    assert!(out.status.success(), "run {args:?}: {}{}", stdout(&out), stderr(&out));
}

fn json(out: &Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}{}", stdout(out), stderr(out)))
}

/// The mean wall time of each label's trials, computed from the logs themselves.
fn means_by_label(store: &Path) -> HashMap<String, f64> {
    let lines = |file: &str| -> Vec<serde_json::Value> {
        std::fs::read_to_string(store.join(file))
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    };
    let labels: HashMap<String, String> = lines("sessions.ndjson")
        .iter()
        .filter(|s| s["event"] == "start")
        .filter_map(|s| Some((s["session"].as_str()?.to_owned(), s["label"].as_str()?.to_owned())))
        .collect();
    let mut values: HashMap<String, Vec<f64>> = HashMap::new();
    for t in lines("runs.ndjson").iter().filter(|t| t["status"] == "ok" && t["warmup"] == false) {
        let label = &labels[t["session"].as_str().unwrap()];
        values.entry(label.clone()).or_default().push(t["metrics"]["wall_time"].as_f64().unwrap());
    }
    values.into_iter().map(|(l, v)| (l, v.iter().sum::<f64>() / v.len() as f64)).collect()
}

/// The tables of a Markdown text as a CommonMark renderer with tables reads them: rows of
/// cells' text, the header first.
fn tables(markdown: &str) -> Vec<Vec<Vec<String>>> {
    use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};
    let mut out: Vec<Vec<Vec<String>>> = Vec::new();
    let mut in_cell = false;
    for event in Parser::new_ext(markdown, Options::ENABLE_TABLES) {
        match event {
            Event::Start(Tag::Table(_)) => out.push(Vec::new()),
            Event::Start(Tag::TableHead | Tag::TableRow) => out.last_mut().unwrap().push(Vec::new()),
            Event::Start(Tag::TableCell) => {
                in_cell = true;
                out.last_mut().unwrap().last_mut().unwrap().push(String::new());
            }
            Event::End(TagEnd::TableCell) => in_cell = false,
            Event::Text(t) | Event::Code(t) if in_cell => {
                out.last_mut().unwrap().last_mut().unwrap().last_mut().unwrap().push_str(&t);
            }
            _ => {}
        }
    }
    out
}

#[test]
fn labelled_runs_of_one_store_compare_as_a_ci_gate() {
    let dir = folder();
    let d = dir.path();
    // each label gets its own five repetitions in the one store
    run(d, "0.1", &["--label", "v1"]);
    let dry =
        as_a_user(d).env("NAP", "0.1").args(["run", "experiments/nap.yaml", "--dry-run"]).output().unwrap();
    assert!(
        stdout(&dry).contains("  done     tool=sleep"),
        "without a label every trial counts:\n{}",
        stdout(&dry)
    );
    let dry = as_a_user(d)
        .env("NAP", "0.1")
        .args(["run", "experiments/nap.yaml", "--dry-run", "--label", "v1-again"])
        .output()
        .unwrap();
    assert!(stdout(&dry).contains("tool=sleep: 5 trials"), "a new label runs its own:\n{}", stdout(&dry));
    run(d, "0.1", &["--label", "v1-again"]);
    run(d, "0.3", &["--label", "v2"]);
    let status = margin(d, &["status", "nap"]);
    assert!(stdout(&status).contains("trials: 15 measured"), "{}", stdout(&status));
    assert!(stdout(&status).contains("labels: v1 (1 session), v1-again (1 session), v2 (1 session)"));
    let report = std::fs::read_to_string(d.join("reports/nap/report.md")).unwrap();
    assert!(report.contains("| label"), "the sessions table shows the labels:\n{report}");
    assert!(report.contains("| v1-again |"), "{report}");

    // A/A: the same software twice passes the gate
    let aa = margin(
        d,
        &["compare", "nap", "--baseline", "label=v1", "--candidate", "label=v1-again", "--fail-on", "worse"],
    );
    assert_eq!(aa.status.code(), Some(0), "{}{}", stdout(&aa), stderr(&aa));
    assert!(stdout(&aa).contains("Gate `--fail-on worse`: passed."), "{}", stdout(&aa));

    // three times the nap: worse beyond the margin, the gate fails and names the metric
    let args = ["compare", "nap", "--baseline", "label=v1", "--candidate", "label=v2"];
    let worse = margin(d, &[&args[..], &["--fail-on", "worse"]].concat());
    assert_eq!(worse.status.code(), Some(1), "{}{}", stdout(&worse), stderr(&worse));
    let text = stdout(&worse);
    assert!(text.contains("| wall_time | side: candidate vs baseline |"), "the glance table:\n{text}");
    assert!(text.contains("✔ real"), "{text}");
    assert!(text.contains("Gate `--fail-on worse`: **failed** (1)."), "{text}");
    // rendered as GitHub does (CommonMark with tables): one table, its header the glance
    // table's, its body a row per comparison; the legend a paragraph of its own
    let tables = tables(&text);
    assert_eq!(tables.len(), 1, "{tables:?}\n{text}");
    assert_eq!(tables[0][0], ["metric", "comparison", "change", "95 % CI", "verdict"]);
    assert_eq!(tables[0].len(), 2, "a header and one row: {:?}", tables[0]);
    assert_eq!(tables[0][1][4], "✔ real");
    assert!(
        stderr(&worse).contains("--fail-on worse: the candidate is worse beyond ±10.0 %: wall_time"),
        "{}",
        stderr(&worse)
    );
    // the same comparison without a gate is an answer, not a failure; `change` trips too
    assert_eq!(margin(d, &args).status.code(), Some(0));
    assert_eq!(margin(d, &[&args[..], &["--fail-on", "change"]].concat()).status.code(), Some(1));

    // the JSON: the ratio is the candidate's mean over the baseline's, from the logs
    let out = margin(d, &[&args[..], &["--json"]].concat());
    assert!(out.status.success(), "{}", stderr(&out));
    let v = json(&out);
    let c = &v["comparisons"][0];
    assert_eq!(v["comparisons"].as_array().unwrap().len(), 1);
    assert_eq!(
        (c["factor"].as_str(), c["level"].as_str(), c["baseline"].as_str()),
        (Some("side"), Some("candidate"), Some("baseline"))
    );
    assert_eq!(c["context"]["tool"], "sleep");
    assert_eq!(c["verdict"], "significant");
    let means = means_by_label(&d.join("reports/nap"));
    let ratio = c["ratio"].as_f64().unwrap();
    assert!((ratio - means["v2"] / means["v1"]).abs() < 1e-9, "{ratio} vs {means:?}");
    // three times the nap, plus the start of `sh` and `sleep` on both sides (more on a loaded machine)
    assert!(ratio > 1.2 && ratio < 3.5, "{ratio}");
    let (low, high) = (c["ci_low"].as_f64().unwrap(), c["ci_high"].as_f64().unwrap());
    assert!(low < ratio && ratio < high && low > 1.1, "[{low}, {high}]");
    assert_eq!(v["baseline"]["labels"], serde_json::json!(["v1"]));
    assert_eq!(v["candidate"]["trials"], 5);
    assert_eq!(v["environment_differences"], serde_json::json!([]), "one machine, one boot");
    assert_eq!(v["failed"], serde_json::json!([]), "no gate asked");
    // the same sides by session: the start of v1's session id, and v2's in full
    let (v1, v2) =
        (v["baseline"]["sessions"][0].as_str().unwrap(), v["candidate"]["sessions"][0].as_str().unwrap());
    let by_session = format!("session={}", &v1[..13]);
    let out = margin(
        d,
        &["compare", "nap", "--baseline", &by_session, "--candidate", &format!("session={v2}"), "--json"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(json(&out)["comparisons"][0]["ratio"], c["ratio"]);

    // bad input: an unknown label names those there are; a bad selection; one side only
    let unknown = margin(d, &["compare", "nap", "--baseline", "label=v3", "--candidate", "label=v2"]);
    assert_eq!(unknown.status.code(), Some(2));
    assert!(
        stderr(&unknown).contains("no session has the label `v3`; its labels: v1, v1-again, v2"),
        "{}",
        stderr(&unknown)
    );
    let bad = margin(d, &["compare", "nap", "--baseline", "lable=v1", "--candidate", "label=v2"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(stderr(&bad).contains("a selection is by label, session, since or until"), "{}", stderr(&bad));
    let one = margin(d, &["compare", "nap", "--candidate", "label=v2"]);
    assert_eq!(one.status.code(), Some(2));
    assert!(stderr(&one).contains("--baseline and --candidate"), "{}", stderr(&one));
    let future =
        margin(d, &["compare", "nap", "--baseline", "label=v1,since=2999-01-01", "--candidate", "label=v2"]);
    assert_eq!(future.status.code(), Some(2));
    assert!(
        stderr(&future).contains("selected by `label=v1,since=2999-01-01` hold no measurement"),
        "{}",
        stderr(&future)
    );
}

#[test]
fn a_changed_command_is_not_comparable() {
    let dir = folder();
    let d = dir.path();
    run(d, "0.05", &["--label", "before"]);
    let changed = NAP.replace("run: '{{ tool }}", "run: 'true; {{ tool }}");
    std::fs::write(d.join("experiments/nap.yaml"), changed).unwrap();
    run(d, "0.05", &["--label", "after"]);
    let out = margin(
        d,
        &["compare", "nap", "--baseline", "label=before", "--candidate", "label=after", "--fail-on", "worse"],
    );
    assert_eq!(out.status.code(), Some(2), "nothing compared is no passed gate: {}", stdout(&out));
    let text = stdout(&out);
    assert!(text.contains("## Not comparable"), "{text}");
    assert!(text.contains("- tool=sleep: baseline "), "{text}");
    assert!(!text.contains("| wall_time"), "never compared: {text}");
    assert!(stderr(&out).contains("nothing could be compared"), "{}", stderr(&out));
}

#[test]
fn two_separate_stores_and_the_machines_they_ran_on() {
    let dir = folder();
    let d = dir.path();
    // a baseline store kept from main, a candidate store from the change
    run(d, "0.1", &["--reports", "main"]);
    run(d, "0.3", &["--reports", "change"]);
    let out = margin(d, &["compare", "main/nap", "change/nap", "--fail-on", "worse", "--json"]);
    assert_eq!(out.status.code(), Some(1), "{}{}", stdout(&out), stderr(&out));
    let v = json(&out);
    assert_eq!(v["baseline"]["store"], "main/nap");
    assert_eq!(v["candidate"]["store"], "change/nap");
    assert_eq!(v["baseline"]["selection"], serde_json::Value::Null);
    assert_eq!(v["failed"][0]["metric"], "wall_time");
    assert_eq!(v["failed"][0]["cell"], "tool=sleep");
    assert!(stderr(&out).contains("wall_time (tool=sleep) ×"), "{}", stderr(&out));

    // the candidate measured on another machine (a Xen dom0's facts): the differences are
    // listed, and one boot per side claims nothing, so the gate has nothing to trip on
    let out = as_a_user(d)
        .env("NAP", "0.3")
        .env("MARGIN_SYSROOT", concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/sysroot/xen-dom0"))
        .args(["run", "experiments/nap.yaml", "--reports", "dom0"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let out = margin(d, &["compare", "main/nap", "dom0/nap", "--fail-on", "worse"]);
    assert_eq!(out.status.code(), Some(0), "{}{}", stdout(&out), stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("Facts that differ between the two sides' sessions"), "{text}");
    assert!(text.contains("| xen_role"), "{text}");
    assert!(text.contains("| boot_id (the boot)"), "{text}");
    assert!(text.contains("⚠ unreplicated"), "{text}");
}
