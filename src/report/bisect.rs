//! The Markdown `margin bisect` prints: the verdict on its first line, what was bisected,
//! a table of the steps with their decisions, and what it cost; and the report's Bisect
//! section, the same for each bisection the store holds.

use super::format::{cell_text, confidence, dash, markdown_table, percent};
use crate::spec::git::{Commit, GitLevels};
use crate::summary::bisect::{BisectOutput, BisectStep, BisectUnderWay, Verdict};
use stats::bisect::Decision;
use stats::notation::{change_and_interval, ratio_interval};
use vocab::Better;
use vocab::display::duration;

/// The answer as `--json` prints it: with `commits`, the commits of the git levels it
/// names (full hash, short hash, subject), for scripts.
#[derive(serde::Serialize)]
pub(crate) struct WithCommits<'a> {
    #[serde(flatten)]
    answer: &'a BisectOutput,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    commits: Vec<&'a Commit>,
}

impl<'a> WithCommits<'a> {
    /// `git`: the bisected factor's resolution, when it is a git factor.
    pub(crate) fn new(b: &'a BisectOutput, git: Option<&'a GitLevels>) -> Self {
        let steps = b.steps.iter().filter_map(|s| s.level.as_deref());
        let ends = [Some(b.good.as_str()), Some(&b.bad), b.last_good.as_deref(), b.first_bad.as_deref()];
        let levels: Vec<&str> = ends.into_iter().flatten().chain(steps).collect();
        let commits = git.map_or_else(Vec::new, |g| {
            g.commits.iter().filter(|c| levels.contains(&c.short.as_str())).collect()
        });
        WithCommits { answer: b, commits }
    }
}

/// The report's Bisect section: each bisection under a heading of its range, those that
/// have not answered yet with where they stand; `None` without any. `commits`: as
/// [`markdown`] takes them.
pub(crate) fn section(
    bisections: &[BisectOutput],
    under_way: &[BisectUnderWay],
    commits: &[(String, String)],
) -> Option<String> {
    if bisections.is_empty() && under_way.is_empty() {
        return None;
    }
    let heading = |factor: &str, good: &str, bad: &str| format!("### `{factor}` from `{good}` to `{bad}`");
    let done = bisections
        .iter()
        .map(|b| format!("{}\n\n{}", heading(&b.factor, &b.good, &b.bad), markdown(b, commits)));
    let going =
        under_way.iter().map(|u| format!("{}\n\n{}\n", heading(&u.factor, &u.good, &u.bad), standing(u)));
    Some(done.chain(going).collect::<Vec<String>>().join("\n"))
}

/// Where a bisection that has not answered stands, and how to go on with it.
fn standing(u: &BisectUnderWay) -> String {
    let spent = match u.boots {
        Some(boots) => format!("{boots} boots, {} trials", u.trials),
        None => format!("{} trials", u.trials),
    };
    let decided = match u.decided {
        0 => "the ends' comparison not settled yet".to_owned(),
        1 => "the ends' comparison settled".to_owned(),
        n => format!("the ends' comparison and {} step{} decided", n - 1, if n == 2 { "" } else { "s" }),
    };
    format!(
        "**Not answered yet**: {spent} in {} so far (the sessions labelled `{}`), {decided}; it measures \
         `{}` next. `{}` goes on from here, measuring nothing twice.",
        duration(u.seconds),
        u.label,
        u.next,
        u.command
    )
}

/// How a unit was measured, for the sentence under the verdict.
fn unit_text(b: &BisectOutput) -> String {
    match b.trials_per_boot {
        Some(m) => format!(
            "one boot a unit (the mean of its {m} trial{}), each a fresh boot of its level",
            if m == 1 { "" } else { "s" }
        ),
        None => "one trial a unit".to_owned(),
    }
}

