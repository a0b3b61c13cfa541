//! End-to-end tests of the analysis and the report: seed 000 against scipy, one test per
//! verdict, the whole report as a snapshot, the files written, templates, export.
//!
//! Here the helpers every file of them shares and the tests of the whole report (the
//! snapshot, the warnings its store raises, the files written, templates, export);
//! beside it, in `tests/`: [`seed`] (seed 000 against scipy), [`boots`] (levels across
//! boots), [`verdicts`] (one test per verdict, outliers), [`layout`] (the order of values,
//! plot rows and axes, pending cells, intervals cut at 0).

mod boots;
mod layout;
mod seed;
mod verdicts;

use std::sync::LazyLock;

use serde_json::Value;

use super::*;
use crate::analyze::fixture::Fixture;
use crate::analyze::summarize_store;
use crate::store::Status;
use crate::summary::{Arm, ComparisonStat, Pending, WarningKind};
use stats::compare::Design;
use stats::tolerance::assert_close;
use stats::verdict::VerdictKind;
use vocab::{Better, MeanKind};

static SEED: LazyLock<Value> = LazyLock::new(|| {
    serde_json::from_str(include_str!("../../tests/data/report/seed000.json")).expect("seed000.json is JSON")
});

fn numbers(value: &Value) -> Vec<f64> {
    value.as_array().unwrap().iter().map(|v| v.as_f64().unwrap()).collect()
}

fn report(f: &Fixture, pending: &[Pending]) -> (Summary, String) {
    let summary = Arc::new(summarize_store(&f.exp, &f.plan, &f.snapshot, pending).unwrap());
    let plots = plots(&f.exp, &f.plan, &summary).unwrap();
    let markdown = render(&f.exp, &summary, &plots, "2024-01-01 00:00:00 UTC").unwrap();
    (Arc::unwrap_or_clone(summary), markdown)
}

#[track_caller]
fn assert_arm(arm: &Arm, expected: &Value, what: &str) {
    assert_eq!(arm.n as u64, expected["n"].as_u64().unwrap(), "{what}: n");
    assert_close(arm.mean, expected["mean"].as_f64().unwrap(), &format!("{what}: mean"));
    for (got, key) in
        [(arm.moe, "moe"), (arm.moe_pct, "moe_pct"), (arm.ci_low, "ci_low"), (arm.ci_high, "ci_high")]
    {
        assert_close(got.unwrap(), expected[key].as_f64().unwrap(), &format!("{what}: {key}"));
    }
}

#[track_caller]
fn assert_ratio(c: &ComparisonStat, expected: &Value) {
    assert_close(c.ratio, expected["ratio"].as_f64().unwrap(), "ratio");
    assert_close(c.ci_low.unwrap(), expected["ci_low"].as_f64().unwrap(), "ratio ci_low");
    assert_close(c.ci_high.unwrap(), expected["ci_high"].as_f64().unwrap(), "ratio ci_high");
    assert_close(c.p_value.unwrap(), expected["p_value"].as_f64().unwrap(), "p");
}

/// A two-level experiment whose comparison gets the verdict the data were chosen for.
fn verdict_case(baseline: &[f64], level: &[f64]) -> (ComparisonStat, String) {
    verdict_case_with("", baseline, level)
}

/// [`verdict_case`] with more lines of `analysis:`.
fn verdict_case_with(analysis: &str, baseline: &[f64], level: &[f64]) -> (ComparisonStat, String) {
    let yaml = format!(
        "matrix: {{ v: [a, b] }}\nrun: \"true\"\nrepetitions: 5\nanalysis:\n{analysis}  compare: [{{ factor: v, baseline: a }}]\n"
    );
    let mut f = Fixture::new("experiments/case.yaml", &yaml);
    f.metric("wall_time", "s", Better::Lower, MeanKind::Arithmetic);
    for (level, values) in [("a", baseline), ("b", level)] {
        for &v in values {
            f.trial(&[("v", level)], &[("wall_time", v)]);
        }
    }
    let (summary, markdown) = report(&f, &[]);
    let [c] = &summary.comparisons[..] else { panic!("one comparison") };
    assert!(markdown.contains(&format!("- **v: b vs a · wall_time**: {}.", c.sentence)), "{markdown}");
    (c.clone(), markdown)
}

