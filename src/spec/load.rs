//! Reading an experiment file: YAML → [`Spec`], with serde-saphyr's errors turned into
//! `file:line:col` diagnostics with hints, then semantic validation.

use std::path::Path;

use regex::Regex;
use std::sync::LazyLock;

use super::{Experiment, Level, Located, Spec, validate};
use crate::diag::{Diagnostic, Diagnostics, Pos, suggest};
use vocab::{Scalar, ScalarKind};

/// Load and validate one experiment file; its git factors take the resolutions pinned
/// beside it (a kept copy's, spec/git.rs), else git's now.
pub fn load_file(path: &Path) -> Result<Experiment, Diagnostics> {
    load_file_pinned(path, &[])
}

/// [`load_file`], its git factors taking the resolutions in `pins` first (those of the
/// store the file runs into), then those pinned beside it, else git's now.
pub fn load_file_pinned(path: &Path, pins: &[super::git::GitLevels]) -> Result<Experiment, Diagnostics> {
    let bytes = std::fs::read(path).map_err(|e| {
        Diagnostic::new(path, Pos::default(), format!("cannot read the experiment file: {e}"))
    })?;
    let source = String::from_utf8(bytes).map_err(|e| not_utf8(path, e.as_bytes(), e.utf8_error()))?;
    let mut all = pins.to_vec();
    all.extend(super::git::pins_beside(path));
    load_with(path, &source, &all)
}

/// Where the first byte that is not UTF-8 is: its line and column (in characters).
fn not_utf8(path: &Path, bytes: &[u8], e: std::str::Utf8Error) -> Diagnostic {
    let valid = &bytes[..e.valid_up_to()];
    let line = valid.iter().filter(|&&b| b == b'\n').count() + 1;
    let line_start = valid.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    let column = String::from_utf8_lossy(&valid[line_start..]).chars().count() + 1;
    let byte = bytes[e.valid_up_to()];
    Diagnostic::new(
        path,
        Pos::new(line as u32, column as u32),
        format!("the experiment file is not UTF-8: byte 0x{byte:02x} here starts no character"),
    )
    .with_hint(
        "YAML files are UTF-8 text; save the file as UTF-8 (`iconv -f latin1 -t utf-8` converts Latin-1)",
    )
}

/// Load and validate an experiment from text; `path` names it in messages (and a git
/// factor's repository is relative to it).
pub fn load_str(path: &Path, source: &str) -> Result<Experiment, Diagnostics> {
    load_with(path, source, &[])
}

fn load_with(path: &Path, source: &str, pins: &[super::git::GitLevels]) -> Result<Experiment, Diagnostics> {
    let mut spec = deserialize(path, source)?;
    respell(source, &mut spec);
    let git = super::git::resolve_all(path, &mut spec, pins)?;
    let name = match &spec.name {
        Some(n) => n.value.clone(),
        None => path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default(),
    };
    let exp = Experiment { path: path.to_path_buf(), name, source: source.to_string(), spec, git };
    validate::validate(&exp).into_result(())?;
    Ok(exp)
}

fn deserialize(path: &Path, source: &str) -> Result<Spec, Diagnostic> {
    let only_comments = source.lines().all(|l| l.trim().is_empty() || l.trim_start().starts_with('#'));
    if only_comments {
        return Err(Diagnostic::new(path, Pos::new(1, 1), "the experiment file is empty")
            .with_hint("an experiment needs at least `matrix:` and `run:`; see `margin schema`"));
    }
    let options = serde_saphyr::options! {
        strict_booleans: true,
        leading_zero_numbers_as_strings: true,
    };
    serde_saphyr::from_str_with_options::<Spec>(source, options).map_err(|e| {
        let pos = e.location().map(|l| Pos::new(l.line() as u32, l.column() as u32)).unwrap_or_default();
        let (message, hint) = explain(&e.without_snippet().to_string());
        // a type error has its own meaning; a syntax error may come from a bracket above
        let typed = ["expected", "unknown", "invalid", "duplicate"].iter().any(|w| message.starts_with(w));
        let hint = if typed { hint } else { hint.or_else(|| unclosed_bracket(source, pos.line as usize)) };
        let d = Diagnostic::new(path, pos, message);
        match hint {
            Some(h) => d.with_hint(h),
            None => d,
        }
    })
}

