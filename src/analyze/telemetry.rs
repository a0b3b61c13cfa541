//! What the hosts did during the trials: the secondary metrics of telemetry per cell, where
//! the sides of a comparison differ in them, the tools' convergence flags, and the warnings
//! they prove (docs/design.md §8; docs/statistics.md, What the machine did).
//!
//! Secondary metrics never enter a verdict: a `metrics:` entry naming one makes it a main
//! metric as well, recorded with the trial's metrics by the run.

use std::collections::{BTreeMap, HashMap, HashSet};

use rayon::prelude::*;

use super::analysed::Analysed;
use super::comparisons::Arms;
use super::lint;
use crate::plan::Plan;
use crate::spec::Experiment;
use crate::stats::elementary::mean;
use crate::store::{Name, Snapshot, Trials};
use crate::summary::{
    CellTelemetry, ComparisonKey, ComparisonNotConverged, ComparisonStat, SecondaryStat, TelemetryColumn,
    TelemetryDifference, TelemetrySummary, Warning, WarningKind,
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

/// One analysed trial's secondary metrics, the whole-host columns included.
struct TrialValues<'a> {
    trial: usize,
    /// Its [`Shape`] among its cell's.
    shape: usize,
    values: Values<'a>,
    not_converged: bool,
}

/// A trial's secondary metrics by name, the names borrowed from the trials' own: a
/// handful a trial, so a list searched in order, rather than a hash map of owned names
/// (which cost 700 bytes a trial of default telemetry, and most of the time of this
/// module, for every trial of a large store).
#[derive(Default)]
struct Values<'a>(Vec<(&'a str, f64)>);

