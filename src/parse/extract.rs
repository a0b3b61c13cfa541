//! Extractors an experiment declares itself: a regex with capture groups, or a JSON pointer.

use regex::{Regex, RegexBuilder};
use regex_syntax::ast::{self, Ast};

use super::{
    Better, MeanKind, ParseError, Parsed, Parser, Sample, Truncated, UnitScale, UnknownUnit, both_streams,
    json_document, nothing_found, number, parse_unit,
};

/// Why an extractor declared in an experiment cannot be built.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ExtractorError {
    #[error("invalid regex: {0}")]
    Regex(String),
    #[error(
        "the regex needs exactly one capture group, or named groups (?P<name>…) for several \
         metrics; it has {0} unnamed groups"
    )]
    Groups(usize),
    #[error("invalid JSON pointer '{0}': it must be empty or start with '/' (e.g. /jobs/0/write/bw_bytes)")]
    Pointer(String),
    #[error(transparent)]
    Unit(#[from] UnknownUnit),
}

/// What every metric of an extractor shares.
#[derive(Debug, Clone, Copy)]
struct Annotation {
    scale: UnitScale,
    better: Better,
    mean: MeanKind,
}

/// A regex extractor: every match of the pattern in the output is one result.
#[derive(Debug, Clone)]
pub struct RegexExtractor {
    /// The pattern as the experiment wrote it, for the hint of a search that found nothing.
    pattern: String,
    regex: Regex,
    /// The metric of each capture group, by group index.
    metrics: Vec<(usize, String)>,
    annotation: Annotation,
}

/// A JSON extractor: the value at a JSON pointer in the first JSON object of stdout.
#[derive(Debug, Clone)]
pub struct JsonExtractor {
    name: String,
    pointer: String,
    annotation: Annotation,
}

/// Compiles an extractor's pattern the way a person reads output: line by line. `^` and
/// `$` match at the start and end of every line (multi-line mode; `(?-m)` in the pattern
/// turns it off), and a line may end in `\r\n` as well as `\n` (CRLF mode, so `$` matches
/// before the `\r` of a Windows line ending, and `.` matches neither `\r` nor `\n`).
fn compile(pattern: &str) -> Result<Regex, regex::Error> {
    RegexBuilder::new(pattern).multi_line(true).crlf(true).build()
}

/// Builds a regex extractor. With one unnamed capture group, its value is the metric
/// `name`; with named groups, each group is a metric of its own name (`name` unused).
/// `unit` is the unit the captured numbers are printed in (`kB/s`, `ms`…); values are
/// converted to its canonical unit. The pattern is compiled by [`compile`]: `^` and `$`
/// match at every line.
pub fn regex(
    name: &str,
    pattern: &str,
    unit: &str,
    better: Better,
    mean: MeanKind,
) -> Result<RegexExtractor, ExtractorError> {
    let regex = compile(pattern).map_err(|e| ExtractorError::Regex(e.to_string()))?;
    let named: Vec<(usize, String)> =
        regex.capture_names().enumerate().filter_map(|(i, group)| group.map(|g| (i, g.to_owned()))).collect();
    let metrics = if named.is_empty() {
        let groups = regex.captures_len() - 1;
        if groups != 1 {
            return Err(ExtractorError::Groups(groups));
        }
        vec![(1, name.to_owned())]
    } else {
        named
    };
    let annotation = Annotation { scale: parse_unit(unit)?, better, mean };
    Ok(RegexExtractor { pattern: pattern.to_owned(), regex, metrics, annotation })
}

/// Builds a JSON extractor for the metric `name` at `pointer` (RFC 6901, as
/// `serde_json::Value::pointer` reads it). A number, or a string holding one, is one
/// result; an array of them is one result per element (hyperfine's `times`).
pub fn json(
    name: &str,
    pointer: &str,
    unit: &str,
    better: Better,
    mean: MeanKind,
) -> Result<JsonExtractor, ExtractorError> {
    if !(pointer.is_empty() || pointer.starts_with('/')) {
        return Err(ExtractorError::Pointer(pointer.to_owned()));
    }
    let annotation = Annotation { scale: parse_unit(unit)?, better, mean };
    Ok(JsonExtractor { name: name.to_owned(), pointer: pointer.to_owned(), annotation })
}

