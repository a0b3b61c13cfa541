//! Command templates: minijinja with strict undefined names and shell quoting.
//!
//! Commands (`setup`, `run`, …) are rendered with every substituted value quoted for the
//! shell, so a level `a b; rm -rf /` stays one argument; `| safe` opts out. Between the
//! command's own quotes the quoted word is escaped for them as well (`$`, backquotes, `"`
//! and `\` inside double quotes, `'` inside single ones), so those quotes hand it on
//! unchanged: nothing in a value is expanded there, and a shell that reads the quoted
//! string (`sh -c "…"`, `ssh host '…'`) still gets one word. `vars` are
//! rendered without quoting: they are values, and get quoted where a command uses them.
//! `where` filters are minijinja expressions over the same names.

use std::collections::{BTreeMap, HashSet};

use minijinja::value::Value;
use minijinja::{Environment, Error, ErrorKind, UndefinedBehavior};

use crate::spec::{Scalar, ScalarKind};

/// A template problem, with the line inside the template (1-based) when known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TemplateError {
    pub line: Option<usize>,
    pub message: String,
}

impl From<Error> for TemplateError {
    fn from(e: Error) -> Self {
        let message = match e.detail() {
            Some(detail) => format!("{}: {detail}", kind_text(e.kind())),
            None => kind_text(e.kind()).to_string(),
        };
        TemplateError { line: e.line(), message }
    }
}

fn kind_text(kind: ErrorKind) -> String {
    let text = kind.to_string();
    // minijinja's kinds read "syntax error", "undefined value", …
    text.trim_end_matches('.').to_string()
}

/// The two template environments margin renders with.
pub struct Templates {
    commands: Environment<'static>,
    values: Environment<'static>,
}

impl Default for Templates {
    fn default() -> Self {
        Self::new()
    }
}

impl Templates {
    pub fn new() -> Self {
        let mut commands = Environment::new();
        commands.set_undefined_behavior(UndefinedBehavior::Strict);
        commands.set_formatter(|out, _state, value| {
            let text = if value.is_safe() { value.to_string() } else { word(value)? };
            out.write_str(&text).map_err(|_| Error::new(ErrorKind::WriteFailure, "write failed"))
        });
        commands.add_filter(IN_DOUBLE_QUOTES, in_double_quotes);
        commands.add_filter(IN_SINGLE_QUOTES, in_single_quotes);
        commands.add_filter(IN_HEREDOC, in_heredoc);
        commands.add_filter(ON_ONE_LINE, on_one_line);
        commands.add_filter(IN_BACKQUOTES, in_backquotes);
        let mut values = Environment::new();
        values.set_undefined_behavior(UndefinedBehavior::Strict);
        Self { commands, values }
    }

    /// The top-level names a template reads (loop variables and `set` names excluded);
    /// compiling it, a syntax error carries the template's line.
    pub fn names(&self, source: &str) -> Result<HashSet<String>, TemplateError> {
        let t = self.commands.template_from_str(source)?;
        Ok(t.undeclared_variables(false))
    }

