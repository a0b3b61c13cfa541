use std::io::Write;

use indexmap::IndexMap;

use super::*;

fn trial(n: u32) -> TrialRecord {
    TrialRecord {
        schema: SCHEMA,
        trial: format!("t{n}"),
        cell: "00000000000000aa".into(),
        levels: IndexMap::from([("bs".to_string(), "1k".to_string())]),
        repetition: n,
        warmup: false,
        host: "local".into(),
        session: "s".into(),
        round: n,
        position: 1,
        started_at: Some("2026-11-29T00:00:00Z".into()),
        status: Status::Ok,
        exit_code: Some(0),
        metrics: IndexMap::from([("wall_time".to_string(), 0.5)]),
        metric_info: IndexMap::new(),
        wall_time: 0.5,
        raw: None,
        error: None,
        warnings: vec![],
        source: None,
        source_hash: None,
        telemetry: None,
        flags: Vec::new(),
    }
}

#[test]
fn appended_records_load_back() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::new(dir.path(), "e");
    store.create().unwrap();
    let mut log = store.trial_appender().unwrap();
    for n in 1..=3 {
        log.append(&trial(n)).unwrap();
    }
    let (records, warnings) = store.records().unwrap();
    assert_eq!(records, vec![trial(1), trial(2), trial(3)]);
    assert!(warnings.is_empty());
    let snapshot = store.load().unwrap();
    assert_eq!(snapshot.trials, Trials::from_records(&records));
    assert!(snapshot.warnings.is_empty());
}

#[test]
fn a_torn_line_is_skipped_kept_and_appending_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::new(dir.path(), "e");
    store.create().unwrap();
    store.trial_appender().unwrap().append(&trial(1)).unwrap();
    // a power cut in the middle of the second record
    let full = serde_json::to_string(&trial(2)).unwrap();
    let mut f = OpenOptions::new().append(true).open(store.runs_path()).unwrap();
    f.write_all(&full.as_bytes()[..full.len() / 2]).unwrap();
    drop(f);
    let snapshot = store.load().unwrap();
    assert_eq!(snapshot.trials, Trials::from_records(&[trial(1)]));
    assert_eq!(snapshot.warnings.len(), 1);
    assert!(snapshot.warnings[0].contains("runs.ndjson:2: skipped a record"), "{:?}", snapshot.warnings);
    let (records, warnings) = store.records().unwrap();
    assert_eq!(records, vec![trial(1)]);
    assert_eq!(warnings, snapshot.warnings);
    // the next run appends on a fresh line; the torn bytes stay in the file
    store.trial_appender().unwrap().append(&trial(3)).unwrap();
    let snapshot = store.load().unwrap();
    assert_eq!(snapshot.trials, Trials::from_records(&[trial(1), trial(3)]));
    assert_eq!(snapshot.warnings.len(), 1);
    let text = std::fs::read_to_string(store.runs_path()).unwrap();
    assert!(text.contains(&full[..full.len() / 2]));
}

#[test]
fn a_second_lock_names_the_holder() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::new(dir.path(), "e");
    let held = store.lock("import").unwrap();
    match store.lock("run") {
        Err(e @ StoreError::Locked { .. }) => {
            let pid = std::process::id();
            assert!(
                e.to_string().contains(&format!("another `margin import` (pid {pid}) is writing")),
                "{e}"
            );
        }
        other => panic!("expected Locked, got {other:?}"),
    }
    drop(held);
    store.lock("run").unwrap();
}

#[test]
fn fresh_moves_the_logs_aside_and_deletes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::new(dir.path(), "e");
    store.create().unwrap();
    store.trial_appender().unwrap().append(&trial(1)).unwrap();
    let moved = store.move_aside().unwrap();
    assert_eq!(moved.len(), 1);
    assert!(!store.runs_path().exists());
    let kept = std::fs::read_to_string(&moved[0]).unwrap();
    assert_eq!(serde_json::from_str::<TrialRecord>(kept.trim()).unwrap(), trial(1));
    assert!(store.load().unwrap().trials.is_empty());
}

