//! Methodology warnings (docs/statistics.md, One cell; Sessions and boots): the seeds' mistakes.
//!
//! `dd` that measures the page cache, test files the page cache can hold, too few trials,
//! unstable cells, levels measured at different times or on machines that differ in more
//! than the compared factor, and levels whose trials all come from one session. Warnings
//! never change a verdict; they say what the numbers cannot.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use indexmap::IndexMap;
use rayon::prelude::*;

use super::analysed::Analysed;
use super::comparisons::Arms;
use super::table::Rows;
use crate::plan::Plan;
use crate::plan::render::{Builtins, render};
use crate::spec::Experiment;
use crate::stats::stability::StabilityFlag;
use crate::stats::verdict::VerdictKind;
use crate::store::{BOOT_ID, Event, Name, Snapshot, Started};
use crate::summary::{ComparisonStat, MetricMeta, TrialCounts, Warning, WarningKind};
use crate::template::Templates;

/// A cell warning lists at most this many cells by name, then counts the rest.
const LISTED: usize = 8;
/// A test file must be at least this many times the host's memory for the page cache
/// not to hold it.
const MEMORY_FACTOR: u64 = 2;
/// Fewer analysed trials than this in a cell is worth a warning.
const FEW_TRIALS: usize = 3;

/// "a, b, c and 4 more".
pub(super) fn list(items: &[String]) -> String {
    let shown = items.iter().take(LISTED).cloned().collect::<Vec<_>>().join("; ");
    match items.len().saturating_sub(LISTED) {
        0 => shown,
        more => format!("{shown}; and {more} more"),
    }
}

/// Torn records, stale records and what the parsers noticed (each distinct message once,
/// with how many trials said it).
pub(crate) fn store_warnings(snapshot: &Snapshot, counts: &TrialCounts) -> Vec<Warning> {
    let mut warnings: Vec<Warning> =
        snapshot.warnings.iter().map(|w| Warning::new(WarningKind::Store, w.clone())).collect();
    if counts.stale > 0 {
        let records = if counts.stale == 1 { "record was" } else { "records were" };
        warnings.push(Warning::new(
            WarningKind::Stale,
            format!(
                "{} {records} set aside: the command changed (their cell is not in the current plan); \
                 they stay in the store",
                counts.stale
            ),
        ));
    }
    warnings.extend(snapshot.trials.warnings.iter().map(|(w, &n)| {
        let trials = if n == 1 { "1 trial".to_owned() } else { format!("{n} trials") };
        Warning::new(WarningKind::Trial, format!("{trials}: {w}"))
    }));
    warnings
}

/// A value in a warning: in the display unit the report's tables use for the metric's
/// unit (`262.8 MB/s`, `149.9 ms`: [`crate::vocab::display::scale`]), with four
/// significant digits; a unit it does not know, four significant digits and the unit,
/// whatever its scale.
fn short(value: f64, unit: &str) -> String {
    if matches!(unit, "B/s" | "bit/s" | "op/s" | "B" | "s") {
        return crate::vocab::display::scale(unit, value).with_unit(value);
    }
    let number = if value == 0.0 || !value.is_finite() {
        value.to_string()
    } else if !(1e-3..1e5).contains(&value.abs()) {
        format!("{value:.3e}")
    } else {
        let digits = (3 - value.abs().log10().floor() as i32).clamp(0, 6) as usize;
        format!("{value:.digits$}")
    };
    if unit.is_empty() { number } else { format!("{number} {unit}") }
}

#[cfg(test)]
#[test]
fn short_values_read_at_any_scale() {
    // the units the report's tables scale, as they scale them (issue 39: "2.628e8 B/s"
    // beside a table in MB/s)
    assert_eq!(short(1_761_729_679.78, "B/s"), "1.762 GB/s");
    assert_eq!(short(262_800_000.0, "B/s"), "262.8 MB/s");
    assert_eq!(short(0.149_873_53, "s"), "149.9 ms");
    assert_eq!(short(0.0, "s"), "0 ns");
    assert_eq!(short(-0.000_2, "s"), "-200.0 µs");
    // others: four significant digits at any scale
    assert_eq!(short(957.43, ""), "957.4");
    assert_eq!(short(1.5e7, "events"), "1.500e7 events");
}

