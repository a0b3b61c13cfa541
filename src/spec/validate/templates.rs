//! The templates' checks: every command template and var compiles and uses only names
//! that exist, conditions (`where`, a service's `when`) read only factors, and the
//! report's own template compiles.

use std::collections::HashSet;
use std::path::Path;

use regex::Regex;

use super::Checker;
use crate::diag::{Pos, excerpt, pos_in_template, suggest};
use crate::spec::Located;
use template::check_syntax;
use vocab::{SERVICES, TEMPLATE_VARIABLES};

/// The name templates see the git factors under (as `plan::render` sets it).
const GIT: &str = "git";

impl Checker<'_> {
    /// Compile every template and check the names it uses exist.
    pub(super) fn templates(&mut self) {
        let exp = self.exp;
        let mut defined: Vec<String> = self.level_keys().into_iter().map(str::to_string).collect();
        let factor_names: HashSet<String> = defined.iter().cloned().collect();
        defined.extend(TEMPLATE_VARIABLES.iter().map(|s| s.to_string()));
        if !exp.spec.services.is_empty() {
            if let Some(f) = exp.spec.matrix.value.factors.iter().find(|f| f.name.value == SERVICES) {
                self.error_hint(
                    f.name.pos,
                    "the factor `services` hides the services' names in templates",
                    Some("choose another name for the factor".into()),
                );
            }
            if let Some((v, _)) = exp.spec.vars.iter().find(|(v, _)| v.value == SERVICES) {
                self.error_hint(
                    v.pos,
                    "the var `services` hides the services' names in templates",
                    Some("choose another name for the var".into()),
                );
            }
            defined.push(SERVICES.to_string());
        }
        if !exp.git.is_empty() {
            if let Some(f) = exp.spec.matrix.value.factors.iter().find(|f| f.name.value == GIT) {
                self.error_hint(
                    f.name.pos,
                    "the factor `git` hides the git factors' values (`{{ git.FACTOR.repo }}`) in templates",
                    Some("choose another name for the factor".into()),
                );
            }
            defined.push(GIT.to_string());
        }
        for (name, value) in &exp.spec.vars {
            self.name_rules(name.pos, &name.value, "var");
            if factor_names.contains(&name.value) {
                self.error(name.pos, format!("var `{}` has the name of a factor", excerpt(&name.value)));
            }
            self.template(&format!("vars.{}", name.value), value, &defined);
            defined.push(name.value.clone());
        }
        for (key, t) in exp.spec.commands() {
            self.template(key, t, &defined);
        }
        if let Some(filter) = &exp.spec.filter {
            let mut names: Vec<String> = self.level_keys().into_iter().map(str::to_string).collect();
            names.push("experiment".into());
            self.condition("`where`", filter, &names);
        }
    }

    /// A condition (`where`, a service's `when`) compiles and reads only `names`.
    pub(super) fn condition(&mut self, what: &str, c: &Located<String>, names: &[String]) {
        match self.templates.condition(&c.value) {
            Err(e) => self.error(c.pos, format!("{what} does not compile: {}", e.message)),
            Ok(condition) => {
                let mut used: Vec<String> = condition.names().into_iter().collect();
                used.sort();
                for n in used.iter().filter(|n| !names.contains(n)) {
                    let hint = suggest(n, names.iter().map(String::as_str));
                    self.error_hint(c.pos, format!("{what} uses `{n}`, which no factor defines"), hint);
                }
            }
        }
    }

    pub(in crate::spec) fn template(&mut self, key: &str, t: &Located<String>, defined: &[String]) {
        match self.templates.names(&t.value) {
            Err(e) => {
                let pos = template_pos(&self.exp.source, t, e.line.unwrap_or(1), 0);
                self.error(pos, format!("`{key}`: template {}", e.message));
            }
            Ok(names) => {
                let mut names: Vec<String> = names.into_iter().collect();
                names.sort();
                for n in names.iter().filter(|n| !defined.contains(n)) {
                    let (line, col) = first_use(&t.value, n);
                    let pos = template_pos(&self.exp.source, t, line, col);
                    let hint = suggest(n, defined.iter().map(String::as_str));
                    self.error_hint(
                        pos,
                        format!("`{key}` uses `{n}`, which no factor, var or built-in defines"),
                        hint,
                    );
                }
            }
        }
    }

    pub(super) fn report(&mut self) {
        let exp = self.exp;
        let Some(t) = &exp.spec.report.template else {
            return;
        };
        let base = exp.path.parent().unwrap_or(Path::new("."));
        let path = base.join(&t.value);
        match std::fs::read_to_string(&path) {
            Err(e) => {
                self.error(t.pos, format!("report template `{}`: {e}", excerpt(&path.display().to_string())))
            }
            Ok(text) => {
                if let Err(e) = check_syntax(&text) {
                    let line = e.line.map(|l| format!(" (line {l})")).unwrap_or_default();
                    self.error(
                        t.pos,
                        format!(
                            "report template `{}`{line}: {}",
                            excerpt(&path.display().to_string()),
                            e.message
                        ),
                    );
                }
            }
        }
    }
}

/// The 1-based line and 0-based column where `name` is first used as a whole word.
fn first_use(template: &str, name: &str) -> (usize, usize) {
    let re = Regex::new(&format!(r"\b{}\b", regex::escape(name))).ok();
    let offset = re.and_then(|r| r.find(template).map(|m| m.start())).unwrap_or(0);
    let before = &template[..offset];
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count());
    (line, col)
}

/// Map a position inside a template string to a position in the file.
fn template_pos(source: &str, t: &Located<String>, line: usize, col: usize) -> Pos {
    pos_in_template(source, t.pos, t.span.map(|(o, _)| o), line, col)
}
