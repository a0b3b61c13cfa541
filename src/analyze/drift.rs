//! Drift within a session in the summary (docs/statistics.md, Drift within a session):
//! per session and primary metric, the trials of every cell in the order they started,
//! tested by [`stats::drift`]; a finding is a warning with the session, the
//! metric, when the change came and how large it was. The same trials taken by their
//! place in their round are tested for an effect of the order within a round (Order
//! within a round): a warning with the places on each side and the size.

use std::collections::{HashMap, HashSet};

use rayon::prelude::*;

use super::analysed::Analysed;
use crate::store::{Name, Names};
use crate::summary::{DriftStat, MetricMeta, OrderStat, Warning, WarningKind};
use stats::drift::{self, Point};

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

/// The trials of one session and metric as gathered, cell by cell: each its [`Member`]
/// and its centred rank among its cell's trials in the session
/// ([`drift::centred_ranks_of`]), the number of cells, and the host of the first. 16
/// bytes a trial: the starts and the values stay in the groups'.
struct Gathered<'a> {
    analysed: &'a [Analysed],
    members: Vec<Member>,
    rank: Vec<f64>,
    cells: usize,
    host: Option<Name>,
}

impl<'a> Gathered<'a> {
    /// The same trials in the order they started ([`by_start`]), with their ranks and
    /// their places in their rounds in that order, each gathered on every core; the
    /// members stay as gathered.
    fn into_start_order(self) -> Sequence<'a> {
        let Gathered { analysed, members, rank, cells, host } = self;
        let started = |m: &Member| analysed[m.group as usize].group.rows.started[m.index as usize];
        let order = by_start(members.len(), |k| started(&members[k]).get().unwrap_or_default());
        let gathered = rank;
        let rank = order.par_iter().map(|&k| gathered[k as usize]).collect();
        drop(gathered);
        let place = order
            .par_iter()
            .map(|&k| {
                let m = members[k as usize];
                analysed[m.group as usize].group.rows.positions[m.index as usize]
            })
            .collect();
        Sequence { analysed, members, order, rank, place, cells, host }
    }
}

/// The trials of one session and metric in the order they started, which the tests read
/// in place: the members as gathered and, in start order, each one's place among them,
/// its centred rank and its place in its round (0: not known); the number of cells and
/// the host of the first. 24 bytes a trial.
struct Sequence<'a> {
    analysed: &'a [Analysed],
    members: Vec<Member>,
    order: Vec<u32>,
    rank: Vec<f64>,
    place: Vec<u32>,
    cells: usize,
    host: Option<Name>,
}

