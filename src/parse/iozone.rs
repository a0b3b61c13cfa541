//! iozone: the throughput-mode summaries (`-t N`) and the auto-mode table (`-a`).

use std::sync::LazyLock;

use regex::Regex;

use super::{Better, ParseError, Parsed, Parser, Sample, Unit, nothing_found, number, snake};

pub(super) struct Iozone;

/// `Children see throughput for 10 initial writers  =   14077.26 KB/sec`
static CHILDREN: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^Children see throughput for\s+\d+\s+(.+?)\s*=\s*([0-9.]+)\s*(\S+)").unwrap()
});
/// The lines that follow it, up to the next test.
static STATISTIC: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"^(Parent sees throughput for\s+\d+\s+.+?|Min throughput per process|Max throughput per process|Avg throughput per process|Min xfer)\s*=\s*([0-9.]+)\s*(\S+)",
    )
    .unwrap()
});

impl Parser for Iozone {
    fn name(&self) -> &'static str {
        "iozone"
    }

    /// One run is one result: every test and every row of the auto table is a metric.
    fn parse(&self, stdout: &str, stderr: &str) -> Result<Parsed, ParseError> {
        let mut sample = Sample::default();
        throughput_mode(stdout, &mut sample);
        auto_mode(stdout, &mut sample);
        if sample.is_empty() {
            return Err(nothing_found(
                "iozone",
                "iozone throughput summary or auto-mode table",
                stdout,
                stderr,
            ));
        }
        Ok(Parsed { samples: vec![sample], ..Parsed::default() })
    }
}

/// iozone's "KB" and "kB" are both 1024 bytes ("Output is in Kbytes/sec" / "kBytes/sec"),
/// so its units are resolved here rather than by the general table, where "kB" is 1000.
fn iozone_unit(unit: &str) -> Option<(Unit, f64)> {
    match unit {
        "KB/sec" | "kB/sec" => Some((Unit::BytesPerSecond, 1024.0)),
        "ops/sec" => Some((Unit::OpsPerSecond, 1.0)),
        "KB" | "kB" => Some((Unit::Bytes, 1024.0)),
        "ops" => Some((Unit::Count, 1.0)),
        _ => None,
    }
}

/// Metrics `<test>.children`, `.parent`, `.min`, `.max`, `.avg` (throughput) and
/// `.min_xfer` (bytes), for every test: `initial_writers`, `rewriters`, `readers`,
/// `re_readers`, `reverse_readers`, `stride_readers`, `random_readers`,
/// `mixed_workload`, `random_writers`, …
fn throughput_mode(text: &str, sample: &mut Sample) {
    let mut test: Option<String> = None;
    for line in text.lines().map(str::trim) {
        if let Some(c) = CHILDREN.captures(line) {
            let name = snake(&c[1]);
            push(sample, &name, "children", &c[2], &c[3]);
            test = Some(name);
        } else if let (Some(name), Some(c)) = (&test, STATISTIC.captures(line)) {
            let statistic = match &c[1] {
                s if s.starts_with("Parent") => "parent",
                "Min throughput per process" => "min",
                "Max throughput per process" => "max",
                "Avg throughput per process" => "avg",
                _ => "min_xfer",
            };
            push(sample, name, statistic, &c[2], &c[3]);
        }
    }
}

fn push(sample: &mut Sample, test: &str, statistic: &str, value: &str, unit: &str) {
    let (Some(value), Some((unit, factor))) = (number(value), iozone_unit(unit)) else {
        return;
    };
    // Min xfer is how much the slowest process moved before the first one finished:
    // higher means the processes were more evenly served.
    sample.push(format!("{test}.{statistic}"), value * factor, unit, Better::Higher);
}

/// The `-a` table. Its header has two lines ("random" above "read"), columns are right
/// aligned, and tests left out with `-i` are blank in the rows, so each value is matched
/// to the header label whose right edge is nearest to its own.
///
/// Metrics `<test>.<file size KiB>k.<record KiB>k` in bytes/s (or ops/s with `-O`), e.g.
/// `random_read.102400k.4k`; tests: `write`, `rewrite`, `read`, `reread`, `random_read`,
/// `random_write`, `bkwd_read`, `record_rewrite`, `stride_read`, `fwrite`, `frewrite`,
/// `fread`, `freread`.
fn auto_mode(text: &str, sample: &mut Sample) {
    let ops = text.contains("Output is in operations per second");
    let (unit, factor) = if ops { (Unit::OpsPerSecond, 1.0) } else { (Unit::BytesPerSecond, 1024.0) };
    let lines: Vec<&str> = text.lines().collect();
    let mut columns: Vec<(usize, String)> = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let words = tokens(line);
        let labels: Vec<&str> = words.iter().map(|(_, t)| *t).collect();
        if labels.len() > 2 && matches!(labels[..2], ["kB", "reclen"] | ["KB", "reclen"]) {
            let above = if i > 0 { tokens(lines[i - 1]) } else { Vec::new() };
            columns = words
                .iter()
                .map(|&(end, label)| {
                    let prefix = above.iter().find(|(e, _)| *e == end).map(|(_, p)| *p);
                    let name = match prefix {
                        Some(prefix) => format!("{prefix}_{label}"),
                        None => label.to_owned(),
                    };
                    (end, name)
                })
                .collect();
            continue;
        }
        if columns.len() < 3 {
            continue;
        }
        let values: Vec<(usize, f64)> =
            words.iter().map_while(|&(end, t)| number(t).map(|v| (end, v))).collect();
        if values.len() < 3 || values.len() != words.len() {
            continue;
        }
        let (file_kib, record_kib) = (values[0].1, values[1].1);
        for &(end, value) in &values[2..] {
            let Some((_, test)) = columns[2..].iter().min_by_key(|(e, _)| e.abs_diff(end)) else {
                continue;
            };
            sample.push(format!("{test}.{file_kib}k.{record_kib}k"), value * factor, unit, Better::Higher);
        }
    }
}

