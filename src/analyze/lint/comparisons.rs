//! Warnings about the comparisons: levels measured in disjoint time windows or at unknown
//! times, machines whose facts differ beyond the compared factor, levels from a single
//! session, and verdicts that rest on setting outliers aside.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use rayon::prelude::*;

use super::list;
use super::machines::{Difference, Machines};
use crate::analyze::analysed::Analysed;
use crate::analyze::comparisons::Arms;
use crate::analyze::table::Rows;
use crate::spec::Experiment;
use crate::store::{Name, Snapshot, Started};
use crate::summary::{ComparisonStat, Warning, WarningKind};
use stats::verdict::VerdictKind;

/// What the comparisons' warnings read of one analysed group's trials.
struct GroupTimes {
    /// The first and last start, of those known.
    window: Option<(i64, i64)>,
    /// A trial started at a time not known.
    untimed: bool,
    /// The sessions, each once, in order.
    sessions: Vec<Name>,
}

impl GroupTimes {
    fn of(rows: &Rows) -> GroupTimes {
        let window = rows.started.iter().filter_map(|s| s.get()).map(|t| (t, t)).fold(None, widen);
        let sessions: BTreeSet<Name> = rows.sessions.iter().copied().collect();
        GroupTimes {
            window,
            untimed: rows.started.contains(&Started::NONE),
            sessions: sessions.into_iter().collect(),
        }
    }
}

/// Time window `w` widened to take in `(lo, hi)`.
fn widen(w: Option<(i64, i64)>, (lo, hi): (i64, i64)) -> Option<(i64, i64)> {
    Some(w.map_or((lo, hi), |(l, h)| (l.min(lo), h.max(hi))))
}

/// What the comparisons showed, per `compare` entry, before it is put in words.
#[derive(Default)]
struct Found {
    disjoint: BTreeMap<usize, BTreeSet<String>>,
    /// Per entry, each level's time window, to show how far apart they were.
    windows: BTreeMap<usize, BTreeMap<String, (i64, i64)>>,
    unknown: BTreeMap<usize, BTreeSet<String>>,
    /// Per entry and pair of levels: the facts that differ, and the resources.
    differ: BTreeMap<usize, BTreeMap<(String, String), BTreeSet<String>>>,
    resources: BTreeMap<usize, BTreeMap<(String, String), BTreeSet<String>>>,
    single: BTreeMap<usize, BTreeSet<String>>,
    sensitive: Vec<String>,
}

/// Warnings about the comparisons: disjoint time windows, machines that differ beyond
/// the compared factor (in their facts, and in their memory and CPUs: [`Machines`]),
/// levels measured in a single session, and verdicts that keeping the outliers would
/// change. One warning per `compare` entry and kind.
pub(crate) fn comparison_warnings(
    exp: &Experiment,
    snapshot: &Snapshot,
    analysed: &[Analysed],
    comparisons: &[ComparisonStat],
    arms: &[Arms],
) -> Vec<Warning> {
    let machines = Machines::of(exp, snapshot);
    let mut found = Found::default();
    // Most comparisons rest on the same sessions: the machines are compared once per pair.
    let mut differences: HashMap<(BTreeSet<Name>, BTreeSet<Name>, String), Difference> = HashMap::new();
    // each group's time window, whether a trial has no start, and its sessions, once and
    // on every core: a level is a few groups, and each is in many comparisons
    let groups: Vec<GroupTimes> = analysed.par_iter().map(|a| GroupTimes::of(&a.group.rows)).collect();
    for (c, arm) in comparisons.iter().zip(arms) {
        let pair = || format!("{} vs {}", c.level, c.baseline);
        let window = |cells: &[usize]| cells.iter().filter_map(|&i| groups[i].window).fold(None, widen);
        let untimed = |cells: &[usize]| cells.iter().any(|&i| groups[i].untimed);
        if untimed(&arm.baseline) || untimed(&arm.level) {
            found.unknown.entry(arm.entry).or_default().insert(pair());
        } else if let (Some(a), Some(b)) = (window(&arm.baseline), window(&arm.level))
            && (a.1 < b.0 || b.1 < a.0)
        {
            found.disjoint.entry(arm.entry).or_default().insert(pair());
            let spans = found.windows.entry(arm.entry).or_default();
            for (level, (lo, hi)) in [(&c.baseline, a), (&c.level, b)] {
                let span = spans.entry(level.clone()).or_insert((lo, hi));
                *span = (span.0.min(lo), span.1.max(hi));
            }
        }
        let sessions = |cells: &[usize]| -> BTreeSet<Name> {
            cells.iter().flat_map(|&i| groups[i].sessions.iter().copied()).collect()
        };
        let (sa, sb) = (sessions(&arm.baseline), sessions(&arm.level));
        for (level, s) in [(&c.baseline, &sa), (&c.level, &sb)] {
            if s.len() == 1 {
                found.single.entry(arm.entry).or_default().insert(level.clone());
            }
        }
        let difference = differences
            .entry((sa, sb, c.factor.clone()))
            .or_insert_with_key(|(sa, sb, factor)| machines.differ(sa, sb, factor));
        let levels = (c.level.clone(), c.baseline.clone());
        for (kinds, of) in
            [(&mut found.differ, &difference.facts), (&mut found.resources, &difference.resources)]
        {
            if !of.is_empty() {
                kinds
                    .entry(arm.entry)
                    .or_default()
                    .entry(levels.clone())
                    .or_default()
                    .extend(of.iter().cloned());
            }
        }
        let (name, what) = (VerdictKind::words, || format!("{} {} · {}", c.factor, pair(), c.metric));
        if let Some(kind) = c.verdict_with_outliers {
            found.sensitive.push(format!("{}: {} if the outliers set aside were kept", what(), name(kind)));
        }
        if let Some(kind) = c.verdict_without_outliers {
            found.sensitive.push(format!(
                "{}: {} if the flagged outliers were set aside",
                what(),
                name(kind)
            ));
        }
    }
    found.warnings(|entry| exp.spec.analysis.compare[entry].value.factor.value.clone())
}

