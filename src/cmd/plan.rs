//! `margin plan FILE`: the matrix expanded, as a table or as JSON; runs nothing.

use std::io::Write;
use std::path::Path;

use serde::Serialize;

use super::check::RENDERED_CELLS;
use super::{Error, duration, io};
use crate::outlook::{self, CellOutlook};
use crate::plan::{self, Plan};
use crate::run::{self, RunOptions};
use crate::spec::{self, Repetitions};
use crate::store::Store;

/// Cells listed on a terminal unless `--all`.
pub const TERMINAL_CELLS: usize = 50;

pub struct PlanOptions<'a> {
    pub file: &'a Path,
    pub all: bool,
    pub json: bool,
    pub max_cells: usize,
    pub terminal: bool,
    pub reports: &'a Path,
}

pub fn run(s: &PlanOptions<'_>, out: &mut dyn Write) -> Result<(), Error> {
    let exp = spec::load_file(s.file)?;
    let plan = plan::expand(&exp, s.max_cells)?;
    plan::render::check_renders(&exp, &plan, RENDERED_CELLS).map_err(crate::diag::Diagnostics::from)?;
    let store = Store::new(s.reports, &exp.name);
    let outlook = outlook::outlook(&exp, &plan, &store.load()?, &RunOptions::default())?.cells;
    if s.json {
        write_json(&exp, s.file, &plan, &outlook, out).map_err(io)
    } else {
        let limit = if s.all || !s.terminal { usize::MAX } else { TERMINAL_CELLS };
        write_text(&exp, s.file, &plan, &outlook, limit, out).map_err(io)
    }
}

/// `3/5 here`, `5/5 done`, `0/5 pending`: trials measured of the minimum, and where;
/// then the time the cell's remaining trials should take, from its earlier trials (or
/// all cells' when it has none yet), `?` before any trial ran.
fn state(plan: &Plan, o: &CellOutlook) -> (String, String) {
    let (min, _) = plan.repetitions.bounds();
    let word = match (o.done, &o.pending) {
        (true, _) => "done",
        (false, Some(_)) => "pending",
        (false, None) => "here",
    };
    let left = match o.estimate {
        _ if o.done => "-".to_string(),
        None => "?".to_string(),
        Some((lo, hi)) if (hi - lo).abs() < 0.05 => duration(lo),
        Some((lo, hi)) => format!("{}–{}", duration(lo), duration(hi)),
    };
    (format!("{:>6}  {word:7}", format!("{}/{min}", o.ok)), left)
}

