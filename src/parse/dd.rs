//! dd: the transfer summary of GNU coreutils dd (old and new spellings) and BSD dd.

use std::sync::LazyLock;

use regex::Regex;

use super::{Better, Parsed, Parser, Sample, Unit, both_streams, nothing_found, number, parse_unit};

pub(super) struct Dd;

/// `3145728+0 records in` / `1+1 records out`: full and partial records.
static RECORDS: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^(\d+)\+(\d+) records (in|out)\s*$").unwrap());

/// GNU: `3221225472 bytes (3.2 GB) copied, 48.4788 s, 66.4 MB/s` (coreutils < 8.24),
/// `17825792 bytes (18 MB, 17 MiB) copied, 0.1 s, 161 MB/s` (later),
/// `1 byte copied, 3.4e-05 s, 29.4 kB/s` (later, when there is nothing to abbreviate).
static GNU: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"^(\d+) bytes? (?:\([^)]*\) )?copied, ([0-9.e+-]+) s(?:econds)?, ([0-9.e+-]+) ([A-Za-z]+/s)\s*$",
    )
    .unwrap()
});

/// BSD: `3221225472 bytes transferred in 48.478800 secs (66445012 bytes/sec)`.
static BSD: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^(\d+) bytes transferred in ([0-9.]+) secs \((\d+) bytes/sec\)\s*$").unwrap()
});

/// Partial records in one summary: (records in, records out).
#[derive(Default)]
struct Records {
    full_in: Option<f64>,
    partial_in: Option<f64>,
    full_out: Option<f64>,
    partial_out: Option<f64>,
}

impl Parser for Dd {
    fn name(&self) -> &'static str {
        "dd"
    }

    /// Metrics: `throughput` (bytes/s, harmonic mean), `bytes`, `seconds`, and from the
    /// records lines `records_in`, `records_in_partial`, `records_out`,
    /// `records_out_partial`; partial records also give a warning.
    ///
    /// Every summary line is one result (a script may run dd several times). With
    /// `status=progress`, dd also prints progress lines shaped like the summary; they come
    /// before the records lines, so when records lines exist only the summary right after
    /// them counts.
    fn parse(&self, stdout: &str, stderr: &str) -> Result<Parsed, super::ParseError> {
        let text = both_streams(stdout, stderr);
        // Progress lines end in '\r', not '\n'.
        let lines: Vec<&str> = text.split(['\n', '\r']).map(str::trim).filter(|l| !l.is_empty()).collect();
        let any_records = lines.iter().any(|l| RECORDS.is_match(l));
        let mut parsed = Parsed::default();
        let mut records = Records::default();
        let mut after_records_out = false;
        for line in lines {
            if let Some(c) = RECORDS.captures(line) {
                let (full, partial) = (number(&c[1]), number(&c[2]));
                if &c[3] == "in" {
                    records = Records { full_in: full, partial_in: partial, ..Records::default() };
                } else {
                    records.full_out = full;
                    records.partial_out = partial;
                    after_records_out = true;
                }
                continue;
            }
            let Some(mut sample) = summary(line) else {
                continue;
            };
            if any_records && !after_records_out {
                continue;
            }
            after_records_out = false;
            add_records(&mut sample, &records, &mut parsed.warnings);
            records = Records::default();
            parsed.samples.push(sample);
        }
        if parsed.samples.is_empty() {
            return Err(nothing_found("dd", "dd transfer summary", stdout, stderr));
        }
        Ok(parsed)
    }
}

