//! margin: declarative benchmark experiments with honest statistics.
//!
//! The crate follows the data: [`spec`] (the experiment file) → [`plan`] (the matrix of
//! cells) → run → store → analyze → report. Each stage hands the next plain data.

pub mod analyze;