    /// A command template as it is compiled: each `{{ … }}` inside the command's own
    /// quotes gets the filter that quotes for that place.
    fn command_source(source: &str) -> std::borrow::Cow<'_, str> {
        quote_by_place(source)
    }

    /// Environments with these templates compiled once, for rendering them many times
    /// (every trial renders the same few commands); a source that does not compile is
    /// left out and reports its error when rendered.
    pub fn with_sources<'a>(sources: impl IntoIterator<Item = &'a str>) -> Self {
        let mut t = Self::new();
        for source in sources {
            let compiled = Self::command_source(source).into_owned();
            let _ = t.commands.add_template_owned(source.to_string(), compiled);
            let _ = t.values.add_template_owned(source.to_string(), source.to_string());
        }
        t
    }

    /// Render a command: every value substituted is shell-quoted unless `| safe`.
    pub fn render_command(&self, source: &str, ctx: &Context) -> Result<String, TemplateError> {
        match self.commands.get_template(source) {
            Ok(t) => Ok(t.render(ctx.to_value())?),
            Err(_) => {
                let compiled = Self::command_source(source);
                Ok(self.commands.template_from_str(&compiled)?.render(ctx.to_value())?)
            }
        }
    }

    /// Render a var: plain text, no quoting.
    pub fn render_value(&self, source: &str, ctx: &Context) -> Result<String, TemplateError> {
        Self::render_in(&self.values, source, ctx)
    }

    fn render_in(env: &Environment<'static>, source: &str, ctx: &Context) -> Result<String, TemplateError> {
        match env.get_template(source) {
            Ok(t) => Ok(t.render(ctx.to_value())?),
            Err(_) => Ok(env.template_from_str(source)?.render(ctx.to_value())?),
        }
    }

    /// Compile a `where` expression once, to evaluate it for many cells.
    pub fn expression<'a>(&'a self, source: &'a str) -> Result<Filter<'a>, TemplateError> {
        let expr = self.values.compile_expression(source)?;
        Ok(Filter { expr })
    }
}

const IN_DOUBLE_QUOTES: &str = "__margin_in_double_quotes";
const IN_SINGLE_QUOTES: &str = "__margin_in_single_quotes";
const IN_HEREDOC: &str = "__margin_in_heredoc";
const ON_ONE_LINE: &str = "__margin_on_one_line";
const IN_BACKQUOTES: &str = "__margin_in_backquotes";

/// A value as one shell word: single-quoted when it holds anything the shell would read.
fn word(value: &Value) -> Result<String, Error> {
    shlex::try_quote(&value.to_string())
        .map(|q| q.into_owned())
        .map_err(|_| Error::new(ErrorKind::InvalidOperation, "a value holds a NUL byte"))
}

/// `word`, each of `specials` preceded by a backslash.
fn escaped_word(value: &Value, specials: &[char]) -> Result<String, Error> {
    let word = word(value)?;
    let mut out = String::with_capacity(word.len() + 8);
    for c in word.chars() {
        if specials.contains(&c) {
            out.push('\\');
        }
        out.push(c);
    }
    Ok(out)
}

/// A line break would end a comment or a here-document, and what follows would run.
fn one_line(value: &Value, place: &str) -> Result<(), Error> {
    if value.to_string().contains('\n') {
        return Err(Error::new(
            ErrorKind::InvalidOperation,
            format!("a value with a line break {place}: what follows it would run as a command"),
        ));
    }
    Ok(())
}

/// A value inside the command's own double quotes: quoted as a word, then `$`, backquote,
/// `"` and `\` escaped, so the double quotes pass the word through unchanged — no
/// expansion here, and one word for a shell reading the string (`sh -c "cat {{ f }}"`).
fn in_double_quotes(value: Value) -> Result<Value, Error> {
    if value.is_safe() {
        return Ok(value);
    }
    Ok(Value::from_safe_string(escaped_word(&value, &['$', '`', '"', '\\'])?))
}

/// A value inside the command's own single quotes: quoted as a word, each `'` of it
/// written as `'\''` (end the quotes, a quote, open them again), so the word passes
/// through unchanged (`ssh host 'cat {{ f }}'`).
fn in_single_quotes(value: Value) -> Result<Value, Error> {
    if value.is_safe() {
        return Ok(value);
    }
    Ok(Value::from_safe_string(word(&value)?.replace('\'', r"'\''")))
}

/// A value in a here-document whose delimiter is not quoted, where `$`, backquotes and
/// `\` still work: quoted as a word, those escaped, on one line.
fn in_heredoc(value: Value) -> Result<Value, Error> {
    if value.is_safe() {
        return Ok(value);
    }
    one_line(&value, "in a here-document")?;
    Ok(Value::from_safe_string(escaped_word(&value, &['$', '`', '\\'])?))
}

