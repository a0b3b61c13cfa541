//! The report's section on series: for each metric along each series factor, in each
//! context, where it changed (the step as a change with its interval, worse or better),
//! the segments between the changes, or how large a step would have been found
//! (docs/statistics.md, Change points in a series).

use std::path::Path;

use super::figures::Plot;
use super::format::{cell_text, confidence, markdown_table, percent, scale};
use crate::spec::git::GitLevels;
use crate::summary::{ComparisonStat, SeriesStat, Summary};
use stats::notation::change_and_interval;
use stats::series::SeriesVerdict;
use stats::verdict::VerdictKind;
use vocab::Better;

/// The section's text; `None` when the experiment asks for no series.
/// `git`: the experiment's git factors, whose levels are shown with their commits' subjects.
pub(crate) fn section(summary: &Summary, plots: &[Plot], file: &Path, git: &[GitLevels]) -> Option<String> {
    let first = summary.series.first()?;
    let mut out = format!(
        "Change points are called at a {} % chance per series of a false one (family-wise over its \
         levels); a step's interval is at {} confidence. A change found in one run is suspected until its \
         two sides are measured again.\n",
        vocab::display::significant(first.series.alpha * 100.0, 2),
        confidence(first.series.confidence),
    );
    for (i, s) in summary.series.iter().enumerate() {
        out.push('\n');
        out.push_str(&one(summary, s, file, git));
        out.push('\n');
        match plots.iter().find(|p| p.series == Some(i)).map(|p| (&p.path, &p.svg)) {
            Some((path, Ok(_))) => out.push_str(&format!(
                "\n![{} along {}: each level's trials, its mean and interval, the segments' means as steps]({path})\n",
                s.metric, s.factor
            )),
            Some((_, Err(why))) => out.push_str(&format!("\nNo plot: {why}.\n")),
            None => {}
        }
    }
    let mut shown: Vec<&str> = Vec::new();
    for s in &summary.series {
        if let Some(g) = git.iter().find(|g| g.factor == s.factor && !shown.contains(&g.factor.as_str())) {
            shown.push(&g.factor);
            out.push('\n');
            out.push_str(&commits(g));
        }
    }
    Some(out)
}

/// A git factor's levels with their commits' subjects, oldest first.
fn commits(g: &GitLevels) -> String {
    let header = ["level".to_owned(), "commit".to_owned()];
    let rows: Vec<Vec<String>> =
        g.commits.iter().map(|c| vec![format!("`{}`", c.short), cell_text(&c.subject)]).collect();
    format!(
        "The levels of `{}`: the commits of `{}` in `{}`, oldest first.\n\n{}",
        g.factor,
        cell_text(&g.range),
        cell_text(&g.repo),
        markdown_table(&header, &rows, 2)
    )
}

/// `` `level` ``, with its commit's subject when it is a git factor's level.
fn named(level: &str, factor: &str, git: &[GitLevels]) -> String {
    let subject = git.iter().find(|g| g.factor == factor).and_then(|g| g.commit(level)).map(|c| &c.subject);
    match subject {
        Some(subject) => format!("`{level}` (“{}”)", cell_text(subject)),
        None => format!("`{level}`"),
    }
}

