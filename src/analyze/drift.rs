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

/// One trial of a sequence: the analysed group it is in (its index) and its place among
/// that group's trials, where its start, place in its round and value are read.
#[derive(Debug, Clone, Copy)]
struct Member {
    group: u32,
    index: u32,
}

/// The trials of one session and metric as gathered, cell by cell: each its [`Member`],
/// its centred rank among its cell's trials in the session ([`drift::centred_ranks_of`])
/// and its start (µs), and the host of the first. 24 bytes a trial: the values stay in
/// the groups'.
struct Gathered<'a> {
    analysed: &'a [Analysed],
    members: Vec<Member>,
    rank: Vec<f64>,
    started: Vec<i64>,
    host: Option<Name>,
}

impl<'a> Gathered<'a> {
    fn new(analysed: &'a [Analysed], n: usize) -> Gathered<'a> {
        Gathered {
            analysed,
            members: Vec::with_capacity(n),
            rank: Vec::with_capacity(n),
            started: Vec::with_capacity(n),
            host: None,
        }
    }

    /// The same trials in the order they started ([`by_start`]), with their places in
    /// their rounds: each column gathered on every core.
    fn into_start_order(self) -> Sequence<'a> {
        let Gathered { analysed, members, rank, started, host } = self;
        let order = by_start(&started);
        drop(started);
        let members: Vec<Member> = order.par_iter().map(|&i| members[i as usize]).collect();
        let rank = order.par_iter().map(|&i| rank[i as usize]).collect();
        let place = members
            .par_iter()
            .map(|m| analysed[m.group as usize].group.rows.positions[m.index as usize])
            .collect();
        Sequence { analysed, members, rank, place, host }
    }
}

/// The trials of one session and metric in the order they started, which the tests read
/// in place: each its [`Member`], its centred rank and its place in its round (0: not
/// known), and the host of the first. 20 bytes a trial.
struct Sequence<'a> {
    analysed: &'a [Analysed],
    members: Vec<Member>,
    rank: Vec<f64>,
    place: Vec<u32>,
    host: Option<Name>,
}

impl Sequence<'_> {
    fn len(&self) -> usize {
        self.members.len()
    }

    /// Trial `i`'s analysed group and its index there.
    fn member(&self, i: usize) -> (&Analysed, usize) {
        let m = self.members[i];
        (&self.analysed[m.group as usize], m.index as usize)
    }

    /// When trial `i` started (µs; a trial without a start is not in a sequence).
    fn started(&self, i: usize) -> i64 {
        let (a, at) = self.member(i);
        a.group.rows.started[at].get().unwrap_or_default()
    }

    fn value(&self, i: usize) -> f64 {
        let (a, at) = self.member(i);
        a.all.values()[at]
    }

    fn cell(&self, i: usize) -> usize {
        self.members[i].group as usize
    }

    /// The points of the trials `order` says, in that order.
    fn points(&self, order: impl Iterator<Item = usize>) -> Vec<Point> {
        order.map(|i| Point { cell: self.cell(i), value: self.value(i) }).collect()
    }

    /// The cells of the trials `order` says, in that order.
    fn cells(&self, order: impl Iterator<Item = usize>) -> Vec<usize> {
        order.map(|i| self.cell(i)).collect()
    }
}

/// The trials' indices by start (ties in the order of their indices, as a stable sort
/// keeps them). Start and index packed in one integer where they fit, as they do for any
/// session shorter than years: a sort of plain integers, each key its own (the index is
/// in it), so the sort on every core need not be stable.
fn by_start(started: &[i64]) -> Vec<u32> {
    let n = started.len();
    let Some(&first) = started.iter().min() else { return Vec::new() };
    let span = started.iter().map(|&s| s.abs_diff(first)).max().unwrap_or(0);
    let bits = usize::BITS - n.leading_zeros();
    if u64::BITS - span.leading_zeros() + bits <= 64 {
        let mut keys: Vec<u64> =
            started.iter().enumerate().map(|(i, &s)| s.abs_diff(first) << bits | i as u64).collect();
        keys.par_sort_unstable();
        keys.into_iter().map(|k| (k & ((1 << bits) - 1)) as u32).collect()
    } else {
        let mut keys: Vec<(i64, u32)> = started.iter().enumerate().map(|(i, &s)| (s, i as u32)).collect();
        keys.par_sort_unstable();
        keys.into_iter().map(|(_, i)| i).collect()
    }
}

