//! The design of boots (or sessions) as units: levels measured in disjoint boots, whose
//! trials share their boot's state, so the boots are the observations and a level's
//! interval holds the variation between them (docs/statistics.md, Sessions and boots).
//! The arithmetic is the statistics core's ([`stats::units`]); here, which values
//! are whose.

use indexmap::IndexMap;

use super::super::analysed::Analysed;
use super::units::Units;
use super::{KeptAndAll, Sides, trials};
use crate::summary::Replication;
use stats::StatsError;
use stats::components::{components, relative_components};
use stats::observations::Observations;
use stats::units::{Block, UnitLogs, unit_logs, unit_means};
use vocab::MeanKind;

/// Unpaired levels in disjoint boots (`by_unit`: each side's boots and their values):
/// each boot's mean one observation when each side has two boots or more; else the
/// trials, to be judged `unreplicated`.
pub(super) fn unpaired<'c>(
    units: &Units<'_>,
    (a, b): (&'c Analysed, &'c Analysed),
    by_unit: [&IndexMap<&str, Vec<f64>>; 2],
    kind: MeanKind,
) -> Result<Sides<'c>, StatsError> {
    let groups =
        |by_unit: &IndexMap<&str, Vec<f64>>| -> Vec<Vec<f64>> { by_unit.values().cloned().collect() };
    let side = |cell: &Analysed| relative_components(&groups(&units.values(cell, true)));
    let replication = units.replication(&by_unit, (side(a), side(b)));
    if replication.baseline_units < 2 || replication.level_units < 2 {
        return Ok(Sides { replication: Some(replication), ..trials::sides(a, b) });
    }
    let means = |by_unit: &IndexMap<&str, Vec<f64>>| unit_means(&groups(by_unit), kind);
    let all = [means(by_unit[0])?, means(by_unit[1])?];
    // the kept trials differ from all of them only where some were set aside
    let kept = |cell: &Analysed, all: &Observations| {
        if cell.analysis.outliers.set_aside.is_empty() {
            Ok(all.clone())
        } else {
            means(&units.values(cell, true))
        }
    };
    Ok(Sides {
        kept: [kept(a, &all[0])?, kept(b, &all[1])?],
        all,
        pairs: Vec::new(),
        replication: Some(replication),
        single: Some((a, b)),
        unit_logs: None,
    })
}

/// Paired levels in disjoint boots that each ran several blocks: the pairs share their
/// boots, so the boot is the unit here too, each boot's mean log-value over `base` and
/// `other`, the pairs' cells of the blocks all boots ran. The replication, and with two
/// boots or more a side, each side's [`UnitLogs`] of the trials kept and of all trials.
pub(super) fn paired(
    units: &Units<'_>,
    base: &[&Analysed],
    other: &[&Analysed],
) -> (Replication, Option<KeptAndAll>) {
    let logs = |kept: bool| {
        let blocks = |cells: &[&Analysed]| -> Vec<Block> {
            // each side's units numbered in the order first met, block after block
            let mut seen: Vec<&str> = Vec::new();
            cells
                .iter()
                .map(|c| {
                    units
                        .values(c, kept)
                        .into_iter()
                        .map(|(u, v)| {
                            let number = seen.iter().position(|s| *s == u).unwrap_or_else(|| {
                                seen.push(u);
                                seen.len() - 1
                            });
                            (number, v)
                        })
                        .collect()
                })
                .collect()
        };
        unit_logs([&blocks(base), &blocks(other)])
    };
    let kept = logs(true);
    let side = |u: &UnitLogs| components(&u.residuals, 1.0);
    let counts: Vec<IndexMap<&str, Vec<f64>>> = [base, other]
        .iter()
        .map(|cells| {
            let mut by_unit: IndexMap<&str, Vec<f64>> = IndexMap::new();
            for c in cells.iter() {
                for (u, v) in units.values(c, false) {
                    by_unit.entry(u).or_default().extend(v);
                }
            }
            by_unit
        })
        .collect();
    let replication = units.replication(&[&counts[0], &counts[1]], (side(&kept[0]), side(&kept[1])));
    // with one boot on a side it is judged `unreplicated`, on the pairs within the boots
    let logs = (replication.baseline_units >= 2 && replication.level_units >= 2).then(|| (kept, logs(false)));
    (replication, logs)
}
