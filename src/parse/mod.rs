//! Parsers: turn what a benchmark tool printed into named metrics in canonical units.
//!
//! One file per tool behind the [`Parser`] trait, plus the generic [`regex`](extract::regex)
//! and [`json`](extract::json) extractors that an experiment declares itself. A parser sees
//! the trial's stdout and stderr and returns [`Parsed`]: one [`Sample`] per result the
//! output holds, and warnings that deserve a place in the report without failing the trial.
//!
//! What counts as one result: one execution of the measured work. A bonnie++ run with
//! `-x 3` prints three rows, hyperfine's `times` holds one duration per run, and a shell
//! loop around dd prints several summaries: each is a sample, so `margin import` turns
//! them into trials. Results of one execution that differ in what was measured — dnetc's
//! per-core benchmarks, iozone's tests, fio's jobs — are metrics of one sample instead.

use std::fmt;

use serde::Serialize;

mod bonnie;
mod dd;
mod dnetc;
pub mod extract;
mod fio;
mod hyperfine;
mod iozone;
mod iperf3;
mod netperf;
mod recipe;
mod sysbench;
mod time;

pub use recipe::{Recipe, check_samples};
use vocab::{Better, MeanKind, Unit, UnitScale, UnknownUnit, parse_unit};

/// One number taken from a tool's output, in its canonical unit.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Metric {
    pub name: String,
    pub value: f64,
    pub unit: Unit,
    pub better: Better,
    pub mean: MeanKind,
}

/// One result: the metrics of one execution of the measured work, in the order the tool
/// printed them.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Sample {
    /// What produced the result when the output holds several kinds (hyperfine's command,
    /// bonnie++'s machine name).
    pub label: Option<String>,
    pub metrics: Vec<Metric>,
}

impl Sample {
    pub fn labelled(label: impl Into<String>) -> Self {
        Sample { label: Some(label.into()), metrics: Vec::new() }
    }

    /// Adds a metric averaged arithmetically.
    pub fn push(&mut self, name: impl Into<String>, value: f64, unit: Unit, better: Better) {
        self.push_with(name, value, unit, better, MeanKind::Arithmetic);
    }

    /// Adds a fixed-work rate, averaged harmonically.
    pub fn push_rate(&mut self, name: impl Into<String>, value: f64, unit: Unit) {
        self.push_with(name, value, unit, Better::Higher, MeanKind::Harmonic);
    }

    pub fn push_with(
        &mut self,
        name: impl Into<String>,
        value: f64,
        unit: Unit,
        better: Better,
        mean: MeanKind,
    ) {
        // A value that is not finite (a rate over a zero elapsed time) carries no
        // information, and one NaN would poison every statistic of the cell.
        if value.is_finite() {
            self.metrics.push(Metric { name: name.into(), value, unit, better, mean });
        }
    }

    pub fn get(&self, name: &str) -> Option<&Metric> {
        self.metrics.iter().find(|m| m.name == name)
    }

    /// The value of one metric (the parsers' tests read results by name).
    #[cfg(test)]
    pub fn value(&self, name: &str) -> Option<f64> {
        self.get(name).map(|m| m.value)
    }

    pub fn is_empty(&self) -> bool {
        self.metrics.is_empty()
    }
}

/// What a parser found: at least one non-empty sample.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Parsed {
    pub samples: Vec<Sample>,
    /// Things the report should mention that do not make the trial fail (dd's partial
    /// records, a hyperfine run that exited non-zero and was left out).
    pub warnings: Vec<String>,
    /// The tool's own word on its measurement (`vocab::NOT_CONVERGED`), recorded with the
    /// trial and shown next to its cell.
    pub flags: Vec<&'static str>,
}

/// Why an output yielded no metrics.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ParseError {
    #[error("{parser}: found no {expected} in the output, which begins:\n{excerpt}")]
    NothingFound { parser: &'static str, expected: &'static str, excerpt: String },
    #[error("{parser} reported an error: {message}")]
    Tool { parser: &'static str, message: String },
    #[error("{parser}: unreadable output: {detail}")]
    Malformed { parser: &'static str, detail: String },
    #[error("the output has no metric {missing}; it has: {found}")]
    Missing { missing: String, found: String },
}

/// A tool-output parser. Implementations never panic, whatever the input.
pub trait Parser: Send + Sync {
    /// The name an experiment file uses (`parse: dd`).
    fn name(&self) -> &'static str;
    fn parse(&self, stdout: &str, stderr: &str) -> Result<Parsed, ParseError>;
}

/// The built-in parser called `name` (one of [`PARSERS`](vocab::PARSERS)).
pub fn builtin(name: &str) -> Option<&'static dyn Parser> {
    Some(match name {
        "dd" => &dd::Dd,
        "bonnie++" => &bonnie::Bonnie,
        "iozone" => &iozone::Iozone,
        "fio" => &fio::Fio,
        "sysbench" => &sysbench::Sysbench,
        "iperf3" => &iperf3::Iperf3,
        "netperf" => &netperf::Netperf,
        "dnetc" => &dnetc::Dnetc,
        "hyperfine" => &hyperfine::Hyperfine,
        "time" => &time::Time,
        _ => return None,
    })
}

