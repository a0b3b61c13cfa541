//! What the hosts did during the trials: the secondary metrics of telemetry per cell, where
//! the sides of a comparison differ in them, the tools' convergence flags, and the warnings
//! they prove (docs/design.md §8; docs/statistics.md, What the machine did).
//!
//! Secondary metrics never enter a verdict: a `metrics:` entry naming one makes it a main
//! metric as well, recorded with the trial's metrics by the run.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::ops::Range;

use rayon::prelude::*;

use super::analysed::Analysed;
use super::comparisons::Arms;
use super::lint;
use crate::plan::Plan;
use crate::spec::Experiment;
use crate::stats::elementary::mean;
use crate::store::{Name, Names, Snapshot, Trials};
use crate::summary::{
    CellTelemetry, ComparisonKey, ComparisonNotConverged, ComparisonStat, MetricMeta, SecondaryStat,
    TelemetryColumn, TelemetryDifference, TelemetrySummary, Warning, WarningKind,
};
use crate::vocab::{DIRTY_BEFORE, GANG_SKEW, NOT_CONVERGED, OWN_WRITTEN, member_metric};

/// The compact table's columns: name, unit, header, and the per-device prefix whose
/// busiest device gives the whole host's figure (`None`: the metric itself).
const COLUMNS: [(&str, &str, &str, Option<&str>); 11] = [
    ("cpu_user_pct", "%", "user", None),
    ("cpu_system_pct", "%", "system", None),
    ("cpu_iowait_pct", "%", "iowait", None),
    ("cpu_steal_pct", "%", "steal", None),
    ("cpu_idle_pct", "%", "idle", None),
    ("disk_read_bytes", "B", "disk read", Some("disk_read_bytes:")),
    ("disk_written_bytes", "B", "disk written", Some("disk_written_bytes:")),
    ("vm_pages_written", "", "pages written back", None),
    ("net_rx_bytes", "B", "net received", Some("net_rx_bytes:")),
    ("net_tx_bytes", "B", "net sent", Some("net_tx_bytes:")),
    (GANG_SKEW, "s", "start skew", None),
];

/// The `monitor:` source behind each per-device column: with it read, a trial whose
/// devices moved nothing moved 0 bytes (rather than "not measured").
fn source_of(column: &str) -> &'static str {
    if column.starts_with("disk_") { "disks" } else { "net" }
}

/// A write throughput's bytes over the trial are "absorbed" when the busiest disk wrote
/// less than this share of them.
const ABSORBED: f64 = 0.1;
/// Mean steal time over a host's trials from which a warning is given, in %.
const STEAL_PCT: f64 = 5.0;
/// A gang's mean start skew from which a warning is given, as a share of its trials' mean
/// wall time, is this share of the practical threshold. Members that share a resource
/// fully (each alone at its whole rate, n together at 1/n of it) and start `s` apart
/// each end `s` sooner than if they had started together (two members: a wall time of
/// `T` is `s` short), so a throughput — each member's and their sum — is overstated by
/// `s / T`; with more members by the order of that, at most their offsets from the first
/// summed over `T` (`skew_overstates_a_shared_throughput_by_its_share_of_the_wall_time`
/// simulates it). At half the threshold, the skew alone moves a change half the way to a
/// verdict.
const SKEW_OF_THRESHOLD: f64 = 0.5;
/// A disk's writes during a trial beyond what the experiment explains — the trial's own
/// writes, and the pages its host's earlier trials wrote that may still have been waiting
/// to be written back (at most the dirty pages when it began) — that show another process
/// wrote: more than the trial's own writes again (a journal that writes data twice,
/// `data=journal`, and the metadata of what the trial wrote stay within it) and more than
/// this many bytes (the system's own trickle of logs and metadata, margin's flush of the
/// raw output).
const FOREIGN_BYTES: f64 = 32.0 * 1024.0 * 1024.0;
/// Two sides differ in a percentage only by at least this many points.
const PCT_POINTS: f64 = 1.0;

// How the trials are looked at (`Pass`): the cells in batches of `CELLS_AT_ONCE`, on
// both cores, each batch's analysed trials in log order, each trial's values added to its
// cell's sums and counts (`CellAcc`) rather than kept. A batch's sums stay in the core's
// cache, and its trials' figures are first read from the columns in loops of their own
// (`Pass::gather`), so that many cache misses are under way at once. Taking a cell's
// trials one by one where they lay in the log (one in ten thousand, in a large store)
// waited on a cache miss for nearly every figure: most of a report's time on 10⁶ trials
// of default telemetry. The sums run in log order within each cell, as the lists of
// values did, so every figure is the same to the bit.

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
struct Acc {
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

    fn stat(&self) -> SecondaryStat {
        SecondaryStat {
            n: self.n,
            mean: self.sum / self.n as f64,
            min: self.min,
            max: self.max,
            differs: false,
        }
    }
}

/// Whether two sides differ in a secondary metric: their ranges over the trials do not
/// overlap, the means differ by more than the analysis threshold of the larger, and a
/// percentage by at least [`PCT_POINTS`] points. An explicit, descriptive rule, not a
/// test: these numbers enter no verdict.
fn differ(a: &SecondaryStat, b: &SecondaryStat, unit: &str, threshold: f64) -> bool {
    let apart = a.max < b.min || b.max < a.min;
    let larger = a.mean.abs().max(b.mean.abs());
    let gap = (a.mean - b.mean).abs();
    apart && gap > threshold * larger && (unit != "%" || gap >= PCT_POINTS)
}

