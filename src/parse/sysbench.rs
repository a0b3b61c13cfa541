//! sysbench 1.0: the cpu, fileio and memory tests and the latency block they share.

use std::sync::LazyLock;

use regex::Regex;

use super::{Better, ParseError, Parsed, Parser, Sample, Unit, nothing_found, number, parse_unit};

pub(super) struct Sysbench;

/// `    reads/s:                      48009.42` and the other "label: number" lines.
static FIELD: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"^\s*([^:]+?):\s+([0-9.]+)(s?)\s*$").unwrap());
/// `Latency (ms):` opens the latency block; the unit is in the heading.
static LATENCY: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"^Latency \((\w+)\):").unwrap());
/// `Total operations: 16051210 (8018958.51 per second)` (memory).
static OPERATIONS: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^Total operations: (\d+) \(([0-9.]+) per second\)").unwrap());
/// `15675.01 MiB transferred (7831.01 MiB/sec)` (memory).
static TRANSFERRED: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^([0-9.]+) (\w+) transferred \(([0-9.]+) (\w+/\w+)\)").unwrap());
/// `    95th percentile:` in the latency block (`--percentile` changes the number).
static PERCENTILE: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"^(\d+)th percentile$").unwrap());

impl Parser for Sysbench {
    fn name(&self) -> &'static str {
        "sysbench"
    }

    /// One run is one result, with the metrics its test prints:
    /// cpu `events_per_second`; fileio `reads_per_second`, `writes_per_second`,
    /// `fsyncs_per_second`, `read_throughput`, `write_throughput` (bytes/s); memory
    /// `operations_per_second`, `throughput` (bytes/s), `transferred` (bytes); all
    /// `total_time` (s), `events`, and `latency.min`, `.avg`, `.max`, `.p95`, `.sum` (s).
    fn parse(&self, stdout: &str, stderr: &str) -> Result<Parsed, ParseError> {
        let mut sample = Sample::default();
        let mut latency_unit: Option<f64> = None;
        for line in stdout.lines() {
            if line.trim().is_empty() {
                latency_unit = None;
                continue;
            }
            if let Some(c) = LATENCY.captures(line) {
                latency_unit = parse_unit(&c[1]).ok().filter(|s| s.unit == Unit::Seconds).map(|s| s.factor);
                continue;
            }
            if let Some(c) = OPERATIONS.captures(line) {
                if let Some(rate) = number(&c[2]) {
                    sample.push("operations_per_second", rate, Unit::OpsPerSecond, Better::Higher);
                }
                continue;
            }
            if let Some(c) = TRANSFERRED.captures(line) {
                let size = parse_unit(&c[2]).ok().filter(|s| s.unit == Unit::Bytes);
                let rate = parse_unit(&c[4]).ok().filter(|s| s.unit == Unit::BytesPerSecond);
                if let (Some(size), Some(rate), Some(amount), Some(speed)) =
                    (size, rate, number(&c[1]), number(&c[3]))
                {
                    sample.push("throughput", rate.to_canonical(speed), Unit::BytesPerSecond, Better::Higher);
                    sample.push("transferred", size.to_canonical(amount), Unit::Bytes, Better::Higher);
                }
                continue;
            }
            let Some(c) = FIELD.captures(line) else {
                continue;
            };
            let Some(value) = number(&c[2]) else { continue };
            let label = c[1].trim();
            if let Some(factor) = latency_unit {
                let statistic = match PERCENTILE.captures(label) {
                    Some(p) => format!("p{}", &p[1]),
                    None if matches!(label, "min" | "avg" | "max" | "sum") => label.to_owned(),
                    None => continue,
                };
                sample.push(format!("latency.{statistic}"), value * factor, Unit::Seconds, Better::Lower);
                continue;
            }
            match label {
                "events per second" => {
                    sample.push("events_per_second", value, Unit::OpsPerSecond, Better::Higher)
                }
                "reads/s" => sample.push("reads_per_second", value, Unit::OpsPerSecond, Better::Higher),
                "writes/s" => sample.push("writes_per_second", value, Unit::OpsPerSecond, Better::Higher),
                "fsyncs/s" => sample.push("fsyncs_per_second", value, Unit::OpsPerSecond, Better::Higher),
                "read, MiB/s" => {
                    sample.push("read_throughput", value * 1048576.0, Unit::BytesPerSecond, Better::Higher)
                }
                "written, MiB/s" => {
                    sample.push("write_throughput", value * 1048576.0, Unit::BytesPerSecond, Better::Higher)
                }
                // "total time:  2.0003s": the trailing "s" is the unit.
                "total time" if &c[3] == "s" => {
                    sample.push("total_time", value, Unit::Seconds, Better::Lower)
                }
                "total number of events" => sample.push("events", value, Unit::Count, Better::Higher),
                _ => {}
            }
        }
        if sample.is_empty() {
            return Err(nothing_found("sysbench", "sysbench 1.0 results", stdout, stderr));
        }
        Ok(Parsed { samples: vec![sample], ..Parsed::default() })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::testing::{assert_metric, names};

    fn parse(text: &str) -> Sample {
        Sysbench.parse(text, "").unwrap().samples.remove(0)
    }

    #[test]
    fn cpu() {
        let sample = parse(include_str!("../../tests/data/parse/sysbench-1.0.20-cpu.txt"));
        assert_metric(&sample, "events_per_second", 3316.13, Unit::OpsPerSecond);
        assert_metric(&sample, "total_time", 2.0003, Unit::Seconds);
        assert_metric(&sample, "events", 6643.0, Unit::Count);
        assert_metric(&sample, "latency.min", 0.28e-3, Unit::Seconds);
        assert_metric(&sample, "latency.avg", 0.30e-3, Unit::Seconds);
        assert_metric(&sample, "latency.max", 3.50e-3, Unit::Seconds);
        assert_metric(&sample, "latency.p95", 0.32e-3, Unit::Seconds);
        assert_metric(&sample, "latency.sum", 1997.21e-3, Unit::Seconds);
        // "events (avg/stddev): 6643.0000/0.00" of the fairness block is not a metric.
        assert_eq!(sample.metrics.len(), 8, "{:?}", names(&sample));
    }

    #[test]
    fn fileio() {
        let sample = parse(include_str!("../../tests/data/parse/sysbench-1.0.20-fileio.txt"));
        assert_metric(&sample, "reads_per_second", 48009.42, Unit::OpsPerSecond);
        assert_metric(&sample, "writes_per_second", 32006.28, Unit::OpsPerSecond);
        assert_metric(&sample, "fsyncs_per_second", 3201.63, Unit::OpsPerSecond);
        assert_metric(&sample, "read_throughput", 750.15 * 1048576.0, Unit::BytesPerSecond);
        assert_metric(&sample, "write_throughput", 500.10 * 1048576.0, Unit::BytesPerSecond);
        assert_metric(&sample, "events", 249807.0, Unit::Count);
        assert_metric(&sample, "latency.max", 3.88e-3, Unit::Seconds);
    }

    #[test]
    fn memory() {
        let sample = parse(include_str!("../../tests/data/parse/sysbench-1.0.20-memory.txt"));
        assert_metric(&sample, "operations_per_second", 8018958.51, Unit::OpsPerSecond);
        assert_metric(&sample, "throughput", 7831.01 * 1048576.0, Unit::BytesPerSecond);
        assert_metric(&sample, "transferred", 15675.01 * 1048576.0, Unit::Bytes);
        assert_metric(&sample, "latency.sum", 768.16e-3, Unit::Seconds);
        // The option lines ("block size: 1KiB") are not results.
        assert!(sample.get("block size").is_none());
    }

    #[test]
    fn other_percentiles() {
        let text = "Latency (ms):\n         min:  0.28\n         99th percentile:  0.41\n";
        assert_metric(&parse(text), "latency.p99", 0.41e-3, Unit::Seconds);
    }

    #[test]
    fn a_usage_error_is_quoted() {
        let error =
            Sysbench.parse("", "FATAL: Cannot find benchmark 'cpux': no such built-in test").unwrap_err();
        assert!(error.to_string().contains("Cannot find benchmark"), "{error}");
    }
}
