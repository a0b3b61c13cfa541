use std::collections::{HashMap, HashSet};

use indexmap::IndexMap;

use super::*;
use crate::store::{MetricInfo, Status};

/// A replay of 8 levels `l0`…`l7`, cell `c<level>` each, metric `t`, δ 5 %.
fn replay() -> Replay {
    let levels: Vec<String> = (0..8).map(|l| format!("l{l}")).collect();
    let target = Target {
        experiment: "x".into(),
        factor: "v".into(),
        cells: (0..8).map(Some).collect(),
        good: 0,
        bad: 7,
        fixed: IndexMap::new(),
        metric: "t".into(),
        label: "bisect:v:l0..l7".into(),
        levels,
        booted: None,
    };
    Replay {
        by_cell: (0..8).map(|l| (format!("c{l}"), l)).collect(),
        base: BisectSettings { threshold: 0.05, ..BisectSettings::default() },
        target,
        bisection: None,
        unit: String::new(),
        measured: HashMap::new(),
        unused: 0,
        per_boot: None,
        boot_trials: 0,
        open: None,
        seconds: 0.0,
    }
}

/// Trial `n` of `level` in `session`: 10 s, or 11 s from level 5, with a spread of ±1 %.
fn record(level: usize, n: u32, session: &str) -> TrialRecord {
    let mut r = TrialRecord::new(
        format!("t{level}-{n}"),
        format!("c{level}"),
        IndexMap::new(),
        "local".into(),
        session.into(),
        Status::Ok,
    );
    let jitter = [0.99, 1.0, 1.01][(n % 3) as usize];
    let value = if level >= 5 { 11.0 } else { 10.0 } * jitter;
    r.metrics.insert("t".into(), value);
    r.metric_info
        .insert("t".into(), MetricInfo { unit: "s".into(), better: Better::Lower, mean: Default::default() });
    r
}

/// The records the command would have made, asking the replay each time.
fn driven(mut asked: impl FnMut(usize, u32) -> Vec<TrialRecord>) -> (Replay, Vec<TrialRecord>) {
    let ours = HashSet::from(["s".to_owned()]);
    let mut log = Vec::new();
    let mut r = replay();
    let mut n = 0;
    while let Next::Measure(level) = r.next() {
        n += 1;
        let new = asked(level, n);
        r.feed(&new, &ours).unwrap();
        log.extend(new);
        assert!(n < 1000, "no answer");
    }
    (r, log)
}

#[test]
fn replaying_the_log_from_the_start_gives_the_state_the_trials_built() {
    let (live, log) = driven(|level, n| vec![record(level, n, "s")]);
    let answer = live.answer().unwrap();
    assert_eq!(
        (answer.verdict, answer.last_good.as_deref(), answer.first_bad.as_deref()),
        (Verdict::Found, Some("l4"), Some("l5"))
    );
    assert_eq!(answer.trials as usize, log.len());
    let mut again = replay();
    again.feed(&log, &HashSet::from(["s".to_owned()])).unwrap();
    assert_eq!(again.answer(), Some(answer));
}

#[test]
fn trials_not_asked_for_are_set_aside_and_other_labels_ignored() {
    let plain = driven(|level, n| vec![record(level, n, "s")]).0.answer().unwrap();
    // each unit comes after a trial of the level after it (not asked: set aside), and one
    // of another session (not the bisection's: not even counted)
    let (r, _) = driven(|level, n| {
        vec![record((level + 1) % 8, n + 5000, "s"), record(level, n + 9000, "other"), record(level, n, "s")]
    });
    let answer = r.answer().unwrap();
    assert_eq!(answer.steps, plain.steps);
    assert_eq!(answer.trials, plain.trials);
    assert!(answer.unused_trials > 0);
    // the run's progress counts every labelled measurement of a cell, used or not
    let used: u64 = (0..8).map(|l| u64::from(r.measured(l))).sum();
    assert_eq!(used, answer.trials + answer.unused_trials as u64);
}

#[test]
fn a_value_the_bisection_cannot_take_stops_the_replay_with_its_trial_named() {
    let mut r = replay();
    let mut bad = record(0, 3, "s");
    bad.metrics.insert("t".into(), 0.0);
    bad.metric_info.insert(
        "t".into(),
        MetricInfo { unit: "B/s".into(), better: Better::Higher, mean: vocab::MeanKind::Harmonic },
    );
    let err = r.feed(&[bad], &HashSet::from(["s".to_owned()])).unwrap_err();
    assert!(err.starts_with("v=l0 trial #1: t = 0: "), "{err}");
}

#[test]
fn across_boots_a_boot_of_its_trials_is_one_unit_and_a_short_last_boot_is_left_open() {
    // each unit a boot `b<n>` of 3 trials, in a session `s<n>` of its own
    let mut sessions = HashMap::new();
    let mut log = Vec::new();
    let mut r = replay().across_boots(3);
    let mut n = 0;
    while let Next::Measure(level) = r.next() {
        n += 1;
        sessions.insert(format!("s{n}"), format!("b{n}"));
        log.extend((0..3).map(|i| record(level, n * 3 + i, &format!("s{n}"))));
        r = replay().across_boots(3);
        r.feed_boots(&log, &sessions).unwrap();
        assert!(n < 1000, "no answer");
    }
    let answer = r.answer().unwrap();
    assert_eq!((answer.first_bad.as_deref(), answer.last_good.as_deref()), (Some("l5"), Some("l4")));
    assert_eq!((answer.boots, answer.trials_per_boot), (Some(n as u64), Some(3)));
    assert_eq!(answer.trials, 3 * n as u64);
    assert_eq!(answer.steps.iter().map(|s| s.boots.unwrap()).sum::<u32>(), n);
    assert!(answer.steps.iter().all(|s| s.trials == 3 * s.units), "{:?}", answer.steps);
    // a boot stopped after 2 of its 3 trials: not a unit, left open for the command
    let mut r = replay().across_boots(3);
    sessions.insert("s-short".into(), "b-short".into());
    let short: Vec<TrialRecord> = (0..2).map(|i| record(0, 9000 + i, "s-short")).collect();
    r.feed_boots(&short, &sessions).unwrap();
    assert_eq!(r.units(), 0);
    assert_eq!(r.open_boot(), Some(&OpenBoot { boot_id: "b-short".into(), level: 0, trials: 2 }));
    // then a boot after it: the short one's trials are set aside, never a unit
    sessions.insert("s-next".into(), "b-next".into());
    let mut later = short.clone();
    later.extend((0..3).map(|i| record(0, 9100 + i, "s-next")));
    let mut r = replay().across_boots(3);
    r.feed_boots(&later, &sessions).unwrap();
    assert_eq!((r.units(), r.open_boot(), r.measured(0)), (1, None, 5));
}
