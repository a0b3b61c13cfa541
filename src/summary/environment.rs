//! The machines and how to run it all again: the facts of every machine state the trials
//! ran in (`environment`), and the command, experiment file and sessions (`reproduce`).

use indexmap::IndexMap;
use serde::Serialize;

/// The facts of every machine state trials ran in: one column per host and distinct set
/// of facts (a host rebooted into another kernel is two columns; rebooted into the same
/// one, one column: what changes in every boot by nature is not compared).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct Environment {
    pub columns: Vec<EnvColumn>,
    pub rows: Vec<FactRow>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct EnvColumn {
    pub host: String,
    pub sessions: Vec<String>,
    /// The `boot_id`s of its sessions, each once, in the order they started.
    pub boots: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct FactRow {
    pub fact: String,
    /// One per column; `None` where that column lacks the fact.
    /// `xl_info` and `xl_vcpu_list` without what changes from boot to boot by nature
    /// (the memory free, the clock rate calibrated at boot; the CPU seconds, where and
    /// whether each vCPU runs): sessions.ndjson keeps them whole.
    pub values: Vec<Option<String>>,
    pub differs: bool,
    /// It changes in every boot by nature (`boot_id`: each column's boots, joined by
    /// ", "), so it is never marked as differing.
    pub volatile: bool,
}

/// Everything needed to run the experiment again.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct Reproduce {
    pub experiment_file: String,
    /// The command line that repeats the runs.
    pub command: String,
    /// The experiment's command templates by key (`setup`, `run`, …).
    pub commands: IndexMap<String, String>,
    /// blake3 of the experiment file as it is now.
    pub spec_hash: String,
    /// The version of margin writing this summary.
    pub margin_version: String,
    pub sessions: Vec<SessionInfo>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct SessionInfo {
    pub session: String,
    pub host: String,
    pub started_at: String,
    pub ended_at: Option<String>,
    pub seed: u64,
    pub spec_hash: String,
    pub margin_version: String,
    /// The experiment file has changed since this session ran.
    pub spec_changed: bool,
    /// The run's label (`margin run --label`), when it was given one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
}
