//! The pass over the trial log that adds each cell's telemetry up.
//!
//! How the trials are looked at (`Pass`): the cells in batches of `CELLS_AT_ONCE`, on
//! both cores, each batch's analysed trials in log order, each trial's values added to its
//! cell's sums and counts (`CellAcc`) rather than kept. A batch's sums stay in the core's
//! cache, and its trials' figures are first read from the columns in loops of their own
//! (`Pass::gather`), so that many cache misses are under way at once. Taking a cell's
//! trials one by one where they lay in the log (one in ten thousand, in a large store)
//! waited on a cache miss for nearly every figure: most of a report's time on 10⁶ trials
//! of default telemetry. The sums run in log order within each cell, as the lists of
//! values did, so every figure is the same to the bit.

use std::collections::HashMap;
use std::ops::Range;

use super::warnings::{ABSORBED, ForeignWrite, foreign_write};
use super::{COLUMNS, source_of};
use crate::plan::Plan;
use crate::store::{Name, Trials};
use crate::summary::{MetricMeta, SecondaryStat};
use vocab::{DIRTY_BEFORE, GANG_SKEW, NOT_CONVERGED, OWN_WRITTEN, member_metric};

/// Where one of a trial's values comes from: a secondary metric of its record (by its
/// place among them), the largest of some (the busiest device, 0 without one) or their
/// mean (a gang's members').
enum Source {
    Raw(usize),
    Busiest(Vec<usize>),
    Mean(Vec<usize>),
}

