//! Diagnostics: errors in an experiment file, each tied to a file, line and column.
//!
//! Every bad input ends up here so that `check`, `plan` and `run` report problems the same
//! way: `file:line:col: message`, an optional hint line, all of them, not just the first.

use std::fmt;
use std::path::{Path, PathBuf};

/// A 1-based line and column in a source file. `0:0` means "the file as a whole".
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Pos {
    pub line: u32,
    pub col: u32,
}

impl Pos {
    pub const fn new(line: u32, col: u32) -> Self {
        Self { line, col }
    }
}

/// One problem found in an input file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    pub file: PathBuf,
    pub pos: Pos,
    pub message: String,
    pub hint: Option<String>,
}

impl Diagnostic {
    pub fn new(file: &Path, pos: Pos, message: impl Into<String>) -> Self {
        Self { file: file.to_path_buf(), pos, message: message.into(), hint: None }
    }

    #[must_use]
    pub fn with_hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let file = self.file.display();
        if self.pos.line == 0 {
            write!(f, "{file}: {}", self.message)?;
        } else {
            write!(f, "{file}:{}:{}: {}", self.pos.line, self.pos.col, self.message)?;
        }
        if let Some(hint) = &self.hint {
            write!(f, "\n  hint: {hint}")?;
        }
        Ok(())
    }
}

/// All the problems found in one or more files; the error type of loading and planning.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Diagnostics(pub Vec<Diagnostic>);

impl Diagnostics {
    pub fn push(&mut self, d: Diagnostic) {
        self.0.push(d);
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Sorted by file and position, so the output reads top to bottom like the file.
    pub fn sorted(mut self) -> Self {
        self.0.sort_by(|a, b| (&a.file, a.pos).cmp(&(&b.file, b.pos)));
        self.0.dedup();
        self
    }

    /// `Ok(value)` when nothing was reported, else the diagnostics.
    pub fn into_result<T>(self, value: T) -> Result<T, Diagnostics> {
        if self.0.is_empty() { Ok(value) } else { Err(self.sorted()) }
    }
}

impl From<Diagnostic> for Diagnostics {
    fn from(d: Diagnostic) -> Self {
        Self(vec![d])
    }
}

impl fmt::Display for Diagnostics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, d) in self.0.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "{d}")?;
        }
        Ok(())
    }
}

impl std::error::Error for Diagnostics {}

/// The characters of a value a message quotes at most, on its one line.
const EXCERPT_CHARS: usize = 60;

/// A value as a message quotes it: its first line, at most [`EXCERPT_CHARS`]
/// characters, with `…` where something was left out, so that a multi-line or huge
/// value (a whole script, a 100 kB level) does not flood the message; the position the
/// message names shows the rest.
pub fn excerpt(value: &str) -> String {
    let mut lines = value.lines();
    let first = lines.next().unwrap_or_default();
    let more_lines = lines.next().is_some();
    let mut out: String = first.chars().take(EXCERPT_CHARS).collect();
    if more_lines || out.len() < first.len() {
        out = out.trim_end().to_string();
        out.push('…');
    }
    out
}

/// Where a position inside a template (1-based `line`, 0-based `col`) is in the file,
/// the template's value starting at `start` (byte `offset` of the source, when known). A
/// block scalar (`|`) keeps its lines; a plain or quoted scalar starts after its key.
pub fn pos_in_template(source: &str, start: Pos, offset: Option<usize>, line: usize, col: usize) -> Pos {
    let quoted = offset.and_then(|o| source.as_bytes().get(o)).is_some_and(|b| *b == b'"' || *b == b'\'');
    let file_line = start.line as usize + line.saturating_sub(1);
    if line <= 1 {
        return Pos::new(start.line, start.col + col as u32 + u32::from(quoted));
    }
    let indent =
        source.lines().nth(file_line - 1).map_or(0, |l| l.chars().take_while(|c| c.is_whitespace()).count());
    Pos::new(file_line as u32, (indent + col + 1) as u32)
}

/// "did you mean `x`?" for a name that matches nothing, or the list of names that exist.
pub fn suggest<'a>(name: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<String> {
    let candidates: Vec<&str> = candidates.into_iter().collect();
    // Close enough: few edits for the length, or a strong common prefix (jaro-winkler).
    let close = |c: &str| {
        let edits = strsim::levenshtein(&name.to_lowercase(), &c.to_lowercase());
        edits <= (name.chars().count().max(c.chars().count()) / 3).max(1)
            || strsim::jaro_winkler(name, c) >= 0.85
    };
    let best = candidates
        .iter()
        .filter(|c| close(c))
        .map(|c| (strsim::jaro_winkler(name, c), *c))
        .max_by(|a, b| a.0.total_cmp(&b.0));
    match best {
        Some((_, c)) => Some(format!("did you mean `{c}`?")),
        None if candidates.is_empty() => None,
        None => Some(format!("expected one of: {}", candidates.join(", "))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggests_the_closest_name() {
        assert_eq!(suggest("runn", ["run", "setup"]).unwrap(), "did you mean `run`?");
        assert_eq!(suggest("zzz", ["run", "setup"]).unwrap(), "expected one of: run, setup");
        assert_eq!(suggest("zzz", []), None);
    }

    #[test]
    fn excerpts_keep_the_first_line_and_cut_long_ones() {
        assert_eq!(excerpt("4k"), "4k");
        assert_eq!(excerpt(""), "");
        assert_eq!(excerpt("dd if=/dev/zero\nsync\n"), "dd if=/dev/zero…");
        assert_eq!(excerpt("one line\n"), "one line", "a final newline is not a second line");
        let long = "a".repeat(200_000);
        assert_eq!(excerpt(&long), format!("{}…", "a".repeat(EXCERPT_CHARS)));
        // cut on characters, never inside one
        let wide = "é".repeat(100);
        assert_eq!(excerpt(&wide), format!("{}…", "é".repeat(EXCERPT_CHARS)));
        assert_eq!(excerpt(&"x".repeat(EXCERPT_CHARS)), "x".repeat(EXCERPT_CHARS));
        assert_eq!(excerpt("\nsecond"), "…");
    }

    #[test]
    fn renders_file_line_col_and_hint() {
        let d = Diagnostic::new(Path::new("e.yaml"), Pos::new(3, 7), "bad").with_hint("fix it");
        assert_eq!(d.to_string(), "e.yaml:3:7: bad\n  hint: fix it");
    }
}