static AT_LINE: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"\s*at line \d+, column \d+\s*$").unwrap());
static UNKNOWN: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^unknown (field|variant) `([^`]*)`, expected (?:one of )?(.*)$").unwrap());
static DUPLICATE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^duplicate mapping key: (.*?), set DuplicateKeyPolicy.*$").unwrap());

/// Reword serde-saphyr's messages into what a user of this file needs to read.
fn explain(raw: &str) -> (String, Option<String>) {
    let msg = AT_LINE.replace(raw, "").into_owned();
    if let Some(c) = UNKNOWN.captures(&msg) {
        let what = if &c[1] == "field" { "key" } else { "value" };
        let expected: Vec<&str> =
            c[3].split(',').map(|s| s.trim().trim_matches('`')).filter(|s| !s.is_empty()).collect();
        return (format!("unknown {what} `{}`", &c[2]), suggest(&c[2], expected));
    }
    if let Some(c) = DUPLICATE.captures(&msg) {
        return (format!("duplicate key `{}`", &c[1]), Some("each key may appear once per map".into()));
    }
    let reworded = match msg.as_str() {
        "invalid u32" | "invalid u64" => "expected a whole number, 0 or more".to_string(),
        "invalid u16" => "expected a port number (1–65535)".to_string(),
        "invalid f64" => "expected a number".to_string(),
        "expected string scalar" => "expected a string".to_string(),
        "expected mapping start" => "expected a map (`key: value` entries)".to_string(),
        "expected sequence start" => "expected a list (`[a, b]` or `- a` lines)".to_string(),
        _ => msg,
    };
    (reworded, None)
}

