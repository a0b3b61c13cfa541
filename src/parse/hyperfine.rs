//! hyperfine: the file written by `--export-json`, one result per timed run.

use serde_json::Value;

use super::{Better, ParseError, Parsed, Parser, Sample, Unit, json_document, nothing_found};

pub(super) struct Hyperfine;

impl Parser for Hyperfine {
    fn name(&self) -> &'static str {
        "hyperfine"
    }

    /// Every entry of `results[i].times` is one result with the metric `time` (s),
    /// labelled with the benchmarked command, so that importing the file turns each of
    /// hyperfine's runs into a trial. hyperfine keeps user and system time only as means,
    /// so they are not per-run metrics. A run whose exit code is not 0 (kept by
    /// `--ignore-failure`) is left out, with a warning.
    fn parse(&self, stdout: &str, stderr: &str) -> Result<Parsed, ParseError> {
        let results = json_document(stdout)
            .and_then(|document| document.get("results").and_then(Value::as_array).cloned());
        let Some(results) = results else {
            return Err(nothing_found("hyperfine", "hyperfine --export-json results", stdout, stderr));
        };
        let mut parsed = Parsed::default();
        for result in &results {
            let command = result.get("command").and_then(Value::as_str).unwrap_or("?");
            let Some(times) = result.get("times").and_then(Value::as_array) else {
                continue;
            };
            let exit_codes = result.get("exit_codes").and_then(Value::as_array);
            for (run, time) in times.iter().enumerate() {
                let exit_code = exit_codes.and_then(|codes| codes.get(run)).and_then(Value::as_i64);
                if let Some(code) = exit_code.filter(|&c| c != 0) {
                    parsed.warnings.push(format!(
                        "hyperfine: run {} of '{command}' exited with {code}; left out",
                        run + 1
                    ));
                    continue;
                }
                let Some(seconds) = time.as_f64() else {
                    continue;
                };
                let mut sample = Sample::labelled(command);
                sample.push("time", seconds, Unit::Seconds, Better::Lower);
                if !sample.is_empty() {
                    parsed.samples.push(sample);
                }
            }
        }
        if parsed.samples.is_empty() {
            return Err(nothing_found("hyperfine", "a successful hyperfine run", stdout, stderr));
        }
        Ok(parsed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::testing::assert_metric;

    #[test]
    fn every_run_of_every_command_is_a_result() {
        let text = include_str!("../../tests/data/parse/hyperfine-1.15.0.json");
        let parsed = Hyperfine.parse(text, "").unwrap();
        assert!(parsed.warnings.is_empty());
        assert_eq!(parsed.samples.len(), 10);
        let first = &parsed.samples[0];
        assert_eq!(first.label.as_deref(), Some("sleep 0.01"));
        assert_metric(first, "time", 0.010438990040000002, Unit::Seconds);
        assert_metric(&parsed.samples[4], "time", 0.012787283040000002, Unit::Seconds);
        let dd = &parsed.samples[5];
        assert_eq!(dd.label.as_deref(), Some("dd if=/dev/zero of=/dev/null bs=1M count=64"));
        assert_metric(dd, "time", 0.0038790050400000016, Unit::Seconds);
    }

    #[test]
    fn failed_runs_are_left_out_with_a_warning() {
        let text = r#"{"results": [{"command": "false", "times": [0.5, 0.25],
            "exit_codes": [1, 0]}]}"#;
        let parsed = Hyperfine.parse(text, "").unwrap();
        assert_eq!(parsed.samples.len(), 1);
        assert_metric(&parsed.samples[0], "time", 0.25, Unit::Seconds);
        assert_eq!(parsed.warnings, ["hyperfine: run 1 of 'false' exited with 1; left out"]);
    }

    #[test]
    fn the_terminal_output_is_not_the_export() {
        let text = "Benchmark 1: sleep 0.01\n  Time (mean ± σ):      12.3 ms ±   1.0 ms\n";
        assert!(Hyperfine.parse(text, "").is_err());
    }
}
