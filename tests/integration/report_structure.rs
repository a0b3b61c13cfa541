//! report.md as GitHub shows it: rendered by a CommonMark parser with tables on, and its
//! structure checked rather than its text. The answer opens the report as one table, a
//! row per comparison, real differences first and the biggest first; the header lines
//! are paragraphs of their own; no change past ×2 reads as a percentage above 100 %.
//! Checked on a committed seed report and on one `margin run` writes.

use std::path::Path;

use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};
use regex::Regex;
use serde_json::Value;

use super::{stderr, stdout};

/// The top-level blocks of a document, as far as these checks need them.
#[derive(Debug)]
enum Block {
    Heading(String),
    Paragraph(String),
    List(Vec<String>),
    /// The header row, then the body rows, each a list of cell texts.
    Table(Vec<String>, Vec<Vec<String>>),
    Other,
}

fn blocks(markdown: &str) -> Vec<Block> {
    let mut out = Vec::new();
    let mut depth = 0usize;
    let mut text = String::new();
    let (mut header, mut rows, mut row, mut items) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for event in Parser::new_ext(markdown, Options::ENABLE_TABLES) {
        match event {
            Event::Start(tag) => {
                depth += 1;
                match tag {
                    Tag::TableCell | Tag::Item | Tag::Heading { .. } => text.clear(),
                    Tag::Paragraph if depth == 1 => text.clear(),
                    _ => {}
                }
            }
            Event::End(end) => {
                depth -= 1;
                match end {
                    TagEnd::TableCell => row.push(text.trim().to_owned()),
                    TagEnd::TableHead => header = std::mem::take(&mut row),
                    TagEnd::TableRow => rows.push(std::mem::take(&mut row)),
                    TagEnd::Item => items.push(text.trim().to_owned()),
                    _ => {}
                }
                if depth == 0 {
                    out.push(match end {
                        TagEnd::Heading(_) => Block::Heading(text.trim().to_owned()),
                        TagEnd::Paragraph => Block::Paragraph(text.trim().to_owned()),
                        TagEnd::List(_) => Block::List(std::mem::take(&mut items)),
                        TagEnd::Table => Block::Table(std::mem::take(&mut header), std::mem::take(&mut rows)),
                        _ => Block::Other,
                    });
                }
            }
            Event::Text(t) | Event::Code(t) => text.push_str(&t),
            // a soft break is a space to a reader: the lines run together
            Event::SoftBreak => text.push(' '),
            Event::HardBreak => text.push('\n'),
            _ => {}
        }
    }
    out
}

/// How big a change cell says the change is: |ln ratio| (`×217`, `÷3.1`, `-19.9 %`).
fn size(change: &str) -> f64 {
    if let Some(m) = change.strip_prefix('×') {
        m.parse::<f64>().unwrap().ln()
    } else if let Some(d) = change.strip_prefix('÷') {
        d.parse::<f64>().unwrap().ln()
    } else {
        let pct: f64 =
            change.trim_end_matches(" %").parse().unwrap_or_else(|_| panic!("a change: {change:?}"));
        (1.0 + pct / 100.0).ln().abs()
    }
}

