//! A bisection replayed from what the store holds: its labelled sessions' trials (and,
//! across boots, the boot each session ran in), as `margin bisect` replays it before each
//! unit, and as `margin report` replays each bisection `bisect.ndjson` names.

use std::collections::{HashMap, HashSet};

use super::target::levels_of;
use super::{Ask, Replay, target};
use crate::analyze::settings::{nominal_confidence, settings};
use crate::plan::Plan;
use crate::spec::Experiment;
use crate::store::{
    BOOT_ID, BisectRecord, BootEvent, BootRecord, Event, ProblemKind, SessionRecord, Store, StoreError,
    TrialRecord,
};
use crate::summary::bisect::{BisectOutput, BisectUnderWay};

/// Why a bisection could not be replayed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ReplayError {
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A value the bisection cannot take, or a request the experiment refuses.
    #[error("{0}")]
    Data(String),
}

/// A bisection of `exp` as asked, nothing replayed: across boots when the target boots,
/// each unit then the mean of a boot's `repetitions` trials (the fewest, when adaptive).
pub(crate) fn start(exp: &Experiment, plan: &Plan, ask: &Ask<'_>) -> Result<Replay, String> {
    let target = target(exp, plan, ask)?;
    let booted = target.booted.is_some();
    let replay = Replay::new(target, plan, nominal_confidence(&exp.spec), settings(&exp.spec).threshold)?;
    Ok(if booted { replay.across_boots(plan.repetitions.bounds().0) } else { replay })
}

/// What a replay reads of the store: its sessions, trials and boots, read once for every
/// bisection a report replays.
struct Logs {
    sessions: Vec<SessionRecord>,
    records: Vec<TrialRecord>,
    boots: Vec<BootRecord>,
}

impl Logs {
    fn read(store: &Store) -> Result<Logs, StoreError> {
        Ok(Logs {
            sessions: store.session_records()?.0,
            records: store.records()?.0,
            boots: store.boot_records()?.0,
        })
    }
}

/// `start` replayed from the store's labelled trials.
pub(crate) fn replayed(store: &Store, start: &Replay) -> Result<Replay, ReplayError> {
    replayed_from(&Logs::read(store)?, start)
}

/// `start` replayed from `logs`.
fn replayed_from(logs: &Logs, start: &Replay) -> Result<Replay, ReplayError> {
    let Logs { sessions, records, boots } = logs;
    let label = start.target().label.as_str();
    let ours = sessions.iter().filter(|s| s.event == Event::Start && s.label.as_deref() == Some(label));
    let mut replay = start.clone();
    replay.seconds = seconds_spent(label, sessions, records, boots);
    if replay.per_boot().is_some() {
        let boots: HashMap<String, String> =
            ours.filter_map(|s| Some((s.session.clone(), s.facts.get(BOOT_ID)?.clone()))).collect();
        replay.feed_boots(records, &boots).map_err(ReplayError::Data)?;
    } else {
        let ours: HashSet<String> = ours.map(|s| s.session.clone()).collect();
        // the levels whose build failed skipped where the bisection asks for them
        let failed = failed_builds(sessions, records, &ours);
        for r in records {
            replay.skip_failed(&failed).map_err(ReplayError::Data)?;
            replay.feed(std::slice::from_ref(r), &ours).map_err(ReplayError::Data)?;
        }
        replay.skip_failed(&failed).map_err(ReplayError::Data)?;
    }
    Ok(replay)
}

