//! Rendering one cell's commands: levels, vars and built-ins into the templates.
//!
//! `check` renders the first cells of every plan so that errors only a render can find
//! (an unknown filter, a type error) surface before anything runs.

use std::path::Path;

use minijinja::value::Value;

use super::{Cell, Plan};
use crate::diag::{Diagnostic, pos_in_template};
use crate::spec::{Experiment, Located};
use template::{Context, TemplateError, Templates, scalar_value};
use vocab::SERVICES;

/// Where and how a trial runs: the values of the built-in names.
#[derive(Debug, Clone)]
pub(crate) struct Builtins<'a> {
    pub(crate) workdir: &'a str,
    pub(crate) repetition: u32,
    pub(crate) host: &'a str,
}

/// One cell's commands, ready for `sh -c` with `env` in their environment.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Commands {
    pub(crate) setup: Option<String>,
    pub(crate) prepare: Option<String>,
    pub(crate) run: String,
    pub(crate) conclude: Option<String>,
    pub(crate) cleanup: Option<String>,
    /// The values that are not plain text, as environment variables the commands refer
    /// to (`"${MARGIN_VALUE_1}"`): never read as shell text.
    pub(crate) env: Vec<(String, String)>,
}

/// The most bytes a rendered command and the values it refers to may take together.
/// A command reaches `sh -c` as one argument, and Linux refuses any single argument or
/// environment string longer than MAX_ARG_STRLEN (131 072 bytes, its NUL included)
/// with "Argument list too long" (E2BIG), so every trial of a longer command would fail.
/// The values (`MARGIN_VALUE_n=…`) count too: locally they are environment strings,
/// which all share ARG_MAX with the arguments; over ssh they are written into the
/// command line itself, which the remote `sh -c` again gets as one argument.
pub(crate) const MAX_COMMAND_BYTES: usize = 131_072 - 1;

/// Render every command of `cell`; an error names the template's key and the cell.
pub(crate) fn render(
    templates: &Templates,
    exp: &Experiment,
    plan: &Plan,
    cell: &Cell,
    builtins: &Builtins<'_>,
) -> Result<Commands, Diagnostic> {
    let fail = |key: &str, t: &Located<String>, e: TemplateError| {
        let pos = match e.line {
            Some(line) if line > 1 => pos_in_template(&exp.source, t.pos, t.span.map(|(o, _)| o), line, 0),
            _ => t.pos,
        };
        let d = Diagnostic::new(
            &exp.path,
            pos,
            format!("`{key}` failed to render for cell {}: {}", plan.short_label(cell), e.message),
        );
        match e.hint {
            Some(hint) => d.with_hint(hint),
            None => d,
        }
    };
    let mut ctx = Context::new();
    ctx.set("workdir", Value::from(builtins.workdir));
    ctx.set("repetition", Value::from(builtins.repetition));
    ctx.set("host", Value::from(builtins.host));
    ctx.set("experiment", Value::from(exp.name.as_str()));
    for (k, v) in plan.levels(cell) {
        // a gang's member renders its commands as itself (docs/experiment-file.md, gangs)
        if k == "host" && exp.spec.gang(&v.text).is_some() && builtins.host != v.text {
            continue;
        }
        ctx.set(k, scalar_value(v));
    }
    if !exp.spec.services.is_empty() {
        ctx.set(SERVICES, services_value(exp));
    }
    if !exp.git.is_empty() {
        ctx.set(GIT, git_value(exp, plan, cell));
    }
    for (name, t) in &exp.spec.vars {
        let value = templates.render_value(&t.value, &ctx).map_err(|e| fail(&name.value, t, e))?;
        ctx.set(&name.value, Value::from(value));
    }
    let mut out = Commands::default();
    let mut rendered = Vec::new();
    for (key, t) in exp.spec.commands() {
        let text = templates.render_command(&t.value, &ctx, &mut out.env).map_err(|e| fail(key, t, e))?;
        rendered.push((key, t, text.len()));
        let slot = match key {
            "setup" => &mut out.setup,
            "prepare" => &mut out.prepare,
            "conclude" => &mut out.conclude,
            "cleanup" => &mut out.cleanup,
            _ => {
                out.run = text;
                continue;
            }
        };
        *slot = Some(text);
    }
    // every command of the cell runs with all the cell's values in its environment
    let values: usize = out.env.iter().map(|(k, v)| k.len() + 1 + v.len() + 1).sum();
    if let Some((key, t, len)) = rendered.into_iter().find(|(_, _, len)| len + values > MAX_COMMAND_BYTES) {
        let what = if values == 0 {
            format!("{len} bytes")
        } else {
            format!("{len} bytes, and the values it refers to {values} more")
        };
        let e = TemplateError {
            line: None,
            message: format!(
                "it renders to {what}: a command can be at most {MAX_COMMAND_BYTES} bytes, values \
                 included (Linux passes it to `sh -c` as one argument)"
            ),
            hint: Some(
                "make large text in the shell instead (`head -c`, `seq`, a loop), or write it to a file \
                 in `setup` and read it from there"
                    .into(),
            ),
        };
        return Err(fail(key, t, e));
    }
    Ok(out)
}

