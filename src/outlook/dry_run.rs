//! `margin run --dry-run`: what a run would do here, cell by cell, with the commands it
//! would run rendered (and the values they are given); nothing is executed.

use std::io::Write;

use super::CellOutlook;
use crate::diag::Diagnostics;
use crate::plan::render::{Builtins, Commands, render, templates};
use crate::plan::{LOCAL_HOST, Plan};
use crate::run::workdir::{self, WorkdirName};
use crate::run::{RunOptions, ssh_entry};
use crate::spec::Experiment;
use crate::store::Store;

/// Why a dry run could not say all it had to.
#[derive(Debug, thiserror::Error)]
pub(crate) enum DryRunError {
    /// A cell's commands do not render.
    #[error(transparent)]
    Spec(#[from] Diagnostics),
    /// Writing to the output failed.
    #[error("cannot write the output: {0}")]
    Output(#[source] std::io::Error),
}

fn io(e: std::io::Error) -> DryRunError {
    DryRunError::Output(e)
}

/// Each cell of `plan` as a run here would take it (`outlook`, one per cell): done,
/// pending and why, or its trials with the commands rendered as the next trial's; then
/// the boots margin would make.
pub(crate) fn write_dry_run(
    exp: &Experiment,
    plan: &Plan,
    outlook: &[CellOutlook],
    store: &Store,
    options: &RunOptions,
    out: &mut dyn Write,
) -> Result<(), DryRunError> {
    let templates = templates(exp);
    for (cell, look) in plan.cells.iter().zip(outlook) {
        let label = plan.label(cell);
        if look.done {
            writeln!(out, "  done     {label}").map_err(io)?;
            continue;
        }
        if let Some(why) = &look.pending {
            writeln!(out, "  pending  {label}: {why}").map_err(io)?;
            continue;
        }
        let (lo, hi) = look.remaining;
        let trials = if lo == hi { format!("{lo}") } else { format!("{lo}–{hi}") };
        let host = crate::plan::host_level(plan, cell);
        let placeholder = WorkdirName::placeholder(cell.id);
        // each session makes its own workdir; a gang's members each their own, on their host
        let on = |host: &str, name: &WorkdirName| match ssh_entry(exp, host) {
            Some(_) => format!("~/{}", name.remote(&exp.name)),
            None => workdir::local_root(store).join(name.as_str()).to_string_lossy().into_owned(),
        };
        let show = |out: &mut dyn Write, indent: &str, cmds: &Commands| -> Result<(), DryRunError> {
            // the values the commands refer to, as the commands' environment holds them
            for (name, value) in &cmds.env {
                let value = shlex::try_quote(value)
                    .map_or_else(|_| value.escape_debug().to_string(), |q| q.into_owned());
                writeln!(out, "{indent}with {name}={value}").map_err(io)?;
            }
            Ok(())
        };
        let repetition = look.attempts + 1;
        if let Some((name, gang)) = host.and_then(|h| exp.spec.gang(h).map(|g| (h, g))) {
            let members = gang.members();
            writeln!(
                out,
                "  run      {label}: {trials} trials of gang `{name}` ({} started together)",
                members.join(", ")
            )
            .map_err(io)?;
            for m in members {
                let workdir = on(m, &placeholder.member(m));
                let b = Builtins { workdir: &workdir, repetition, host: m };
                let cmds = render(&templates, exp, plan, cell, &b).map_err(Diagnostics::from)?;
                writeln!(out, "             on {m}: `{}`", cmds.run).map_err(io)?;
                show(out, "               ", &cmds)?;
            }
            continue;
        }
        // a host of `hosts:` with `ssh` renders as itself; any other is this machine
        let host = host.filter(|h| ssh_entry(exp, h).is_some()).unwrap_or(LOCAL_HOST);
        let workdir = on(host, &placeholder);
        let b = Builtins { workdir: &workdir, repetition, host };
        let cmds = render(&templates, exp, plan, cell, &b).map_err(Diagnostics::from)?;
        writeln!(out, "  run      {label}: {trials} trials of `{}`", cmds.run).map_err(io)?;
        show(out, "             ", &cmds)?;
    }
    // the boots margin would make, and the commands of the next (docs/experiment-file.md, boots)
    for line in crate::run::boot::outline(exp, plan, store, options, true) {
        writeln!(out, "{line}").map_err(io)?;
    }
    Ok(())
}
