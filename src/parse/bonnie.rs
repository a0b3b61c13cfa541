//! bonnie++: the CSV rows of bonnie++ 1.03 and of 1.96–2.00, one row per result.

use super::{Better, MeanKind, ParseError, Parsed, Parser, Sample, Unit, nothing_found, number, parse_unit};

pub(super) struct Bonnie;

/// The 12 result columns of the I/O tests, then those of the file-creation tests; every
/// throughput column has a CPU column after it. The names are bonnie++'s own header names.
const IO_TESTS: [&str; 6] = ["putc", "put_block", "rewrite", "getc", "get_block", "seeks"];
const FILE_TESTS: [&str; 6] = ["seq_create", "seq_stat", "seq_del", "ran_create", "ran_stat", "ran_del"];

/// Where a row's groups of columns start. Checked against bonnie++'s sources: 1.03 as
/// seed 000 shows with its header; 1.96/1.97 from `bon_time.cpp` (`PrintHeader` and
/// `DoReportIO`/`DoReportFile`); 1.98 (bonnie++ 2.00) from `bon_csv2txt` and a real run.
/// bonnie++ 2.00's `-x` header line omits the `seeks,seek_proc_count` columns that its
/// rows hold, so rows are read by position and the header is never trusted.
struct Layout {
    fields: usize,
    name: usize,
    io: usize,
    files: usize,
    latency: Option<usize>,
}

/// bonnie++ 1.03: `name,file_size,` 12 I/O columns, `num_files,` 12 file columns.
const V103: Layout = Layout { fields: 27, name: 0, io: 2, files: 15, latency: None };
/// CSV format 1.96/1.97: `format_version,bonnie_version,name,concurrency,seed,file_size,
/// io_chunk_size,` 12 I/O, `num_files,max_size,min_size,num_dirs,file_chunk_size,` 12 file,
/// 12 latencies.
const V196: Layout = Layout { fields: 48, name: 2, io: 7, files: 24, latency: Some(36) };
/// CSV format 1.98: as 1.96 with `seeks,seek_proc_count` after `io_chunk_size`.
const V198: Layout = Layout { fields: 50, name: 2, io: 9, files: 26, latency: Some(38) };

impl Parser for Bonnie {
    fn name(&self) -> &'static str {
        "bonnie++"
    }

    /// Every row is one result (`-x N` prints N), labelled with the machine name. Metrics
    /// carry bonnie++'s column names: `putc`, `put_block`, `rewrite`, `getc`, `get_block`
    /// (bytes/s), `seeks`, `seq_create`, `seq_stat`, `seq_del`, `ran_create`, `ran_stat`,
    /// `ran_del` (op/s), all averaged harmonically; `<test>_cpu` (%); and from 1.96 on
    /// `<test>_latency` (s, the worst latency bonnie++ saw).
    fn parse(&self, stdout: &str, stderr: &str) -> Result<Parsed, ParseError> {
        let mut parsed = Parsed::default();
        // With -q the CSV is on stdout and the table on stderr; without it both are on
        // stdout. Either way, rows are the lines with enough commas.
        for line in stdout.lines().chain(stderr.lines()).map(str::trim) {
            let fields: Vec<&str> = line.split(',').collect();
            if fields.len() < V103.fields || fields[0] == "name" || fields[0] == "format_version" {
                continue;
            }
            match layout(&fields) {
                Some(layout) => {
                    let sample = row(layout, &fields);
                    if !sample.is_empty() {
                        parsed.samples.push(sample);
                    }
                }
                None => parsed.warnings.push(format!(
                    "bonnie++: skipped a row of {} fields that matches no known CSV format \
                     (1.03: 27 fields; 1.96/1.97: 48; 1.98: 50): {line}",
                    fields.len()
                )),
            }
        }
        if parsed.samples.is_empty() {
            return Err(nothing_found("bonnie++", "bonnie++ CSV row", stdout, stderr));
        }
        Ok(parsed)
    }
}

fn layout(fields: &[&str]) -> Option<&'static Layout> {
    let versioned = fields[0].starts_with("1.9");
    match fields.len() {
        27 if !versioned => Some(&V103),
        48 if versioned => Some(&V196),
        50 if versioned => Some(&V198),
        _ => None,
    }
}