impl Sequence<'_> {
    fn len(&self) -> usize {
        self.order.len()
    }

    /// Trial `i`'s member, `i` in start order.
    fn at(&self, i: usize) -> Member {
        self.members[self.order[i] as usize]
    }

    /// Trial `i`'s analysed group and its index there.
    fn member(&self, i: usize) -> (&Analysed, usize) {
        let m = self.at(i);
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
        self.at(i).group as usize
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

/// The indices `0..n` by `started` (ties in the order of their indices, as a stable sort
/// keeps them). Start and index packed in one integer where they fit, as they do for any
/// session shorter than years: a sort of plain integers, each key its own (the index is
/// in it), so the sort on every core need not be stable.
fn by_start(n: usize, started: impl Fn(usize) -> i64 + Sync) -> Vec<u32> {
    let (first, last) = (0..n)
        .into_par_iter()
        .map(|k| {
            let s = started(k);
            (s, s)
        })
        .reduce(|| (i64::MAX, i64::MIN), |a, b| (a.0.min(b.0), a.1.max(b.1)));
    if n == 0 {
        return Vec::new();
    }
    let span = last.abs_diff(first);
    let bits = usize::BITS - n.leading_zeros();
    if u64::BITS - span.leading_zeros() + bits <= 64 {
        let mut keys: Vec<u64> =
            (0..n).into_par_iter().map(|k| started(k).abs_diff(first) << bits | k as u64).collect();
        keys.par_sort_unstable();
        keys.into_par_iter().map(|key| (key & ((1 << bits) - 1)) as u32).collect()
    } else {
        let mut keys: Vec<(i64, u32)> = (0..n).into_par_iter().map(|k| (started(k), k as u32)).collect();
        keys.par_sort_unstable();
        keys.into_par_iter().map(|(_, k)| k).collect()
    }
}

/// The indices `0..n` with a place (`place`; 0: not known), by place, each place's in the
/// order of their indices (a stable counting sort by place), and where the place changes
/// between two of them (`cuts[k]`: between the `k`th and the next).
fn by_place(n: usize, place: impl Fn(usize) -> u32) -> (Vec<u32>, Vec<bool>) {
    // places far beyond the trials' number (a log written by hand): a sort, not a count
    // over every place up to the largest
    if (0..n).any(|i| place(i) as usize > 4 * n + 64) {
        let mut out: Vec<u32> = (0..n as u32).filter(|&i| place(i as usize) > 0).collect();
        out.sort_by_key(|&i| place(i as usize));
        let cuts = out.windows(2).map(|w| place(w[0] as usize) != place(w[1] as usize)).collect();
        return (out, cuts);
    }
    let mut at: Vec<usize> = Vec::new();
    for i in 0..n {
        let p = place(i) as usize;
        if at.len() < p + 2 {
            at.resize(p + 2, 0);
        }
        at[p + 1] += 1;
    }
    for p in 1..at.len() {
        at[p] += at[p - 1];
    }
    // place 0 (not known) is left out
    let unknown = at.get(1).copied().unwrap_or(0);
    let known = n - unknown;
    let mut cuts = vec![false; known.saturating_sub(1)];
    for &end in at.iter().skip(1) {
        if end > unknown && end < n {
            cuts[end - unknown - 1] = true;
        }
    }
    let mut out = vec![0u32; known];
    for i in 0..n {
        let p = place(i) as usize;
        if p > 0 {
            out[at[p] - unknown] = i as u32;
            at[p] += 1;
        }
    }
    (out, cuts)
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
    // each cell's trials of each session (their indices in the cell), on every core; then
    // each (session, metric)'s sequence gathered from the cells in their order, each
    // cell's trials ranked within it as they are copied
    let sessions: Vec<Vec<(Key, Vec<u32>)>> = analysed
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
            let mut by_session: Vec<(Key, Vec<u32>)> = Vec::new();
            for i in 0..n {
                if rows.started[i].get().is_none() {
                    continue;
                }
                let key = (rows.sessions[i], a.meta);
                match by_session.iter_mut().find(|(k, _)| *k == key) {
                    Some((_, members)) => members.push(i as u32),
                    None => {
                        // room for the rest of the cell's trials: mostly one session has them all
                        let mut members = Vec::with_capacity(n - i);
                        members.push(i as u32);
                        by_session.push((key, members));
                    }
                }
            }
            by_session
        })
        .collect();
    // each (session, metric)'s pieces, cell by cell in the cells' order
    let mut pieces: HashMap<Key, Vec<Piece>> = HashMap::new();
    for (index, cell) in sessions.into_iter().enumerate() {
        for (key, members) in cell {
            pieces.entry(key).or_default().push((index as u32, members));
        }
    }
    let mut sequences: HashMap<Key, Gathered> =
        pieces.into_iter().map(|(key, pieces)| (key, gather(analysed, pieces))).collect();
    // each session's metrics share its false alarms
    let mut per_session: HashMap<Name, usize> = HashMap::new();
    for ((session, _), trials) in &sequences {
        if trials.members.len() >= drift::MIN_TRIALS {
            *per_session.entry(*session).or_default() += 1;
        }
    }
    let mut keys: Vec<Key> = sequences.keys().copied().collect();
    keys.sort_by_key(|(s, m)| (names.get(*s).to_owned(), *m));
    // the sequences are independent: tested in parallel, kept in the keys' order
    let sequences: Vec<(Key, Gathered)> =
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
            let cells = trials.cells;
            let host = trials.host.map(|h| names.get(h).to_owned()).unwrap_or_default();
            let metric = &metrics[key.1].name;
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
            // by place, each place's trials in the order they started; their ranks taken
            // into that order in place (the drift test done with them in start order)
            let (by_place, cuts) = by_place(trials.len(), |i| trials.place[i]);
            let mut trials = trials;
            let ranks = in_order(std::mem::take(&mut trials.rank), &by_place);
            let order =
                self::order(&trials, &by_place, &cuts, ranks, seed ^ 0x0de7, alpha).map(|(d, last)| {
                    OrderStat {
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
                    }
                });
            (drift, order)
        })
        .collect();
    let (drifts, orders) = found.into_iter().unzip::<_, _, Vec<_>, Vec<_>>();
    Shifts { drifts: drifts.into_iter().flatten().collect(), orders: orders.into_iter().flatten().collect() }
}

/// A sequence's session and metric (its index in the metrics).
type Key = (Name, usize);

/// A cell's trials of one session and metric: the group's index and the trials' indices
/// in it.
type Piece = (u32, Vec<u32>);

