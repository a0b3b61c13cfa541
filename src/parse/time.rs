//! time: `/usr/bin/time -v` (GNU), GNU time's default line, and the shell's `time`.

use std::sync::LazyLock;

use regex::Regex;

use super::{Better, ParseError, Parsed, Parser, Sample, Unit, both_streams, nothing_found, number};

pub(super) struct Time;

/// `\tMaximum resident set size (kbytes): 2788`, one statistic a line.
static VERBOSE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^\s*([A-Z][^:]*?(?:\([^)]*\))?):\s+(\S+)\s*$").unwrap());
/// `0.00user 0.00system 0:00.01elapsed 41%CPU (0avgtext+0avgdata 2788maxresident)k`
static DEFAULT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"([0-9.]+)user\s+([0-9.]+)system\s+([0-9:.]+)elapsed\s+(\d+)%CPU(?:\s+\(\d+avgtext\+\d+avgdata\s+(\d+)maxresident\)k)?",
    )
    .unwrap()
});
/// bash `real\t0m48.531s`, POSIX `time -p` `real 48.53`.
static SHELL: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^\s*(real|user|sys)\s+(?:(\d+)m)?([0-9.]+)s?\s*$").unwrap());

impl Parser for Time {
    fn name(&self) -> &'static str {
        "time"
    }

    /// Metrics `wall`, `user`, `system` (s) from every format; from GNU time also
    /// `cpu_percent`, `max_rss` (bytes), and with `-v` `major_faults`, `minor_faults`,
    /// `voluntary_switches`, `involuntary_switches`, `fs_inputs`, `fs_outputs`.
    /// A metric seen a second time starts a new result, so a log of several timed runs
    /// gives one result each.
    fn parse(&self, stdout: &str, stderr: &str) -> Result<Parsed, ParseError> {
        let text = both_streams(stdout, stderr);
        let mut parsed = Parsed::default();
        let mut sample = Sample::default();
        let mut add = |sample: &mut Sample, name: &str, value: Option<f64>, unit: Unit| {
            let Some(value) = value else { return };
            if sample.get(name).is_some() {
                parsed.samples.push(std::mem::take(sample));
            }
            sample.push(name, value, unit, Better::Lower);
        };
        for line in text.lines() {
            if let Some(c) = DEFAULT.captures(line) {
                add(&mut sample, "user", number(&c[1]), Unit::Seconds);
                add(&mut sample, "system", number(&c[2]), Unit::Seconds);
                add(&mut sample, "wall", clock(&c[3]), Unit::Seconds);
                add(&mut sample, "cpu_percent", number(&c[4]), Unit::Percent);
                let rss = c.get(5).and_then(|m| number(m.as_str())).map(|kib| kib * 1024.0);
                add(&mut sample, "max_rss", rss, Unit::Bytes);
            } else if let Some(c) = SHELL.captures(line) {
                let minutes = c.get(2).map_or(Some(0.0), |m| number(m.as_str()));
                let seconds = minutes.zip(number(&c[3])).map(|(m, s)| m * 60.0 + s);
                let name = match &c[1] {
                    "real" => "wall",
                    "user" => "user",
                    _ => "system",
                };
                add(&mut sample, name, seconds, Unit::Seconds);
            } else if let Some(c) = VERBOSE.captures(line) {
                let value = &c[2];
                let (name, value, unit) = match &c[1] {
                    "Elapsed (wall clock) time (h:mm:ss or m:ss)" => ("wall", clock(value), Unit::Seconds),
                    "User time (seconds)" => ("user", number(value), Unit::Seconds),
                    "System time (seconds)" => ("system", number(value), Unit::Seconds),
                    "Percent of CPU this job got" => {
                        ("cpu_percent", value.strip_suffix('%').and_then(number), Unit::Percent)
                    }
                    "Maximum resident set size (kbytes)" => {
                        ("max_rss", number(value).map(|kib| kib * 1024.0), Unit::Bytes)
                    }
                    "Major (requiring I/O) page faults" => ("major_faults", number(value), Unit::Count),
                    "Minor (reclaiming a frame) page faults" => ("minor_faults", number(value), Unit::Count),
                    "Voluntary context switches" => ("voluntary_switches", number(value), Unit::Count),
                    "Involuntary context switches" => ("involuntary_switches", number(value), Unit::Count),
                    "File system inputs" => ("fs_inputs", number(value), Unit::Count),
                    "File system outputs" => ("fs_outputs", number(value), Unit::Count),
                    _ => continue,
                };
                add(&mut sample, name, value, unit);
            }
        }
        if !sample.is_empty() {
            parsed.samples.push(sample);
        }
        // Only user or system time without the wall clock is a stray "user 5" line.
        parsed.samples.retain(|s| s.get("wall").is_some());
        if parsed.samples.is_empty() {
            return Err(nothing_found("time", "time report (wall clock time)", stdout, stderr));
        }
        Ok(parsed)
    }
}

