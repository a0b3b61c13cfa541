//! The room laid ahead of the records while a run writes the log: read past, given back,
//! written over after a kill, grown with the log; a record half seen while written.

use super::*;

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