/// What one cell's analysed trials added up to, in the pass over the log.
#[derive(Default)]
struct CellAcc<'a> {
    analysed: usize,
    /// Trials with any secondary metric, and those the tool said had not converged.
    with: usize,
    flagged: usize,
    /// Each secondary metric in the order first seen (its shape's order).
    keys: Vec<(&'a str, Acc)>,
    /// The shapes its trials had, each with its keys' places in `keys`.
    places: Vec<(usize, Vec<usize>)>,
    /// The Xen domains its trials name, in the order first seen.
    xl_domains: Vec<String>,
    /// Per host: the sum, count and largest of its trials' steal time.
    steal: Vec<(Name, f64, usize, f64)>,
    /// The host of the first trial with the disks' writes (`page_cache`), and for each of
    /// the cell's rates in B/s: the rates, the disks' writes and how many were absorbed.
    disk_host: Option<Name>,
    page: Vec<(Name, Vec<f64>, Vec<f64>, usize)>,
    /// A gang's start skews and its trials' wall times.
    skews: Vec<f64>,
    walls: Vec<f64>,
    /// Trials whose own writes were measured, and those a disk wrote far more in.
    measured: usize,
    foreign: Vec<ForeignWrite>,
}

/// What one cell adds to the summary and to the warnings.
#[derive(Default)]
struct CellPart {
    telemetry: Option<CellTelemetry>,
    /// The Xen domains its trials name, in the order first seen.
    xl_domains: Vec<String>,
    /// What the page cache took, each with the metric (a rate in B/s) it is of.
    page_cache: Vec<(Name, String)>,
    skew: Option<String>,
    foreign_writes: Option<String>,
    /// Per host: the sum, count and largest of its trials' steal time.
    steal: Vec<(Name, f64, usize, f64)>,
}

/// Cells looked at together in one walk over their trials: their sums stay in a core's
/// own cache (about a kilobyte a cell of default telemetry), where the whole store's
/// cells' sums, touched one trial at a time, made a cache miss of every figure added.
const CELLS_AT_ONCE: usize = 256;