fn row(layout: &Layout, fields: &[&str]) -> Sample {
    let mut sample = Sample::labelled(fields[layout.name]);
    for (i, test) in IO_TESTS.iter().enumerate() {
        // Throughput is in KiB/s ("K/sec"); seeks are per second.
        let unit = if *test == "seeks" { "/s" } else { "K/s" };
        rate(&mut sample, test, fields[layout.io + 2 * i], unit);
        cpu(&mut sample, test, fields[layout.io + 2 * i + 1]);
    }
    for (i, test) in FILE_TESTS.iter().enumerate() {
        rate(&mut sample, test, fields[layout.files + 2 * i], "/s");
        cpu(&mut sample, test, fields[layout.files + 2 * i + 1]);
    }
    if let Some(start) = layout.latency {
        for (i, test) in IO_TESTS.iter().chain(&FILE_TESTS).enumerate() {
            if let Some(seconds) = latency(fields[start + i]) {
                sample.push(format!("{test}_latency"), seconds, Unit::Seconds, Better::Lower);
            }
        }
    }
    sample
}

/// Each test does a fixed amount of work (the file size, 8000 seeks, n·1024 files), so its
/// rate is averaged harmonically. "+++++" means the test finished too fast to measure
/// (under 500 ms): the metric is missing, never zero. Empty means not run.
fn rate(sample: &mut Sample, test: &str, field: &str, unit: &str) {
    let Some(value) = number(field) else { return };
    let Ok(scale) = parse_unit(unit) else { return };
    sample.push_with(test, scale.to_canonical(value), scale.unit, Better::Higher, MeanKind::Harmonic);
}

/// CPU use in percent; "+++" goes with a "+++++" rate.
fn cpu(sample: &mut Sample, test: &str, field: &str) {
    if let Some(percent) = number(field) {
        sample.push(format!("{test}_cpu"), percent, Unit::Percent, Better::Lower);
    }
}

