//! Command templates: minijinja with strict undefined names, and values that never run.
//!
//! In commands (`setup`, `run`, …) a value that is plain text is written as it is; any
//! other goes into an environment variable of the command, which the command refers to
//! (`${MARGIN_VALUE_1+"${MARGIN_VALUE_1}"}`, unsplit bare and inside double quotes
//! alike): the shell never reads a variable's value as shell text, so a level
//! `a b; rm -rf /` stays one argument wherever it lands. The shell is followed through
//! the text to close single quotes around a reference, and to refuse the few places
//! where a shell would read a value (bash arithmetic). `| safe` pastes the text
//! itself; `| q` quotes a value for another shell that reads the string again. `vars` are
//! rendered without quoting: they are values. `where` filters are minijinja expressions
//! over the same names.

use std::collections::{BTreeMap, HashSet};

use minijinja::value::Value;
use minijinja::{Environment, Error, ErrorKind, UndefinedBehavior};

use crate::vocab::{Scalar, ScalarKind};

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
        // No HTML escaping whatever a template's name: a command is not a web page, and
        // escaping marks values safe, which would paste them unquoted.
        commands.set_auto_escape_callback(|_| minijinja::AutoEscape::None);
        commands.remove_filter("escape");
        commands.remove_filter("e");
        commands.set_formatter(|out, _state, value| {
            let text = reference(value, Form::Word)?;
            out.write_str(&text.to_string()).map_err(|_| Error::new(ErrorKind::WriteFailure, "write failed"))
        });
        commands.add_filter(IN_SINGLE_QUOTES, in_single_quotes);
        commands.add_filter(IN_HEREDOC, in_heredoc);
        commands.add_filter(IN_QUOTED_HEREDOC, in_quoted_heredoc);
        commands.add_filter(IN_ARITHMETIC, in_arithmetic);
        commands.add_filter("q", quote_for_another_shell);
        let mut values = Environment::new();
        values.set_undefined_behavior(UndefinedBehavior::Strict);
        values.set_auto_escape_callback(|_| minijinja::AutoEscape::None);
        Self { commands, values }
    }

    /// The top-level names a template reads (loop variables and `set` names excluded);
    /// compiling it, a syntax error carries the template's line.
    pub fn names(&self, source: &str) -> Result<HashSet<String>, TemplateError> {
        no_autoescape(source)?;
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
    /// `values`: the environment variables the command's values go in (see [`reference`]),
    /// shared by the commands of a cell; those this one needs are added.
    pub fn render_command(
        &self,
        source: &str,
        ctx: &Context,
        values: &mut Vec<(String, String)>,
    ) -> Result<String, TemplateError> {
        no_autoescape(source)?;
        VALUES.with_borrow_mut(|v| *v = std::mem::take(values));
        let rendered = match self.commands.get_template(source) {
            Ok(t) => t.render(ctx.to_value()),
            Err(_) => {
                let compiled = Self::command_source(source);
                self.commands.template_from_str(&compiled).and_then(|t| t.render(ctx.to_value()))
            }
        };
        VALUES.with_borrow_mut(|v| *values = std::mem::take(v));
        Ok(rendered?)
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

const IN_SINGLE_QUOTES: &str = "__margin_in_single_quotes";
const IN_HEREDOC: &str = "__margin_in_heredoc";
const IN_QUOTED_HEREDOC: &str = "__margin_in_quoted_heredoc";
const IN_ARITHMETIC: &str = "__margin_in_arithmetic";

/// The prefix of the environment variables that carry values into commands.
pub const VALUE_VAR: &str = "MARGIN_VALUE_";

std::thread_local! {
    /// The values of the command being rendered on this thread, in the order their
    /// variables are numbered (set by [`Templates::render_command`]).
    static VALUES: std::cell::RefCell<Vec<(String, String)>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// How a reference to a value's variable is written where it lands.
#[derive(Clone, Copy)]
enum Form {
    /// Anywhere but inside single quotes.
    Word,
    /// Out of the command's single quotes and back.
    OutOfSingle,
}

/// `{% autoescape %}` would mark values safe (HTML-escaped, which leaves `$( … )` alone),
/// and a safe value is pasted: not in commands.
fn no_autoescape(source: &str) -> Result<(), TemplateError> {
    let mut from = 0;
    while let Some(i) = source[from..].find("{%") {
        let start = from + i;
        let tag = source[start + 2..].trim_start_matches(['-', '+']).trim_start();
        if tag.starts_with("autoescape") {
            return Err(TemplateError {
                line: Some(source[..start].matches('\n').count() + 1),
                message: "`{% autoescape %}` is not allowed in a command: it would mark values safe, and so paste them".into(),
            });
        }
        from = start + 2;
    }
    Ok(())
}

/// A value as it goes into a command. Plain text (nothing a shell reads: `4k`, `/tmp/x`,
/// `1.5`) is written as it is; anything else goes into an environment variable of the
/// command, and the command gets a reference to it. The shell substitutes a variable's
/// value after it has read the command, and never reads the value as shell text:
/// nothing in it can run, whatever quotes, comments or here-documents surround it.
fn reference(value: &Value, form: Form) -> Result<Value, Error> {
    if value.is_safe() {
        return Ok(value.clone());
    }
    let text = value.to_string();
    if text.contains('\0') {
        return Err(Error::new(ErrorKind::InvalidOperation, "a value holds a NUL byte"));
    }
    if !text.is_empty() && matches!(shlex::try_quote(&text), Ok(std::borrow::Cow::Borrowed(_))) {
        return Ok(Value::from_safe_string(text));
    }
    let name = VALUES.with_borrow_mut(|values| match values.iter().find(|(_, v)| *v == text) {
        Some((name, _)) => name.clone(),
        None => {
            let name = format!("{VALUE_VAR}{}", values.len() + 1);
            values.push((name.clone(), text));
            name
        }
    });
    Ok(Value::from_safe_string(match form {
        // `${V+"${V}"}`: the value, unsplit, bare and inside double quotes alike (and in
        // a here-document, whose shell removes those quotes), so where margin misreads
        // the text, the value still arrives whole or as literal text, never as words
        Form::Word => format!("${{{name}+\"${{{name}}}\"}}"),
        Form::OutOfSingle => format!("'${{{name}+\"${{{name}}}\"}}'"),
    }))
}

fn in_single_quotes(value: Value) -> Result<Value, Error> {
    reference(&value, Form::OutOfSingle)
}

/// An unquoted here-document expands variables (and does not read what they hold); only
/// a plain value written on a line of its own could end it, if it were the delimiter.
fn in_heredoc(value: Value, delimiter: Option<String>) -> Result<Value, Error> {
    if delimiter.is_some_and(|d| value.to_string().trim_start_matches('\t') == d) {
        return Err(Error::new(
            ErrorKind::InvalidOperation,
            "a value that is the here-document's delimiter, which would end it there",
        ));
    }
    reference(&value, Form::Word)
}

/// In `$(( … ))` bash reads what a variable holds as an expression, where `a[$(cmd)]`
/// runs `cmd`: only plain values (numbers, names) go there.
fn in_arithmetic(value: Value) -> Result<Value, Error> {
    let reference = reference(&value, Form::Word)?;
    if !value.is_safe() && reference.to_string().starts_with("${") {
        return Err(Error::new(
            ErrorKind::InvalidOperation,
            "a value that is not plain text in `$(( … ))`, where bash would evaluate it: arithmetic takes numbers",
        ));
    }
    Ok(reference)
}

/// A quoted here-document expands nothing, so a value that is not plain text cannot be
/// passed there without being read as text: refused (an unquoted `<<EOF` takes it).
fn in_quoted_heredoc(value: Value) -> Result<Value, Error> {
    let reference = reference(&value, Form::Word)?;
    if reference.to_string().starts_with("${") {
        return Err(Error::new(
            ErrorKind::InvalidOperation,
            "a value that is not plain text in a quoted here-document (<<'EOF'), which expands nothing: \
             use an unquoted one (<<EOF)",
        ));
    }
    Ok(reference)
}

/// `{{ x | q }}`: the value quoted as one shell word, for a command that hands a string
/// to another shell (`ssh host "cat {{ f | q }}"`, `sh -c "…"`): the outer shell passes
/// the quoted word on unread, the inner one reads it as one word.
fn quote_for_another_shell(value: Value) -> Result<Value, Error> {
    shlex::try_quote(&value.to_string())
        .map(|q| Value::from(q.into_owned()))
        .map_err(|_| Error::new(ErrorKind::InvalidOperation, "a value holds a NUL byte"))
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
    /// `$((`, likewise.
    Arithmetic(u32),
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
            let arithmetic = stack.iter().any(|p| matches!(p, Place::Bare { sub: Some(Sub::Arithmetic(_)) }));
            let delimiter = match stack.last() {
                Some(Place::Heredoc { delimiter, quoted: false, .. }) => Some(delimiter.clone()),
                _ => None,
            };
            // bare, in double quotes, backquotes or a comment the formatter's reference
            // serves as it is; these places need more
            let filter = match stack.last() {
                _ if arithmetic => Some(IN_ARITHMETIC),
                Some(Place::SingleQuoted | Place::AnsiQuoted) => Some(IN_SINGLE_QUOTES),
                Some(Place::Heredoc { quoted: false, .. }) => Some(IN_HEREDOC),
                Some(Place::Heredoc { quoted: true, .. }) => Some(IN_QUOTED_HEREDOC),
                _ => None,
            };
            match (filter, delimiter) {
                (Some(IN_HEREDOC), Some(delimiter)) => {
                    wrap(&mut out, &rest[..end], &format!("{IN_HEREDOC}({delimiter:?})"));
                }
                (Some(filter), _) => wrap(&mut out, &rest[..end], filter),
                (None, _) => out.push_str(&rest[..end]),
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
            (_, '$') if rest.starts_with("$((") => {
                stack.push(Place::Bare { sub: Some(Sub::Arithmetic(0)) });
                len += 2;
            }
            (_, '$') if next == Some('(') => {
                stack.push(Place::Bare { sub: Some(Sub::Dollar(0)) });
                len += 1;
            }
            (Place::Bare { sub: Some(Sub::Arithmetic(depth)) }, '(') => {
                *stack.last_mut().expect("a place") = Place::Bare { sub: Some(Sub::Arithmetic(depth + 1)) };
            }
            (Place::Bare { sub: Some(Sub::Arithmetic(depth)) }, ')') => {
                if *depth == 0 {
                    stack.pop();
                    len += usize::from(next == Some(')'));
                } else {
                    *stack.last_mut().expect("a place") =
                        Place::Bare { sub: Some(Sub::Arithmetic(depth - 1)) };
                }
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

    /// Render `template` and run it with `sh -c` (or `shell`) and its values in the
    /// environment, as a trial would: the command and what it printed.
    fn run_in(shell: &str, t: &Templates, template: &str, c: &Context) -> (String, String) {
        let mut env = Vec::new();
        let command = t.render_command(template, c, &mut env).unwrap();
        let out = std::process::Command::new(shell).arg("-c").arg(&command).envs(env).output().unwrap();
        assert!(out.status.success(), "{template}\n→ {command}\n{}", String::from_utf8_lossy(&out.stderr));
        (command, String::from_utf8(out.stdout).unwrap())
    }

    #[test]
    fn plain_values_are_written_and_others_referred_to() {
        let t = Templates::new();
        let c = ctx(&[
            ("bs", Value::from("a b; touch pwned")),
            ("n", Value::from(3)),
            ("f", Value::from("/tmp/x.dat")),
        ]);
        let mut env = Vec::new();
        let out =
            t.render_command("dd bs={{ bs }} count={{ n }} of={{ f }} if={{ bs }}", &c, &mut env).unwrap();
        let v1 = "${MARGIN_VALUE_1+\"${MARGIN_VALUE_1}\"}";
        assert_eq!(out, format!("dd bs={v1} count=3 of=/tmp/x.dat if={v1}"));
        assert_eq!(env, [("MARGIN_VALUE_1".to_string(), "a b; touch pwned".to_string())]);
        // the next command of the cell adds to the same variables
        let out = t.render_command("echo \"{{ bs }}\" '{{ bs | upper }}'", &c, &mut env).unwrap();
        assert_eq!(out, format!("echo \"{v1}\" ''${{MARGIN_VALUE_2+\"${{MARGIN_VALUE_2}}\"}}''"));
        assert_eq!(env[1].1, "A B; TOUCH PWNED");
        let raw = t.render_command("echo {{ bs | safe }}", &c, &mut env).unwrap();
        assert_eq!(raw, "echo a b; touch pwned", "`| safe` pastes the text as it is");
        // `| e` would mark the value safe, and so paste it: not offered
        let err = t.render_command("echo {{ bs | e }}", &c, &mut env).unwrap_err();
        assert!(err.message.contains("unknown filter"), "{err:?}");
    }

    /// Each template through `sh -c`, with a value full of shell syntax: nothing of it
    /// runs, and it comes out as itself, wherever it lands.
    #[test]
    fn a_value_is_never_run_wherever_it_lands() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().display();
        let evil = format!(
            "$(touch {d}/a) `touch {d}/b` \"; touch {d}/c; \" ' ; touch {d}/d ; ' \\ $HOME\nEOF\ntouch {d}/e #"
        );
        let t = Templates::new();
        let c = ctx(&[("x", Value::from(evil.clone()))]);
        let cases = [
            ("printf '%s\\n' {{ x }}", evil.clone()),
            ("printf '%s\\n' \"{{ x }}\"", evil.clone()),
            ("printf '%s\\n' \"v={{ x | trim }}!\"", format!("v={}!", evil.trim())),
            ("printf '%s\\n' \"{{- x -}}\"", evil.clone()),
            ("printf '%s\\n' '{{ x }}'", evil.clone()),
            ("printf '%s\\n' 'a{# a ' comment #}{{ x }}b'", format!("a{evil}b")),
            ("{% if true %}printf '%s\\n' \"{% endif %}{{ x }}\"", evil.clone()),
            ("printf '%s\\n' \\\"{{ x }}", format!("\"{evil}")),
            ("# don't quote x here\nprintf '%s\\n' {{ x }}", evil.clone()),
            ("printf '%s\\n' {{ x }} # it's {{ x }}", evil.clone()),
            ("printf '%s\\n' \"got: $(printf '%s' {{ x }})\"", format!("got: {evil}")),
            ("printf '%s\\n' \"got: $(printf '%s' \"{{ x }}\")\"", format!("got: {evil}")),
            ("printf '%s\\n' \"got: `printf '%s' {{ x }}`\"", format!("got: {evil}")),
            (
                "printf '%s\\n' `printf '%s' \"{{ x }}\"`",
                evil.split_whitespace().collect::<Vec<_>>().join("\n"),
            ),
            ("printf '%s\\n' \"${NOT_SET:-\"{{ x }}\"}\"", evil.clone()),
            ("{% set p = '%}' %}printf '%s\\n' \"{{ x }}\"", evil.clone()),
            ("printf '%s\\n' \"{% raw %}{{ x }}{% endraw %}\" {{ x }}", format!("{{{{ x }}}}\n{evil}")),
            ("cat <<EOF\nvalue {{ x }}\nEOF", format!("value {evil}")),
            ("cat <<EOF\n$(printf '%s' \"{{ x }}\")\nEOF", evil.clone()),
            ("echo $(( 1 << 2 ))\nprintf '%s\\n' \"{{ x }}\"", format!("4\n{evil}")),
        ];
        for (template, expected) in cases {
            let (command, out) = run_in("sh", &t, template, &c);
            let ran: Vec<_> =
                std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
            assert!(ran.is_empty(), "{template}\n→ {command}\nran part of the value: {ran:?}");
            assert_eq!(out, expected + "\n", "{template}\n→ {command}");
        }
        // where margin misreads the shell (a backslash before the value, a `case` pattern's
        // `)` in `$( … )`, `<<` in arithmetic, a comment's end, branches, raw blocks), the
        // command may make no sense, but nothing of the value runs
        for template in [
            "bytes=$(( 1 << 20 ))\ntaskset -c {{ x }} true",
            "out=\"$(case a in a) \"{{ x }}\" ;; esac)\"",
            "start=`date +%s # seconds`; {{ x }}",
            "{% if false %}ssh h \"{% endif %}{{ x }} /out{% if false %}\"{% endif %}",
            "echo {% raw %}\"{{ l }}{% endraw %}\"; {{ x }}",
            "echo a\\ #b; {{ x }}",
            "echo x\u{a0}# nbsp; {{ x }}",
            "printf '%s\\n' \\{{ x }} \"; {{ x }} #\"",
            "printf '%s\\n' \"$(case a in a) echo '\"';; esac) {{ x }}\"",
            "{% filter lower %}printf '%s\\n' \"{{ x }}\"{% endfilter %}",
            "printf '%s\\n' \\{{ x }}",
            "printf '%s\\n' \"\\{{ x }}\"",
            "printf '%s\\n' \\\\{{ x }}",
        ] {
            let mut env = Vec::new();
            let command = t.render_command(template, &c, &mut env).unwrap();
            let _ = std::process::Command::new("sh").arg("-c").arg(&command).envs(env).output().unwrap();
            assert!(std::fs::read_dir(dir.path()).unwrap().next().is_none(), "{template}\n→ {command}");
        }
        // a here-document's delimiter as a value would end it: refused
        let eof = ctx(&[("x", Value::from("EOF"))]);
        let err = t.render_command("cat <<EOF\n{{ x }}\nEOF", &eof, &mut Vec::new()).unwrap_err();
        assert!(err.message.contains("delimiter"), "{err:?}");
        // bash evaluates what arithmetic reads: numbers only
        let (_, out) = run_in("sh", &t, "echo $(( {{ n }} * 2 ))", &ctx(&[("n", Value::from(21))]));
        assert_eq!(out, "42\n");
        let err = t.render_command("echo $(( {{ x }} * 2 ))", &c, &mut Vec::new()).unwrap_err();
        assert!(err.message.contains("`$(( … ))`"), "{err:?}");
        // {% autoescape %} would mark values safe: refused
        let err =
            t.render_command("{% autoescape true %}echo {{ x }}{% endautoescape %}", &c, &mut Vec::new());
        assert!(err.unwrap_err().message.contains("autoescape"));
        // bash's $'…', where `\` escapes and `\'` does not end it
        let (command, out) = run_in("bash", &t, "printf '%s\\n' $'a\\tb\\' {{ x }}'", &c);
        assert!(std::fs::read_dir(dir.path()).unwrap().next().is_none(), "{command}");
        assert_eq!(out, format!("a\tb' {evil}\n"), "{command}");
        // a quoted here-document expands nothing: plain text goes in, anything else is refused
        let plain = ctx(&[("x", Value::from("4k"))]);
        let (_, out) = run_in("sh", &t, "cat <<'EOF'\nvalue {{ x }}\nEOF", &plain);
        assert_eq!(out, "value 4k\n");
        let err = t.render_command("cat <<'EOF'\n{{ x }}\nEOF", &c, &mut Vec::new()).unwrap_err();
        assert!(err.message.contains("in a quoted here-document"), "{err:?}");
        // `| q` quotes for a shell that reads the string again
        let (command, out) = run_in("sh", &t, "sh -c \"printf '%s\\n' {{ x | q }}\"", &c);
        assert!(std::fs::read_dir(dir.path()).unwrap().next().is_none(), "{command}");
        assert_eq!(out, evil.clone() + "\n", "{command}");
        let (_, out) = run_in("sh", &t, "sh -c 'printf \"%s\\n\" {{ x | q }}'", &c);
        assert_eq!(out, evil.clone() + "\n");
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
        let err = t.render_command("echo {{ nope }}", &Context::new(), &mut Vec::new()).unwrap_err();
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
