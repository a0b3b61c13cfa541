//! `margin compare A [B]`: two stores, or two selections of one store (by run label,
//! session or date), set side by side by the report's own analysis — the same Welch and
//! Fieller intervals, Holm adjustment and verdicts (docs/statistics.md) — a row per cell
//! and metric, the candidate against the baseline; cells whose commands differ are listed
//! as not comparable, and so are the differences between the two sides' machines. With
//! `--fail-on`, a gate for CI (docs/design.md §4, Exit codes).

use std::collections::{BTreeSet, HashMap};
use std::fmt;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::Arc;

use indexmap::IndexMap;
use serde::Serialize;

use super::report::{Target, resolve};
use super::{Error, io, load_all};
use crate::analyze;
use crate::plan::{Cell, Plan};
use crate::report::format::{cell_text, markdown_table, percent};
use crate::report::glance;
use crate::spec::{Compare, Experiment, Located};
use crate::stats::notation::{change_and_interval, ratio_change};
use crate::stats::verdict::VerdictKind;
use crate::store::{BOOT_ID, Event, SessionRecord, Snapshot, Store, TrialRecord, Trials};
use crate::summary::{ComparisonStat, Summary, Warning};
use crate::vocab::{Better, CellId, Scalar};

/// What makes `compare` exit 1 (`--fail-on`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FailOn {
    /// A metric is worse beyond ±δ: verdict `significant` in the worse direction.
    Worse,
    /// A metric changed beyond ±δ, either way: verdict `significant`.
    Change,
}

impl FailOn {
    /// The word `--fail-on` takes.
    fn word(self) -> &'static str {
        match self {
            FailOn::Worse => "worse",
            FailOn::Change => "change",
        }
    }
}

impl FromStr for FailOn {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "worse" => Ok(FailOn::Worse),
            "change" => Ok(FailOn::Change),
            _ => Err(format!("`{s}`: expected `worse` (a metric worse beyond ±δ) or `change` (either way)")),
        }
    }
}

/// One condition of a selection.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Term {
    /// The sessions of runs given this `--label`.
    Label(String),
    /// The session with this id, or the one id that starts with it.
    Session(String),
    /// Trials that started at or after this time.
    Since(jiff::Timestamp),
    /// Trials that started before this time.
    Until(jiff::Timestamp),
}

/// Which trials of a store make one side: `label=v2`, `session=ID`, `since=TIME`,
/// `until=TIME`, several joined by commas, all of which must hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Selection {
    terms: Vec<Term>,
    text: String,
}

impl fmt::Display for Selection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl FromStr for Selection {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let mut terms = Vec::new();
        for part in text.split(',').map(str::trim) {
            let Some((key, value)) = part.split_once('=') else {
                return Err(format!(
                    "`{part}`: expected KEY=VALUE, with KEY one of label, session, since, until \
                     (e.g. `label=v2` or `since=2026-12-01,until=2026-12-02`)"
                ));
            };
            let value = value.trim();
            if value.is_empty() {
                return Err(format!("`{part}`: the value is empty"));
            }
            terms.push(match key.trim() {
                "label" => Term::Label(value.to_owned()),
                "session" => Term::Session(value.to_owned()),
                "since" => Term::Since(time(value)?),
                "until" => Term::Until(time(value)?),
                other => {
                    return Err(format!(
                        "`{other}` in `{part}`: a selection is by label, session, since or until"
                    ));
                }
            });
        }
        Ok(Selection { terms, text: text.trim().to_owned() })
    }
}

/// A time of `since=`/`until=`: RFC 3339, `YYYY-MM-DD HH:MM:SS` or `YYYY-MM-DDTHH:MM:SS`
/// (UTC), or a date alone (its midnight, UTC).
fn time(text: &str) -> Result<jiff::Timestamp, String> {
    if let Ok(t) = text.parse::<jiff::Timestamp>() {
        return Ok(t);
    }
    let utc = |d: jiff::civil::DateTime| jiff::tz::TimeZone::UTC.to_timestamp(d).ok();
    let civil = text.replacen(' ', "T", 1).parse::<jiff::civil::DateTime>().ok().and_then(utc);
    let day = || {
        text.parse::<jiff::civil::Date>().ok().and_then(|d| utc(d.to_datetime(jiff::civil::Time::midnight())))
    };
    civil.or_else(day).ok_or_else(|| {
        format!(
            "`{text}`: expected a time, RFC 3339 (2026-12-01T14:00:00Z), YYYY-MM-DD HH:MM:SS or a date \
             YYYY-MM-DD (UTC)"
        )
    })
}