/// The indices of the trials with a place (`place`; 0: not known), by place, each
/// place's in the order of their indices: a stable counting sort by place.
fn by_place(place: &[u32]) -> Vec<u32> {
    let places = place.iter().max().map_or(0, |&p| p as usize + 1);
    let mut at = vec![0usize; places + 1];
    for &p in place {
        at[p as usize + 1] += 1;
    }
    for p in 1..at.len() {
        at[p] += at[p - 1];
    }
    // place 0 (not known) is left out
    let unknown = at[1];
    let mut out = vec![0u32; place.len() - unknown];
    for (i, &p) in place.iter().enumerate() {
        let p = p as usize;
        if p > 0 {
            out[at[p] - unknown] = i as u32;
            at[p] += 1;
        }
    }
    out
}

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
    // each cell's trials of each session (their indices in the cell), ranked within them
    // on every core; then each (session, metric)'s sequence gathered from the cells in
    // their order, so that a trial's columns are copied once
    type Ranked = Vec<((Name, usize), Vec<u32>, Vec<f64>)>;
    let ranked: Vec<Ranked> = analysed
        .par_iter()
        .map(|a| {
            let rows = &a.group.rows;
            let n = a.all.len();
            if !primary.contains(metrics[a.meta].name.as_str())
                || rows.sessions.len() != n
                || rows.started.len() != n
                || rows.positions.len() != n
            {
                return Vec::new();
            }
            let mut by_session: Vec<((Name, usize), Vec<u32>)> = Vec::new();
            for i in 0..n {
                if rows.started[i].get().is_none() {
                    continue;
                }
                let key = (rows.sessions[i], a.meta);
                match by_session.iter_mut().find(|(k, _)| *k == key) {
                    Some((_, members)) => members.push(i as u32),
                    None => by_session.push((key, vec![i as u32])),
                }
            }
            let values = a.all.values();
            by_session
                .into_iter()
                .map(|(key, members)| {
                    let of: Vec<f64> = members.iter().map(|&i| values[i as usize]).collect();
                    (key, members, drift::centred_ranks_of(&of))
                })
                .collect()
        })
        .collect();
    let mut sizes: HashMap<(Name, usize), usize> = HashMap::new();
    for (key, members, _) in ranked.iter().flatten() {
        *sizes.entry(*key).or_default() += members.len();
    }
    let mut sequences: HashMap<(Name, usize), Gathered> =
        sizes.into_iter().map(|(key, n)| (key, Gathered::new(analysed, n))).collect();
    for (index, cell) in ranked.into_iter().enumerate() {
        let rows = &analysed[index].group.rows;
        for (key, members, ranks) in cell {
            let Some(s) = sequences.get_mut(&key) else { continue };
            s.host = s.host.or_else(|| members.first().map(|&i| rows.hosts[i as usize]));
            s.members.extend(members.iter().map(|&i| Member { group: index as u32, index: i }));
            s.started.extend(members.iter().map(|&i| rows.started[i as usize].get().unwrap_or_default()));
            s.rank.extend(ranks);
        }
    }
    // each session's metrics share its false alarms
    let mut per_session: HashMap<Name, usize> = HashMap::new();
    for ((session, _), trials) in &sequences {
        if trials.members.len() >= drift::MIN_TRIALS {
            *per_session.entry(*session).or_default() += 1;
        }
    }
    let mut keys: Vec<(Name, usize)> = sequences.keys().copied().collect();
    keys.sort_by_key(|(s, m)| (names.get(*s).to_owned(), *m));
    // the sequences are independent: tested in parallel, kept in the keys' order
    let sequences: Vec<((Name, usize), Gathered)> =
        keys.into_iter().filter_map(|key| Some((key, sequences.remove(&key)?))).collect();
    let found: Vec<(Option<DriftStat>, Option<OrderStat>)> = sequences
        .into_par_iter()
        .map(|(key, trials)| {
            // a value not finite: no ranks to test (as `drift::test` says)
            if !trials
                .members
                .iter()
                .all(|m| analysed[m.group as usize].all.values()[m.index as usize].is_finite())
            {
                return (None, None);
            }
            let session = names.get(key.0);
            let seed = session
                .bytes()
                .fold(0xcbf2_9ce4_8422_2325_u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3));
            let alpha = FALSE_ALARMS / per_session.get(&key.0).copied().unwrap_or(1).max(1) as f64;
            let trials = trials.into_start_order();
            let mut seen = vec![false; analysed.len()];
            let cells =
                (0..trials.len()).filter(|&i| !std::mem::replace(&mut seen[trials.cell(i)], true)).count();
            let host = trials.host.map(|h| names.get(h).to_owned()).unwrap_or_default();
            let metric = &metrics[key.1].name;
            let (drift, order) = rayon::join(
                || {
                    drift(&trials, seed, alpha).map(|(d, at)| DriftStat {
                        session: session.to_owned(),
                        host: host.clone(),
                        metric: metric.clone(),
                        trials: d.trials,
                        cells,
                        before: d.at,
                        change_at: jiff::Timestamp::from_microsecond(at)
                            .map(|t| t.to_string())
                            .unwrap_or_default(),
                        change_pct: d.ratio.map(|r| (r - 1.0) * 100.0),
                        p_value: d.p_value,
                        alpha,
                        points: points(&trials),
                    })
                },
                || {
                    // by place, each place's trials in the order they started
                    let by_place = by_place(&trials.place);
                    self::order(&trials, &by_place, seed ^ 0x0de7, alpha).map(|(d, last)| OrderStat {
                        session: session.to_owned(),
                        host: host.clone(),
                        metric: metric.clone(),
                        trials: d.trials,
                        cells,
                        places: by_place.last().map_or(0, |&i| trials.place[i as usize]),
                        up_to_place: last,
                        change_pct: d.ratio.map(|r| (r - 1.0) * 100.0),
                        p_value: d.p_value,
                        alpha,
                    })
                },
            );
            (drift, order)
        })
        .collect();
    let (drifts, orders) = found.into_iter().unzip::<_, _, Vec<_>, Vec<_>>();
    Shifts { drifts: drifts.into_iter().flatten().collect(), orders: orders.into_iter().flatten().collect() }
}

