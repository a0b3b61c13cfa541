//! `margin reparse FILE`: the experiment file's parsers run again over the stored raw
//! outputs (after a parser fix, or a new extractor) without running anything. Only the
//! trials of the file's current cells that measured, failed to parse or were imported are
//! parsed again (a gang's from each member's output); the rest stay as they were. Under the
//! store's lock, the new log is written whole and synced beside the old, the old renamed
//! aside (`runs.<time>.before-reparse.ndjson`, with any lines that do not parse) and the
//! new one put in its place.

use std::io::Write;
use std::path::PathBuf;

use super::args::Reports;
use super::{Error, io, load_all};
use crate::parse::Recipe;
use crate::store::{MetricInfo, Status, Store};
use vocab::is_measured_metric;

/// What reparsing one trial did: changed it, fixed a parse error, or broke its parse.
struct Reparsed {
    changed: usize,
    fixed: usize,
    broken: usize,
}

/// A gang's trial (docs/experiment-file.md, gangs): each member's raw output
/// (`raw/<trial>@<host>.out`) parsed again into `metric@host`, and the aggregates made
/// again from them; `None` when a member's output cannot be read (the trial stays).
fn reparse_gang(
    store: &Store,
    recipe: &Recipe,
    gang: &crate::spec::Gang,
    t: &mut crate::store::TrialRecord,
) -> Option<Reparsed> {
    let members = gang.members();
    let read = |p: String| crate::run::process::read_raw(&store.dir.join(p)).ok();
    let mut outputs = Vec::with_capacity(members.len());
    for m in &members {
        outputs.push((read(format!("raw/{}@{m}.out", t.trial))?, read(format!("raw/{}@{m}.err", t.trial))?));
    }
    let before = (t.status, t.metrics.clone());
    let was_broken = t.status == Status::ParseError;
    t.metrics.retain(|k, _| is_measured_metric(k));
    t.metric_info.retain(|k, _| is_measured_metric(k));
    t.flags.clear();
    // the runner's warnings stay; a parser's, found again, are not repeated
    let warnings = std::mem::take(&mut t.warnings);
    let mut problem = None;
    for (m, (stdout, stderr)) in members.iter().zip(&outputs) {
        if let Err(why) = crate::run::gang::parse_member(recipe, m, stdout, stderr, t) {
            problem.get_or_insert(why);
        }
    }
    let found = std::mem::replace(&mut t.warnings, warnings);
    for w in found {
        if !t.warnings.contains(&w) {
            t.warnings.push(w);
        }
    }
    let problem = problem.or_else(|| {
        crate::run::gang::add_aggregates(gang, &members, &mut t.metrics, &mut t.metric_info).err()
    });
    match problem {
        Some(why) => {
            t.status = Status::ParseError;
            t.error = Some(why);
        }
        None => {
            t.status = if before.0 == Status::Imported { Status::Imported } else { Status::Ok };
            t.error = None;
        }
    }
    let now_broken = t.status == Status::ParseError;
    Some(Reparsed {
        changed: usize::from((t.status, &t.metrics) != (before.0, &before.1)),
        fixed: usize::from(was_broken && !now_broken),
        broken: usize::from(!was_broken && now_broken),
    })
}

/// `margin reparse`'s arguments.
#[derive(Debug, clap::Args)]
pub struct ReparseArgs {
    /// The experiment file.
    pub file: PathBuf,
    #[command(flatten)]
    pub reports: Reports,
}