/// A `[` or `{` opened on a line before `line` and never closed in the whole file: the
/// usual cause of a puzzling syntax error a line or two below it (`n: [1, 2` then
/// `run: …`). Block scalars (`run: |`) are text, and a quote counts only where it starts
/// a scalar (`[it's, b]` has none).
fn unclosed_bracket(source: &str, line: usize) -> Option<String> {
    let mut open: Vec<(char, usize, usize)> = Vec::new();
    // the indentation of the key whose block scalar the lines are in, if any
    let mut block: Option<usize> = None;
    for (l, text) in source.lines().enumerate() {
        let indent = text.len() - text.trim_start().len();
        if let Some(key) = block {
            if text.trim().is_empty() || indent > key {
                continue;
            }
            block = None;
        }
        let (mut quote, mut prev) = (None, ' ');
        let chars: Vec<char> = text.chars().collect();
        let mut skip = false;
        for (c, &ch) in chars.iter().enumerate() {
            if std::mem::take(&mut skip) {
                continue;
            }
            match (quote, ch) {
                // `''` inside single quotes and `\"` inside double ones are quotes written
                (Some('\''), '\'') if chars.get(c + 1) == Some(&'\'') => skip = true,
                (Some('"'), '\\') => skip = true,
                (Some(q), _) if ch == q => quote = None,
                (Some(_), _) => {}
                (None, '\'' | '"') if " [{,:".contains(prev) => quote = Some(ch),
                (None, '#') if prev == ' ' => break, // a comment
                (None, '[' | '{') => open.push((ch, l + 1, c + 1)),
                (None, ']' | '}') => {
                    open.pop();
                }
                _ => {}
            }
            prev = ch;
        }
        let code = text.split(" #").next().unwrap_or(text).trim_end();
        if quote.is_none()
            && code
                .trim_end_matches(['-', '+', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9'])
                .ends_with(['|', '>'])
        {
            block = Some(indent);
        }
    }
    let &(ch, l, c) = open.iter().rev().find(|(_, l, _)| *l < line)?;
    let close = if ch == '[' { ']' } else { '}' };
    Some(format!("the `{ch}` at line {l}, column {c} is never closed: it ends with `{close}`"))
}

/// Numbers and booleans come through serde already parsed; put back their spelling, so
/// `1.50` stays `1.50` in ids and reports. A value reached through an alias (`*n`) is
/// spelled as its anchor (`&n 1.50`) wrote it.
fn respell(source: &str, spec: &mut Spec) {
    let text = |span: Option<(usize, usize)>| span.and_then(|(o, l)| source.get(o..o + l));
    let fix = |s: &mut Scalar, span: Option<(usize, usize)>| {
        if s.kind != ScalarKind::Str
            && let Some(t) = text(span)
        {
            let t = t.trim();
            let t = match t.strip_prefix('*') {
                Some(alias) => anchored(source, alias),
                None => Some(t),
            };
            if let Some(t) = t.filter(|t| !t.is_empty() && !t.starts_with(['"', '\'', '*', '&'])) {
                s.text = t.to_string();
            }
        }
    };
    let fix_located = |s: &mut Located<Scalar>| fix(&mut s.value, s.span);
    for factor in &mut spec.matrix.value.factors {
        for level in &mut factor.levels {
            let span = level.span;
            match &mut level.value {
                Level::Scalar(s) => fix(s, span),
                Level::Zip(map) => map.values_mut().for_each(fix_located),
            }
        }
    }
    let m = &mut spec.matrix.value;
    for entry in m.include.iter_mut().chain(m.exclude.iter_mut()) {
        entry.value.values_mut().for_each(fix_located);
    }
    for env in spec.environment.values_mut() {
        env.value.map.values_mut().for_each(fix_located);
        env.value.default.iter_mut().for_each(fix_located);
    }
    for c in &mut spec.analysis.compare {
        fix_located(&mut c.value.baseline);
    }
    spec.timeout.iter_mut().for_each(fix_located);
    if let Some(r) = &mut spec.repetitions
        && let super::RepetitionsSpec::Adaptive { target, until, .. } = &mut r.value
    {
        target.iter_mut().chain(until.iter_mut()).for_each(fix_located);
    }
    spec.analysis.threshold.iter_mut().for_each(fix_located);
}

/// The spelling of the scalar the anchor `&name` marks: the text after it up to the end
/// of the flow item or line. The last anchor of that name before use wins in YAML; a
/// file defining one name twice is rare enough that the first is taken, and a spelling
/// that is not the value's keeps serde's text (the caller checks it is a plain scalar).
fn anchored<'s>(source: &'s str, name: &str) -> Option<&'s str> {
    let mut rest = source;
    while let Some(at) = rest.find('&') {
        let after = &rest[at + 1..];
        if let Some(tail) = after.strip_prefix(name)
            && tail.starts_with([' ', '\t'])
        {
            let tail = tail.trim_start_matches([' ', '\t']);
            let end = tail.find([',', ']', '}', '\n', '\r']).unwrap_or(tail.len());
            let token = tail[..end].split(" #").next().unwrap_or_default().trim();
            return Some(token);
        }
        rest = after;
    }
    None
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::{anchored, load_str, unclosed_bracket};
    use crate::spec::Level;
    use vocab::ScalarKind;

    /// Anchors, aliases and merge keys are standard YAML: a number reached through an
    /// alias is that number, not the alias's text.
    #[test]
    fn aliases_mean_what_their_anchors_say() {
        let text = "matrix:\n  x: [&n 4, 8]\n  y: [*n, &f 1.50]\n  z: [*f]\nrun: echo {{ x }} {{ y }}\n\
                    analysis:\n  compare:\n    - factor: x\n      baseline: *n\n";
        let exp = load_str(Path::new("a.yaml"), text).unwrap();
        let levels = |i: usize| -> Vec<(ScalarKind, String)> {
            exp.spec.matrix.value.factors[i]
                .levels
                .iter()
                .map(|l| match &l.value {
                    Level::Scalar(s) => (s.kind, s.text.clone()),
                    Level::Zip(_) => panic!("a zip"),
                })
                .collect()
        };
        assert_eq!(levels(1), [(ScalarKind::Int, "4".into()), (ScalarKind::Float, "1.50".into())]);
        assert_eq!(levels(2), [(ScalarKind::Float, "1.50".into())]);
        assert_eq!(exp.spec.analysis.compare[0].value.baseline.value.text, "4");
    }

    #[test]
    fn a_byte_that_is_not_utf8_is_pointed_at() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("latin1.yaml");
        std::fs::write(&path, b"matrix:\n  who: [Jos\xe9, b]\nrun: echo\n").unwrap();
        let err = super::load_file(&path).unwrap_err().to_string();
        assert!(err.contains("latin1.yaml:2:12: the experiment file is not UTF-8: byte 0xe9"), "{err}");
    }

    #[test]
    fn merge_keys_merge() {
        let text = "hosts:\n  a: &base { ssh: root@h1, port: 2222 }\n  b: { <<: *base, ssh: root@h2 }\n\
                    matrix:\n  host: [a, b]\nrun: echo\n";
        let exp = load_str(Path::new("m.yaml"), text).unwrap();
        let b = &exp.spec.hosts.iter().find(|(k, _)| k.value == "b").unwrap().1.value;
        assert_eq!(b.port, Some(2222));
        assert_eq!(b.ssh.as_ref().map(|s| s.value.as_str()), Some("root@h2"));
    }

    #[test]
    fn an_anchor_gives_its_spelling_to_its_aliases() {
        assert_eq!(anchored("x: [&n 4, 8]\ny: [*n, 16]\n", "n"), Some("4"));
        assert_eq!(anchored("a: &big 1.50 # comment\nb: *big\n", "big"), Some("1.50"));
        assert_eq!(anchored("a: &b0 x\nb: &b 2\n", "b"), Some("2"));
        assert_eq!(anchored("a: 1\n", "n"), None);
    }

    #[test]
    fn an_unclosed_bracket_above_the_error_is_pointed_at() {
        let hint = unclosed_bracket("matrix:\n  n: [1, 2\nrun: echo\n", 3).unwrap();
        assert_eq!(hint, "the `[` at line 2, column 6 is never closed: it ends with `]`");
        // closed on a later line: a flow list may span lines
        assert_eq!(unclosed_bracket("n: [1,\n  2]\nrun: x: y\n", 3), None);
        // a block scalar is text; an apostrophe inside a word quotes nothing
        assert_eq!(unclosed_bracket("run: |\n  echo {\nrepetitions: x\n", 3), None);
        assert_eq!(unclosed_bracket("m: [it's, b]\nx: y: z\n", 2), None);
        // one on the error's own line is the parser's to describe
        assert_eq!(unclosed_bracket("n: [1, 2: 3\n", 1), None);
        // quotes written inside quoted scalars
        assert_eq!(unclosed_bracket("n: ['it''s [x', 2]\nr: x: y\n", 2), None);
        assert_eq!(unclosed_bracket("n: [\"a \\\" [b\", 2]\nr: x: y\n", 2), None);
    }
}