/// A value inside backquotes, which end at the first unescaped backquote whatever quotes
/// come between: quoted as a word, then backquotes and `\` escaped.
fn in_backquotes(value: Value) -> Result<Value, Error> {
    if value.is_safe() {
        return Ok(value);
    }
    Ok(Value::from_safe_string(escaped_word(&value, &['`', '\\'])?))
}

/// A value where nothing is expanded (a quoted here-document, a shell comment): the
/// word, on one line.
fn on_one_line(value: Value) -> Result<Value, Error> {
    if value.is_safe() {
        return Ok(value);
    }
    one_line(&value, "in a comment or a quoted here-document")?;
    Ok(Value::from_safe_string(word(&value)?))
}

/// What the shell makes of the text at some point of a command.
#[derive(Clone, PartialEq, Eq)]
enum Place {
    /// Words: the top level, or inside `$( … )` (with its open parentheses) or backquotes.
    Bare {
        sub: Option<Sub>,
    },
    SingleQuoted,
    /// `$'…'`, where `\` escapes.
    AnsiQuoted,
    DoubleQuoted,
    /// A `#` comment, to the end of the line.
    Comment,
    /// The body of a here-document, to the line that is its delimiter.
    Heredoc {
        delimiter: String,
        quoted: bool,
        tabs: bool,
    },
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Sub {
    /// `$(`, with the `(` opened inside it since.
    Dollar(u32),
    Backquote,
}

const BARE: Place = Place::Bare { sub: None };

/// Follow the shell's quoting through the template's text (tags and comments are not
/// text; `{% raw %}` is copied as it is) and wrap each `{{ … }}` in the filter that quotes
/// for its place: bare, it gets the formatter's word; inside quotes, `$( … )`, a comment
/// or a here-document, what that place needs. The text is followed as written: a quote
/// opened in one branch of an `{% if %}` counts for what follows the branch.
fn quote_by_place(source: &str) -> std::borrow::Cow<'_, str> {
    if !source.contains(['"', '\'', '#', '<', '$', '`']) {
        return std::borrow::Cow::Borrowed(source);
    }
    let mut out = String::with_capacity(source.len() + 64);
    let mut stack = vec![BARE];
    // here-documents named on this line, whose bodies start at the next line
    let mut heredocs: Vec<Place> = Vec::new();
    let mut prev: Option<char> = None;
    let mut rest = source;
    while let Some(c) = rest.chars().next() {
        if rest.starts_with("{#") || rest.starts_with("{%") {
            let end = tag_end(rest);
            let tag = &rest[..end];
            let body = if is_raw(tag) { raw_end(&rest[end..]) } else { 0 };
            out.push_str(&rest[..end + body]);
            rest = &rest[end + body..];
            continue;
        }
        if rest.starts_with("{{") {
            let end = tag_end(rest);
            let filter = match stack.last() {
                Some(Place::SingleQuoted | Place::AnsiQuoted) => Some(IN_SINGLE_QUOTES),
                Some(Place::DoubleQuoted) => Some(IN_DOUBLE_QUOTES),
                Some(Place::Heredoc { quoted: false, .. }) => Some(IN_HEREDOC),
                Some(Place::Comment | Place::Heredoc { quoted: true, .. }) => Some(ON_ONE_LINE),
                Some(Place::Bare { sub: Some(Sub::Backquote) }) => Some(IN_BACKQUOTES),
                _ => None,
            };
            match filter {
                Some(filter) => wrap(&mut out, &rest[..end], filter),
                None => out.push_str(&rest[..end]),
            }
            rest = &rest[end..];
            prev = Some('}');
            continue;
        }
        let top = stack.last().cloned().unwrap_or(BARE);
        let next = rest[c.len_utf8()..].chars().next();
        let mut len = c.len_utf8();
        match (&top, c) {
            (Place::Heredoc { delimiter, tabs, .. }, _) if prev.is_none_or(|p| p == '\n') => {
                let line = rest.split('\n').next().unwrap_or(rest);
                let line_text = if *tabs { line.trim_start_matches('\t') } else { line };
                if line_text == delimiter {
                    stack.pop();
                    len = line.len();
                }
            }
            (Place::Heredoc { .. }, _) => {}
            (Place::Comment, '\n') => {
                stack.pop();
                stack.extend(heredocs.drain(..).rev());
            }
            (Place::Comment, _) => {}
            (Place::SingleQuoted, '\'') => {
                stack.pop();
            }
            (Place::SingleQuoted, _) => {}
            (Place::AnsiQuoted, '\\') => len += next.map_or(0, char::len_utf8),
            (Place::AnsiQuoted, '\'') => {
                stack.pop();
            }
            (Place::AnsiQuoted, _) => {}
            (Place::Bare { .. } | Place::DoubleQuoted, '\\') => {
                // the next character is taken literally — unless it starts a template tag
                if !["{{", "{%", "{#"].iter().any(|t| rest[1..].starts_with(t)) {
                    len += next.map_or(0, char::len_utf8);
                }
            }
            (_, '$') if next == Some('(') => {
                stack.push(Place::Bare { sub: Some(Sub::Dollar(0)) });
                len += 1;
            }
            (Place::Bare { sub: Some(Sub::Backquote) }, '`') => {
                stack.pop();
            }
            (Place::Bare { .. } | Place::DoubleQuoted, '`') => {
                stack.push(Place::Bare { sub: Some(Sub::Backquote) })
            }
            (Place::DoubleQuoted, '"') => {
                stack.pop();
            }
            (Place::DoubleQuoted, _) => {}
            (Place::Bare { .. }, '$') if next == Some('\'') => {
                stack.push(Place::AnsiQuoted);
                len += 1;
            }
            (Place::Bare { .. }, '\'') => stack.push(Place::SingleQuoted),
            (Place::Bare { .. }, '"') => stack.push(Place::DoubleQuoted),
            (Place::Bare { sub: Some(Sub::Dollar(depth)) }, '(') => {
                *stack.last_mut().expect("a place") = Place::Bare { sub: Some(Sub::Dollar(depth + 1)) };
            }
            (Place::Bare { sub: Some(Sub::Dollar(depth)) }, ')') => {
                if *depth == 0 {
                    stack.pop();
                } else {
                    *stack.last_mut().expect("a place") = Place::Bare { sub: Some(Sub::Dollar(depth - 1)) };
                }
            }
            (Place::Bare { .. }, '#') if prev.is_none_or(|p| p.is_whitespace() || ";&|()".contains(p)) => {
                stack.push(Place::Comment);
            }
            (Place::Bare { .. }, '<') if rest.starts_with("<<") && !rest.starts_with("<<<") => {
                let (taken, heredoc) = heredoc_start(rest);
                len = taken;
                heredocs.extend(heredoc);
            }
            (Place::Bare { .. }, '\n') => stack.extend(heredocs.drain(..).rev()),
            (Place::Bare { .. }, _) => {}
        }
        out.push_str(&rest[..len]);
        prev = rest[..len].chars().last();
        rest = &rest[len..];
    }
    std::borrow::Cow::Owned(out)
}

