//! The shared vocabulary every stage speaks: units, directions, mean kinds, levels, cell
//! ids and the names margin itself defines. It depends on no other module of the crate.

use std::fmt;

use serde::{Deserialize, Serialize};

pub mod unit;

pub use unit::{Scale, Unit, UnknownUnit, parse_unit};

/// Which direction of a metric is an improvement.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Better {
    Higher,
    Lower,
}

/// How trials of a metric are averaged (docs/statistics.md, "One cell"): a rate over a
/// fixed amount of work is summarised by its harmonic mean (total work / total time).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MeanKind {
    /// For costs such as seconds: the plain average.
    #[default]
    Arithmetic,
    Harmonic,
}

impl fmt::Display for MeanKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            MeanKind::Arithmetic => "arithmetic",
            MeanKind::Harmonic => "harmonic",
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
