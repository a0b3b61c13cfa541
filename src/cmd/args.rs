//! Pieces of the command line (clap) kept apart from the commands' own: the store root
//! several commands take, and the words a run label may be.

use std::path::PathBuf;

/// Where the stores live.
#[derive(Debug, Clone, clap::Args)]
pub struct Reports {
    /// Folder holding one store per experiment (`reports/<name>/`); relative to the
    /// working directory.
    #[arg(
        long = "reports",
        env = "MARGIN_REPORTS",
        default_value = "reports",
        value_name = "DIR",
        value_parser = absolute
    )]
    pub root: PathBuf,
}

/// A path made absolute against the working directory, once, here at the edge: a trial
/// runs inside its workdir, so a relative store root would name another place there
/// (`{{ workdir }}`, raw outputs). Symbolic links are kept as written.
fn absolute(text: &str) -> Result<PathBuf, String> {
    if text.is_empty() {
        return Err("an empty path; give a folder, e.g. `reports`".to_string());
    }
    std::path::absolute(text).map_err(|e| format!("cannot make `{text}` absolute: {e}"))
}

/// A run label: letters, digits and `-_.+:@/`, at most 64 of them, so that it reads the
/// same in a selection (`label=v2`), a table and a shell.
pub(super) fn label(text: &str) -> Result<String, String> {
    let allowed = |c: char| c.is_alphanumeric() || "-_.+:@/".contains(c);
    match text.chars().find(|c| !allowed(*c)) {
        _ if text.is_empty() => Err("an empty label; give a word such as `v2` or `before-patch`".to_owned()),
        _ if text.chars().count() > 64 => {
            Err(format!("a label of {} characters; at most 64", text.chars().count()))
        }
        Some(c) => Err(format!("`{c}` in the label `{text}`: a label holds letters, digits and `-_.+:@/`")),
        None => Ok(text.to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::label;

    #[test]
    fn a_label_is_a_word() {
        assert_eq!(label("v2.1-rc+1"), Ok("v2.1-rc+1".to_owned()));
        assert!(label("").unwrap_err().contains("an empty label"));
        assert!(label("v 2").unwrap_err().contains("` ` in the label"));
        assert!(label("a,b").unwrap_err().contains("`,`"));
        assert!(label(&"x".repeat(65)).unwrap_err().contains("at most 64"));
    }
}
