//! The analysis pipeline: the store's trials as a tidy polars table, grouped into cells,
//! each cell and comparison of an experiment computed by [`crate::stats`] into the
//! serialisable summary, with the methodology warnings, and the table exported for
//! other tools.
//!
//! [`table`] turns the store into the tidy table and groups it into cells; [`summarize`]
//! fills the [`Summary`](crate::summary::Summary) from them, each cell [`analysed`] and
//! each of the [`comparisons`] made, with the [`settings`] the experiment asks for, the
//! [`lint`] warnings and what the [`sessions`] recorded; [`export`](mod@export) writes the table for
//! other tools.
//! [`memory`] builds an experiment's store in memory, for the tests and the calibration
//! suite.

pub mod analysed;
pub mod comparisons;
pub mod export;
pub mod lint;
pub mod memory;
pub mod sessions;
pub mod settings;
pub mod stopping;
pub mod summarize;
pub mod table;

#[cfg(test)]
pub(crate) mod fixture;

pub use export::{Format, export};
pub use memory::MemoryStore;
pub use summarize::{AnalyzeError, summarize_store};
pub use table::Table;