/// `<<WORD`, `<<-WORD`, `<<'WORD'`, `<<"WORD"`, `<< WORD` at the start of `text`: how
/// much of it the operator and its word take, and the here-document it opens.
fn heredoc_start(text: &str) -> (usize, Option<Place>) {
    let mut i = 2;
    let tabs = text[i..].starts_with('-');
    if tabs {
        i += 1;
    }
    i += text[i..].len() - text[i..].trim_start_matches([' ', '\t']).len();
    let word_len =
        text[i..].find(|c: char| c.is_whitespace() || ";&|<>()".contains(c)).unwrap_or(text.len() - i);
    let word = &text[i..i + word_len];
    if word.is_empty() || word.contains("{{") {
        return (i, None);
    }
    let quoted = word.contains(['\'', '"', '\\']);
    let delimiter: String = word.chars().filter(|c| !matches!(c, '\'' | '"' | '\\')).collect();
    (i + word_len, Some(Place::Heredoc { delimiter, quoted, tabs }))
}

/// Whether a `{% … %}` tag is `{% raw %}`.
fn is_raw(tag: &str) -> bool {
    let inner = tag.trim_start_matches("{%").trim_end_matches("%}");
    inner.trim_matches(|c: char| c == '-' || c == '+' || c.is_whitespace()) == "raw"
}

