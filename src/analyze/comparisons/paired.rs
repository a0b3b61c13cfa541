//! The paired design (`paired_by`): the blocks both levels ran, each pair's cells'
//! means one observation a side; in disjoint boots that each ran several blocks, the
//! boots instead ([`super::boots::paired`]).

use std::collections::HashMap;

use super::super::analysed::Analysed;
use super::units::Units;
use super::{Job, Sides, boots};
use stats::StatsError;
use stats::compare::block_means;
use stats::observations::Observations;
use vocab::MeanKind;

/// A block both sides ran: its level of the pairing key, the baseline's cell and the level's.
pub(super) type Pair<'j, 'c> = (&'j str, &'c Analysed, &'c Analysed);

/// The blocks both sides have, in the baseline's order; none when no block has trials of
/// both levels.
pub(super) fn pairs<'j, 'c>(job: &'j Job, analysed: &'c [Analysed]) -> Vec<Pair<'j, 'c>> {
    let other: HashMap<&str, usize> =
        job.other.iter().filter_map(|(b, i)| b.as_deref().map(|b| (b, *i))).collect();
    job.base
        .iter()
        .filter_map(|(b, i)| {
            b.as_deref().and_then(|b| other.get(b).map(|j| (b, &analysed[*i], &analysed[*j])))
        })
        .collect()
}

/// The sides of a paired comparison: each block contributes its cell's mean.
pub(super) fn sides<'c>(
    pairs: &[Pair<'_, 'c>],
    units: &Units<'_>,
    kind: MeanKind,
) -> Result<Sides<'c>, StatsError> {
    let base_cells: Vec<&Analysed> = pairs.iter().map(|p| p.1).collect();
    let other_cells: Vec<&Analysed> = pairs.iter().map(|p| p.2).collect();
    let unit_set = |cells: &[&Analysed]| -> Vec<&str> {
        let mut out: Vec<&str> = Vec::new();
        for c in cells {
            for u in units.values(c, false).into_keys() {
                if !out.contains(&u) {
                    out.push(u);
                }
            }
        }
        out
    };
    let (ua, ub) = (unit_set(&base_cells), unit_set(&other_cells));
    // The blocks each unit ran, over both sides.
    let coverage = |u: &str| -> Vec<usize> {
        (0..pairs.len())
            .filter(|&p| {
                [base_cells[p], other_cells[p]].iter().any(|c| units.values(c, false).contains_key(u))
            })
            .collect()
    };
    let spans_blocks = ua.iter().chain(&ub).any(|u| coverage(u).len() > 1);
    // the blocks every unit ran: there the blocks' centres cancel
    let common: Vec<usize> =
        (0..pairs.len()).filter(|p| ua.iter().chain(&ub).all(|u| coverage(u).contains(p))).collect();
    // Disjoint boots that each ran several blocks: the pairs share their boots, so the
    // boot is the unit here too (docs/statistics.md, Sessions and boots), each boot's
    // mean log-value over the blocks all boots ran. (Units of one block each are
    // independent pairs, whose log-ratios carry the variation between units already:
    // those stay pairs.)
    let (replication, unit_logs) = if ua.iter().all(|u| !ub.contains(u)) && spans_blocks && !common.is_empty()
    {
        let (base_common, other_common): (Vec<&Analysed>, Vec<&Analysed>) =
            common.iter().map(|&p| (base_cells[p], other_cells[p])).unzip();
        let (replication, logs) = boots::paired(units, &base_common, &other_common);
        (Some(replication), logs)
    } else {
        (None, None)
    };
    // Each side's per-block means, of the trials kept or of all trials.
    let means = |cells: &[&Analysed], kept: bool| {
        let samples: Vec<&Observations> =
            cells.iter().map(|cell| if kept { &cell.kept } else { &cell.all }).collect();
        block_means(&samples, kind)
    };
    Ok(Sides {
        kept: [means(&base_cells, true)?, means(&other_cells, true)?],
        all: [means(&base_cells, false)?, means(&other_cells, false)?],
        pairs: pairs.iter().map(|p| p.0.to_owned()).collect(),
        replication,
        single: None,
        unit_logs,
    })
}