/// What `margin compare` was asked.
#[derive(Debug, Clone)]
pub struct Options {
    /// One target (both sides from its store) or two (baseline, candidate): experiment
    /// files, store folders or names, as `report` takes them.
    pub targets: Vec<PathBuf>,
    pub baseline: Option<Selection>,
    pub candidate: Option<Selection>,
    pub fail_on: Option<FailOn>,
    pub json: bool,
    pub reports: PathBuf,
}

/// The name of the factor the two sides are levels of, in the analysis and its table.
const SIDE: &str = "side";
const BASELINE: &str = "baseline";
const CANDIDATE: &str = "candidate";

/// One side as read: its experiment, its store, and the records selected.
struct Side {
    exp: Experiment,
    store: Store,
    selection: Option<Selection>,
    records: Vec<TrialRecord>,
    sessions: Vec<SessionRecord>,
}

/// What one side holds, for the output.
#[derive(Debug, Clone, Serialize)]
pub struct SideInfo {
    pub experiment: String,
    pub experiment_file: String,
    pub store: String,
    /// The selection as given (`label=v2`), or `None`: every trial of the store.
    pub selection: Option<String>,
    pub sessions: Vec<String>,
    pub labels: Vec<String>,
    /// Measured trials (not warm-ups) selected, of every cell.
    pub trials: usize,
}

/// A cell both sides have whose trials ran with different rules.
#[derive(Debug, Clone, Serialize)]
pub struct NotComparable {
    /// `bs=1k sync=none`.
    pub cell: String,
    /// The cell ids of each side: they hash the commands, vars, parser and extractors.
    pub baseline_ids: Vec<String>,
    pub candidate_ids: Vec<String>,
}

/// A fact whose values differ between the sides' sessions.
#[derive(Debug, Clone, Serialize)]
pub struct FactDifference {
    pub fact: String,
    pub baseline: Vec<String>,
    pub candidate: Vec<String>,
}

/// A comparison that trips the gate.
#[derive(Debug, Clone, Serialize)]
pub struct Tripped {
    pub metric: String,
    pub cell: String,
    pub change: String,
    pub verdict: VerdictKind,
}

/// `margin compare --json`: everything the Markdown says.
#[derive(Debug, Clone, Serialize)]
pub struct CompareOutput {
    pub baseline: SideInfo,
    pub candidate: SideInfo,
    /// The analysis settings (the baseline experiment's), as in summary.json.
    pub settings: crate::summary::AnalysisSettings,
    /// A row per compared cell and metric: `level` is `candidate`, the context the cell.
    pub comparisons: Vec<ComparisonStat>,
    pub not_comparable: Vec<NotComparable>,
    pub only_baseline: Vec<String>,
    pub only_candidate: Vec<String>,
    pub environment_differences: Vec<FactDifference>,
    pub warnings: Vec<Warning>,
    pub fail_on: Option<FailOn>,
    /// The comparisons that trip `fail_on`; a gate fails when there are any.
    pub failed: Vec<Tripped>,
}

