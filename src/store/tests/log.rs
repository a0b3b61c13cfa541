//! The log: records appended and read back, a torn line skipped and kept, the lock, a log
//! moved aside, a line that is not text.

use super::*;

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
