//! [`expand`]: the experiment's matrix into the plan's cells, step by step — the factors'
//! choices, their cartesian product less `exclude`, `include`'s entries, the `where`
//! filter, the cap on the size, and each cell's id.

use std::collections::HashSet;
use std::sync::Arc;

use rayon::prelude::*;

use super::{Cell, FactorSummary, Levels, Plan, id};
use crate::diag::{Diagnostic, Diagnostics, Pos};
use crate::spec::{Experiment, Level, Located, Matrix};
use template::{Context, Templates, scalar_value};

/// Expand the experiment's matrix. Fails, with nothing partial, when the matrix is larger
/// than `max_cells` or the `where` filter cannot be evaluated.
pub fn expand(exp: &Experiment, max_cells: usize) -> Result<Plan, Diagnostics> {
    let spec = &exp.spec;
    let matrix = &spec.matrix.value;
    let fail = |pos: Pos, msg: String, hint: String| -> Diagnostics {
        Diagnostic::new(&exp.path, pos, msg).with_hint(hint).into()
    };

    let Choices { mut keys, choices, factors } = choices(matrix);
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

    let cells = cartesian(&choices, &exclude, product, original.len());
    let mut all = included(cells, &include, &original);
    if let Some(filter) = &spec.filter {
        keep_where(exp, filter, &keys, &mut all)?;
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
        boots: spec.hosts.values().any(|h| h.value.boot.is_some()),
    })
}

/// The matrix's factors as [`choices`] reads them.
struct Choices {
    /// Every key the factors assign, in declared order (zipped keys flattened).
    keys: Vec<String>,
    /// Per factor, its choices: each choice assigns one or more keys.
    choices: Vec<Vec<Levels>>,
    factors: Vec<FactorSummary>,
}

/// Keys and, per factor, its choices: each choice assigns one or more keys.
fn choices(matrix: &Matrix) -> Choices {
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
    Choices { keys, choices, factors }
}

/// Cartesian product of the `product` combinations of `choices`, last factor fastest,
/// excluded combinations skipped; each combination's levels sorted by key.
fn cartesian(
    choices: &[Vec<Levels>],
    exclude: &[Vec<(u16, &str)>],
    product: usize,
    keys: usize,
) -> Vec<Levels> {
    let mut cells: Vec<Levels> = Vec::with_capacity(product);
    let mut odometer = vec![0usize; choices.len()];
    for _ in 0..product {
        let mut levels: Levels = Vec::with_capacity(keys);
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
    cells
}

/// `include`: each entry extends every combination it does not contradict (on the
/// `original` keys, the factors'); one that matches none is added as a cell of its own.
/// Each cell with whether it was added.
fn included(mut cells: Vec<Levels>, include: &[Levels], original: &HashSet<u16>) -> Vec<(Levels, bool)> {
    let originals = cells.len();
    let mut added = Vec::new();
    for entry in include {
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
    all
}

/// `where`: keeps the cells the filter keeps, evaluated per cell, in parallel; the first
/// failure (in cell order) is reported.
fn keep_where(
    exp: &Experiment,
    filter: &Located<String>,
    keys: &[String],
    all: &mut Vec<(Levels, bool)>,
) -> Result<(), Diagnostics> {
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
    Ok(())
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