pub fn run(options: &Options, out: &mut dyn Write) -> Result<(), Error> {
    let (a, b) = match &options.targets[..] {
        [one] => {
            if options.baseline.is_none() || options.candidate.is_none() {
                return Err(Error::Input(format!(
                    "one store, `{}`: say which of its trials each side is, with --baseline and \
                     --candidate (e.g. `--baseline label=v1 --candidate label=v2`), or give two stores",
                    one.display()
                )));
            }
            (one, one)
        }
        [a, b] => (a, b),
        _ => return Err(Error::Input("compare takes one store (with two selections) or two".into())),
    };
    let base = side(a, options.baseline.as_ref(), &options.reports)?;
    let cand = side(b, options.candidate.as_ref(), &options.reports)?;
    if base.store.dir == cand.store.dir && options.baseline == options.candidate {
        return Err(Error::Input(format!(
            "both sides are the same trials of {}: select different ones with --baseline and --candidate",
            base.store.dir.display()
        )));
    }
    let (output, summary) = compare(&base, &cand, options.fail_on)?;
    if options.json {
        let text = crate::summary::json::to_string(&output).map_err(|e| Error::Output(e.into()))?;
        writeln!(out, "{text}").map_err(io)?;
    } else {
        write!(out, "{}", markdown(&output, &summary)).map_err(io)?;
    }
    out.flush().map_err(io)?;
    if output.comparisons.is_empty() {
        return Err(Error::Input(
            "nothing could be compared: no cell has analysed trials on both sides with the same \
             commands (see above)"
                .into(),
        ));
    }
    if let Some(fail_on) = options.fail_on
        && !output.failed.is_empty()
    {
        let rows: Vec<String> =
            output.failed.iter().map(|t| format!("{} ({}) {}", t.metric, t.cell, t.change)).collect();
        let what = if fail_on == FailOn::Worse { "worse" } else { "changed" };
        return Err(Error::Gate(format!(
            "--fail-on {}: the candidate is {what} beyond ±{}: {}",
            fail_on.word(),
            percent(output.settings.threshold_pct),
            rows.join("; ")
        )));
    }
    Ok(())
}

/// Reads one side: the target's experiment and store, and the records its selection keeps.
fn side(target: &Path, selection: Option<&Selection>, reports: &Path) -> Result<Side, Error> {
    let t: Target = resolve(target, reports, "compare")?;
    let (exp, _) = load_all(std::slice::from_ref(&t.file), usize::MAX)?.remove(0);
    let store = t.store(reports, &exp);
    if !Store::is_store(&store.dir) {
        return Err(Error::Input(format!(
            "{}: no store at {}: nothing has run or been imported yet (`margin run {}`)",
            exp.name,
            store.dir.display(),
            exp.path.display()
        )));
    }
    let (records, _) = store.records()?;
    let (sessions, _) = store.session_records()?;
    let records = match selection {
        None => records,
        Some(sel) => select(&store, sel, records, &sessions)?,
    };
    if !records.iter().any(|r| r.status.is_measurement() && !r.warmup) {
        let which = selection.map_or_else(String::new, |s| format!(" selected by `{s}`"));
        return Err(Error::Input(format!(
            "{}: the trials{which} hold no measurement (only warm-ups or failures, or none)",
            store.dir.display()
        )));
    }
    let used: BTreeSet<&str> = records.iter().map(|r| r.session.as_str()).collect();
    let sessions = sessions.iter().filter(|s| used.contains(s.session.as_str())).cloned().collect();
    Ok(Side { exp, store, selection: selection.cloned(), records, sessions })
}

/// The records of `store` that every term of the selection keeps; an unknown label or
/// session is an error naming those that exist.
fn select(
    store: &Store,
    selection: &Selection,
    records: Vec<TrialRecord>,
    sessions: &[SessionRecord],
) -> Result<Vec<TrialRecord>, Error> {
    let starts: Vec<&SessionRecord> = sessions.iter().filter(|s| s.event == Event::Start).collect();
    let mut keep_sessions: Option<BTreeSet<&str>> = None;
    fn narrow<'s>(keep: &mut Option<BTreeSet<&'s str>>, ids: BTreeSet<&'s str>) {
        *keep = Some(match keep.take() {
            None => ids,
            Some(before) => before.intersection(&ids).copied().collect(),
        });
    }
    let (mut since, mut until) = (None, None);
    for term in &selection.terms {
        match term {
            Term::Label(label) => {
                let ids: BTreeSet<&str> = starts
                    .iter()
                    .filter(|s| s.label.as_deref() == Some(label.as_str()))
                    .map(|s| s.session.as_str())
                    .collect();
                if ids.is_empty() {
                    let mut known: Vec<&str> = starts.iter().filter_map(|s| s.label.as_deref()).collect();
                    known.dedup();
                    let known = if known.is_empty() { "none".to_owned() } else { known.join(", ") };
                    return Err(Error::Input(format!(
                        "{}: no session has the label `{label}`; its labels: {known}\n\
                         hint: `margin run FILE --label {label}` records one",
                        store.dir.display()
                    )));
                }
                narrow(&mut keep_sessions, ids);
            }
            Term::Session(id) => {
                let ids: BTreeSet<&str> = starts
                    .iter()
                    .map(|s| s.session.as_str())
                    .filter(|s| s.starts_with(id.as_str()))
                    .collect();
                if ids.len() != 1 {
                    let known: Vec<&str> = starts.iter().map(|s| s.session.as_str()).collect();
                    let why = if ids.is_empty() { "no session" } else { "more than one session" };
                    return Err(Error::Input(format!(
                        "{}: {why} of the store has an id starting `{id}`; its sessions: {}",
                        store.dir.display(),
                        if known.is_empty() { "none".to_owned() } else { known.join(", ") }
                    )));
                }
                narrow(&mut keep_sessions, ids);
            }
            Term::Since(t) => since = Some(since.map_or(*t, |s: jiff::Timestamp| s.max(*t))),
            Term::Until(t) => until = Some(until.map_or(*t, |u: jiff::Timestamp| u.min(*t))),
        }
    }
    let dated = since.is_some() || until.is_some();
    let kept = records
        .into_iter()
        .filter(|r| keep_sessions.as_ref().is_none_or(|ids| ids.contains(r.session.as_str())))
        .filter(|r| {
            if !dated {
                return true;
            }
            // a trial of unknown time (an import without --started-at) is in no date range
            let Some(at) = r.started_at.as_deref().and_then(|t| t.parse::<jiff::Timestamp>().ok()) else {
                return false;
            };
            since.is_none_or(|s| at >= s) && until.is_none_or(|u| at < u)
        })
        .collect();
    Ok(kept)
}

