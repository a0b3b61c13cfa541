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
    }
}

#[test]
fn appended_records_load_back() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::new(dir.path(), "e");
    store.create().unwrap();
    let mut log = store.trials().unwrap();
    for n in 1..=3 {
        log.append(&trial(n)).unwrap();
    }
    let loaded = store.load().unwrap();
    assert_eq!(loaded.trials, vec![trial(1), trial(2), trial(3)]);
    assert!(loaded.warnings.is_empty());
}

#[test]
fn a_torn_line_is_skipped_kept_and_appending_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::new(dir.path(), "e");
    store.create().unwrap();
    store.trials().unwrap().append(&trial(1)).unwrap();
    // a power cut in the middle of the second record
    let full = serde_json::to_string(&trial(2)).unwrap();
    let mut f = OpenOptions::new().append(true).open(store.runs_path()).unwrap();
    f.write_all(&full.as_bytes()[..full.len() / 2]).unwrap();
    drop(f);
    let loaded = store.load().unwrap();
    assert_eq!(loaded.trials, vec![trial(1)]);
    assert_eq!(loaded.warnings.len(), 1);
    assert!(loaded.warnings[0].contains("runs.ndjson:2: skipped a record"), "{:?}", loaded.warnings);
    // the next run appends on a fresh line; the torn bytes stay in the file
    store.trials().unwrap().append(&trial(3)).unwrap();
    let loaded = store.load().unwrap();
    assert_eq!(loaded.trials, vec![trial(1), trial(3)]);
    assert_eq!(loaded.warnings.len(), 1);
    let text = std::fs::read_to_string(store.runs_path()).unwrap();
    assert!(text.contains(&full[..full.len() / 2]));
}

#[test]
fn a_second_lock_names_the_holder() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::new(dir.path(), "e");
    let held = store.lock().unwrap();
    match store.lock() {
        Err(StoreError::Locked { pid, .. }) => assert_eq!(pid, std::process::id().to_string()),
        other => panic!("expected Locked, got {other:?}"),
    }
    drop(held);
    store.lock().unwrap();
}

#[test]
fn fresh_moves_the_logs_aside_and_deletes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::new(dir.path(), "e");
    store.create().unwrap();
    store.trials().unwrap().append(&trial(1)).unwrap();
    let moved = store.move_aside().unwrap();
    assert_eq!(moved.len(), 1);
    assert!(!store.runs_path().exists());
    let kept = std::fs::read_to_string(&moved[0]).unwrap();
    assert_eq!(serde_json::from_str::<TrialRecord>(kept.trim()).unwrap(), trial(1));
    assert!(store.load().unwrap().trials.is_empty());
}