/// The analysed trials of the current cells (measured, not warm-ups), put in order for
/// [`Pass::batch`]: by batch of [`CELLS_AT_ONCE`] cells, each batch's in log order; and
/// what each trial needs from the trials before it.
struct Pass<'a> {
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
    fn new(t: &'a Trials, plan: &Plan) -> Option<Pass<'a>> {
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

    fn batches(&self) -> usize {
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
    fn batch(&self, b: usize, cells: usize, rates: &[Vec<Name>]) -> Vec<CellAcc<'a>> {
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

/// What is looked at in every cell.
struct Context<'a> {
    exp: &'a Experiment,
    plan: &'a Plan,
    snapshot: &'a Snapshot,
    /// The share of the wall time a gang's start skew may be ([`SKEW_OF_THRESHOLD`]).
    skew_share: f64,
}

/// What the trials' telemetry added up to in each cell, read from the trial columns:
/// all the telemetry summary needs of them, so that they can be let go before the cells
/// are analysed ([`summarize`] finishes it). A cell's page-cache findings are of its
/// metrics in B/s; one of a metric the analysis then leaves out is dropped by
/// [`summarize`].
pub(crate) struct CellsTelemetry {
    parts: Vec<CellPart>,
    skew_share: f64,
}

/// Each cell's part of the telemetry summary, from the trial columns (see
/// [`CellsTelemetry`]); `metrics` in the order the analysis lists them.
pub(crate) fn cells(
    exp: &Experiment,
    plan: &Plan,
    snapshot: &Snapshot,
    metrics: &[MetricMeta],
    threshold: f64,
) -> CellsTelemetry {
    let t = &snapshot.trials;
    let skew_share = SKEW_OF_THRESHOLD * threshold;
    let Some(pass) = Pass::new(t, plan) else { return CellsTelemetry { parts: Vec::new(), skew_share } };
    let rates = rates(t, plan, metrics);
    let context = Context { exp, plan, snapshot, skew_share };
    let parts: Vec<CellPart> = (0..pass.batches())
        .into_par_iter()
        .map(|b| {
            let accs = pass.batch(b, plan.cells.len(), &rates);
            accs.into_iter()
                .enumerate()
                .map(|(k, acc)| cell_part(&context, b * CELLS_AT_ONCE + k, acc))
                .collect()
        })
        .collect::<Vec<Vec<CellPart>>>()
        .into_iter()
        .flatten()
        .collect();
    CellsTelemetry { parts, skew_share }
}

/// Each cell's metrics in B/s that its measurements (not warm-ups) report, in the order
/// of `metrics`: the metrics of its groups of values the page cache is checked for.
fn rates(t: &Trials, plan: &Plan, metrics: &[MetricMeta]) -> Vec<Vec<Name>> {
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

/// The telemetry section of the summary, and the warnings of what the machine did, from
/// each cell's part ([`cells`]), the analysed groups and the comparisons made of them.
/// `names` are the trial columns' names (kept when the columns are let go).
pub(crate) fn summarize(
    cells: CellsTelemetry,
    names: &Names,
    analysed: &[Analysed],
    comparisons: &[ComparisonStat],
    arms: &[Arms],
    threshold: f64,
) -> (TelemetrySummary, Vec<Warning>) {
    let CellsTelemetry { parts, skew_share } = cells;
    if parts.is_empty() {
        return Default::default();
    }
    // the page-cache findings of the groups analysed (a group the analysis left out is
    // in the warnings already, as not analysed)
    let kept: HashSet<(usize, Name)> = analysed.iter().map(|a| (a.group.cell, a.group.metric)).collect();
    let mut summary = TelemetrySummary::default();
    let mut xl_domains: Vec<String> = Vec::new();
    let mut index: HashMap<usize, usize> = HashMap::new();
    let (mut page, mut skews, mut foreign) = (Vec::new(), Vec::new(), Vec::new());
    let mut steal: BTreeMap<&str, (f64, usize, f64)> = BTreeMap::new();
    for (cell, part) in parts.into_iter().enumerate() {
        if let Some(telemetry) = part.telemetry {
            index.insert(cell, summary.cells.len());
            summary.cells.push(telemetry);
        }
        for domain in part.xl_domains {
            if !xl_domains.contains(&domain) {
                xl_domains.push(domain);
            }
        }
        page.extend(part.page_cache.into_iter().filter(|(m, _)| kept.contains(&(cell, *m))).map(|(_, f)| f));
        skews.extend(part.skew);
        foreign.extend(part.foreign_writes);
        for (host, sum, n, max) in part.steal {
            let entry = steal.entry(names.get(host)).or_insert((0.0, 0, 0.0));
            *entry = (entry.0 + sum, entry.1 + n, entry.2.max(max));
        }
    }
    for (name, unit, title, _) in COLUMNS {
        if summary.cells.iter().any(|c| c.values.contains_key(name)) {
            summary.columns.push(TelemetryColumn {
                name: name.into(),
                unit: unit.into(),
                title: title.into(),
            });
        }
    }
    for domain in xl_domains {
        summary.columns.push(TelemetryColumn {
            name: format!("xl_cpu_seconds:{domain}"),
            unit: "s".into(),
            title: format!("{domain} CPU"),
        });
    }
    sides(&mut summary, analysed, comparisons, arms, &index, threshold);
    let mut warnings = listed(
        WarningKind::PageCache,
        "the page cache absorbed the writes: the rate is the page cache's, not the disk's; use \
         conv=fdatasync or oflag=direct",
        &page,
    );
    warnings.extend(steal_warnings(steal));
    let head = format!(
        "a gang's members started far apart for the length of its trials, so they loaded the machine \
         together for less of each trial, and a throughput they share is overstated by up to the skew's \
         share of the wall time, here at least half the practical threshold ({:.1} %); make the trials \
         longer (more work per trial)",
        100.0 * skew_share
    );
    warnings.extend(listed(WarningKind::GangSkew, &head, &skews));
    warnings.extend(listed(
        WarningKind::ForeignWrites,
        "another process wrote to the disk during the trial: a disk wrote more than twice what the \
         trial's own commands wrote plus 32 MiB, beyond what the host's earlier trials may have left to \
         write back; what else wrote shared the disk with the measurement",
        &foreign,
    ));
    warnings.extend(not_converged(&summary));
    (summary, warnings)
}

/// One cell's telemetry, and what it warns of, from what its trials added up to.
fn cell_part(context: &Context<'_>, cell: usize, acc: CellAcc<'_>) -> CellPart {
    let mut part = CellPart::default();
    if acc.analysed == 0 {
        return part;
    }
    let plan = context.plan;
    let c = &plan.cells[cell];
    if acc.with > 0 || acc.flagged > 0 {
        let mut keys = acc.keys;
        keys.sort_by(|a, b| a.0.cmp(b.0));
        part.telemetry = Some(CellTelemetry {
            cell: c.id.to_string(),
            label: plan.label(c),
            levels: plan.levels(c).map(|(k, v)| (k.to_owned(), v.text.clone())).collect(),
            trials: acc.with,
            not_converged: acc.flagged,
            analysed: acc.analysed,
            values: keys.iter().map(|(k, a)| ((*k).to_owned(), a.stat())).collect(),
        });
    }
    part.xl_domains = acc.xl_domains;
    part.steal = acc.steal;
    part.page_cache = page_cache(context, cell, acc.disk_host, acc.page);
    part.skew = skew(context, cell, &acc.skews, &acc.walls);
    part.foreign_writes = foreign_writes(context, cell, acc.measured, acc.foreign);
    part
}

/// A comparison's sides whatever its metric: factor, baseline, level, the other levels.
type SidesKey<'a> = (&'a str, &'a str, &'a str, Vec<(&'a str, &'a str)>);

/// Where the sides of each comparison differ, and which comparisons rest on trials the
/// tool said had not converged.
fn sides(
    summary: &mut TelemetrySummary,
    analysed: &[Analysed],
    comparisons: &[ComparisonStat],
    arms: &[Arms],
    index: &HashMap<usize, usize>,
    threshold: f64,
) {
    let cells_of = |side: &[usize]| -> Vec<usize> {
        let mut v: Vec<usize> =
            side.iter().filter_map(|&a| index.get(&analysed[a].group.cell).copied()).collect();
        v.sort_unstable();
        v.dedup();
        v
    };
    // the comparisons of one pair of sides (one a metric) are looked at once; a set, as
    // a list searched for each was quadratic (minutes at 10⁴ cells)
    let mut seen: HashSet<SidesKey<'_>> = HashSet::new();
    for (c, arm) in comparisons.iter().zip(arms) {
        let (base, level) = (cells_of(&arm.baseline), cells_of(&arm.level));
        let flagged: usize = base.iter().chain(&level).map(|&i| summary.cells[i].not_converged).sum();
        if flagged > 0 {
            summary.not_converged.push(ComparisonNotConverged { of: ComparisonKey::of(c), trials: flagged });
        }
        let key = (
            c.factor.as_str(),
            c.baseline.as_str(),
            c.level.as_str(),
            c.context.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect(),
        );
        if base.is_empty() || level.is_empty() || !seen.insert(key) {
            continue;
        }
        for column in summary.columns.clone() {
            let pooled = |cells: &[usize]| -> Option<SecondaryStat> {
                let stats: Vec<&SecondaryStat> =
                    cells.iter().filter_map(|&i| summary.cells[i].values.get(&column.name)).collect();
                let n: usize = stats.iter().map(|s| s.n).sum();
                (n > 0).then(|| SecondaryStat {
                    n,
                    mean: stats.iter().map(|s| s.mean * s.n as f64).sum::<f64>() / n as f64,
                    min: stats.iter().map(|s| s.min).fold(f64::INFINITY, f64::min),
                    max: stats.iter().map(|s| s.max).fold(f64::NEG_INFINITY, f64::max),
                    differs: false,
                })
            };
            let (Some(b), Some(l)) = (pooled(&base), pooled(&level)) else { continue };
            if !differ(&b, &l, &column.unit, threshold) {
                continue;
            }
            for &i in base.iter().chain(&level) {
                if let Some(s) = summary.cells[i].values.get_mut(&column.name) {
                    s.differs = true;
                }
            }
            summary.differences.push(TelemetryDifference {
                of: ComparisonKey { metric: column.name.clone(), ..ComparisonKey::of(c) },
                unit: column.unit.clone(),
                baseline_mean: b.mean,
                level_mean: l.mean,
            });
        }
    }
}

/// "dd reported 2.5 GB/s but the disks wrote 0 B during its trials: the page cache
/// absorbed it". The rule: a metric in B/s that is a write throughput — its name says
/// `write`, or the cell's command is a dd writing to a file — times the trial's wall time
/// is what the tool claims to have written; when the busiest disk wrote less than a tenth
/// of that in at least half of a cell's trials with disk telemetry, the page cache took
/// it. (Wall time ≥ the tool's own time, so the claim is if anything overstated, never
/// the disk's share; writeback of earlier trials during this one only hides the warning.)
/// One cell's findings; its command is rendered only for a rate the disks did not match.
fn page_cache(
    context: &Context<'_>,
    cell: usize,
    host: Option<Name>,
    rates: Vec<(Name, Vec<f64>, Vec<f64>, usize)>,
) -> Vec<(Name, String)> {
    let (t, plan) = (&context.snapshot.trials, context.plan);
    let Some(host) = host else { return Vec::new() };
    let mut dd_writes: Option<bool> = None;
    let mut found = Vec::new();
    for (name, mut rates, mut written, absorbed) in rates {
        let metric = t.names.get(name);
        let unit = "B/s";
        if rates.is_empty() || 2 * absorbed < rates.len() {
            continue;
        }
        let dd_writes = *dd_writes.get_or_insert_with(|| {
            let host = t.names.get(host);
            lint::rendered_run(context.exp, plan, cell, host).is_some_and(|run| lint::dd_writes_file(&run))
        });
        if !dd_writes && !metric.to_lowercase().contains("write") {
            continue;
        }
        let tool = if dd_writes { "dd" } else { metric };
        found.push((
            name,
            format!(
                "{}: {tool} reported {} but the disks wrote {} during the trial (median; in {absorbed} of {} \
             trials less than a tenth of what the rate implies)",
                plan.label(&plan.cells[cell]),
                human(median(&mut rates), unit),
                human(median(&mut written), "B"),
                rates.len()
            ),
        ));
    }
    found
}

/// One warning of `kind` naming what was `found` after `head`; none when nothing was.
fn listed(kind: WarningKind, head: &str, found: &[String]) -> Vec<Warning> {
    match found.is_empty() {
        true => Vec::new(),
        false => vec![Warning::new(kind, format!("{head}: {}", lint::list(found)))],
    }
}

/// "steal time was 12 % during the domu trials: other guests had the CPU", from each
/// host's sum, count and largest steal time over its trials.
fn steal_warnings(hosts: BTreeMap<&str, (f64, usize, f64)>) -> Vec<Warning> {
    hosts
        .into_iter()
        .filter_map(|(host, (sum, n, max))| {
            let mean = sum / n as f64;
            (mean >= STEAL_PCT).then(|| {
                Warning::new(
                    WarningKind::Steal,
                    format!(
                        "steal time was {mean:.0} % during the {host} trials (mean of {n} trials, at most {max:.0} %): \
                         other guests had the CPU"
                    ),
                )
            })
        })
        .collect()
}

/// "gang both (the members started 40 ms apart on average, 12 % of its trials' 0.33 s)":
/// the members overlapped for less of the trial than a simultaneous load means; the
/// context's `skew_share` of the wall time is the most a skew may be
/// ([`SKEW_OF_THRESHOLD`]).
fn skew(context: &Context<'_>, cell: usize, skews: &[f64], walls: &[f64]) -> Option<String> {
    if skews.is_empty() {
        return None;
    }
    let (skew, wall) = (mean(skews), mean(walls));
    (wall > 0.0 && skew > 0.0 && skew >= context.skew_share * wall).then(|| {
        format!(
            "{} (the members started {} apart on average, {:.0} % of its trials' mean {}, over {} trials)",
            context.plan.label(&context.plan.cells[cell]),
            seconds(skew),
            100.0 * skew / wall,
            seconds(wall),
            skews.len()
        )
    })
}

/// A trial's busiest disk, what it wrote and what the trial wrote itself (bytes).
type ForeignWrite = (String, f64, f64);

/// The busiest disk of a trial (of its `devices`: each one's bytes written) and what it
/// wrote, when that is clearly more than the experiment explains ([`FOREIGN_BYTES`]);
/// `own` is what the trial wrote itself, `dirty` the dirty pages when it began, `carried`
/// what the host's earlier trials of the session wrote themselves. Only for trials where
/// margin measured the trial's own writes (a local host: over ssh the rusage is the ssh
/// client's, and a gang's members write at once by design).
fn foreign_write<'a>(
    own: f64,
    dirty: Option<f64>,
    devices: impl Iterator<Item = (&'a str, f64)>,
    carried: f64,
) -> Option<ForeignWrite> {
    let dirty = dirty?;
    let (device, written) = devices.max_by(|a, b| a.1.total_cmp(&b.1))?;
    let unexplained = written - own - dirty.min(carried);
    (unexplained > FOREIGN_BYTES.max(own)).then(|| (device.to_string(), written, own))
}

/// "another process wrote to the disk under test during the trial": in one cell, the
/// trials whose busiest disk wrote clearly more than the experiment explains, of the
/// `measured` whose own writes were.
fn foreign_writes(
    context: &Context<'_>,
    cell: usize,
    measured: usize,
    mut hits: Vec<ForeignWrite>,
) -> Option<String> {
    if hits.is_empty() {
        return None;
    }
    hits.sort_by(|a, b| a.1.total_cmp(&b.1));
    let (device, written, own) = hits[hits.len() / 2].clone();
    Some(format!(
        "{} ({device} wrote {} while the trial's own commands wrote {}, the median of the {} of {measured} \
         trials it happened in)",
        context.plan.label(&context.plan.cells[cell]),
        human(written, "B"),
        human(own, "B"),
        hits.len()
    ))
}

/// "3.2 ms", "1.50 s".
fn seconds(s: f64) -> String {
    if s < 1.0 { format!("{:.1} ms", s * 1e3) } else { format!("{s:.2} s") }
}

fn not_converged(summary: &TelemetrySummary) -> Vec<Warning> {
    let cells: Vec<String> = summary
        .cells
        .iter()
        .filter(|c| c.not_converged > 0)
        .map(|c| format!("{} ({} of {} trials)", c.label, c.not_converged, c.analysed))
        .collect();
    listed(
        WarningKind::NotConverged,
        "measurement not converged: the tool said its result had not settled (fio's steady state not \
         attained, netperf's confidence not achieved); the verdicts on these cells rest on it",
        &cells,
    )
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    if n % 2 == 1 { values[n / 2] } else { (values[n / 2 - 1] + values[n / 2]) / 2.0 }
}

/// `2.5 GB/s`, `0 B`, `12.3 MB`: decimal prefixes, three significant digits.
fn human(value: f64, unit: &str) -> String {
    let prefixes = ["", "k", "M", "G", "T", "P"];
    let mut v = value;
    let mut p = 0;
    while v.abs() >= 1000.0 && p + 1 < prefixes.len() {
        v /= 1000.0;
        p += 1;
    }
    if v == 0.0 {
        return format!("0 {unit}");
    }
    let digits = (2 - v.abs().log10().floor() as i32).clamp(0, 2) as usize;
    format!("{v:.digits$} {}{unit}", prefixes[p])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyze::{MemoryStore, summarize_owned, summarize_store};
    use crate::store::{Telemetry, Trials};
    use crate::summary::Summary;
    use crate::vocab::{Better, MeanKind};

    /// The store's records given telemetry (and flags) after the fact, as a run records
    /// them, and the summary of it: the same, to the byte, as a report's, which lets go of
    /// the trial columns before the comparisons (`summarize_owned`).
    fn observed(m: &mut MemoryStore, each: impl Fn(usize, &mut crate::store::TrialRecord)) -> Summary {
        for (i, r) in m.records.iter_mut().enumerate() {
            each(i, r);
        }
        m.snapshot.trials = Trials::from_records(&m.records);
        let summary = summarize_store(&m.exp, &m.plan, &m.snapshot, &[]).unwrap();
        let ((), owned) = summarize_owned(&m.exp, &m.plan, m.snapshot.clone(), |_| ());
        let json = |s: &Summary| serde_json::to_string(s).unwrap();
        assert_eq!(json(&owned.unwrap()), json(&summary), "the report's path gives the same summary");
        summary
    }

    fn telemetry(sources: &[&str], metrics: &[(&str, f64)]) -> Option<Telemetry> {
        Some(Telemetry {
            sources: sources.iter().map(|s| s.to_string()).collect(),
            metrics: metrics.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
            raw: None,
            offset: None,
        })
    }

    const DD: &str = "matrix:\n  sync: [none, direct]\nrun: dd if=/dev/zero of=f bs=1M count=2500 {% if sync == 'direct' %}oflag=direct{% endif %}\nparse: dd\nanalysis:\n  compare:\n    - factor: sync\n      baseline: direct\n";

    fn dd_store() -> MemoryStore {
        let mut m = MemoryStore::new("dd.yaml", DD);
        m.metric("throughput", "B/s", Better::Higher, MeanKind::Harmonic).session("s1", "local", &[]);
        for v in [2.5e9, 2.4e9, 2.6e9] {
            m.trial(&[("sync", "none")], &[("throughput", v)]);
        }
        for v in [1.0e8, 1.1e8, 0.9e8] {
            m.trial(&[("sync", "direct")], &[("throughput", v)]);
        }
        m
    }

    /// Seed 002's mistake proven: dd claims 2.5 GB over the trial's second, the disks
    /// wrote nothing; the direct dd's disk wrote what it claimed, and is not named.
    #[test]
    fn the_page_cache_warning_compares_the_claim_with_the_disks() {
        let mut m = dd_store();
        let summary = observed(&mut m, |i, r| {
            let written = if i < 3 { 0.0 } else { r.metrics["throughput"] * r.wall_time };
            let mut metrics = vec![("cpu_user_pct", 10.0 + i as f64), ("cpu_steal_pct", 0.0)];
            if written > 0.0 {
                metrics.push(("disk_written_bytes:vda", written));
                metrics.push(("disk_written_bytes:vda1", written));
            }
            r.telemetry = telemetry(&["cpu", "disks"], &metrics);
        });
        let w: Vec<&Warning> = summary.warnings.iter().filter(|w| w.kind == WarningKind::PageCache).collect();
        assert_eq!(w.len(), 1, "{:?}", summary.warnings);
        assert!(
            w[0].message
                .contains("sync=none: dd reported 2.50 GB/s but the disks wrote 0 B during the trial"),
            "{}",
            w[0].message
        );
        assert!(!w[0].message.contains("sync=direct"), "{}", w[0].message);
        // the busiest device, not the sum of a disk and its partition
        let direct = summary.telemetry.cells.iter().find(|c| c.label == "sync=direct").unwrap();
        let mean = (1.0e8 + 1.1e8 + 0.9e8) / 3.0;
        assert!((direct.values["disk_written_bytes"].mean - mean).abs() < 1e-3);
        assert_eq!(direct.values["cpu_user_pct"].mean, 14.0, "mean of 13, 14, 15");
        // the two sides differ in what the disks wrote: marked, and listed once
        assert!(direct.values["disk_written_bytes"].differs);
        let d: Vec<&TelemetryDifference> =
            summary.telemetry.differences.iter().filter(|d| d.of.metric == "disk_written_bytes").collect();
        assert_eq!(d.len(), 1, "{:?}", summary.telemetry.differences);
        assert_eq!(
            (d[0].of.baseline.as_str(), d[0].of.level.as_str(), d[0].level_mean),
            ("direct", "none", 0.0)
        );
        // never a main metric, so never a verdict
        assert!(summary.comparisons.iter().all(|c| c.metric == "throughput"));
    }

    /// The page cache is looked at in the trial columns before the analysis (they are let
    /// go before the comparisons): a cell whose rate the analysis then leaves out (a
    /// harmonic mean of a zero) is warned of as not analysed, and not for the page cache.
    #[test]
    fn a_rate_the_analysis_leaves_out_is_not_warned_of_for_the_page_cache() {
        let mut m = dd_store();
        let summary = observed(&mut m, |i, r| {
            if i == 0 {
                r.metrics.insert("throughput".into(), 0.0);
            }
            let written = if i < 3 { 0.0 } else { r.metrics["throughput"] * r.wall_time };
            let mut metrics = vec![("cpu_user_pct", 10.0)];
            if written > 0.0 {
                metrics.push(("disk_written_bytes:vda", written));
            }
            r.telemetry = telemetry(&["cpu", "disks"], &metrics);
        });
        let kinds: Vec<WarningKind> = summary.warnings.iter().map(|w| w.kind).collect();
        assert!(kinds.contains(&WarningKind::NotAnalysed), "{:?}", summary.warnings);
        assert!(!kinds.contains(&WarningKind::PageCache), "{:?}", summary.warnings);
        // and the same store with the rate analysed is warned of
        let mut m = dd_store();
        let summary = observed(&mut m, |i, r| {
            let written = if i < 3 { 0.0 } else { r.metrics["throughput"] * r.wall_time };
            let mut metrics = vec![("cpu_user_pct", 10.0)];
            if written > 0.0 {
                metrics.push(("disk_written_bytes:vda", written));
            }
            r.telemetry = telemetry(&["cpu", "disks"], &metrics);
        });
        assert!(summary.warnings.iter().any(|w| w.kind == WarningKind::PageCache), "{:?}", summary.warnings);
    }

    /// Six hundred and twenty-five cells (three batches of [`CELLS_AT_ONCE`]) whose trials
    /// lie in rounds, on two hosts in three sessions, with telemetry of varying names and
    /// warm-ups between them: each cell's figures are what its own trials' give, summed in
    /// log order (to the bit), and what a host wrote earlier in a session counts across
    /// cells and batches, warm-ups included (two trials a disk wrote just more than that
    /// and 32 MiB beside are named; two just less are not).
    #[test]
    fn a_store_of_many_cells_is_summed_as_each_cells_own_trials_give() {
        use std::cell::RefCell;
        const MIB: f64 = 1024.0 * 1024.0;
        let levels: Vec<String> = (0..25).map(|i| i.to_string()).collect();
        let yaml = format!("matrix:\n  a: [{0}]\n  b: [{0}]\nrun: \"true\"\n", levels.join(", "));
        let mut m = MemoryStore::new("many.yaml", &yaml);
        m.metric("throughput", "B/s", Better::Higher, MeanKind::Arithmetic).session("s1", "h1", &[]);
        let mut x: u64 = 0x2545_f491_4f6c_dd1d;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut cells: Vec<(usize, usize)> = (0..25).flat_map(|a| (0..25).map(move |b| (a, b))).collect();
        for _ in 0..4 {
            for k in (1..cells.len()).rev() {
                cells.swap(k, next() as usize % (k + 1));
            }
            for &(a, b) in &cells {
                let (a, b) = (levels[a].as_str(), levels[b].as_str());
                m.trial(&[("a", a), ("b", b)], &[("throughput", 1e6 * (1 + next() % 1000) as f64)]);
            }
        }
        let (labels_near, n) = (["a=0 b=1", "a=11 b=3", "a=17 b=20", "a=24 b=24"], m.records.len());
        let near: Vec<String> = labels_near.iter().map(|l| l.replace(' ', ", ")).collect();
        let label = |r: &crate::store::TrialRecord| format!("a={}, b={}", r.levels["a"], r.levels["b"]);
        let randoms: Vec<u64> = (0..n).map(|_| next()).collect();
        let written: RefCell<HashMap<(String, String), f64>> = RefCell::default();
        let summary = observed(&mut m, |i, r| {
            let z = randoms[i];
            let (host, session) = [("h1", "s1"), ("h2", "s2"), ("h1", "s3")][(z % 3) as usize];
            (r.host, r.session) = (host.to_owned(), session.to_owned());
            r.warmup = i % 17 == 5;
            let own = ((z >> 8) % 4) as f64 * MIB;
            let mut metrics = vec![("cpu_user_pct", ((z >> 16) % 10_000) as f64 / 7.0)];
            if !z.is_multiple_of(5) {
                metrics.push(("cpu_steal_pct", ((z >> 24) % 20) as f64));
            }
            let mut earlier = written.borrow_mut();
            let carried = earlier.entry((host.to_owned(), session.to_owned())).or_default();
            // the last trial of each named cell: just over or under what explains it
            let last = !r.warmup && near.contains(&label(r)) && r.repetition == 4;
            let disk = if last {
                let over = if ["a=0, b=1", "a=17, b=20"].contains(&label(r).as_str()) { 0.5 } else { -0.5 };
                own + *carried + 32.0 * MIB + over * MIB
            } else {
                ((z >> 32) % 8) as f64 * MIB
            };
            if !z.is_multiple_of(7) || last {
                metrics.push(("disk_written_bytes:vda", disk));
            }
            if !z.is_multiple_of(4) || last {
                metrics.push((OWN_WRITTEN, own));
                metrics.push((DIRTY_BEFORE, 1e15));
            }
            *carried += if !z.is_multiple_of(4) || last { own } else { 0.0 };
            r.telemetry = telemetry(&["cpu", "disks"], &metrics);
        });
        assert!(m.plan.cells.len() > 2 * CELLS_AT_ONCE);

        // each cell's own trials, in log order
        let mut of_cell: HashMap<String, Vec<&crate::store::TrialRecord>> = HashMap::new();
        for r in m.records.iter().filter(|r| !r.warmup) {
            of_cell.entry(label(r).replace(", ", " ")).or_default().push(r);
        }
        assert_eq!(summary.telemetry.cells.len(), m.plan.cells.len());
        for cell in &summary.telemetry.cells {
            let trials = &of_cell[&cell.label];
            assert_eq!((cell.analysed, cell.trials), (trials.len(), trials.len()), "{}", cell.label);
            let figure = |name: &str| -> Vec<f64> {
                trials
                    .iter()
                    .filter_map(|r| {
                        let t = &r.telemetry.as_ref().unwrap().metrics;
                        match name {
                            "disk_written_bytes" => Some(
                                t.iter()
                                    .filter(|(k, _)| k.starts_with("disk_written_bytes:"))
                                    .map(|(_, v)| *v)
                                    .fold(0.0, f64::max),
                            ),
                            _ => t.get(name).copied(),
                        }
                    })
                    .collect()
            };
            for name in ["cpu_user_pct", "cpu_steal_pct", "disk_written_bytes", OWN_WRITTEN] {
                let values = figure(name);
                let Some(got) = cell.values.get(name) else {
                    assert!(values.is_empty(), "{} {name}", cell.label);
                    continue;
                };
                let want = stat(&values);
                assert_eq!(
                    (got.n, got.mean.to_bits(), got.min.to_bits(), got.max.to_bits()),
                    (want.n, want.mean.to_bits(), want.min.to_bits(), want.max.to_bits()),
                    "{} {name}",
                    cell.label
                );
            }
        }
        let foreign = messages(&summary, WarningKind::ForeignWrites);
        assert_eq!(foreign.len(), 1, "{:?}", summary.warnings);
        let named: Vec<&str> =
            labels_near.into_iter().filter(|l| foreign[0].contains(&format!("{l} ("))).collect();
        assert_eq!(named, ["a=0 b=1", "a=17 b=20"], "{}", foreign[0]);
    }

    /// The messages of the summary's warnings of one kind.
    fn messages(summary: &Summary, kind: WarningKind) -> Vec<&str> {
        summary.warnings.iter().filter(|w| w.kind == kind).map(|w| w.message.as_str()).collect()
    }

    /// The figures of a list of values, as the pass's sums must give them.
    fn stat(values: &[f64]) -> SecondaryStat {
        SecondaryStat {
            n: values.len(),
            mean: values.iter().sum::<f64>() / values.len() as f64,
            min: values.iter().copied().fold(f64::INFINITY, f64::min),
            max: values.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            differs: false,
        }
    }

    /// Without disk telemetry nothing is claimed: no snapshot is no proof.
    #[test]
    fn no_disk_telemetry_no_page_cache_warning() {
        let mut m = dd_store();
        let summary = observed(&mut m, |_, r| r.telemetry = telemetry(&["cpu"], &[("cpu_user_pct", 5.0)]));
        assert!(summary.warnings.iter().all(|w| w.kind != WarningKind::PageCache), "{:?}", summary.warnings);
    }

    #[test]
    fn steal_is_warned_about_per_host_from_five_percent() {
        let yaml = "hosts:\n  domu: {}\n  dom0: {}\nmatrix:\n  host: [domu, dom0]\nrun: \"true\"\n";
        let mut m = MemoryStore::new("s.yaml", yaml);
        m.session("s1", "domu", &[]);
        for _ in 0..3 {
            m.trial(&[("host", "domu")], &[("wall_time", 1.0)]);
        }
        m.session("s2", "dom0", &[]);
        for _ in 0..3 {
            m.trial(&[("host", "dom0")], &[("wall_time", 1.0)]);
        }
        let summary = observed(&mut m, |i, r| {
            let steal = if i < 3 { [10.0, 12.0, 14.0][i] } else { 4.9 };
            r.telemetry = telemetry(&["cpu"], &[("cpu_steal_pct", steal)]);
        });
        let w = messages(&summary, WarningKind::Steal);
        assert_eq!(
            w,
            [
                "steal time was 12 % during the domu trials (mean of 3 trials, at most 14 %): other guests had the CPU"
            ]
        );
    }

    /// A tool's own "not converged" reaches the cell and the comparisons it is in.
    #[test]
    fn not_converged_trials_mark_their_cell_and_comparisons() {
        let mut m = dd_store();
        let summary = observed(&mut m, |i, r| {
            if i == 4 {
                r.flags = vec![NOT_CONVERGED.to_string()];
            }
        });
        let cell = summary.telemetry.cells.iter().find(|c| c.not_converged > 0).unwrap();
        assert_eq!(
            (cell.label.as_str(), cell.not_converged, cell.analysed, cell.trials),
            ("sync=direct", 1, 3, 0)
        );
        assert_eq!(summary.telemetry.not_converged.len(), 1);
        assert_eq!(summary.telemetry.not_converged[0].of.metric, "throughput");
        let w = summary.warnings.iter().find(|w| w.kind == WarningKind::NotConverged).unwrap();
        assert!(w.message.contains("sync=direct (1 of 3 trials)"), "{}", w.message);
    }

    #[test]
    fn human_numbers() {
        assert_eq!(human(2.5e9, "B/s"), "2.50 GB/s");
        assert_eq!(human(0.0, "B"), "0 B");
        assert_eq!(human(104_857_600.0, "B"), "105 MB");
        assert_eq!(human(512.0, "B"), "512 B");
    }

    #[test]
    fn sides_differ_only_apart_and_beyond_the_threshold() {
        let s = |min: f64, mean: f64, max: f64| SecondaryStat { n: 3, mean, min, max, differs: false };
        assert!(differ(&s(10.0, 12.0, 14.0), &s(0.0, 0.5, 1.0), "%", 0.05));
        assert!(!differ(&s(10.0, 12.0, 14.0), &s(13.0, 15.0, 17.0), "%", 0.05), "ranges overlap");
        assert!(!differ(&s(0.1, 0.2, 0.3), &s(0.5, 0.6, 0.7), "%", 0.05), "less than a point");
        assert!(differ(&s(0.1, 0.2, 0.3), &s(0.5, 0.6, 0.7), "B", 0.05));
        assert!(!differ(&s(100.0, 100.0, 100.0), &s(101.0, 101.0, 101.0), "B", 0.05), "1 % apart");
    }

    /// The rule of `foreign_writes` on figures worked out by hand: 32 MiB, or the trial's
    /// own bytes again, beyond its own bytes and what earlier trials may have left dirty.
    #[test]
    fn foreign_writes_need_clearly_more_than_the_experiment_explains() {
        const MIB: f64 = 1024.0 * 1024.0;
        // a trial's figures by name, as its record has them, read as the pass reads them
        let foreign_write = |values: &Vec<(&str, f64)>, carried: f64| {
            let get = |name: &str| values.iter().find(|(k, _)| *k == name).map(|&(_, v)| v);
            let devices =
                values.iter().filter_map(|&(k, v)| Some((k.strip_prefix("disk_written_bytes:")?, v)));
            super::foreign_write(get(OWN_WRITTEN)?, get(DIRTY_BEFORE), devices, carried)
        };
        let values = |own: f64, dirty: f64, disk: f64| {
            vec![
                (OWN_WRITTEN, own),
                (DIRTY_BEFORE, dirty),
                ("disk_written_bytes:sda", disk),
                ("disk_written_bytes:sdb", 1.0),
            ]
        };
        // 1 MiB of its own: the disk must write more than 1 + 32 MiB
        assert!(foreign_write(&values(MIB, 0.0, 33.0 * MIB), 0.0).is_none());
        let hit = foreign_write(&values(MIB, 0.0, 34.0 * MIB), 0.0).unwrap();
        assert_eq!((hit.0.as_str(), hit.1, hit.2), ("sda", 34.0 * MIB, MIB));
        // 256 MiB of its own: more than twice that (a journal of the data), whatever the floor
        assert!(foreign_write(&values(256.0 * MIB, 0.0, 511.0 * MIB), 0.0).is_none());
        assert!(foreign_write(&values(256.0 * MIB, 0.0, 513.0 * MIB), 0.0).is_some());
        // an earlier trial's 256 MiB written back now: explained up to the dirty pages
        assert!(foreign_write(&values(MIB, 300.0 * MIB, 280.0 * MIB), 256.0 * MIB).is_none());
        assert!(foreign_write(&values(MIB, 100.0 * MIB, 280.0 * MIB), 256.0 * MIB).is_some());
        // dirty pages nobody of the experiment wrote explain nothing
        assert!(foreign_write(&values(MIB, 2000.0 * MIB, 280.0 * MIB), 0.0).is_some());
        // not measured (a remote host, a gang): nothing said
        let mut remote = values(MIB, 0.0, 900.0 * MIB);
        remote.retain(|(k, _)| *k != OWN_WRITTEN);
        assert!(foreign_write(&remote, 0.0).is_none());
    }

    /// The claim behind [`SKEW_OF_THRESHOLD`], by simulation: members that share a resource
    /// (alone at rate 1, k at once at 1/k each), each with the same work, started at the
    /// given offsets; every member's throughput, and so their sum, is overstated against a
    /// common start by the skew over the wall time — exactly for two members.
    #[test]
    fn skew_overstates_a_shared_throughput_by_its_share_of_the_wall_time() {
        // event by event: at each step the running members share the rate equally
        fn finish(starts: &[f64], work: f64) -> Vec<f64> {
            let n = starts.len();
            let (mut left, mut end) = (vec![work; n], vec![f64::NAN; n]);
            let mut now = 0.0;
            while end.iter().any(|e| e.is_nan()) {
                let running: Vec<usize> = (0..n).filter(|&i| end[i].is_nan() && starts[i] <= now).collect();
                let next_start = starts.iter().copied().filter(|&s| s > now).fold(f64::INFINITY, f64::min);
                let rate = 1.0 / running.len().max(1) as f64;
                let first_done = running.iter().map(|&i| left[i] / rate).fold(f64::INFINITY, f64::min);
                let step = first_done.min(next_start - now);
                for &i in &running {
                    left[i] -= rate * step;
                    if left[i] <= 1e-12 {
                        end[i] = now + step;
                    }
                }
                now += step;
            }
            (0..n).map(|i| end[i] - starts[i]).collect()
        }
        let work = 10.0;
        let together: f64 = finish(&[0.0, 0.0], work).iter().map(|t| work / t).sum();
        for s in [0.05, 0.2, 0.5, 1.0] {
            let walls = finish(&[0.0, s], work);
            let sum: f64 = walls.iter().map(|t| work / t).sum();
            let wall = walls.iter().copied().fold(0.0, f64::max);
            let overstated = sum / together - 1.0;
            assert!((overstated - s / wall).abs() < 1e-9, "skew {s}: {overstated} vs {}", s / wall);
        }
        // three members: of the order of s / T, at most the members' offsets summed over T
        let together: f64 = finish(&[0.0, 0.0, 0.0], work).iter().map(|t| work / t).sum();
        for starts in [[0.0, 0.1, 0.2], [0.0, 0.2, 0.2], [0.0, 0.0, 0.2]] {
            let walls = finish(&starts, work);
            let sum: f64 = walls.iter().map(|t| work / t).sum();
            let wall = walls.iter().copied().fold(0.0, f64::max);
            let overstated = sum / together - 1.0;
            assert!(
                overstated > 0.5 * 0.2 / wall && overstated <= starts.iter().sum::<f64>() / wall + 1e-9,
                "{starts:?}"
            );
        }
    }

    /// The skew warning from half the practical threshold of the wall time: at 5 %, a
    /// mean skew of 2.5 % of the wall time warns, 2.4 % does not.
    #[test]
    fn gang_skew_is_warned_about_from_half_the_threshold() {
        let yaml = "hosts:\n  a: {}\n  b: {}\ngangs:\n  g:\n    hosts: [a, b]\nmatrix:\n  host: [g]\nrun: \"true\"\nanalysis: { threshold: 5% }\n";
        for (skew, warned) in [(0.025, true), (0.024, false)] {
            let mut m = MemoryStore::new("g.yaml", yaml);
            m.session("s1", "g", &[]);
            for _ in 0..3 {
                m.trial(&[("host", "g")], &[("wall_time", 1.0)]);
            }
            let summary = observed(&mut m, |_, r| {
                r.wall_time = 1.0;
                r.telemetry = telemetry(&[], &[(GANG_SKEW, skew)]);
            });
            let w: Vec<&Warning> =
                summary.warnings.iter().filter(|w| w.kind == WarningKind::GangSkew).collect();
            assert_eq!(w.len(), usize::from(warned), "skew {skew}: {w:?}");
            if warned {
                assert!(
                    w[0].message.contains("(2.5 %)")
                        && w[0].message.contains("host=g (the members started 25.0 ms apart"),
                    "{}",
                    w[0].message
                );
            }
        }
    }
}
