//! fio: `--output-format=json` and `json+`, per job and per group of jobs.

use std::collections::BTreeMap;

use serde_json::Value;

use super::{Better, ParseError, Parsed, Parser, Sample, Unit, json_document, nothing_found};

pub(super) struct Fio;

const DIRECTIONS: [&str; 3] = ["read", "write", "trim"];

impl Parser for Fio {
    fn name(&self) -> &'static str {
        "fio"
    }

    /// One fio run is one result. Per job `<job>.<dir>.<metric>` with `<dir>` one of read,
    /// write, trim (directions that moved no data are left out):
    /// `bw` (bytes/s), `iops`, `runtime` (s), `io_bytes`, `lat_mean`, `lat_stddev`,
    /// `clat_mean`, `clat_stddev`, `slat_mean`, `slat_stddev` (s, when fio measured them),
    /// and `clat_p<q>` for each completion-latency percentile fio printed (`clat_p99.9`);
    /// per job `<job>.usr_cpu`, `<job>.sys_cpu` (%). A job name used more than once (as
    /// `numjobs` does) becomes `<job>[k]`, k counting from 0. Per group (`--stonewall`
    /// starts a new one) `group<g>.<dir>.bw`, `.iops`, `.io_bytes`, computed as fio's
    /// "Run status group" does: everything moved over the longest runtime.
    fn parse(&self, stdout: &str, stderr: &str) -> Result<Parsed, ParseError> {
        let Some(document) = json_document(stdout) else {
            return Err(nothing_found("fio", "fio JSON output", stdout, stderr));
        };
        let Some(jobs) = document.get("jobs").and_then(Value::as_array) else {
            return Err(nothing_found("fio", "\"jobs\" in fio's JSON", stdout, stderr));
        };
        if let Some(message) = job_errors(jobs, stderr) {
            return Err(ParseError::Tool { parser: "fio", message });
        }
        let mut sample = Sample::default();
        let prefixes = job_prefixes(jobs);
        let mut groups: BTreeMap<(u64, &str), GroupTotal> = BTreeMap::new();
        for (job, prefix) in jobs.iter().zip(&prefixes) {
            let group = job.get("groupid").and_then(Value::as_u64).unwrap_or(0);
            for direction in DIRECTIONS {
                let Some(stats) = job.get(direction) else {
                    continue;
                };
                let io_bytes = field(stats, "io_bytes");
                if io_bytes <= 0.0 {
                    continue;
                }
                direction_metrics(&mut sample, &format!("{prefix}.{direction}"), stats);
                let total = groups.entry((group, direction)).or_default();
                total.io_bytes += io_bytes;
                total.ios += field(stats, "total_ios");
                total.runtime_ms = total.runtime_ms.max(field(stats, "runtime"));
            }
            for cpu in ["usr_cpu", "sys_cpu"] {
                if let Some(percent) = job.get(cpu).and_then(Value::as_f64) {
                    sample.push(format!("{prefix}.{cpu}"), percent, Unit::Percent, Better::Lower);
                }
            }
        }
        for ((group, direction), total) in groups {
            let seconds = total.runtime_ms / 1000.0;
            let name = format!("group{group}.{direction}");
            sample.push(format!("{name}.bw"), total.io_bytes / seconds, Unit::BytesPerSecond, Better::Higher);
            sample.push(format!("{name}.iops"), total.ios / seconds, Unit::OpsPerSecond, Better::Higher);
            sample.push(format!("{name}.io_bytes"), total.io_bytes, Unit::Bytes, Better::Higher);
        }
        if sample.is_empty() {
            return Err(nothing_found("fio", "a fio job that moved data", stdout, stderr));
        }
        let mut parsed = Parsed { samples: vec![sample], ..Parsed::default() };
        // A job run with `--steadystate` says whether it got there (`attained`: 1 or 0);
        // one that did not ran to its `runtime` on a measurement still moving.
        let unsteady: Vec<&str> = jobs
            .iter()
            .zip(&prefixes)
            .filter(|(job, _)| {
                job.get("steadystate").and_then(|s| s.get("attained")).and_then(Value::as_u64) == Some(0)
            })
            .map(|(_, prefix)| prefix.as_str())
            .collect();
        if !unsteady.is_empty() {
            parsed.flags.push(vocab::NOT_CONVERGED);
            parsed.warnings.push(format!("fio: steady state not attained (job {})", unsteady.join(", ")));
        }
        Ok(parsed)
    }
}

#[derive(Default)]
struct GroupTotal {
    io_bytes: f64,
    ios: f64,
    runtime_ms: f64,
}