/// `services` as templates see it: per service, `host` and `address`.
fn services_value(exp: &Experiment) -> Value {
    let map: std::collections::BTreeMap<&str, Value> = exp
        .spec
        .services
        .iter()
        .map(|(name, s)| {
            let (host, address) = exp.spec.service_place(&s.value);
            let entry: std::collections::BTreeMap<&str, Value> =
                [("host", Value::from(host)), ("address", Value::from(address))].into_iter().collect();
            (name.value.as_str(), Value::from(entry))
        })
        .collect();
    Value::from(map)
}

/// The name templates see the git factors under (`{{ git.FACTOR.repo }}`).
pub(crate) const GIT: &str = "git";

/// `git` as one cell's templates see it: per git factor, `repo` (the repository's top
/// folder, absolute), and `hash` and `subject` of the cell's commit.
fn git_value(exp: &Experiment, plan: &Plan, cell: &Cell) -> Value {
    let map: std::collections::BTreeMap<&str, Value> = exp
        .git
        .iter()
        .map(|g| {
            let level = plan.levels(cell).find(|(k, _)| *k == g.factor).map(|(_, v)| v.text.as_str());
            let commit = level.and_then(|l| g.commit(l));
            let entry: std::collections::BTreeMap<&str, Value> = [
                ("repo", Value::from(g.path.display().to_string())),
                ("hash", Value::from(commit.map_or("", |c| c.hash.as_str()))),
                ("subject", Value::from(commit.map_or("", |c| c.subject.as_str()))),
            ]
            .into_iter()
            .collect();
            (g.factor.as_str(), Value::from(entry))
        })
        .collect();
    Value::from(map)
}

/// A service as one cell runs it: its commands rendered for the cell's levels.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ServiceCommands {
    pub(crate) name: String,
    /// The `hosts:` key it runs on, or `local`.
    pub(crate) host: String,
    pub(crate) run: String,
    pub(crate) ready: Option<String>,
    pub(crate) alive: Option<String>,
    pub(crate) env: Vec<(String, String)>,
}