/// The worst latency of a test as bonnie++ prints it: `2353us`, `1234ms` or `101s`.
fn latency(field: &str) -> Option<f64> {
    let split = field.find(|c: char| c.is_ascii_alphabetic())?;
    let (value, unit) = field.split_at(split);
    let scale = parse_unit(unit).ok().filter(|s| s.unit == Unit::Seconds)?;
    Some(scale.to_canonical(number(value)?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::testing::{assert_metric, names};

    #[test]
    fn seed_000_rows_of_bonnie_1_03_are_results() {
        let csv = include_str!("../../tests/data/parse/bonnie++-1.03-seed000.csv");
        let parsed = Bonnie.parse(csv, "").unwrap();
        assert!(parsed.warnings.is_empty(), "{:?}", parsed.warnings);
        assert_eq!(parsed.samples.len(), 4 + 8 + 2);
        // quadopt,5000M,50131,96,50260,13,31130,7,44048,85,159690,28,273.3,0,1000,52,99,
        // 25708,36,31317,53,51,99,115,81,110,91
        let first = &parsed.samples[0];
        assert_eq!(first.label.as_deref(), Some("quadopt"));
        assert_metric(first, "putc", 50131.0 * 1024.0, Unit::BytesPerSecond);
        assert_metric(first, "putc_cpu", 96.0, Unit::Percent);
        assert_metric(first, "put_block", 50260.0 * 1024.0, Unit::BytesPerSecond);
        assert_metric(first, "rewrite", 31130.0 * 1024.0, Unit::BytesPerSecond);
        assert_metric(first, "getc", 44048.0 * 1024.0, Unit::BytesPerSecond);
        assert_metric(first, "get_block", 159690.0 * 1024.0, Unit::BytesPerSecond);
        assert_metric(first, "get_block_cpu", 28.0, Unit::Percent);
        assert_metric(first, "seeks", 273.3, Unit::OpsPerSecond);
        assert_metric(first, "seeks_cpu", 0.0, Unit::Percent);
        assert_metric(first, "seq_create", 52.0, Unit::OpsPerSecond);
        assert_metric(first, "seq_stat", 25708.0, Unit::OpsPerSecond);
        assert_metric(first, "ran_del", 110.0, Unit::OpsPerSecond);
        assert_metric(first, "ran_del_cpu", 91.0, Unit::Percent);
        assert_eq!(first.metrics.len(), 24);
        let put_block = first.get("put_block").unwrap();
        assert_eq!((put_block.better, put_block.mean), (Better::Higher, MeanKind::Harmonic));
        assert_eq!(first.get("putc_cpu").unwrap().mean, MeanKind::Arithmetic);

        let last = parsed.samples.last().unwrap();
        assert_eq!(last.label.as_deref(), Some("quadopt_domU"));
        assert_metric(last, "putc", 27631.0 * 1024.0, Unit::BytesPerSecond);
        assert_metric(last, "seeks", 203.1, Unit::OpsPerSecond);
        assert_metric(last, "ran_del", 191.0, Unit::OpsPerSecond);
    }

    #[test]
    fn bonnie_2_00_rows_with_too_fast_tests_missing_and_latencies_in_seconds() {
        let csv = include_str!("../../tests/data/parse/bonnie++-2.00a.csv");
        let parsed = Bonnie.parse(csv, "").unwrap();
        assert!(parsed.warnings.is_empty(), "{:?}", parsed.warnings);
        assert_eq!(parsed.samples.len(), 2);
        // 1.98,2.00a,vm,1,1795996628,64M,,8192,5,4154,99,+++++,+++,+++++,+++,6010,99,+++++,
        // +++,+++++,+++,1,,,,,+++++,+++,… ,2353us,222us,209us,1465us,190us,2514us,487us,97us,
        // 160us,443us,6us,58us
        let first = &parsed.samples[0];
        assert_eq!(first.label.as_deref(), Some("vm"));
        assert_metric(first, "putc", 4154.0 * 1024.0, Unit::BytesPerSecond);
        assert_metric(first, "putc_cpu", 99.0, Unit::Percent);
        assert_metric(first, "getc", 6010.0 * 1024.0, Unit::BytesPerSecond);
        for missing in
            ["put_block", "put_block_cpu", "rewrite", "get_block", "seeks", "seq_create", "ran_del_cpu"]
        {
            assert!(first.get(missing).is_none(), "{missing} was too fast to measure");
        }
        assert_metric(first, "putc_latency", 2353e-6, Unit::Seconds);
        assert_metric(first, "seeks_latency", 2514e-6, Unit::Seconds);
        assert_metric(first, "ran_del_latency", 58e-6, Unit::Seconds);
        assert_eq!(names(first).len(), 4 + 12);
        assert_metric(&parsed.samples[1], "putc", 3863.0 * 1024.0, Unit::BytesPerSecond);
        assert_metric(&parsed.samples[1], "seq_create_latency", 4132e-6, Unit::Seconds);
    }

    #[test]
    fn format_1_96_row() {
        // A bonnie++ 1.96 row as DoReportIO/DoReportFile print it: no seek columns.
        let row = "1.96,1.96,db1,1,1356100212,16G,,812,97,95012,21,43544,9,3921,93,160371,16,\
                   412.5,13,16,,,,,+++++,+++,+++++,+++,+++++,+++,+++++,+++,+++++,+++,+++++,+++,\
                   11620us,1234ms,1101ms,31092us,97312us,175ms,344us,1101us,1143us,75us,21us,101s";
        let parsed = Bonnie.parse(row, "").unwrap();
        let sample = &parsed.samples[0];
        assert_eq!(sample.label.as_deref(), Some("db1"));
        assert_metric(sample, "putc", 812.0 * 1024.0, Unit::BytesPerSecond);
        assert_metric(sample, "seeks", 412.5, Unit::OpsPerSecond);
        assert_metric(sample, "seeks_cpu", 13.0, Unit::Percent);
        assert!(sample.get("seq_create").is_none());
        assert_metric(sample, "putc_latency", 0.01162, Unit::Seconds);
        assert_metric(sample, "put_block_latency", 1.234, Unit::Seconds);
        assert_metric(sample, "ran_del_latency", 101.0, Unit::Seconds);
    }

    #[test]
    fn rows_of_an_unknown_shape_are_warned_about() {
        let csv = include_str!("../../tests/data/parse/bonnie++-2.00a.csv");
        let mangled = csv.replace(",8192,5,", ",8192,");
        let error = Bonnie.parse(&mangled, "").unwrap_err();
        assert!(matches!(error, ParseError::NothingFound { .. }), "{error}");
        let mixed = format!("{mangled}{csv}");
        let parsed = Bonnie.parse(&mixed, "").unwrap();
        assert_eq!(parsed.samples.len(), 2);
        assert_eq!(parsed.warnings.len(), 2);
        assert!(parsed.warnings[0].contains("49 fields"), "{:?}", parsed.warnings);
    }

    #[test]
    fn the_human_readable_table_alone_is_not_a_result() {
        let table = "Version  2.00a       ------Sequential Output------ --Sequential Input- --Random-\n\
                     Name:Size etc        /sec %CP  /sec %CP  /sec %CP  /sec %CP  /sec %CP  /sec %CP\n\
                     vm              64M  4154k  99 +++++ +++ +++++ +++  6010k  99 +++++ +++ +++++ +++\n";
        assert!(Bonnie.parse("", table).is_err());
    }
}