impl<'a> Values<'a> {
    fn get(&self, name: &str) -> Option<f64> {
        self.0.iter().find(|(k, _)| *k == name).map(|&(_, v)| v)
    }
    fn contains_key(&self, name: &str) -> bool {
        self.0.iter().any(|(k, _)| *k == name)
    }
    fn iter(&self) -> impl Iterator<Item = (&'a str, f64)> + '_ {
        self.0.iter().copied()
    }
    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// Where each cell's analysed trials (ok, not warm-ups, of current cells) and each
/// trial's secondary metrics are in the trial columns, found in one pass over the log:
/// a cell's [`TrialValues`] are made when its turn comes and dropped after it (all at
/// once they were 380 MB at 10⁶ trials of default telemetry), and the cells are looked
/// at in parallel.
struct Layout {
    /// Cell `c`'s analysed trials in log order: `trials[start[c]..start[c + 1]]`.
    start: Vec<usize>,
    trials: Vec<u32>,
    /// The trials the tool said had not converged, ascending.
    not_converged: Vec<usize>,
    /// Each `monitor:` value's sources: its name, whether disks and net were read.
    monitored: Vec<(Name, bool, bool)>,
}

impl Layout {
    /// None when no trial has any secondary metric, flag or source (nothing monitored,
    /// no telemetry, no flags: most stores).
    fn new(snapshot: &Snapshot, plan: &Plan) -> Option<Layout> {
        let t = &snapshot.trials;
        if t.secondary.is_empty()
            && t.flags.is_empty()
            && t.monitored.iter().all(|&m| t.names.get(m).is_empty())
        {
            return None;
        }
        // by the name's number, no hashing per trial
        let cells = t.cell_index(plan);
        let cell_of = |i: usize| -> Option<usize> {
            (t.status[i].is_measurement() && !t.warmup[i]).then(|| cells.get(t.cell[i])).flatten()
        };
        let mut start = vec![0; plan.cells.len() + 1];
        for i in 0..t.len() {
            if let Some(c) = cell_of(i) {
                start[c + 1] += 1;
            }
        }
        for c in 0..plan.cells.len() {
            start[c + 1] += start[c];
        }
        let mut next = start.clone();
        let mut trials = vec![0; start[plan.cells.len()]];
        for i in 0..t.len() {
            if let Some(c) = cell_of(i) {
                trials[next[c]] = u32::try_from(i).ok()?;
                next[c] += 1;
            }
        }
        let flag = t.names.find(NOT_CONVERGED);
        let mut not_converged: Vec<usize> =
            t.flags.iter().filter(|(_, f)| Some(*f) == flag).map(|(i, _)| *i).collect();
        not_converged.sort_unstable();
        let mut monitored: Vec<(Name, bool, bool)> = Vec::new();
        for &m in &t.monitored {
            if !monitored.iter().any(|(n, ..)| *n == m) {
                let sources: Vec<&str> = t.names.get(m).split(',').collect();
                monitored.push((m, sources.contains(&"disks"), sources.contains(&"net")));
            }
        }
        Some(Layout { start, trials, not_converged, monitored })
    }

    /// Cell `cell`'s analysed trials with their secondary metrics, in log order, and the
    /// shapes of their secondary metrics ([`TrialValues::shape`]).
    fn cell<'a>(&self, t: &'a Trials, cell: usize) -> (Vec<TrialValues<'a>>, Vec<Shape<'a>>) {
        let mut shapes: Vec<Shape<'a>> = Vec::new();
        let trials = &self.trials[self.start[cell]..self.start[cell + 1]];
        let list = trials
            .iter()
            .map(|&i| {
                let i = i as usize;
                let (names, raw) = t.secondary.of(i);
                let (listed, monitored) = (t.secondary.shape_of(i), t.monitored[i]);
                let shape = match shapes.iter().position(|s| (s.listed, s.monitored) == (listed, monitored)) {
                    Some(s) => s,
                    None => {
                        shapes.push(Shape::new(self, t, names, listed, monitored));
                        shapes.len() - 1
                    }
                };
                TrialValues {
                    trial: i,
                    shape,
                    values: shapes[shape].values(raw),
                    not_converged: self.not_converged.binary_search(&i).is_ok(),
                }
            })
            .collect();
        (list, shapes)
    }

    /// Whether disks and net were read around a trial whose sources were `monitored`.
    fn read(&self, monitored: Name) -> (bool, bool) {
        self.monitored.iter().find(|(m, ..)| *m == monitored).map_or((false, false), |m| (m.1, m.2))
    }
}

/// Where one of a trial's values comes from: a secondary metric of its record (by its
/// place among them), the largest of some (the busiest device, 0 without one) or their
/// mean (a gang's members').
enum Source {
    Raw(usize),
    Busiest(Vec<usize>),
    Mean(Vec<usize>),
}

/// The names of a trial's secondary metrics and its sources, and what its values are
/// then: worked out once for the trials that share them (a cell's trials mostly do), so
/// that a trial's values are taken by place rather than found by name.
struct Shape<'a> {
    /// The number of the trials' list of names (`SecondaryMetrics::shape_of`).
    listed: usize,
    monitored: Name,
    keys: Vec<(&'a str, Source)>,
}

impl<'a> Shape<'a> {
    /// The whole-host columns of [`COLUMNS`] after the record's own metrics (a later one
    /// of a repeated name in the first's place): the busiest device of a per-device
    /// column whose source was read, and a gang's mean over its members where the trial
    /// has no figure of its own. Both read only the record's own metrics: no derived
    /// name has a member's `@` or a device's `:`.
    fn new(layout: &Layout, t: &'a Trials, names: &[Name], listed: usize, monitored: Name) -> Shape<'a> {
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
        let read = layout.read(monitored);
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
        Shape { listed, monitored, keys }
    }

    /// The values of a trial of this shape, whose secondary metrics are `raw`.
    fn values(&self, raw: &[f64]) -> Values<'a> {
        let value = |source: &Source| match source {
            Source::Raw(j) => raw[*j],
            Source::Busiest(js) => js.iter().map(|&j| raw[j]).fold(0.0_f64, f64::max),
            Source::Mean(js) => mean(&js.iter().map(|&j| raw[j]).collect::<Vec<f64>>()),
        };
        Values(self.keys.iter().map(|(k, source)| (*k, value(source))).collect())
    }
}

fn stat(values: &[f64]) -> SecondaryStat {
    let n = values.len();
    SecondaryStat {
        n,
        mean: values.iter().sum::<f64>() / n as f64,
        min: values.iter().copied().fold(f64::INFINITY, f64::min),
        max: values.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        differs: false,
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

/// What is looked at in every cell.
struct Context<'a> {
    exp: &'a Experiment,
    plan: &'a Plan,
    snapshot: &'a Snapshot,
    layout: Layout,
    /// Each cell's analysed metrics.
    metrics_of: HashMap<usize, Vec<Name>>,
    /// For each trial, what its host's earlier trials of the session wrote themselves
    /// (`foreign_writes`); empty when no trial measured its own writes.
    carried: Vec<f64>,
    /// The share of the wall time a gang's start skew may be ([`SKEW_OF_THRESHOLD`]).
    skew_share: f64,
}

/// What one cell adds to the summary and to the warnings.
#[derive(Default)]
struct CellPart {
    telemetry: Option<CellTelemetry>,
    /// The Xen domains its trials name, in the order first seen.
    xl_domains: Vec<String>,
    page_cache: Vec<String>,
    skew: Option<String>,
    foreign_writes: Option<String>,
    /// Per host: the sum, count and largest of its trials' steal time.
    steal: Vec<(Name, f64, usize, f64)>,
}

/// The telemetry section of the summary, and the warnings of what the machine did.
pub(crate) fn summarize(
    exp: &Experiment,
    plan: &Plan,
    snapshot: &Snapshot,
    analysed: &[Analysed],
    comparisons: &[ComparisonStat],
    arms: &[Arms],
    threshold: f64,
) -> (TelemetrySummary, Vec<Warning>) {
    let Some(layout) = Layout::new(snapshot, plan) else { return Default::default() };
    let skew_share = SKEW_OF_THRESHOLD * threshold;
    // each cell's metrics, found once rather than by a pass over all of them per cell
    let mut metrics_of: HashMap<usize, Vec<Name>> = HashMap::new();
    for a in analysed {
        metrics_of.entry(a.group.cell).or_default().push(a.group.metric);
    }
    let context =
        Context { exp, plan, snapshot, layout, metrics_of, carried: carried(&snapshot.trials), skew_share };
    let parts: Vec<CellPart> =
        (0..plan.cells.len()).into_par_iter().map(|cell| cell_part(&context, cell)).collect();
    drop(context);

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
        page.extend(part.page_cache);
        skews.extend(part.skew);
        foreign.extend(part.foreign_writes);
        for (host, sum, n, max) in part.steal {
            let entry = steal.entry(snapshot.trials.names.get(host)).or_insert((0.0, 0, 0.0));
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

/// One cell's telemetry, and what it warns of.
fn cell_part(context: &Context, cell: usize) -> CellPart {
    let t = &context.snapshot.trials;
    let (list, shapes) = context.layout.cell(t, cell);
    let mut part = CellPart::default();
    if list.is_empty() {
        return part;
    }
    // a handful of names: a list sorted by name at the end; each shape's keys' places in
    // it found once (shapes in the order their first trial ran, so the Xen domains are
    // in the order first seen)
    let mut values: Vec<(&str, Vec<f64>)> = Vec::new();
    let mut places: Vec<Vec<usize>> = Vec::with_capacity(shapes.len());
    for shape in &shapes {
        let mut place = Vec::with_capacity(shape.keys.len());
        for &(k, _) in &shape.keys {
            place.push(match values.iter().position(|(name, _)| *name == k) {
                Some(p) => p,
                None => {
                    values.push((k, Vec::with_capacity(list.len())));
                    values.len() - 1
                }
            });
            if let Some(domain) = k.strip_prefix("xl_cpu_seconds:")
                && !part.xl_domains.iter().any(|d| d == domain)
            {
                part.xl_domains.push(domain.to_owned());
            }
        }
        places.push(place);
    }
    for tv in &list {
        for (&p, (_, v)) in places[tv.shape].iter().zip(tv.values.iter()) {
            values[p].1.push(v);
        }
        if let Some(s) = tv.values.get("cpu_steal_pct") {
            let host = t.host[tv.trial];
            match part.steal.iter_mut().find(|(h, ..)| *h == host) {
                Some(entry) => *entry = (host, entry.1 + s, entry.2 + 1, entry.3.max(s)),
                None => part.steal.push((host, s, 1, s)),
            }
        }
    }
    let with = list.iter().filter(|tv| !tv.values.is_empty()).count();
    let flagged = list.iter().filter(|tv| tv.not_converged).count();
    if with > 0 || flagged > 0 {
        let (plan, c) = (context.plan, &context.plan.cells[cell]);
        values.sort_by(|a, b| a.0.cmp(b.0));
        part.telemetry = Some(CellTelemetry {
            cell: c.id.to_string(),
            label: plan.label(c),
            levels: plan.levels(c).map(|(k, v)| (k.to_owned(), v.text.clone())).collect(),
            trials: with,
            not_converged: flagged,
            analysed: list.len(),
            values: values.iter().map(|(k, v)| ((*k).to_owned(), stat(v))).collect(),
        });
    }
    part.page_cache = page_cache(context, cell, &list);
    part.skew = skew(context, cell, &list);
    part.foreign_writes = foreign_writes(context, cell, &list);
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
fn page_cache(context: &Context, cell: usize, trials: &[TrialValues]) -> Vec<String> {
    let (t, plan) = (&context.snapshot.trials, context.plan);
    let list: Vec<&TrialValues> =
        trials.iter().filter(|tv| tv.values.contains_key("disk_written_bytes")).collect();
    let Some(first) = list.first() else { return Vec::new() };
    let mut dd_writes: Option<bool> = None;
    let mut found = Vec::new();
    let metrics = context.metrics_of.get(&cell).into_iter().flatten().copied();
    for name in metrics.filter(|m| t.metrics.get(m).and_then(Option::as_ref).is_some_and(|i| i.unit == "B/s"))
    {
        let metric = t.names.get(name);
        let unit = "B/s";
        let mut rates = Vec::new();
        let mut written = Vec::new();
        let mut absorbed = 0;
        for tv in &list {
            let rows = t.rows(tv.trial);
            let Some(r) = rows.clone().find(|&r| t.metric[r] == name) else { continue };
            let claimed = t.value[r] * t.wall_time[tv.trial];
            let Some(disk) = tv.values.get("disk_written_bytes") else { continue };
            rates.push(t.value[r]);
            written.push(disk);
            if disk < ABSORBED * claimed {
                absorbed += 1;
            }
        }
        if rates.is_empty() || 2 * absorbed < rates.len() {
            continue;
        }
        let dd_writes = *dd_writes.get_or_insert_with(|| {
            let host = t.names.get(t.host[first.trial]);
            lint::rendered_run(context.exp, plan, cell, host).is_some_and(|run| lint::dd_writes_file(&run))
        });
        if !dd_writes && !metric.to_lowercase().contains("write") {
            continue;
        }
        let tool = if dd_writes { "dd" } else { metric };
        found.push(format!(
            "{}: {tool} reported {} but the disks wrote {} during the trial (median; in {absorbed} of {} \
             trials less than a tenth of what the rate implies)",
            plan.label(&plan.cells[cell]),
            human(median(&mut rates), unit),
            human(median(&mut written), "B"),
            rates.len()
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
fn skew(context: &Context, cell: usize, trials: &[TrialValues]) -> Option<String> {
    let t = &context.snapshot.trials;
    let (mut skews, mut walls) = (Vec::new(), Vec::new());
    for tv in trials {
        if let Some(s) = tv.values.get(GANG_SKEW) {
            skews.push(s);
            walls.push(t.wall_time[tv.trial]);
        }
    }
    if skews.is_empty() {
        return None;
    }
    let (skew, wall) = (mean(&skews), mean(&walls));
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

/// The busiest disk of a trial and what it wrote, when that is clearly more than the
/// experiment explains ([`FOREIGN_BYTES`]); `carried` is what the host's earlier trials of
/// the session wrote themselves. Only for trials where margin measured the trial's own
/// writes (a local host: over ssh the rusage is the ssh client's, and a gang's members
/// write at once by design).
fn foreign_write(values: &Values<'_>, carried: f64) -> Option<ForeignWrite> {
    let own = values.get(OWN_WRITTEN)?;
    let dirty = values.get(DIRTY_BEFORE)?;
    let (device, written) = values
        .iter()
        .filter_map(|(k, v)| Some((k.strip_prefix("disk_written_bytes:")?, v)))
        .max_by(|a, b| a.1.total_cmp(&b.1))?;
    let unexplained = written - own - dirty.min(carried);
    (unexplained > FOREIGN_BYTES.max(own)).then(|| (device.to_string(), written, own))
}

/// Each trial's share of what its host wrote before it in the session, by the trials'
/// own writes (the log holds a host's trials in the order they ran), warm-ups and
/// failures included; empty when no trial measured its own writes.
fn carried(t: &Trials) -> Vec<f64> {
    let Some(own_name) = t.names.find(OWN_WRITTEN) else { return Vec::new() };
    // where each list of names has it, found once per list
    let mut place: HashMap<usize, Option<usize>> = HashMap::new();
    let mut before: HashMap<(Name, Name), f64> = HashMap::new();
    (0..t.len())
        .map(|i| {
            let (names, values) = t.secondary.of(i);
            let at = *place
                .entry(t.secondary.shape_of(i))
                .or_insert_with(|| names.iter().position(|&n| n == own_name));
            let written = at.map_or(0.0, |j| values[j]);
            let sum = before.entry((t.host[i], t.session[i])).or_default();
            let carried = *sum;
            *sum += written;
            carried
        })
        .collect()
}

/// "another process wrote to the disk under test during the trial": in one cell, the
/// trials whose busiest disk wrote clearly more than the experiment explains.
fn foreign_writes(context: &Context, cell: usize, trials: &[TrialValues]) -> Option<String> {
    if context.carried.is_empty() {
        return None;
    }
    let mut measured = 0;
    let mut hits: Vec<ForeignWrite> = Vec::new();
    for tv in trials.iter().filter(|tv| tv.values.contains_key(OWN_WRITTEN)) {
        measured += 1;
        hits.extend(foreign_write(&tv.values, context.carried[tv.trial]));
    }
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
    use crate::analyze::{MemoryStore, summarize_store};
    use crate::store::{Telemetry, Trials};
    use crate::summary::Summary;
    use crate::vocab::{Better, MeanKind};

    /// The store's records given telemetry (and flags) after the fact, as a run records
    /// them, and the summary of it.
    fn observed(m: &mut MemoryStore, each: impl Fn(usize, &mut crate::store::TrialRecord)) -> Summary {
        for (i, r) in m.records.iter_mut().enumerate() {
            each(i, r);
        }
        m.snapshot.trials = Trials::from_records(&m.records);
        summarize_store(&m.exp, &m.plan, &m.snapshot, &[]).unwrap()
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
        let w: Vec<&str> = summary
            .warnings
            .iter()
            .filter(|w| w.kind == WarningKind::Steal)
            .map(|w| w.message.as_str())
            .collect();
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
        let values = |own: f64, dirty: f64, disk: f64| {
            Values(vec![
                (OWN_WRITTEN, own),
                (DIRTY_BEFORE, dirty),
                ("disk_written_bytes:sda", disk),
                ("disk_written_bytes:sdb", 1.0),
            ])
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
        remote.0.retain(|(k, _)| *k != OWN_WRITTEN);
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