/// The names of a trial's secondary metrics and its sources, and what its values are
/// then: worked out once for the trials that share them (a run's trials mostly do), so
/// that a trial's values are taken by place rather than found by name.
struct Shape<'a> {
    keys: Vec<(&'a str, Source)>,
    /// Places in `keys` of the figures the warnings read.
    steal: Option<usize>,
    disk: Option<usize>,
    skew: Option<usize>,
    own: Option<usize>,
    dirty: Option<usize>,
    /// Each device's `disk_written_bytes:<device>`, in the order of `keys`.
    devices: Vec<(&'a str, usize)>,
}

impl<'a> Shape<'a> {
    /// The whole-host columns of [`COLUMNS`] after the record's own metrics (a later one
    /// of a repeated name in the first's place): the busiest device of a per-device
    /// column whose source was read, and a gang's mean over its members where the trial
    /// has no figure of its own. Both read only the record's own metrics: no derived
    /// name has a member's `@` or a device's `:`.
    fn new(t: &'a Trials, names: &[Name], monitored: Name) -> Shape<'a> {
        let mut keys: Vec<(&'a str, Source)> = Vec::with_capacity(names.len() + 4);
        for (j, &n) in names.iter().enumerate() {
            let name = t.names.get(n);
            match keys.iter_mut().find(|(k, _)| *k == name) {
                Some(entry) => entry.1 = Source::Raw(j),
                None => keys.push((name, Source::Raw(j))),
            }
        }
        let own: Vec<(&str, usize)> = keys
            .iter()
            .filter_map(|(k, source)| match source {
                Source::Raw(j) => Some((*k, *j)),
                _ => None,
            })
            .collect();
        // whether disks and net were read around the trial
        let sources: Vec<&str> = t.names.get(monitored).split(',').collect();
        let read = (sources.contains(&"disks"), sources.contains(&"net"));
        // only a gang's trial has members' figures (`cpu_user_pct@domu1`)
        let gang = own.iter().any(|(k, _)| k.contains('@'));
        for (name, _, _, prefix) in COLUMNS {
            let source = match prefix {
                // a gang's trial: the mean over its members (`cpu_user_pct@domu1`, …)
                None if gang && !keys.iter().any(|(k, _)| *k == name) => {
                    let members: Vec<usize> = own
                        .iter()
                        .filter(|(k, _)| member_metric(k).is_some_and(|(m, _)| m == name))
                        .map(|&(_, j)| j)
                        .collect();
                    if members.is_empty() {
                        continue;
                    }
                    Source::Mean(members)
                }
                None => continue,
                Some(prefix) if (if source_of(name) == "disks" { read.0 } else { read.1 }) => {
                    Source::Busiest(
                        own.iter().filter(|(k, _)| k.starts_with(prefix)).map(|&(_, j)| j).collect(),
                    )
                }
                Some(_) => continue,
            };
            match keys.iter_mut().find(|(k, _)| *k == name) {
                Some(entry) => entry.1 = source,
                None => keys.push((name, source)),
            }
        }
        let place = |name: &str| keys.iter().position(|(k, _)| *k == name);
        let devices = keys
            .iter()
            .enumerate()
            .filter_map(|(p, (k, _))| Some((k.strip_prefix("disk_written_bytes:")?, p)))
            .collect();
        Shape {
            steal: place("cpu_steal_pct"),
            disk: place("disk_written_bytes"),
            skew: place(GANG_SKEW),
            own: place(OWN_WRITTEN),
            dirty: place(DIRTY_BEFORE),
            devices,
            keys,
        }
    }

    /// The values of a trial of this shape, whose secondary metrics are `raw`, in `out`.
    fn values(&self, raw: &[f64], out: &mut Vec<f64>) {
        let value = |source: &Source| match source {
            Source::Raw(j) => raw[*j],
            Source::Busiest(js) => js.iter().map(|&j| raw[j]).fold(0.0_f64, f64::max),
            // `mean`'s sum and division, without a list made per trial
            Source::Mean(js) => js.iter().map(|&j| raw[j]).sum::<f64>() / js.len() as f64,
        };
        out.clear();
        out.extend(self.keys.iter().map(|(_, source)| value(source)));
    }
}

/// Count, sum, least and largest of one secondary metric over a cell's trials, in log
/// order: what a list of them would give (the sum from −0.0, as `Sum` for f64 starts).
#[derive(Clone, Copy)]
pub(super) struct Acc {
    n: usize,
    sum: f64,
    min: f64,
    max: f64,
}

impl Acc {
    const EMPTY: Acc = Acc { n: 0, sum: -0.0, min: f64::INFINITY, max: f64::NEG_INFINITY };

    fn add(&mut self, v: f64) {
        *self = Acc { n: self.n + 1, sum: self.sum + v, min: self.min.min(v), max: self.max.max(v) };
    }

    pub(super) fn stat(&self) -> SecondaryStat {
        SecondaryStat {
            n: self.n,
            mean: self.sum / self.n as f64,
            min: self.min,
            max: self.max,
            differs: false,
        }
    }
}

/// What one cell's analysed trials added up to, in the pass over the log.
#[derive(Default)]
pub(super) struct CellAcc<'a> {
    pub(super) analysed: usize,
    /// Trials with any secondary metric, and those the tool said had not converged.
    pub(super) with: usize,
    pub(super) flagged: usize,
    /// Each secondary metric in the order first seen (its shape's order).
    pub(super) keys: Vec<(&'a str, Acc)>,
    /// The shapes its trials had, each with its keys' places in `keys`.
    places: Vec<(usize, Vec<usize>)>,
    /// The Xen domains its trials name, in the order first seen.
    pub(super) xl_domains: Vec<String>,
    /// Per host: the sum, count and largest of its trials' steal time.
    pub(super) steal: Vec<(Name, f64, usize, f64)>,
    /// The host of the first trial with the disks' writes (`page_cache`), and for each of
    /// the cell's rates in B/s: the rates, the disks' writes and how many were absorbed.
    pub(super) disk_host: Option<Name>,
    pub(super) page: Vec<(Name, Vec<f64>, Vec<f64>, usize)>,
    /// A gang's start skews and its trials' wall times.
    pub(super) skews: Vec<f64>,
    pub(super) walls: Vec<f64>,
    /// Trials whose own writes were measured, and those a disk wrote far more in.
    pub(super) measured: usize,
    pub(super) foreign: Vec<ForeignWrite>,
}

/// Cells looked at together in one walk over their trials: their sums stay in a core's
/// own cache (about a kilobyte a cell of default telemetry), where the whole store's
/// cells' sums, touched one trial at a time, made a cache miss of every figure added.
pub(super) const CELLS_AT_ONCE: usize = 256;

/// The analysed trials of the current cells (measured, not warm-ups), put in order for
/// [`Pass::batch`]: by batch of [`CELLS_AT_ONCE`] cells, each batch's in log order; and
/// what each trial needs from the trials before it.
pub(super) struct Pass<'a> {
    t: &'a Trials,
    /// Each distinct (list of names, sources), worked out once.
    shapes: Vec<Shape<'a>>,
    /// Batch `b`'s trials: `order[start[b]..start[b + 1]]`, each with its shape; and
    /// their cells' places in the batch.
    order: Vec<(u32, u32)>,
    places: Vec<u8>,
    start: Vec<usize>,
    /// What each had written on its host earlier in its session itself (in `order`'s
    /// order; empty when no trial measured its own writes).
    carried: Vec<f64>,
    /// The trials the tool said had not converged, ascending.
    not_converged: Vec<usize>,
}

/// A batch's trials' figures, read from the trial columns each in a loop of its own (see
/// [`Pass::batch`]), in the batch's order.
struct Gathered {
    hosts: Vec<Name>,
    walls: Vec<f64>,
    /// Trial k's secondary metrics are `raw[raw_end[k - 1]..raw_end[k]]`.
    raw: Vec<f64>,
    raw_end: Vec<usize>,
    /// Trial k's value of each of its cell's rates in B/s, in turn (none: its record has
    /// no such metric).
    rates: Vec<Option<f64>>,
}

impl<'a> Pass<'a> {
    /// `None` when no trial has any secondary metric, flag or source (nothing monitored,
    /// no telemetry, no flags: most stores).
    pub(super) fn new(t: &'a Trials, plan: &Plan) -> Option<Pass<'a>> {
        if t.secondary.is_empty()
            && t.flags.is_empty()
            && t.monitored.iter().all(|&m| t.names.get(m).is_empty())
        {
            return None;
        }
        let cells = t.cell_index(plan);
        let cell = |i: usize| -> Option<usize> {
            (t.status[i].is_measurement() && !t.warmup[i]).then(|| cells.get(t.cell[i])).flatten()
        };
        let batches = plan.cells.len().div_ceil(CELLS_AT_ONCE);
        let mut start = vec![0; batches + 1];
        for i in 0..t.len() {
            if let Some(c) = cell(i) {
                start[c / CELLS_AT_ONCE + 1] += 1;
            }
        }
        for b in 0..batches {
            start[b + 1] += start[b];
        }
        // then each trial in its place, in log order, with its shape and what its host
        // wrote itself earlier in the session (warm-ups and failures included: the log
        // holds a host's trials in the order they ran)
        let own_name = t.names.find(OWN_WRITTEN);
        // where each list of names has OWN_WRITTEN, by the list's number (numbered from 0)
        let mut own_at: Vec<Option<Option<usize>>> = Vec::new();
        let mut sums: Vec<f64> = Vec::new();
        let mut sum_of: HashMap<(Name, Name), usize> = HashMap::new();
        let mut last_sum: Option<((Name, Name), usize)> = None;
        let mut shapes: Vec<Shape<'a>> = Vec::new();
        let mut shape_of: HashMap<(usize, Name), usize> = HashMap::new();
        let mut last_shape: Option<((usize, Name), usize)> = None;
        let mut next = start.clone();
        let mut order = vec![(0, 0); start[batches]];
        let mut places = vec![0; start[batches]];
        let mut carried = if own_name.is_some() { vec![0.0; start[batches]] } else { Vec::new() };
        for i in 0..t.len() {
            let (names, raw) = t.secondary.of(i);
            let listed = t.secondary.shape_of(i);
            let earlier = own_name.map(|own| {
                if own_at.len() <= listed {
                    own_at.resize(listed + 1, None);
                }
                let at = *own_at[listed].get_or_insert_with(|| names.iter().position(|&n| n == own));
                let key = (t.host[i], t.session[i]);
                let k = match last_sum {
                    Some((k, s)) if k == key => s,
                    _ => {
                        let s = *sum_of.entry(key).or_insert_with(|| {
                            sums.push(0.0);
                            sums.len() - 1
                        });
                        last_sum = Some((key, s));
                        s
                    }
                };
                let earlier = sums[k];
                sums[k] += at.map_or(0.0, |j| raw[j]);
                earlier
            });
            let Some(c) = cell(i) else { continue };
            let b = c / CELLS_AT_ONCE;
            let key = (listed, t.monitored[i]);
            let s = match last_shape {
                Some((k, s)) if k == key => s,
                _ => {
                    let s = *shape_of.entry(key).or_insert_with(|| {
                        shapes.push(Shape::new(t, names, key.1));
                        shapes.len() - 1
                    });
                    last_shape = Some((key, s));
                    s
                }
            };
            order[next[b]] = (u32::try_from(i).ok()?, u32::try_from(s).ok()?);
            places[next[b]] = u8::try_from(c % CELLS_AT_ONCE).ok()?;
            if let Some(earlier) = earlier {
                carried[next[b]] = earlier;
            }
            next[b] += 1;
        }
        let flag = t.names.find(NOT_CONVERGED);
        let mut not_converged: Vec<usize> =
            t.flags.iter().filter(|(_, f)| Some(*f) == flag).map(|(i, _)| *i).collect();
        not_converged.sort_unstable();
        Some(Pass { t, shapes, order, places, start, carried, not_converged })
    }

    pub(super) fn batches(&self) -> usize {
        self.start.len() - 1
    }

    /// Batch `b`'s trials' figures. A batch's trials lie a few dozen apart in the log, so
    /// each figure is a cache miss; read in loops whose reads do not wait on one another,
    /// the processor has many of them under way at once, where in the loop that adds
    /// them up it had one or two.
    fn gather(&self, b: usize, rates: &[Vec<Name>]) -> Gathered {
        let t = self.t;
        let these = self.start[b]..self.start[b + 1];
        let (order, places) = (&self.order[these.clone()], &self.places[these]);
        let trial = |e: &(u32, u32)| e.0 as usize;
        let hosts = order.iter().map(|e| t.host[trial(e)]).collect();
        let walls = order.iter().map(|e| t.wall_time[trial(e)]).collect();
        let mut raw = Vec::new();
        let raw_end = order
            .iter()
            .map(|e| {
                raw.extend_from_slice(t.secondary.of(trial(e)).1);
                raw.len()
            })
            .collect();
        let first = b * CELLS_AT_ONCE;
        let mut values = Vec::new();
        if places.iter().any(|&p| !rates[first + usize::from(p)].is_empty()) {
            let rows: Vec<Range<usize>> = order.iter().map(|e| t.rows(trial(e))).collect();
            for (&p, rows) in places.iter().zip(rows) {
                for &metric in &rates[first + usize::from(p)] {
                    values.push(rows.clone().find(|&r| t.metric[r] == metric).map(|r| t.value[r]));
                }
            }
        }
        Gathered { hosts, walls, raw, raw_end, rates: values }
    }

    /// What the cells of batch `b` (of `cells` in all) added up to, in the order of
    /// their trials in the log, so that each sum is the one a list of its values would
    /// give, to the bit; `rates` are each cell's metrics in B/s (its groups'), for the
    /// page-cache check.
    pub(super) fn batch(&self, b: usize, cells: usize, rates: &[Vec<Name>]) -> Vec<CellAcc<'a>> {
        let first = b * CELLS_AT_ONCE;
        let mut acc: Vec<CellAcc<'a>> =
            (first..cells.min(first + CELLS_AT_ONCE)).map(|_| CellAcc::default()).collect();
        let g = self.gather(b, rates);
        let mut values: Vec<f64> = Vec::new();
        let mut next_rate = 0;
        let these = self.start[b]..self.start[b + 1];
        for (j, (&(i, s), &place)) in self.order[these.clone()].iter().zip(&self.places[these]).enumerate() {
            let (k, i, s, place) = (self.start[b] + j, i as usize, s as usize, usize::from(place));
            let (c, host, wall) = (first + place, g.hosts[j], g.walls[j]);
            let shape = &self.shapes[s];
            shape.values(&g.raw[if j == 0 { 0 } else { g.raw_end[j - 1] }..g.raw_end[j]], &mut values);
            let cell = &mut acc[place];
            cell.analysed += 1;
            cell.with += usize::from(!values.is_empty());
            cell.flagged += usize::from(self.not_converged.binary_search(&i).is_ok());
            let p = match cell.places.iter().position(|(shape, _)| *shape == s) {
                Some(p) => p,
                None => {
                    let mut place = Vec::with_capacity(shape.keys.len());
                    for &(k, _) in &shape.keys {
                        place.push(match cell.keys.iter().position(|(name, _)| *name == k) {
                            Some(p) => p,
                            None => {
                                cell.keys.push((k, Acc::EMPTY));
                                cell.keys.len() - 1
                            }
                        });
                        if let Some(domain) = k.strip_prefix("xl_cpu_seconds:")
                            && !cell.xl_domains.iter().any(|d| d == domain)
                        {
                            cell.xl_domains.push(domain.to_owned());
                        }
                    }
                    cell.places.push((s, place));
                    cell.places.len() - 1
                }
            };
            for (&p, &v) in cell.places[p].1.iter().zip(&values) {
                cell.keys[p].1.add(v);
            }
            if let Some(v) = shape.steal.map(|p| values[p]) {
                match cell.steal.iter_mut().find(|(h, ..)| *h == host) {
                    Some(entry) => *entry = (host, entry.1 + v, entry.2 + 1, entry.3.max(v)),
                    None => cell.steal.push((host, v, 1, v)),
                }
            }
            let these = &g.rates[next_rate..next_rate + rates[c].len()];
            next_rate += rates[c].len();
            if let Some(disk) = shape.disk.map(|p| values[p]) {
                cell.disk_host.get_or_insert(host);
                if cell.page.is_empty() {
                    cell.page = rates[c].iter().map(|&m| (m, Vec::new(), Vec::new(), 0)).collect();
                }
                for ((_, rates, written, absorbed), rate) in cell.page.iter_mut().zip(these) {
                    let Some(rate) = *rate else { continue };
                    let claimed = rate * wall;
                    rates.push(rate);
                    written.push(disk);
                    if disk < ABSORBED * claimed {
                        *absorbed += 1;
                    }
                }
            }
            if let Some(skew) = shape.skew.map(|p| values[p]) {
                cell.skews.push(skew);
                cell.walls.push(wall);
            }
            if !self.carried.is_empty()
                && let Some(own) = shape.own.map(|p| values[p])
            {
                cell.measured += 1;
                let devices = shape.devices.iter().map(|&(d, p)| (d, values[p]));
                cell.foreign.extend(foreign_write(
                    own,
                    shape.dirty.map(|p| values[p]),
                    devices,
                    self.carried[k],
                ));
            }
        }
        acc
    }
}

/// Each cell's metrics in B/s that its measurements (not warm-ups) report, in the order
/// of `metrics`: the metrics of its groups of values the page cache is checked for.
pub(super) fn rates(t: &Trials, plan: &Plan, metrics: &[MetricMeta]) -> Vec<Vec<Name>> {
    let mut rates: Vec<Vec<Name>> = vec![Vec::new(); plan.cells.len()];
    let bps: Vec<Name> = metrics
        .iter()
        .filter_map(|m| t.names.find(&m.name))
        .filter(|n| t.metrics.get(n).and_then(Option::as_ref).is_some_and(|i| i.unit == "B/s"))
        .collect();
    if bps.is_empty() {
        return rates;
    }
    // which of them each cell reports, by their place in `bps`, then in that order
    let mut reports = vec![false; plan.cells.len() * bps.len()];
    let cells = t.cell_index(plan);
    for i in 0..t.len() {
        if t.warmup[i] || !t.status[i].is_measurement() {
            continue;
        }
        let Some(cell) = cells.get(t.cell[i]) else { continue };
        for r in t.rows(i) {
            if let Some(k) = bps.iter().position(|&n| n == t.metric[r]) {
                reports[cell * bps.len() + k] = true;
            }
        }
    }
    for (cell, list) in rates.iter_mut().enumerate() {
        let of = &reports[cell * bps.len()..(cell + 1) * bps.len()];
        list.extend(bps.iter().zip(of).filter(|(_, r)| **r).map(|(&n, _)| n));
    }
    rates
}
