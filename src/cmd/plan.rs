//! `margin plan FILE`: the matrix expanded, with where each cell stands from the store
//! (trials so far and to come, the time they should take, or why it cannot run on this
//! host), as a table followed by the boots margin would make, or as JSON. Runs no trial:
//! only the `probe:` commands of environment factors, which decide the cells this host
//! matches.

use std::io::Write;
use std::path::PathBuf;

use super::args::Reports;
use super::{Error, io};
use crate::outlook::{self, json::write_json, table::write_text};
use crate::plan::DEFAULT_MAX_CELLS;
use crate::run::RunOptions;
use crate::store::Store;

/// Cells listed on a terminal unless `--all`.
pub const TERMINAL_CELLS: usize = 50;

/// `margin plan`'s arguments.
#[derive(Debug, clap::Args)]
pub struct PlanArgs {
    /// The experiment file.
    pub file: PathBuf,
    /// List every cell (on a terminal only the first 50 are shown).
    #[arg(long)]
    pub all: bool,
    /// Print the plan as JSON: cells with ids, levels and state.
    #[arg(long)]
    pub json: bool,
    /// Refuse matrices with more cells than this.
    #[arg(long, default_value_t = DEFAULT_MAX_CELLS)]
    pub max_cells: usize,
    #[command(flatten)]
    pub reports: Reports,
}

/// `terminal`: stdout is a terminal, where only the first [`TERMINAL_CELLS`] are listed.
pub fn run(s: &PlanArgs, terminal: bool, out: &mut dyn Write) -> Result<(), Error> {
    let (exp, plan) =
        super::load_all_in(std::slice::from_ref(&s.file), s.max_cells, Some(&s.reports.root))?.remove(0);
    let store = Store::new(&s.reports.root, &exp.name);
    let (progress, ..) = store.progress(&plan)?;
    let outlook =
        outlook::outlook_of(&exp, &plan, progress.cells, progress.set_aside, &RunOptions::default())?.cells;
    let written = if s.json {
        write_json(&exp, &s.file, &plan, &outlook, out).map_err(io)
    } else {
        let limit = if s.all || !terminal { usize::MAX } else { TERMINAL_CELLS };
        write_text(&exp, &s.file, &plan, &outlook, limit, out).map_err(io).and_then(|()| {
            // the boots margin will make, in their order (docs/experiment-file.md, boots)
            let boots = crate::run::boot::outline(&exp, &plan, &store, &RunOptions::default(), false);
            if !boots.is_empty() {
                writeln!(out).map_err(io)?;
            }
            boots.iter().try_for_each(|line| writeln!(out, "{line}").map_err(io))
        })
    };
    // A plan of a million cells is millions of small allocations: the process gives them
    // back at once when it ends, which freeing them one by one took a tenth of
    // `plan --json`'s time to do first. `plan` is a command's last act.
    std::mem::forget(plan);
    written
}
