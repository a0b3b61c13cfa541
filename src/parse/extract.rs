//! Extractors an experiment declares itself: a regex with capture groups, or a JSON pointer.

use regex::Regex;

use super::{
    Better, MeanKind, ParseError, Parsed, Parser, Sample, Scale, UnknownUnit, both_streams, json_document,
    nothing_found, number, parse_unit,
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
    scale: Scale,
    better: Better,
    mean: MeanKind,
}

/// A regex extractor: every match of the pattern in the output is one result.
#[derive(Debug, Clone)]
pub struct RegexExtractor {
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

/// Builds a regex extractor. With one unnamed capture group, its value is the metric
/// `name`; with named groups, each group is a metric of its own name (`name` unused).
/// `unit` is the unit the captured numbers are printed in (`kB/s`, `ms`…); values are
/// converted to its canonical unit.
pub fn regex(
    name: &str,
    pattern: &str,
    unit: &str,
    better: Better,
    mean: MeanKind,
) -> Result<RegexExtractor, ExtractorError> {
    let regex = Regex::new(pattern).map_err(|e| ExtractorError::Regex(e.to_string()))?;
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
    Ok(RegexExtractor { regex, metrics, annotation })
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
            return Err(nothing_found("regex", "match of the metric's regex", stdout, stderr));
        }
        Ok(parsed)
    }
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
    use crate::parse::Unit;
    use crate::parse::testing::assert_metric;

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
