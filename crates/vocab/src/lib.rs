//! The shared vocabulary every stage speaks: units, directions, mean kinds, levels, cell
//! ids and the names margin itself defines. It depends on no other crate of margin's.

use std::fmt;

use serde::de::{self, Visitor};
use serde::{Deserialize, Serialize};

pub mod display;
pub mod unit;

pub use unit::{Unit, UnitScale, UnknownUnit, never_negative, parse_unit};

/// Which direction of a metric is an improvement.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Better {
    Higher,
    Lower,
}

/// How trials of a metric are averaged (docs/statistics.md, "One cell"): a rate over a
/// fixed amount of work is summarised by its harmonic mean (total work / total time).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum MeanKind {
    /// For costs such as seconds: the plain average.
    #[default]
    Arithmetic,
    Harmonic,
}

impl MeanKind {
    /// Maps a value between the metric's scale and the analysis scale. The map is its
    /// own inverse (1/x for a harmonic mean), so it serves both directions.
    pub fn transform(self, x: f64) -> f64 {
        match self {
            MeanKind::Arithmetic => x,
            MeanKind::Harmonic => x.recip(),
        }
    }

    /// Maps an interval on the analysis scale to the metric's scale. 1/x reverses order,
    /// so the bounds swap; a lower bound at or below zero has no reciprocal and the upper
    /// end becomes unbounded (+∞).
    pub fn transform_interval(self, low: f64, high: f64) -> (f64, f64) {
        match self {
            MeanKind::Arithmetic => (low, high),
            MeanKind::Harmonic if low > 0.0 => (high.recip(), low.recip()),
            MeanKind::Harmonic => (high.recip(), f64::INFINITY),
        }
    }
}

impl fmt::Display for MeanKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            MeanKind::Arithmetic => "arithmetic",
            MeanKind::Harmonic => "harmonic",
        })
    }
}

/// How comparisons are computed (docs/statistics.md, The robust method): from the means
/// (Fieller's interval, Welch's test; the paired t on the log-ratios), or from ranks
/// (the Hodges–Lehmann shift of the logs with its Mann–Whitney or signed-rank interval).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Method {
    #[default]
    Parametric,
    Robust,
}

impl fmt::Display for Method {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Method::Parametric => "parametric",
            Method::Robust => "robust",
        })
    }
}

/// The kind a scalar had in YAML; its text is always kept as written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ScalarKind {
    Str,
    Int,
    Float,
    Bool,
}

/// A level or value as written in the file: `1k`, `4096`, `1.50`, `true`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Scalar {
    pub kind: ScalarKind,
    /// The YAML spelling (`1.50` stays `1.50`).
    pub text: String,
}

impl Scalar {
    pub fn str(text: impl Into<String>) -> Self {
        Self { kind: ScalarKind::Str, text: text.into() }
    }
}

impl fmt::Display for Scalar {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl<'de> Deserialize<'de> for Scalar {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(ScalarVisitor)
    }
}

/// Reads a scalar of the experiment file keeping its spelling; the types that hold
/// scalars (a matrix level) read theirs with it.
pub struct ScalarVisitor;