const BASE: [f64; 5] = [10.0, 10.1, 9.9, 10.05, 9.95];

/// The store the snapshot is taken of: dd by block size and sync mode on a small host,
/// with a warm-up, a failure, an outlier, a stale record and a pending cell.
fn dd_store() -> Fixture {
    let mut f = Fixture::new(
        "experiments/dd.yaml",
        r#"description: dd write throughput by sync mode.
matrix:
  bs: [1M, 4M]
  sync: [none, fdatasync]
run: "dd if=/dev/zero of={{ workdir }}/zero.tst bs={{ bs }} count=256 {% if sync == 'fdatasync' %}conv=fdatasync{% endif %}"
parse: dd
metrics:
  throughput: { better: higher }
repetitions: 6
warmup: 1
analysis:
  threshold: 5%
  compare:
    - { factor: sync, baseline: none }
"#,
    );
    f.metric("throughput", "B/s", Better::Higher, MeanKind::Harmonic);
    f.session(
        "s1",
        "bench1",
        &[("hostname", "bench1"), ("kernel", "6.1.0-18-amd64"), ("memory", "1073741824")],
    );
    let rates: [(&str, &str, [f64; 6]); 4] = [
        ("1M", "none", [1.52e9, 1.49e9, 1.55e9, 1.50e9, 1.51e9, 1.53e9]),
        ("1M", "fdatasync", [2.10e8, 2.05e8, 2.12e8, 2.08e8, 1.40e8, 2.11e8]),
        ("4M", "none", [1.61e9, 1.58e9, 1.60e9, 1.63e9, 1.59e9, 1.62e9]),
        ("4M", "fdatasync", [2.31e8, 2.28e8, 2.35e8, 2.30e8, 2.29e8, 2.33e8]),
    ];
    for round in 0..6 {
        for (bs, sync, values) in &rates {
            f.trial(&[("bs", bs), ("sync", sync)], &[("throughput", values[round])]);
        }
    }
    let warm = f.cell(&[("bs", "1M"), ("sync", "none")]);
    f.record(warm.clone(), &[("bs", "1M"), ("sync", "none")], &[("throughput", 9.9e8)], Status::Ok);
    *f.snapshot.trials.warmup.last_mut().unwrap() = true;
    f.record(
        f.cell(&[("bs", "4M"), ("sync", "fdatasync")]),
        &[("bs", "4M"), ("sync", "fdatasync")],
        &[],
        Status::Failed,
    );
    f.record(
        "00000000deadbeef".to_owned(),
        &[("bs", "1M"), ("sync", "none")],
        &[("throughput", 1.0e9)],
        Status::Ok,
    );
    f
}

