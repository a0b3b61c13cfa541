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
        if n.is_multiple_of(11) {
            r.status = Status::Failed;
            r.exit_code = Some(1);
            r.error = Some(format!("exit code 1: \"no\" {n}"));
        }
        if n.is_multiple_of(13) {
            r.warnings = vec!["the output holds 2 results".into()];
        }
        if n.is_multiple_of(17) {
            r.started_at = None;
        }
        // telemetry on some, its lists of names differing
        r.telemetry = varied(n).telemetry;
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
    assert_eq!(trials.secondary, expected.secondary);
    assert!(trials == expected, "the other columns differ");
    assert_eq!(trials.len(), 2000);
    assert_eq!(trials.id(1999), "t2000");
    assert_eq!(trials.names.get(trials.host[1]), "dom\"u\\");
    assert_eq!(trials.failed.len(), 2000 / 11);
    assert_eq!(trials.failed[0].error.as_deref(), Some("exit code 1: \"no\" 11"));
    assert_eq!(trials.warnings["the output holds 2 results"], 2000 / 13);
    assert_eq!(trials.started[16].get(), None);
    assert_eq!(trials.started[0].get(), Some(1_795_910_400_000_000));
    let rows = trials.rows(3);
    assert_eq!(rows.len(), 2);
    assert_eq!(trials.names.get(trials.metric[rows.start + 1]), "m4");
    assert_eq!(trials.value[rows.start + 1], 4.0 / 7.0);
    assert_eq!(trials.names.get(trials.unit[rows.start]), "s");
    assert_eq!(trials.names.get(trials.unit[rows.start + 1]), "");
}

/// A line is read as text once it is UTF-8 as a whole: the same table as the records give,
/// names and errors beyond ASCII included; a line that is not UTF-8 is refused with what
/// serde_json says of its bytes, where the bad byte is.
#[test]
fn a_line_read_as_text_is_the_record_and_a_line_not_text_is_refused() {
    let mut wide = trial(1);
    wide.levels.insert("größe".into(), "四 KiB \"quoted\" \u{1F600}".into());
    wide.metrics.insert("débit_µs".into(), 2.5);
    wide.status = Status::Failed;
    wide.error = Some("exit code 1: «non» \\ \n".into());
    let mut trials = Trials::default();
    for record in [&trial(0), &wide] {
        trials.push_json(serde_json::to_string(record).unwrap().as_bytes()).unwrap();
    }
    assert_eq!(trials, Trials::from_records(&[trial(0), wide.clone()]));
    // a byte that is no UTF-8 inside the error's text
    let mut bad = serde_json::to_string(&wide).unwrap().into_bytes();
    let at = bad.windows(2).position(|w| w == "«".as_bytes()).unwrap();
    bad[at + 1] = 0xff;
    let said = Trials::default().push_json(&bad).unwrap_err().to_string();
    let bytes = serde_json::from_slice::<serde_json::Value>(&bad).unwrap_err().to_string();
    assert_eq!(said, bytes);
    assert!(said.contains("column"), "{said}");
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

/// What `margin status` may read while a run writes: the head of the record being
/// written still zeros, its tail and the next record already there. Both are left for
/// the next read, with no warning (a read is the table of a prefix of the records); the
/// one before loads.
#[test]
fn a_record_half_seen_while_being_written_is_read_next_time() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::new(dir.path(), "e");
    store.create().unwrap();
    let (mut bytes, _) = second_record_half_seen();
    bytes.resize(bytes.len() + 4096, 0);
    std::fs::write(store.runs_path(), &bytes).unwrap();
    // as read while a run writes it
    let snapshot = store.load_as(true, Needed::All).unwrap();
    assert_eq!(snapshot.trials, Trials::from_records(&[trial(1)]));
    assert!(snapshot.warnings.is_empty(), "{:?}", snapshot.warnings);
    // with no run writing, the same line is a record torn by a crash: said
    let snapshot = store.load().unwrap();
    assert_eq!(snapshot.trials, Trials::from_records(&[trial(1), trial(3)]));
    assert_eq!(snapshot.warnings.len(), 1, "{:?}", snapshot.warnings);
    assert!(snapshot.warnings[0].contains("runs.ndjson:2: skipped a record"), "{:?}", snapshot.warnings);
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
        MetricInfo {
            unit: "B/s".into(),
            better: crate::vocab::Better::Higher,
            mean: crate::vocab::MeanKind::Harmonic,
        },
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

#[test]
fn the_columns_kept_beside_the_log_read_as_the_log_does() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::new(dir.path(), "e");
    store.create().unwrap();
    let records: Vec<TrialRecord> = (1..=300).map(varied).collect();
    // a record torn by a crash in the middle of the log, and a blank line
    let mut text = lines_of(&records[..100]);
    text.push_str("{\"schema\":1,\"trial\":\"torn\n\n");
    text.push_str(&lines_of(&records[100..]));
    std::fs::write(store.runs_path(), &text).unwrap();
    let expected = from_text(&store);
    assert_eq!(expected.0, Trials::from_records(&records));
    assert_eq!(expected.1.len(), 1, "{:?}", expected.1);
    assert!(expected.1[0].contains("runs.ndjson:101: skipped"), "{:?}", expected.1);

    assert_eq!(covered(&store), None);
    assert_eq!(read_keeping(&store, false), expected);
    assert_eq!(covered(&store), Some((text.len() as u64, 302)));
    // read from the columns alone now: the same table, the same warning
    assert_eq!(read_keeping(&store, false), expected);
    let mut warnings = Vec::new();
    let from_columns = read_trials(&store.runs_path(), false, &mut warnings, u64::MAX, Needed::All).unwrap();
    assert_eq!((from_columns, warnings), expected);
}