/// `h:mm:ss`, `m:ss.cc` or plain seconds.
fn clock(text: &str) -> Option<f64> {
    text.split(':').try_fold(0.0, |total, part| Some(total * 60.0 + number(part)?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::testing::{assert_metric, names};

    #[test]
    fn gnu_time_verbose_after_dd_on_stderr() {
        let stderr = include_str!("../../tests/data/parse/time-1.9-dd.txt");
        let parsed = Time.parse("", stderr).unwrap();
        let [sample] = parsed.samples.as_slice() else { panic!("{parsed:?}") };
        assert_metric(sample, "wall", 0.01, Unit::Seconds);
        assert_metric(sample, "user", 0.0, Unit::Seconds);
        assert_metric(sample, "system", 0.0, Unit::Seconds);
        assert_metric(sample, "cpu_percent", 41.0, Unit::Percent);
        assert_metric(sample, "max_rss", 2768.0 * 1024.0, Unit::Bytes);
        assert_metric(sample, "minor_faults", 362.0, Unit::Count);
        assert_metric(sample, "fs_outputs", 32776.0, Unit::Count);
        assert_eq!(names(sample).len(), 11);
        // dd's own summary on the same stream is dd's business.
        assert!(sample.get("bytes").is_none());
    }

    #[test]
    fn shell_time_of_seed_002_gives_one_result_per_run() {
        let parsed = Time.parse(include_str!("../../tests/data/parse/dd-seed002.txt"), "").unwrap();
        assert_eq!(parsed.samples.len(), 3);
        assert_metric(&parsed.samples[0], "wall", 48.531, Unit::Seconds);
        assert_metric(&parsed.samples[0], "user", 1.940, Unit::Seconds);
        assert_metric(&parsed.samples[0], "system", 12.745, Unit::Seconds);
        assert_metric(&parsed.samples[2], "wall", 6.422, Unit::Seconds);
    }

    #[test]
    fn gnu_default_and_posix_formats() {
        let line = "0.52user 0.10system 1:02:03.50elapsed 99%CPU (0avgtext+0avgdata 2788maxresident)k\n\
                    0inputs+32776outputs (0major+360minor)pagefaults 0swaps\n";
        let sample = &Time.parse("", line).unwrap().samples[0];
        assert_metric(sample, "wall", 3723.5, Unit::Seconds);
        assert_metric(sample, "user", 0.52, Unit::Seconds);
        assert_metric(sample, "max_rss", 2788.0 * 1024.0, Unit::Bytes);
        let posix = Time.parse("", "real 48.53\nuser 1.94\nsys 12.74\n").unwrap();
        assert_metric(&posix.samples[0], "wall", 48.53, Unit::Seconds);
        assert_metric(&posix.samples[0], "system", 12.74, Unit::Seconds);
    }

    #[test]
    fn clock_formats() {
        assert_eq!(clock("0:00.02"), Some(0.02));
        assert_eq!(clock("1:02:03"), Some(3723.0));
        assert_eq!(clock("12.5"), Some(12.5));
        assert_eq!(clock("1::2"), None);
    }

    #[test]
    fn without_a_wall_clock_time_nothing_is_found() {
        assert!(Time.parse("user 5\n", "").is_err());
    }
}
