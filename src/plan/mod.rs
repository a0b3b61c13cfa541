//! Matrix expansion: from the experiment's factors to the list of cells to run.
//!
//! Cartesian product in declared order (the last factor varies fastest), zipped groups,
//! `exclude` then `include` with GitHub Actions semantics, the `where` filter, a cap on
//! the size, and a stable id per cell.

pub mod boots;
mod find;
mod id;
pub(crate) mod render;

use std::collections::HashSet;
use std::fmt;
use std::sync::Arc;

use rayon::prelude::*;

use crate::diag::{Diagnostic, Diagnostics, Pos};
use crate::spec::{Experiment, Level, Repetitions};
use template::{Context, Templates, scalar_value};
use vocab::{CellId, Scalar};

/// The default cap on the number of cells (`--max-cells` raises it).
pub const DEFAULT_MAX_CELLS: usize = 100_000;

/// An expanded experiment: every cell to run, and how many trials each gets.
#[derive(Debug, Clone)]
pub struct Plan {
    pub experiment: String,
    /// Every level key, in declared order: factors (zipped keys flattened), then keys
    /// that only `include` adds.
    pub keys: Vec<String>,
    /// `keys[..factor_keys]` are the matrix's factors; the rest only `include` adds
    /// (values that ride along with a combination, like a directory per host).
    pub factor_keys: usize,
    pub factors: Vec<FactorSummary>,
    pub cells: Vec<Cell>,
    pub repetitions: Repetitions,
    pub warmup: u32,
}

/// A factor and its levels as written, for display.
#[derive(Debug, Clone, serde::Serialize)]
pub struct FactorSummary {
    pub name: String,
    pub levels: Vec<String>,
}

/// A cell's levels: (index into [`Plan::keys`], level), sorted by key index.
pub type Levels = Vec<(u16, Arc<Scalar>)>;

/// One combination of levels.
#[derive(Debug, Clone)]
pub struct Cell {
    pub id: CellId,
    pub levels: Levels,
    /// Whether this cell came from an `include` entry that matched no combination.
    pub added: bool,
}

impl Plan {
    /// The cell's levels as (key, value), in declared key order.
    pub fn levels<'a>(&'a self, cell: &'a Cell) -> impl Iterator<Item = (&'a str, &'a Scalar)> + 'a {
        cell.levels.iter().map(|(k, v)| (self.keys[*k as usize].as_str(), v.as_ref()))
    }

    /// `bs=1k sync=none` — the cell's levels on one line.
    pub fn label(&self, cell: &Cell) -> String {
        self.levels(cell).map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(" ")
    }

    /// The label as a message quotes it: each level shortened (`crate::diag::excerpt`).
    pub(crate) fn short_label(&self, cell: &Cell) -> String {
        self.levels(cell)
            .map(|(k, v)| format!("{k}={}", crate::diag::excerpt(&v.text)))
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// Trials per cell, fewest and most (adaptive repetitions give a range).
    pub fn trials(&self) -> (u64, u64) {
        let (min, max) = self.repetitions.bounds();
        let n = self.cells.len() as u64;
        (n * u64::from(min), n * u64::from(max))
    }
}

/// The host name of the machine running margin: where a cell without a `host` level runs.
pub const LOCAL_HOST: &str = "local";

/// The host of a cell: its `host` level, if it has one. The one place a cell's host is
/// looked up; [`host_of`] when a cell without one runs here.
pub fn host_level<'a>(plan: &'a Plan, cell: &'a Cell) -> Option<&'a str> {
    plan.levels(cell).find(|(k, _)| *k == "host").map(|(_, v)| v.text.as_str())
}

/// The host a cell runs on: its `host` level, or the local machine ([`LOCAL_HOST`]).
pub fn host_of<'a>(plan: &'a Plan, cell: &'a Cell) -> &'a str {
    host_level(plan, cell).unwrap_or(LOCAL_HOST)
}

impl fmt::Display for Plan {
    /// "12 cells × 5 repetitions = 60 trials (+ 1 warm-up per cell)".
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.cells.len();
        let cells = if n == 1 { "cell" } else { "cells" };
        match &self.repetitions {
            Repetitions::Fixed(r) => {
                let reps = if *r == 1 { "repetition" } else { "repetitions" };
                write!(f, "{n} {cells} × {r} {reps} = {} trials", self.trials().0)?;
            }
            Repetitions::Adaptive { min, max, target } => {
                let (lo, hi) = self.trials();
                write!(
                    f,
                    "{n} {cells} × {min}–{max} repetitions (adaptive, until ±{target}) = {lo}–{hi} trials"
                )?;
            }
            Repetitions::Verdict { min, max } => {
                let (lo, hi) = self.trials();
                write!(
                    f,
                    "{n} {cells} × {min}–{max} repetitions (adaptive, until every comparison is resolved) \
                     = {lo}–{hi} trials"
                )?;
            }
        }
        if self.warmup > 0 {
            write!(f, " (+ {} warm-up per cell)", self.warmup)?;
        }
        Ok(())
    }
}

