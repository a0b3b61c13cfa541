//! The report: `report.md` from a minijinja template, `summary.json`, and `plots/*.svg`.
//!
//! Every number comes from the [`Summary`]; this module only chooses units, rounds,
//! lays out tables and draws. The built-in template is compiled in; an experiment may
//! replace it with `report.template` (a path relative to the experiment file), which sees
//! the same context and filters. Undefined names are errors, so a typo in a template
//! fails with its line instead of printing nothing.
//!
//! Here: writing the report's files ([`write_report`]) and its errors. [`view`] renders
//! report.md from the template, with what the template sees; [`figures`] chooses the
//! plots and their rows, [`plot`] draws them; [`header`] writes the opening lines (the
//! counts, the settings), [`answer`] each comparison's answer in words; the sections
//! have a file each ([`glance`], [`metrics`], [`regimes`], [`effects`], [`telemetry`],
//! [`facts`], [`failures`]); [`format`](mod@format) rounds and scales numbers;
//! [`write`](mod@write) puts a file in place whole; [`context`] lends the template the
//! summary; [`versus`] is `margin compare`'s Markdown.

mod answer;
pub(crate) mod bisect;
mod boots;
mod context;
pub(crate) mod effects;
mod facts;
mod failures;
mod figures;
pub(crate) mod format;
pub(crate) mod glance;
mod header;
pub(crate) mod history;
mod metrics;
pub(crate) mod plot;
mod regimes;
pub(crate) mod runs;
pub(crate) mod series;
mod series_plot;
mod telemetry;
pub(crate) mod versus;
mod view;
mod write;

pub(crate) use figures::plots;
pub(crate) use view::render;

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::plan::Plan;
use crate::spec::Experiment;
use crate::summary::Summary;
use write::{publish, write_file, write_partial};

/// The built-in report template.
pub(crate) const BUILTIN_TEMPLATE: &str = include_str!("report.md.j2");

/// Why the report could not be written.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    #[error("{}: {source}{}", path.display(), if source.kind() == io::ErrorKind::StorageFull {
        "\nthe disk is full; every trial is in the store: free some space and run `margin report` again"
    } else {
        ""
    })]
    Io { path: PathBuf, source: io::Error },
    #[error("{name}:{line}: {message}", line = line.map_or_else(|| "?".to_owned(), |l| l.to_string()))]
    Template { name: String, line: Option<usize>, message: String },
    #[error(transparent)]
    Plot(#[from] plot::PlotError),
}

impl ReportError {
    fn io(path: &Path, source: io::Error) -> Self {
        ReportError::Io { path: path.to_path_buf(), source }
    }

    fn template(name: &str, e: &minijinja::Error) -> Self {
        let message = match e.detail() {
            Some(detail) => format!("{}: {detail}", e.kind()),
            None => e.kind().to_string(),
        };
        ReportError::Template { name: name.to_owned(), line: e.line(), message }
    }
}

/// Writes the summary the analysis made as `report.md`, `summary.json` and
/// `plots/*.svg` into `out_dir` (the experiment's store folder). The report only formats:
/// every number is the summary's.
pub(crate) fn write_report(
    exp: &Experiment,
    plan: &Plan,
    summary: &Arc<Summary>,
    out_dir: &Path,
) -> Result<(), ReportError> {
    // summary.json is the largest file (136 MB at 10⁶ trials of four metrics): serialised
    // straight into its file, on a thread of its own while the plots and report.md are
    // made, and renamed into place after them, as when it was written last.
    let json = out_dir.join("summary.json");
    std::thread::scope(|scope| {
        let serialised = scope.spawn(|| {
            write_partial(&json, |out| {
                crate::summary::json::summary_to_writer(&mut *out, summary)?;
                out.write_all(b"\n")
            })
        });
        let made = plots_and_markdown(exp, plan, summary, out_dir);
        let partial = serialised.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        match (made, partial) {
            (Ok(()), Ok(partial)) => publish(&partial, &json),
            (Err(e), partial) => {
                if let Ok(partial) = partial {
                    let _ = fs::remove_file(partial);
                }
                Err(e)
            }
            (Ok(()), Err(e)) => Err(e),
        }
    })
}

/// The plots and report.md of [`write_report`].
fn plots_and_markdown(
    exp: &Experiment,
    plan: &Plan,
    summary: &Arc<Summary>,
    out_dir: &Path,
) -> Result<(), ReportError> {
    let plots = plots(exp, plan, summary)?;
    let dir = out_dir.join("plots");
    if plots.iter().any(|p| p.svg.is_ok()) {
        fs::create_dir_all(&dir).map_err(|e| ReportError::io(&dir, e))?;
    }
    for plot in &plots {
        if let Ok(svg) = &plot.svg {
            write_file(&out_dir.join(&plot.path), svg.as_bytes())?;
        }
    }
    let markdown = render(exp, summary, &plots, &now())?;
    write_file(&out_dir.join("report.md"), markdown.as_bytes())
}

/// Now, as report.md's last line says when it was written.
fn now() -> String {
    jiff::Timestamp::now().strftime("%Y-%m-%d %H:%M:%S UTC").to_string()
}

/// The answer and each metric's table list at most this many rows; summary.json has
/// them all. Ten thousand rows help no reader, and make a report too large to page.
pub(crate) const SHOWN: usize = 100;

#[cfg(test)]
mod tests;
