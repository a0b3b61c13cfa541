//! The analysis pipeline: the store's trials grouped into cells, each cell and
//! comparison of an experiment computed by [`stats`] into the serialisable
//! summary, with the methodology warnings, and the trials exported for other tools as a
//! tidy polars table.
//!
//! [`table`] groups the store's trial columns into cells (and builds the tidy table for
//! export); [`summarize`]
//! fills the [`Summary`](crate::summary::Summary) from them, each cell [`analysed`] and
//! each of the [`comparisons`] made, with the [`settings`] the experiment asks for, the
//! [`lint`] warnings and what the [`sessions`] recorded; [`export`](mod@export) writes the table for
//! other tools.
//! [`telemetry`] summarises what the hosts did during the trials and warns from it.
//! [`drift`] finds sessions whose trials changed while they ran.
//! [`prediction`] places a single trial against the measured trials of the other side;
//! [`effects`] pools each compared level's effect over the contexts it was compared in.
//! [`versus`] sets two stores, or two selections of one, side by side
//! (`margin compare`).
//! [`regimes`] publishes the cells of two regimes and marks the comparisons of mixtures.
//! [`memory`] builds an experiment's store in memory, for the tests and the calibration
//! suite.

pub(crate) mod analysed;
pub(crate) mod bisect;
pub(crate) mod boot_design;
pub(crate) mod boot_rule;
pub(crate) mod boots;
pub(crate) mod comparisons;
pub(crate) mod drift;
pub(crate) mod effects;
pub(crate) mod export;
pub(crate) mod history;
pub(crate) mod lint;
pub(crate) mod memory;
pub(crate) mod prediction;
pub(crate) mod prior;
pub(crate) mod regimes;
pub(crate) mod runs;
pub(crate) mod series;
pub(crate) mod sessions;
pub(crate) mod settings;
pub(crate) mod stopping;
pub(crate) mod summarize;
pub(crate) mod table;
pub(crate) mod telemetry;
pub(crate) mod versus;

pub(crate) use export::{Format, export};
pub(crate) use memory::MemoryStore;
#[cfg(test)]
pub(crate) use summarize::summarize_store;
pub(crate) use summarize::{AnalyzeError, statistics, summarize_owned};
pub(crate) use table::Table;
