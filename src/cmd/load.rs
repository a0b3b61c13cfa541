//! Loading the experiment files a command is given: each validated and expanded, every
//! problem of every file said at once; a git factor's levels those its store pinned.

use std::path::{Path, PathBuf};

use super::{Error, check};
use crate::diag::Diagnostics;
use crate::plan::Plan;
use crate::spec::Experiment;

/// Load, validate and expand every file; all problems of all files, or the plans.
pub(crate) fn load_all(files: &[PathBuf], max_cells: usize) -> Result<Vec<(Experiment, Plan)>, Error> {
    load_all_in(files, max_cells, None)
}

/// [`load_all`], the git factors of each file taking the levels its store in `reports`
/// pinned when it first ran this file's text (docs/series.md, levels from a git range).
pub(crate) fn load_all_in(
    files: &[PathBuf],
    max_cells: usize,
    reports: Option<&Path>,
) -> Result<Vec<(Experiment, Plan)>, Error> {
    let load = |file: &Path| {
        let exp = crate::spec::load_file(file)?;
        let pins = match reports {
            Some(root) if !exp.git.is_empty() => {
                crate::store::Store::new(root, &exp.name).pinned_levels(&exp.source)
            }
            _ => Vec::new(),
        };
        if pins.is_empty() { Ok(exp) } else { crate::spec::load_file_pinned(file, &pins) }
    };
    let mut problems = Diagnostics::default();
    let mut out = Vec::new();
    for file in files {
        match load(file).and_then(|exp| {
            let plan = crate::plan::expand(&exp, max_cells)?;
            crate::plan::render::check_renders(&exp, &plan, check::RENDERED_CELLS)
                .map_err(Diagnostics::from)?;
            crate::parse::check_samples(&exp)?;
            Ok((exp, plan))
        }) {
            Ok(pair) => out.push(pair),
            Err(d) => problems.0.extend(d.0),
        }
    }
    Ok(problems.into_result(out)?)
}
