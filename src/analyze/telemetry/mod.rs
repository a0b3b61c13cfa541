//! What the hosts did during the trials: the secondary metrics of telemetry per cell, where
//! the sides of a comparison differ in them, the tools' convergence flags, and the warnings
//! they prove (docs/design.md §8; docs/statistics.md, What the machine did).
//!
//! Secondary metrics never enter a verdict: a `metrics:` entry naming one makes it a main
//! metric as well, recorded with the trial's metrics by the run.

mod aggregate;
mod sides;
#[cfg(test)]
mod tests;
mod warnings;

use std::collections::{BTreeMap, HashMap, HashSet};

use rayon::prelude::*;

use self::aggregate::{CELLS_AT_ONCE, CellAcc, Pass, rates};
use self::sides::sides;
use self::warnings::{
    SKEW_OF_THRESHOLD, foreign_writes, listed, not_converged, page_cache, skew, steal_meaning, steal_warnings,
};
use super::analysed::Analysed;
use super::comparisons::Arms;
use crate::plan::Plan;
use crate::spec::Experiment;
use crate::store::{Name, Names, Snapshot};
use crate::summary::{
    CellTelemetry, ComparisonStat, MetricMeta, TelemetryColumn, TelemetrySummary, Warning, WarningKind,
};
use vocab::{DIRTY_BEFORE, GANG_SKEW};

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
    /// What steal time is on each host ([`steal_meaning`]).
    steal_meaning: BTreeMap<String, String>,
}

impl CellsTelemetry {
    /// What a cell's trials at least wrote to the disk themselves while they ran: the
    /// least the busiest disk wrote in a trial, less the most that was waiting to be
    /// written when one began; only when every analysed trial of the cell has both.
    pub(crate) fn least_written(&self, cell: usize) -> Option<f64> {
        let t = self.parts.get(cell)?.telemetry.as_ref()?;
        let (disk, dirty) = (t.values.get("disk_written_bytes")?, t.values.get(DIRTY_BEFORE)?);
        (disk.n == t.analysed && dirty.n == t.analysed).then_some(disk.min - dirty.max)
    }
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
    let steal_meaning = steal_meaning(snapshot);
    let Some(pass) = Pass::new(t, plan) else {
        return CellsTelemetry { parts: Vec::new(), skew_share, steal_meaning };
    };
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
    CellsTelemetry { parts, skew_share, steal_meaning }
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
    let CellsTelemetry { parts, skew_share, steal_meaning } = cells;
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
    warnings.extend(steal_warnings(steal, &steal_meaning));
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