/// Expand the experiment's matrix. Fails, with nothing partial, when the matrix is larger
/// than `max_cells` or the `where` filter cannot be evaluated.
pub fn expand(exp: &Experiment, max_cells: usize) -> Result<Plan, Diagnostics> {
    let spec = &exp.spec;
    let matrix = &spec.matrix.value;
    let fail = |pos: Pos, msg: String, hint: String| -> Diagnostics {
        Diagnostic::new(&exp.path, pos, msg).with_hint(hint).into()
    };

    // Keys and, per factor, its choices: each choice assigns one or more keys.
    let mut keys: Vec<String> = Vec::new();
    let mut choices: Vec<Vec<Levels>> = Vec::new();
    let mut factors = Vec::new();
    for factor in &matrix.factors {
        let mut options = Vec::new();
        let mut shown = Vec::new();
        for level in &factor.levels {
            match &level.value {
                Level::Scalar(s) => {
                    let k = key_index(&mut keys, &factor.name.value);
                    options.push(vec![(k, Arc::new(s.clone()))]);
                    shown.push(s.text.clone());
                }
                Level::Zip(map) => {
                    let assigned: Levels = map
                        .iter()
                        .map(|(k, v)| (key_index(&mut keys, &k.value), Arc::new(v.value.clone())))
                        .collect();
                    shown.push(
                        map.iter()
                            .map(|(k, v)| format!("{}={}", k.value, v.value))
                            .collect::<Vec<_>>()
                            .join(" "),
                    );
                    options.push(assigned);
                }
            }
        }
        factors.push(FactorSummary { name: factor.name.value.clone(), levels: shown });
        choices.push(options);
    }
    let original: HashSet<u16> = (0..keys.len() as u16).collect();
    let factor_keys = keys.len();

    let product = if choices.is_empty() {
        0
    } else {
        choices.iter().try_fold(1usize, |acc, c| acc.checked_mul(c.len())).unwrap_or(usize::MAX)
    };
    if product > max_cells {
        return Err(fail(
            spec.matrix.pos,
            format!("the matrix expands to {product} combinations, more than the cap of {max_cells} cells"),
            "check the level lists for a typo, or raise the cap with `--max-cells`".into(),
        ));
    }

    // Resolve exclude and include entries to key indices once.
    let exclude: Vec<Vec<(u16, &str)>> = matrix
        .exclude
        .iter()
        .map(|e| {
            e.value
                .iter()
                .filter_map(|(k, v)| find_key(&keys, &k.value).map(|k| (k, v.value.text.as_str())))
                .collect()
        })
        .collect();
    let include: Vec<Levels> = matrix
        .include
        .iter()
        .map(|e| {
            e.value.iter().map(|(k, v)| (key_index(&mut keys, &k.value), Arc::new(v.value.clone()))).collect()
        })
        .collect();
    if keys.len() > usize::from(u16::MAX) {
        return Err(fail(
            spec.matrix.pos,
            "too many factors".into(),
            "a matrix may have up to 65535 keys".into(),
        ));
    }

    // Cartesian product, last factor fastest, excluded combinations skipped.
    let mut cells: Vec<Levels> = Vec::with_capacity(product);
    let mut odometer = vec![0usize; choices.len()];
    for _ in 0..product {
        let mut levels: Levels = Vec::with_capacity(original.len());
        for (f, &i) in odometer.iter().enumerate() {
            levels.extend(choices[f][i].iter().cloned());
        }
        let excluded = exclude.iter().any(|entry| {
            entry.iter().all(|(k, text)| levels.iter().any(|(lk, lv)| lk == k && lv.text == *text))
        });
        if !excluded {
            levels.sort_by_key(|(k, _)| *k);
            cells.push(levels);
        }
        for f in (0..odometer.len()).rev() {
            odometer[f] += 1;
            if odometer[f] < choices[f].len() {
                break;
            }
            odometer[f] = 0;
        }
    }

    // include: extend every original combination it does not contradict; else add it.
    let originals = cells.len();
    let mut added = Vec::new();
    for entry in &include {
        let mut matched = false;
        for levels in cells.iter_mut().take(originals) {
            let compatible = entry
                .iter()
                .filter(|(k, _)| original.contains(k))
                .all(|(k, v)| levels.iter().any(|(lk, lv)| lk == k && lv.text == v.text));
            if !compatible {
                continue;
            }
            matched = true;
            for (k, v) in entry.iter().filter(|(k, _)| !original.contains(k)) {
                match levels.iter_mut().find(|(lk, _)| lk == k) {
                    Some(slot) => slot.1 = v.clone(),
                    None => levels.push((*k, v.clone())),
                }
            }
            levels.sort_by_key(|(k, _)| *k);
        }
        if !matched {
            let mut levels = entry.clone();
            levels.sort_by_key(|(k, _)| *k);
            // the same entry listed twice is one combination, not two cells with one id
            let same = |other: &Levels| {
                other.len() == levels.len()
                    && other.iter().zip(&levels).all(|(a, b)| a.0 == b.0 && a.1.text == b.1.text)
            };
            if !added.iter().any(same) {
                added.push(levels);
            }
        }
    }
    let mut all: Vec<(Levels, bool)> = cells.into_iter().map(|l| (l, false)).collect();
    all.extend(added.into_iter().map(|l| (l, true)));

    // where: evaluate per cell, in parallel; the first failure (in cell order) is reported.
    if let Some(filter) = &spec.filter {
        let templates = Templates::new();
        let condition = templates.condition(&filter.value).map_err(|e| {
            Diagnostics::from(Diagnostic::new(
                &exp.path,
                filter.pos,
                format!("`where` does not compile: {}", e.message),
            ))
        })?;
        let verdicts: Vec<Result<bool, String>> = all
            .par_iter()
            .map(|(levels, _)| {
                let mut ctx = Context::new();
                ctx.set("experiment", exp.name.as_str().into());
                for (k, v) in levels {
                    ctx.set(&keys[*k as usize], scalar_value(v));
                }
                condition.keeps(ctx).map_err(|e| e.message)
            })
            .collect();
        if let Some((i, Err(e))) = verdicts.iter().enumerate().find(|(_, v)| v.is_err()) {
            let label: Vec<String> = all[i]
                .0
                .iter()
                .map(|(k, v)| format!("{}={}", keys[*k as usize], crate::diag::excerpt(&v.text)))
                .collect();
            return Err(Diagnostic::new(&exp.path, filter.pos, format!("`where` failed for cell {}: {e}", label.join(" ")))
                .with_hint("every name `where` uses must be defined in every cell (include entries may add cells without some keys)")
                .into());
        }
        let mut keep = verdicts.into_iter().map(|v| v.unwrap_or(false));
        all.retain(|_| keep.next().unwrap_or(false));
    }

    if all.len() > max_cells {
        return Err(fail(
            spec.matrix.pos,
            format!("the matrix has {} cells, more than the cap of {max_cells}", all.len()),
            "raise the cap with `--max-cells`".into(),
        ));
    }
    if all.is_empty() {
        return Err(fail(
            spec.matrix.pos,
            "the matrix has no cells left after `exclude` and `where`".into(),
            "every combination was excluded or filtered out".into(),
        ));
    }

    let rules = id::rules_hash(spec);
    let cells: Vec<Cell> = all
        .into_par_iter()
        .map(|(levels, added)| Cell { id: id::cell_id(&rules, &keys, &levels), levels, added })
        .collect();
    Ok(Plan {
        experiment: exp.name.clone(),
        keys,
        factor_keys,
        factors,
        cells,
        repetitions: spec.repetitions(),
        warmup: spec.warmup.unwrap_or(0),
    })
}

fn find_key(keys: &[String], name: &str) -> Option<u16> {
    keys.iter().position(|k| k == name).map(|i| i as u16)
}

fn key_index(keys: &mut Vec<String>, name: &str) -> u16 {
    match find_key(keys, name) {
        Some(i) => i,
        None => {
            keys.push(name.to_string());
            (keys.len() - 1) as u16
        }
    }
}

#[cfg(test)]
mod tests;