/// How many lines of the output a "found nothing" error quotes, and how much of each.
const EXCERPT_LINES: usize = 5;
const EXCERPT_WIDTH: usize = 120;

/// The error for an output in which a parser recognised nothing: it quotes the beginning
/// of the output, because "no dd summary found" alone does not tell a user that the
/// command printed "No space left on device".
pub(crate) fn nothing_found(
    parser: &'static str,
    expected: &'static str,
    stdout: &str,
    stderr: &str,
) -> ParseError {
    ParseError::NothingFound { parser, expected, excerpt: excerpt(stdout, stderr) }
}

fn excerpt(stdout: &str, stderr: &str) -> String {
    let quote = |stream: &str, text: &str| {
        let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
        let mut out = String::new();
        for line in lines.iter().take(EXCERPT_LINES) {
            out.push_str(&format!("  {stream}| {}\n", Truncated(line)));
        }
        if lines.len() > EXCERPT_LINES {
            out.push_str(&format!("  {stream}| … ({} more lines)\n", lines.len() - EXCERPT_LINES));
        }
        out
    };
    let text = quote("stdout", stdout) + &quote("stderr", stderr);
    if text.is_empty() { "  (stdout and stderr are empty)".to_owned() } else { text.trim_end().to_owned() }
}

/// A line cut to [`EXCERPT_WIDTH`] characters (not bytes: lines can hold any UTF-8).
struct Truncated<'a>(&'a str);

impl fmt::Display for Truncated<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0.char_indices().nth(EXCERPT_WIDTH) {
            Some((cut, _)) => write!(f, "{}…", &self.0[..cut]),
            None => f.write_str(self.0),
        }
    }
}

/// Parses a number as tools print it, refusing what `f64::from_str` accepts but no tool
/// means ("inf", "NaN") so that garbage never becomes a measurement.
pub(crate) fn number(text: &str) -> Option<f64> {
    let text = text.trim();
    let looks_numeric =
        text.chars().next().is_some_and(|c| c.is_ascii_digit() || matches!(c, '-' | '+' | '.'));
    text.parse::<f64>().ok().filter(|v| looks_numeric && v.is_finite())
}

/// Both streams as one text, for tools whose summary may land in either (dd and
/// `/usr/bin/time` write to stderr, but a command run as `… 2>&1` puts it in stdout).
pub(crate) fn both_streams(stdout: &str, stderr: &str) -> String {
    let mut text = String::with_capacity(stdout.len() + stderr.len() + 1);
    text.push_str(stdout);
    if !stdout.is_empty() && !stdout.ends_with('\n') {
        text.push('\n');
    }
    text.push_str(stderr);
    text
}

/// The first JSON object in a text, skipping what a tool printed before it (fio prints
/// notes and job summaries ahead of its JSON) and ignoring what follows it.
pub(crate) fn json_document(text: &str) -> Option<serde_json::Value> {
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        if line.trim_start().starts_with('{') {
            let rest = &text[offset..];
            let mut values = serde_json::Deserializer::from_str(rest).into_iter::<serde_json::Value>();
            if let Some(Ok(value)) = values.next()
                && value.is_object()
            {
                return Some(value);
            }
        }
        offset += line.len();
    }
    None
}

/// A metric-name component from free text: lower case, runs of other characters as `_`
/// ("re-readers" → "re_readers", "RC5-72" → "rc5_72").
pub(crate) fn snake(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.trim().chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.ends_with('_') {
            out.push('_');
        }
    }
    out.trim_matches('_').to_owned()
}

#[cfg(test)]
pub(crate) mod testing {
    //! Helpers shared by the parsers' tests.

    use super::*;

    /// Asserts a metric's value to 12 significant digits (parsers compute, so exact float
    /// equality would test the order of operations), and its unit.
    #[track_caller]
    pub(crate) fn assert_metric(sample: &Sample, name: &str, expected: f64, unit: Unit) {
        let metric = sample.get(name).unwrap_or_else(|| panic!("no metric {name}; have {:?}", names(sample)));
        let tolerance = expected.abs() * 1e-12;
        assert!((metric.value - expected).abs() <= tolerance, "{name}: {} != {expected}", metric.value);
        assert_eq!(metric.unit, unit, "{name}");
    }