#[test]
fn after_appends_the_columns_cover_the_new_records_and_a_torn_last_line_waits() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::new(dir.path(), "e");
    store.create().unwrap();
    let records: Vec<TrialRecord> = (1..=120).map(varied).collect();
    std::fs::write(store.runs_path(), lines_of(&records[..50])).unwrap();
    read_keeping(&store, false);
    // a run appends over the zeros it lays ahead, and is killed in the middle of a record
    let mut log = store.trial_appender().unwrap();
    for r in &records[50..100] {
        log.append(r).unwrap();
    }
    std::mem::forget(log);
    let half = serde_json::to_string(&records[100]).unwrap();
    let end = std::fs::read(store.runs_path()).unwrap().iter().rposition(|b| *b != 0).unwrap() + 1;
    let file = OpenOptions::new().write(true).open(store.runs_path()).unwrap();
    file.write_all_at(&half.as_bytes()[..half.len() / 2], end as u64).unwrap();
    drop(file);
    let expected = from_text(&store);
    assert_eq!(expected.0, Trials::from_records(&records[..100]));
    assert_eq!(expected.1.len(), 1, "{:?}", expected.1);
    assert_eq!(read_keeping(&store, false), expected);
    // the columns stop before the torn line: the next run's newline and records follow it
    assert_eq!(covered(&store), Some((end as u64, 100)));
    let mut log = store.trial_appender().unwrap();
    for r in &records[101..] {
        log.append(r).unwrap();
    }
    drop(log);
    let expected = from_text(&store);
    let mut kept: Vec<TrialRecord> = records[..100].to_vec();
    kept.extend_from_slice(&records[101..]);
    assert_eq!(expected.0, Trials::from_records(&kept));
    assert!(expected.1[0].contains("runs.ndjson:101: skipped"), "{:?}", expected.1);
    assert_eq!(read_keeping(&store, false), expected);
    assert_eq!(covered(&store), Some((std::fs::metadata(store.runs_path()).unwrap().len(), 120)));
    assert_eq!(read_keeping(&store, false), expected);
}

/// The files of the columns' folder, by name.
fn folder(dir: &std::path::Path) -> Vec<(String, Vec<u8>)> {
    columns::files_in(dir)
        .into_iter()
        .map(|p| (p.strip_prefix(dir).unwrap().to_string_lossy().into_owned(), std::fs::read(&p).unwrap()))
        .collect()
}

