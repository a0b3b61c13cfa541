//! The committed seed reports (`reports/xen-*`, see experiments/data/README.md) are
//! rebuilt from `experiments/data/` by `experiments/data/import.sh` with the binary under
//! test and must match what is committed, so that they never drift from the code.
//!
//! Both sides are normalised the same way, and only where a report is bound to differ
//! between two runs: the ids and times of the import sessions, margin's version, and the
//! reasons cells are pending (they describe the machine writing the report: "this host
//! is kernel=guest"). Everything else — every number, verdict, warning, plot — must be
//! byte for byte what is committed. After an intended change: `just seeds`.

use std::path::{Path, PathBuf};

use regex::Regex;
use serde_json::Value;

use super::stderr;

/// The experiments the script imports into, in its order.
const EXPERIMENTS: [&str; 4] = ["xen-dnetc", "xen-bonnie", "xen-iozone", "xen-dd"];

const VERSION: &str = env!("CARGO_PKG_VERSION");

fn uuid() -> Regex {
    Regex::new(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}").unwrap()
}

/// report.md without what differs from one import to the next.
fn normalise_markdown(text: &str) -> String {
    let now = Regex::new(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z").unwrap();
    let written = Regex::new(r"^Written by margin \S+ on .*$").unwrap();
    let text = uuid().replace_all(text, "[id]");
    let text = now.replace_all(&text, "[time]");
    let mut pending = false;
    let mut out = String::new();
    for line in text.lines() {
        if line.starts_with("## ") {
            pending = line == "## Pending cells";
        }
        let line = if written.is_match(line) {
            "Written by margin [version] on [time].".to_owned()
        } else if line.starts_with('|') {
            // table cells trimmed (the padding follows the widths of the redacted values)
            let cells: Vec<String> = line
                .trim_matches('|')
                .split('|')
                .map(|c| match c.trim() {
                    v if v == VERSION => "[version]".to_owned(),
                    v if !v.is_empty() && v.chars().all(|c| matches!(c, '-' | ':')) => "---".to_owned(),
                    v => v.to_owned(),
                })
                .collect();
            format!("| {} |", cells.join(" | "))
        } else if pending && line.starts_with("- ") {
            let cell = line.split_once(": ").map_or(line, |(cell, _)| cell);
            format!("{cell}: [reason]")
        } else {
            line.to_owned()
        };
        out.push_str(&line);
        out.push('\n');
    }
    out
}

/// summary.json without what differs from one import to the next, pretty-printed so a
/// failure shows a readable diff.
fn normalise_summary(text: &str) -> String {
    let mut json: Value = serde_json::from_str(text).unwrap();
    let uuid = uuid();
    fn walk(value: &mut Value, uuid: &Regex) {
        match value {
            Value::String(s) if uuid.is_match(s) => *s = uuid.replace_all(s, "[id]").into_owned(),
            Value::Array(items) => items.iter_mut().for_each(|v| walk(v, uuid)),
            Value::Object(map) => map.values_mut().for_each(|v| walk(v, uuid)),
            _ => {}
        }
    }
    walk(&mut json, &uuid);
    let reproduce = &mut json["reproduce"];
    reproduce["margin_version"] = "[version]".into();
    for session in reproduce["sessions"].as_array_mut().unwrap() {
        for key in ["started_at", "ended_at", "margin_version"] {
            session[key] = format!("[{key}]").into();
        }
    }
    for pending in json["pending"].as_array_mut().unwrap() {
        pending["reason"] = "[reason]".into();
    }
    serde_json::to_string_pretty(&json).unwrap()
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn svgs(dir: &Path) -> Vec<PathBuf> {
    let mut names: Vec<PathBuf> = std::fs::read_dir(dir.join("plots"))
        .map(|d| d.map(|e| PathBuf::from(e.unwrap().file_name())).collect())
        .unwrap_or_default();
    names.sort();
    names
}

#[test]
fn the_committed_seed_reports_are_what_the_code_writes() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(root.join("experiments/data/import.sh"))
        .arg(assert_cmd::cargo::cargo_bin!("margin"))
        .arg(dir.path())
        .env_remove("MARGIN_REPORTS")
        .output()
        .unwrap();
    assert!(out.status.success(), "import.sh failed:\n{}", stderr(&out));
    for name in EXPERIMENTS {
        let (fresh, committed) = (dir.path().join(name), root.join("reports").join(name));
        assert_eq!(
            normalise_markdown(&read(&fresh.join("report.md"))),
            normalise_markdown(&read(&committed.join("report.md"))),
            "{name}/report.md differs from the committed one: run `just seeds` if the change is intended"
        );
        assert_eq!(
            normalise_summary(&read(&fresh.join("summary.json"))),
            normalise_summary(&read(&committed.join("summary.json"))),
            "{name}/summary.json differs from the committed one: run `just seeds` if the change is intended"
        );
        let plots = svgs(&fresh);
        assert_eq!(plots, svgs(&committed), "{name}: the plots");
        for plot in plots {
            let path = Path::new("plots").join(plot);
            assert!(
                read(&fresh.join(&path)) == read(&committed.join(&path)),
                "{name}/{} differs from the committed one: run `just seeds`",
                path.display()
            );
        }
    }
}

#[test]
fn normalising_keeps_what_matters() {
    let a = "| session | host | started | margin |\n| ------- | ---- | ------: | ------ |\n\
             | 01a22975-719a-7110-9631-fa8e0fa6a85d | u0 | 2026-11-29T22:38:12.387160794Z | VERSION |\n\
             \n## Pending cells\n\n- kernel=xen: needs kernel=xen; this host is kernel=guest\n\n\
             ## How to reproduce\n\n- kernel: 2006-11-23 18:25:53 UTC\n\
             Written by margin VERSION on 2026-11-29 22:38:12 UTC.\n"
        .replace("VERSION", VERSION);
    let b = "| session | host | started | margin |\n| --- | --- | ---: | --- |\n\
             | 01a22975-aaaa-7110-9631-fa8e0fa6a85d | u0 | 2026-11-30T01:00:00.1Z | VERSION |\n\
             \n## Pending cells\n\n- kernel=xen: 1 trials so far, fewer than the repetitions ask\n\n\
             ## How to reproduce\n\n- kernel: 2006-11-23 18:25:53 UTC\n\
             Written by margin VERSION on 2026-11-30 01:00:00 UTC.\n"
        .replace("VERSION", VERSION);
    assert_eq!(normalise_markdown(&a), normalise_markdown(&b));
    // a trial's own time, a host name, a number: never redacted
    for (from, to) in [("18:25:53", "18:25:54"), ("| u0 |", "| u1 |"), ("kernel=xen:", "kernel=bare:")] {
        assert_ne!(normalise_markdown(&a), normalise_markdown(&a.replace(from, to)), "{from}");
    }
}