/// Checks the structure of `markdown`, the report of `summary`.
fn check(markdown: &str, summary: &Value) {
    let blocks = blocks(markdown);
    let comparisons = summary["comparisons"].as_array().unwrap();
    assert!(!comparisons.is_empty(), "a report with comparisons");

    // The header lines are paragraphs of their own, not one run-together paragraph.
    let paragraphs: Vec<&str> = blocks
        .iter()
        .filter_map(|b| if let Block::Paragraph(p) = b { Some(p.as_str()) } else { None })
        .collect();
    let counts = paragraphs.iter().find(|p| p.contains(" analysed in ")).expect("the counts line");
    assert!(!counts.contains("Confidence"), "the counts and the settings run together: {counts:?}");
    assert!(paragraphs.iter().any(|p| p.starts_with("Confidence ")), "the settings line: {paragraphs:#?}");

    // The answer opens the report: the first table, and no list of sentences before it.
    let first = blocks.iter().position(|b| matches!(b, Block::Table(..))).expect("a table");
    assert!(
        !blocks[..first].iter().any(|b| matches!(b, Block::List(_))),
        "sentences before the answer's table: {:#?}",
        &blocks[..first]
    );
    assert!(
        matches!(blocks[..first].iter().rev().find(|b| matches!(b, Block::Heading(_))), Some(Block::Heading(h)) if h == "The answer"),
        "the first table is the answer's"
    );
    let Block::Table(header, rows) = &blocks[first] else { unreachable!() };
    let column = |name: &str| header.iter().position(|h| h == name);
    let (change, verdict) =
        (column("change").expect("a change column"), column("verdict").expect("a verdict column"));
    assert!(column("metric").is_some() && column("comparison").is_some(), "{header:?}");
    let ci = header.iter().position(|h| h.ends_with("% CI")).expect("a CI column");
    assert_eq!(ci, change + 1, "{header:?}");
    assert_eq!(rows.len(), comparisons.len().min(100), "a row per comparison: {rows:#?}");

    // Real differences first, the biggest first; every verdict a mark and a word.
    let real: Vec<&Vec<String>> = rows.iter().take_while(|r| r[verdict].starts_with("✔ real")).collect();
    let reals = comparisons
        .iter()
        .filter(|c| c["verdict"] == "significant" || c["verdict"] == "uncertain_size")
        .count();
    assert_eq!(real.len(), reals, "the real differences come first: {rows:#?}");
    // then the undecided, then the small and the absent (src/report/glance.rs's rank)
    let order = [
        "✔ real",
        "✔ real, size unsettled",
        "? inconclusive",
        "⚠ unreplicated",
        "? too noisy",
        "– no error estimate",
        "≈ real, within margin",
        "≈ within margin",
    ];
    let ranked: Vec<(usize, f64)> = rows
        .iter()
        .map(|r| {
            let rank = order.iter().position(|o| *o == r[verdict]).unwrap_or_else(|| panic!("{r:?}"));
            (rank, if r[change] == "—" { f64::NEG_INFINITY } else { size(&r[change]) })
        })
        .collect();
    // (the cells are rounded: 3 significant digits, or 0.1 %, a size of about 0.005)
    assert!(
        ranked.windows(2).all(|w| w[0].0 < w[1].0 || (w[0].0 == w[1].0 && w[0].1 >= w[1].1 - 0.005)),
        "by verdict, the biggest change first within one: {rows:#?}"
    );
    for r in rows {
        let mark = r[verdict].chars().next().unwrap();
        assert!("✔≈?⚠–".contains(mark) && r[verdict].chars().nth(1) == Some(' '), "{r:?}");
    }

    // The sentences follow under their own heading, a list item per row, in its order.
    let words = blocks.iter().position(|b| matches!(b, Block::Heading(h) if h == "Each comparison in words"));
    let words = words.expect("the sentences' heading");
    assert!(words > first, "the sentences come after the table");
    let Some(Block::List(items)) = blocks.get(words + 1) else { panic!("a list of sentences") };
    assert_eq!(items.len(), rows.len(), "{items:#?}");
    let (comparison, metric) = (column("comparison").unwrap(), column("metric").unwrap());
    for (item, row) in items.iter().zip(rows) {
        let title = format!("{} · {}", row[comparison], row[metric]);
        assert!(item.starts_with(&title), "{title:?} in the table, then {item:?}");
    }

    // A ratio past ×2 reads as a multiple: no signed percentage above 100 % anywhere.
    let signed = Regex::new(r"(?:^|[\s\[(,])[+-](\d+(?:\.\d+)?) %").unwrap();
    for m in signed.captures_iter(markdown) {
        let value: f64 = m[1].parse().unwrap();
        assert!(value <= 100.0, "a ratio past ×2 as a percentage: {:?}", &m[0]);
    }
    let unsigned = Regex::new(r"(\d+(?:\.\d+)?) % (?:higher|lower)|allow up to (\d+(?:\.\d+)?) %").unwrap();
    for m in unsigned.captures_iter(markdown) {
        let value: f64 = m.get(1).or(m.get(2)).unwrap().as_str().parse().unwrap();
        assert!(value <= 100.0, "a ratio past ×2 as a percentage: {:?}", &m[0]);
    }

    // Every verdict sentence with an interval names its level (a single trial, or an
    // unreplicated side too noisy to bound within its session, has none).
    let level = summary["settings"]["interval_confidence"].as_f64().unwrap();
    let at = format!("at {} % confidence", (level * 100.0 * 1e4).round() / 1e4);
    for c in comparisons {
        let sentence = c["sentence"].as_str().unwrap();
        let unbounded_unreplicated = c["verdict"] == "unreplicated" && !sentence.contains("within their");
        if c["verdict"] != "insufficient" && !unbounded_unreplicated {
            assert!(sentence.contains(&at), "{at:?} missing: {sentence}");
        }
    }
}

fn seed(name: &str) -> (String, Value) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("reports").join(name);
    let markdown = std::fs::read_to_string(dir.join("report.md")).unwrap();
    let summary = serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).unwrap()).unwrap();
    (markdown, summary)
}

#[test]
fn the_seed_reports_open_with_the_answer_table() {
    for name in ["xen-bonnie", "xen-dnetc", "xen-iozone", "xen-dd"] {
        let (markdown, summary) = seed(name);
        check(&markdown, &summary);
    }
}

