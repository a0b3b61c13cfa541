//! An I/O error (EIO) at each write and sync call of a run, one per run, through a
//! preloaded shim (`eio.c`, built here with the system's C compiler), SQLite's discipline:
//! every error is reported (exit 2, naming the file) or recovered with the data intact —
//! never swallowed — and the same command then completes the store.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use super::{Margin, Tally, duplicates, folder, lost, ok_per_cell, records, store};

pub(crate) struct Config {
    /// At most this many calls are failed, spread over the run's calls.
    pub(crate) points: usize,
}

const CELLS: usize = 2;
const REPETITIONS: usize = 3;

const EXPERIMENT: &str = "matrix:\n  n: [1, 2]\n\
    setup: echo ready > {{ workdir }}/setup\n\
    run: echo value={{ n }}; echo to stderr >&2\n\
    metrics:\n  value: { regex: 'value=(\\d+)', better: higher }\n\
    repetitions: 3\n";

const LIMIT: Duration = Duration::from_secs(120);

pub(crate) fn campaign(margin: &Margin, root: &Path, cfg: &Config) -> Tally {
    let shim = root.join("eio.so");
    let source = Path::new(file!()).with_file_name("eio.c");
    let source =
        if source.is_absolute() { source } else { Path::new(env!("CARGO_MANIFEST_DIR")).join(source) };
    let built = Command::new("cc")
        .args(["-shared", "-fPIC", "-O2", "-o"])
        .arg(&shim)
        .arg(&source)
        .arg("-ldl")
        .status()
        .is_ok_and(|s| s.success());
    if !built {
        return Tally {
            line: "I/O errors: not tried (no C compiler to build the shim)".into(),
            failures: Vec::new(),
        };
    }
    let run = |dir: &Path, at: Option<usize>| {
        let mut cmd = margin.command(dir, &["run", "exp.yaml"]);
        cmd.env("LD_PRELOAD", &shim).env("MARGIN_EIO_COUNT", dir.join("calls"));
        if let Some(at) = at {
            cmd.env("MARGIN_EIO_AT", at.to_string());
        }
        margin.wait(cmd, LIMIT)
    };
    let mut failures = Vec::new();
    let scratch = folder(root, "eio-count", EXPERIMENT);
    let _ = run(&scratch, None);
    let calls: usize =
        std::fs::read_to_string(scratch.join("calls")).ok().and_then(|c| c.trim().parse().ok()).unwrap_or(0);
    if calls == 0 {
        return Tally {
            line: "I/O errors: not tried (the shim counted no call)".into(),
            failures: Vec::new(),
        };
    }
    let points: Vec<usize> = if calls <= cfg.points {
        (1..=calls).collect()
    } else {
        (0..cfg.points).map(|i| 1 + i * calls / cfg.points).collect()
    };
    let (mut reported, mut recovered, mut panics, mut resumed, mut lost_n, mut dup_n) = (0, 0, 0, 0, 0, 0);
    for &at in &points {
        let dir = folder(root, &format!("eio-{at}"), EXPERIMENT);
        let store = store(&dir, "exp");
        let Some(out) = run(&dir, Some(at)) else {
            failures.push(format!("EIO at call {at}: the run hung"));
            continue;
        };
        let said = super::said(&out);
        if super::panicked(&out) {
            panics += 1;
            failures.push(format!("EIO at call {at}: a panic: {said}"));
        }
        let (before, _) = records(&store);
        match out.status.code() {
            Some(2) if said.contains("Input/output error") && said.contains('/') => reported += 1,
            Some(0) if complete(&before) && every_session_ended(&store) => recovered += 1,
            Some(0) => failures.push(format!(
                "EIO at call {at} was swallowed: exit 0, but the store is {}",
                if complete(&before) { "missing a session's end" } else { "incomplete" }
            )),
            code => {
                failures.push(format!("EIO at call {at}: exit {code:?}, expected 2 naming the file: {said}"))
            }
        }
        let Some(again) = margin.output(&dir, &["run", "exp.yaml"], LIMIT) else {
            failures.push(format!("EIO at call {at}: the resumed run hung"));
            continue;
        };
        let (after, _) = records(&store);
        let (gone, doubled) = (lost(&before, &after), duplicates(&after));
        lost_n += gone;
        dup_n += doubled;
        if again.status.success() && complete(&after) && gone + doubled == 0 {
            resumed += 1;
        } else {
            failures.push(format!(
                "EIO at call {at}, resumed: exit {:?}, ok per cell {:?}, {gone} lost, {doubled} duplicated: {}",
                again.status.code(),
                ok_per_cell(&after),
                super::said(&again)
            ));
        }
    }
    let line = format!(
        "I/O error (EIO) at {} of the {calls} write and sync calls of a run ({CELLS} cells × {REPETITIONS} trials with \
         a hook), one per run: {reported} reported (exit 2, naming the file), {recovered} recovered with the data \
         intact, {} swallowed or unclear, {panics} panics; {resumed} of {} stores resumed to completion, {lost_n} trials \
         lost, {dup_n} duplicated",
        points.len(),
        points.len() - reported - recovered,
        points.len()
    );
    Tally { line, failures }
}

fn complete(records: &[serde_json::Value]) -> bool {
    let per_cell = ok_per_cell(records);
    per_cell.len() == CELLS && per_cell.values().all(|&n| n == REPETITIONS)
}

/// Whether every session that started in the store also ended.
fn every_session_ended(store: &Path) -> bool {
    let text = std::fs::read_to_string(store.join("sessions.ndjson")).unwrap_or_default();
    let events: Vec<serde_json::Value> = text.lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
    let ended = |id: &serde_json::Value| events.iter().any(|e| e["event"] == "end" && &e["session"] == id);
    events.iter().filter(|e| e["event"] == "start").all(|e| ended(&e["session"]))
}