impl Annotation {
    fn push(&self, sample: &mut Sample, name: &str, value: f64) {
        let value = self.scale.to_canonical(value);
        sample.push_with(name, value, self.scale.unit, self.better, self.mean);
    }
}

impl Parser for RegexExtractor {
    fn name(&self) -> &'static str {
        "regex"
    }

    /// Searches stdout, then stderr.
    fn parse(&self, stdout: &str, stderr: &str) -> Result<Parsed, ParseError> {
        let text = both_streams(stdout, stderr);
        let mut parsed = Parsed::default();
        for captures in self.regex.captures_iter(&text) {
            let mut sample = Sample::default();
            for (group, name) in &self.metrics {
                // A named group in an alternative that did not match is simply absent.
                let Some(matched) = captures.get(*group) else {
                    continue;
                };
                let Some(value) = number(matched.as_str()) else {
                    return Err(ParseError::Malformed {
                        parser: "regex",
                        detail: format!(
                            "the group for metric '{name}' captured '{}', which is not a number",
                            matched.as_str()
                        ),
                    });
                };
                self.annotation.push(&mut sample, name, value);
            }
            if !sample.is_empty() {
                parsed.samples.push(sample);
            }
        }
        if parsed.samples.is_empty() {
            let mut error = nothing_found("regex", "match of the metric's regex", stdout, stderr);
            // A match whose groups all stayed out (alternatives) is not "matched nowhere".
            if !self.regex.is_match(&text)
                && let Some(hint) = where_it_stops(&self.pattern, stdout, stderr, &text)
                && let ParseError::NothingFound { excerpt, .. } = &mut error
            {
                excerpt.push('\n');
                excerpt.push_str(&hint);
            }
            return Err(error);
        }
        Ok(parsed)
    }
}

/// Which part of a pattern that matches nowhere in `text` (`stdout` and `stderr` joined by
/// [`both_streams`]) is the one that matches nowhere, when that can be told: the longest
/// prefix of the pattern, cut between the items of its top-level concatenation, that still
/// matches, where (a stream and line where it does), and the item after it that nothing
/// there is followed by.
///
/// What it says is checked, not guessed: the prefix was searched for and found, and the
/// prefix with the next item was searched for and not found, so nowhere the prefix matches
/// is it followed by that item. `None` when the pattern is no concatenation (an
/// alternation at the top, one group), or when a prefix cannot be searched for.
fn where_it_stops(pattern: &str, stdout: &str, stderr: &str, text: &str) -> Option<String> {
    let parsed = ast::parse::Parser::new().parse(pattern).ok()?;
    let Ast::Concat(concat) = &parsed else {
        return None;
    };
    let items = &concat.asts;
    // In empty output nothing matches, and the error already says it is empty.
    if items.len() < 2 || text.is_empty() {
        return None;
    }
    let end = |i: usize| items[i].span().end.offset;
    // prefix(j), j ≥ 1: the first j items. The whole pattern (j = n) matches nowhere.
    let prefix = |j: usize| &pattern[..end(j - 1)];
    let mut found = None;
    for j in (1..items.len()).rev() {
        let regex = compile(prefix(j)).ok()?;
        if regex.is_match(text) {
            found = Some((j, regex));
            break;
        }
    }
    // Every prefix of more items than the one found was searched for and matches nowhere;
    // the part that stops it is the next item, with the literal characters after it (a
    // word is one part, not one character and the rest).
    let stops_at = found.as_ref().map_or(0, |(j, _)| *j);
    let mut upto = stops_at + 1;
    if matches!(items[stops_at], Ast::Literal(_)) {
        while upto < items.len() && matches!(items[upto], Ast::Literal(_)) {
            upto += 1;
        }
    }
    let part = &pattern[items[stops_at].span().start.offset..end(upto - 1)];
    // Where the prefix matches something: a prefix that matches only empty text (`^`,
    // `\s*` before a letter) says nothing of where to look.
    let shown =
        found.and_then(|(j, regex)| regex.find_iter(text).find(|m| !m.is_empty()).map(|m| (j, m.start())));
    match shown {
        Some((j, at)) => Some(format!(
            "`{}` matches ({}), but nothing follows it that matches `{part}`",
            prefix(j),
            line_at(stdout, stderr, at)
        )),
        // Nothing more to say than the error does when the failing prefix is the pattern.
        None if upto < items.len() => Some(format!("`{}` matches nowhere in the output", prefix(upto))),
        None => None,
    }
}

