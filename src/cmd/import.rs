//! `margin import FILE --set f=v… [--host NAME] RAW…`: trials from outputs captured
//! elsewhere (another machine, an old run, a mailing-list post), parsed with the
//! experiment's parser and stored with their source and its hash; and
//! `margin import FILE --set host=GANG --member HOST=RAW…`: one trial of a gang, one
//! output per member, recorded as a gang's run records it (docs/experiment-file.md, gangs).

use std::io::Write;
use std::path::PathBuf;

use indexmap::IndexMap;

use super::{Error, io, load_all};
use crate::diag::suggest;
use crate::parse::Recipe;
use crate::plan::{Cell, Plan};
use crate::spec::{Experiment, Gang};
use crate::store::levels_map;
use crate::store::{Event, MetricInfo, RawPaths, SCHEMA, SessionRecord, Status, Store, TrialRecord};

pub struct Options {
    pub file: PathBuf,
    pub set: Vec<String>,
    pub host: Option<String>,
    /// When the outputs were measured, if known.
    pub started_at: Option<jiff::Timestamp>,
    /// The boot the outputs were measured in (`--boot`), recorded as the session's `boot_id`.
    pub boot: Option<String>,
    pub raw: Vec<PathBuf>,
    /// `HOST=FILE`: a gang's trial, one member's output each.
    pub members: Vec<String>,
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

/// `--boot`: a name for the boot the outputs came from, one word of printable characters
/// (it is compared whole, so a space or a control character is more likely a mistake).
pub fn parse_boot(text: &str) -> Result<String, String> {
    if text.is_empty() || text.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(format!(
            "expected a name for the boot the outputs came from, one word (`bare-1`), found `{}`",
            text.escape_debug()
        ));
    }
    Ok(text.to_owned())
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
            // the factors that tell the matching cells apart (one of a single level does not)
            let unset: Vec<&str> = plan
                .keys
                .iter()
                .map(String::as_str)
                .filter(|k| !set.iter().any(|(s, _)| s == k))
                .filter(|k| {
                    let level =
                        |c: &&Cell| plan.levels(c).find(|(ck, _)| ck == k).map(|(_, v)| v.text.clone());
                    many.iter().any(|c| level(c) != level(&many[0]))
                })
                .collect();
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
    let host_level = plan.levels(cell).find(|(k, _)| *k == "host").map(|(_, v)| v.text.clone());
    let gang = host_level.as_deref().and_then(|h| exp.spec.gang(h).map(|g| (h, g)));
    match (gang, o.members.is_empty()) {
        (Some((name, gang)), false) => {
            let outputs = member_outputs(&exp, name, gang, &o.members, &recipe)?;
            return import_gang(&exp, &plan, cell, name, gang, o, outputs, out);
        }
        (Some((name, gang)), true) => {
            let members = gang.members();
            let usage: Vec<String> = members.iter().map(|m| format!("--member {m}=FILE")).collect();
            return Err(Error::Input(format!(
                "{} is a cell of gang `{name}` (hosts {}): its trial is one output per member measured at \
                 once; give them as {}",
                plan.label(cell),
                members.join(", "),
                usage.join(" ")
            )));
        }
        (None, false) => {
            return Err(Error::Input(format!(
                "--member: {} is not a gang's cell (its host is {}); --member is for a level of `host` \
                 that names a gang; give the outputs as files instead",
                plan.label(cell),
                host_level.map_or("not a factor".to_string(), |h| format!("`{h}`"))
            )));
        }
        (None, true) => {}
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
    let host =
        o.host.clone().or_else(|| plan.levels(cell).find(|(k, _)| *k == "host").map(|(_, v)| v.text.clone()));
    let host = host.unwrap_or_else(|| "imported".to_string());
    let mut im = Importing::start(exp, o, &host, out)?;
    let (store, records, trials, session) = (&im.store, &im.records, &mut im.trials, im.session.clone());
    let cell_id = cell.id.to_string();
    let mut attempts = records.iter().filter(|t| t.cell == cell_id).map(|t| t.repetition).max().unwrap_or(0);
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
            let source = (raw.display().to_string(), hash.clone());
            let mut t = imported(plan, cell, o, (&host, &session), trial, attempts, source);
            t.position = i as u32 + 1;
            t.raw = Some(paths);
            t.warnings = result.warnings.clone();
            t.flags = result.flags.iter().map(|f| f.to_string()).collect();
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
    im.end(format!("imported {added} trials, skipped {skipped} files already imported"))
}

/// An imported trial's record before its metrics: `imported`, no exit code or wall time,
/// its time the import's `--started-at` (else unknown), its source and the source's hash.
fn imported(
    plan: &Plan,
    cell: &Cell,
    o: &Options,
    (host, session): (&str, &str),
    trial: String,
    repetition: u32,
    (source, hash): (String, String),
) -> TrialRecord {
    TrialRecord {
        schema: SCHEMA,
        trial,
        cell: cell.id.to_string(),
        levels: levels_map(plan, cell),
        repetition,
        warmup: false,
        host: host.to_string(),
        session: session.to_string(),
        round: 1,
        position: 1,
        started_at: o.started_at.map(|t| t.to_string()),
        status: Status::Imported,
        exit_code: None,
        metrics: IndexMap::new(),
        metric_info: IndexMap::new(),
        wall_time: 0.0,
        raw: None,
        error: None,
        warnings: Vec::new(),
        source: Some(source),
        source_hash: Some(hash),
        telemetry: None,
        flags: Vec::new(),
    }
}

/// An import's session in a locked store: its start recorded, the log read, the
/// appenders open; [`Importing::end`] records its end.
struct Importing {
    store: Store,
    _lock: crate::store::Lock,
    records: Vec<TrialRecord>,
    trials: crate::store::Appender,
    sessions: crate::store::Appender,
    record: SessionRecord,
    session: String,
}

impl Importing {
    fn start(exp: &Experiment, o: &Options, host: &str, out: &mut dyn Write) -> Result<Self, Error> {
        let store = Store::new(&o.reports, &exp.name);
        let lock = store.lock("import")?;
        // the store keeps the file it is imported with, so it can be reported on without it
        store.keep_experiment(exp)?;
        let (records, torn) = store.records()?;
        for w in &torn {
            writeln!(out, "warning: {w}").map_err(io)?;
        }
        let session = uuid::Uuid::now_v7().to_string();
        let trials = store.trial_appender()?;
        let mut sessions = store.session_appender()?;
        let record = SessionRecord {
            schema: SCHEMA,
            session: session.clone(),
            event: Event::Start,
            at: jiff::Timestamp::now().to_string(),
            host: host.to_string(),
            experiment: exp.name.clone(),
            margin_version: env!("CARGO_PKG_VERSION").to_string(),
            seed: 0,
            spec_hash: blake3::hash(exp.source.as_bytes()).to_hex().to_string(),
            // the only fact an import knows, when told: which boot its outputs share
            facts: o.boot.iter().map(|b| (crate::store::BOOT_ID.to_string(), b.clone())).collect(),
            environment: IndexMap::new(),
            abandoned: Vec::new(),
            problems: Vec::new(),
            keep_workdir: false,
            import: true,
            outcome: None,
            label: None,
        };
        sessions.append(&record)?;
        Ok(Importing { store, _lock: lock, records, trials, sessions, record, session })
    }