/// Records of many cells, hosts and sessions, with escapes, failures and warnings: the
/// columns read from the log (in parallel chunks, names merged) hold what the records do.
#[test]
fn the_columns_read_from_the_log_match_the_records() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::new(dir.path(), "e");
    store.create().unwrap();
    let mut records = Vec::new();
    for n in 1..=2000u32 {
        let mut r = trial(n);
        r.cell = format!("{:016x}", n % 37);
        r.host = ["local", "dom0", "dom\"u\\"][n as usize % 3].into();
        r.session = format!("s{}", n / 300);
        r.metrics.insert(format!("m{}", n % 5), f64::from(n) / 7.0);
        r.metric_info.insert(
            "wall_time".into(),
            MetricInfo { unit: "s".into(), better: crate::vocab::Better::Lower, mean: Default::default() },
        );
        if n % 11 == 0 {
            r.status = Status::Failed;
            r.exit_code = Some(1);
            r.error = Some(format!("exit code 1: \"no\" {n}"));
        }
        if n % 13 == 0 {
            r.warnings = vec!["the output holds 2 results".into()];
        }
        if n % 17 == 0 {
            r.started_at = None;
        }
        records.push(r);
    }
    let mut log = store.trial_appender().unwrap();
    for r in &records {
        log.append(r).unwrap();
    }
    let trials = store.load().unwrap().trials;
    let expected = Trials::from_records(&records);
    // field by field: a failure names the column rather than printing a million values
    assert_eq!(trials.names, expected.names);
    assert_eq!(trials.cell, expected.cell);
    assert_eq!(trials.host, expected.host);
    assert_eq!(trials.session, expected.session);
    assert_eq!(trials.status, expected.status);
    assert_eq!(trials.started, expected.started);
    assert_eq!(trials.metric, expected.metric);
    assert_eq!(trials.value, expected.value);
    assert_eq!(trials.unit, expected.unit);
    assert_eq!(trials.metrics, expected.metrics);
    assert_eq!(trials.failed, expected.failed);
    assert_eq!(trials.warnings, expected.warnings);
    assert!(trials == expected, "the other columns differ");
    assert_eq!(trials.len(), 2000);
    assert_eq!(trials.id(1999), "t2000");
    assert_eq!(trials.names.get(trials.host[1]), "dom\"u\\");
    assert_eq!(trials.failed.len(), 2000 / 11);
    assert_eq!(trials.failed[0].error.as_deref(), Some("exit code 1: \"no\" 11"));
    assert_eq!(trials.warnings["the output holds 2 results"], 2000 / 13);
    assert_eq!(trials.started[16], None);
    assert_eq!(trials.started[0], Some(1_795_910_400_000_000));
    let rows = trials.rows(3);
    assert_eq!(rows.len(), 2);
    assert_eq!(trials.names.get(trials.metric[rows.start + 1]), "m4");
    assert_eq!(trials.value[rows.start + 1], 4.0 / 7.0);
    assert_eq!(trials.names.get(trials.unit[rows.start]), "s");
    assert_eq!(trials.names.get(trials.unit[rows.start + 1]), "");
}

fn line(n: u32) -> String {
    serde_json::to_string(&trial(n)).unwrap() + "\n"
}

/// While a run writes the log, the file ends in zeros laid ahead of the records: a reader
/// (`margin status` during the run) sees the records and nothing else, and closing the
/// log gives the zeros back.
#[test]
fn the_room_laid_ahead_is_read_past_and_given_back() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::new(dir.path(), "e");
    store.create().unwrap();
    let mut log = store.trial_appender().unwrap();
    log.append(&trial(1)).unwrap();
    log.append(&trial(2)).unwrap();
    let text = line(1) + &line(2);
    let on_disk = std::fs::read(store.runs_path()).unwrap();
    // laid at the first record, for it and the least room after it
    assert_eq!(on_disk.len() as u64, line(1).len() as u64 + (64 << 10));
    assert_eq!(&on_disk[..text.len()], text.as_bytes());
    assert!(on_disk[text.len()..].iter().all(|b| *b == 0));
    let snapshot = store.load().unwrap();
    assert_eq!(snapshot.trials, Trials::from_records(&[trial(1), trial(2)]));
    assert!(snapshot.warnings.is_empty(), "{:?}", snapshot.warnings);
    assert_eq!(store.records().unwrap(), (vec![trial(1), trial(2)], vec![]));
    drop(log);
    assert_eq!(std::fs::read_to_string(store.runs_path()).unwrap(), text);
}

/// A run killed with the room still laid: the zeros stay until the next run writes over
/// them; no warning, nothing lost, the file ends with the last record once closed.
#[test]
fn a_killed_runs_zeros_are_written_over() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::new(dir.path(), "e");
    store.create().unwrap();
    let mut bytes = line(1).into_bytes();
    bytes.resize(bytes.len() + 70_000, 0);
    std::fs::write(store.runs_path(), &bytes).unwrap();
    let snapshot = store.load().unwrap();
    assert_eq!(snapshot.trials, Trials::from_records(&[trial(1)]));
    assert!(snapshot.warnings.is_empty(), "{:?}", snapshot.warnings);
    let mut log = store.trial_appender().unwrap();
    log.append(&trial(2)).unwrap();
    drop(log);
    assert_eq!(std::fs::read_to_string(store.runs_path()).unwrap(), line(1) + &line(2));
    // a log that is nothing but room: no records, no warning
    std::fs::write(store.runs_path(), vec![0u8; 5000]).unwrap();
    let snapshot = store.load().unwrap();
    assert!(snapshot.trials.is_empty() && snapshot.warnings.is_empty());
    store.trial_appender().unwrap().append(&trial(3)).unwrap();
    assert_eq!(std::fs::read_to_string(store.runs_path()).unwrap(), line(3));
}

