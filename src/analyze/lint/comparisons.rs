//! Warnings about the comparisons: levels measured in disjoint time windows or at unknown
//! times, machines whose facts differ beyond the compared factor, levels from a single
//! session, and verdicts that rest on setting outliers aside.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use indexmap::IndexMap;
use rayon::prelude::*;

use super::list;
use crate::analyze::analysed::Analysed;
use crate::analyze::comparisons::Arms;
use crate::analyze::table::Rows;
use crate::spec::Experiment;
use crate::store::{BOOT_ID, Event, Name, Snapshot, Started};
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

/// Warnings about the comparisons: disjoint time windows, hosts whose facts differ beyond
/// the compared factor, levels measured in a single session, and verdicts that keeping
/// the outliers would change. One warning per `compare` entry and kind.
pub(crate) fn comparison_warnings(
    exp: &Experiment,
    snapshot: &Snapshot,
    analysed: &[Analysed],
    comparisons: &[ComparisonStat],
    arms: &[Arms],
) -> Vec<Warning> {
    let facts: HashMap<&str, &IndexMap<String, String>> = snapshot
        .sessions
        .iter()
        .filter(|s| s.event == Event::Start)
        .map(|s| (s.session.as_str(), &s.facts))
        .collect();
    let mut disjoint: BTreeMap<usize, BTreeSet<String>> = BTreeMap::new();
    // per entry, each level's time window, to show how far apart they were
    let mut windows: BTreeMap<usize, BTreeMap<String, (i64, i64)>> = BTreeMap::new();
    let mut unknown: BTreeMap<usize, BTreeSet<String>> = BTreeMap::new();
    let mut differ: BTreeMap<usize, BTreeMap<(String, String), BTreeSet<String>>> = BTreeMap::new();
    let mut single: BTreeMap<usize, BTreeSet<String>> = BTreeMap::new();
    let mut sensitive = Vec::new();
    let mut facts_differ: HashMap<(BTreeSet<Name>, BTreeSet<Name>, String), Vec<String>> = HashMap::new();
    // each group's time window, whether a trial has no start, and its sessions, once and
    // on every core: a level is a few groups, and each is in many comparisons
    let groups: Vec<GroupTimes> = analysed.par_iter().map(|a| GroupTimes::of(&a.group.rows)).collect();
    for (c, arm) in comparisons.iter().zip(arms) {
        let window = |cells: &[usize]| cells.iter().filter_map(|&i| groups[i].window).fold(None, widen);
        let untimed = |cells: &[usize]| cells.iter().any(|&i| groups[i].untimed);
        if untimed(&arm.baseline) || untimed(&arm.level) {
            unknown.entry(arm.entry).or_default().insert(format!("{} vs {}", c.level, c.baseline));
        } else if let (Some(a), Some(b)) = (window(&arm.baseline), window(&arm.level))
            && (a.1 < b.0 || b.1 < a.0)
        {
            disjoint.entry(arm.entry).or_default().insert(format!("{} vs {}", c.level, c.baseline));
            let spans = windows.entry(arm.entry).or_default();
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
                single.entry(arm.entry).or_default().insert(level.clone());
            }
        }
        // Most comparisons rest on the same sessions: the facts are compared once per pair.
        let differing =
            facts_differ.entry((sa, sb, c.factor.clone())).or_insert_with_key(|(sa, sb, factor)| {
                let expected = expected_differences(exp, factor);
                let facts_of = |id: &Name| facts.get(snapshot.trials.names.get(*id));
                let values = |s: &BTreeSet<Name>, key: &str| -> BTreeSet<String> {
                    s.iter().filter_map(|id| facts_of(id)?.get(key).cloned()).collect()
                };
                let keys: BTreeSet<&String> =
                    sa.iter().chain(sb).filter_map(facts_of).flat_map(|f| f.keys()).collect();
                keys.into_iter()
                    // a boot id differs between any two boots: the analysis counts boots as
                    // units (docs/statistics.md), it is no fact of the machine to warn of
                    .filter(|k| k.as_str() != BOOT_ID)
                    .filter(|k| !expected.contains(k.as_str()) && values(sa, k) != values(sb, k))
                    .cloned()
                    .collect()
            });
        if !differing.is_empty() {
            differ
                .entry(arm.entry)
                .or_default()
                .entry((c.level.clone(), c.baseline.clone()))
                .or_default()
                .extend(differing.iter().cloned());
        }
        let name = VerdictKind::words;
        if let Some(kind) = c.verdict_with_outliers {
            sensitive.push(format!(
                "{} {} vs {} · {}: {} if the outliers set aside were kept",
                c.factor,
                c.level,
                c.baseline,
                c.metric,
                name(kind)
            ));
        }
        if let Some(kind) = c.verdict_without_outliers {
            sensitive.push(format!(
                "{} {} vs {} · {}: {} if the flagged outliers were set aside",
                c.factor,
                c.level,
                c.baseline,
                c.metric,
                name(kind)
            ));
        }
    }

    let factor = |entry: usize| exp.spec.analysis.compare[entry].value.factor.value.clone();
    let mut warnings = Vec::new();
    for (entry, pairs) in disjoint {
        let spans: Vec<String> = windows
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
                pairs.into_iter().collect::<Vec<_>>().join(", "),
                spans.join("; ")
            ),
        ));
    }
    for (entry, pairs) in unknown {
        warnings.push(Warning::new(
            WarningKind::UnknownTimes,
            format!(
                "{}: when {} were measured is unknown (trials imported without `--started-at`), so \
                 drift or the time of day may be confounded with the level and nothing shows otherwise",
                factor(entry),
                pairs.into_iter().collect::<Vec<_>>().join(", ")
            ),
        ));
    }
    for (entry, pairs) in differ {
        let detail: Vec<String> = pairs
            .into_iter()
            .map(|((a, b), keys)| format!("{a} vs {b}: {}", keys.into_iter().collect::<Vec<_>>().join(", ")))
            .collect();
        warnings.push(Warning::new(
            WarningKind::HostsDiffer,
            format!(
                "{}: the compared machines differ in more than the factor, so the difference may come from \
                 those too — {}",
                factor(entry),
                detail.join("; ")
            ),
        ));
    }
    for (entry, levels) in single {
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
    if !sensitive.is_empty() {
        warnings.push(Warning::new(
            WarningKind::OutlierSensitivity,
            format!("verdicts that rest on setting outliers aside: {}", list(&sensitive)),
        ));
    }
    warnings
}

/// A time window in microseconds since the epoch, to the second, in UTC.
fn span(lo: i64, hi: i64) -> String {
    let at = |us: i64| {
        jiff::Timestamp::from_microsecond(us)
            .map_or_else(|_| "?".to_owned(), |t| t.strftime("%Y-%m-%d %H:%M:%S").to_string())
    };
    if at(lo) == at(hi) { format!("{} UTC", at(lo)) } else { format!("{} to {} UTC", at(lo), at(hi)) }
}

/// Facts that may differ between the compared machines without confounding the factor:
/// the host name, and the fact the factor itself is detected from.
fn expected_differences<'a>(exp: &'a Experiment, factor: &str) -> BTreeSet<&'a str> {
    let mut expected = BTreeSet::from(["hostname"]);
    if let Some((_, env)) = exp.spec.environment.iter().find(|(k, _)| k.value == factor)
        && let Some(fact) = &env.value.fact
    {
        expected.insert(fact.value.as_str());
    }
    if factor == "host" {
        expected.insert("host");
    }
    expected
}
