//! `margin plan FILE`: the matrix expanded, as a table or as JSON; runs nothing.

use std::io::Write;
use std::path::Path;

use serde::Serialize;

use super::Failure;
use super::check::{RENDERED_CELLS, io};
use crate::plan::{self, Plan};
use crate::spec::{self, Repetitions};

/// Cells listed on a terminal unless `--all`.
pub const TERMINAL_CELLS: usize = 50;

pub struct Settings<'a> {
    pub file: &'a Path,
    pub all: bool,
    pub json: bool,
    pub max_cells: usize,
    pub terminal: bool,
}

pub fn run(s: &Settings<'_>, out: &mut dyn Write) -> Result<(), Failure> {
    let exp = spec::load_file(s.file)?;
    let plan = plan::expand(&exp, s.max_cells)?;
    plan::render::check_renders(&exp, &plan, RENDERED_CELLS)
        .map_err(|d| Failure::from(crate::diag::Diagnostics::from(d)))?;
    if s.json {
        write_json(s.file, &plan, out).map_err(io)
    } else {
        let limit = if s.all || !s.terminal { usize::MAX } else { TERMINAL_CELLS };
        write_text(s.file, &plan, limit, out).map_err(io)
    }
}

fn write_text(file: &Path, plan: &Plan, limit: usize, out: &mut dyn Write) -> std::io::Result<()> {
    writeln!(out, "experiment {} ({})", plan.experiment, file.display())?;
    writeln!(out, "{plan}")?;
    writeln!(out)?;
    writeln!(out, "factors:")?;
    let width = plan.factors.iter().map(|f| f.name.len()).max().unwrap_or(0);
    for f in &plan.factors {
        writeln!(out, "  {:width$}  {}", f.name, f.levels.join(", "))?;
    }
    writeln!(out)?;
    writeln!(out, "cells:")?;
    let shown = &plan.cells[..plan.cells.len().min(limit)];
    let mut widths: Vec<usize> = plan.keys.iter().map(|k| k.chars().count()).collect();
    for cell in shown {
        for (k, v) in &cell.levels {
            let w = &mut widths[*k as usize];
            *w = (*w).max(v.text.chars().count());
        }
    }
    let mut header = format!("  {:16}", "id");
    for (k, w) in plan.keys.iter().zip(&widths) {
        header.push_str(&format!("  {k:w$}"));
    }
    writeln!(out, "{}", header.trim_end())?;
    for cell in shown {
        let mut line = format!("  {}", cell.id);
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
}

/// The plan as one JSON object; cells are written one by one so a million cells do not
/// need a second copy in memory.
fn write_json(file: &Path, plan: &Plan, out: &mut dyn Write) -> std::io::Result<()> {
    let (min, max) = plan.repetitions.bounds();
    let target = match &plan.repetitions {
        Repetitions::Adaptive { target, .. } => Some(target.0),
        Repetitions::Fixed(_) => None,
    };
    let (tmin, tmax) = plan.trials();
    let head = JsonHead {
        experiment: &plan.experiment,
        file: file.display().to_string(),
        repetitions: JsonRepetitions { min, max, target },
        warmup: plan.warmup,
        trials: JsonRange { min: tmin, max: tmax },
        factors: &plan.factors,
    };
    let head = serde_json::to_string(&head)?;
    // splice the cells array into the head object
    out.write_all(&head.as_bytes()[..head.len() - 1])?;
    write!(out, ",\"cell_count\":{},\"cells\":[", plan.cells.len())?;
    for (i, cell) in plan.cells.iter().enumerate() {
        if i > 0 {
            out.write_all(b",")?;
        }
        let c = JsonCell {
            id: cell.id.to_string(),
            levels: plan.levels(cell).map(|(k, v)| (k, v.text.as_str())).collect(),
            added_by_include: cell.added,
        };
        serde_json::to_writer(&mut *out, &c)?;
    }
    writeln!(out, "]}}")
}