#[test]
fn damaged_or_stale_columns_are_ignored_and_written_anew() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::new(dir.path(), "e");
    store.create().unwrap();
    let records: Vec<TrialRecord> = (1..=200).map(varied).collect();
    std::fs::write(store.runs_path(), lines_of(&records)).unwrap();
    let expected = from_text(&store);
    read_keeping(&store, false);
    let columns = columns::path_for(&store.runs_path());
    let good = folder(&columns);
    let kinds: Vec<&str> = good.iter().map(|(name, _)| name.split('/').next().unwrap()).collect();
    assert_eq!(
        kinds,
        ["_manifest.json", "ids", "metrics", "telemetry", "trials"],
        "{:?}",
        good.iter().map(|f| &f.0).collect::<Vec<_>>()
    );
    assert!(good.iter().all(|(_, bytes)| bytes.len() > 100), "a file of the fixture is nearly empty");
    // a byte flipped in any file — its first, middle or last, by the lowest bit — or the
    // file cut short, or one byte more: ignored, rebuilt as it was. A progress does not
    // read the secondary metrics (`telemetry/`) nor the ids (`ids/`), and a report not
    // the ids: a flip there goes unseen by them.
    for (name, bytes) in &good {
        let path = columns.join(name);
        let len = bytes.len();
        let flips = [0, len / 2, len - 1].map(|at| {
            let mut bad = bytes.clone();
            bad[at] ^= 0x01;
            (format!("flipped at {at}"), bad)
        });
        let cuts = [
            ("cut in half".to_owned(), bytes[..len / 2].to_vec()),
            ("empty".to_owned(), Vec::new()),
            ("a byte more".to_owned(), [bytes.clone(), vec![0]].concat()),
        ];
        for (what, bad) in flips.into_iter().chain(cuts) {
            std::fs::write(&path, &bad).unwrap();
            let ids = name.starts_with("ids/");
            let unseen = name.starts_with("telemetry/") || ids;
            assert_eq!(covered_as(&store, Needed::Progress).is_some(), unseen, "{name} {what}");
            assert_eq!(covered_as(&store, Needed::Report).is_some(), ids, "{name} {what}");
            assert_eq!(covered(&store), None, "{name} {what}");
            assert_eq!(read_keeping(&store, false), expected, "{name} {what}");
            assert_eq!(folder(&columns), good, "rebuilt after {name} {what}");
        }
    }
    // a manifest no writer makes, under a hash made for it: refused by the checks of what
    // it says, never a panic
    type Craft = fn(&mut serde_json::Value);
    let crafted: [(&str, Craft); 7] = [
        ("a name fewer than the columns use", |m| {
            m["names"].as_array_mut().unwrap().pop();
        }),
        ("a name twice", |m| {
            let first = m["names"][0].clone();
            m["names"].as_array_mut().unwrap().push(first);
        }),
        ("a part with a trial more", |m| m["parts"][0]["trials"] = (200 + 1).into()),
        ("a part with a row fewer", |m| {
            let rows = m["parts"][0]["rows"].as_u64().unwrap();
            m["parts"][0]["rows"] = (rows - 1).into();
        }),
        ("more lines than bytes", |m| m["log"]["lines"] = u64::MAX.into()),
        ("a file outside the folder", |m| {
            m["parts"][0]["files"][0]["name"] = "trials/../../runs.ndjson".into()
        }),
        ("a flag past the names", |m| m["flags"] = serde_json::json!([[0, 1_000_000]])),
    ];
    for (what, craft) in crafted {
        columns::rewrite_manifest(&columns, craft);
        assert_eq!(covered_as(&store, Needed::Progress), None, "{what}, read for a progress");
        assert_eq!(covered(&store), None, "{what}");
        assert_eq!(read_keeping(&store, false), expected, "{what}");
        assert_eq!(folder(&columns), good, "{what}");
    }
    // an older margin's single file where the folder goes: replaced
    std::fs::remove_dir_all(&columns).unwrap();
    std::fs::write(&columns, b"margin-columns04 and more").unwrap();
    assert_eq!(read_keeping(&store, false), expected);
    assert_eq!(folder(&columns), good);
    // the log rewritten (`reparse`: a new file under the old name) with other numbers
    let mut changed = records.clone();
    changed[7].metrics.insert("m9".into(), 1.5);
    changed[7].status = Status::Failed;
    store.rewrite_trials(&changed).unwrap();
    assert_eq!(covered(&store), None);
    let expected = from_text(&store);
    assert_eq!(expected.0, Trials::from_records(&changed));
    assert_eq!(read_keeping(&store, false), expected);
    // the same file overwritten in place with a log as long: its ends differ
    let mut other = records.clone();
    other[0].host = "lacol".into();
    other[199].host = "lacol".into();
    let file = OpenOptions::new().write(true).open(store.runs_path()).unwrap();
    file.write_all_at(lines_of(&other).as_bytes(), 0).unwrap();
    file.set_len(lines_of(&other).len() as u64).unwrap();
    drop(file);
    let expected = from_text(&store);
    assert_eq!(expected.0, Trials::from_records(&other));
    assert_eq!(read_keeping(&store, false), expected);
    // a log cut shorter than the columns cover
    std::fs::write(store.runs_path(), lines_of(&records[..3])).unwrap();
    assert_eq!(read_keeping(&store, false).0, Trials::from_records(&records[..3]));
    // no log: no trials, whatever the columns say
    std::fs::remove_file(store.runs_path()).unwrap();
    assert_eq!(read_keeping(&store, false), (Trials::default(), vec![]));
}