#[test]
fn whole_report_snapshot() {
    let f = dd_store();
    let pending = [Pending {
        cell: "bs=1M sync=direct".to_owned(),
        reason: "needs a host with O_DIRECT support".to_owned(),
    }];
    let (_, markdown) = report(&f, &pending);
    insta::with_settings!({
        filters => vec![
            (r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(\.\d+)?(Z| UTC)", "[date]"),
            (r"margin \d+\.\d+\.\d+", "margin [version]"),
            (r"\| \d+\.\d+\.\d+ +\|", "| [version] |"),
            (r"bench1", "[host]"),
        ]
    }, {
        insta::assert_snapshot!(markdown);
    });
}

#[test]
fn the_snapshot_store_raises_the_warnings_it_was_built_for() {
    let f = dd_store();
    let (summary, _) = report(&f, &[]);
    let kinds: Vec<WarningKind> = summary.warnings.iter().map(|w| w.kind).collect();
    for kind in [
        WarningKind::Stale,
        WarningKind::DdWithoutSync,
        WarningKind::SmallTestFile,
        WarningKind::SingleSession,
    ] {
        assert!(kinds.contains(&kind), "{kind:?} missing from {kinds:?}");
    }
    let unsynced = summary.warnings.iter().find(|w| w.kind == WarningKind::DdWithoutSync).unwrap();
    assert!(unsynced.message.ends_with("bs=1M sync=none; bs=4M sync=none"), "{}", unsynced.message);
    assert_eq!(
        (summary.trials.analysed, summary.trials.warmups, summary.trials.failed, summary.trials.stale),
        (24, 1, 1, 1)
    );
    assert_eq!(summary.failures.len(), 1);
    // 1.40e8 is far below the other 1M fdatasync rates: beyond the studentized cutoff, set
    // aside (the default)
    let cell = summary.cells.iter().find(|c| c.label == "bs=1M sync=fdatasync").unwrap();
    assert_eq!((cell.n, cell.set_aside.clone(), cell.flagged.clone()), (5, vec![1.40e8], vec![]));
    // Two comparisons, so their p-values are Holm-adjusted together.
    assert_eq!(summary.comparisons.len(), 2);
    assert!(summary.comparisons.iter().all(|c| c.p_adjusted.unwrap() >= c.p_value.unwrap()));
}

#[test]
fn write_report_writes_the_markdown_the_json_and_the_plots() {
    let f = dd_store();
    let dir = tempfile::tempdir().unwrap();
    let summary = Arc::new(summarize_store(&f.exp, &f.plan, &f.snapshot, &[]).unwrap());
    write_report(&f.exp, &f.plan, &summary, dir.path()).unwrap();
    let markdown = fs::read_to_string(dir.path().join("report.md")).unwrap();
    assert!(
        markdown.contains(
            "![throughput: every trial, the mean and its confidence interval](plots/throughput.svg)"
        )
    );
    let svg = fs::read_to_string(dir.path().join("plots/throughput.svg")).unwrap();
    assert!(
        svg.starts_with("<svg") && svg.contains("sync=fdatasync") && svg.contains("bs=4M sync=none"),
        "{svg}"
    );
    let text = fs::read_to_string(dir.path().join("summary.json")).unwrap();
    assert_eq!(text, crate::summary::json::to_string(&summary).unwrap() + "\n");
    let json: Value = serde_json::from_str(&text).unwrap();
    // The field names docs/design.md §8 promises to scripts.
    for key in ["cells", "comparisons", "warnings", "pending", "failures"] {
        assert!(json.get(key).is_some(), "summary.json lacks {key}");
    }
    for key in [
        "levels",
        "metric",
        "unit",
        "mean_kind",
        "n",
        "mean",
        "sd",
        "cv",
        "median",
        "min",
        "max",
        "ci_low",
        "ci_high",
        "moe",
        "moe_pct",
        "set_aside",
        "runs_needed",
    ] {
        assert!(json["cells"][0].get(key).is_some(), "cells lack {key}");
    }
    for key in [
        "factor",
        "baseline",
        "level",
        "context",
        "metric",
        "ratio",
        "ci_low",
        "ci_high",
        "p_value",
        "p_adjusted",
        "mde_pct",
        "verdict",
        "sentence",
    ] {
        assert!(json["comparisons"][0].get(key).is_some(), "comparisons lack {key}");
    }
    assert!(!dir.path().join("report.partial").exists());
}

#[test]
fn an_experiment_may_bring_its_own_template() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("short.md.j2"), "{% for c in summary.comparisons %}{{ c.level }}: {{ c.verdict }} {{ c.ratio | signed_pct }}\n{% endfor %}").unwrap();
    fs::write(dir.path().join("typo.md.j2"), "line one\n{{ summary.experimnet }}\n").unwrap();
    let spec = |template: &str| {
        format!(
            "matrix: {{ v: [a, b] }}\nrun: \"true\"\nanalysis: {{ compare: [{{ factor: v, baseline: a }}] }}\nreport: {{ template: {template} }}\n"
        )
    };
    let path = dir.path().join("exp.yaml");
    let mut f = Fixture::new(path.to_str().unwrap(), &spec("short.md.j2"));
    f.metric("wall_time", "s", Better::Lower, MeanKind::Arithmetic);
    for (level, values) in [("a", BASE), ("b", [12.0, 12.1, 11.9, 12.05, 11.95])] {
        for v in values {
            f.trial(&[("v", level)], &[("wall_time", v)]);
        }
    }
    let (_, markdown) = report(&f, &[]);
    assert_eq!(markdown, "b: significant +1.2 %\n");

    let typo = Fixture::new(path.to_str().unwrap(), &spec("typo.md.j2"));
    let summary = Arc::new(summarize_store(&typo.exp, &typo.plan, &typo.snapshot, &[]).unwrap());
    let err = render(&typo.exp, &summary, &[], "now").unwrap_err();
    assert!(matches!(err, ReportError::Template { line: Some(2), .. }), "{err}");
    assert!(err.to_string().contains("typo.md.j2:2: undefined value"), "{err}");

    // a report that fails leaves the files as they were: summary.json, serialised beside
    // the report meanwhile, is not put in place, and nothing half-written is left
    let out = tempfile::tempdir().unwrap();
    fs::write(out.path().join("summary.json"), "before").unwrap();
    assert!(write_report(&typo.exp, &typo.plan, &summary, out.path()).is_err());
    let left: Vec<String> = fs::read_dir(out.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(left, ["summary.json"]);
    assert_eq!(fs::read_to_string(out.path().join("summary.json")).unwrap(), "before");
}

