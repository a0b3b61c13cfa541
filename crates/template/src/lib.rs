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
//! rendered without quoting: they are values. `where` conditions are minijinja
//! expressions over the same names.
//!
//! This file is the minijinja plumbing (environments, compiling, rendering, errors);
//! `shell` follows a command's quoting, `quote` makes a value safe where it lands, and
//! `values` turns levels into template values.

mod quote;
mod shell;
mod values;

use std::collections::HashSet;

use minijinja::value::Value;
use minijinja::{Environment, Error, ErrorKind, UndefinedBehavior};

use quote::{EARLIER_VALUES, EarlierValues, Form, ValueVars};
pub use values::{Context, scalar_value};

/// The work one render of a template (a command, a var, a `where` condition) may do, in
/// minijinja's fuel: about one instruction, or 64 bytes of data made, per unit. The
/// shipped experiments use at most about 100 per render; this leaves room for loops of
/// many thousands of steps, and stops a runaway template (`{{ 'a' * 100000000 }}`, a
/// loop over `range(10**9)`) within milliseconds instead of seconds of work and
/// gigabytes of memory.
pub(crate) const FUEL: u64 = 1_000_000;

/// A template problem, with the line inside the template (1-based) when known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TemplateError {
    pub line: Option<usize>,
    pub message: String,
    pub hint: Option<String>,
}

impl From<Error> for TemplateError {
    fn from(e: Error) -> Self {
        if e.kind() == ErrorKind::OutOfFuel {
            return TemplateError {
                line: e.line(),
                message: format!(
                    "the template was stopped after {FUEL} steps of work (about one per \
                     instruction, or per 64 bytes it makes), far more than any command needs"
                ),
                hint: Some(
                    "a command is at most 128 KiB of text: make large data in the shell (`head -c`, \
                     `seq`, a loop in `setup`), not in the template"
                        .into(),
                ),
            };
        }
        let message = match e.detail() {
            Some(detail) => format!("{}: {detail}", kind_text(e.kind())),
            None => kind_text(e.kind()).to_string(),
        };
        TemplateError { line: e.line(), message, hint: None }
    }
}

fn kind_text(kind: ErrorKind) -> String {
    let text = kind.to_string();
    // minijinja's kinds read "syntax error", "undefined value", …
    text.trim_end_matches('.').to_string()
}

/// Whether a report template compiles; nothing is rendered.
pub fn check_syntax(source: &str) -> Result<(), TemplateError> {
    Environment::new().template_from_str(source)?;
    Ok(())
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
        commands.set_formatter(|out, state, value| {
            let text = quote::reference(state, value, Form::Word)?;
            out.write_str(&text.to_string()).map_err(|_| Error::new(ErrorKind::WriteFailure, "write failed"))
        });
        commands.add_filter(shell::IN_SINGLE_QUOTES, quote::in_single_quotes);
        commands.add_filter(shell::IN_HEREDOC, quote::in_heredoc);
        commands.add_filter(shell::IN_QUOTED_HEREDOC, quote::in_quoted_heredoc);
        commands.add_filter(shell::IN_ARITHMETIC, quote::in_arithmetic);
        commands.add_filter("q", quote::quote_for_another_shell);
        commands.set_fuel(Some(FUEL));
        let mut values = Environment::new();
        values.set_undefined_behavior(UndefinedBehavior::Strict);
        values.set_auto_escape_callback(|_| minijinja::AutoEscape::None);
        values.set_fuel(Some(FUEL));
        Self { commands, values }
    }

    /// The top-level names a template reads (loop variables and `set` names excluded);
    /// compiling it, a syntax error carries the template's line.
    pub fn names(&self, source: &str) -> Result<HashSet<String>, TemplateError> {
        no_autoescape(source)?;
        let t = self.commands.template_from_str(source)?;
        Ok(t.undeclared_variables(false))
    }

    /// Environments with these templates compiled once, for rendering them many times
    /// (every trial renders the same few commands); a source that does not compile is
    /// left out and reports its error when rendered.
    pub fn with_sources<'a>(sources: impl IntoIterator<Item = &'a str>) -> Self {
        let mut t = Self::new();
        for source in sources {
            let compiled = shell::quote_by_place(source).into_owned();
            let _ = t.commands.add_template_owned(source.to_string(), compiled);
            let _ = t.values.add_template_owned(source.to_string(), source.to_string());
        }
        t
    }

    /// Render a command: every value substituted is shell-quoted unless `| safe`.
    /// `values`: the environment variables the command's values go in (see
    /// `quote::reference`), shared by the commands of a cell; those this one needs are
    /// added (none when it fails to render).
    pub fn render_command(
        &self,
        source: &str,
        ctx: &Context,
        values: &mut Vec<(String, String)>,
    ) -> Result<String, TemplateError> {
        no_autoescape(source)?;
        // the render's own state numbers the variables, from where the cell's earlier
        // commands left off
        let root = if values.is_empty() {
            ctx.to_value()
        } else {
            ctx.to_value_with(EARLIER_VALUES, Value::from_object(EarlierValues(values.clone())))
        };
        let compiled;
        let template = match self.commands.get_template(source) {
            Ok(t) => t,
            Err(_) => {
                compiled = shell::quote_by_place(source);
                self.commands.template_from_str(&compiled)?
            }
        };
        let mut captured = template.render_captured(root)?;
        if let Some(ValueVars(vars)) =
            captured.with_state_mut(|state| state.get_extension_mut::<ValueVars>().map(std::mem::take))
        {
            *values = vars;
        }
        Ok(captured.into_output())
    }

    /// Render a var: plain text, no quoting.
    pub fn render_value(&self, source: &str, ctx: &Context) -> Result<String, TemplateError> {
        let env = &self.values;
        match env.get_template(source) {
            Ok(t) => Ok(t.render(ctx.to_value())?),
            Err(_) => Ok(env.template_from_str(source)?.render(ctx.to_value())?),
        }
    }

    /// Compile a `where` condition once, to evaluate it for many cells.
    pub fn condition<'a>(&'a self, source: &'a str) -> Result<Condition<'a>, TemplateError> {
        let expr = self.values.compile_expression(source)?;
        Ok(Condition { expr })
    }
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
                hint: None,
            });
        }
        from = start + 2;
    }
    Ok(())
}

/// A compiled `where` condition.
pub struct Condition<'a> {
    expr: minijinja::Expression<'a, 'a>,
}

impl Condition<'_> {
    /// The names the condition reads.
    pub fn names(&self) -> HashSet<String> {
        self.expr.undeclared_variables(false)
    }

    /// Whether the cell with this context is kept; the context is consumed, so that
    /// filtering many cells makes no copy of each.
    pub fn keeps(&self, ctx: Context) -> Result<bool, TemplateError> {
        Ok(self.expr.eval(ctx.into_value())?.is_true())
    }
}

#[cfg(test)]
mod tests;
