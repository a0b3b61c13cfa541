//! `margin run FILE --confirm A,B`: the experiment to run in place of the file's (the
//! confirmation [`crate::spec::confirm`] makes), and what the run says at its end.

use std::io::Write;
use std::path::Path;

use super::{Error, io};
use crate::plan::Plan;
use crate::spec::Experiment;
use crate::spec::confirm::{ConfirmError, confirmation, parse_pair};
use crate::summary::Summary;

/// The confirmation of `pair` (`A,B`) in place of the one experiment given.
pub(super) fn confirming(
    experiments: Vec<(Experiment, Plan)>,
    pair: &str,
    reports: &Path,
    max_cells: usize,
) -> Result<Vec<(Experiment, Plan)>, Error> {
    let [(exp, _)] = <[_; 1]>::try_from(experiments)
        .map_err(|_| Error::Input("--confirm confirms one experiment: give one file".into()))?;
    let refused = |e: ConfirmError| match e {
        ConfirmError::Derived(d) => Error::Spec(d),
        other => Error::Input(other.to_string()),
    };
    let (a, b) = parse_pair(pair).map_err(refused)?;
    let confirm = confirmation(&exp, &a, &b, reports).map_err(refused)?;
    let plan = crate::plan::expand(&confirm, max_cells)?;
    Ok(vec![(confirm, plan)])
}

/// The confirmation's answer, a line per metric and context, after the run's summary.
pub(super) fn say(summary: &Summary, out: &mut dyn Write) -> Result<(), Error> {
    for line in crate::report::series::confirmations(summary) {
        writeln!(out, "  {line}").map_err(io)?;
    }
    Ok(())
}
