//! `margin import FILE --set f=v… [--host NAME] RAW…`: trials from outputs captured
//! elsewhere (another machine, an old run, a mailing-list post), parsed with the
//! experiment's parser and stored with their source and its hash.

use std::io::Write;
use std::path::PathBuf;

use indexmap::IndexMap;

use super::{Error, io, load_all};
use crate::diag::suggest;
use crate::parse::Recipe;
use crate::plan::{Cell, Plan};
use crate::spec::Experiment;
use crate::store::levels_map;
use crate::store::{Event, MetricInfo, RawPaths, SCHEMA, SessionRecord, Status, Store, TrialRecord};

pub struct Options {
    pub file: PathBuf,
    pub set: Vec<String>,
    pub host: Option<String>,
    /// When the outputs were measured, if known.
    pub started_at: Option<jiff::Timestamp>,
    pub raw: Vec<PathBuf>,
    pub reports: PathBuf,
}

/// `--started-at`: an RFC 3339 time, or a civil `YYYY-MM-DD HH:MM:SS` (or with a `T`)
/// taken as UTC, since an old output rarely says its zone. A time in the future is a typo.
pub fn parse_started_at(text: &str) -> Result<jiff::Timestamp, String> {
    let text = text.trim();
    let expected = || {
        format!(
            "expected an RFC 3339 time (2006-11-23T18:25:53+01:00) or YYYY-MM-DD HH:MM:SS \
             (taken as UTC), found `{text}`"
        )
    };
    let time = match text.parse::<jiff::Timestamp>() {
        Ok(t) => t,
        // A civil date and time, no offset; a date alone is not a time of day.
        Err(_) if text.len() > 10 => text
            .parse::<jiff::civil::DateTime>()
            .and_then(|d| jiff::tz::TimeZone::UTC.to_timestamp(d))
            .map_err(|_| expected())?,
        Err(_) => return Err(expected()),
    };
    if time > jiff::Timestamp::now() {
        return Err(format!("`{text}` is in the future; when were the outputs measured?"));
    }
    Ok(time)
}

/// The one cell the `--set` levels name; otherwise an error listing what exists.
fn find_cell<'p>(plan: &'p Plan, set: &[(String, String)]) -> Result<&'p Cell, Error> {
    for (key, value) in set {
        let Some(k) = plan.keys.iter().position(|k| k == key) else {
            let hint = suggest(key, plan.keys.iter().map(String::as_str)).unwrap_or_default();
            return Err(Error::Input(format!("--set {key}={value}: `{key}` is not a factor; {hint}")));
        };
        // in declared order: the cells follow it
        let mut levels: Vec<&str> = Vec::new();
        for c in &plan.cells {
            for (_, v) in c.levels.iter().filter(|(ck, _)| usize::from(*ck) == k) {
                if !levels.contains(&v.text.as_str()) {
                    levels.push(&v.text);
                }
            }
        }
        if !levels.contains(&value.as_str()) {
            return Err(Error::Input(format!(
                "--set {key}={value}: `{value}` is not a level of `{key}`; its levels are: {}",
                levels.join(", ")
            )));
        }
    }
    let matching: Vec<&Cell> = plan
        .cells
        .iter()
        .filter(|c| set.iter().all(|(k, v)| plan.levels(c).any(|(ck, cv)| ck == k && cv.text == *v)))
        .collect();
    match matching.as_slice() {
        [one] => Ok(one),
        [] => {
            Err(Error::Input("no cell has all these levels together (an exclude or where removed it)".into()))
        }
        many => {
            let unset: Vec<&str> =
                plan.keys.iter().map(String::as_str).filter(|k| !set.iter().any(|(s, _)| s == k)).collect();
            Err(Error::Input(format!(
                "{} cells have these levels; name the cell with --set for: {}",
                many.len(),
                unset.join(", ")
            )))
        }
    }
}