/// Each cell of a side's records: its levels and the cell ids its trials ran under.
type Cells = IndexMap<String, (IndexMap<String, String>, BTreeSet<String>)>;

fn cells(records: &[TrialRecord]) -> Cells {
    let mut out: Cells = IndexMap::new();
    for r in records {
        let entry = out.entry(label(&r.levels)).or_insert_with(|| (r.levels.clone(), BTreeSet::new()));
        entry.1.insert(r.cell.clone());
    }
    out
}

fn label(levels: &IndexMap<String, String>) -> String {
    levels.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(" ")
}

/// The id a side's copy of a cell gets in the joint plan: the two copies must differ.
fn side_id(id: &str, side: &str) -> CellId {
    let hash = blake3::hash(format!("{id}/{side}").as_bytes());
    let mut first = [0u8; 8];
    first.copy_from_slice(&hash.as_bytes()[..8]);
    CellId(u64::from_le_bytes(first))
}

/// The two sides as one experiment with a factor `side` (baseline, candidate) compared
/// within each cell, analysed by [`analyze::summarize_owned`] as a report would be.
fn compare(base: &Side, cand: &Side, fail_on: Option<FailOn>) -> Result<(CompareOutput, Summary), Error> {
    let (a_cells, b_cells) = (cells(&base.records), cells(&cand.records));
    let mut comparable: Vec<(&IndexMap<String, String>, &str)> = Vec::new();
    let mut not_comparable = Vec::new();
    for (label, (levels, ids)) in &a_cells {
        let Some((_, other)) = b_cells.get(label) else { continue };
        match (ids.len(), ids == other) {
            (1, true) => comparable.push((levels, ids.first().map(String::as_str).unwrap_or_default())),
            _ => not_comparable.push(NotComparable {
                cell: label.clone(),
                baseline_ids: ids.iter().cloned().collect(),
                candidate_ids: other.iter().cloned().collect(),
            }),
        }
    }
    let only = |of: &Cells, other: &Cells| -> Vec<String> {
        of.keys().filter(|k| !other.contains_key(*k)).cloned().collect()
    };

    // The joint plan: every level key in first-seen order, then the side.
    let mut keys: Vec<String> = Vec::new();
    for (levels, _) in &comparable {
        for k in levels.keys() {
            if !keys.contains(k) {
                keys.push(k.clone());
            }
        }
    }
    let mut side_key = SIDE.to_owned();
    while keys.contains(&side_key) {
        side_key.push('_');
    }
    keys.push(side_key.clone());
    let mut plan = Plan {
        experiment: base.exp.name.clone(),
        factor_keys: keys.len(),
        keys,
        factors: Vec::new(),
        cells: Vec::new(),
        repetitions: base.exp.spec.repetitions(),
        warmup: 0,
    };
    let mut ids: HashMap<(&str, &str), String> = HashMap::new();
    for (levels, id) in &comparable {
        for side in [BASELINE, CANDIDATE] {
            let mut cell_levels: Vec<(u16, Arc<Scalar>)> = levels
                .iter()
                .map(|(k, v)| {
                    (plan.keys.iter().position(|p| p == k).unwrap_or(0) as u16, Arc::new(Scalar::str(v)))
                })
                .collect();
            cell_levels.push(((plan.keys.len() - 1) as u16, Arc::new(Scalar::str(side))));
            cell_levels.sort_by_key(|(k, _)| *k);
            let cell_id = side_id(id, side);
            ids.insert((id, side), cell_id.to_string());
            plan.cells.push(Cell { id: cell_id, levels: cell_levels, added: false });
        }
    }
    let mut records = Vec::new();
    for (side, from) in [(BASELINE, base), (CANDIDATE, cand)] {
        for r in &from.records {
            let Some(id) = ids.get(&(r.cell.as_str(), side)) else { continue };
            let mut r = r.clone();
            r.cell.clone_from(id);
            r.levels.insert(side_key.clone(), side.to_owned());
            records.push(r);
        }
    }
    let snapshot = Snapshot {
        trials: Trials::from_records(&records),
        sessions: base.sessions.iter().chain(&cand.sessions).cloned().collect(),
        warnings: Vec::new(),
    };
    let mut exp = base.exp.clone();
    let at = crate::diag::Pos::default();
    exp.spec.analysis.compare = vec![Located::new(
        Compare {
            factor: Located::new(side_key.clone(), at),
            baseline: Located::new(Scalar::str(BASELINE), at),
            paired_by: None,
        },
        at,
    )];
    let ((), summary) = analyze::summarize_owned(&exp, &plan, snapshot, |_| ());
    let summary = summary.map_err(|source| Error::Analyze { experiment: exp.name.clone(), source })?;

    let failed = tripped(&summary, fail_on);
    let info = |s: &Side| {
        let measured = |r: &&TrialRecord| r.status.is_measurement() && !r.warmup;
        let mut labels: Vec<String> = Vec::new();
        for label in s.sessions.iter().filter_map(|x| x.label.as_ref()) {
            if !labels.contains(label) {
                labels.push(label.clone());
            }
        }
        SideInfo {
            experiment: s.exp.name.clone(),
            experiment_file: s.exp.path.display().to_string(),
            store: s.store.dir.display().to_string(),
            selection: s.selection.as_ref().map(ToString::to_string),
            sessions: s
                .sessions
                .iter()
                .filter(|x| x.event == Event::Start)
                .map(|x| x.session.clone())
                .collect(),
            labels,
            trials: s.records.iter().filter(measured).count(),
        }
    };
    let output = CompareOutput {
        baseline: info(base),
        candidate: info(cand),
        settings: summary.settings.clone(),
        not_comparable,
        only_baseline: only(&a_cells, &b_cells),
        only_candidate: only(&b_cells, &a_cells),
        environment_differences: differences(&base.sessions, &cand.sessions),
        warnings: summary.warnings.clone(),
        fail_on,
        failed,
        comparisons: summary.comparisons.clone(),
    };
    Ok((output, summary))
}

