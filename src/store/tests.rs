//! The store's tests: here the records and stores they are made of; beside it, in
//! `tests/`: [`log`] (records appended and read back, torn lines, the lock), [`room`]
//! (the zeros laid ahead of the records while a run writes), [`column_cache`] (the
//! columns read from the log and kept beside it), [`cell_standing`] (where the cells
//! stand, read and kept).

mod cell_standing;
mod column_cache;
mod log;
mod room;

use std::io::Write;
use std::os::unix::fs::FileExt;

use indexmap::IndexMap;

use super::*;

fn trial(n: u32) -> TrialRecord {
    let levels = IndexMap::from([("bs".to_string(), "1k".to_string())]);
    TrialRecord {
        repetition: n,
        round: n,
        started_at: Some("2026-11-29T00:00:00Z".into()),
        exit_code: Some(0),
        metrics: IndexMap::from([("wall_time".to_string(), 0.5)]),
        wall_time: 0.5,
        ..TrialRecord::new(
            format!("t{n}"),
            "00000000000000aa".into(),
            levels,
            "local".into(),
            "s".into(),
            Status::Ok,
        )
    }
}

fn line(n: u32) -> String {
    serde_json::to_string(&trial(n)).unwrap() + "\n"
}

/// Three records as a reader may see them while the second is written: its head still
/// the zeros laid ahead, its tail and the third there; and where the zeros end.
fn second_record_half_seen() -> (Vec<u8>, usize) {
    let mut bytes = line(1).into_bytes();
    let half = line(2).len() / 2;
    bytes.resize(bytes.len() + half, 0);
    bytes.extend_from_slice(&line(2).as_bytes()[half..]);
    bytes.extend_from_slice(line(3).as_bytes());
    (bytes, half)
}

/// Records that fill every column: failures with their errors, parser warnings, unknown
/// start times, telemetry, flags, metric annotations, several cells, hosts and sessions.
fn varied(n: u32) -> TrialRecord {
    let mut r = trial(n);
    r.round = n / 3 + 1;
    r.trial = format!("0193-{n:08}");
    r.cell = format!("{:016x}", n % 7);
    r.host = ["local", "dom0", "dom\"u\\"][n as usize % 3].into();
    r.session = format!("s{}", n / 100);
    r.metrics.insert(format!("m{}", n % 3), f64::from(n) / 7.0);
    r.metric_info.insert(
        format!("m{}", n % 3),
        MetricInfo { unit: "B/s".into(), better: vocab::Better::Higher, mean: vocab::MeanKind::Harmonic },
    );
    if n.is_multiple_of(11) {
        r.status = [Status::Failed, Status::Timeout, Status::ParseError][n as usize % 3];
        r.exit_code = (n.is_multiple_of(2)).then_some(-9);
        r.error = Some(format!("exit code 1: \"no\" {n}"));
    }
    if n.is_multiple_of(13) {
        r.warnings = vec!["the output holds 2 results".into()];
        r.status = Status::Imported;
    }
    if n.is_multiple_of(17) {
        r.started_at = None;
    }
    if n.is_multiple_of(5) {
        r.telemetry = Some(Telemetry {
            sources: vec!["cpu".into(), "disks".into()],
            // lists of names that differ from trial to trial, in order and length
            metrics: match n % 3 {
                0 => IndexMap::from([("cpu_steal_pct".to_string(), f64::from(n % 4))]),
                1 => IndexMap::from([
                    ("cpu_steal_pct".to_string(), f64::from(n % 4)),
                    (format!("disk_written_bytes:vd{}", n % 2), f64::from(n)),
                ]),
                _ => IndexMap::from([
                    ("disk_written_bytes:vda".to_string(), f64::from(n)),
                    ("cpu_steal_pct".to_string(), 0.5),
                ]),
            },
            raw: Some("raw/s.telemetry".into()),
            offset: Some(u64::from(n)),
        });
    }
    if n.is_multiple_of(19) {
        r.flags = vec!["not_converged".into()];
        r.warmup = true;
    }
    r
}

fn lines_of(records: &[TrialRecord]) -> String {
    records.iter().map(|r| serde_json::to_string(r).unwrap() + "\n").collect()
}

/// The log read from its text alone: a copy in a folder of its own, where no columns are.
fn from_text(store: &Store) -> (Trials, Vec<String>) {
    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join("runs.ndjson");
    std::fs::copy(store.runs_path(), &copy).unwrap();
    let mut warnings = Vec::new();
    let trials = read_trials(&copy, false, &mut warnings, u64::MAX, Needed::All).unwrap();
    let named = warnings
        .iter()
        .map(|w| w.replace(&copy.display().to_string(), &store.runs_path().display().to_string()));
    (trials, named.collect())
}

/// A read that keeps the columns whenever it parsed a line they did not cover.
fn read_keeping(store: &Store, writing: bool) -> (Trials, Vec<String>) {
    let mut warnings = Vec::new();
    let trials = read_trials(&store.runs_path(), writing, &mut warnings, 0, Needed::All).unwrap();
    (trials, warnings)
}

/// A store in a folder of its own whose log holds `records`, its columns kept of them all.
fn kept_store(records: &[TrialRecord]) -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::new(dir.path(), "e");
    store.create().unwrap();
    std::fs::write(store.runs_path(), lines_of(records)).unwrap();
    read_keeping(&store, false);
    (dir, store)
}

/// What the columns beside the log cover: its bytes and lines.
fn covered(store: &Store) -> Option<(u64, usize)> {
    covered_as(store, Needed::All)
}

/// [`covered`], reading only the columns `needed`.
fn covered_as(store: &Store, needed: Needed) -> Option<(u64, usize)> {
    let log = File::open(store.runs_path()).unwrap();
    let meta = log.metadata().unwrap();
    let path = columns::path_for(&store.runs_path());
    columns::read(&path, &log, &meta, |_| needed).map(|c| (c.end, c.lines))
}

/// The files of the columns' folder, by name.
fn folder(dir: &std::path::Path) -> Vec<(String, Vec<u8>)> {
    columns::files_in(dir)
        .into_iter()
        .map(|p| (p.strip_prefix(dir).unwrap().to_string_lossy().into_owned(), std::fs::read(&p).unwrap()))
        .collect()
}

/// A plan of seven cells, and records of them (and of a cell it no longer has).
fn standing_case() -> (crate::plan::Plan, Vec<TrialRecord>) {
    let exp = crate::spec::load_str(
        std::path::Path::new("experiments/standing.yaml"),
        "matrix: { n: [0, 1, 2, 3, 4, 5, 6] }\nrun: \"true\"\nrepetitions: 5\n",
    )
    .unwrap();
    let plan = crate::plan::expand(&exp, 100).unwrap();
    let records: Vec<TrialRecord> = (1..=600)
        .map(|n| {
            let mut r = varied(n);
            if n % 50 != 0 {
                r.cell = plan.cells[n as usize % 7].id.to_string();
            }
            r
        })
        .collect();
    (plan, records)
}