pub fn run(o: &Options, out: &mut dyn Write) -> Result<(), Error> {
    let (exp, plan) = load_all(std::slice::from_ref(&o.file), usize::MAX)?.remove(0);
    let set: Vec<(String, String)> = o
        .set
        .iter()
        .map(|s| match s.split_once('=') {
            Some((k, v)) => Ok((k.trim().to_string(), v.trim().to_string())),
            None => Err(Error::Input(format!("--set {s}: write it as factor=level"))),
        })
        .collect::<Result<_, _>>()?;
    let cell = find_cell(&plan, &set)?;
    let recipe = Recipe::from_spec(&exp.spec).map_err(|(metric, source)| Error::Recipe { metric, source })?;
    if !recipe.reads_output() {
        return Err(Error::Input(format!(
            "{}: the experiment has no `parse:` and no extractor, so an output gives no metric to import",
            exp.path.display()
        )));
    }
    // Parse everything first: one bad file imports nothing.
    let mut parsed = Vec::new();
    for raw in &o.raw {
        let bytes = std::fs::read(raw).map_err(|source| Error::File { path: raw.clone(), source })?;
        let text = String::from_utf8_lossy(&bytes).into_owned();
        let result = recipe.apply(&text, "").map_err(|source| Error::Parse { path: raw.clone(), source })?;
        if result.samples.is_empty() {
            return Err(Error::Input(format!("{}: the parser found no result", raw.display())));
        }
        parsed.push((raw, bytes, blake3::hash(&text.into_bytes()).to_hex().to_string(), result));
    }
    import(&exp, &plan, cell, o, parsed, out)
}

type Parsed<'a> = Vec<(&'a PathBuf, Vec<u8>, String, crate::parse::Parsed)>;