/// The stream and line number of byte `at` of [`both_streams`]`(stdout, stderr)`, and the
/// line itself (without a `\r` ending it).
fn line_at(stdout: &str, stderr: &str, at: usize) -> String {
    let joined = stdout.len() + usize::from(!stdout.is_empty() && !stdout.ends_with('\n'));
    let (stream, text, at) =
        if at < joined { ("stdout", stdout, at.min(stdout.len())) } else { ("stderr", stderr, at - joined) };
    let start = text[..at].rfind('\n').map_or(0, |i| i + 1);
    let line = text[start..].split('\n').next().unwrap_or("");
    let number = text[..start].matches('\n').count() + 1;
    format!("{stream} line {number}: `{}`", Truncated(line.trim_end_matches('\r')))
}

impl Parser for JsonExtractor {
    fn name(&self) -> &'static str {
        "json"
    }

    fn parse(&self, stdout: &str, stderr: &str) -> Result<Parsed, ParseError> {
        let Some(document) = json_document(stdout) else {
            return Err(nothing_found("json", "JSON object", stdout, stderr));
        };
        let Some(found) = document.pointer(&self.pointer) else {
            return Err(ParseError::Malformed {
                parser: "json",
                detail: format!("no value at '{}' for metric '{}'", self.pointer, self.name),
            });
        };
        let values: Vec<&serde_json::Value> = match found.as_array() {
            Some(items) => items.iter().collect(),
            None => vec![found],
        };
        let mut parsed = Parsed::default();
        for value in values {
            let number = value.as_f64().or_else(|| value.as_str().and_then(number));
            let Some(number) = number else {
                return Err(ParseError::Malformed {
                    parser: "json",
                    detail: format!(
                        "the value at '{}' for metric '{}' is {value}, not a number",
                        self.pointer, self.name
                    ),
                });
            };
            let mut sample = Sample::default();
            self.annotation.push(&mut sample, &self.name, number);
            if !sample.is_empty() {
                parsed.samples.push(sample);
            }
        }
        if parsed.samples.is_empty() {
            return Err(nothing_found("json", "number at the JSON pointer", stdout, stderr));
        }
        Ok(parsed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::testing::assert_metric;
    use vocab::Unit;

    const DD: &str = include_str!("../../tests/data/parse/dd-seed002.txt");

    #[test]
    fn one_group_is_the_named_metric_and_every_match_a_result() {
        let extractor =
            regex("rate", r"copied, [\d.]+ s, ([\d.]+) MB/s", "MB/s", Better::Higher, MeanKind::Harmonic)
                .unwrap();
        let parsed = extractor.parse(DD, "").unwrap();
        assert_eq!(parsed.samples.len(), 3);
        assert_metric(&parsed.samples[0], "rate", 66.4e6, Unit::BytesPerSecond);
        assert_metric(&parsed.samples[2], "rate", 502e6, Unit::BytesPerSecond);
        let metric = parsed.samples[0].get("rate").unwrap();
        assert_eq!((metric.better, metric.mean), (Better::Higher, MeanKind::Harmonic));
    }

    #[test]
    fn named_groups_are_several_metrics() {
        let extractor = regex(
            "ignored",
            r"(?P<bytes>\d+) bytes \([^)]*\) copied, (?P<seconds>[\d.]+) s",
            "",
            Better::Lower,
            MeanKind::Arithmetic,
        )
        .unwrap();
        let parsed = extractor.parse("", DD).unwrap();
        assert_metric(&parsed.samples[1], "bytes", 3221225472.0, Unit::Count);
        assert_metric(&parsed.samples[1], "seconds", 15.7325, Unit::Count);
        assert!(parsed.samples[1].get("ignored").is_none());
    }

    #[test]
    fn regex_declaration_errors() {
        let two = regex("x", r"(\d+) (\d+)", "s", Better::Lower, MeanKind::Arithmetic);
        assert_eq!(two.unwrap_err(), ExtractorError::Groups(2));
        let none = regex("x", r"\d+", "s", Better::Lower, MeanKind::Arithmetic);
        assert_eq!(none.unwrap_err(), ExtractorError::Groups(0));
        let bad = regex("x", r"(\d+", "s", Better::Lower, MeanKind::Arithmetic);
        assert!(matches!(bad, Err(ExtractorError::Regex(_))));
        let unit = regex("x", r"(\d+)", "parsecs", Better::Lower, MeanKind::Arithmetic);
        assert!(unit.unwrap_err().to_string().contains("'parsecs'"));
    }

    #[test]
    fn a_capture_that_is_not_a_number_is_an_error() {
        let extractor = regex("x", r"copied, (\S+)", "s", Better::Lower, MeanKind::Arithmetic).unwrap();
        let error = extractor.parse("1 byte copied, soon", "").unwrap_err();
        assert!(error.to_string().contains("captured 'soon'"), "{error}");
    }

    /// `openssl speed -seconds 1 sha256` (OpenSSL 3.0.19, Debian), captured verbatim: the
    /// table on stdout, the progress lines on stderr.
    const OPENSSL_STDOUT: &str = r#"version: 3.0.19
built on: Fri Apr  3 12:29:32 2026 UTC
options: bn(64,64)
compiler: gcc -fPIC -pthread -m64 -Wa,--noexecstack -Wall -fzero-call-used-regs=used-gpr -DOPENSSL_TLS_SECURITY_LEVEL=2 -Wa,--noexecstack -g -O2 -ffile-prefix-map=/build/reproducible-path/openssl-3.0.19=. -fstack-protector-strong -Wformat -Werror=format-security -DOPENSSL_USE_NODELETE -DL_ENDIAN -DOPENSSL_PIC -DOPENSSL_BUILDING_OPENSSL -DNDEBUG -Wdate-time -D_FORTIFY_SOURCE=2
CPUINFO: OPENSSL_ia32cap=0xfffa32034f8bffff:0x1b415fdef1bf27eb
The 'numbers' are in 1000s of bytes per second processed.
type             16 bytes     64 bytes    256 bytes   1024 bytes   8192 bytes  16384 bytes
sha256           73632.50k   252287.16k   653334.92k  1167315.96k  1350423.27k  1329606.61k
"#;
    const OPENSSL_STDERR: &str = r#"Doing sha256 for 1s on 16 size blocks: 3957747 sha256's in 0.86s
Doing sha256 for 1s on 64 size blocks: 3311269 sha256's in 0.84s
Doing sha256 for 1s on 256 size blocks: 2194797 sha256's in 0.86s
Doing sha256 for 1s on 1024 size blocks: 1060160 sha256's in 0.93s
Doing sha256 for 1s on 8192 size blocks: 145065 sha256's in 0.88s
Doing sha256 for 1s on 16384 size blocks: 73849 sha256's in 0.91s
"#;

    /// Line 8 of [`OPENSSL_STDOUT`], the table's one row.
    const ROW: &str =
        "sha256           73632.50k   252287.16k   653334.92k  1167315.96k  1350423.27k  1329606.61k";

    fn kb(pattern: &str) -> RegexExtractor {
        regex("sha256", pattern, "kB/s", Better::Higher, MeanKind::Arithmetic).unwrap()
    }

    fn message(extractor: &RegexExtractor, stdout: &str, stderr: &str) -> String {
        extractor.parse(stdout, stderr).unwrap_err().to_string()
    }

    /// The error's hint: what follows the quoted output.
    fn hint(message: &str) -> Option<&str> {
        message.lines().find(|l| !l.starts_with("  ") && !l.starts_with("regex: found no")).map(str::trim_end)
    }

    #[test]
    fn caret_and_dollar_match_at_every_line() {
        // The table's row starts a line in the middle of stdout: whole-output `^` missed it.
        let parsed = kb(r"^sha256\s+([\d.]+)k").parse(OPENSSL_STDOUT, OPENSSL_STDERR).unwrap();
        assert_eq!(parsed.samples.len(), 1);
        assert_metric(&parsed.samples[0], "sha256", 73632.50e3, Unit::BytesPerSecond);
        // `$`: the last column, the one before the end of the row's line.
        let parsed = kb(r"([\d.]+)k$").parse(OPENSSL_STDOUT, "").unwrap();
        assert_eq!(parsed.samples.len(), 1);
        assert_metric(&parsed.samples[0], "sha256", 1329606.61e3, Unit::BytesPerSecond);
        // One match per line of stderr, each line from `^` to `$`.
        let count = regex(
            "n",
            r"^Doing sha256 for 1s on \d+ size blocks: (\d+) sha256's in [\d.]+s$",
            "",
            Better::Higher,
            MeanKind::Arithmetic,
        )
        .unwrap();
        let parsed = count.parse(OPENSSL_STDOUT, OPENSSL_STDERR).unwrap();
        assert_eq!(parsed.samples.len(), 6);
        assert_metric(&parsed.samples[0], "n", 3957747.0, Unit::Count);
        assert_metric(&parsed.samples[5], "n", 73849.0, Unit::Count);
        // dd's summary line, anchored at both ends, in each of seed 002's three runs.
        let dd = regex(
            "rate",
            r"^\d+ bytes \(.*\) copied, [\d.]+ s, ([\d.]+) MB/s$",
            "MB/s",
            Better::Higher,
            MeanKind::Harmonic,
        )
        .unwrap();
        let parsed = dd.parse("", DD).unwrap();
        assert_eq!(parsed.samples.len(), 3);
        assert_metric(&parsed.samples[1], "rate", 205e6, Unit::BytesPerSecond);
    }

    #[test]
    fn without_multi_line_mode_caret_is_the_start_of_the_output() {
        // `(?-m)`: the whole output again, whose first line is openssl's version.
        let error = message(&kb(r"(?-m)^sha256\s+([\d.]+)k"), OPENSSL_STDOUT, OPENSSL_STDERR);
        assert!(error.starts_with("regex: found no match of the metric's regex"), "{error}");
        let parsed = kb(r"(?-m)^version: ([\d.]+)\.19").parse(OPENSSL_STDOUT, "").unwrap();
        assert_metric(&parsed.samples[0], "sha256", 3.0e3, Unit::BytesPerSecond);
        // And `$` is then the end of the output alone: the last stderr line's end.
        let last =
            regex("n", r"(?-m)(\d+) sha256's in [\d.]+s\n?$", "", Better::Higher, MeanKind::Arithmetic)
                .unwrap();
        let parsed = last.parse(OPENSSL_STDOUT, OPENSSL_STDERR).unwrap();
        assert_eq!(parsed.samples.len(), 1);
        assert_metric(&parsed.samples[0], "n", 73849.0, Unit::Count);
    }

    #[test]
    fn dollar_matches_before_a_crlf_line_ending() {
        let crlf = OPENSSL_STDOUT.replace('\n', "\r\n");
        let parsed = kb(r"^sha256\s+.*\s([\d.]+)k$").parse(&crlf, "").unwrap();
        assert_eq!(parsed.samples.len(), 1);
        assert_metric(&parsed.samples[0], "sha256", 1329606.61e3, Unit::BytesPerSecond);
        // `.` stops at the `\r`, so a greedy `.*` cannot swallow it and then miss `$`.
        let dd = DD.replace('\n', "\r\n");
        let rate = regex("rate", r"s, ([\d.]+) MB/s$", "MB/s", Better::Higher, MeanKind::Harmonic).unwrap();
        assert_eq!(rate.parse(&dd, "").unwrap().samples.len(), 3);
        let time = regex("t", r"^real 0m([\d.]+)s$", "s", Better::Lower, MeanKind::Arithmetic).unwrap();
        let parsed = time.parse(&dd, "").unwrap();
        assert_eq!(parsed.samples.len(), 3);
        assert_metric(&parsed.samples[2], "t", 6.422, Unit::Seconds);
    }

    #[test]
    fn the_error_says_where_the_pattern_stops_matching() {
        // openssl prints kilobytes with a `k`; a pattern expecting `kB` gets as far as `k`.
        let error = message(&kb(r"^sha256\s+([\d.]+)kB"), OPENSSL_STDOUT, OPENSSL_STDERR);
        assert!(error.starts_with("regex: found no match of the metric's regex in the output, which begins:\n  stdout| version: 3.0.19\n"), "{error}");
        assert_eq!(
            hint(&error),
            Some(format!(r"`^sha256\s+([\d.]+)k` matches (stdout line 8: `{ROW}`), but nothing follows it that matches `B`").as_str()),
            "{error}"
        );
        // A word the output does not hold is named whole, after the prefix that matched.
        let error = message(&kb(r"^sha512\s+([\d.]+)k"), OPENSSL_STDOUT, OPENSSL_STDERR);
        assert_eq!(
            hint(&error),
            Some(
                format!("`^sha` matches (stdout line 8: `{ROW}`), but nothing follows it that matches `512`")
                    .as_str()
            ),
            "{error}"
        );
        // `$` where the line goes on: the part that stops the match is the `$`.
        let error = message(&kb(r"^sha256\s+([\d.]+)k$"), OPENSSL_STDOUT, "");
        assert!(hint(&error).unwrap().ends_with(r"but nothing follows it that matches `$`"), "{error}");
        // On stderr, the line is counted in stderr.
        let blocks =
            regex("x", r"size blocks: (\d+) sha512", "", Better::Higher, MeanKind::Arithmetic).unwrap();
        let error = message(&blocks, OPENSSL_STDOUT, OPENSSL_STDERR);
        assert_eq!(
            hint(&error),
            Some(
                r"`size blocks: (\d+) sha` matches (stderr line 1: `Doing sha256 for 1s on 16 size blocks: 3957747 sha256's in 0.86s`), but nothing follows it that matches `512`"
            ),
            "{error}"
        );
        // A prefix that matches only empty text (`^`) names the start that fails.
        let error = message(&kb(r"^real\s+([\d.]+)"), OPENSSL_STDOUT, OPENSSL_STDERR);
        assert_eq!(hint(&error), Some("`^real` matches nowhere in the output"), "{error}");
        // dd's "copied" is in the middle of its line, never at a start.
        let gbs =
            regex("rate", r"^copied, ([\d.]+) GB/s", "GB/s", Better::Higher, MeanKind::Harmonic).unwrap();
        let error = message(&gbs, DD, "");
        assert_eq!(hint(&error), Some("`^copied, ` matches nowhere in the output"), "{error}");
        // With CRLF line endings, on stderr: the same, and a line is quoted without its `\r`.
        let crlf = DD.replace('\n', "\r\n");
        let error = message(&gbs, "", &crlf);
        assert_eq!(hint(&error), Some("`^copied, ` matches nowhere in the output"), "{error}");
        let error = message(
            &regex("rate", r"copied, [\d.]+ s, ([\d.]+) GB/s", "", Better::Higher, MeanKind::Harmonic)
                .unwrap(),
            "",
            &crlf,
        );
        assert_eq!(
            hint(&error),
            Some(
                r"`copied, [\d.]+ s, ([\d.]+) ` matches (stderr line 4: `3221225472 bytes (3.2 GB) copied, 48.4788 s, 66.4 MB/s`), but nothing follows it that matches `GB/s`"
            ),
            "{error}"
        );
    }

    #[test]
    fn no_hint_when_it_cannot_be_told() {
        // Only empty text matches before the part that fails, and that part runs to the
        // end: "the pattern matches nowhere" is what the error already says.
        let none = regex("x", r"^(\s*)zzz", "", Better::Higher, MeanKind::Arithmetic).unwrap();
        let error = message(&none, "", DD);
        assert_eq!(hint(&error), None, "{error}");
        // Empty output: the error says so, and no part of any pattern matches there.
        let error = message(&kb(r"^sha256\s+([\d.]+)k"), "", "");
        assert!(error.ends_with("(stdout and stderr are empty)"), "{error}");
        // An alternation at the top: which branch the user meant cannot be told.
        let either = regex("x", r"sha512 (\d+)|md5 (\d+)", "", Better::Higher, MeanKind::Arithmetic);
        assert!(either.is_err(), "two unnamed groups");
        let either =
            regex("x", r"sha512 (?P<a>\d+)|md5 (?P<b>\d+)", "", Better::Higher, MeanKind::Arithmetic)
                .unwrap();
        let error = message(&either, OPENSSL_STDOUT, OPENSSL_STDERR);
        assert_eq!(hint(&error), None, "{error}");
        // One group around everything: no top-level parts.
        let group = regex("x", r"(?:sha256\s+([\d.]+)kB)", "", Better::Higher, MeanKind::Arithmetic).unwrap();
        assert_eq!(hint(&message(&group, OPENSSL_STDOUT, "")), None);
        // The regex matches, but its named groups stayed out: no part "matches nowhere".
        let absent =
            regex("x", r"sha256(?:\s+(?P<n>z\d)|\s)", "", Better::Higher, MeanKind::Arithmetic).unwrap();
        let error = message(&absent, OPENSSL_STDOUT, "");
        assert_eq!(hint(&error), None, "{error}");
    }

    #[test]
    fn json_pointer_into_fio_output() {
        let fio = include_str!("../../tests/data/parse/fio-3.33.json");
        let extractor =
            json("write_bw", "/jobs/1/write/bw_bytes", "B/s", Better::Higher, MeanKind::Arithmetic).unwrap();
        let parsed = extractor.parse(fio, "").unwrap();
        assert_metric(&parsed.samples[0], "write_bw", 1398101333.0, Unit::BytesPerSecond);
        let latency = json(
            "p99",
            "/jobs/0/read/clat_ns/percentile/99.000000",
            "ns",
            Better::Lower,
            MeanKind::Arithmetic,
        )
        .unwrap();
        assert_metric(&latency.parse(fio, "").unwrap().samples[0], "p99", 3056e-9, Unit::Seconds);
    }

    #[test]
    fn json_array_is_one_result_per_element() {
        let hyperfine = include_str!("../../tests/data/parse/hyperfine-1.15.0.json");
        let extractor = json("t", "/results/0/times", "s", Better::Lower, MeanKind::Arithmetic).unwrap();
        let parsed = extractor.parse(hyperfine, "").unwrap();
        assert_eq!(parsed.samples.len(), 5);
        assert_metric(&parsed.samples[1], "t", 0.012659709040000003, Unit::Seconds);
    }

    #[test]
    fn json_declaration_and_lookup_errors() {
        let error = json("x", "jobs/0", "s", Better::Lower, MeanKind::Arithmetic).unwrap_err();
        assert_eq!(error, ExtractorError::Pointer("jobs/0".to_owned()));
        let extractor = json("x", "/missing", "s", Better::Lower, MeanKind::Arithmetic).unwrap();
        let error = extractor.parse(r#"{"present": 1}"#, "").unwrap_err();
        assert!(error.to_string().contains("no value at '/missing'"), "{error}");
        let extractor = json("x", "/name", "s", Better::Lower, MeanKind::Arithmetic).unwrap();
        let error = extractor.parse(r#"{"name": "fio"}"#, "").unwrap_err();
        assert!(error.to_string().contains("not a number"), "{error}");
        let numeric_string = json("x", "/v", "ms", Better::Lower, MeanKind::Arithmetic).unwrap();
        assert_metric(
            &numeric_string.parse(r#"{"v": "2.5"}"#, "").unwrap().samples[0],
            "x",
            2.5e-3,
            Unit::Seconds,
        );
    }
}