    pub(crate) fn names(sample: &Sample) -> Vec<&str> {
        sample.metrics.iter().map(|m| m.name.as_str()).collect()
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// Every real output in the fixtures, so that truncations of them can be thrown at
    /// every parser: a truncated real output reaches far deeper into a parser than random
    /// text does.
    const FIXTURES: &[&str] = &[
        include_str!("../../tests/data/parse/bonnie++-1.03-seed000.csv"),
        include_str!("../../tests/data/parse/bonnie++-2.00a.csv"),
        include_str!("../../tests/data/parse/dd-9.1-fdatasync.txt"),
        include_str!("../../tests/data/parse/dd-seed002.txt"),
        include_str!("../../tests/data/parse/dnetc-2.9011-seed000.diff"),
        include_str!("../../tests/data/parse/fio-3.33.json"),
        include_str!("../../tests/data/parse/fio-3.33-error.json"),
        include_str!("../../tests/data/parse/hyperfine-1.15.0.json"),
        include_str!("../../tests/data/parse/iozone-seed001.txt"),
        include_str!("../../tests/data/parse/iozone-3.492-auto-i0-i2.txt"),
        include_str!("../../tests/data/parse/iperf3-3.12-tcp.json"),
        include_str!("../../tests/data/parse/iperf3-3.12-udp.json"),
        include_str!("../../tests/data/parse/netperf-2.4.5-tcp_stream.txt"),
        include_str!("../../tests/data/parse/netperf-tcp_rr-cpu.txt"),
        include_str!("../../tests/data/parse/sysbench-1.0.20-fileio.txt"),
        include_str!("../../tests/data/parse/time-1.9-dd.txt"),
    ];

    #[test]
    fn registry_resolves_every_builtin_name_to_itself() {
        for name in vocab::PARSERS {
            let parser = builtin(name).unwrap_or_else(|| panic!("{name} is not registered"));
            assert_eq!(parser.name(), *name);
        }
        assert!(builtin("bonnie").is_none());
    }

    #[test]
    fn nothing_found_quotes_the_first_lines_of_both_streams() {
        let stdout = "line 1\n\nline 2\nline 3\nline 4\nline 5\nline 6\n";
        let long = "x".repeat(500);
        for name in vocab::PARSERS {
            let error = builtin(name).unwrap().parse(stdout, &long).unwrap_err();
            let message = error.to_string();
            assert!(message.contains("stdout| line 1\n"), "{name}: {message}");
            assert!(message.contains("stdout| line 5\n"), "{name}: {message}");
            assert!(!message.contains("line 6"), "{name}: {message}");
            assert!(message.contains("(1 more lines)"), "{name}: {message}");
            assert!(message.contains(&format!("stderr| {}…", "x".repeat(120))), "{name}: {message}");
            assert!(!message.contains(&"x".repeat(121)), "{name}");
        }
        let empty = builtin("dd").unwrap().parse("", "").unwrap_err();
        assert!(empty.to_string().contains("(stdout and stderr are empty)"), "{empty}");
    }

    #[test]
    fn snake_makes_name_components() {
        assert_eq!(snake("re-readers"), "re_readers");
        assert_eq!(snake("RC5-72"), "rc5_72");
        assert_eq!(snake("  Random  read "), "random_read");
    }

    #[test]
    fn number_refuses_words_that_parse_as_floats() {
        assert_eq!(number(" 66.4 "), Some(66.4));
        assert_eq!(number("4.8306e-05"), Some(4.8306e-05));
        for word in ["inf", "NaN", "infinity", "+inf", "", "1e999"] {
            assert_eq!(number(word), None, "{word}");
        }
    }

    proptest! {
        #[test]
        fn parsers_never_panic_on_arbitrary_text(stdout in any::<String>(), stderr in any::<String>()) {
            for name in vocab::PARSERS {
                let _ = builtin(name).unwrap().parse(&stdout, &stderr);
            }
        }

        #[test]
        fn parsers_never_panic_on_truncated_real_output(
            fixture in proptest::sample::select(FIXTURES),
            cut in any::<proptest::sample::Index>(),
            junk in "[0-9a-z ,.:+{}\\[\\]\"\n-]{0,40}",
        ) {
            let mut end = cut.index(fixture.len() + 1);
            while !fixture.is_char_boundary(end) {
                end -= 1;
            }
            let truncated = format!("{}{junk}", &fixture[..end]);
            for name in vocab::PARSERS {
                let parser = builtin(name).unwrap();
                let _ = parser.parse(&truncated, "");
                let _ = parser.parse("", &truncated);
            }
        }

        #[test]
        fn parsed_values_are_always_finite(stdout in any::<String>()) {
            for name in vocab::PARSERS {
                if let Ok(parsed) = builtin(name).unwrap().parse(&stdout, "") {
                    prop_assert!(parsed.samples.iter().all(|s| !s.is_empty()));
                    for metric in parsed.samples.iter().flat_map(|s| &s.metrics) {
                        prop_assert!(metric.value.is_finite());
                    }
                }
            }
        }
    }
}