/// The whole answer; `commits`: a git factor's levels → their commits' subjects, said
/// beside the levels the answer names.
pub(crate) fn markdown(b: &BisectOutput, commits: &[(String, String)]) -> String {
    let mut out = format!("{}\n\n", verdict_with(b, commits));
    let fixed = if b.fixed.is_empty() {
        String::new()
    } else {
        let levels: Vec<String> = b.fixed.iter().map(|(k, v)| format!("{k}={v}")).collect();
        format!(", with {}", levels.join(" "))
    };
    let direction = match b.better {
        Better::Lower => "lower",
        Better::Higher => "higher",
    };
    out.push_str(&format!(
        "Bisected `{}` of {} from `{}` (good) to `{}` (bad){fixed}: `{}` ({direction} is better), δ ±{}, \
         {} confidence; {}, in the sessions labelled `{}`.\n\n",
        b.factor,
        b.experiment,
        b.good,
        b.bad,
        b.metric,
        percent(b.threshold_pct),
        confidence(b.confidence),
        unit_text(b),
        b.label,
    ));
    let mut header: Vec<String> = ["step", "level", "against good", "against bad", "decision", "trials"]
        .iter()
        .map(|s| (*s).to_owned())
        .collect();
    if b.boots.is_some() {
        header.push("boots".to_owned());
    }
    let rows: Vec<Vec<String>> = b.steps.iter().enumerate().map(|(i, s)| step_row(i, s)).collect();
    out.push_str(&markdown_table(&header, &rows, 5));
    let spent = match b.boots {
        Some(boots) => format!("{boots} boots, {} trials", b.trials),
        None => format!("{} trials", b.trials),
    };
    let spent = format!("{spent} in {}", duration(b.seconds));
    out.push_str(&format!(
        "\n\nIntervals at each step's own confidence (the error spent across the steps). {spent}; {} of the \
         {} levels from `{}` to `{}` measured.\n",
        b.levels_measured, b.levels, b.good, b.bad
    ));
    let skipped: Vec<String> = b
        .steps
        .iter()
        .filter(|s| s.decision == Decision::Skipped)
        .filter_map(|s| s.level.as_deref().map(|l| named(l, commits)))
        .collect();
    if !skipped.is_empty() {
        out.push_str(&format!(
            "Skipped, as `git bisect skip`: {}: its `setup` (the build) failed, its output kept in the store's \
             raw/ folder; the bisection tried the nearest level instead.\n",
            skipped.join(", ")
        ));
    }
    if b.unused_trials > 0 {
        out.push_str(&format!(
            "{} labelled trial(s) of these cells were not asked for when replayed, and are not used.\n",
            b.unused_trials
        ));
    }
    out
}

/// The first line: what the bisection found.
pub(crate) fn verdict_line(b: &BisectOutput) -> String {
    verdict_with(b, &[])
}

/// `` `level` ``, with its commit's subject when `commits` has it.
fn named(level: &str, commits: &[(String, String)]) -> String {
    match commits.iter().find(|(l, _)| l == level) {
        Some((_, subject)) => format!("`{level}` (“{}”)", cell_text(subject)),
        None => format!("`{level}`"),
    }
}

/// [`verdict_line`], the levels it names with their commits' subjects.
fn verdict_with(b: &BisectOutput, commits: &[(String, String)]) -> String {
    let q = |level: &str| named(level, commits);
    let change = match (b.ratio, b.ci_low.zip(b.ci_high)) {
        (Some(r), Some(bounds)) => {
            let (change, interval) = change_and_interval(r, bounds);
            format!("{change} {interval}")
        }
        (Some(r), None) => stats::notation::ratio_change(r),
        _ => dash(),
    };
    let (good, bad) = (b.last_good.as_deref().unwrap_or(&b.good), b.first_bad.as_deref().unwrap_or(&b.bad));
    match b.verdict {
        Verdict::Found => {
            format!("found: {} made {} worse: {change}; last good {}", q(bad), b.metric, q(good))
        }
        Verdict::Narrowed => format!(
            "narrowed: between {} and {}: {} {change} from one to the other; the levels between \
             could not be told apart from either end",
            q(good),
            q(bad),
            b.metric
        ),
        Verdict::NoRegression => format!(
            "no regression between `{}` and `{}`: {} {change}, within ±{}",
            b.good,
            b.bad,
            b.metric,
            percent(b.threshold_pct)
        ),
        Verdict::Improvement => format!(
            "improvement, not a regression: `{}` is better than `{}` on {}: {change}; nothing to bisect",
            b.bad, b.good, b.metric
        ),
        Verdict::Inconclusive => format!(
            "inconclusive: `{}` against `{}` not settled within {}: {} {change}; δ ±{}",
            b.bad,
            b.good,
            b.boots.map_or_else(|| format!("{} trials", b.trials), |n| format!("{n} boots")),
            b.metric,
            percent(b.threshold_pct)
        ),
    }
}

fn step_row(i: usize, s: &BisectStep) -> Vec<String> {
    let interval = |bounds: Option<(f64, f64)>| bounds.map_or_else(dash, ratio_interval);
    let (step, level) = match &s.level {
        None => ("ends".to_owned(), format!("{} → {}", s.good, s.bad)),
        Some(level) => (i.to_string(), level.clone()),
    };
    let decision = match s.decision {
        Decision::Regression => "regression",
        Decision::NoRegression => "no regression",
        Decision::Improvement => "improvement",
        Decision::Inconclusive => "inconclusive",
        Decision::LikeGood => "like good",
        Decision::LikeBad => "like bad",
        Decision::Unknown => "unknown",
        Decision::Skipped => "skipped",
    };
    let mut row = vec![
        step,
        cell_text(&level),
        interval(s.against_good),
        interval(s.against_bad),
        decision.to_owned(),
        s.trials.to_string(),
    ];
    row.extend(s.boots.map(|n| n.to_string()));
    row
}

#[cfg(test)]
mod tests {
    use indexmap::IndexMap;

    use super::*;