impl Found {
    /// The warnings, each headed by its entry's factor (`factor`).
    fn warnings(mut self, factor: impl Fn(usize) -> String) -> Vec<Warning> {
        let joined = |items: BTreeSet<String>| items.into_iter().collect::<Vec<_>>().join(", ");
        let mut warnings = Vec::new();
        for (entry, pairs) in self.disjoint {
            let spans: Vec<String> = self
                .windows
                .remove(&entry)
                .unwrap_or_default()
                .into_iter()
                .map(|(level, (lo, hi))| format!("{level} {}", span(lo, hi)))
                .collect();
            warnings.push(Warning::new(
                WarningKind::DisjointTimeWindows,
                format!(
                    "{}: {} were measured in disjoint time windows ({}), so drift or the time of day is \
                     confounded with the level; interleave them (`order: interleaved`)",
                    factor(entry),
                    joined(pairs),
                    spans.join("; ")
                ),
            ));
        }
        for (entry, pairs) in self.unknown {
            warnings.push(Warning::new(
                WarningKind::UnknownTimes,
                format!(
                    "{}: when {} were measured is unknown (trials imported without `--started-at`), so \
                     drift or the time of day may be confounded with the level and nothing shows otherwise",
                    factor(entry),
                    joined(pairs)
                ),
            ));
        }
        let detail = |pairs: BTreeMap<(String, String), BTreeSet<String>>, sep: &str| -> String {
            let each = pairs.into_iter().map(|((a, b), keys)| {
                format!("{a} vs {b}: {}", keys.into_iter().collect::<Vec<_>>().join(sep))
            });
            each.collect::<Vec<_>>().join("; ")
        };
        for (entry, pairs) in self.differ {
            warnings.push(Warning::new(
                WarningKind::HostsDiffer,
                format!(
                    "{}: the compared machines differ in more than the factor, so the difference may come from \
                     those too — {}",
                    factor(entry),
                    detail(pairs, ", ")
                ),
            ));
        }
        for (entry, pairs) in self.resources {
            warnings.push(Warning::new(
                WarningKind::HostsDiffer,
                format!(
                    "{}: the compared machines had different memory or CPUs, which may explain the difference \
                     as well as the factor — {}",
                    factor(entry),
                    detail(pairs, ", ")
                ),
            ));
        }
        for (entry, levels) in self.single {
            warnings.push(Warning::new(
                WarningKind::SingleSession,
                format!(
                    "{}: every trial of {} comes from a single session, so the variation between boots \
                     is not in the margins (runs inside one boot understate it)",
                    factor(entry),
                    levels.into_iter().collect::<Vec<_>>().join(" and of ")
                ),
            ));
        }
        if !self.sensitive.is_empty() {
            warnings.push(Warning::new(
                WarningKind::OutlierSensitivity,
                format!("verdicts that rest on setting outliers aside: {}", list(&self.sensitive)),
            ));
        }
        warnings
    }
}

/// A time window in microseconds since the epoch, to the second, in UTC.
fn span(lo: i64, hi: i64) -> String {
    let at = |us: i64| {
        jiff::Timestamp::from_microsecond(us)
            .map_or_else(|_| "?".to_owned(), |t| t.strftime("%Y-%m-%d %H:%M:%S").to_string())
    };
    if at(lo) == at(hi) { format!("{} UTC", at(lo)) } else { format!("{} to {} UTC", at(lo), at(hi)) }
}
