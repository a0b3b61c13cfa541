//! Drift within a session in the summary (docs/statistics.md, Drift within a session):
//! per session and primary metric, the trials of every cell in the order they started,
//! tested by [`crate::stats::drift`]; a finding is a warning with the session, the
//! metric, when the change came and how large it was.

use std::collections::{HashMap, HashSet};

use rayon::prelude::*;

use super::analysed::Analysed;
use crate::stats::drift::{self, Point};
use crate::store::{Name, Names};
use crate::summary::{DriftStat, MetricMeta, Warning, WarningKind};

/// The most sessions of a store in which a stationary one raises a drift warning, over
/// all the metrics tested in it: each metric is tested at this over their number.
pub(crate) const FALSE_ALARMS: f64 = 0.01;

/// One trial of a session's sequence: its start time (µs), its cell × metric (an index
/// into the analysed groups), its value and its host.
type Trial = (i64, usize, f64, Name);

/// The drifts found: every session's trials of each primary metric, `analysed` holding
/// every cell × metric.
pub(crate) fn drifts(
    analysed: &[Analysed],
    metrics: &[MetricMeta],
    primary: &HashSet<&str>,
    names: &Names,
) -> Vec<DriftStat> {
    let mut sequences: HashMap<(Name, usize), Vec<Trial>> = HashMap::new();
    for (index, a) in analysed.iter().enumerate() {
        if !primary.contains(metrics[a.meta].name.as_str()) {
            continue;
        }
        let rows = &a.group.rows;
        if rows.sessions.len() != a.all.len() || rows.started.len() != a.all.len() {
            continue;
        }
        for (i, &value) in a.all.values().iter().enumerate() {
            let Some(started) = rows.started[i].get() else { continue };
            sequences.entry((rows.sessions[i], a.meta)).or_default().push((
                started,
                index,
                value,
                rows.hosts[i],
            ));
        }
    }
    // each session's metrics share its false alarms
    let mut per_session: HashMap<Name, usize> = HashMap::new();
    for ((session, _), trials) in &sequences {
        if trials.len() >= drift::MIN_TRIALS {
            *per_session.entry(*session).or_default() += 1;
        }
    }
    let mut keys: Vec<(Name, usize)> = sequences.keys().copied().collect();
    keys.sort_by_key(|(s, m)| (names.get(*s).to_owned(), *m));
    // the sequences are independent: tested in parallel, kept in the keys' order
    let sequences: Vec<((Name, usize), Vec<Trial>)> =
        keys.into_iter().map(|key| (key, sequences.remove(&key).unwrap_or_default())).collect();
    sequences
        .into_par_iter()
        .filter_map(|(key, mut trials)| {
            trials.sort_by_key(|t| t.0);
            let points: Vec<Point> =
                trials.iter().map(|&(_, cell, value, _)| Point { cell, value }).collect();
            let session = names.get(key.0);
            let seed = session
                .bytes()
                .fold(0xcbf2_9ce4_8422_2325_u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3));
            let d = drift::test(&points, seed)?;
            let alpha = FALSE_ALARMS / per_session.get(&key.0).copied().unwrap_or(1).max(1) as f64;
            if d.p_value >= alpha {
                return None;
            }
            let at = trials[d.at].0;
            let cells: HashSet<usize> = trials.iter().map(|t| t.1).collect();
            Some(DriftStat {
                session: session.to_owned(),
                host: names.get(trials[0].3).to_owned(),
                metric: metrics[key.1].name.clone(),
                trials: d.trials,
                cells: cells.len(),
                before: d.at,
                change_at: jiff::Timestamp::from_microsecond(at).map(|t| t.to_string()).unwrap_or_default(),
                change_pct: d.ratio.map(|r| (r - 1.0) * 100.0),
                p_value: d.p_value,
                alpha,
            })
        })
        .collect()
}

/// One warning per drift found.
pub(crate) fn warnings(drifts: &[DriftStat]) -> Vec<Warning> {
    drifts
        .iter()
        .map(|d| {
            let size = match d.change_pct {
                Some(p) => format!("{} {:.1} % from then on", if p >= 0.0 { "higher by" } else { "lower by" }, p.abs()),
                None => "changed".to_owned(),
            };
            Warning::new(
                WarningKind::Drift,
                format!(
                    "{} drifts within session {} on host {}: after its first {} of {} trials (at {}), {size} \
                     against the same cells before (p = {:.3}, permutation test within cells): the machine changed \
                     under the benchmark; compare only what ran on both sides of it, or find what changed",
                    d.metric, d.session, d.host, d.before, d.trials, d.change_at, d.p_value
                ),
            )
        })
        .collect()
}