#[test]
fn export_round_trips_through_parquet_and_writes_text_formats() {
    use polars::prelude::*;

    let f = dd_store();
    let table = crate::analyze::Table::build(&f.snapshot.trials, &f.plan).unwrap();
    // Every trial × metric of the current cells, warm-up and failure included; the stale
    // record left out.
    let frame = table.frame().unwrap();
    assert_eq!(frame.height(), 25);
    let names: Vec<String> = frame.get_column_names().iter().map(|n| n.to_string()).collect();
    assert_eq!(&names[..5], ["bs", "sync", "metric", "value", "unit"]);

    let mut parquet = Vec::new();
    crate::analyze::export(&table, crate::analyze::Format::Parquet, &mut parquet).unwrap();
    let back = ParquetReader::new(std::io::Cursor::new(parquet)).finish().unwrap();
    assert_eq!(back, frame);

    let mut csv = Vec::new();
    crate::analyze::export(&table, crate::analyze::Format::Csv, &mut csv).unwrap();
    let csv = String::from_utf8(csv).unwrap();
    assert!(
        csv.starts_with(
            "bs,sync,metric,value,unit,status,warmup,host,started_at,cell,repetition,session,round,trial,secondary\n"
        ),
        "{csv}"
    );
    assert_eq!(csv.lines().count(), 26);

    let mut ndjson = Vec::new();
    crate::analyze::export(&table, crate::analyze::Format::Ndjson, &mut ndjson).unwrap();
    let first: Value = serde_json::from_slice(ndjson.split(|b| *b == b'\n').next().unwrap()).unwrap();
    assert_eq!(
        (first["bs"].as_str(), first["metric"].as_str(), first["status"].as_str()),
        (Some("1M"), Some("throughput"), Some("ok"))
    );
}

/// Summaries of a real fixture's analysis, without telemetry and with one cell's.
pub(crate) fn sample_summary() -> Vec<Summary> {
    let f = dd_store();
    let (summary, _) = report(&f, &[]);
    let mut with = summary.clone();
    with.telemetry.cells.push(crate::summary::CellTelemetry {
        cell: "00ab".into(),
        label: "bs=4k".into(),
        levels: [("bs".to_owned(), "4k".to_owned())].into_iter().collect(),
        trials: 3,
        not_converged: 0,
        analysed: 3,
        values: Default::default(),
    });
    assert!(summary.telemetry.is_empty() && !with.telemetry.is_empty() && !summary.cells.is_empty());
    vec![summary, with]
}

#[test]
fn a_file_written_again_replaces_the_old_one_whole_and_leaves_nothing_beside_it() {
    use std::io::Read;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("summary.json");
    // nothing there yet: renamed into place
    super::write::write_file(&path, b"first").unwrap();
    let mut reader = fs::File::open(&path).unwrap();
    // over the old one: exchanged with it, which is then removed
    super::write::write_file(&path, b"second").unwrap();
    assert_eq!(fs::read_to_string(&path).unwrap(), "second");
    // a reader that had opened the old file reads it whole
    let mut old = String::new();
    reader.read_to_string(&mut old).unwrap();
    assert_eq!(old, "first");
    let left: Vec<String> = fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(left, ["summary.json"]);
}
