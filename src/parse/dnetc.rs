//! dnetc: the per-core benchmarks of `dnetc -bench` (distributed.net client).

use std::sync::LazyLock;

use regex::Regex;

use super::{Better, ParseError, Parsed, Parser, Sample, Unit, both_streams, nothing_found, number, snake};

pub(super) struct Dnetc;

/// `RC5-72: Benchmark for core #0 (SNJL 3-pipe)`, sometimes after a `[date]` stamp.
static BENCHMARK: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"([A-Z][A-Z0-9-]*): Benchmark for core #(\d+)").unwrap());
/// The elapsed time as `days.hh:mm:ss.cc` (`0.00:00:16.60`), then in newer clients the
/// rate: `0.00:00:16.02 [10,617,133 keys/sec]` or `- [234.56 Kkeys/s]`.
static RESULT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(\d+)\.(\d\d):(\d\d):(\d\d(?:\.\d+)?)(?:\s*-?\s*\[\s*([0-9][0-9,]*(?:\.\d+)?)\s*([kKMG]?)(keys|nodes)/s(?:ec)?\s*\])?",
    )
    .unwrap()
});

impl Parser for Dnetc {
    fn name(&self) -> &'static str {
        "dnetc"
    }

    /// One benchmark run is one result, holding every core it timed (the cores are
    /// different code on the same work, not repetitions): `<contest>.core<n>.time` (s)
    /// and, when printed, `<contest>.core<n>.rate` (keys or nodes per second), e.g.
    /// `rc5_72.core0.time`, `ogr_p2.core0.rate`. An output holding a single benchmark
    /// (`dnetc -bench RC5-72 -core 3`, one core per trial) also gives plain `time` and
    /// `rate`, so that cells of different cores share a metric and can be paired.
    fn parse(&self, stdout: &str, stderr: &str) -> Result<Parsed, ParseError> {
        let text = both_streams(stdout, stderr);
        let mut sample = Sample::default();
        let mut current: Option<String> = None;
        for line in text.lines() {
            let rest = match BENCHMARK.captures(line) {
                Some(c) => {
                    current = Some(format!("{}.core{}", snake(&c[1]), &c[2]));
                    // Whatever follows the core's name may already be the result.
                    line.get(c.get(0).map_or(0, |m| m.end())..).unwrap_or("")
                }
                None => line,
            };
            let Some(prefix) = current.as_deref() else {
                continue;
            };
            let Some(c) = RESULT.captures(rest) else {
                continue;
            };
            let parts = [&c[1], &c[2], &c[3], &c[4]].map(number);
            let [Some(days), Some(hours), Some(minutes), Some(seconds)] = parts else {
                continue;
            };
            let time = ((days * 24.0 + hours) * 60.0 + minutes) * 60.0 + seconds;
            sample.push(format!("{prefix}.time"), time, Unit::Seconds, Better::Lower);
            if let (Some(rate), Some(prefix_letter)) = (c.get(5), c.get(6)) {
                let scale = match prefix_letter.as_str() {
                    "k" | "K" => 1e3,
                    "M" => 1e6,
                    "G" => 1e9,
                    _ => 1.0,
                };
                if let Some(rate) = number(&rate.as_str().replace(',', "")) {
                    sample.push(format!("{prefix}.rate"), rate * scale, Unit::OpsPerSecond, Better::Higher);
                }
            }
            current = None;
        }
        if sample.is_empty() {
            return Err(nothing_found("dnetc", "dnetc -bench core result", stdout, stderr));
        }
        let benchmarks = sample.metrics.iter().filter(|m| m.name.ends_with(".time")).count();
        if benchmarks == 1 {
            let plain: Vec<_> = sample
                .metrics
                .iter()
                .filter_map(|m| m.name.rsplit_once('.').map(|(_, last)| (last.to_string(), m.clone())))
                .collect();
            for (name, mut m) in plain {
                m.name = name;
                sample.metrics.push(m);
            }
        }
        Ok(Parsed { samples: vec![sample], ..Parsed::default() })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::testing::{assert_metric, names};

    #[test]
    fn a_single_benchmark_also_gives_plain_names() {
        let out = "RC5-72: Benchmark for core #3 (ANSI 2-pipe)\n                      0.00:00:16.38\n";
        let p = Dnetc.parse(out, "").unwrap();
        let s = &p.samples[0];
        assert_eq!(names(s), ["rc5_72.core3.time", "time"]);
        assert_metric(s, "time", 16.38, Unit::Seconds);
    }

    /// Seed 000 posted a diff of two runs: `-` lines are the bare kernel's output, `+`
    /// lines the xen kernel's, the rest is common to both.
    fn side(diff: &str, marker: char) -> String {
        let other = if marker == '-' { '+' } else { '-' };
        diff.lines()
            .filter(|l| !l.starts_with(other))
            .map(|l| l.strip_prefix(marker).unwrap_or(l))
            .collect::<Vec<_>>()
            .join("\n")
    }

    #[test]
    fn seed_000_per_core_times() {
        let diff = include_str!("../../tests/data/parse/dnetc-2.9011-seed000.diff");
        let bare = &Dnetc.parse(&side(diff, '-'), "").unwrap().samples[0];
        assert_eq!(
            names(bare),
            [
                "rc5_72.core0.time",
                "rc5_72.core1.time",
                "rc5_72.core2.time",
                "rc5_72.core3.time",
                "rc5_72.core4.time",
                "ogr_p2.core0.time"
            ]
        );
        assert_metric(bare, "rc5_72.core0.time", 16.60, Unit::Seconds);
        assert_metric(bare, "rc5_72.core4.time", 16.58, Unit::Seconds);
        assert_metric(bare, "ogr_p2.core0.time", 16.51, Unit::Seconds);
        let xen = &Dnetc.parse(&side(diff, '+'), "").unwrap().samples[0];
        assert_metric(xen, "rc5_72.core3.time", 17.52, Unit::Seconds);
        assert_metric(xen, "ogr_p2.core0.time", 16.42, Unit::Seconds);
    }

    #[test]
    fn rates_and_long_times() {
        let text = "[Mar 04 21:01:38 UTC] RC5-72: Benchmark for core #1 (KBE-64 3-pipe)\n\
                    \x20                     0.00:00:16.02 [10,617,133 keys/sec]\n\
                    OGR-NG: Benchmark for core #0 (FLEGE 2.0) 1.02:03:04.50 - [234.56 Knodes/s]\n";
        let sample = &Dnetc.parse(text, "").unwrap().samples[0];
        assert_metric(sample, "rc5_72.core1.time", 16.02, Unit::Seconds);
        assert_metric(sample, "rc5_72.core1.rate", 10617133.0, Unit::OpsPerSecond);
        assert_metric(sample, "ogr_ng.core0.time", 93784.5, Unit::Seconds);
        assert_metric(sample, "ogr_ng.core0.rate", 234560.0, Unit::OpsPerSecond);
    }

    #[test]
    fn a_time_without_a_benchmark_heading_is_not_a_result() {
        assert!(Dnetc.parse("[Mar 04] 0.00:00:16.02 - [10 keys/sec]", "").is_err());
    }
}
