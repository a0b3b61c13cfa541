//! Values made safe for `sh`: plain text as it is, anything else through an environment
//! variable the command refers to, kept in the render's own state; the filters for each
//! place the shell lexer finds.

use minijinja::value::{Object, Value};
use minijinja::{Error, ErrorKind, State};

/// The prefix of the environment variables that carry values into commands.
const VALUE_VAR: &str = "MARGIN_VALUE_";

/// The render context's entry that carries the variables of the cell's earlier commands
/// into this render: a space keeps every template from naming (or `set`ting) it.
pub(super) const EARLIER_VALUES: &str = "margin earlier values";

/// The environment variables one render refers to, in the order they are numbered: a
/// per-render extension of minijinja's `State`, started from [`EARLIER_VALUES`] when the
/// first value that is not plain text needs one.
#[derive(Debug, Default)]
pub(super) struct ValueVars(pub(super) Vec<(String, String)>);

/// The variables of the cell's commands rendered before this one, as a context value.
#[derive(Debug)]
pub(super) struct EarlierValues(pub(super) Vec<(String, String)>);

impl Object for EarlierValues {}

/// How a reference to a value's variable is written where it lands.
#[derive(Clone, Copy)]
pub(super) enum Form {
    /// Anywhere but inside single quotes.
    Word,
    /// Out of the command's single quotes and back.
    OutOfSingle,
}

/// A value as it goes into a command. Plain text (nothing a shell reads: `4k`, `/tmp/x`,
/// `1.5`) is written as it is; anything else goes into an environment variable of the
/// command, and the command gets a reference to it. The shell substitutes a variable's
/// value after it has read the command, and never reads the value as shell text:
/// nothing in it can run, whatever quotes, comments or here-documents surround it.
pub(super) fn reference(state: &mut State, value: &Value, form: Form) -> Result<Value, Error> {
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
    let name = variable_for(state, text);
    Ok(Value::from_safe_string(match form {
        // `${V+"${V}"}`: the value, unsplit, bare and inside double quotes alike (and in
        // a here-document, whose shell removes those quotes), so where margin misreads
        // the text, the value still arrives whole or as literal text, never as words
        Form::Word => format!("${{{name}+\"${{{name}}}\"}}"),
        Form::OutOfSingle => format!("'${{{name}+\"${{{name}}}\"}}'"),
    }))
}

/// The variable that holds `text`: the one an earlier reference in the cell gave it, or
/// the next number.
fn variable_for(state: &mut State, text: String) -> String {
    // the earlier commands' variables are copied in once, at this render's first
    let earlier = match state.get_extension::<ValueVars>() {
        Some(_) => None,
        None => state
            .lookup(EARLIER_VALUES)
            .and_then(|v| v.downcast_object_ref::<EarlierValues>().map(|e| e.0.clone())),
    };
    let ValueVars(vars) = state.get_or_insert_extension_with(|| ValueVars(earlier.unwrap_or_default()));
    match vars.iter().find(|(_, v)| *v == text) {
        Some((name, _)) => name.clone(),
        None => {
            let name = format!("{VALUE_VAR}{}", vars.len() + 1);
            vars.push((name.clone(), text));
            name
        }
    }
}

pub(super) fn in_single_quotes(state: &mut State, value: Value) -> Result<Value, Error> {
    reference(state, &value, Form::OutOfSingle)
}

/// An unquoted here-document expands variables (and does not read what they hold); only
/// a plain value written on a line of its own could end it, if it were the delimiter.
pub(super) fn in_heredoc(state: &mut State, value: Value, delimiter: Option<String>) -> Result<Value, Error> {
    if delimiter.is_some_and(|d| value.to_string().trim_start_matches('\t') == d) {
        return Err(Error::new(
            ErrorKind::InvalidOperation,
            "a value that is the here-document's delimiter, which would end it there",
        ));
    }
    reference(state, &value, Form::Word)
}

/// In `$(( … ))` bash reads what a variable holds as an expression, where `a[$(cmd)]`
/// runs `cmd`: only plain values (numbers, names) go there.
pub(super) fn in_arithmetic(state: &mut State, value: Value) -> Result<Value, Error> {
    let reference = reference(state, &value, Form::Word)?;
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
pub(super) fn in_quoted_heredoc(state: &mut State, value: Value) -> Result<Value, Error> {
    let reference = reference(state, &value, Form::Word)?;
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
pub(super) fn quote_for_another_shell(value: Value) -> Result<Value, Error> {
    shlex::try_quote(&value.to_string())
        .map(|q| Value::from(q.into_owned()))
        .map_err(|_| Error::new(ErrorKind::InvalidOperation, "a value holds a NUL byte"))
}