    fn output(verdict: Verdict, located: bool) -> BisectOutput {
        BisectOutput {
            experiment: "x".into(),
            factor: "version".into(),
            metric: "time".into(),
            unit: "s".into(),
            better: Better::Lower,
            fixed: IndexMap::from([("size".to_owned(), "4k".to_owned())]),
            label: "bisect:version:v1..v16".into(),
            verdict,
            good: "v1".into(),
            bad: "v16".into(),
            last_good: located.then(|| "v9".to_owned()),
            first_bad: located.then(|| "v12".to_owned()),
            ratio: Some(1.1),
            ci_low: Some(1.05),
            ci_high: Some(1.15),
            confidence: 0.95,
            threshold_pct: 5.0,
            steps: vec![BisectStep {
                level: Some("v8".into()),
                good: "v1".into(),
                bad: "v16".into(),
                decision: Decision::Unknown,
                units: 64,
                trials: 64,
                boots: None,
                looks: 4,
                confidence: 0.998,
                against_good: Some((1.01, 1.09)),
                against_bad: None,
            }],
            trials: 120,
            boots: None,
            trials_per_boot: None,
            levels_measured: 5,
            seconds: 754.0,
            levels: 16,
            unused_trials: 0,
        }
    }

    #[test]
    fn each_verdict_says_what_it_located_first() {
        let line = |v, located| verdict_line(&output(v, located));
        assert_eq!(
            line(Verdict::Found, true),
            "found: `v12` made time worse: +10.0 % [+5.0 %, +15.0 %]; last good `v9`"
        );
        assert!(line(Verdict::Narrowed, true).starts_with("narrowed: between `v9` and `v12`: time +10.0 %"));
        assert!(
            line(Verdict::NoRegression, false)
                .starts_with("no regression between `v1` and `v16`: time +10.0 %")
        );
        assert!(
            line(Verdict::Improvement, false).starts_with("improvement, not a regression: `v16` is better")
        );
        assert!(line(Verdict::Inconclusive, false).contains("not settled within 120 trials"));
        let text = markdown(&output(Verdict::Narrowed, true), &[]);
        assert!(text.contains("with size=4k: `time` (lower is better)"), "{text}");
        assert!(text.contains("| 0    | v8    | [+1.0 %, +9.0 %]"), "{text}");
        assert!(text.contains("120 trials in 12 min 34 s; 5 of the 16 levels"), "{text}");
    }

    #[test]
    fn across_boots_each_step_and_the_total_say_their_boots() {
        let mut b = output(Verdict::Found, true);
        b.trials_per_boot = Some(3);
        b.boots = Some(40);
        b.steps[0].boots = Some(16);
        b.steps[0].trials = 48;
        let text = markdown(&b, &[]);
        assert!(text.contains("one boot a unit (the mean of its 3 trials)"), "{text}");
        let header = text.lines().find(|l| l.starts_with("| step")).unwrap();
        let columns: Vec<&str> = header.split('|').map(str::trim).filter(|c| !c.is_empty()).collect();
        assert_eq!(columns.last(), Some(&"boots"), "{header}");
        let row = text.lines().find(|l| l.starts_with("| 0 ")).unwrap();
        let cells: Vec<&str> = row.split('|').map(str::trim).filter(|c| !c.is_empty()).collect();
        assert_eq!(cells[cells.len() - 2..], ["48", "16"], "{row}");
        assert!(text.contains("40 boots, 120 trials in 12 min 34 s; 5 of the 16 levels"), "{text}");
        let section = section(&[b], &[], &[]).unwrap();
        assert!(section.starts_with("### `version` from `v1` to `v16`\n\nfound: `v12`"), "{section}");
        assert!(super::section(&[], &[], &[]).is_none());
    }

    #[test]
    fn a_bisection_not_answered_says_where_it_stands_and_how_to_go_on() {
        let u = BisectUnderWay {
            factor: "dom0_mem".into(),
            good: "1536M".into(),
            bad: "512M".into(),
            label: "bisect:dom0_mem:1536M..512M".into(),
            decided: 2,
            trials: 54,
            boots: Some(18),
            next: "768M".into(),
            seconds: 4000.0,
            command: "margin bisect lab.yaml --factor dom0_mem".into(),
        };
        let text = section(&[], std::slice::from_ref(&u), &[]).unwrap();
        assert!(text.starts_with("### `dom0_mem` from `1536M` to `512M`\n\n**Not answered yet**: 18 boots, 54 trials in 1 h 06 min so far"), "{text}");
        assert!(text.contains("the ends' comparison and 1 step decided; it measures `768M` next."), "{text}");
        assert!(text.contains("`margin bisect lab.yaml --factor dom0_mem` goes on from here"), "{text}");
        let first = standing(&BisectUnderWay { decided: 0, boots: None, ..u });
        assert!(
            first.contains("**Not answered yet**: 54 trials in") && first.contains("not settled yet"),
            "{first}"
        );
    }
}
