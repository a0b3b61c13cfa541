//! Command templates: minijinja with strict undefined names and shell quoting.
//!
//! Commands (`setup`, `run`, …) are rendered with every substituted value quoted for the
//! shell, so a level `a b; rm -rf /` stays one argument; `| safe` opts out. `vars` are
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
            let text = if value.is_safe() {
                value.to_string()
            } else {
                let raw = value.to_string();
                shlex::try_quote(&raw)
                    .map(|q| q.into_owned())
                    .map_err(|_| Error::new(ErrorKind::InvalidOperation, "a value holds a NUL byte"))?
            };
            out.write_str(&text).map_err(|_| Error::new(ErrorKind::WriteFailure, "write failed"))
        });
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

    /// Environments with these templates compiled once, for rendering them many times
    /// (every trial renders the same few commands); a source that does not compile is
    /// left out and reports its error when rendered.
    pub fn with_sources<'a>(sources: impl IntoIterator<Item = &'a str>) -> Self {
        let mut t = Self::new();
        for source in sources {
            let _ = t.commands.add_template_owned(source.to_string(), source.to_string());
            let _ = t.values.add_template_owned(source.to_string(), source.to_string());
        }
        t
    }

    /// Render a command: every value substituted is shell-quoted unless `| safe`.
    pub fn render_command(&self, source: &str, ctx: &Context) -> Result<String, TemplateError> {
        Self::render_in(&self.commands, source, ctx)
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