/// The trials of `pieces` one after another, each piece's ranked and copied on every core.
fn gather(analysed: &[Analysed], pieces: Vec<Piece>) -> Gathered<'_> {
    let n = pieces.iter().map(|(_, members)| members.len()).sum();
    let host = pieces.first().and_then(|(g, members)| {
        members.first().map(|&i| analysed[*g as usize].group.rows.hosts[i as usize])
    });
    let mut members = vec![Member { group: 0, index: 0 }; n];
    let mut rank = vec![0.0; n];
    let mut slots = Vec::with_capacity(pieces.len());
    let (mut m, mut r) = (&mut members[..], &mut rank[..]);
    for piece in &pieces {
        let (these, rest) = std::mem::take(&mut m).split_at_mut(piece.1.len());
        let (ranks, rest_r) = std::mem::take(&mut r).split_at_mut(piece.1.len());
        (m, r) = (rest, rest_r);
        slots.push((piece, these, ranks));
    }
    slots.into_par_iter().for_each(|((group, indices), these, ranks)| {
        for (slot, &index) in these.iter_mut().zip(indices) {
            *slot = Member { group: *group, index };
        }
        let values = analysed[*group as usize].all.values();
        // the cell's trials of the session, mostly all of them: their values as they are
        if indices.len() == values.len() {
            ranks.copy_from_slice(&drift::centred_ranks_of(values));
        } else {
            let of: Vec<f64> = indices.iter().map(|&i| values[i as usize]).collect();
            ranks.copy_from_slice(&drift::centred_ranks_of(&of));
        }
    });
    Gathered { analysed, members, rank, cells: pieces.len(), host }
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
        .map(|(cell, mut values)| (cell, stats::elementary::median_in_place(&mut values)))
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

/// The effect of the place in a round on the trials `order` says (by place, the place
/// changing where `cuts` says, their ranks `ranks` in that order) below `alpha`, with the
/// last place before the change.
fn order(
    trials: &Sequence,
    order: &[u32],
    cuts: &[bool],
    ranks: Vec<f64>,
    seed: u64,
    alpha: f64,
) -> Option<(drift::Drift, u32)> {
    let these = || order.iter().map(|&i| i as usize);
    let d = drift::test_cuts_ranked(&ranks, || trials.cells(these()), cuts, seed)
        .filter(|d| d.p_value < alpha)?;
    drop(ranks);
    // a change found is after a place (a p-value below 1 has `at` ≥ 1)
    let last = trials.place[*order.get(d.at.checked_sub(1)?)? as usize];
    Some((drift::Drift { ratio: drift::shift(&trials.points(these()), d.at), ..d }, last))
}

/// `values` taken in `order` (`out[k] = values[order[k]]`, each index once): in place
/// when `order` takes every value, following each cycle of the permutation, so that a
/// sequence's ranks are not held twice.
fn in_order(mut values: Vec<f64>, order: &[u32]) -> Vec<f64> {
    if order.len() != values.len() {
        return order.iter().map(|&i| values[i as usize]).collect();
    }
    let mut done = vec![false; values.len()];
    for start in 0..values.len() {
        if done[start] {
            continue;
        }
        let first = values[start];
        let mut k = start;
        loop {
            done[k] = true;
            let next = order[k] as usize;
            if next == start {
                values[k] = first;
                break;
            }
            values[k] = values[next];
            k = next;
        }
    }
    values
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
    /// places (0) and places out of order, in sizes that pack and one that does not, and
    /// the cuts between places against the sorted places'; and places beyond any count.
    /// Taken in place or copied, the values in an order are those the order names.
    #[test]
    fn values_in_order_are_the_ones_the_order_names() {
        let values: Vec<f64> = (0..50).map(|i| f64::from(i) * 1.5).collect();
        let mut x: u64 = 0x2545_f491_4f6c_dd1d;
        let mut order: Vec<u32> = (0..50).collect();
        for i in (1..order.len()).rev() {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            order.swap(i, (x % (i as u64 + 1)) as usize);
        }
        let want: Vec<f64> = order.iter().map(|&i| values[i as usize]).collect();
        assert_eq!(in_order(values.clone(), &order), want);
        assert_eq!(in_order(values.clone(), &order[..20]), want[..20]);
        assert_eq!(in_order(values, &[]), Vec::<f64>::new());
    }

    #[test]
    fn by_start_and_by_place_are_stable_sorts() {
        for (n, spread) in [(0usize, 1i64), (1, 10), (60, 7), (1000, 1 << 20), (300, i64::MAX / 4)] {
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
            assert_eq!(by_start(n, |k| started[k]), want, "by start, n = {n}");
            let mut want: Vec<u32> = (0..n as u32).filter(|&i| place[i as usize] > 0).collect();
            want.sort_by_key(|&i| place[i as usize]);
            let cuts: Vec<bool> =
                want.windows(2).map(|w| place[w[0] as usize] != place[w[1] as usize]).collect();
            assert_eq!(by_place(n, |i| place[i]), (want, cuts), "by place, n = {n}");
        }
        // places far beyond the trials' number (a hand-written log): sorted, not counted
        let place = [0, u32::MAX, 3, u32::MAX - 1, 3, 0, 7, u32::MAX];
        let want = vec![2, 4, 6, 3, 1, 7];
        let cuts = vec![false, true, true, true, false];
        assert_eq!(by_place(place.len(), |i| place[i]), (want, cuts));
    }
}
