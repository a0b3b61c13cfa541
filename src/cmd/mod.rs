//! Command handlers: each loads what it needs, calls the stages, and prints.

pub mod check;
pub mod plan;

use std::fmt;

/// How a command ended, beyond success: decides the exit code.
#[derive(Debug)]
pub enum Failure {
    /// Bad input (a spec error, a usage error): exit code 2.
    Input(String),
    /// Writing the output failed (a closed pipe is not an error: see `main`).
    Output(std::io::Error),
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Failure::Input(text) => f.write_str(text),
            Failure::Output(e) => write!(f, "cannot write the output: {e}"),
        }
    }
}

impl std::error::Error for Failure {}

impl From<crate::diag::Diagnostics> for Failure {
    fn from(d: crate::diag::Diagnostics) -> Self {
        Failure::Input(d.to_string())
    }
}

/// `margin schema`.
pub fn schema(out: &mut dyn std::io::Write) -> std::io::Result<()> {
    writeln!(out, "{}", crate::spec::json_schema().trim_end())
}