/// Trials appended become a part of their own: the files of the parts before are kept
/// as they were, not written again, and a read of the parts is the log's table; past
/// `MAX_PARTS` parts, they are written again as one.
#[test]
fn appended_trials_become_a_part_and_past_the_most_parts_one() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::new(dir.path(), "e");
    store.create().unwrap();
    let records: Vec<TrialRecord> = (1..=1000).map(varied).collect();
    let columns = columns::path_for(&store.runs_path());
    let parquet = |dir: &std::path::Path| -> Vec<(String, Vec<u8>)> {
        folder(dir).into_iter().filter(|(name, _)| name.ends_with(".parquet")).collect()
    };
    std::fs::write(store.runs_path(), lines_of(&records[..100])).unwrap();
    read_keeping(&store, false);
    let mut before = parquet(&columns);
    assert_eq!(before.len(), 4);
    let mut written = 100;
    for part in 2..=columns::MAX_PARTS + 1 {
        // more than an eighth of what the parts cover: a read keeps them
        let more = written / 4;
        let mut log = store.trial_appender().unwrap();
        for r in &records[written..written + more] {
            log.append(r).unwrap();
        }
        drop(log);
        written += more;
        let expected = from_text(&store);
        assert_eq!(expected.0, Trials::from_records(&records[..written]));
        assert_eq!(read_keeping(&store, false), expected, "{part} parts");
        let after = parquet(&columns);
        if part <= columns::MAX_PARTS {
            assert_eq!(after.len(), 4 * part, "{part} parts");
            assert!(
                before.iter().all(|f| after.contains(f)),
                "a part before was written again ({part} parts)"
            );
        } else {
            // one part again, of every trial
            assert_eq!(after.len(), 4, "written again as one");
            assert!(after[0].0.contains("/part-0000000000-"), "{:?}", after[0].0);
        }
        // read from the parts alone: the same table
        assert_eq!(covered(&store), Some((std::fs::metadata(store.runs_path()).unwrap().len(), written)));
        let mut warnings = Vec::new();
        let read = read_trials(&store.runs_path(), false, &mut warnings, u64::MAX, Needed::All).unwrap();
        assert_eq!((read, warnings), expected);
        before = after;
    }
}

/// While a run writes, a line skipped as it went by (zeros at its head, its tail there)
/// is not covered, nor read past: the next read finds it and the record after it.
#[test]
fn the_columns_stop_at_a_line_being_written() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::new(dir.path(), "e");
    store.create().unwrap();
    let (bytes, half) = second_record_half_seen();
    std::fs::write(store.runs_path(), &bytes).unwrap();
    let (trials, warnings) = read_keeping(&store, true);
    assert_eq!(trials, Trials::from_records(&[trial(1)]));
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!(covered(&store), None);
    // the record written in full: it is read, and the columns cover it
    std::fs::write(store.runs_path(), [line(1), line(2), line(3)].concat()).unwrap();
    assert_eq!(read_keeping(&store, true).0, Trials::from_records(&[trial(1), trial(2), trial(3)]));
    assert_eq!(covered(&store).map(|(_, lines)| lines), Some(3));
    // a record half there at the end: the columns stop before it, and it is read when whole
    let mut bytes = [line(1), line(2), line(3)].concat().into_bytes();
    bytes.extend_from_slice(&line(4).as_bytes()[..half]);
    bytes.resize(bytes.len() + 4096, 0);
    std::fs::write(store.runs_path(), &bytes).unwrap();
    let (trials, warnings) = read_keeping(&store, true);
    assert_eq!(trials, Trials::from_records(&[trial(1), trial(2), trial(3)]));
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert_eq!(covered(&store).map(|(_, lines)| lines), Some(3));
}