/// The metrics of one summary line. Throughput is recomputed as bytes ÷ seconds: dd
/// rounds the printed rate to three significant digits, the counts are exact.
fn summary(line: &str) -> Option<Sample> {
    let (bytes, seconds, printed_rate) = if let Some(c) = GNU.captures(line) {
        let scale = parse_unit(&c[4]).ok().filter(|s| s.unit == Unit::BytesPerSecond)?;
        (number(&c[1])?, number(&c[2])?, scale.to_canonical(number(&c[3])?))
    } else {
        let c = BSD.captures(line)?;
        (number(&c[1])?, number(&c[2])?, number(&c[3])?)
    };
    let mut sample = Sample::default();
    // A copy too fast for the clock has seconds = 0: only the printed rate is left.
    let throughput = if seconds > 0.0 { bytes / seconds } else { printed_rate };
    sample.push_rate("throughput", throughput, Unit::BytesPerSecond);
    sample.push("bytes", bytes, Unit::Bytes, Better::Higher);
    sample.push("seconds", seconds, Unit::Seconds, Better::Lower);
    Some(sample)
}

fn add_records(sample: &mut Sample, records: &Records, warnings: &mut Vec<String>) {
    let counts = [
        ("records_in", records.full_in),
        ("records_in_partial", records.partial_in),
        ("records_out", records.full_out),
        ("records_out_partial", records.partial_out),
    ];
    for (name, value) in counts {
        if let Some(value) = value {
            sample.push(name, value, Unit::Count, Better::Higher);
        }
    }
    let partial = records.partial_in.unwrap_or(0.0) + records.partial_out.unwrap_or(0.0);
    if partial > 0.0 {
        warnings.push(format!(
            "dd copied partial records ({}+{} records in, {}+{} records out): a read \
             returned less than the block size (a pipe, a short file, or a device limit), \
             so bs × count is not what was copied",
            records.full_in.unwrap_or(0.0),
            records.partial_in.unwrap_or(0.0),
            records.full_out.unwrap_or(0.0),
            records.partial_out.unwrap_or(0.0),
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::testing::assert_metric;
    use vocab::MeanKind;

    fn parse_stderr(text: &str) -> Parsed {
        Dd.parse("", text).unwrap()
    }

    #[test]
    fn old_coreutils_summaries_of_seed_002_are_three_results() {
        let parsed = Dd.parse(include_str!("../../tests/data/parse/dd-seed002.txt"), "").unwrap();
        assert_eq!(parsed.samples.len(), 3);
        assert!(parsed.warnings.is_empty());
        let first = &parsed.samples[0];
        assert_metric(first, "throughput", 3221225472.0 / 48.4788, Unit::BytesPerSecond);
        assert_metric(first, "bytes", 3221225472.0, Unit::Bytes);
        assert_metric(first, "seconds", 48.4788, Unit::Seconds);
        assert_metric(first, "records_in", 3145728.0, Unit::Count);
        assert_metric(first, "records_out_partial", 0.0, Unit::Count);
        let metric = first.get("throughput").unwrap();
        assert_eq!((metric.better, metric.mean), (Better::Higher, MeanKind::Harmonic));
        // The printed "66.4 MB/s" is the same rate, rounded.
        assert!((metric.value / 66.4e6 - 1.0).abs() < 1e-3);
        assert_metric(&parsed.samples[1], "seconds", 15.7325, Unit::Seconds);
        assert_metric(&parsed.samples[2], "throughput", 3221225472.0 / 6.42111, Unit::BytesPerSecond);
    }

    #[test]
    fn new_coreutils_summary() {
        let parsed = parse_stderr(include_str!("../../tests/data/parse/dd-9.1-fdatasync.txt"));
        let [sample] = parsed.samples.as_slice() else { panic!("{parsed:?}") };
        assert_metric(sample, "bytes", 17825792.0, Unit::Bytes);
        assert_metric(sample, "seconds", 0.016452, Unit::Seconds);
        assert_metric(sample, "throughput", 17825792.0 / 0.016452, Unit::BytesPerSecond);
        assert_metric(sample, "records_out", 17.0, Unit::Count);
    }

    #[test]
    fn gigabytes_per_second_and_exponent_seconds() {
        let parsed = parse_stderr(include_str!("../../tests/data/parse/dd-9.1-gbs.txt"));
        assert_metric(&parsed.samples[0], "throughput", 4294967296.0 / 0.092308, Unit::BytesPerSecond);
        let parsed = parse_stderr(include_str!("../../tests/data/parse/dd-9.1-100-bytes.txt"));
        assert_metric(&parsed.samples[0], "seconds", 4.6827e-05, Unit::Seconds);
        assert_metric(&parsed.samples[0], "bytes", 100.0, Unit::Bytes);
    }

    #[test]
    fn one_byte_in_kilobytes_per_second_warns_of_partial_records() {
        let parsed = parse_stderr(include_str!("../../tests/data/parse/dd-9.1-one-byte.txt"));
        let sample = &parsed.samples[0];
        assert_metric(sample, "bytes", 1.0, Unit::Bytes);
        assert_metric(sample, "throughput", 1.0 / 3.406e-05, Unit::BytesPerSecond);
        assert_metric(sample, "records_in", 0.0, Unit::Count);
        assert_metric(sample, "records_in_partial", 1.0, Unit::Count);
        assert_eq!(parsed.warnings.len(), 1);
        assert!(parsed.warnings[0].contains("0+1 records in"), "{:?}", parsed.warnings);
    }

    #[test]
    fn partial_record_after_full_ones() {
        let parsed = parse_stderr(include_str!("../../tests/data/parse/dd-9.1-partial.txt"));
        assert_metric(&parsed.samples[0], "records_in", 1.0, Unit::Count);
        assert_metric(&parsed.samples[0], "records_out_partial", 1.0, Unit::Count);
        assert_eq!(parsed.warnings.len(), 1);
    }

    #[test]
    fn a_summary_quoted_without_records_lines_still_counts() {
        let parsed = Dd.parse("copied: 3221225472 bytes (3.2 GB) copied, 6.42111 s, 502 MB/s", "");
        assert!(parsed.is_err(), "a line that does not start with the byte count is not dd's");
        let parsed = Dd.parse("3221225472 bytes (3.2 GB) copied, 6.42111 s, 502 MB/s\n", "").unwrap();
        assert_metric(&parsed.samples[0], "seconds", 6.42111, Unit::Seconds);
        assert!(parsed.samples[0].get("records_in").is_none());
    }

    #[test]
    fn progress_lines_are_not_results() {
        let stderr = "1048576000 bytes (1.0 GB, 1000 MiB) copied, 1 s, 1.0 GB/s\r\
                      2097152000 bytes (2.1 GB, 2.0 GiB) copied, 2 s, 1.0 GB/s\r\n\
                      2048+0 records in\n2048+0 records out\n\
                      2147483648 bytes (2.1 GB, 2.0 GiB) copied, 2.04 s, 1.1 GB/s\n";
        let parsed = parse_stderr(stderr);
        let [sample] = parsed.samples.as_slice() else { panic!("{parsed:?}") };
        assert_metric(sample, "seconds", 2.04, Unit::Seconds);
    }

    #[test]
    fn bsd_summary() {
        // FreeBSD and macOS dd: "%ju bytes transferred in %.6f secs (%ju bytes/sec)".
        let stderr = "3145728+0 records in\n3145728+0 records out\n\
                      3221225472 bytes transferred in 48.478800 secs (66445012 bytes/sec)\n";
        let parsed = parse_stderr(stderr);
        assert_metric(&parsed.samples[0], "throughput", 3221225472.0 / 48.4788, Unit::BytesPerSecond);
        assert_metric(&parsed.samples[0], "records_in", 3145728.0, Unit::Count);
    }

    #[test]
    fn zero_seconds_falls_back_to_the_printed_rate() {
        let parsed = parse_stderr("0+0 records in\n0+0 records out\n0 bytes copied, 0 s, 0.0 kB/s\n");
        assert_metric(&parsed.samples[0], "throughput", 0.0, Unit::BytesPerSecond);
    }

    #[test]
    fn an_error_message_is_quoted() {
        let error = Dd.parse("", "dd: error writing 'zero.tst': No space left on device\n").unwrap_err();
        assert!(error.to_string().contains("No space left on device"), "{error}");
    }
}
