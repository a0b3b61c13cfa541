//! The command line (clap). Parsed arguments become plain settings before work starts.

use std::path::PathBuf;

use clap::{Parser, Subcommand};

use crate::plan::DEFAULT_MAX_CELLS;

/// Benchmark experiments with honest answers: a matrix of cells run in a fair order,
/// every raw output kept, and for each comparison a verdict with its margin of error.
#[derive(Debug, Parser)]
#[command(name = "margin", version, about, max_term_width = 100)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Validate experiment files; print every problem as `file:line:col: message`.
    Check {
        /// Experiment files (YAML).
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// Refuse matrices with more cells than this.
        #[arg(long, default_value_t = DEFAULT_MAX_CELLS)]
        max_cells: usize,
    },
    /// Expand the matrix and list the cells and trials to run; runs nothing.
    Plan {
        /// The experiment file.
        file: PathBuf,
        /// List every cell (on a terminal only the first 50 are shown).
        #[arg(long)]
        all: bool,
        /// Print the plan as JSON: cells with ids and levels.
        #[arg(long)]
        json: bool,
        /// Refuse matrices with more cells than this.
        #[arg(long, default_value_t = DEFAULT_MAX_CELLS)]
        max_cells: usize,
    },
    /// Print the JSON Schema of the experiment file, for editor completion.
    Schema,
}
