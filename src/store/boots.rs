//! The boot log (`boots.ndjson`): what margin asked of each boot of a host and what came
//! back — requested, back, verified or rejected, lost — one durable line per event, so
//! that a run killed while a host reboots resumes where the boot plan was, and the report
//! lists every boot.

use std::path::PathBuf;

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};

use super::{Appender, Store, StoreError, read_log};

/// What happened to a boot.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BootEvent {
    /// margin ran the commands that reboot the host into `wanted`.
    Requested,
    /// The host answered in a new boot, in the levels it wanted: its trials may run.
    Verified,
    /// The host answered in a new boot in other levels: no trial runs in it.
    Rejected,
    /// The host did not answer in a new boot in time (after the power cycle, if any).
    Lost,
}

/// One event of one boot of a host's boot plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BootRecord {
    pub host: String,
    /// Its place in the host's boot plan, from 1.
    pub boot: u32,
    /// How many times that place was tried (a killed run or a failed boot tries again).
    pub attempt: u32,
    pub event: BootEvent,
    pub at: String,
    /// The seed of the boot plan's order, so that a resumed run follows the same plan.
    pub seed: u64,
    /// The environment factors' levels the boot is for.
    pub wanted: IndexMap<String, String>,
    /// The boot the host answered in (`boot_id`), once back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub boot_id: Option<String>,
    /// The levels detected once back.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub detected: IndexMap<String, String>,
    /// Seconds from the reboot command to ssh answering in the new boot.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ready_seconds: Option<f64>,
    /// Why it was rejected or lost; the commands' output where they failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
    /// Adaptive boots, beyond the first `min` blocks: the trials of each cell the boot
    /// runs, decided once from the variance components and the measured costs and kept,
    /// so that a resumed run runs the same.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trials_per_boot: Option<u32>,
    /// A boot `margin bisect` asked for, outside the host's boot plan: the label of the
    /// bisection's sessions, and `boot` its place among that bisection's boots.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bisect: Option<String>,
}

impl Store {
    pub fn boots_path(&self) -> PathBuf {
        self.dir.join("boots.ndjson")
    }

    /// The boot log, to add records to.
    pub fn boot_appender(&self) -> Result<Appender, StoreError> {
        self.create()?;
        Appender::open(&self.boots_path(), 0)
    }

    /// Every boot record, and what was skipped while reading them (a torn line).
    pub fn boot_records(&self) -> Result<(Vec<BootRecord>, Vec<String>), StoreError> {
        let mut warnings = Vec::new();
        if !self.boots_path().exists() {
            return Ok((Vec::new(), warnings));
        }
        let records = read_log(&self.boots_path(), false, &mut warnings)?;
        Ok((records, warnings))
    }
}
