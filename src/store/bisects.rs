//! The bisection log (`bisect.ndjson`): what each `margin bisect` was asked — its label,
//! factor, ends, metric and the other factors' levels — one line when a bisection starts,
//! so that `margin report` can replay it from the store's trials as the command does.
//! The bisection's state is never stored: it is a pure function of its trials.

use std::path::PathBuf;

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};

use super::{Appender, Store, StoreError, read_log};

/// One bisection as it was asked for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BisectRecord {
    /// The label of its sessions (`bisect:FACTOR:GOOD..BAD`).
    pub label: String,
    pub factor: String,
    pub good: String,
    pub bad: String,
    pub metric: String,
    /// The other factors' levels of the bisected cells.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub fixed: IndexMap<String, String>,
    pub at: String,
}

impl Store {
    pub fn bisects_path(&self) -> PathBuf {
        self.dir.join("bisect.ndjson")
    }

    /// Logs `record` unless a record of the same bisection (all but `at`) is there.
    pub fn log_bisect(&self, record: &BisectRecord) -> Result<(), StoreError> {
        let same = |r: &BisectRecord| BisectRecord { at: record.at.clone(), ..r.clone() } == *record;
        if self.bisect_records()?.0.iter().any(same) {
            return Ok(());
        }
        self.create()?;
        Appender::open(&self.bisects_path(), 0)?.append(record)
    }

    /// Every bisection record, and what was skipped while reading them (a torn line).
    pub fn bisect_records(&self) -> Result<(Vec<BisectRecord>, Vec<String>), StoreError> {
        let mut warnings = Vec::new();
        if !self.bisects_path().exists() {
            return Ok((Vec::new(), warnings));
        }
        let records = read_log(&self.bisects_path(), false, &mut warnings)?;
        Ok((records, warnings))
    }
}
