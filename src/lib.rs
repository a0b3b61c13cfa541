//! margin: declarative benchmark experiments with honest statistics.
//!
//! The crate follows the data: [`spec`] (the experiment file) → [`plan`] (the matrix of
//! cells) → [`run`] → [`store`] → [`analyze`] → [`report`], with [`parse`] turning tool
//! outputs into metrics. Each stage hands the next plain data.

pub(crate) mod analyze;
pub mod calibrate;
pub mod cli;
pub mod cmd;
pub mod diag;
pub(crate) mod jsontext;
pub(crate) mod outlook;
pub mod parse;
pub mod plan;
pub(crate) mod reason;
pub(crate) mod report;
pub mod run;
pub mod spec;
pub mod store;
pub(crate) mod summary;