/// Per-cell warnings, one per kind and metric, naming the cells; only for the metrics
/// the experiment is about (`primary`), so the engine's CPU times of short trials do not
/// drown the report.
pub(crate) fn cell_warnings(
    plan: &Plan,
    metrics: &[MetricMeta],
    analysed: &[Analysed],
    primary: &std::collections::HashSet<&str>,
) -> Vec<Warning> {
    let mut found: BTreeMap<(WarningKind, usize), Vec<String>> = BTreeMap::new();
    for a in analysed.iter().filter(|a| primary.contains(metrics[a.meta].name.as_str())) {
        let unit = metrics[a.meta].unit.as_str();
        let label = plan.label(&plan.cells[a.group.cell]);
        let mut add = |kind, detail: String| {
            found.entry((kind, a.meta)).or_default().push(format!("{label} ({detail})"))
        };
        if a.all.len() < FEW_TRIALS {
            add(WarningKind::FewTrials, format!("n = {}", a.all.len()));
        }
        for flag in &a.analysis.flags {
            match *flag {
                // The flags look at every trial, outliers included, unlike the table.
                StabilityFlag::HighVariation { cv } => {
                    add(WarningKind::HighVariation, format!("CV {:.1} % over all trials", cv * 100.0))
                }
                StabilityFlag::FarFromMean { value, distance } => add(
                    WarningKind::FarFromMean,
                    format!("{} is {:.0} % from the mean", short(value, unit), distance * 100.0),
                ),
                // in a cell of two regimes the first value is in one of them, no outlier
                StabilityFlag::FirstTrialOutlier { .. } if a.analysis.regimes.is_some() => {}
                StabilityFlag::FirstTrialOutlier { value, .. } => {
                    add(WarningKind::SlowFirstTrial, format!("first value {}", short(value, unit)))
                }
                StabilityFlag::Trend(t) => {
                    add(WarningKind::Trend, format!("Spearman ρ = {:.2}, p = {:.3}", t.rho, t.p_value))
                }
            }
        }
        if let Some(r) = &a.analysis.regimes {
            let parts: Vec<String> = r
                .regimes
                .iter()
                .map(|g| format!("{:.0} % of trials at {}", g.share * 100.0, short(g.summary.mean, unit)))
                .collect();
            let mut detail = parts.join(", ");
            if super::regimes::by_session(a, r) {
                detail.push_str("; the regimes are its sessions");
            }
            add(WarningKind::Regimes, detail);
        }
    }
    found
        .into_iter()
        .map(|((kind, meta), cells)| {
            let metric = &metrics[meta].name;
            let what = match kind {
                WarningKind::FewTrials => format!(
                    "fewer than {FEW_TRIALS} trials of {metric}: the margin of error is missing or very wide"
                ),
                WarningKind::HighVariation => format!("{metric} varies by 10 % or more between trials"),
                WarningKind::FarFromMean => format!("{metric} has a minimum or maximum 50 % or more away from the mean"),
                WarningKind::SlowFirstTrial => {
                    format!("the first trial of {metric} is an outlier: cold caches? consider `warmup:`")
                }
                WarningKind::Regimes => format!(
                    "{metric} is two regimes in a cell: its mean mixes them, and more trials will not settle \
                     which regime a trial lands in; find what decides it (the cell's regimes and the metrics \
                     that differ between them are in its section)"
                ),
                _ => format!("{metric} drifts across repetitions (a monotone trend): the machine is changing under the benchmark"),
            };
            Warning::new(kind, format!("{what}: {}", list(&cells)))
        })
        .collect()
}