/// A record torn by a power cut, with zeros after it: skipped with a warning naming its
/// line, kept, and the next record starts on a line of its own.
#[test]
fn a_torn_record_before_the_zeros_is_skipped_and_kept() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::new(dir.path(), "e");
    store.create().unwrap();
    let half = &line(2)[..200];
    let mut bytes = (line(1) + half).into_bytes();
    bytes.resize(bytes.len() + 4096, 0);
    std::fs::write(store.runs_path(), &bytes).unwrap();
    let snapshot = store.load().unwrap();
    assert_eq!(snapshot.trials, Trials::from_records(&[trial(1)]));
    assert_eq!(snapshot.warnings.len(), 1);
    assert!(snapshot.warnings[0].contains("runs.ndjson:2: skipped a record"), "{:?}", snapshot.warnings);
    store.trial_appender().unwrap().append(&trial(3)).unwrap();
    assert_eq!(std::fs::read_to_string(store.runs_path()).unwrap(), line(1) + half + "\n" + &line(3));
    let snapshot = store.load().unwrap();
    assert_eq!(snapshot.trials, Trials::from_records(&[trial(1), trial(3)]));
    assert_eq!(snapshot.warnings.len(), 1);
}

/// Room is laid again each time it runs out, however long the records.
#[test]
fn room_is_laid_again_as_it_runs_out() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::new(dir.path(), "e");
    store.create().unwrap();
    let mut log = Appender::open(&store.runs_path(), 1000).unwrap();
    let mut records = Vec::new();
    let mut text = String::new();
    for n in 1..=40 {
        let mut r = trial(n);
        r.warnings = vec!["w".repeat(n as usize * 50)]; // up to 2 000 bytes, twice the room
        log.append(&r).unwrap();
        text += &(serde_json::to_string(&r).unwrap() + "\n");
        records.push(r);
        assert_eq!(log.end, text.len() as u64);
        assert!(log.len >= log.end && log.len <= log.end + 1000, "{} {}", log.len, log.end);
        assert_eq!(std::fs::metadata(store.runs_path()).unwrap().len(), log.len);
    }
    assert_eq!(store.records().unwrap(), (records, vec![]));
    drop(log);
    assert_eq!(std::fs::read_to_string(store.runs_path()).unwrap(), text);
}

/// The room laid is as large as the log already is, from 64 KiB up to the most allowed.
#[test]
fn the_room_grows_with_the_log() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::new(dir.path(), "e");
    store.create().unwrap();
    let mut log = Appender::open(&store.runs_path(), 256 << 10).unwrap();
    let mut lays = Vec::new();
    for n in 1..=1000 {
        let (end, len) = (log.end, log.len);
        log.append(&trial(n)).unwrap();
        if log.len != len {
            lays.push(log.len - log.end);
            assert_eq!(log.len - log.end, end.clamp(64 << 10, 256 << 10), "after {end} bytes");
        }
    }
    assert_eq!((lays.len(), lays[0], lays[lays.len() - 1]), (4, 64 << 10, 256 << 10), "{lays:?}");
}

/// A device or a pipe where a log should be: an error naming it, at once — not a read
/// that never ends (/dev/zero) or an open that waits for a writer (a FIFO).
#[test]
fn a_log_that_is_not_a_plain_file_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::new(dir.path(), "e");
    store.create().unwrap();
    std::os::unix::fs::symlink("/dev/zero", store.runs_path()).unwrap();
    nix::unistd::mkfifo(&store.sessions_path(), nix::sys::stat::Mode::S_IRWXU).unwrap();
    for err in [
        store.load().unwrap_err(),
        store.trial_appender().unwrap_err(),
        store.session_appender().unwrap_err(),
    ] {
        assert!(matches!(err, StoreError::NotAFile { .. }), "{err:?}");
        assert!(err.to_string().contains("not a regular file"), "{err}");
    }
    std::fs::remove_file(store.runs_path()).unwrap();
    assert!(
        matches!(store.load().unwrap_err(), StoreError::NotAFile { path } if path == store.sessions_path())
    );
}

/// What `margin status` may read while a run writes: the head of the record being
/// written still zeros, its tail and the next record already there. That record is left
/// for the next read, with no warning; the others load.
#[test]
fn a_record_half_seen_while_being_written_is_read_next_time() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::new(dir.path(), "e");
    store.create().unwrap();
    let mut bytes = line(1).into_bytes();
    let half = line(2).len() / 2;
    bytes.resize(bytes.len() + half, 0);
    bytes.extend_from_slice(&line(2).as_bytes()[half..]);
    bytes.extend_from_slice(line(3).as_bytes());
    bytes.resize(bytes.len() + 4096, 0);
    std::fs::write(store.runs_path(), &bytes).unwrap();
    // as read while a run writes it
    let snapshot = store.load_as(true).unwrap();
    assert_eq!(snapshot.trials, Trials::from_records(&[trial(1), trial(3)]));
    assert!(snapshot.warnings.is_empty(), "{:?}", snapshot.warnings);
    // with no run writing, the same line is a record torn by a crash: said
    let snapshot = store.load().unwrap();
    assert_eq!(snapshot.trials, Trials::from_records(&[trial(1), trial(3)]));
    assert_eq!(snapshot.warnings.len(), 1, "{:?}", snapshot.warnings);
    assert!(snapshot.warnings[0].contains("runs.ndjson:2: skipped a record"), "{:?}", snapshot.warnings);
}