/// The comparisons that trip the gate: `significant` (beyond ±δ), in the worse direction
/// for `worse`. `uncertain_size` — real, but perhaps within ±δ — trips neither.
fn tripped(summary: &Summary, fail_on: Option<FailOn>) -> Vec<Tripped> {
    let Some(fail_on) = fail_on else { return Vec::new() };
    let better: HashMap<&str, Better> = summary.metrics.iter().map(|m| (m.name.as_str(), m.better)).collect();
    summary
        .comparisons
        .iter()
        .filter(|c| c.verdict == VerdictKind::Significant)
        .filter(|c| match (fail_on, better.get(c.metric.as_str())) {
            (FailOn::Change, _) => true,
            (FailOn::Worse, Some(Better::Higher)) => c.ratio < 1.0,
            (FailOn::Worse, Some(Better::Lower)) => c.ratio > 1.0,
            (FailOn::Worse, None) => false,
        })
        .map(|c| Tripped {
            metric: c.metric.clone(),
            cell: glance::context(c),
            change: match (c.ci_low, c.ci_high) {
                (Some(l), Some(h)) => {
                    let (change, interval) = change_and_interval(c.ratio, (l, h));
                    format!("{change} {interval}")
                }
                _ => ratio_change(c.ratio),
            },
            verdict: c.verdict,
        })
        .collect()
}