/// The services cell `cell` uses (their `when` holds), rendered for it: their templates
/// see the levels, `experiment` and `host` (the service's own). An error is located at the
/// key that failed (`when`, `run`, `ready` or `alive`).
pub(crate) fn render_services(
    templates: &Templates,
    exp: &Experiment,
    plan: &Plan,
    cell: &Cell,
) -> Result<Vec<ServiceCommands>, Located<String>> {
    let mut out = Vec::new();
    for (name, s) in &exp.spec.services {
        let (host, _) = exp.spec.service_place(&s.value);
        let ctx = || {
            let mut ctx = Context::new();
            ctx.set("experiment", Value::from(exp.name.as_str()));
            for (k, v) in plan.levels(cell) {
                ctx.set(k, scalar_value(v));
            }
            ctx
        };
        if let Some(when) = &s.value.when {
            let failed = |message: String| Located::new(message, when.pos);
            let condition = templates.condition(&when.value).map_err(|e| failed(e.message))?;
            let used = condition
                .keeps(ctx())
                .map_err(|e| failed(format!("service `{}`: `when` failed: {}", name.value, e.message)))?;
            if !used {
                continue;
            }
        }
        let mut ctx = ctx();
        ctx.set("host", Value::from(host.as_str()));
        let mut env = Vec::new();
        let mut render = |t: &Located<String>, key: &str| {
            templates.render_command(&t.value, &ctx, &mut env).map_err(|e| {
                Located::new(
                    format!("`services.{}.{key}` failed to render: {}", name.value, e.message),
                    t.pos,
                )
            })
        };
        let run = render(&s.value.run, "run")?;
        let ready = s.value.ready.as_ref().map(|t| render(t, "ready")).transpose()?;
        let alive = s.value.alive.as_ref().map(|t| render(t, "alive")).transpose()?;
        out.push(ServiceCommands { name: name.value.clone(), host, run, ready, alive, env });
    }
    Ok(out)
}

/// The experiment's templates, compiled once.
pub(crate) fn templates(exp: &Experiment) -> Templates {
    let vars = exp.spec.vars.values().map(|v| v.value.as_str());
    let services = exp.spec.services.values().flat_map(|s| s.value.commands().map(|(_, t)| t.value.as_str()));
    Templates::with_sources(exp.spec.commands().map(|(_, t)| t.value.as_str()).chain(vars).chain(services))
}

/// Whether a cell's commands can render differently from one trial to the next in a
/// session: when a command or a var names `repetition` (the workdir and the host stay for
/// the session; templates call no clock or random source). A template that does not compile
/// counts as changing, and reports its error at every trial as before.
pub(crate) fn renders_per_trial(exp: &Experiment, templates: &Templates) -> bool {
    let vars = exp.spec.vars.values().map(|v| v.value.as_str());
    let mut sources = exp.spec.commands().map(|(_, t)| t.value.as_str()).chain(vars);
    sources.any(|source| templates.names(source).map_or(true, |names| names.contains("repetition")))
}

/// Whether `setup` says something different for two cells of the same host, among the
/// first `n` cells: under interleaved order, what one cell's setup did is then in effect
/// while other cells' trials run. The workdir is the same for every cell here, since
/// each cell has its own anyway.
pub(crate) fn setup_differs(exp: &Experiment, plan: &Plan, n: usize) -> bool {
    if exp.spec.setup.is_none() {
        return false;
    }
    let templates = templates(exp);
    let mut seen: std::collections::HashMap<&str, Option<String>> = std::collections::HashMap::new();
    for cell in plan.cells.iter().take(n) {
        let host = super::host_of(plan, cell);
        let builtins = Builtins { workdir: "WORKDIR", repetition: 1, host };
        let Ok(commands) = render(&templates, exp, plan, cell, &builtins) else { continue };
        // with the values it refers to written out
        let setup = commands.setup.map(|mut setup| {
            for (name, value) in &commands.env {
                setup = setup.replace(&format!("${{{name}}}"), value);
            }
            setup
        });
        match seen.get(host) {
            None => {
                seen.insert(host, setup);
            }
            Some(first) if *first != setup => return true,
            Some(_) => {}
        }
    }
    false
}

/// Render the first `n` cells with placeholder built-ins; the first failure is returned.
pub(crate) fn check_renders(exp: &Experiment, plan: &Plan, n: usize) -> Result<(), Diagnostic> {
    let templates = templates(exp);
    let workdir = Path::new("/tmp/margin-check/workdir").display().to_string();
    let builtins = Builtins { workdir: &workdir, repetition: 1, host: "local" };
    for cell in plan.cells.iter().take(n) {
        render(&templates, exp, plan, cell, &builtins)?;
        if let Err(e) = render_services(&templates, exp, plan, cell) {
            return Err(Diagnostic::new(
                &exp.path,
                e.pos,
                format!("{} (cell {})", e.value, plan.short_label(cell)),
            ));
        }
    }
    Ok(())
}