/// Warnings about the rendered `run` command of every analysed cell: `dd` without a sync
/// flag, and test files small enough for the page cache.
pub(crate) fn command_warnings(
    exp: &Experiment,
    plan: &Plan,
    snapshot: &Snapshot,
    analysed: &[Analysed],
) -> Vec<Warning> {
    let memory = host_memory(snapshot);
    // Each cell's hosts by their names' numbers first (a few, mostly the value before's):
    // a set of their texts built from every value of every group cost more than the
    // commands' rendering at 10⁶ trials. A cell's groups of the same trials share their
    // rows, and are looked at once.
    let mut numbers: BTreeMap<usize, Vec<Name>> = BTreeMap::new();
    let mut seen: Option<&Arc<Rows>> = None;
    for a in analysed {
        if seen.is_some_and(|rows| Arc::ptr_eq(rows, &a.group.rows)) {
            continue;
        }
        seen = Some(&a.group.rows);
        let hosts = numbers.entry(a.group.cell).or_default();
        for &h in a.group.rows.hosts.iter() {
            if hosts.last() != Some(&h) && !hosts.contains(&h) {
                hosts.push(h);
            }
        }
    }
    let cells: BTreeMap<usize, BTreeSet<&str>> = numbers
        .into_iter()
        .map(|(cell, hosts)| (cell, hosts.into_iter().map(|h| snapshot.trials.names.get(h)).collect()))
        .collect();
    let templates = Templates::new();
    let findings: Vec<(Option<String>, Option<String>, Option<String>)> = cells
        .par_iter()
        .map(|(&index, hosts)| {
            let cell = &plan.cells[index];
            let host = hosts.first().copied().unwrap_or("local");
            // A command that does not render ran nowhere either; nothing to say about it.
            let Some(run) = render_run(&templates, exp, plan, index, host) else {
                return (None, None, None);
            };
            let label = plan.label(cell);
            let mut unsynced = None;
            let mut small = None;
            let mut unknown = None;
            for tool in tools(&run) {
                if let Tool::Dd { synced: false, .. } = tool {
                    unsynced = Some(label.clone());
                }
                let Some(size) = tool.file_size() else { continue };
                let Some((host, mem)) =
                    hosts.iter().filter_map(|h| memory.get(*h).map(|m| (*h, *m))).max_by_key(|(_, m)| *m)
                else {
                    // Imported trials carry no facts: say what the check would need.
                    unknown = Some(format!(
                        "{label}: {} writes {} on {} (cached by a host with more than {} of memory)",
                        tool.name(),
                        gib(size),
                        hosts.iter().copied().collect::<Vec<_>>().join(", "),
                        gib(size / MEMORY_FACTOR)
                    ));
                    continue;
                };
                if size < MEMORY_FACTOR * mem {
                    small = Some(format!(
                        "{label}: {} writes {} on {host} with {} of memory",
                        tool.name(),
                        gib(size),
                        gib(mem)
                    ));
                }
            }
            (unsynced, small, unknown)
        })
        .collect();
    let unsynced: Vec<String> = findings.iter().filter_map(|f| f.0.clone()).collect();
    let small: Vec<String> = findings.iter().filter_map(|f| f.1.clone()).collect();
    let unknown: Vec<String> = findings.iter().filter_map(|f| f.2.clone()).collect();
    let mut warnings = Vec::new();
    if !unsynced.is_empty() {
        warnings.push(Warning::new(
            WarningKind::DdWithoutSync,
            format!(
                "dd writes without conv=fdatasync, conv=fsync or oflag=direct, so it times the page cache, \
                 not the disk: {}",
                list(&unsynced)
            ),
        ));
    }
    if !small.is_empty() {
        warnings.push(Warning::new(
            WarningKind::SmallTestFile,
            format!(
                "the test file is smaller than {MEMORY_FACTOR}× the host's memory, so the page cache can hold it: {}",
                list(&small)
            ),
        ));
    }
    if !unknown.is_empty() {
        warnings.push(Warning::new(
            WarningKind::MemoryUnknown,
            format!(
                "no session recorded the host's memory (imported trials carry no facts), so whether the \
                 page cache could hold the test file is unknown; it can unless the file is at least \
                 {MEMORY_FACTOR}× the memory: {}",
                list(&unknown)
            ),
        ));
    }
    warnings
}