/// The facts (and margin's version and the boot) whose values differ between the sides'
/// sessions; the host name is one of them when the machines differ.
fn differences(a: &[SessionRecord], b: &[SessionRecord]) -> Vec<FactDifference> {
    let facts = |sessions: &[SessionRecord]| -> IndexMap<String, BTreeSet<String>> {
        let mut out: IndexMap<String, BTreeSet<String>> = IndexMap::new();
        for s in sessions.iter().filter(|s| s.event == Event::Start) {
            out.entry("host".to_owned()).or_default().insert(s.host.clone());
            out.entry("margin_version".to_owned()).or_default().insert(s.margin_version.clone());
            for (k, v) in &s.facts {
                out.entry(k.clone()).or_default().insert(v.clone());
            }
        }
        out
    };
    let (fa, fb) = (facts(a), facts(b));
    let mut keys: Vec<&String> = fa.keys().collect();
    keys.extend(fb.keys().filter(|k| !fa.contains_key(*k)));
    let empty = BTreeSet::new();
    keys.into_iter()
        .filter(|k| fa.get(*k).unwrap_or(&empty) != fb.get(*k).unwrap_or(&empty))
        .map(|k| FactDifference {
            fact: k.clone(),
            baseline: fa.get(k).unwrap_or(&empty).iter().cloned().collect(),
            candidate: fb.get(k).unwrap_or(&empty).iter().cloned().collect(),
        })
        .collect()
}

/// A side in one line: `reports/dd-write (label=v1): 1 session, 10 trials`.
fn side_line(name: &str, s: &SideInfo) -> String {
    let selection = s.selection.as_ref().map_or_else(|| " (every trial)".to_owned(), |x| format!(" (`{x}`)"));
    let sessions = s.sessions.len();
    format!(
        "- **{name}**: `{}`{selection}, experiment `{}`: {sessions} session{}, {} trial{}",
        s.store,
        s.experiment,
        if sessions == 1 { "" } else { "s" },
        s.trials,
        if s.trials == 1 { "" } else { "s" },
    )
}