/// The length of a `{% raw %}` block's body and its `{% endraw %}` tag.
fn raw_end(text: &str) -> usize {
    let mut from = 0;
    while let Some(i) = text[from..].find("{%") {
        let start = from + i;
        let end = start + tag_end(&text[start..]);
        let inner = text[start..end].trim_start_matches("{%").trim_end_matches("%}");
        if inner.trim_matches(|c: char| c == '-' || c == '+' || c.is_whitespace()) == "endraw" {
            return end;
        }
        from = end;
    }
    text.len()
}

/// The length of the `{{ … }}`, `{% … %}` or `{# … #}` at the start of `text`, through its
/// closing braces (string literals inside it may hold braces); all of `text` when it is
/// never closed.
fn tag_end(text: &str) -> usize {
    let close = match &text[..2] {
        "{{" => b'}',
        "{%" => b'%',
        _ => b'#',
    };
    let bytes = text.as_bytes();
    let mut i = 2;
    let mut quote = None;
    while i < bytes.len() {
        match (quote, bytes[i]) {
            (Some(_), b'\\') if close != b'#' && i + 1 < bytes.len() => i += 1,
            (Some(q), b) if b == q => quote = None,
            (None, b'"' | b'\'') if close != b'#' => quote = Some(bytes[i]),
            (None, b) if b == close && bytes.get(i + 1) == Some(&b'}') => return i + 2,
            _ => {}
        }
        i += 1;
    }
    text.len()
}

/// `{{ x | f }}` → `{{ (x | f) | filter }}`, keeping `-`/`+` whitespace control.
fn wrap(out: &mut String, expr: &str, filter: &str) {
    let Some(inner) = expr.strip_prefix("{{").and_then(|e| e.strip_suffix("}}")) else {
        out.push_str(expr); // never closed: minijinja says so
        return;
    };
    let (open, inner) = match inner.strip_prefix(['-', '+']) {
        Some(rest) => (&inner[..1], rest),
        None => ("", inner),
    };
    let (inner, close) = match inner.strip_suffix(['-', '+']) {
        Some(rest) => (rest, &inner[inner.len() - 1..]),
        None => (inner, ""),
    };
    out.push_str(&format!("{{{{{open} ({inner}) | {filter} {close}}}}}"));
}

/// A compiled `where` expression.
pub struct Filter<'a> {
    expr: minijinja::Expression<'a, 'a>,
}

impl Filter<'_> {
    /// The names the expression reads.
    pub fn names(&self) -> HashSet<String> {
        self.expr.undeclared_variables(false)
    }

    /// Whether the cell with this context is kept.
    pub fn keeps(&self, ctx: &Context) -> Result<bool, TemplateError> {
        Ok(self.expr.eval(ctx.to_value())?.is_true())
    }

    /// The same, consuming the context: no copy of it per cell when filtering many.
    pub fn keeps_owned(&self, ctx: Context) -> Result<bool, TemplateError> {
        Ok(self.expr.eval(Value::from(ctx.0))?.is_true())
    }
}