    fn end(mut self, outcome: String) -> Result<(), Error> {
        self.record.event = Event::End;
        self.record.at = jiff::Timestamp::now().to_string();
        self.record.outcome = Some(outcome);
        self.sessions.append(&self.record)?;
        Ok(())
    }
}

/// One member's output for a gang's import: the member, the file, its bytes and hash,
/// and the parser's reading of it.
struct MemberOutput {
    host: String,
    path: PathBuf,
    bytes: Vec<u8>,
    hash: String,
    parsed: crate::parse::Parsed,
}

/// The `--member HOST=FILE` arguments checked against the gang (each member once, every
/// member given, no other host) and parsed, in the gang's member order; one result each.
fn member_outputs(
    exp: &Experiment,
    gang_name: &str,
    gang: &Gang,
    members: &[String],
    recipe: &Recipe,
) -> Result<Vec<MemberOutput>, Error> {
    let names = gang.members();
    let mut given: IndexMap<&str, PathBuf> = IndexMap::new();
    for arg in members {
        let Some((host, file)) = arg.split_once('=').map(|(h, f)| (h.trim(), f.trim())) else {
            return Err(Error::Input(format!(
                "--member {arg}: write it as host=file, e.g. --member {}=out.txt",
                names[0]
            )));
        };
        if !names.contains(&host) {
            let hosts: Vec<&str> = exp.spec.hosts.keys().map(|k| k.value.as_str()).collect();
            let why = if hosts.contains(&host) {
                format!("`{host}` is a host of the experiment but not a member of gang `{gang_name}`")
            } else {
                let hint =
                    suggest(host, names.iter().copied()).map(|h| format!(" ({h})")).unwrap_or_default();
                format!("`{host}` is not a member of gang `{gang_name}`{hint}")
            };
            return Err(Error::Input(format!(
                "--member {arg}: {why}; its members are: {}",
                names.join(", ")
            )));
        }
        if given.insert(host, PathBuf::from(file)).is_some() {
            return Err(Error::Input(format!(
                "--member {host}=…: given twice; a gang's trial takes one output per member"
            )));
        }
    }
    let missing: Vec<&str> = names.iter().copied().filter(|m| !given.contains_key(m)).collect();
    if !missing.is_empty() {
        let usage: Vec<String> = missing.iter().map(|m| format!("--member {m}=FILE")).collect();
        return Err(Error::Input(format!(
            "gang `{gang_name}` has members {}: no output given for {}; add {}",
            names.join(", "),
            missing.join(", "),
            usage.join(" ")
        )));
    }
    let mut outputs = Vec::with_capacity(names.len());
    for host in names {
        let path = given[host].clone();
        let bytes = std::fs::read(&path).map_err(|source| Error::File { path: path.clone(), source })?;
        let text = String::from_utf8_lossy(&bytes).into_owned();
        let parsed = recipe.apply(&text, "").map_err(|source| Error::Parse { path: path.clone(), source })?;
        match parsed.samples.len() {
            1 => {}
            0 => return Err(Error::Input(format!("{}: the parser found no result", path.display()))),
            n => {
                return Err(Error::Input(format!(
                    "{}: holds {n} results; a gang's trial is one result per member, measured at once \
                     (cut the file into one output per trial, and import each trial on its own)",
                    path.display()
                )));
            }
        }
        let hash = blake3::hash(text.as_bytes()).to_hex().to_string();
        outputs.push(MemberOutput { host: host.to_string(), path, bytes, hash, parsed });
    }
    Ok(outputs)
}

/// One gang trial from its members' outputs: recorded as a gang's run records it
/// (src/run/gang.rs) — host the gang, each output kept as `raw/<trial>@<host>.out` and
/// parsed into `metric@host`, the declared aggregates — except what only a run measures:
/// no wall time and no start skew, which the record's warning says.
#[allow(clippy::too_many_arguments)]
fn import_gang(
    exp: &Experiment,
    plan: &Plan,
    cell: &Cell,
    name: &str,
    gang: &Gang,
    o: &Options,
    outputs: Vec<MemberOutput>,
    out: &mut dyn Write,
) -> Result<(), Error> {
    let members = gang.members();
    let mut im = Importing::start(exp, o, name, out)?;
    let cell_id = cell.id.to_string();
    // the outputs together identify the trial: the same set again is skipped
    let mut key = String::new();
    for m in &outputs {
        key.push_str(&format!("{}\0{}\0", m.host, m.hash));
    }
    let hash = blake3::hash(key.as_bytes()).to_hex().to_string();
    let source =
        outputs.iter().map(|m| format!("{}={}", m.host, m.path.display())).collect::<Vec<_>>().join(", ");
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
        imported(plan, cell, o, (name, &im.session), trial.clone(), repetition, (source.clone(), hash));
    for m in outputs {
        // each member's output kept under the name a gang's run gives it, before the record
        let (paths, stdout, _) = im.store.raw_paths(&format!("{trial}@{}", m.host));
        std::fs::write(&stdout, &m.bytes)
            .and_then(|()| std::fs::File::open(&stdout)?.sync_data())
            .map_err(|source| Error::File { path: stdout.clone(), source })?;
        raw.get_or_insert(paths);
        crate::run::gang::record_sample(m.parsed, Some(&m.host), &mut t).map_err(Error::Input)?;
    }
    t.raw = raw;
    crate::run::gang::add_aggregates(gang, &members, &mut t.metrics, &mut t.metric_info)
        .map_err(|why| Error::Input(format!("{source}: {why}")))?;
    t.warnings.push(format!(
        "imported from one output per member of gang `{name}`: the members' start skew is unknown (only a \
         run measures it); that they ran at once rests on the outputs' source"
    ));
    im.trials.append(&t)?;
    writeln!(out, "{source}: 1 gang trial imported into {}", plan.label(cell)).map_err(io)?;
    im.end("imported 1 gang trial".into())
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
