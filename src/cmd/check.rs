//! `margin check FILE…`: load, validate and expand each file; report every problem.

use std::io::Write;
use std::path::PathBuf;

use super::{Error, io};
use crate::diag::Diagnostics;
use crate::plan::{self, DEFAULT_MAX_CELLS};
use crate::spec;

/// Cells whose commands `check` renders, to catch what only rendering finds.
pub const RENDERED_CELLS: usize = 100;

/// `margin check`'s arguments.
#[derive(Debug, clap::Args)]
pub struct CheckArgs {
    /// Experiment files (YAML).
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// Refuse matrices with more cells than this.
    #[arg(long, default_value_t = DEFAULT_MAX_CELLS)]
    pub max_cells: usize,
}

pub fn run(args: &CheckArgs, out: &mut dyn Write) -> Result<(), Error> {
    let files = &args.files;
    let mut problems = Diagnostics::default();
    let mut bad_files = 0;
    for file in files {
        let before = problems.len();
        match spec::load_file(file) {
            Err(d) => problems.0.extend(d.0),
            Ok(exp) => match plan::expand(&exp, args.max_cells) {
                Err(d) => problems.0.extend(d.0),
                Ok(plan) => match plan::render::check_renders(&exp, &plan, RENDERED_CELLS)
                    .map_err(Diagnostics::from)
                    .and_then(|()| crate::parse::check_samples(&exp))
                {
                    Err(d) => problems.0.extend(d.0),
                    Ok(()) => {
                        writeln!(out, "ok {}: {plan}", file.display()).map_err(io)?;
                        if plan::render::setup_differs(&exp, &plan, RENDERED_CELLS)
                            && let Some((pos, message, hint)) = exp.spec.interleaved_setup()
                        {
                            let note = crate::diag::Diagnostic::new(&exp.path, pos, message).with_hint(hint);
                            writeln!(out, "note: {note}").map_err(io)?;
                        }
                    }
                },
            },
        }
        if problems.len() > before {
            bad_files += 1;
        }
    }
    if problems.is_empty() {
        return Ok(());
    }
    let n = problems.len();
    let summary = format!(
        "{n} {} in {bad_files} of {} {}",
        if n == 1 { "problem" } else { "problems" },
        files.len(),
        if files.len() == 1 { "file" } else { "files" }
    );
    Err(Error::Check { problems, summary })
}
