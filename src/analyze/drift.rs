//! Drift within a session in the summary (docs/statistics.md, Drift within a session):
//! per session and primary metric, the trials of every cell in the order they started,
//! tested by [`crate::stats::drift`]; a finding is a warning with the session, the
//! metric, when the change came and how large it was. The same trials taken by their
//! place in their round are tested for an effect of the order within a round (Order
//! within a round): a warning with the places on each side and the size.

use std::collections::{HashMap, HashSet};

use rayon::prelude::*;

use super::analysed::Analysed;
use crate::stats::drift::{self, Point};
use crate::store::{Name, Names};
use crate::summary::{DriftStat, MetricMeta, OrderStat, Warning, WarningKind};

/// The most sessions of a store in which a stationary one raises a drift warning, over
/// all the metrics tested in it: each metric is tested at this over their number.
pub(crate) const FALSE_ALARMS: f64 = 0.01;

/// One trial of a session's sequence: its start time (µs), its cell × metric (an index
/// into the analysed groups), its value, its host and its place in its round (0: not
/// known).
type Trial = (i64, usize, f64, Name, u32);

/// What the sessions' trials showed: drifts in time, and effects of the order within a
/// round.
#[derive(Debug, Default)]
pub(crate) struct Shifts {
    pub drifts: Vec<DriftStat>,
    pub orders: Vec<OrderStat>,
}

/// The drifts and order effects found: every session's trials of each primary metric,
/// `analysed` holding every cell × metric.
pub(crate) fn shifts(
    analysed: &[Analysed],
    metrics: &[MetricMeta],
    primary: &HashSet<&str>,
    names: &Names,
) -> Shifts {
    let mut sequences: HashMap<(Name, usize), Vec<Trial>> = HashMap::new();
    for (index, a) in analysed.iter().enumerate() {
        if !primary.contains(metrics[a.meta].name.as_str()) {
            continue;
        }
        let rows = &a.group.rows;
        let n = a.all.len();
        if rows.sessions.len() != n || rows.started.len() != n || rows.positions.len() != n {
            continue;
        }
        for (i, &value) in a.all.values().iter().enumerate() {
            let Some(started) = rows.started[i].get() else { continue };
            sequences.entry((rows.sessions[i], a.meta)).or_default().push((
                started,
                index,
                value,
                rows.hosts[i],
                rows.positions[i],
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
    let found: Vec<(Option<DriftStat>, Option<OrderStat>)> = sequences
        .into_par_iter()
        .map(|(key, mut trials)| {
            let session = names.get(key.0);
            let seed = session
                .bytes()
                .fold(0xcbf2_9ce4_8422_2325_u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3));
            let alpha = FALSE_ALARMS / per_session.get(&key.0).copied().unwrap_or(1).max(1) as f64;
            let cells = trials.iter().map(|t| t.1).collect::<HashSet<usize>>().len();
            let host = names.get(trials[0].3).to_owned();
            let metric = &metrics[key.1].name;
            trials.sort_by_key(|t| t.0);
            let drift = drift(&trials, seed, alpha).map(|(d, at)| DriftStat {
                session: session.to_owned(),
                host: host.clone(),
                metric: metric.clone(),
                trials: d.trials,
                cells,
                before: d.at,
                change_at: jiff::Timestamp::from_microsecond(at).map(|t| t.to_string()).unwrap_or_default(),
                change_pct: d.ratio.map(|r| (r - 1.0) * 100.0),
                p_value: d.p_value,
                alpha,
                points: points(&trials),
            });
            // by place, each place's trials in the order they started (a stable sort)
            trials.retain(|t| t.4 > 0);
            trials.sort_by_key(|t| t.4);
            let order = order(&trials, seed ^ 0x0de7, alpha).map(|(d, last)| OrderStat {
                session: session.to_owned(),
                host,
                metric: metric.clone(),
                trials: d.trials,
                cells,
                places: trials.last().map_or(0, |t| t.4),
                up_to_place: last,
                change_pct: d.ratio.map(|r| (r - 1.0) * 100.0),
                p_value: d.p_value,
                alpha,
            });
            (drift, order)
        })
        .collect();
    let (drifts, orders) = found.into_iter().unzip::<_, _, Vec<_>, Vec<_>>();
    Shifts { drifts: drifts.into_iter().flatten().collect(), orders: orders.into_iter().flatten().collect() }
}

/// `trials` (in the order they started) as a drift's plot shows them: seconds after the
/// first started, and each value's difference from its cell's median, in %.
fn points(trials: &[Trial]) -> Vec<(f64, f64)> {
    let mut by_cell: HashMap<usize, Vec<f64>> = HashMap::new();
    for t in trials {
        by_cell.entry(t.1).or_default().push(t.2);
    }
    let medians: HashMap<usize, f64> = by_cell
        .into_iter()
        .map(|(cell, mut values)| (cell, crate::stats::elementary::median_in_place(&mut values)))
        .collect();
    let first = trials.first().map_or(0, |t| t.0);
    trials
        .iter()
        .map(|&(started, cell, value, ..)| {
            let median = medians[&cell];
            ((started - first) as f64 / 1e6, (value / median - 1.0) * 100.0)
        })
        .collect()
}

/// The drift of `trials` (in the order they started) below `alpha`, with the start of the
/// first trial after the change.
fn drift(trials: &[Trial], seed: u64, alpha: f64) -> Option<(drift::Drift, i64)> {
    let points: Vec<Point> = trials.iter().map(|&(_, cell, value, ..)| Point { cell, value }).collect();
    let d = drift::test(&points, seed)?;
    let at = trials[d.at].0;
    (d.p_value < alpha).then_some((d, at))
}

/// The effect of the place in a round on `trials` (by place) below `alpha`, with the last
/// place before the change.
fn order(trials: &[Trial], seed: u64, alpha: f64) -> Option<(drift::Drift, u32)> {
    let points: Vec<Point> = trials.iter().map(|&(_, cell, value, ..)| Point { cell, value }).collect();
    let places: Vec<u32> = trials.iter().map(|t| t.4).collect();
    let d = drift::test_places(&points, &places, seed)?;
    // a change found is after a place (a p-value below 1 has `at` ≥ 1)
    let last = *places.get(d.at.checked_sub(1)?)?;
    (d.p_value < alpha).then_some((d, last))
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

/// One warning per order effect found.
pub(crate) fn order_warnings(orders: &[OrderStat]) -> Vec<Warning> {
    orders
        .iter()
        .map(|o| {
            let size = match o.change_pct {
                Some(p) => format!("{} by {:.1} %", if p >= 0.0 { "higher" } else { "lower" }, p.abs()),
                None => "different".to_owned(),
            };
            let (after, before) = match o.up_to_place {
                1 => ("after the first of their round".to_owned(), "first trials".to_owned()),
                k => (format!("after place {k} of their round"), format!("trials at places 1–{k}")),
            };
            Warning::new(
                WarningKind::Order,
                format!(
                    "{} depends on the order within a round in session {} on host {}: the trials {after} are \
                     {size} than the same cells' {before} ({} trials, {} places; p = {:.3}, permutation test \
                     within cells): a trial leaves something behind for the next (a warm or full cache, dirty \
                     pages, a spent turbo budget); interleaving spreads it over every cell, but it widens the \
                     intervals — find what a trial leaves behind, or add a `setup` that resets it",
                    o.metric, o.session, o.host, o.trials, o.places, o.p_value
                ),
            )
        })
        .collect()
}