#[test]
fn a_generated_report_ranks_real_differences_first_and_reads_multiples() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("experiments")).unwrap();
    // value = 10·v plus a small spread; level 103 spreads by 100 (ten times its change)
    let yaml = "matrix:\n  v: [100, 101, 250, 30, 103]\n\
                run: \"echo value=$(( {{ v }} * 10 + {{ repetition }} % 3 * ({{ v }} == 103 ? 100 : 1) ))\"\n\
                metrics:\n  value: { regex: 'value=([0-9.]+)', better: higher }\n\
                repetitions: 5\n\
                analysis:\n  compare:\n    - { factor: v, baseline: 100 }\n";
    std::fs::write(dir.path().join("experiments/x.yaml"), yaml).unwrap();
    let out = super::margin()
        .current_dir(dir.path())
        .env("MARGIN_REPORTS", dir.path().join("reports"))
        .args(["run", "experiments/x.yaml"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}\n{}", stdout(&out), stderr(&out));
    let store = dir.path().join("reports/x");
    let markdown = std::fs::read_to_string(store.join("report.md")).unwrap();
    let summary: Value =
        serde_json::from_str(&std::fs::read_to_string(store.join("summary.json")).unwrap()).unwrap();
    check(&markdown, &summary);
    let blocks = blocks(&markdown);
    let Some(Block::Table(header, rows)) = blocks.iter().find(|b| matches!(b, Block::Table(..))) else {
        panic!("a table")
    };
    assert_eq!(header, &["metric", "comparison", "change", "95 % CI", "verdict"], "no context to show");
    let firsts: Vec<(&str, &str, &str)> =
        rows.iter().map(|r| (r[1].as_str(), r[2].as_str(), r[4].as_str())).take(2).collect();
    assert_eq!(
        firsts,
        [("v: 30 vs 100", "÷3.32", "✔ real"), ("v: 250 vs 100", "×2.5", "✔ real")],
        "{rows:#?}"
    );
    assert!(markdown.contains("- **v: 250 vs 100 · value**: 250 is better than 100: ×2.5 [×"), "{markdown}");
}

/// Two levels inside each other's noise, with adaptive repetitions capped at 8 a cell:
/// the advice does not stop at a count of trials no run of this file will reach; it says
/// that count is past the maximum, and what would help instead (the default experiment once read "about 8937
/// more trials per level would settle it" beside `max: 20`). The change and its interval
/// read in one notation.
#[test]
fn advice_past_the_adaptive_maximum_says_so() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("experiments")).unwrap();
    std::fs::write(
        dir.path().join("experiments/noisy.yaml"),
        "matrix:\n  n: [1, 2]\n\
         run: 'echo value=$(( ({{ repetition }} * 37 + {{ n }} * 11) % 50 + 100 ))'\n\
         metrics:\n  value: { regex: 'value=(\\d+)', better: higher }\n\
         repetitions: { min: 5, max: 8, target: 1% }\nmonitor: none\n\
         analysis:\n  compare:\n    - { factor: n, baseline: 1 }\n",
    )
    .unwrap();
    let out = super::as_a_user(dir.path()).args(["run", "experiments/noisy.yaml"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let report = std::fs::read_to_string(dir.path().join("reports/noisy/report.md")).unwrap();
    let sentence = report
        .lines()
        .find(|l| l.starts_with("- **n: 2 vs 1 · value"))
        .unwrap_or_else(|| panic!("the comparison in words: {report}"));
    assert!(sentence.contains("inconclusive"), "{sentence}");
    assert!(sentence.contains("past the experiment's maximum of 8 trials a cell"), "{sentence}");
    assert!(sentence.contains("less noise"), "{sentence}");
    let _ = stdout(&out);
}

/// A store whose every trial failed (a regex that matches nothing): each metric says it
/// has no analysed trials and why, no plot claims "more cells than a plot can show", and
/// the failures section is two tables, as a Markdown parser reads it (they were one).
#[test]
fn a_store_whose_trials_all_failed_says_so_in_each_section() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("experiments")).unwrap();
    std::fs::write(
        dir.path().join("experiments/x.yaml"),
        "matrix:\n  v: [a, b]\nrun: \"echo value=1\"\nmetrics:\n  value: { regex: 'nomatch=([0-9]+)' }\nrepetitions: 2\n",
    )
    .unwrap();
    let out = super::as_a_user(dir.path()).args(["run", "experiments/x.yaml"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}\n{}", stdout(&out), stderr(&out));
    let markdown = std::fs::read_to_string(dir.path().join("reports/x/report.md")).unwrap();
    assert!(!markdown.contains("more cells than a plot can show"), "{markdown}");
    assert!(!markdown.contains("Values in ns"), "{markdown}");
    assert!(markdown.contains("wall_time: no plot (no analysed trials)"), "{markdown}");
    assert!(markdown.contains("No analysed trials: every trial that ran failed"), "{markdown}");
    let all = blocks(&markdown);
    let failures = all.iter().position(|b| matches!(b, Block::Heading(h) if h == "Failures")).unwrap();
    let tables: Vec<&Vec<String>> = all[failures + 1..]
        .iter()
        .take_while(|b| !matches!(b, Block::Heading(_)))
        .filter_map(|b| match b {
            Block::Table(header, _) => Some(header),
            _ => None,
        })
        .collect();
    assert_eq!(tables.len(), 2, "the trials' table and the cells': {tables:?}");
    assert_eq!(tables[1][0], "cell");
    assert_eq!(tables[1][1], "what");
}
