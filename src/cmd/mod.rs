//! Command handlers: each loads what it needs, calls the stages, and prints.

pub mod answer;
pub mod calibrate;
pub mod check;
pub mod import;
pub mod plan;
pub mod reparse;
pub mod report;
pub mod run;
pub mod status;

use std::fmt;
use std::path::PathBuf;

use crate::diag::Diagnostics;
use crate::plan::Plan;
use crate::spec::Experiment;

/// How a command ended, beyond success: decides the exit code.
#[derive(Debug)]
pub enum Failure {
    /// Bad input (a spec error, a usage error, a locked store, a full disk): exit code 2.
    Input(String),
    /// Finished, but some trials failed or cells were abandoned: exit code 1.
    Trials,
    /// Stopped by Ctrl-C after recording the trial under way: exit code 130.
    Interrupted,
    /// Writing the output failed (a closed pipe is not an error: see `main`).
    Output(std::io::Error),
}

impl Failure {
    pub fn exit_code(&self) -> u8 {
        match self {
            Failure::Input(_) => 2,
            Failure::Trials | Failure::Output(_) => 1,
            Failure::Interrupted => 130,
        }
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Failure::Input(text) => f.write_str(text),
            Failure::Trials => f.write_str("some trials failed; see above"),
            Failure::Interrupted => f.write_str("interrupted; run the same command again to resume"),
            Failure::Output(e) => write!(f, "cannot write the output: {e}"),
        }
    }
}

impl std::error::Error for Failure {}

impl From<Diagnostics> for Failure {
    fn from(d: Diagnostics) -> Self {
        Failure::Input(d.to_string())
    }
}

pub(crate) fn io(e: std::io::Error) -> Failure {
    Failure::Output(e)
}

/// Load, validate and expand every file; all problems of all files, or the plans.
pub(crate) fn load_all(files: &[PathBuf], max_cells: usize) -> Result<Vec<(Experiment, Plan)>, Failure> {
    let mut problems = Diagnostics::default();
    let mut out = Vec::new();
    for file in files {
        match crate::spec::load_file(file).and_then(|exp| {
            let plan = crate::plan::expand(&exp, max_cells)?;
            crate::plan::render::check_renders(&exp, &plan, check::RENDERED_CELLS)
                .map_err(Diagnostics::from)?;
            Ok((exp, plan))
        }) {
            Ok(pair) => out.push(pair),
            Err(d) => problems.0.extend(d.0),
        }
    }
    problems.into_result(out).map_err(Failure::from)
}

/// Every `experiments/*.yaml` (or `.yml`), sorted: the files `status` and name lookups use.
pub(crate) fn experiment_files() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir("experiments")
        .map(|d| {
            d.filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|e| e == "yaml" || e == "yml"))
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    files
}

/// Seconds as `1.2 s`, `3 min 20 s`, `1 h 05 min`.
pub(crate) fn duration(seconds: f64) -> String {
    if seconds < 60.0 {
        format!("{seconds:.1} s")
    } else if seconds < 3600.0 {
        format!("{} min {:02} s", (seconds / 60.0) as u64, (seconds % 60.0) as u64)
    } else {
        format!("{} h {:02} min", (seconds / 3600.0) as u64, ((seconds % 3600.0) / 60.0) as u64)
    }
}

/// `margin schema`.
pub fn schema(out: &mut dyn std::io::Write) -> std::io::Result<()> {
    writeln!(out, "{}", crate::spec::json_schema().trim_end())
}