pub fn run(args: &ReparseArgs, out: &mut dyn Write) -> Result<(), Error> {
    let (exp, plan) = load_all(std::slice::from_ref(&args.file), usize::MAX)?.remove(0);
    let recipe = Recipe::from_spec(&exp.spec).map_err(|(metric, source)| Error::Recipe { metric, source })?;
    let store = Store::new(&args.reports.root, &exp.name);
    let _lock = store.lock("reparse")?;
    let (mut records, torn) = store.records()?;
    for w in &torn {
        writeln!(out, "warning: {w}").map_err(io)?;
    }
    if records.is_empty() {
        return Err(Error::Input(format!("{}: no trials to reparse", store.runs_path().display())));
    }
    let current: std::collections::HashSet<String> = plan.cells.iter().map(|c| c.id.to_string()).collect();
    let (mut changed, mut fixed, mut broken, mut kept) = (0, 0, 0, 0);
    // An imported file of several results is one raw file for its trials, which are
    // consecutive in the log: the last file parsed is parsed once for all of them.
    let mut last: Option<(String, Result<crate::parse::Parsed, crate::parse::ParseError>)> = None;
    for t in &mut records {
        let reparsable = matches!(t.status, Status::Ok | Status::ParseError | Status::Imported);
        let Some(raw) = t.raw.as_ref().filter(|_| reparsable && current.contains(&t.cell)) else {
            kept += 1;
            continue;
        };
        if let Some(gang) = exp.spec.gang(&t.host) {
            match reparse_gang(&store, &recipe, gang, t) {
                None => kept += 1,
                Some(Reparsed { changed: c, fixed: f, broken: b }) => {
                    (changed, fixed, broken) = (changed + c, fixed + f, broken + b);
                }
            }
            continue;
        }
        let entry = match last.take() {
            Some(entry) if entry.0 == raw.stdout => entry,
            _ => {
                // an absent file is a stream that printed nothing
                let read = |p: &str| crate::run::process::read_raw(&store.dir.join(p));
                let (Ok(stdout), Ok(stderr)) = (read(&raw.stdout), read(&raw.stderr)) else {
                    kept += 1;
                    continue;
                };
                (raw.stdout.clone(), recipe.apply(&stdout, &stderr))
            }
        };
        let parsed = &last.insert(entry).1;
        let before = (t.status, t.metrics.clone());
        // margin's own measurements (engine and telemetry) stay; everything parsed is replaced
        t.metrics.retain(|k, _| is_measured_metric(k));
        t.metric_info.retain(|k, _| is_measured_metric(k));
        let measured = if t.status == Status::Imported { Status::Imported } else { Status::Ok };
        match parsed {
            Ok(parsed) if !parsed.samples.is_empty() => {
                // an imported file of several results became several records, in order
                let index =
                    if t.status == Status::Imported { t.position.saturating_sub(1) as usize } else { 0 };
                let sample = parsed.samples.get(index).unwrap_or(&parsed.samples[0]);
                for m in &sample.metrics {
                    t.metrics.insert(m.name.clone(), m.value);
                    t.metric_info.insert(
                        m.name.clone(),
                        MetricInfo { unit: m.unit.symbol().to_string(), better: m.better, mean: m.mean },
                    );
                }
                t.flags = parsed.flags.iter().map(|f| f.to_string()).collect();
                if t.status == Status::ParseError {
                    fixed += 1;
                }
                t.status = measured;
                t.error = None;
            }
            Ok(_) => {
                t.status = Status::ParseError;
                t.error = Some("the parser found no result in the output".into());
                broken += 1;
            }
            Err(e) => {
                if t.status != Status::ParseError {
                    broken += 1;
                }
                t.status = Status::ParseError;
                t.error = Some(e.to_string());
            }
        }
        if (t.status, &t.metrics) != (before.0, &before.1) {
            changed += 1;
        }
    }
    let aside = store.rewrite_trials(&records)?;
    writeln!(
        out,
        "{}: reparsed {} trials: {changed} changed ({fixed} parse errors fixed, {broken} now failing to parse), {kept} left as they were",
        exp.name,
        records.len() - kept
    )
    .map_err(io)?;
    writeln!(out, "  the previous log is kept as {}", aside.display()).map_err(io)?;
    if !torn.is_empty() {
        writeln!(out, "  the lines that do not parse ({}) stay in it, not in the new log", torn.len())
            .map_err(io)?;
    }
    Ok(())
}