/// The Markdown `compare` prints: the sides, the verdict table (the report's glance
/// table), what could not be compared, how the machines differ, the warnings, the gate.
fn markdown(o: &CompareOutput, summary: &Summary) -> String {
    let mut text = String::from("# margin compare: candidate vs baseline\n\n");
    text.push_str(&side_line(BASELINE, &o.baseline));
    text.push('\n');
    text.push_str(&side_line(CANDIDATE, &o.candidate));
    text.push_str("\n\n");
    let shown = glance::ranked(&summary.comparisons);
    if shown.is_empty() {
        text.push_str("Nothing compared.\n\n");
    } else {
        text.push_str(&glance::table(summary, &shown));
        // a table ends at a blank line (CommonMark tables): the legend is a paragraph
        text.push_str("\n\n");
        text.push_str(&glance::legend(summary, &shown));
        text.push_str("\n\n");
        for c in &shown {
            text.push_str(&format!("- {} · {}: {}\n", c.metric, glance::context(c), c.sentence));
        }
        text.push('\n');
    }
    if !o.not_comparable.is_empty() {
        text.push_str("## Not comparable\n\nCells whose trials ran with different commands, vars, parser or metric rules (their cell ids differ), never compared:\n\n");
        for n in &o.not_comparable {
            text.push_str(&format!(
                "- {}: baseline {}, candidate {}\n",
                n.cell,
                n.baseline_ids.join(", "),
                n.candidate_ids.join(", ")
            ));
        }
        text.push('\n');
    }
    for (what, cells) in
        [("Only in the baseline", &o.only_baseline), ("Only in the candidate", &o.only_candidate)]
    {
        if !cells.is_empty() {
            text.push_str(&format!("## {what}\n\n"));
            for c in cells {
                text.push_str(&format!("- {c}\n"));
            }
            text.push('\n');
        }
    }
    text.push_str("## Environment\n\n");
    if o.environment_differences.is_empty() {
        text.push_str("The two sides' sessions recorded the same facts (host, kernel, CPU, boot, margin's version…).\n\n");
    } else {
        let header: Vec<String> = ["fact", BASELINE, CANDIDATE].map(str::to_owned).to_vec();
        let rows: Vec<Vec<String>> = o
            .environment_differences
            .iter()
            .map(|d| {
                let values =
                    |v: &[String]| if v.is_empty() { "—".to_owned() } else { cell_text(&v.join(", ")) };
                let fact = if d.fact == BOOT_ID { "boot_id (the boot)".to_owned() } else { d.fact.clone() };
                vec![fact, values(&d.baseline), values(&d.candidate)]
            })
            .collect();
        text.push_str("Facts that differ between the two sides' sessions:\n\n");
        text.push_str(&markdown_table(&header, &rows, header.len()));
        text.push_str("\n\n");
    }
    if !o.warnings.is_empty() {
        text.push_str(
            "## Warnings\n\nThe analysis's own, worded for the factor `side`: sides run one after the other \
             are measured in disjoint time windows by design, and drift between the runs is in the change \
             (docs/compare.md, Environment).\n\n",
        );
        for w in &o.warnings {
            text.push_str(&format!("- {}\n", w.message));
        }
        text.push('\n');
    }
    if let Some(fail_on) = o.fail_on {
        let word = fail_on.word();
        if o.failed.is_empty() {
            text.push_str(&format!("Gate `--fail-on {word}`: passed.\n"));
        } else {
            text.push_str(&format!("Gate `--fail-on {word}`: **failed** ({}).\n", o.failed.len()));
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_selection_is_terms_joined_by_commas() {
        let s: Selection = "label=v2, since=2026-12-01,until=2026-12-01 10:30:00".parse().unwrap();
        let day = jiff::Timestamp::from_second(1_796_083_200).unwrap();
        assert_eq!(
            s.terms,
            vec![
                Term::Label("v2".into()),
                Term::Since(day),
                Term::Until(day.checked_add(jiff::SignedDuration::from_secs(10 * 3600 + 1800)).unwrap()),
            ]
        );
        assert_eq!(s.to_string(), "label=v2, since=2026-12-01,until=2026-12-01 10:30:00");
        let s: Selection = "session=01a2,since=2026-12-01T10:00:00+01:00".parse().unwrap();
        assert_eq!(
            s.terms[1],
            Term::Since(day.checked_add(jiff::SignedDuration::from_secs(9 * 3600)).unwrap())
        );
    }

    #[test]
    fn a_bad_selection_says_what_is_expected() {
        let err = |text: &str| text.parse::<Selection>().unwrap_err();
        assert!(err("v2").contains("expected KEY=VALUE"), "{}", err("v2"));
        assert!(err("label=").contains("the value is empty"));
        assert!(err("tag=v2").contains("a selection is by label, session, since or until"));
        assert!(err("since=yesterday").contains("expected a time"), "{}", err("since=yesterday"));
        assert_eq!("worse".parse::<FailOn>(), Ok(FailOn::Worse));
        assert!("better".parse::<FailOn>().unwrap_err().contains("`worse`"));
    }

    #[test]
    fn only_facts_that_differ_are_listed() {
        let mut store = analyze::MemoryStore::load("e.yaml", "matrix: { a: [x] }\nrun: 'true'\n").unwrap();
        for (id, kernel) in [("s1", "6.1"), ("s2", "6.1"), ("s3", "6.12")] {
            store.session(id, "local", &[("kernel", kernel), ("cpus", "2")]);
        }
        let s = &store.snapshot.sessions;
        let d = differences(&s[..1], &s[1..]);
        assert_eq!(d.len(), 1, "{d:?}");
        let values = |v: &[&str]| v.iter().map(|x| (*x).to_owned()).collect::<Vec<_>>();
        assert_eq!(
            (d[0].fact.as_str(), &d[0].baseline, &d[0].candidate),
            ("kernel", &values(&["6.1"]), &values(&["6.1", "6.12"]))
        );
        assert!(differences(&s[..1], &s[1..2]).is_empty());
    }
}
