//! The columns: read from the log in parallel chunks, kept beside it as Parquet, read back
//! as the log reads, ignored when damaged or stale, appended as parts, and the start
//! times they order by.

use super::*;

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
            MetricInfo { unit: "s".into(), better: vocab::Better::Lower, mean: Default::default() },
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

/// The text columns are read as Parquet dictionaries whose keys are one, two or four
/// bytes wide as the names number up to 2^8, 2^16 or more: stores of 3, 300 and 70 000
/// cells read from their kept columns as from their log.
#[test]
fn text_columns_read_back_at_every_width_of_their_keys() {
    for cells in [3usize, 300, 70_000] {
        let records: Vec<TrialRecord> = (0..cells.max(600))
            .map(|n| {
                let mut r = trial(n as u32 + 1);
                r.cell = format!("c{}", n % cells);
                r.session = format!("s{}", n % 7);
                r
            })
            .collect();
        let (_dir, store) = kept_store(&records);
        let mut warnings = Vec::new();
        let trials = read_trials(&store.runs_path(), false, &mut warnings, u64::MAX, Needed::All).unwrap();
        assert_eq!(
            covered(&store),
            Some((std::fs::metadata(store.runs_path()).unwrap().len(), records.len()))
        );
        let expected = Trials::from_records(&records);
        assert_eq!(trials.names, expected.names, "{cells} cells");
        assert_eq!(trials.cell, expected.cell, "{cells} cells");
        assert_eq!(trials.session, expected.session, "{cells} cells");
        assert!(trials == expected, "{cells} cells: the other columns differ");
        assert!(warnings.is_empty(), "{warnings:?}");
    }
}