/// The seconds the bisection labelled `label` took (`BisectOutput::seconds`): each of its
/// sessions from start to end (a killed one's to its last trial's end), and each of its
/// boots from the request to the boot's verdict (verified, rejected or lost).
fn seconds_spent(
    label: &str,
    sessions: &[SessionRecord],
    records: &[TrialRecord],
    boots: &[BootRecord],
) -> f64 {
    let at = |text: &str| text.parse::<jiff::Timestamp>().ok().map(|t| t.as_millisecond() as f64 / 1000.0);
    let mut spans: HashMap<&str, (Option<f64>, Option<f64>)> = HashMap::new();
    for s in sessions.iter().filter(|s| s.label.as_deref() == Some(label)) {
        let span = spans.entry(s.session.as_str()).or_default();
        match s.event {
            Event::Start => span.0 = at(&s.at),
            Event::End => span.1 = at(&s.at),
        }
    }
    for r in records {
        let Some(span) = spans.get_mut(r.session.as_str()) else { continue };
        let end = r.started_at.as_deref().and_then(at).map(|t| t + r.wall_time);
        if let Some(end) = end {
            span.1 = Some(span.1.map_or(end, |e: f64| e.max(end)));
        }
    }
    let in_sessions: f64 = spans.values().filter_map(|&(start, end)| Some((end? - start?).max(0.0))).sum();
    let ours = |b: &&BootRecord| b.bisect.as_deref() == Some(label);
    let requested: HashMap<(&str, u32, u32), f64> = boots
        .iter()
        .filter(ours)
        .filter(|b| b.event == BootEvent::Requested)
        .filter_map(|b| Some(((b.host.as_str(), b.boot, b.attempt), at(&b.at)?)))
        .collect();
    let in_boots: f64 = boots
        .iter()
        .filter(ours)
        .filter(|b| b.event != BootEvent::Requested)
        .filter_map(|b| Some((at(&b.at)? - requested.get(&(b.host.as_str(), b.boot, b.attempt))?).max(0.0)))
        .sum();
    in_sessions + in_boots
}

/// The cells abandoned in one of `ours` before any trial of theirs: their `setup` (the
/// level's build) failed.
fn failed_builds(
    sessions: &[SessionRecord],
    records: &[TrialRecord],
    ours: &HashSet<String>,
) -> HashSet<String> {
    let tried: HashSet<(&str, &str)> =
        records.iter().map(|r| (r.session.as_str(), r.cell.as_str())).collect();
    sessions
        .iter()
        .filter(|s| s.event == Event::End && ours.contains(&s.session))
        .flat_map(|s| s.problems.iter().map(move |p| (s, p)))
        .filter(|(s, p)| {
            p.what == ProblemKind::Abandoned && !tried.contains(&(s.session.as_str(), p.cell.as_str()))
        })
        .map(|(_, p)| p.cell.clone())
        .collect()
}

/// Every bisection `bisect.ndjson` names, replayed, the latest record of a label
/// deciding: the answers of those finished, and where the others stand; one the
/// experiment no longer takes (its file changed) is left out.
pub(crate) fn stored(
    exp: &Experiment,
    plan: &Plan,
    store: &Store,
) -> Result<(Vec<BisectOutput>, Vec<BisectUnderWay>), StoreError> {
    let (records, _) = store.bisect_records()?;
    let mut latest: Vec<&BisectRecord> = Vec::new();
    for r in records.iter().rev() {
        if !latest.iter().any(|l| l.label == r.label) {
            latest.push(r);
        }
    }
    latest.reverse();
    let (mut out, mut under_way) = (Vec::new(), Vec::new());
    if latest.is_empty() {
        return Ok((out, under_way));
    }
    let logs = Logs::read(store)?;
    for r in latest {
        let set: Vec<(String, String)> = r.fixed.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        let ask = Ask {
            factor: &r.factor,
            good: Some(&r.good),
            bad: Some(&r.bad),
            metric: Some(&r.metric),
            set: &set,
        };
        let Ok(start) = start(exp, plan, &ask) else { continue };
        match replayed_from(&logs, &start) {
            Ok(replay) => match replay.answer() {
                Some(answer) => out.push(answer),
                None => under_way.extend(replay.under_way(command(exp, plan, r, &start))),
            },
            Err(ReplayError::Store(e)) => return Err(e),
            Err(ReplayError::Data(_)) => {}
        }
    }
    Ok((out, under_way))
}

/// The `margin bisect` that goes on with the bisection `r` asked for: the flags that are
/// not the defaults.
fn command(exp: &Experiment, plan: &Plan, r: &BisectRecord, start: &Replay) -> String {
    let t = start.target();
    let mut command = format!("margin bisect {} --factor {}", exp.path.display(), r.factor);
    if t.good != 0 {
        command.push_str(&format!(" --good {}", r.good));
    }
    if t.bad + 1 != t.levels.len() {
        command.push_str(&format!(" --bad {}", r.bad));
    }
    if super::target::metric(exp, None).ok().as_deref() != Some(r.metric.as_str()) {
        command.push_str(&format!(" --metric {}", r.metric));
    }
    let factors = &plan.keys[..plan.factor_keys];
    for (k, v) in &r.fixed {
        let several = factors.iter().position(|f| f == k).is_some_and(|i| levels_of(plan, i).len() > 1);
        if several {
            command.push_str(&format!(" --set {k}={v}"));
        }
    }
    command
}