fn write_text(
    exp: &crate::spec::Experiment,
    file: &Path,
    plan: &Plan,
    outlook: &[CellOutlook],
    limit: usize,
    out: &mut dyn Write,
) -> std::io::Result<()> {
    writeln!(out, "experiment {} ({})", plan.experiment, file.display())?;
    writeln!(out, "{plan}")?;
    let done = outlook.iter().filter(|o| o.done).count();
    let pending: Vec<(usize, &str)> =
        outlook.iter().enumerate().filter_map(|(i, o)| o.pending.as_deref().map(|p| (i, p))).collect();
    let here = outlook.len() - done - pending.len();
    writeln!(out, "on this host: {here} cells to run, {done} done, {} pending", pending.len())?;
    if plan.keys.iter().any(|k| k == "host") {
        for (host, how, cells, done) in outlook::hosts_summary(exp, plan, outlook) {
            writeln!(out, "  host {host} ({how}): {cells} cells, {done} done, {} to run", cells - done)?;
        }
    }
    // what runs beside the trials, and where (docs/experiment-file.md, services)
    for (name, service) in &exp.spec.services {
        let (host, address) = exp.spec.service_place(&service.value);
        let cells = match &service.value.when {
            Some(when) => format!("the cells where `{}`", when.value),
            None => "every cell".to_string(),
        };
        writeln!(out, "  service {} on host {host} ({address}), for {cells}", name.value)?;
    }
    let (lo, hi) = outlook
        .iter()
        .filter(|o| o.pending.is_none())
        .filter_map(|o| o.estimate)
        .fold((0.0, 0.0), |(a, b), (lo, hi)| (a + lo, b + hi));
    if here > 0 {
        if outlook.iter().any(|o| o.estimate.is_some()) {
            let range = if (hi - lo).abs() < 0.05 {
                duration(lo)
            } else {
                format!("{} – {}", duration(lo), duration(hi))
            };
            writeln!(out, "estimated time here: {range} (from earlier trials)")?;
        } else {
            writeln!(out, "estimated time here: unknown until the first trials have run")?;
        }
    }
    writeln!(out)?;
    writeln!(out, "factors:")?;
    let width = plan.factors.iter().map(|f| f.name.len()).max().unwrap_or(0);
    for f in &plan.factors {
        writeln!(out, "  {:width$}  {}", f.name, f.levels.join(", "))?;
    }
    writeln!(out)?;
    if !pending.is_empty() {
        let mut reasons: Vec<(&str, usize)> = Vec::new();
        for (_, why) in &pending {
            match reasons.iter_mut().find(|(r, _)| r == why) {
                Some(entry) => entry.1 += 1,
                None => reasons.push((why, 1)),
            }
        }
        writeln!(out, "pending (another host or boot; results accumulate):")?;
        for (why, n) in reasons {
            writeln!(out, "  {n} {}: {why}", if n == 1 { "cell" } else { "cells" })?;
        }
        writeln!(out)?;
    }
    writeln!(out, "cells:")?;
    let shown = &plan.cells[..plan.cells.len().min(limit)];
    let states: Vec<(String, String)> = outlook.iter().take(shown.len()).map(|o| state(plan, o)).collect();
    let left_width = states.iter().map(|(_, left)| left.chars().count()).max().unwrap_or(0).max(9);
    let mut widths: Vec<usize> = plan.keys.iter().map(|k| k.chars().count()).collect();
    for cell in shown {
        for (k, v) in &cell.levels {
            let w = &mut widths[*k as usize];
            *w = (*w).max(v.text.chars().count());
        }
    }
    let mut header = format!("  {:16}  {:>6}  {:7}  {:>left_width$}", "id", "trials", "state", "time left");
    for (k, w) in plan.keys.iter().zip(&widths) {
        header.push_str(&format!("  {k:w$}"));
    }
    writeln!(out, "{}", header.trim_end())?;
    for (cell, (state, left)) in shown.iter().zip(&states) {
        let mut line = format!("  {}  {state}  {left:>left_width$}", cell.id);
        let mut i = 0;
        for (k, w) in widths.iter().enumerate() {
            let text = match cell.levels.get(i) {
                Some((key, v)) if *key as usize == k => {
                    i += 1;
                    v.text.as_str()
                }
                _ => "-",
            };
            line.push_str(&format!("  {text:w$}"));
        }
        writeln!(out, "{}", line.trim_end())?;
    }
    if shown.len() < plan.cells.len() {
        writeln!(out, "  … {} more cells (`--all` lists them all)", plan.cells.len() - shown.len())?;
    }
    Ok(())
}

#[derive(Serialize)]
struct JsonHead<'a> {
    experiment: &'a str,
    file: String,
    repetitions: JsonRepetitions,
    warmup: u32,
    trials: JsonRange,
    factors: &'a [plan::FactorSummary],
    /// The hosts the cells run on and the machine each is on (hosts of one machine take
    /// turns: docs/design.md §6.1).
    hosts: Vec<JsonHost>,
}

#[derive(Serialize)]
struct JsonHost {
    name: String,
    /// The ssh destination, or null for this machine.
    ssh: Option<String>,
    machine: String,
    /// The other hosts of the same machine, with which it takes turns.
    shares_machine_with: Vec<String>,
    /// A gang's hosts, started together (docs/experiment-file.md, gangs); its `machine`
    /// is theirs, each once, joined with ", ".
    #[serde(skip_serializing_if = "Option::is_none")]
    gang: Option<Vec<String>>,
}