/// A cell's `run` command as it ran on `host` (the workdir spelled `WORKDIR`); `None`
/// when it does not render.
fn render_run(
    templates: &Templates,
    exp: &Experiment,
    plan: &Plan,
    cell: usize,
    host: &str,
) -> Option<String> {
    let builtins = Builtins { workdir: "WORKDIR", repetition: 1, host };
    render(templates, exp, plan, &plan.cells[cell], &builtins).ok().map(|c| c.run)
}

/// [`render_run`] with templates of its own.
pub(super) fn rendered_run(exp: &Experiment, plan: &Plan, cell: usize, host: &str) -> Option<String> {
    render_run(&Templates::new(), exp, plan, cell, host)
}

/// Whether a command runs a `dd` that writes to a file (not /dev/null).
pub(super) fn dd_writes_file(command: &str) -> bool {
    tools(command).iter().any(|t| matches!(t, Tool::Dd { .. }))
}

/// The largest memory each host reported (facts key `memory`, bytes).
fn host_memory(snapshot: &Snapshot) -> HashMap<&str, u64> {
    let mut memory: HashMap<&str, u64> = HashMap::new();
    for s in snapshot.sessions.iter().filter(|s| s.event == Event::Start) {
        if let Some(bytes) = s.facts.get("memory").and_then(|m| m.trim().parse::<u64>().ok()) {
            let slot = memory.entry(s.host.as_str()).or_default();
            *slot = (*slot).max(bytes);
        }
    }
    memory
}

fn gib(bytes: u64) -> String {
    format!("{:.2} GiB", bytes as f64 / (1u64 << 30) as f64)
}

/// A benchmark tool found in a command line, with what the lints need to know. Each
/// `size` is of what the page cache could hold: none when unknown, and none when the
/// tool bypasses the cache with O_DIRECT (dd's `oflag=direct`, bonnie++'s `-D` for its
/// bulk tests — its per-char tests are 20 MiB whatever `-s` says —, iozone's `-I`,
/// fio's `--direct=1` or `--buffered=0`).
#[derive(Debug, Clone, PartialEq, Eq)]
enum Tool {
    /// `dd … of=FILE`: whether it syncs, and bs × count.
    Dd {
        synced: bool,
        size: Option<u64>,
    },
    Bonnie {
        size: Option<u64>,
    },
    Iozone {
        size: Option<u64>,
    },
    Fio {
        size: Option<u64>,
    },
}

impl Tool {
    fn name(&self) -> &'static str {
        match self {
            Tool::Dd { .. } => "dd",
            Tool::Bonnie { .. } => "bonnie++",
            Tool::Iozone { .. } => "iozone",
            Tool::Fio { .. } => "fio",
        }
    }

    fn file_size(&self) -> Option<u64> {
        match *self {
            Tool::Dd { size, .. } | Tool::Bonnie { size } | Tool::Iozone { size } | Tool::Fio { size } => {
                size
            }
        }
    }
}