/// A failed job makes the whole run a parse error: its zeros are not measurements. fio
/// prints the reason only on stderr ("fio: pid=0, err=1/file:…, error=Operation not
/// permitted"), so that is quoted too.
fn job_errors(jobs: &[Value], stderr: &str) -> Option<String> {
    let failed: Vec<String> = jobs
        .iter()
        .filter_map(|job| {
            let code = job.get("error").and_then(Value::as_i64).filter(|&e| e != 0)?;
            let name = job.get("jobname").and_then(Value::as_str).unwrap_or("?");
            Some(format!("job '{name}' ended with error {code}"))
        })
        .collect();
    if failed.is_empty() {
        return None;
    }
    let said: Vec<&str> = stderr.lines().filter(|l| l.starts_with("fio: ")).take(3).collect();
    let mut message = failed.join(", ");
    if !said.is_empty() {
        message.push_str(&format!("; fio said: {}", said.join(" / ")));
    }
    Some(message)
}

fn job_prefixes(jobs: &[Value]) -> Vec<String> {
    let names: Vec<&str> =
        jobs.iter().map(|j| j.get("jobname").and_then(Value::as_str).unwrap_or("job")).collect();
    let mut seen: BTreeMap<&str, usize> = BTreeMap::new();
    names
        .iter()
        .map(|name| {
            if names.iter().filter(|n| *n == name).count() == 1 {
                return (*name).to_owned();
            }
            let k = seen.entry(name).or_insert(0);
            *k += 1;
            format!("{name}[{}]", *k - 1)
        })
        .collect()
}

fn field(stats: &Value, key: &str) -> f64 {
    stats.get(key).and_then(Value::as_f64).unwrap_or(0.0)
}