/// Readers while a run appends: every table read is the table of the records written
/// so far (a prefix of them), never a record lost, doubled or another.
#[test]
fn readers_during_appends_see_a_prefix_of_the_records() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::new(dir.path(), "e");
    store.create().unwrap();
    let records: Vec<TrialRecord> = (1..=400).map(varied).collect();
    let prefixes: Vec<Trials> = (0..=records.len()).map(|k| Trials::from_records(&records[..k])).collect();
    let done = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|s| {
        s.spawn(|| {
            let mut log = store.trial_appender().unwrap();
            for r in &records {
                log.append(r).unwrap();
            }
            done.store(true, std::sync::atomic::Ordering::SeqCst);
        });
        for _ in 0..2 {
            s.spawn(|| {
                let mut reads = 0;
                while !done.load(std::sync::atomic::Ordering::SeqCst) || reads < 3 {
                    let (trials, _) = read_keeping(&store, true);
                    assert_eq!(trials, prefixes[trials.len()], "read {reads}");
                    reads += 1;
                }
            });
        }
    });
    assert_eq!(read_keeping(&store, false), (prefixes[records.len()].clone(), vec![]));
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

/// Where the cells stand from the columns a cell's progress needs, read alone from
/// `runs.columns`, with the log's lines appended since (a torn one among them), is where
/// they stand from the whole table; when the lines appended are too many, the columns
/// are read whole and kept anew.
#[test]
fn the_progress_columns_alone_give_the_whole_tables_standing() {
    let (plan, records) = standing_case();
    let (_dir, store) = kept_store(&records[..560]);
    let path = store.runs_path();
    assert_eq!(covered(&store).map(|c| c.1), Some(560));
    let read = |progress_only: bool, min_parsed: u64| {
        let mut warnings = Vec::new();
        let trials = read_trials(
            &path,
            false,
            &mut warnings,
            min_parsed,
            if progress_only { Needed::Progress } else { Needed::All },
        )
        .unwrap();
        (Standing::of(&plan, &trials, warnings), trials)
    };
    let mut file = OpenOptions::new().append(true).open(&path).unwrap();
    file.write_all(lines_of(&records[560..]).as_bytes()).unwrap();
    for torn in [false, true] {
        if torn {
            file.write_all(b"{\"trial\": \"torn").unwrap();
        }
        let (whole, all) = read(false, u64::MAX);
        let (alone, some) = read(true, u64::MAX);
        assert_eq!(alone, whole, "torn: {torn}");
        assert!(
            whole.set_aside > 0 && whole.failed > 0 && whole.imported > 0 && whole.last_started.is_some()
        );
        // the columns a cell's progress needs, of every trial; the others of none
        assert_eq!(
            (some.len(), some.metric.len(), some.failed.len()),
            (all.len(), all.metric.len(), all.failed.len())
        );
        assert_eq!(
            (some.started.len(), some.row_end.len(), some.value.len()),
            (all.len(), all.len(), all.metric.len())
        );
        assert!(all.host.len() == all.len() && all.ids.len() == all.len() && !all.unit.is_empty());
        // what a label's count reads: the same sessions by the same names
        assert_eq!((&some.session, &some.names), (&all.session, &all.names));
        assert!(some.host.is_empty() && some.round.is_empty() && some.ids.len() == 0);
        assert!(some.unit.is_empty() && some.monitored.is_empty() && some.secondary.trials() == 0);
        assert_eq!(covered(&store).map(|c| c.1), Some(560), "no columns written from a part of them");
    }
    // more lines appended than an eighth of what the columns cover: read whole, kept anew
    drop(file);
    std::fs::write(&path, lines_of(&records[..60])).unwrap();
    read_keeping(&store, false);
    assert_eq!(covered(&store).map(|c| c.1), Some(60));
    let mut file = OpenOptions::new().append(true).open(&path).unwrap();
    file.write_all(lines_of(&records[60..]).as_bytes()).unwrap();
    let (whole, _) = read(false, u64::MAX);
    let (alone, trials) = read(true, 0);
    assert_eq!(alone, whole);
    assert_eq!(trials.host.len(), trials.len());
    assert_eq!(covered(&store).map(|c| c.1), Some(600));
}