/// A level as a template value: numbers and booleans keep their type, so
/// `{% if count > 100 %}` compares numbers; anything else is its text.
pub fn scalar_value(s: &Scalar) -> Value {
    match s.kind {
        ScalarKind::Int => {
            s.text.parse::<i64>().map(Value::from).unwrap_or_else(|_| Value::from(s.text.as_str()))
        }
        ScalarKind::Float => {
            s.text.parse::<f64>().map(Value::from).unwrap_or_else(|_| Value::from(s.text.as_str()))
        }
        ScalarKind::Bool => Value::from(s.text.eq_ignore_ascii_case("true")),
        ScalarKind::Str => Value::from(s.text.as_str()),
    }
}

/// The names a template sees for one cell, in a stable order.
#[derive(Debug, Clone, Default)]
pub struct Context(BTreeMap<String, Value>);

impl Context {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn set(&mut self, name: &str, value: Value) {
        self.0.insert(name.to_string(), value);
    }

    fn to_value(&self) -> Value {
        Value::from(self.0.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx(pairs: &[(&str, Value)]) -> Context {
        let mut c = Context::new();
        for (k, v) in pairs {
            c.set(k, v.clone());
        }
        c
    }

    #[test]
    fn commands_quote_every_value() {
        let t = Templates::new();
        let c = ctx(&[("bs", Value::from("a b; touch pwned")), ("n", Value::from(3))]);
        let out = t.render_command("dd bs={{ bs }} count={{ n }}", &c).unwrap();
        assert_eq!(out, "dd bs='a b; touch pwned' count=3");
        let raw = t.render_command("echo {{ bs | safe }}", &c).unwrap();
        assert_eq!(raw, "echo a b; touch pwned");
    }

    /// Each template through `sh -c`, with a value full of shell syntax: nothing of it
    /// runs, and it comes out whole — as a quoted word where the command's own quotes
    /// hand it on, as itself where a shell reads those quotes' content again.
    #[test]
    fn a_value_inside_the_commands_own_quotes_is_never_run() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().display();
        let evil = format!("$(touch {d}/a) `touch {d}/b` \"; touch {d}/c; \" ' ; touch {d}/d ; ' \\ $HOME");
        let word = shlex::try_quote(&evil).unwrap().into_owned();
        let t = Templates::new();
        let c = ctx(&[("x", Value::from(evil.clone()))]);
        let cases = [
            ("printf '%s\\n' {{ x }}", evil.clone()),
            ("printf '%s\\n' \"{{ x }}\"", word.clone()),
            ("printf '%s\\n' \"v={{ x | trim }}!\"", format!("v={word}!")),
            ("printf '%s\\n' \"{{- x -}}\"", word.clone()),
            ("printf '%s\\n' '{{ x }}'", word.clone()),
            ("printf '%s\\n' '{# a ' comment #}{{ x }}'", word.clone()),
            ("{% if true %}printf '%s\\n' \"{% endif %}{{ x }}\"", word.clone()),
            ("sh -c \"printf '%s\\\\n' {{ x }}\"", evil.clone()),
            ("sh -c 'printf \"%s\\n\" {{ x }}'", evil.clone()),
            ("printf '%s\\n' \\\"{{ x }}", format!("\"{evil}")),
            // a quote in a shell comment is not a quote
            ("# don't quote x here\nprintf '%s\\n' {{ x }}", evil.clone()),
            ("printf '%s\\n' {{ x }} # it's bare", evil.clone()),
            // $( … ) inside double quotes is bare again
            ("printf '%s\\n' \"got: $(printf '%s' {{ x }})\"", format!("got: {evil}")),
            ("printf '%s\\n' \"got: $(printf '%s' \"$(printf '%s' {{ x }})\")\"", format!("got: {evil}")),
            ("printf '%s\\n' \"got: `printf '%s' {{ x }}`\"", format!("got: {evil}")),
            // a backslash before the value escapes nothing of it
            ("printf '%s\\n' \"\\{{ x }}\"", format!("\\{word}")),
            // tags, raw blocks and string literals in them are not shell text
            ("{% set p = '%}' %}printf '%s\\n' \"{{ x }}\"", word.clone()),
            ("printf '%s\\n' \"{% raw %}{{ x }}{% endraw %}\" {{ x }}", format!("{{{{ x }}}}\n{evil}")),
            // here-documents: expanded, or not
            ("cat <<EOF\nvalue {{ x }}\nEOF", format!("value {word}")),
            ("cat <<-'EOF'\n\tvalue {{ x }}\n\tEOF\nprintf '%s\\n' {{ x }}", format!("value {word}\n{evil}")),
        ];
        for (template, expected) in cases {
            let command = t.render_command(template, &c).unwrap();
            let out = std::process::Command::new("sh").arg("-c").arg(&command).output().unwrap();
            let ran: Vec<_> =
                std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
            assert!(ran.is_empty(), "{template}\n→ {command}\nran part of the value: {ran:?}");
            assert!(
                out.status.success(),
                "{template}\n→ {command}\n{}",
                String::from_utf8_lossy(&out.stderr)
            );
            assert_eq!(String::from_utf8(out.stdout).unwrap(), expected + "\n", "{template}\n→ {command}");
        }
        // bash's $'…', where `\` escapes and `\'` does not end it
        let command = t.render_command("printf '%s\\n' $'a\\tb\\' {{ x }}'", &c).unwrap();
        let out = std::process::Command::new("bash").arg("-c").arg(&command).output().unwrap();
        assert!(std::fs::read_dir(dir.path()).unwrap().next().is_none(), "{command}");
        assert_eq!(String::from_utf8(out.stdout).unwrap(), format!("a\tb' {word}\n"), "{command}");
        // a line break would end a comment or a here-document: refused there
        let two = ctx(&[("x", Value::from(format!("a\ntouch {d}/e")))]);
        for template in ["# note {{ x }}\necho", "cat <<EOF\n{{ x }}\nEOF"] {
            let err = t.render_command(template, &two).unwrap_err();
            assert!(err.message.contains("a value with a line break"), "{template}: {err:?}");
        }
        assert!(t.render_command("printf '%s' {{ x }}", &two).is_ok(), "bare, it is quoted");
        // `| safe` still pastes the text as it is, quotes or not
        let safe = ctx(&[("flag", Value::from("--a=\"b\""))]);
        assert_eq!(t.render_command("run \"{{ flag | safe }}\"", &safe).unwrap(), "run \"--a=\"b\"\"");
    }

    #[test]
    fn values_are_not_quoted() {
        let t = Templates::new();
        let c = ctx(&[("workdir", Value::from("/tmp/a b"))]);
        assert_eq!(t.render_value("{{ workdir }}/zero.tst", &c).unwrap(), "/tmp/a b/zero.tst");
    }

    #[test]
    fn undefined_names_are_errors() {
        let t = Templates::new();
        let err = t.render_command("echo {{ nope }}", &Context::new()).unwrap_err();
        assert!(err.message.contains("undefined"), "{err:?}");
    }

    #[test]
    fn syntax_errors_carry_the_template_line() {
        let t = Templates::new();
        let err = t.names("echo ok\necho {{ x }").unwrap_err();
        assert_eq!(err.line, Some(2));
        assert!(err.message.contains("syntax error"), "{err:?}");
    }

    #[test]
    fn names_excludes_loop_variables() {
        let t = Templates::new();
        let names = t.names("{% for i in items %}{{ i }}{{ bs }}{% endfor %}").unwrap();
        let mut names: Vec<_> = names.into_iter().collect();
        names.sort();
        assert_eq!(names, ["bs", "items"]);
    }

    #[test]
    fn filters_evaluate_per_cell() {
        let t = Templates::new();
        let f = t.expression("not (pin == 'pinned' and bs == '100M')").unwrap();
        let keep = ctx(&[("pin", Value::from("pinned")), ("bs", Value::from("1k"))]);
        let drop = ctx(&[("pin", Value::from("pinned")), ("bs", Value::from("100M"))]);
        assert!(f.keeps(&keep).unwrap());
        assert!(!f.keeps(&drop).unwrap());
    }
}
