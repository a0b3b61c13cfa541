//! Where the cells stand: from the progress columns alone, a report's read of the
//! columns, and the progress kept beside the log.

use super::*;

/// Where the cells stand from the columns a cell's progress needs, read alone from
/// `runs.columns`, with the log's lines appended since (a torn one among them), is where
/// they stand from the whole table; when the lines appended are too many, the columns
/// are read whole and kept anew.
#[test]
fn the_progress_columns_alone_give_the_whole_tables_progress() {
    let (plan, records) = progress_case();
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
        (Progress::of(&plan, &trials, warnings), trials)
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
    let (_, mut records) = progress_case();
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
fn the_progress_kept_beside_the_log_is_the_logs() {
    let (plan, records) = progress_case();
    let dir = tempfile::tempdir().unwrap();
    let store = Store::new(dir.path(), "e");
    store.create().unwrap();
    std::fs::write(store.runs_path(), lines_of(&records[..400])).unwrap();
    let of_log = |store: &Store, plan: &crate::plan::Plan| {
        let snapshot = store.load().unwrap();
        (
            Progress::of(plan, &snapshot.trials, snapshot.warnings.clone()),
            snapshot.sessions,
            snapshot.warnings,
        )
    };
    let expected = of_log(&store, &plan);
    assert!(expected.0.set_aside > 0 && expected.0.failed > 0 && expected.0.imported > 0);
    assert!(expected.0.cells.len() == 7 && expected.0.cells.values().any(|p| p.values.len() > 1));
    let kept = progress::file::path_for(&store.runs_path());
    assert!(!kept.exists());
    assert_eq!(store.progress(&plan).unwrap(), expected);
    assert!(kept.exists());

    // from the file alone: the log's columns are gone, and its middle is not read
    std::fs::remove_dir_all(columns::path_for(&store.runs_path())).ok();
    let log = std::fs::OpenOptions::new().write(true).open(store.runs_path()).unwrap();
    let len = log.metadata().unwrap().len();
    assert!(len > 160 << 10, "the middle is past the hashed ends");
    let middle = std::fs::read(store.runs_path()).unwrap()[(len / 2) as usize..][..4].to_vec();
    log.write_all_at(b"XXXX", len / 2).unwrap();
    assert_eq!(store.progress(&plan).unwrap(), expected, "read from runs.progress, not the log");
    log.write_all_at(&middle, len / 2).unwrap();

    // appended records: those alone read, the file extended by them as a whole read
    // would have written it
    let mut file = std::fs::OpenOptions::new().append(true).open(store.runs_path()).unwrap();
    file.write_all(lines_of(&records[400..]).as_bytes()).unwrap();
    let expected = of_log(&store, &plan);
    std::fs::remove_dir_all(columns::path_for(&store.runs_path())).ok();
    log.write_all_at(b"XXXX", len / 2).unwrap();
    assert_eq!(store.progress(&plan).unwrap(), expected, "the kept progress and the records after it");
    log.write_all_at(&middle, len / 2).unwrap();
    let extended = std::fs::read(&kept).unwrap();
    std::fs::remove_file(&kept).unwrap();
    assert_eq!(store.progress(&plan).unwrap(), expected);
    assert_eq!(std::fs::read(&kept).unwrap(), extended, "as a read of the whole log keeps it");
    let measured = records.iter().filter(|r| r.status.is_measurement() && !r.warmup).count();
    assert_eq!(expected.0.measured, measured);
    // a torn last line: said, and kept with the rest
    file.write_all(b"{\"trial\": \"torn").unwrap();
    let torn = of_log(&store, &plan);
    assert_eq!(torn.2.len(), 1);
    assert_eq!(store.progress(&plan).unwrap(), torn);
    assert_eq!(store.progress(&plan).unwrap(), torn);

    // another plan (a cell less): not this file's
    let exp = crate::spec::load_str(
        std::path::Path::new("experiments/progress.yaml"),
        "matrix: { n: [0, 1, 2, 3, 4, 5] }\nrun: \"true\"\nrepetitions: 5\n",
    )
    .unwrap();
    let fewer = crate::plan::expand(&exp, 100).unwrap();
    assert_eq!(store.progress(&fewer).unwrap(), of_log(&store, &fewer));
    assert_ne!(of_log(&store, &fewer).0, torn.0);

    // a damaged file, a flip anywhere: ignored and written anew
    assert_eq!(store.progress(&plan).unwrap(), torn);
    let good = std::fs::read(&kept).unwrap();
    for at in [0, 20, 60, good.len() / 2, good.len() - 1] {
        let mut bad = good.clone();
        bad[at] ^= 0x40;
        std::fs::write(&kept, &bad).unwrap();
        assert_eq!(store.progress(&plan).unwrap(), torn, "a flip at {at}");
        assert_eq!(std::fs::read(&kept).unwrap(), good, "rebuilt after a flip at {at}");
    }
    std::fs::write(&kept, &good[..good.len() - 3]).unwrap();
    assert_eq!(store.progress(&plan).unwrap(), torn);
    // a log moved aside (`--fresh`): a new file, nothing stands
    store.move_aside().unwrap();
    assert_eq!(store.progress(&plan).unwrap().0, Progress::default());
}