/// A report's read of `runs.columns` (`Store::load_for_report`), with the log's lines
/// appended since (a torn one among them), is the whole table less the trials' ids,
/// rounds and units, the failed trials' ids kept with their failures; with too many lines
/// appended, the whole table, and the columns kept anew.
#[test]
fn a_reports_read_is_the_whole_table_less_what_a_report_does_without() {
    let (_, mut records) = standing_case();
    // ids as runs write them (UUIDs) among the others
    for r in records.iter_mut().step_by(2) {
        r.trial = uuid::Uuid::now_v7().to_string();
    }
    let (_dir, store) = kept_store(&records[..560]);
    let path = store.runs_path();
    let read = |needed: Needed, min_parsed: u64| {
        let mut warnings = Vec::new();
        (read_trials(&path, false, &mut warnings, min_parsed, needed).unwrap(), warnings)
    };
    let mut file = OpenOptions::new().append(true).open(&path).unwrap();
    file.write_all(lines_of(&records[560..]).as_bytes()).unwrap();
    for torn in [false, true] {
        if torn {
            file.write_all(b"{\"trial\": \"torn").unwrap();
        }
        let (all, said) = read(Needed::All, u64::MAX);
        let (some, told) = read(Needed::Report, u64::MAX);
        assert_eq!(told, said, "torn: {torn}");
        assert!(some.ids.len() == 0 && some.round.is_empty() && some.unit.is_empty());
        // each failed trial's id, from the columns and from the lines appended
        assert!(all.failed.len() > 10 && all.failed.iter().any(|f| f.trial >= 560));
        for (f, g) in some.failed.iter().zip(&all.failed) {
            assert_eq!((f.trial, f.id.as_deref()), (g.trial, Some(&*all.id(g.trial))), "torn: {torn}");
        }
        let mut expected = all.clone();
        expected.keep_report_columns();
        assert_eq!(some, expected, "torn: {torn}");
        assert_eq!(covered(&store).map(|c| c.1), Some(560), "no columns written from a part of them");
    }
    // more lines appended than an eighth of what the columns cover: read whole, kept anew
    drop(file);
    std::fs::write(&path, lines_of(&records[..60])).unwrap();
    read_keeping(&store, false);
    let mut file = OpenOptions::new().append(true).open(&path).unwrap();
    file.write_all(lines_of(&records[60..]).as_bytes()).unwrap();
    let (whole, _) = read(Needed::Report, 0);
    assert_eq!(whole, Trials::from_records(&records));
    assert_eq!(covered(&store).map(|c| c.1), Some(600));
}

