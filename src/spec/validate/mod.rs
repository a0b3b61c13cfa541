//! Semantic checks: what the types cannot say. Every problem is reported with the
//! position of the value at fault; checking goes on after a problem so that one run of
//! `margin check` lists them all.
//!
//! The checks are grouped by what they check, one file each: [`matrix`], [`hosts`] (and
//! gangs, services), [`templates`], [`metrics`] (and monitor), [`settings`] (repetitions,
//! timeout, analysis); a host's boot recipe is checked in `spec/boot.rs`. [`validate`]
//! runs them in a fixed order, so the diagnostics come out in the same order every time.

mod hosts;
mod matrix;
mod metrics;
mod settings;
mod templates;

use crate::diag::{Diagnostic, Diagnostics, Pos, excerpt};
use crate::spec::{Experiment, Level};
use template::Templates;
use vocab::{Scalar, TEMPLATE_VARIABLES};

pub(super) struct Checker<'a> {
    pub(super) exp: &'a Experiment,
    out: Diagnostics,
    templates: Templates,
}

pub(super) fn validate(exp: &Experiment) -> Diagnostics {
    let mut c = Checker { exp, out: Diagnostics::default(), templates: Templates::new() };
    c.name();
    c.matrix();
    c.environment();
    c.hosts();
    c.boots();
    c.services();
    c.gangs();
    c.templates();
    c.metrics();
    c.settings();
    c.monitor();
    c.analysis();
    c.report();
    c.out
}

fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

impl<'a> Checker<'a> {
    pub(super) fn error(&mut self, pos: Pos, message: impl Into<String>) {
        self.out.push(Diagnostic::new(&self.exp.path, pos, message));
    }

    pub(super) fn error_hint(&mut self, pos: Pos, message: impl Into<String>, hint: Option<String>) {
        let d = Diagnostic::new(&self.exp.path, pos, message);
        self.out.push(match hint {
            Some(h) => d.with_hint(h),
            None => d,
        });
    }

    fn spec(&self) -> &crate::spec::Spec {
        &self.exp.spec
    }

    fn name(&mut self) {
        let name = self.exp.name.clone();
        let pos = self.spec().name.as_ref().map(|n| n.pos).unwrap_or_default();
        let ok = !name.is_empty()
            && name != "."
            && name != ".."
            && !name.starts_with('.')
            && name.chars().all(|c| c.is_ascii_alphanumeric() || "-_.+".contains(c));
        if !ok {
            self.error_hint(
                pos,
                format!("the experiment name `{}` cannot name a folder under reports/", excerpt(&name)),
                Some("use letters, digits, `-`, `_`, `.` or `+`".into()),
            );
        }
    }

    /// Every name a cell defines: scalar factors, zipped keys, keys added by `include`.
    fn level_keys(&self) -> Vec<&'a str> {
        let m = &self.exp.spec.matrix.value;
        let mut keys: Vec<&str> = Vec::new();
        for f in &m.factors {
            if f.is_zip() {
                keys.extend(f.zip_keys());
            } else {
                keys.push(&f.name.value);
            }
        }
        for entry in &m.include {
            for k in entry.value.keys() {
                if !keys.contains(&k.value.as_str()) {
                    keys.push(&k.value);
                }
            }
        }
        keys
    }

    /// The levels a key can take (for a zipped key, the values of that key).
    fn levels_of(&self, key: &str) -> Option<Vec<&'a Scalar>> {
        for f in &self.exp.spec.matrix.value.factors {
            if f.name.value == key && !f.is_zip() {
                return Some(
                    f.levels
                        .iter()
                        .filter_map(|l| match &l.value {
                            Level::Scalar(s) => Some(s),
                            Level::Zip(_) => None,
                        })
                        .collect(),
                );
            }
            if f.zip_keys().contains(&key) {
                return Some(
                    f.levels
                        .iter()
                        .filter_map(|l| match &l.value {
                            Level::Zip(m) => m.iter().find(|(k, _)| k.value == key).map(|(_, v)| &v.value),
                            Level::Scalar(_) => None,
                        })
                        .collect(),
                );
            }
        }
        None
    }

    fn zip_group(&self, name: &str) -> Option<Vec<&'a str>> {
        self.exp
            .spec
            .matrix
            .value
            .factors
            .iter()
            .find(|f| f.name.value == name && f.is_zip())
            .map(|f| f.zip_keys())
    }

    fn name_rules(&mut self, pos: Pos, name: &str, what: &str) {
        if !is_identifier(name) {
            self.error_hint(
                pos,
                format!("{what} `{}` is not a valid name", excerpt(name)),
                Some(
                    "names are used in templates: letters, digits and `_`, not starting with a digit".into(),
                ),
            );
        } else if TEMPLATE_VARIABLES.contains(&name) && name != "host" {
            self.error_hint(
                pos,
                format!("{what} `{name}` shadows a built-in template name"),
                Some(format!(
                    "`{}` are provided by margin; choose another name",
                    TEMPLATE_VARIABLES.join("`, `")
                )),
            );
        }
    }
}