#[derive(Serialize)]
struct JsonRange {
    min: u64,
    max: u64,
}

#[derive(Serialize)]
struct JsonRepetitions {
    min: u32,
    max: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    target: Option<f64>,
}

#[derive(Serialize)]
struct JsonCell<'a> {
    id: String,
    levels: indexmap::IndexMap<&'a str, &'a str>,
    added_by_include: bool,
    host: &'a str,
    /// The machine its host is on (`run::machine_of`).
    machine: &'a str,
    /// `done`, `here` (runs on this host) or `pending`.
    state: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pending: Option<&'a str>,
    trials_done: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    estimate_seconds: Option<(f64, f64)>,
}

/// The plan as one JSON object; cells are written one by one so a million cells do not
/// need a second copy in memory.
fn write_json(
    exp: &spec::Experiment,
    file: &Path,
    plan: &Plan,
    outlook: &[CellOutlook],
    out: &mut dyn Write,
) -> std::io::Result<()> {
    let (min, max) = plan.repetitions.bounds();
    let target = match &plan.repetitions {
        Repetitions::Adaptive { target, .. } => Some(target.0),
        Repetitions::Fixed(_) | Repetitions::Verdict { .. } => None,
    };
    let (tmin, tmax) = plan.trials();
    let mut machines: Vec<(&str, String)> = Vec::new();
    for cell in &plan.cells {
        let host = run::host_of(plan, cell);
        if !machines.iter().any(|(h, _)| *h == host) {
            machines.push((host, run::machines_of(exp, host).join(", ")));
        }
    }
    let shares = |a: &str, b: &str| {
        let theirs = run::machines_of(exp, b);
        run::machines_of(exp, a).iter().any(|m| theirs.contains(m))
    };
    let hosts = machines
        .iter()
        .map(|(host, machine)| JsonHost {
            name: host.to_string(),
            ssh: run::ssh_entry(exp, host).map(|(_, dest)| dest.to_string()),
            machine: machine.clone(),
            shares_machine_with: machines
                .iter()
                .filter(|(h, _)| h != host && shares(host, h))
                .map(|(h, _)| h.to_string())
                .collect(),
            gang: exp.spec.gang(host).map(|g| g.members().into_iter().map(String::from).collect()),
        })
        .collect();
    let head = JsonHead {
        experiment: &plan.experiment,
        file: file.display().to_string(),
        repetitions: JsonRepetitions { min, max, target },
        warmup: plan.warmup,
        trials: JsonRange { min: tmin, max: tmax },
        factors: &plan.factors,
        hosts,
    };
    let head = serde_json::to_string(&head)?;
    // splice the cells array into the head object
    out.write_all(&head.as_bytes()[..head.len() - 1])?;
    write!(out, ",\"cell_count\":{},\"cells\":[", plan.cells.len())?;
    for (i, (cell, o)) in plan.cells.iter().zip(outlook).enumerate() {
        if i > 0 {
            out.write_all(b",")?;
        }
        let host = run::host_of(plan, cell);
        let machine = machines.iter().find(|(h, _)| *h == host).map_or("", |(_, m)| m.as_str());
        let c = JsonCell {
            id: cell.id.to_string(),
            host,
            machine,
            levels: plan.levels(cell).map(|(k, v)| (k, v.text.as_str())).collect(),
            added_by_include: cell.added,
            state: match (o.done, &o.pending) {
                (true, _) => "done",
                (false, Some(_)) => "pending",
                (false, None) => "here",
            },
            pending: o.pending.as_deref(),
            trials_done: o.ok,
            estimate_seconds: if o.done { None } else { o.estimate },
        };
        serde_json::to_writer(&mut *out, &c)?;
    }
    writeln!(out, "]}}")
}
