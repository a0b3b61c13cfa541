//! The warnings telemetry proves: the page cache took the writes, steal time, a gang's
//! start skew, another process writing to the disk, results the tool said had not settled.

use std::collections::{BTreeMap, BTreeSet};

use super::super::lint;
use super::Context;
use crate::store::{Event, Name, Snapshot};
use crate::summary::{TelemetrySummary, Warning, WarningKind};
use stats::elementary::mean;

/// A write throughput's bytes over the trial are "absorbed" when the busiest disk wrote
/// less than this share of them.
pub(super) const ABSORBED: f64 = 0.1;
/// Mean steal time over a host's trials from which a warning is given, in %.
pub(super) const STEAL_PCT: f64 = 5.0;
/// A gang's mean start skew from which a warning is given, as a share of its trials' mean
/// wall time, is this share of the practical threshold. Members that share a resource
/// fully (each alone at its whole rate, n together at 1/n of it) and start `s` apart
/// each end `s` sooner than if they had started together (two members: a wall time of
/// `T` is `s` short), so a throughput — each member's and their sum — is overstated by
/// `s / T`; with more members by the order of that, at most their offsets from the first
/// summed over `T` (`skew_overstates_a_shared_throughput_by_its_share_of_the_wall_time`
/// simulates it). At half the threshold, the skew alone moves a change half the way to a
/// verdict.
pub(super) const SKEW_OF_THRESHOLD: f64 = 0.5;
/// A disk's writes during a trial beyond what the experiment explains — the trial's own
/// writes, and the pages its host's earlier trials wrote that may still have been waiting
/// to be written back (at most the dirty pages when it began) — that show another process
/// wrote: more than the trial's own writes again (a journal that writes data twice,
/// `data=journal`, and the metadata of what the trial wrote stay within it) and more than
/// this many bytes (the system's own trickle of logs and metadata, margin's flush of the
/// raw output).
pub(super) const FOREIGN_BYTES: f64 = 32.0 * 1024.0 * 1024.0;

/// "dd reported 2.5 GB/s but the disks wrote 0 B during its trials: the page cache
/// absorbed it". The rule: a metric in B/s that is a write throughput — its name says
/// `write`, or the cell's command is a dd writing to a file — times the trial's wall time
/// is what the tool claims to have written; when the busiest disk wrote less than a tenth
/// of that in at least half of a cell's trials with disk telemetry, the page cache took
/// it. (Wall time ≥ the tool's own time, so the claim is if anything overstated, never
/// the disk's share; writeback of earlier trials during this one only hides the warning.)
/// One cell's findings; its command is rendered only for a rate the disks did not match.
pub(super) fn page_cache(
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
pub(super) fn listed(kind: WarningKind, head: &str, found: &[String]) -> Vec<Warning> {
    match found.is_empty() {
        true => Vec::new(),
        false => vec![Warning::new(kind, format!("{head}: {}", lint::list(found)))],
    }
}

/// "steal time was 12 % during the domu trials: …", from each host's sum, count and
/// largest steal time over its trials, and what steal is on it ([`steal_meaning`]).
pub(super) fn steal_warnings(
    hosts: BTreeMap<&str, (f64, usize, f64)>,
    meaning: &BTreeMap<String, String>,
) -> Vec<Warning> {
    hosts
        .into_iter()
        .filter_map(|(host, (sum, n, max))| {
            let mean = sum / n as f64;
            let means = meaning.get(host).map_or(GUEST, String::as_str);
            (mean >= STEAL_PCT).then(|| {
                Warning::new(
                    WarningKind::Steal,
                    format!(
                        "steal time was {mean:.0} % during the {host} trials (mean of {n} trials, at most {max:.0} %): \
                         {means}"
                    ),
                )
            })
        })
        .collect()
}

/// What steal time is in a virtual machine whose kind its facts do not say.
const GUEST: &str = "the hypervisor gave the CPU to something else (other guests, or its own work)";

/// What steal time is on each host, by what its sessions ran as (facts `xen_role`,
/// `hypervisor`): a Xen dom0 has steal with no guest running, when Xen itself or the
/// machine under it (an emulator, a nested hypervisor) takes the CPU.
pub(super) fn steal_meaning(snapshot: &Snapshot) -> BTreeMap<String, String> {
    let mut roles: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for s in snapshot.sessions.iter().filter(|s| s.event == Event::Start) {
        let fact = |k: &str| s.facts.get(k).map_or("", String::as_str);
        let role = match (fact("xen_role"), fact("hypervisor")) {
            ("dom0", _) => "dom0",
            ("domU", _) => "domU",
            (_, "none" | "") => "bare",
            _ => "guest",
        };
        roles.entry(s.host.as_str()).or_default().insert(role);
    }
    roles
        .into_iter()
        .map(|(host, roles)| {
            let said: Vec<&str> = roles
                .into_iter()
                .filter_map(|role| match role {
                    "dom0" => Some(
                        "in a Xen dom0, Xen gave the dom0's CPUs to something else: other domains if any ran, \
                         else Xen's own work or the machine under Xen (an emulator such as QEMU, or another \
                         hypervisor)",
                    ),
                    "domU" => Some("in a Xen guest, Xen gave its CPUs to other domains (other guests or the dom0)"),
                    "guest" => Some(
                        "in a virtual machine, its hypervisor gave the CPU to something else (other guests, its \
                         own work, or an emulator's)",
                    ),
                    _ => None,
                })
                .collect();
            let said = if said.is_empty() { GUEST.to_owned() } else { said.join("; ") };
            (host.to_owned(), said)
        })
        .collect()
}

/// "gang both (the members started 40 ms apart on average, 12 % of its trials' 0.33 s)":
/// the members overlapped for less of the trial than a simultaneous load means; the
/// context's `skew_share` of the wall time is the most a skew may be
/// ([`SKEW_OF_THRESHOLD`]).
pub(super) fn skew(context: &Context<'_>, cell: usize, skews: &[f64], walls: &[f64]) -> Option<String> {
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
pub(super) type ForeignWrite = (String, f64, f64);

/// The busiest disk of a trial (of its `devices`: each one's bytes written) and what it
/// wrote, when that is clearly more than the experiment explains ([`FOREIGN_BYTES`]);
/// `own` is what the trial wrote itself, `dirty` the dirty pages when it began, `carried`
/// what the host's earlier trials of the session wrote themselves. Only for trials where
/// margin measured the trial's own writes (a local host: over ssh the rusage is the ssh
/// client's, and a gang's members write at once by design).
pub(super) fn foreign_write<'a>(
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
pub(super) fn foreign_writes(
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

pub(super) fn not_converged(summary: &TelemetrySummary) -> Vec<Warning> {
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

pub(super) fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    if n % 2 == 1 { values[n / 2] } else { (values[n / 2 - 1] + values[n / 2]) / 2.0 }
}

/// `2.5 GB/s`, `0 B`, `12.3 MB`: decimal prefixes, three significant digits.
pub(super) fn human(value: f64, unit: &str) -> String {
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