/// The trials (in the order they started) as a drift's plot shows them: seconds after
/// the first started, and each value's difference from its cell's median, in %.
fn points(trials: &Sequence) -> Vec<(f64, f64)> {
    let mut by_cell: HashMap<usize, Vec<f64>> = HashMap::new();
    for i in 0..trials.len() {
        by_cell.entry(trials.cell(i)).or_default().push(trials.value(i));
    }
    let medians: HashMap<usize, f64> = by_cell
        .into_iter()
        .map(|(cell, mut values)| (cell, crate::stats::elementary::median_in_place(&mut values)))
        .collect();
    let first = if trials.len() > 0 { trials.started(0) } else { 0 };
    (0..trials.len())
        .map(|i| {
            let median = medians[&trials.cell(i)];
            ((trials.started(i) - first) as f64 / 1e6, (trials.value(i) / median - 1.0) * 100.0)
        })
        .collect()
}

/// The drift of the trials (in the order they started) below `alpha`, with the start of
/// the first trial after the change.
fn drift(trials: &Sequence, seed: u64, alpha: f64) -> Option<(drift::Drift, i64)> {
    let all = || 0..trials.len();
    let d = drift::test_ranked(&trials.rank, || trials.cells(all()), seed).filter(|d| d.p_value < alpha)?;
    let at = trials.started(d.at);
    Some((drift::Drift { ratio: drift::shift(&trials.points(all()), d.at), ..d }, at))
}

/// The effect of the place in a round on the trials `order` says (by place) below
/// `alpha`, with the last place before the change.
fn order(trials: &Sequence, order: &[u32], seed: u64, alpha: f64) -> Option<(drift::Drift, u32)> {
    let these = || order.iter().map(|&i| i as usize);
    let places: Vec<u32> = these().map(|i| trials.place[i]).collect();
    let ranks: Vec<f64> = these().map(|i| trials.rank[i]).collect();
    let d = drift::test_places_ranked(&ranks, || trials.cells(these()), &places, seed)
        .filter(|d| d.p_value < alpha)?;
    // a change found is after a place (a p-value below 1 has `at` ≥ 1)
    let last = *places.get(d.at.checked_sub(1)?)?;
    Some((drift::Drift { ratio: drift::shift(&trials.points(these()), d.at), ..d }, last))
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The two orders against stable sorts of the trials, on starts with ties, unknown
    /// places (0) and places out of order, in sizes that pack and one that does not.
    #[test]
    fn by_start_and_by_place_are_stable_sorts() {
        for (n, spread) in [(1usize, 10i64), (60, 7), (1000, 1 << 20), (300, i64::MAX / 4)] {
            let (mut started, mut place) = (Vec::new(), Vec::new());
            let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
            for _ in 0..n {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                started.push((x % spread as u64) as i64 - spread / 2);
                place.push((x >> 40) as u32 % 5);
            }
            let mut want: Vec<u32> = (0..n as u32).collect();
            want.sort_by_key(|&i| started[i as usize]);
            assert_eq!(by_start(&started), want, "by start, n = {n}");
            let mut want: Vec<u32> = (0..n as u32).filter(|&i| place[i as usize] > 0).collect();
            want.sort_by_key(|&i| place[i as usize]);
            assert_eq!(by_place(&place), want, "by place, n = {n}");
        }
    }
}