impl<'de> Visitor<'de> for ScalarVisitor {
    type Value = Scalar;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a string, number or boolean")
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Scalar, E> {
        Ok(Scalar { kind: ScalarKind::Bool, text: v.to_string() })
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Scalar, E> {
        Ok(Scalar { kind: ScalarKind::Int, text: v.to_string() })
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Scalar, E> {
        Ok(Scalar { kind: ScalarKind::Int, text: v.to_string() })
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Scalar, E> {
        Ok(Scalar { kind: ScalarKind::Float, text: v.to_string() })
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Scalar, E> {
        Ok(Scalar::str(v))
    }
    fn visit_unit<E: de::Error>(self) -> Result<Scalar, E> {
        Err(E::custom("expected a string, number or boolean, found nothing (null)"))
    }
}

/// A cell's stable id: 64 bits of a blake3 hash of its levels and rules (`plan::id`),
/// shown as 16 hex digits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CellId(pub u64);

impl fmt::Display for CellId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:016x}", self.0)
    }
}

/// The metrics margin measures itself around every trial, whatever the tool prints.
pub const ENGINE_METRICS: &[&str] = &["wall_time", "user_time", "system_time"];

/// The built-in parsers `parse:` may name, in the order documentation lists them.
pub const PARSERS: &[&str] =
    &["dd", "bonnie++", "iozone", "fio", "sysbench", "iperf3", "netperf", "dnetc", "hyperfine", "time"];

/// The variables margin gives every command template besides factors and vars.
pub const TEMPLATE_VARIABLES: &[&str] = &["workdir", "repetition", "host", "experiment"];

/// The template name under which commands reach the services (`{{ services.server.address }}`),
/// when the experiment declares some.
pub const SERVICES: &str = "services";

/// Facts about a host an `environment:` factor can be detected from (docs/design.md,
/// "Host facts").
pub const FACTS: &[&str] = &[
    "hypervisor",
    "xen_role",
    "kernel",
    "os",
    "arch",
    "hostname",
    "cpu_model",
    "cpus",
    "memory",
    "cmdline",
    "governor",
    "root",
    "xen_version",
    "dom0_mem",
    "dom0_max_vcpus",
];

/// What `monitor:` may select: the counters margin reads on the trial's host right before
/// and right after the timed command (docs/experiment-file.md, monitor). `cpu` and
/// `disks` are on by default.
pub const MONITOR_SOURCES: &[&str] = &["cpu", "disks", "vmstat", "net", "xl"];

/// The sources `monitor:` selects when the file does not say.
pub const MONITOR_DEFAULT: &[&str] = &["cpu", "disks"];

/// The secondary metrics telemetry derives that have one value per trial (docs/design.md
/// §5); the others are per device, interface or domain: `<prefix>:<name>`.
pub const TELEMETRY_METRICS: &[&str] = &[
    "cpu_user_pct",
    "cpu_system_pct",
    "cpu_iowait_pct",
    "cpu_steal_pct",
    "cpu_idle_pct",
    "vm_pages_written",
];

/// Prefixes of the per-device secondary metrics: `disk_written_bytes:sda`.
pub const TELEMETRY_PREFIXES: &[&str] =
    &["disk_read_bytes", "disk_written_bytes", "net_rx_bytes", "net_tx_bytes", "xl_cpu_seconds"];

/// Whether `name` is a secondary metric telemetry records (`cpu_steal_pct`,
/// `disk_written_bytes:vda`): `metrics:` may name it to make it a main metric.
pub fn is_telemetry_metric(name: &str) -> bool {
    TELEMETRY_METRICS.contains(&name)
        || name
            .split_once(':')
            .is_some_and(|(prefix, device)| TELEMETRY_PREFIXES.contains(&prefix) && !device.is_empty())
}

/// The canonical unit of a telemetry metric: `%` for CPU shares, `B` for bytes, `s` for
/// a domain's CPU time, none for a count of pages.
pub fn telemetry_unit(name: &str) -> &'static str {
    let stem = name.split(':').next().unwrap_or(name);
    if stem.ends_with("_pct") {
        "%"
    } else if stem.ends_with("_bytes") {
        "B"
    } else if stem.ends_with("_seconds") {
        "s"
    } else {
        ""
    }
}

/// The `monitor:` source a telemetry metric is read from.
pub fn telemetry_source(name: &str) -> &'static str {
    match name.split(':').next().unwrap_or(name) {
        m if m.starts_with("cpu_") => "cpu",
        m if m.starts_with("disk_") => "disks",
        m if m.starts_with("vm_") => "vmstat",
        m if m.starts_with("net_") => "net",
        _ => "xl",
    }
}

/// Whether margin measures `name` itself (an engine or telemetry metric), so that it needs
/// no parser and enters comparisons only when `metrics:` names it.
pub fn is_measured_metric(name: &str) -> bool {
    ENGINE_METRICS.contains(&name)
        || is_telemetry_metric(name)
        || member_metric(name).is_some_and(|(metric, _)| is_measured_metric(metric))
}

/// A gang member's metric, `metric@host` (docs/experiment-file.md, gangs): the metric and
/// the host.
pub fn member_metric(name: &str) -> Option<(&str, &str)> {
    name.rsplit_once('@').filter(|(metric, host)| !metric.is_empty() && !host.is_empty())
}

/// Whether `name` is one of margin's own measures of a trial ([`ENGINE_METRICS`]), a gang
/// member's (`wall_time@domu1`) included.
pub fn engine_metric(name: &str) -> bool {
    ENGINE_METRICS.contains(&name) || member_metric(name).is_some_and(|(m, _)| ENGINE_METRICS.contains(&m))
}

/// The unit of a secondary metric, a gang member's (`cpu_user_pct@domu1`) included.
pub fn secondary_unit(name: &str) -> &'static str {
    let name = member_metric(name).map_or(name, |(metric, _)| metric);
    if name == GANG_SKEW { "s" } else { telemetry_unit(name) }
}

/// The secondary metric of a gang's trial: how far apart its members' timed commands
/// started, the last start minus the first, in seconds (docs/design.md §6.11).
pub const GANG_SKEW: &str = "gang_start_skew";

/// Secondary metrics of a local trial whose disks are monitored (docs/statistics.md, What
/// the machine did): the bytes its own commands wrote (`ru_oublock`, and the raw output
/// margin saved), and the bytes of dirty pages and pages under writeback when it began.
pub const OWN_WRITTEN: &str = "own_written_bytes";
pub const DIRTY_BEFORE: &str = "dirty_before_bytes";

/// The flag a trial gets when the tool said its measurement did not converge (fio's
/// `steadystate` not attained, netperf's confidence not achieved).
pub const NOT_CONVERGED: &str = "not_converged";