fn direction_metrics(sample: &mut Sample, prefix: &str, stats: &Value) {
    sample.push(format!("{prefix}.bw"), field(stats, "bw_bytes"), Unit::BytesPerSecond, Better::Higher);
    sample.push(format!("{prefix}.iops"), field(stats, "iops"), Unit::OpsPerSecond, Better::Higher);
    sample.push(format!("{prefix}.runtime"), field(stats, "runtime") / 1000.0, Unit::Seconds, Better::Lower);
    sample.push(format!("{prefix}.io_bytes"), field(stats, "io_bytes"), Unit::Bytes, Better::Higher);
    for kind in ["lat", "clat", "slat"] {
        // fio ≥ 3 reports nanoseconds under "<kind>_ns"; fio 2 reported microseconds
        // under "<kind>".
        let (latency, seconds_per_unit) = match (stats.get(format!("{kind}_ns")), stats.get(kind)) {
            (Some(ns), _) => (ns, 1e-9),
            (None, Some(us)) => (us, 1e-6),
            (None, None) => continue,
        };
        if field(latency, "N") <= 0.0 && latency.get("N").is_some() {
            continue; // not measured (slat with a sync engine)
        }
        for statistic in ["mean", "stddev"] {
            if let Some(value) = latency.get(statistic).and_then(Value::as_f64) {
                let name = format!("{prefix}.{kind}_{statistic}");
                sample.push(name, value * seconds_per_unit, Unit::Seconds, Better::Lower);
            }
        }
        let Some(percentiles) = latency.get("percentile").and_then(Value::as_object) else {
            continue;
        };
        for (quantile, value) in percentiles {
            let (Ok(quantile), Some(value)) = (quantile.parse::<f64>(), value.as_f64()) else {
                continue;
            };
            let name = format!("{prefix}.{kind}_p{quantile}");
            sample.push(name, value * seconds_per_unit, Unit::Seconds, Better::Lower);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::testing::{assert_metric, names};

    #[test]
    fn json_after_notes_with_two_groups() {
        let text = include_str!("../../tests/data/parse/fio-3.33.json");
        assert!(text.starts_with("seqread: (g=0)"), "the fixture keeps fio's preamble");
        let parsed = Fio.parse(text, "").unwrap();
        let [sample] = parsed.samples.as_slice() else { panic!("{parsed:?}") };
        assert_metric(sample, "seqread.read.bw", 1198372571.0, Unit::BytesPerSecond);
        assert_metric(sample, "seqread.read.iops", 292571.428571, Unit::OpsPerSecond);
        assert_metric(sample, "seqread.read.runtime", 0.007, Unit::Seconds);
        assert_metric(sample, "seqread.read.io_bytes", 8388608.0, Unit::Bytes);
        assert_metric(sample, "seqread.read.clat_mean", 2910.741699e-9, Unit::Seconds);
        assert_metric(sample, "seqread.read.lat_mean", 2930.343262e-9, Unit::Seconds);
        assert_metric(sample, "seqread.read.clat_p99.9", 448512e-9, Unit::Seconds);
        assert_metric(sample, "seqread.read.clat_p50", 524e-9, Unit::Seconds);
        assert_metric(sample, "seqread.usr_cpu", 16.666667, Unit::Percent);
        assert!(sample.get("seqread.write.bw").is_none(), "a read job wrote nothing");
        assert!(sample.get("seqread.read.slat_mean").is_none(), "psync measures no slat");
        assert_metric(sample, "randwrite.write.bw", 1398101333.0, Unit::BytesPerSecond);
        assert_metric(sample, "randwrite.write.iops", 341333.333333, Unit::OpsPerSecond);
        assert_metric(sample, "randwrite.sys_cpu", 40.0, Unit::Percent);
        assert_metric(sample, "group0.read.bw", 8388608.0 / 0.007, Unit::BytesPerSecond);
        assert_metric(sample, "group1.write.iops", 2048.0 / 0.006, Unit::OpsPerSecond);
        assert!(sample.get("group1.read.bw").is_none());
    }

    /// Captured with `--steadystate` (capture.sh): `attained` 1 leaves the trial alone, 0
    /// flags it as not converged; a run without the option (the other fixtures) neither.
    #[test]
    fn steadystate_attained_or_not() {
        let attained =
            Fio.parse(include_str!("../../tests/data/parse/fio-3.33-steadystate-attained.json"), "").unwrap();
        assert!(attained.flags.is_empty(), "{:?}", attained.flags);
        let not = Fio
            .parse(include_str!("../../tests/data/parse/fio-3.33-steadystate-not-attained.json"), "")
            .unwrap();
        assert_eq!(not.flags, [vocab::NOT_CONVERGED]);
        assert_eq!(not.warnings, ["fio: steady state not attained (job ssread)"]);
        assert!(not.samples[0].get("ssread.read.bw").is_some());
        let plain = Fio.parse(include_str!("../../tests/data/parse/fio-3.33.json"), "").unwrap();
        assert!(plain.flags.is_empty());
    }

    #[test]
    fn json_plus_with_two_jobs_of_one_name_in_one_group() {
        let text = include_str!("../../tests/data/parse/fio-3.33-jsonplus.json");
        let sample = &Fio.parse(text, "").unwrap().samples[0];
        assert_metric(sample, "randrw[0].read.bw", 43778752.0, Unit::BytesPerSecond);
        assert_metric(sample, "randrw[0].write.iops", 11333.333333, Unit::OpsPerSecond);
        assert_metric(sample, "randrw[1].read.bw", 43514494.0, Unit::BytesPerSecond);
        assert_metric(sample, "randrw[0].read.lat_mean", 89703.304829e-9, Unit::Seconds);
        assert_metric(sample, "randrw[0].read.clat_p99", 395264e-9, Unit::Seconds);
        let read_bytes = sample.value("randrw[0].read.io_bytes").unwrap()
            + sample.value("randrw[1].read.io_bytes").unwrap();
        assert_metric(sample, "group0.read.io_bytes", read_bytes, Unit::Bytes);
        assert_metric(sample, "group0.read.io_bytes", 4071424.0 + 4046848.0, Unit::Bytes);
        assert_metric(sample, "group0.read.bw", read_bytes / 0.093, Unit::BytesPerSecond);
        assert!(names(sample).iter().all(|n| !n.contains("bins")));
    }

    #[test]
    fn a_failed_job_is_an_error_quoting_fio() {
        let stdout = include_str!("../../tests/data/parse/fio-3.33-error.json");
        let stderr = include_str!("../../tests/data/parse/fio-3.33-error.stderr");
        let error = Fio.parse(stdout, stderr).unwrap_err();
        let message = error.to_string();
        assert!(matches!(error, ParseError::Tool { .. }), "{message}");
        assert!(message.contains("job 'bad' ended with error 1"), "{message}");
        assert!(message.contains("error=Operation not permitted"), "{message}");
    }

    #[test]
    fn fio_2_latencies_in_microseconds() {
        let text = r#"{"jobs": [{"jobname": "old", "groupid": 0, "error": 0,
            "read": {"io_bytes": 1048576, "bw_bytes": 2097152, "iops": 512, "runtime": 500,
                     "total_ios": 256, "clat": {"mean": 150.5, "stddev": 2.0,
                     "percentile": {"95.000000": 200}}}}]}"#;
        let sample = &Fio.parse(text, "").unwrap().samples[0];
        assert_metric(sample, "old.read.clat_mean", 150.5e-6, Unit::Seconds);
        assert_metric(sample, "old.read.clat_p95", 200e-6, Unit::Seconds);
        assert_metric(sample, "old.read.runtime", 0.5, Unit::Seconds);
    }

    #[test]
    fn text_output_is_not_json() {
        let text = "seqread: (groupid=0, jobs=1): err= 0: pid=42\n  read: IOPS=128k, BW=500MiB/s\n";
        let error = Fio.parse(text, "").unwrap_err();
        assert!(error.to_string().contains("IOPS=128k"), "{error}");
    }
}