/// Where the cells stand, read again while the log is unchanged, is what the log says,
/// without reading the log (nor its columns); after an append, from it and the records
/// appended alone; after a torn line, another plan or damage to the file, from the log
/// again.
#[test]
fn the_standing_kept_beside_the_log_is_the_logs() {
    let (plan, records) = standing_case();
    let dir = tempfile::tempdir().unwrap();
    let store = Store::new(dir.path(), "e");
    store.create().unwrap();
    std::fs::write(store.runs_path(), lines_of(&records[..400])).unwrap();
    let of_log = |store: &Store, plan: &crate::plan::Plan| {
        let snapshot = store.load().unwrap();
        (
            Standing::of(plan, &snapshot.trials, snapshot.warnings.clone()),
            snapshot.sessions,
            snapshot.warnings,
        )
    };
    let expected = of_log(&store, &plan);
    assert!(expected.0.set_aside > 0 && expected.0.failed > 0 && expected.0.imported > 0);
    assert!(expected.0.progress.len() == 7 && expected.0.progress.values().any(|p| p.values.len() > 1));
    let kept = standing::path_for(&store.runs_path());
    assert!(!kept.exists());
    assert_eq!(store.standing(&plan).unwrap(), expected);
    assert!(kept.exists());

    // from the file alone: the log's columns are gone, and its middle is not read
    std::fs::remove_dir_all(columns::path_for(&store.runs_path())).ok();
    let log = std::fs::OpenOptions::new().write(true).open(store.runs_path()).unwrap();
    let len = log.metadata().unwrap().len();
    assert!(len > 160 << 10, "the middle is past the hashed ends");
    let middle = std::fs::read(store.runs_path()).unwrap()[(len / 2) as usize..][..4].to_vec();
    log.write_all_at(b"XXXX", len / 2).unwrap();
    assert_eq!(store.standing(&plan).unwrap(), expected, "read from runs.progress, not the log");
    log.write_all_at(&middle, len / 2).unwrap();

    // appended records: those alone read, the file extended by them as a whole read
    // would have written it
    let mut file = std::fs::OpenOptions::new().append(true).open(store.runs_path()).unwrap();
    file.write_all(lines_of(&records[400..]).as_bytes()).unwrap();
    let expected = of_log(&store, &plan);
    std::fs::remove_dir_all(columns::path_for(&store.runs_path())).ok();
    log.write_all_at(b"XXXX", len / 2).unwrap();
    assert_eq!(store.standing(&plan).unwrap(), expected, "the kept standing and the records after it");
    log.write_all_at(&middle, len / 2).unwrap();
    let extended = std::fs::read(&kept).unwrap();
    std::fs::remove_file(&kept).unwrap();
    assert_eq!(store.standing(&plan).unwrap(), expected);
    assert_eq!(std::fs::read(&kept).unwrap(), extended, "as a read of the whole log keeps it");
    let measured = records.iter().filter(|r| r.status.is_measurement() && !r.warmup).count();
    assert_eq!(expected.0.measured, measured);
    // a torn last line: said, and kept with the rest
    file.write_all(b"{\"trial\": \"torn").unwrap();
    let torn = of_log(&store, &plan);
    assert_eq!(torn.2.len(), 1);
    assert_eq!(store.standing(&plan).unwrap(), torn);
    assert_eq!(store.standing(&plan).unwrap(), torn);

    // another plan (a cell less): not this file's
    let exp = crate::spec::load_str(
        std::path::Path::new("experiments/standing.yaml"),
        "matrix: { n: [0, 1, 2, 3, 4, 5] }\nrun: \"true\"\nrepetitions: 5\n",
    )
    .unwrap();
    let fewer = crate::plan::expand(&exp, 100).unwrap();
    assert_eq!(store.standing(&fewer).unwrap(), of_log(&store, &fewer));
    assert_ne!(of_log(&store, &fewer).0, torn.0);

    // a damaged file, a flip anywhere: ignored and written anew
    assert_eq!(store.standing(&plan).unwrap(), torn);
    let good = std::fs::read(&kept).unwrap();
    for at in [0, 20, 60, good.len() / 2, good.len() - 1] {
        let mut bad = good.clone();
        bad[at] ^= 0x40;
        std::fs::write(&kept, &bad).unwrap();
        assert_eq!(store.standing(&plan).unwrap(), torn, "a flip at {at}");
        assert_eq!(std::fs::read(&kept).unwrap(), good, "rebuilt after a flip at {at}");
    }
    std::fs::write(&kept, &good[..good.len() - 3]).unwrap();
    assert_eq!(store.standing(&plan).unwrap(), torn);
    // a log moved aside (`--fresh`): a new file, nothing stands
    store.move_aside().unwrap();
    assert_eq!(store.standing(&plan).unwrap().0, Standing::default());
}

/// A start time in 8 bytes orders as `(is_none, time)` did with an `Option<i64>`: by time,
/// the earliest a record can hold to the latest, and none after all of them.
#[test]
fn start_times_order_by_time_with_none_last() {
    let (earliest, latest) = (jiff::Timestamp::MIN.as_microsecond(), jiff::Timestamp::MAX.as_microsecond());
    let mut times: Vec<Option<i64>> =
        vec![None, Some(0), Some(-1), Some(1), Some(earliest), Some(latest), None];
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    for _ in 0..1000 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        times.push((!x.is_multiple_of(7)).then(|| earliest + (x % (latest - earliest) as u64) as i64));
    }
    let mut by_option = times.clone();
    by_option.sort_by_key(|t| (t.is_none(), *t));
    let mut packed: Vec<Started> = times.iter().map(|&t| Started::new(t)).collect();
    packed.sort();
    assert_eq!(packed.iter().map(|s| s.get()).collect::<Vec<_>>(), by_option);
    assert_eq!(std::mem::size_of::<Started>(), 8);
    assert_eq!(Started::new(Some(earliest)).get(), Some(earliest));
    assert_eq!(Started::NONE.get(), None);
}
