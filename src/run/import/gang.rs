//! One gang trial from its members' outputs (`margin import --member HOST=FILE…`),
//! recorded as a gang's run records it (src/run/gang.rs): host the gang, each output kept
//! as `raw/<trial>@<host>.out` and parsed into `metric@host`, the declared aggregates.

use std::io::Write;
use std::path::PathBuf;

use super::{ImportError, Importing, Provenance, imported, io, keep, read};
use crate::parse::Recipe;
use crate::plan::{Cell, Plan};
use crate::run::gang::{add_aggregates, record_sample};
use crate::spec::{Experiment, Gang};
use crate::store::Store;

/// One gang trial from `members`' outputs (each member once, in the gang's order) —
/// except what only a run measures: no wall time and no start skew, which the record's
/// warning says. Each output must hold one result. The same outputs again are skipped.
#[allow(clippy::too_many_arguments)]
pub(crate) fn trial(
    exp: &Experiment,
    plan: &Plan,
    cell: &Cell,
    (name, gang): (&str, &Gang),
    store: Store,
    from: &Provenance,
    members: &[(String, PathBuf)],
    recipe: &Recipe,
    out: &mut dyn Write,
) -> Result<(), ImportError> {
    let mut outputs = Vec::with_capacity(members.len());
    for (host, path) in members {
        let output = read(path, recipe)?;
        if output.parsed.samples.len() > 1 {
            let count = output.parsed.samples.len();
            return Err(ImportError::SeveralResults { path: path.clone(), count });
        }
        outputs.push((host, output));
    }
    let mut im = Importing::start(exp, store, from, name, out)?;
    let cell_id = cell.id.to_string();
    // the outputs together identify the trial: the same set again is skipped
    let mut key = String::new();
    for (host, m) in &outputs {
        key.push_str(&format!("{host}\0{}\0", m.hash));
    }
    let hash = blake3::hash(key.as_bytes()).to_hex().to_string();
    let source =
        outputs.iter().map(|(host, m)| format!("{host}={}", m.path.display())).collect::<Vec<_>>().join(", ");
    if im.records.iter().any(|t| t.cell == cell_id && t.source_hash.as_deref() == Some(&hash)) {
        writeln!(out, "{source}: already imported into {} (same contents), skipped", plan.label(cell))
            .map_err(io)?;
        return im.end("imported 0 trials, skipped 1 gang trial already imported".into());
    }
    let repetition =
        im.records.iter().filter(|t| t.cell == cell_id).map(|t| t.repetition).max().unwrap_or(0) + 1;
    let trial = uuid::Uuid::now_v7().to_string();
    let mut raw = None;
    let mut t =
        imported(plan, cell, from, (name, &im.session), trial.clone(), repetition, (source.clone(), hash));
    for (host, m) in outputs {
        // each member's output kept under the name a gang's run gives it, before the record
        let (paths, stdout, _) = im.store.raw_paths(&format!("{trial}@{host}"));
        keep(&stdout, &m.bytes)?;
        raw.get_or_insert(paths);
        record_sample(m.parsed, Some(host), &mut t).map_err(ImportError::Member)?;
    }
    t.raw = raw;
    add_aggregates(gang, &gang.members(), &mut t.metrics, &mut t.metric_info)
        .map_err(|why| ImportError::Aggregates { files: source.clone(), why })?;
    t.warnings.push(format!(
        "imported from one output per member of gang `{name}`: the members' start skew is unknown (only a \
         run measures it); that they ran at once rests on the outputs' source"
    ));
    im.trials.append(&t)?;
    writeln!(out, "{source}: 1 gang trial imported into {}", plan.label(cell)).map_err(io)?;
    im.end("imported 1 gang trial".into())
}