/// The whitespace-separated words of a line with the column of their right edge.
fn tokens(line: &str) -> Vec<(usize, &str)> {
    let mut out = Vec::new();
    let mut start = None;
    for (i, c) in line.char_indices().chain(std::iter::once((line.len(), ' '))) {
        match (c.is_whitespace(), start) {
            (false, None) => start = Some(i),
            (true, Some(s)) => {
                out.push((i, &line[s..i]));
                start = None;
            }
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::testing::{assert_metric, names};

    const KIB: f64 = 1024.0;

    #[test]
    fn throughput_mode_of_seed_001() {
        let text = include_str!("../../tests/data/parse/iozone-seed001.txt");
        let parsed = Iozone.parse(text, "").unwrap();
        let [sample] = parsed.samples.as_slice() else { panic!("{parsed:?}") };
        assert_metric(sample, "initial_writers.children", 14077.26 * KIB, Unit::BytesPerSecond);
        assert_metric(sample, "initial_writers.parent", 11850.11 * KIB, Unit::BytesPerSecond);
        assert_metric(sample, "initial_writers.min", 1147.11 * KIB, Unit::BytesPerSecond);
        assert_metric(sample, "initial_writers.max", 1650.14 * KIB, Unit::BytesPerSecond);
        assert_metric(sample, "initial_writers.avg", 1407.73 * KIB, Unit::BytesPerSecond);
        assert_metric(sample, "initial_writers.min_xfer", 728832.0 * KIB, Unit::Bytes);
        assert_metric(sample, "rewriters.children", 4563.71 * KIB, Unit::BytesPerSecond);
        assert_metric(sample, "rewriters.min_xfer", 838144.0 * KIB, Unit::Bytes);
        assert_eq!(sample.metrics.len(), 12, "{:?}", names(sample));
    }

    #[test]
    fn throughput_mode_reader_names_and_ops() {
        let text = "\tChildren see throughput for  2 re-readers \t=  200.50 ops/sec\n\
                    \tParent sees throughput for  2 re-readers \t=  190.25 ops/sec\n\
                    \tMin throughput per process \t=  100.00 ops/sec \n";
        let parsed = Iozone.parse(text, "").unwrap();
        assert_metric(&parsed.samples[0], "re_readers.children", 200.5, Unit::OpsPerSecond);
        assert_metric(&parsed.samples[0], "re_readers.parent", 190.25, Unit::OpsPerSecond);
        assert_metric(&parsed.samples[0], "re_readers.min", 100.0, Unit::OpsPerSecond);
    }

    #[test]
    fn auto_table_with_tests_left_out() {
        let text = include_str!("../../tests/data/parse/iozone-3.492-auto-i0-i2.txt");
        let sample = &Iozone.parse(text, "").unwrap().samples[0];
        assert_eq!(
            names(sample),
            [
                "write.102400k.1024k",
                "rewrite.102400k.1024k",
                "random_read.102400k.1024k",
                "random_write.102400k.1024k"
            ]
        );
        assert_metric(sample, "write.102400k.1024k", 314600.0 * KIB, Unit::BytesPerSecond);
        assert_metric(sample, "random_read.102400k.1024k", 374715.0 * KIB, Unit::BytesPerSecond);
        assert_metric(sample, "random_write.102400k.1024k", 325762.0 * KIB, Unit::BytesPerSecond);
    }

    #[test]
    fn auto_table_with_every_test() {
        let text = include_str!("../../tests/data/parse/iozone-3.4xx-auto-full.txt");
        let sample = &Iozone.parse(text, "").unwrap().samples[0];
        assert_eq!(sample.metrics.len(), 3 * 13);
        // 16384 4  55907 68813 43361 42502 34044 64746 33578 61774 30137 235263 233180
        //          3905668 3824589
        let row = [
            ("write", 55907.0),
            ("rewrite", 68813.0),
            ("read", 43361.0),
            ("reread", 42502.0),
            ("random_read", 34044.0),
            ("random_write", 64746.0),
            ("bkwd_read", 33578.0),
            ("record_rewrite", 61774.0),
            ("stride_read", 30137.0),
            ("fwrite", 235263.0),
            ("frewrite", 233180.0),
            ("fread", 3905668.0),
            ("freread", 3824589.0),
        ];
        for (test, value) in row {
            assert_metric(sample, &format!("{test}.16384k.4k"), value * KIB, Unit::BytesPerSecond);
        }
        assert_metric(sample, "freread.16384k.16k", 7145026.0 * KIB, Unit::BytesPerSecond);
    }

    #[test]
    fn banner_alone_is_nothing() {
        let text = "\tIozone: Performance Test of File I/O\n\tOutput is in kBytes/sec\n";
        assert!(Iozone.parse(text, "").is_err());
    }
}