/// The tools a shell command runs, one per simple command (split at `;`, `|`, `&`).
fn tools(command: &str) -> Vec<Tool> {
    command
        .split([';', '|', '&', '\n'])
        .filter_map(|segment| {
            let words = shlex::split(segment)
                .unwrap_or_else(|| segment.split_whitespace().map(str::to_owned).collect());
            let at = words.iter().position(|w| {
                matches!(w.rsplit('/').next(), Some("dd" | "bonnie++" | "bonnie" | "iozone" | "fio"))
            })?;
            let program = words[at].rsplit('/').next().unwrap_or_default();
            let args = &words[at + 1..];
            match program {
                "dd" => dd(args),
                "iozone" => {
                    // throughput mode (-t N) writes N files of -s each, all at once
                    let files = flag_value(args, "-t").map_or(Some(1), |t| t.parse::<u64>().ok());
                    let each = flag_value(args, "-s").and_then(|v| size(&v, 1 << 10));
                    let size = each.zip(files).and_then(|(s, n)| s.checked_mul(n));
                    Some(Tool::Iozone { size: size.filter(|_| !has(args, "-I")) })
                }
                "fio" => {
                    let value = ["--size", "--filesize"].iter().find_map(|f| flag_value(args, f));
                    let direct = flag_value(args, "--direct").is_some_and(|v| v == "1")
                        || flag_value(args, "--buffered").is_some_and(|v| v == "0");
                    Some(Tool::Fio { size: value.and_then(|v| size(&v, 1)).filter(|_| !direct) })
                }
                _ => {
                    // bonnie++ -s SIZE[:CHUNK], in MiB unless suffixed.
                    let value = flag_value(args, "-s");
                    let value = value.as_deref().map(|v| v.split(':').next().unwrap_or(v));
                    let size = value.and_then(|v| size(v, 1 << 20));
                    Some(Tool::Bonnie { size: size.filter(|_| !has(args, "-D")) })
                }
            }
        })
        .collect()
}

/// dd's operands; `None` unless it writes to a file (`of=` other than /dev/null).
fn dd(args: &[String]) -> Option<Tool> {
    let operand = |name: &str| args.iter().rev().find_map(|a| a.strip_prefix(name)?.strip_prefix('='));
    let of = operand("of")?;
    if of == "/dev/null" {
        return None;
    }
    let flags = |name: &str| {
        operand(name).map(|v| v.split(',').map(str::to_owned).collect::<Vec<_>>()).unwrap_or_default()
    };
    let conv = flags("conv");
    let oflag = flags("oflag");
    // fdatasync, fsync and direct bypass or flush the page cache; dsync and sync make every write
    // synchronous, which is as honest (and slower).
    let synced = conv.iter().any(|c| c == "fdatasync" || c == "fsync")
        || oflag.iter().any(|o| o == "direct" || o == "dsync" || o == "sync");
    let block = operand("bs").or_else(|| operand("obs")).map_or(Some(512), dd_number);
    let count = operand("count").and_then(dd_number);
    let size = block.zip(count).and_then(|(b, c)| b.checked_mul(c));
    let size = size.filter(|_| !oflag.iter().any(|o| o == "direct"));
    Some(Tool::Dd { synced, size })
}

/// A dd number: digits and GNU dd's multiplicative suffixes (c, w, b, kB, K, KiB, MB, M…).
fn dd_number(text: &str) -> Option<u64> {
    let digits = text.find(|c: char| !c.is_ascii_digit()).unwrap_or(text.len());
    let value: u64 = text[..digits].parse().ok()?;
    let factor: u64 = match &text[digits..] {
        "" | "c" => 1,
        "w" => 2,
        "b" => 512,
        suffix => {
            let letter = suffix.chars().next()?.to_ascii_uppercase();
            let power = "KMGTPE".find(letter)? as u32 + 1;
            match &suffix[1..] {
                "B" => 1000u64.checked_pow(power)?,
                "" | "iB" => 1024u64.checked_pow(power)?,
                _ => return None,
            }
        }
    };
    value.checked_mul(factor)
}