fn import(
    exp: &Experiment,
    plan: &Plan,
    cell: &Cell,
    o: &Options,
    parsed: Parsed<'_>,
    out: &mut dyn Write,
) -> Result<(), Error> {
    let store = Store::new(&o.reports, &exp.name);
    let _lock = store.lock("import")?;
    // the store keeps the file it is imported with, so it can be reported on without it
    store.keep_experiment(exp)?;
    let (records, torn) = store.records()?;
    for w in &torn {
        writeln!(out, "warning: {w}").map_err(io)?;
    }
    let cell_id = cell.id.to_string();
    let mut attempts = records.iter().filter(|t| t.cell == cell_id).map(|t| t.repetition).max().unwrap_or(0);
    let host =
        o.host.clone().or_else(|| plan.levels(cell).find(|(k, _)| *k == "host").map(|(_, v)| v.text.clone()));
    let host = host.unwrap_or_else(|| "imported".to_string());
    let session = uuid::Uuid::now_v7().to_string();
    let mut trials = store.trial_appender()?;
    let mut sessions = store.session_appender()?;
    let mut record = SessionRecord {
        schema: SCHEMA,
        session: session.clone(),
        event: Event::Start,
        at: jiff::Timestamp::now().to_string(),
        host: host.clone(),
        experiment: exp.name.clone(),
        margin_version: env!("CARGO_PKG_VERSION").to_string(),
        seed: 0,
        spec_hash: blake3::hash(exp.source.as_bytes()).to_hex().to_string(),
        facts: IndexMap::new(),
        environment: IndexMap::new(),
        abandoned: Vec::new(),
        problems: Vec::new(),
        keep_workdir: false,
        import: true,
        outcome: None,
        label: None,
    };
    sessions.append(&record)?;
    let (mut added, mut skipped) = (0, 0);
    // The content identifies an output: a file already in the cell, from an earlier
    // import or earlier in this one, is skipped. So an import killed and run again ends
    // with the same trials as one that was never interrupted.
    let mut seen: std::collections::HashSet<String> =
        records.iter().filter(|t| t.cell == cell_id).filter_map(|t| t.source_hash.clone()).collect();
    for (raw, bytes, hash, result) in parsed {
        if !seen.insert(hash.clone()) {
            writeln!(
                out,
                "{}: already imported into {} (same content), skipped",
                raw.display(),
                plan.label(cell)
            )
            .map_err(io)?;
            skipped += 1;
            continue;
        }
        // The store keeps one copy of the file, under its first trial's name, so `reparse`
        // works after the original is gone; every trial of the file points at it, and its
        // `position` says which of the file's results it is. A copy per trial made a
        // bonnie++ CSV of 334 rows 334 copies.
        let mut kept: Option<RawPaths> = None;
        for (i, sample) in result.samples.iter().enumerate() {
            attempts += 1;
            let trial = uuid::Uuid::now_v7().to_string();
            let paths = match &kept {
                Some(paths) => paths.clone(),
                None => {
                    let (paths, stdout, _) = store.raw_paths(&trial);
                    std::fs::write(&stdout, &bytes)
                        .and_then(|()| std::fs::File::open(&stdout)?.sync_data())
                        .map_err(|source| Error::File { path: stdout.clone(), source })?;
                    // its stderr is empty: no file, as for a run's silent stream
                    kept.insert(paths).clone()
                }
            };
            let mut t = TrialRecord {
                schema: SCHEMA,
                trial,
                cell: cell_id.clone(),
                levels: levels_map(plan, cell),
                repetition: attempts,
                warmup: false,
                host: host.clone(),
                session: session.clone(),
                round: 1,
                position: i as u32 + 1,
                started_at: o.started_at.map(|t| t.to_string()),
                status: Status::Imported,
                exit_code: None,
                metrics: IndexMap::new(),
                metric_info: IndexMap::new(),
                wall_time: 0.0,
                raw: Some(paths),
                error: None,
                warnings: result.warnings.clone(),
                source: Some(raw.display().to_string()),
                source_hash: Some(hash.clone()),
                telemetry: None,
                flags: result.flags.iter().map(|f| f.to_string()).collect(),
            };
            for m in &sample.metrics {
                t.metrics.insert(m.name.clone(), m.value);
                t.metric_info.insert(
                    m.name.clone(),
                    MetricInfo { unit: m.unit.symbol().to_string(), better: m.better, mean: m.mean },
                );
            }
            trials.append(&t)?;
            added += 1;
        }
        let n = result.samples.len();
        writeln!(
            out,
            "{}: {n} {} imported into {}",
            raw.display(),
            if n == 1 { "trial" } else { "trials" },
            plan.label(cell)
        )
        .map_err(io)?;
    }
    record.event = Event::End;
    record.at = jiff::Timestamp::now().to_string();
    record.outcome = Some(format!("imported {added} trials, skipped {skipped} files already imported"));
    sessions.append(&record)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::parse_started_at;

    #[test]
    fn started_at_takes_rfc_3339_or_a_civil_time_as_utc() {
        let utc = |s: &str| parse_started_at(s).map(|t| t.to_string());
        assert_eq!(utc("2006-11-23T18:25:53+01:00").unwrap(), "2006-11-23T17:25:53Z");
        assert_eq!(utc("2006-11-23T18:25:53Z").unwrap(), "2006-11-23T18:25:53Z");
        assert_eq!(utc("2006-11-23 18:25:53").unwrap(), "2006-11-23T18:25:53Z");
        assert_eq!(utc(" 2006-11-23T18:25:53 ").unwrap(), "2006-11-23T18:25:53Z");
        for bad in ["2006-11-23", "Thu Nov 23 18:25:53 2006", "2006-13-01 00:00:00", "yesterday", ""] {
            let err = utc(bad).unwrap_err();
            assert!(err.starts_with("expected an RFC 3339 time"), "{bad}: {err}");
        }
        assert!(utc("2999-01-01 00:00:00").unwrap_err().contains("is in the future"));
    }
}