/// One series: its heading, its sentence (with the command that confirms each change),
/// its segments.
fn one(summary: &Summary, s: &SeriesStat, file: &Path, git: &[GitLevels]) -> String {
    let context: Vec<String> = s.context.iter().map(|(k, v)| format!("{k}={v}")).collect();
    let mut text = format!(
        "### {} along {}{}\n\n",
        s.metric,
        s.factor,
        if context.is_empty() { String::new() } else { format!(" ({})", context.join(" ")) }
    );
    let n = s.level_names.len();
    let per = match s.observation {
        "trial" => "the trials as observations (the levels shared their sessions)".to_owned(),
        unit => format!("each {unit}'s mean an observation (each level ran in {unit}s of its own)"),
    };
    let better = summary.metrics.iter().find(|m| m.name == s.metric).map(|m| m.better);
    match s.series.verdict {
        SeriesVerdict::Changes => {
            let steps: Vec<String> = s
                .series
                .change_points
                .iter()
                .map(|c| {
                    let (change, interval) = change_and_interval(c.ratio, (c.low, c.high));
                    let way = match (better, c.ratio > 1.0) {
                        (Some(Better::Higher), true) | (Some(Better::Lower), false) => "better",
                        (Some(_), _) => "worse",
                        (None, _) => "changed",
                    };
                    format!(
                        "between {} and {}: {change} {interval}, {way}",
                        named(&s.level_names[c.after], &s.factor, git),
                        named(&s.level_names[c.after + 1], &s.factor, git)
                    )
                })
                .collect();
            text.push_str(&format!(
                "**Changed {}** along {n} levels, {per}: {}.\n\n",
                if steps.len() == 1 { "once".to_owned() } else { format!("{} times", steps.len()) },
                steps.join("; ")
            ));
            let confirm: Vec<String> = s
                .series
                .change_points
                .iter()
                .map(|c| {
                    let pair = format!("{},{}", s.level_names[c.after], s.level_names[c.after + 1]);
                    format!("`margin run {} --confirm {pair}`", file.display())
                })
                .collect();
            text.push_str(&format!(
                "Suspected until its two sides are measured again, interleaved: {}.\n\n",
                confirm.join("; ")
            ));
        }
        SeriesVerdict::NoChange => {
            let found = s.series.detectable.map_or_else(String::new, |d| {
                format!(
                    ": a step of ±{} in the middle of the series (±{} next to its ends) would have been found \
                     80 % of the time",
                    percent(d.middle * 100.0),
                    percent(d.edge * 100.0)
                )
            });
            text.push_str(&format!("**No change found** along {n} levels, {per}{found}.\n\n"));
        }
        SeriesVerdict::Unreplicated => text.push_str(&format!(
            "**Unreplicated**: each of the {n} levels has one observation ({per}), so how much they vary is \
             unmeasured and no change is claimed; measure each level in 2 or more {}s.\n\n",
            if s.observation == "trial" { "trial" } else { s.observation }
        )),
    }
    if !s.missing.is_empty() {
        let names: Vec<String> = s.missing.iter().map(|m| named(m, &s.factor, git)).collect();
        text.push_str(&format!(
            "Not in the series (no analysed trials; a cell that failed, its build in `setup` too, is in \
             Failures): {}.\n\n",
            names.join(", ")
        ));
    }
    text.push_str(&segments(s));
    text
}

/// The segments: which levels, how many observations, the mean and its interval.
fn segments(s: &SeriesStat) -> String {
    let header: Vec<String> =
        ["levels", "observations", "mean", &format!("{} CI", confidence(s.series.confidence))]
            .iter()
            .map(|h| (*h).to_owned())
            .collect();
    let show = |v: f64| scale(&s.unit, v).with_unit(v);
    let rows: Vec<Vec<String>> = s
        .series
        .segments
        .iter()
        .map(|g| {
            let levels = if g.first == g.last {
                format!("`{}`", s.level_names[g.first])
            } else {
                format!(
                    "`{}` … `{}` ({})",
                    s.level_names[g.first],
                    s.level_names[g.last],
                    g.last - g.first + 1
                )
            };
            let interval = match (g.estimate.low, g.estimate.high) {
                (Some(l), Some(h)) => format!("[{}, {}]", show(l), show(h)),
                _ => "–".to_owned(),
            };
            vec![cell_text(&levels), g.units.to_string(), show(g.estimate.mean), interval]
        })
        .collect();
    markdown_table(&header, &rows, 1)
}

/// What a confirmation run says at its end (`margin run FILE --confirm A,B`), a line per
/// metric and context of its one comparison: confirmed when the interval of B against A
/// excludes no change, not confirmed otherwise, with the comparison's sentence (which
/// starts with its verdict where it is not a difference).
pub(crate) fn confirmations(summary: &Summary) -> Vec<String> {
    summary.comparisons.iter().map(confirmation).collect()
}

fn confirmation(c: &ComparisonStat) -> String {
    let context: Vec<String> = c.context.iter().map(|(k, v)| format!("{k}={v}")).collect();
    let what = match context.as_slice() {
        [] => c.metric.clone(),
        some => format!("{} ({})", c.metric, some.join(" ")),
    };
    let said = match c.verdict {
        VerdictKind::Significant => "confirmed".to_owned(),
        VerdictKind::UncertainSize => "confirmed, its size unsettled".to_owned(),
        VerdictKind::WithinBand => "confirmed, but within the practical threshold".to_owned(),
        _ => "not confirmed".to_owned(),
    };
    format!("{what}: {said}: {}", c.sentence)
}