/// `N[k|m|g|t]` as bonnie++, iozone and fio write sizes (powers of 1024, an optional `i`
/// and `B`), `default` bytes per unit when unsuffixed.
fn size(text: &str, default: u64) -> Option<u64> {
    let text = text.trim();
    let digits = text.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(text.len());
    let value: f64 = text[..digits].parse().ok()?;
    let suffix = text[digits..].trim_end_matches(['B', 'b']).trim_end_matches('i');
    let factor = match suffix.to_ascii_lowercase().as_str() {
        "" => default,
        "k" => 1 << 10,
        "m" => 1 << 20,
        "g" => 1 << 30,
        "t" => 1 << 40,
        _ => return None,
    };
    Some((value * factor as f64) as u64)
}

/// Whether `flag` is one of `args`.
fn has(args: &[String], flag: &str) -> bool {
    args.iter().any(|a| a == flag)
}

/// The value of `flag` (`-s 5g`, `-s5g`, `--size=5g`, `--size 5g`) in `args`.
fn flag_value(args: &[String], flag: &str) -> Option<String> {
    args.iter().enumerate().find_map(|(i, a)| {
        if a == flag {
            args.get(i + 1).cloned()
        } else if let Some(v) = a.strip_prefix(flag) {
            let v = v.strip_prefix('=').unwrap_or(v);
            (!v.is_empty() && (flag.len() == 2 || a.contains('='))).then(|| v.to_owned())
        } else {
            None
        }
    })
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
    for (c, arm) in comparisons.iter().zip(arms) {
        let window = |cells: &[usize]| {
            let times =
                cells.iter().flat_map(|&i| analysed[i].group.rows.started.iter().filter_map(|s| s.get()));
            times.fold(None, |w: Option<(i64, i64)>, t| {
                Some(w.map_or((t, t), |(lo, hi)| (lo.min(t), hi.max(t))))
            })
        };
        let untimed =
            |cells: &[usize]| cells.iter().any(|&i| analysed[i].group.rows.started.contains(&Started::NONE));
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
            cells.iter().flat_map(|&i| analysed[i].group.rows.sessions.iter().copied()).collect()
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dd_numbers_follow_gnu_suffixes() {
        for (text, bytes) in [
            ("512", 512),
            ("4k", 4096),
            ("4K", 4096),
            ("1kB", 1000),
            ("10M", 10 << 20),
            ("1MB", 1_000_000),
            ("2GiB", 2 << 30),
            ("3w", 6),
            ("2b", 1024),
        ] {
            assert_eq!(dd_number(text), Some(bytes), "{text}");
        }
        assert_eq!(dd_number("4q"), None);
        assert_eq!(dd_number("k"), None);
    }

    #[test]
    fn dd_without_a_sync_flag_is_found_with_its_size() {
        let found = tools("sync; dd if=/dev/zero of=/tmp/zero.tst bs=100M count=50 && rm -f x");
        assert_eq!(found, [Tool::Dd { synced: false, size: Some(50 * (100 << 20)) }]);
        for synced in ["conv=fdatasync", "conv=notrunc,fsync", "oflag=dsync"] {
            let found = tools(&format!("/bin/dd if=/dev/zero of=f bs=1k count=3 {synced}"));
            assert_eq!(found, [Tool::Dd { synced: true, size: Some(3072) }], "{synced}");
        }
        assert_eq!(tools("dd if=/dev/sda of=/dev/null bs=1M"), []);
        assert_eq!(tools("dd if=f"), [], "reads only");
    }

    #[test]
    fn bonnie_iozone_and_fio_sizes() {
        assert_eq!(tools("bonnie++ -d /mnt -s 5000 -m x -x 10"), [Tool::Bonnie { size: Some(5000 << 20) }]);
        assert_eq!(tools("bonnie++ -s 8g:4k"), [Tool::Bonnie { size: Some(8 << 30) }]);
        assert_eq!(tools("iozone -i 0 -s 512m -r 4k"), [Tool::Iozone { size: Some(512 << 20) }]);
        assert_eq!(tools("iozone -s4096 -r 4k"), [Tool::Iozone { size: Some(4096 << 10) }]);
        let seed_001 = "iozone -M -c -e -w -i0 -r256k -s1g -t10 -F d1 d2 d3 d4 d5 d6 d7 d8 d9 d0";
        assert_eq!(tools(seed_001), [Tool::Iozone { size: Some(10 << 30) }], "ten files of 1 GiB");
        assert_eq!(tools("fio --name=w --size=1G --rw=write"), [Tool::Fio { size: Some(1 << 30) }]);
        assert_eq!(tools("fio --name=w --filesize 2MiB"), [Tool::Fio { size: Some(2 << 20) }]);
        // O_DIRECT: nothing for the page cache to hold (seed 000's bonnie++ -D in the lab)
        assert_eq!(tools("bonnie++ -d /mnt -s 512 -n 0 -D -u root"), [Tool::Bonnie { size: None }]);
        assert_eq!(
            tools("bonnie++ -d /mnt -s 512 -n 0 -b -u root"),
            [Tool::Bonnie { size: Some(512 << 20) }]
        );
        assert_eq!(tools("iozone -I -i 0 -s 512m -r 4k"), [Tool::Iozone { size: None }]);
        assert_eq!(tools("fio --name=w --size=1G --direct=1"), [Tool::Fio { size: None }]);
        assert_eq!(tools("fio --name=w --size=1G --buffered=0"), [Tool::Fio { size: None }]);
        assert_eq!(tools("fio --name=w --size=1G --direct=0"), [Tool::Fio { size: Some(1 << 30) }]);
        let direct = "dd if=/dev/zero of=f bs=1M count=64 oflag=direct";
        assert_eq!(tools(direct), [Tool::Dd { synced: true, size: None }]);
        assert_eq!(tools("echo dd"), []);
    }

    /// A cell measured on several hosts, its trials alternating between them and in
    /// sessions of their own: the page-cache check weighs the host with the most memory
    /// among the cell's, whatever its metrics and the order of its trials.
    #[test]
    fn a_test_file_is_weighed_against_the_largest_memory_of_its_cells_hosts() {
        use crate::analyze::{MemoryStore, summarize_store};
        use crate::vocab::{Better, MeanKind};
        let yaml =
            "matrix:\n  n: [64, 200000]\nrun: dd if=/dev/zero of=/tmp/f bs=1M count={{ n }} conv=fdatasync\n";
        let mut m = MemoryStore::new("hosts.yaml", yaml);
        m.metric("rate", "B/s", Better::Higher, MeanKind::Arithmetic);
        for (session, host, memory) in
            [("s1", "beta", 1u64 << 30), ("s2", "alpha", 64 << 30), ("s3", "beta", 1 << 30)]
        {
            m.session(session, host, &[("memory", &memory.to_string())]);
            for _ in 0..3 {
                for n in ["64", "200000"] {
                    m.trial(&[("n", n)], &[("rate", 1e8), ("time", 0.5)]);
                }
            }
        }
        let summary = summarize_store(&m.exp, &m.plan, &m.snapshot, &[]).unwrap();
        let small: Vec<&str> = summary
            .warnings
            .iter()
            .filter(|w| w.kind == WarningKind::SmallTestFile)
            .map(|w| w.message.as_str())
            .collect();
        assert_eq!(small.len(), 1, "{small:?}");
        assert!(
            small[0].ends_with(": n=64: dd writes 0.06 GiB on alpha with 64.00 GiB of memory"),
            "{}",
            small[0]
        );
        assert!(!summary.warnings.iter().any(|w| w.kind == WarningKind::MemoryUnknown));
    }

    #[test]
    fn lists_are_cut_after_a_few_items() {
        let items: Vec<String> = (1..=10).map(|i| i.to_string()).collect();
        assert_eq!(list(&items), "1; 2; 3; 4; 5; 6; 7; 8; and 2 more");
        assert_eq!(list(&items[..2]), "1; 2");
    }
}
