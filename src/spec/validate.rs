//! Semantic checks: what the types cannot say. Every problem is reported with the
//! position of the value at fault; checking goes on after a problem so that one run of
//! `margin check` lists them all.

use std::collections::HashSet;
use std::path::Path;

use regex::Regex;

use super::{Experiment, Level, Located, RepetitionsSpec, parse_duration, parse_percent};
use crate::diag::{Diagnostic, Diagnostics, Pos, excerpt, pos_in_template, suggest};
use crate::template::{Templates, check_syntax};
use crate::vocab::{ENGINE_METRICS, FACTS, MONITOR_SOURCES, PARSERS, SERVICES, Scalar, TEMPLATE_VARIABLES};

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

    fn spec(&self) -> &super::Spec {
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

    fn matrix(&mut self) {
        let exp = self.exp;
        let m = &exp.spec.matrix.value;
        if m.factors.is_empty() && m.include.is_empty() {
            self.error_hint(
                exp.spec.matrix.pos,
                "the matrix has no factors",
                Some("add at least one factor, like `bs: [4k, 1M]`, or `include` entries".into()),
            );
        }
        let mut seen: Vec<(&str, &str)> = Vec::new(); // (name, where it is defined)
        for f in &m.factors {
            let name = f.name.value.as_str();
            self.name_rules(f.name.pos, name, "factor");
            if f.levels.is_empty() {
                self.error_hint(
                    f.list_pos,
                    format!("factor `{}` has no levels", excerpt(name)),
                    Some(format!("list at least one level, like `{name}: [a, b]`")),
                );
                continue;
            }
            let zip = f.is_zip();
            if zip {
                self.zip_group_rules(f);
                for key in f.zip_keys() {
                    self.duplicate_name(&mut seen, key, name, f.name.pos);
                }
            } else {
                self.duplicate_name(&mut seen, name, name, f.name.pos);
            }
            let mut texts: HashSet<String> = HashSet::new();
            for level in &f.levels {
                match (&level.value, zip) {
                    (Level::Scalar(s), false) => {
                        if !texts.insert(s.text.clone()) {
                            self.error(
                                level.pos,
                                format!(
                                    "level `{}` appears twice in factor `{}`",
                                    excerpt(&s.text),
                                    excerpt(name)
                                ),
                            );
                        }
                    }
                    (Level::Zip(_), true) => {}
                    _ => self.error_hint(
                        level.pos,
                        format!("factor `{}` mixes plain levels and maps", excerpt(name)),
                        Some("in a zipped group every level is a map with the same keys".into()),
                    ),
                }
            }
        }
        for entry in &m.exclude {
            self.exclude_entry(entry);
        }
        for entry in &m.include {
            if entry.value.is_empty() {
                self.error(entry.pos, "an empty `include` entry adds nothing");
            }
            for key in entry.value.keys() {
                self.name_rules(key.pos, &key.value, "include key");
                if let Some(keys) = self.zip_group(&key.value) {
                    self.error_hint(
                        key.pos,
                        format!("`{}` is a zipped group; include its keys instead", excerpt(&key.value)),
                        Some(format!("its keys are: {}", keys.join(", "))),
                    );
                }
            }
        }
    }

    fn duplicate_name<'s>(
        &mut self,
        seen: &mut Vec<(&'s str, &'s str)>,
        key: &'s str,
        owner: &'s str,
        pos: Pos,
    ) {
        if let Some((_, other)) = seen.iter().find(|(k, _)| *k == key) {
            let msg = if *other == key {
                format!("duplicate factor `{}`", excerpt(key))
            } else {
                format!(
                    "duplicate factor `{}`: it is already a key of the zipped group `{}`",
                    excerpt(key),
                    excerpt(other)
                )
            };
            self.error(pos, msg);
        } else {
            seen.push((key, owner));
        }
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

    fn zip_group_rules(&mut self, f: &super::Factor) {
        let keys: Vec<&str> = f.zip_keys();
        for level in &f.levels {
            let Level::Zip(map) = &level.value else {
                continue;
            };
            let these: Vec<&str> = map.keys().map(|k| k.value.as_str()).collect();
            let mut a = these.clone();
            let mut b = keys.clone();
            a.sort_unstable();
            b.sort_unstable();
            if a != b {
                self.error_hint(
                    level.pos,
                    format!(
                        "this level of zipped group `{}` has keys {{{}}}",
                        f.name.value,
                        these.join(", ")
                    ),
                    Some(format!("every level of the group needs the same keys: {{{}}}", keys.join(", "))),
                );
            }
            for k in map.keys() {
                self.name_rules(k.pos, &k.value, "zipped key");
            }
        }
    }

    fn exclude_entry(&mut self, entry: &Located<super::Combination>) {
        if entry.value.is_empty() {
            self.error(entry.pos, "an empty `exclude` entry would remove every cell");
        }
        let known: Vec<String> = self
            .spec()
            .matrix
            .value
            .factors
            .iter()
            .flat_map(|f| if f.is_zip() { f.zip_keys() } else { vec![f.name.value.as_str()] })
            .map(str::to_string)
            .collect();
        for (key, value) in &entry.value {
            if let Some(keys) = self.zip_group(&key.value) {
                self.error_hint(
                    key.pos,
                    format!("`{}` is a zipped group; exclude by one of its keys", excerpt(&key.value)),
                    Some(format!("its keys are: {}", keys.join(", "))),
                );
                continue;
            }
            let Some(levels) = self.levels_of(&key.value) else {
                let hint = suggest(&key.value, known.iter().map(String::as_str));
                self.error_hint(
                    key.pos,
                    format!("exclude names unknown factor `{}`", excerpt(&key.value)),
                    hint,
                );
                continue;
            };
            if !levels.iter().any(|l| l.text == value.value.text) {
                let list: Vec<&str> = levels.iter().map(|l| l.text.as_str()).collect();
                let hint = suggest(&value.value.text, list);
                self.error_hint(
                    value.pos,
                    format!(
                        "exclude: `{}` is not a level of `{}`, so this entry matches nothing",
                        excerpt(&value.value.text),
                        excerpt(&key.value)
                    ),
                    hint,
                );
            }
        }
    }

    fn environment(&mut self) {
        let exp = self.exp;
        for (name, env) in &exp.spec.environment {
            let e = &env.value;
            if name.value == "host" {
                self.error_hint(
                    name.pos,
                    "`host` cannot be an environment factor",
                    Some("the `host` factor picks an entry of `hosts:`; it is set, not detected".into()),
                );
                continue;
            }
            let levels = match self.levels_of(&name.value) {
                Some(levels) if exp.spec.matrix.value.factors.iter().any(|f| f.name.value == name.value) => {
                    levels
                }
                _ => {
                    let factors: Vec<&str> =
                        exp.spec.matrix.value.factors.iter().map(|f| f.name.value.as_str()).collect();
                    self.error_hint(
                        name.pos,
                        format!(
                            "environment factor `{}` is not a factor of the matrix",
                            excerpt(&name.value)
                        ),
                        suggest(&name.value, factors)
                            .or_else(|| Some(format!("add it to the matrix: `{}: [...]`", name.value))),
                    );
                    continue;
                }
            };
            let level_texts: Vec<&str> = levels.iter().map(|l| l.text.as_str()).collect();
            match (&e.fact, &e.probe) {
                (Some(_), Some(_)) | (None, None) => self.error(
                    env.pos,
                    format!(
                        "environment factor `{}` needs exactly one of `fact` or `probe`",
                        excerpt(&name.value)
                    ),
                ),
                (Some(fact), None) if !FACTS.contains(&fact.value.as_str()) => {
                    let hint = suggest(&fact.value, FACTS.iter().copied());
                    self.error_hint(fact.pos, format!("unknown fact `{}`", excerpt(&fact.value)), hint);
                }
                (None, Some(probe)) if probe.value.trim().is_empty() => {
                    self.error(probe.pos, "the probe command is empty");
                }
                _ => {}
            }
            for target in e.map.values().chain(e.default.iter()) {
                if !level_texts.contains(&target.value.text.as_str()) {
                    let hint = suggest(&target.value.text, level_texts.iter().copied());
                    self.error_hint(
                        target.pos,
                        format!(
                            "`{}` is not a level of factor `{}`",
                            excerpt(&target.value.text),
                            excerpt(&name.value)
                        ),
                        hint,
                    );
                }
            }
        }
    }

    fn hosts(&mut self) {
        let exp = self.exp;
        let host_factor = exp.spec.matrix.value.factors.iter().find(|f| f.name.value == "host");
        let names: Vec<&str> = exp.spec.hosts.keys().map(|k| k.value.as_str()).collect();
        let gangs: Vec<&str> = exp.spec.gangs.keys().map(|k| k.value.as_str()).collect();
        match host_factor {
            Some(f) => {
                for level in &f.levels {
                    let Level::Scalar(s) = &level.value else {
                        self.error(level.pos, "the levels of `host` are host names, not maps");
                        continue;
                    };
                    if !names.contains(&s.text.as_str()) && !gangs.contains(&s.text.as_str()) {
                        let hint = suggest(&s.text, names.iter().chain(&gangs).copied()).or_else(|| {
                            Some(format!("declare it: `hosts: {{ {}: {{ ssh: user@machine }} }}`", s.text))
                        });
                        self.error_hint(
                            level.pos,
                            format!("host `{}` is not declared under `hosts:`", excerpt(&s.text)),
                            hint,
                        );
                    }
                }
            }
            None => {
                let serves = |name: &str| {
                    exp.spec.services.values().any(|s| s.value.host.as_ref().is_some_and(|h| h.value == name))
                };
                if let Some((first, _)) = exp.spec.hosts.iter().find(|(name, _)| !serves(&name.value)) {
                    self.error_hint(
                        first.pos,
                        "`hosts:` is declared but the matrix has no `host` factor, so no cell would use them",
                        Some(format!("add `host: [{}]` to the matrix", names.join(", "))),
                    );
                }
            }
        }
        for (name, host) in &exp.spec.hosts {
            if let Some(ssh) = &host.value.ssh
                && (ssh.value.trim().is_empty()
                    || ssh.value.contains(char::is_whitespace)
                    || ssh.value.starts_with('-'))
            {
                // ssh reads a destination beginning with `-` as an option: `-oProxyCommand=…`
                // would run a command here
                let hint = ssh.value.starts_with('-').then(|| {
                    "ssh would read a destination beginning with `-` as an option; options go under `options:`"
                        .to_string()
                });
                self.error_hint(
                    ssh.pos,
                    format!(
                        "host `{}`: `ssh` must be `[user@]hostname`, found `{}`",
                        excerpt(&name.value),
                        excerpt(&ssh.value)
                    ),
                    hint,
                );
            }
            for opt in &host.value.options {
                if !opt.value.contains('=') {
                    self.error_hint(
                        opt.pos,
                        format!("ssh option `{}` is not of the form `Key=Value`", excerpt(&opt.value)),
                        Some("e.g. `ConnectTimeout=5`".into()),
                    );
                }
            }
        }
    }

    /// `gangs:` (docs/experiment-file.md, gangs): a name of its own, two or more declared
    /// hosts, each once, and aggregates of metrics the trials report, by a known rule.
    fn gangs(&mut self) {
        let exp = self.exp;
        let hosts: Vec<&str> = exp.spec.hosts.keys().map(|k| k.value.as_str()).collect();
        for (name, gang) in &exp.spec.gangs {
            self.name_rules(name.pos, &name.value, "gang");
            if hosts.contains(&name.value.as_str()) || name.value == "local" {
                self.error_hint(
                    name.pos,
                    format!("gang `{}` has the name of a host", excerpt(&name.value)),
                    Some("a level of `host` names a host or a gang: give the gang a name of its own".into()),
                );
            }
            let g = &gang.value;
            if g.hosts.len() < 2 {
                self.error_hint(
                    gang.pos,
                    format!(
                        "gang `{}` has {} host{}: a gang runs two or more hosts at once",
                        excerpt(&name.value),
                        g.hosts.len(),
                        if g.hosts.len() == 1 { "" } else { "s" }
                    ),
                    Some("list its hosts: `hosts: [domu1, domu2]`; a single host is a level of `host` by itself".into()),
                );
            }
            let mut seen: Vec<&str> = Vec::new();
            for member in &g.hosts {
                if seen.contains(&member.value.as_str()) {
                    self.error_hint(
                        member.pos,
                        format!(
                            "gang `{}`: host `{}` is listed twice",
                            excerpt(&name.value),
                            excerpt(&member.value)
                        ),
                        Some("a host runs one trial at a time: list each host once".into()),
                    );
                } else if !hosts.contains(&member.value.as_str()) {
                    let hint = suggest(&member.value, hosts.iter().copied()).or_else(|| {
                        Some(format!("declare it: `hosts: {{ {}: {{ ssh: user@machine }} }}`", member.value))
                    });
                    self.error_hint(
                        member.pos,
                        format!(
                            "gang `{}`: host `{}` is not declared under `hosts:`",
                            excerpt(&name.value),
                            excerpt(&member.value)
                        ),
                        hint,
                    );
                }
                seen.push(&member.value);
            }
            // the metrics a trial reports: margin's own, those `metrics:` names (a parser's
            // selection, or extractors) and, when `metrics:` selects none, whatever the
            // parser finds (checked when the trial runs)
            let named: Vec<&str> = exp.spec.metrics.keys().map(|k| k.value.as_str()).collect();
            let selects = exp.spec.metrics.iter().any(|(k, m)| {
                m.value.regex.is_none()
                    && m.value.json.is_none()
                    && !crate::vocab::is_measured_metric(&k.value)
            });
            let open = exp.spec.parse.is_some() && !selects;
            for (metric, rule) in &g.aggregate {
                let reported =
                    ENGINE_METRICS.contains(&metric.value.as_str()) || named.contains(&metric.value.as_str());
                if !reported && !open {
                    let mut known: Vec<&str> = ENGINE_METRICS.to_vec();
                    known.extend(named.iter().copied().filter(|n| !crate::vocab::is_telemetry_metric(n)));
                    self.error_hint(
                        metric.pos,
                        format!(
                            "gang `{}`: no trial reports the metric `{}` to aggregate",
                            excerpt(&name.value),
                            excerpt(&metric.value)
                        ),
                        Some(format!("the trials report: {}", known.join(", "))),
                    );
                }
                if crate::vocab::is_telemetry_metric(&metric.value) {
                    self.error_hint(
                        metric.pos,
                        format!(
                            "gang `{}`: `{}` is what a machine did, not a trial's result: it is not aggregated",
                            excerpt(&name.value),
                            excerpt(&metric.value)
                        ),
                        Some("each member's counters are kept as `metric@host`".into()),
                    );
                }
                if metric.value.contains('@') {
                    self.error_hint(
                        metric.pos,
                        format!(
                            "gang `{}`: `{}` names a member's metric",
                            excerpt(&name.value),
                            excerpt(&metric.value)
                        ),
                        Some(
                            "aggregate the metric by its own name: the members' values are `metric@host`"
                                .into(),
                        ),
                    );
                }
                if !super::AGGREGATES.contains(&rule.value.as_str()) {
                    let hint = suggest(&rule.value, super::AGGREGATES.iter().copied())
                        .or_else(|| Some(format!("one of: {}", super::AGGREGATES.join(", "))));
                    self.error_hint(
                        rule.pos,
                        format!(
                            "gang `{}`: unknown aggregate `{}` for `{}`",
                            excerpt(&name.value),
                            excerpt(&rule.value),
                            excerpt(&metric.value)
                        ),
                        hint,
                    );
                }
            }
        }
        let used = |gang: &str| {
            exp.spec
                .matrix
                .value
                .factors
                .iter()
                .filter(|f| f.name.value == "host")
                .flat_map(|f| &f.levels)
                .any(|l| matches!(&l.value, Level::Scalar(s) if s.text == gang))
        };
        if let Some((name, _)) = exp.spec.gangs.iter().find(|(name, _)| !used(&name.value)) {
            self.error_hint(
                name.pos,
                format!("gang `{}` is declared but no level of `host` names it", excerpt(&name.value)),
                Some(format!("add it to the matrix: `host: [..., {}]`", name.value)),
            );
        }
    }

    /// `services:`: names, hosts, durations, their templates (over the levels and
    /// `experiment`, and `host`: the service's) and `when` conditions.
    fn services(&mut self) {
        let exp = self.exp;
        let hosts: Vec<&str> = exp.spec.hosts.keys().map(|k| k.value.as_str()).collect();
        let mut names: Vec<String> = self.level_keys().into_iter().map(str::to_string).collect();
        names.push("experiment".into());
        let mut defined = names.clone();
        defined.push("host".into());
        for (name, service) in &exp.spec.services {
            self.name_rules(name.pos, &name.value, "service");
            let s = &service.value;
            if let Some(host) = &s.host
                && !hosts.contains(&host.value.as_str())
            {
                let hint = suggest(&host.value, hosts.iter().copied()).or_else(|| {
                    Some(format!(
                        "declare it: `hosts: {{ {}: {{ ssh: user@machine }} }}`, or leave `host` out for this machine",
                        host.value
                    ))
                });
                self.error_hint(
                    host.pos,
                    format!(
                        "service `{}`: host `{}` is not declared under `hosts:`",
                        excerpt(&name.value),
                        excerpt(&host.value)
                    ),
                    hint,
                );
            }
            if let Some(t) = &s.ready_timeout
                && let Err(e) = parse_duration(&t.value)
            {
                self.error(t.pos, format!("service `{}`: ready_timeout: {e}", excerpt(&name.value)));
            }
            for (key, t) in s.commands() {
                self.template(&format!("services.{}.{key}", name.value), t, &defined);
            }
            if let Some(when) = &s.when {
                self.condition(&format!("service `{}`: `when`", excerpt(&name.value)), when, &names);
            }
        }
    }

    /// Compile every template and check the names it uses exist.
    fn templates(&mut self) {
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
    fn condition(&mut self, what: &str, c: &Located<String>, names: &[String]) {
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

    pub(super) fn template(&mut self, key: &str, t: &Located<String>, defined: &[String]) {
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

    fn metrics(&mut self) {
        let exp = self.exp;
        if let Some(parse) = &exp.spec.parse
            && !PARSERS.contains(&parse.value.as_str())
        {
            let hint = suggest(&parse.value, PARSERS.iter().copied());
            self.error_hint(parse.pos, format!("unknown parser `{}`", excerpt(&parse.value)), hint);
        }
        for (name, metric) in &exp.spec.metrics {
            let m = &metric.value;
            let sources = [m.regex.is_some(), m.json.is_some(), m.from.is_some()];
            if sources.iter().filter(|s| **s).count() > 1 {
                self.error(
                    metric.pos,
                    format!("metric `{}`: use only one of `regex`, `json`, `from`", excerpt(&name.value)),
                );
            }
            if let Some(re) = &m.regex {
                match Regex::new(&re.value) {
                    Err(e) => {
                        let detail = e.to_string();
                        let detail = detail.lines().last().unwrap_or_default().trim();
                        let detail = detail.trim_start_matches("error: ");
                        self.error(
                            re.pos,
                            format!("metric `{}`: the regex does not compile: {detail}", excerpt(&name.value)),
                        );
                    }
                    Ok(r) if r.captures_len() < 2 => self.error_hint(
                        re.pos,
                        format!("metric `{}`: the regex has no capture group", excerpt(&name.value)),
                        Some("put the number in parentheses: `copied, ([\\d.]+) s`".into()),
                    ),
                    Ok(r) if r.captures_len() > 2 && r.capture_names().flatten().next().is_none() => self.error_hint(
                        re.pos,
                        format!("metric `{}`: the regex has {} capture groups", excerpt(&name.value), r.captures_len() - 1),
                        Some("capture the number with one group, use `(?:…)` for the others, or name each group `(?P<metric>…)`".into()),
                    ),
                    Ok(_) => {}
                }
            }
            if let Some(sample) = &m.sample
                && m.regex.is_none()
                && m.json.is_none()
            {
                self.error_hint(
                    sample.pos,
                    format!(
                        "metric `{}`: a `sample:` with no `regex` or `json` to try on it",
                        excerpt(&name.value)
                    ),
                    Some("give the metric a `regex` (or `json`), or remove `sample:`".into()),
                );
            }
            if let Some(p) = &m.json
                && !(p.value.is_empty() || p.value.starts_with('/'))
            {
                self.error_hint(
                    p.pos,
                    format!(
                        "metric `{}`: `{}` is not a JSON pointer",
                        excerpt(&name.value),
                        excerpt(&p.value)
                    ),
                    Some("a JSON pointer starts with `/`, like `/jobs/0/write/bw_bytes`".into()),
                );
            }
            if let Some(unit) = &m.unit
                && let Err(e) = crate::vocab::parse_unit(&unit.value)
            {
                self.error(unit.pos, format!("metric `{}`: {e}", excerpt(&name.value)));
            }
            let has_source = sources.iter().any(|s| *s);
            if !has_source && exp.spec.parse.is_none() && !crate::vocab::is_measured_metric(&name.value) {
                self.error_hint(
                    name.pos,
                    format!(
                        "metric `{}` has no source: no `parse:` is set and it has no `regex` or `json`",
                        excerpt(&name.value)
                    ),
                    Some(format!(
                        "set `parse:`, give it a `regex`, or use a measured metric: {}",
                        ENGINE_METRICS.join(", ")
                    )),
                );
            }
        }
    }

    /// `monitor:`: `none` or a list of known sources, and a telemetry metric named under
    /// `metrics:` needs its source monitored (docs/experiment-file.md, monitor).
    fn monitor(&mut self) {
        let exp = self.exp;
        let sources = MONITOR_SOURCES.join(", ");
        if let Some(m) = exp.spec.monitor.as_ref() {
            match &m.value {
                super::MonitorSpec::Word(w) if w == "none" => {}
                super::MonitorSpec::Word(w) => self.error_hint(
                    m.pos,
                    format!("monitor: expected `none` or a list of sources, found `{}`", excerpt(w)),
                    Some(format!(
                        "write `monitor: none`, or a list such as `monitor: [cpu, disks]`; sources: {sources}"
                    )),
                ),
                super::MonitorSpec::List(names) => {
                    for name in names {
                        if !MONITOR_SOURCES.contains(&name.value.as_str()) {
                            let hint = suggest(&name.value, MONITOR_SOURCES.iter().copied())
                                .unwrap_or_else(|| format!("the sources are {sources}"));
                            self.error_hint(
                                name.pos,
                                format!("monitor: unknown source `{}`", excerpt(&name.value)),
                                Some(hint),
                            );
                        }
                    }
                }
            }
        }
        let selected = exp.spec.monitor();
        for name in exp.spec.metrics.keys() {
            if !crate::vocab::is_telemetry_metric(&name.value) {
                continue;
            }
            let source = crate::vocab::telemetry_source(&name.value);
            if !selected.contains(&source) {
                self.error_hint(
                    name.pos,
                    format!(
                        "metric `{}` is read from `{source}` telemetry, which `monitor:` does not select",
                        excerpt(&name.value)
                    ),
                    Some(format!("add `{source}` to `monitor:`")),
                );
            }
        }
    }

    fn settings(&mut self) {
        let exp = self.exp;
        if let Some(r) = &exp.spec.repetitions {
            if let RepetitionsSpec::Adaptive { target, until, .. } = &r.value {
                match (target, until) {
                    (Some(target), None) => {
                        if let Err(e) = parse_percent(&target.value) {
                            self.error(target.pos, format!("repetitions: target: {e}"));
                        }
                    }
                    (None, Some(until)) => {
                        if until.value.text != "verdict" {
                            self.error_hint(
                                until.pos,
                                format!("repetitions: until: expected `verdict`, found `{}`", excerpt(&until.value.text)),
                                Some(
                                    "`until: verdict` stops a comparison's cells once it is resolved; to stop \
                                     on the margin of error write `target: 2%` instead"
                                        .into(),
                                ),
                            );
                        }
                        if exp.spec.order == Some(crate::spec::Order::Sequential) {
                            self.error_hint(
                                until.pos,
                                "repetitions: `until: verdict` needs `order: interleaved`",
                                Some(
                                    "a comparison is looked at when both its sides have the trials of a look; \
                                     sequential order runs one cell to its end before the next begins"
                                        .into(),
                                ),
                            );
                        }
                    }
                    (Some(_), Some(until)) => self.error_hint(
                        until.pos,
                        "repetitions: `target` and `until` cannot both be set",
                        Some(
                            "`target: 2%` stops each cell on its margin of error; `until: verdict` stops a \
                             comparison's cells once it is resolved (beyond or within ±δ): keep one"
                                .into(),
                        ),
                    ),
                    (None, None) => self.error_hint(
                        r.pos,
                        "repetitions: adaptive needs `target` or `until`",
                        Some(
                            "write `{ min: 5, max: 30, target: 2% }` to stop on the margin of error, or \
                             `{ min: 5, max: 30, until: verdict }` to stop once the comparisons are resolved"
                                .into(),
                        ),
                    ),
                }
            }
            match r.value {
                RepetitionsSpec::Fixed(0) => self.error(r.pos, "repetitions must be at least 1"),
                RepetitionsSpec::Adaptive { min, max, .. } if min > max => {
                    self.error(r.pos, format!("repetitions: min ({min}) is greater than max ({max})"))
                }
                RepetitionsSpec::Adaptive { min, .. } if min < 5 => self.error_hint(
                    r.pos,
                    format!("repetitions: adaptive needs min ≥ 5, found {min}"),
                    Some(
                        "stopping as soon as the interval looks narrow, from fewer trials, makes it too \
                         narrow: a 95 % interval covers about 90 % at min 2 (docs/statistics.md). For a \
                         fixed small count write `repetitions: N`"
                            .into(),
                    ),
                ),
                _ => {}
            }
        }
        if let Some(t) = &exp.spec.timeout
            && let Err(e) = parse_duration(&t.value)
        {
            self.error(t.pos, format!("timeout: {e}"));
        }
    }

    fn analysis(&mut self) {
        let exp = self.exp;
        let a = &exp.spec.analysis;
        if let Some(c) = &a.confidence
            && !(c.value > 0.0 && c.value < 1.0)
        {
            self.error_hint(
                c.pos,
                format!("confidence must be between 0 and 1 (exclusive), found {}", c.value),
                Some("e.g. `confidence: 0.95`".into()),
            );
        }
        if let Some(t) = &a.threshold
            && let Err(e) = parse_percent(&t.value)
        {
            self.error(t.pos, format!("threshold: {e}"));
        }
        if let Some(o) = &a.outliers {
            self.outliers(o);
        }
        let keys: Vec<String> = self.level_keys().into_iter().map(str::to_string).collect();
        for cmp in &a.compare {
            let c = &cmp.value;
            let factor = c.factor.value.as_str();
            let levels = self.levels_of(factor).or_else(|| {
                // comparing a zipped group: its first key's values name its levels
                self.zip_group(factor).and_then(|k| k.first().and_then(|first| self.levels_of(first)))
            });
            let Some(levels) = levels else {
                let hint = suggest(factor, keys.iter().map(String::as_str));
                self.error_hint(c.factor.pos, format!("compare: unknown factor `{}`", excerpt(factor)), hint);
                continue;
            };
            let texts: Vec<&str> = levels.iter().map(|l| l.text.as_str()).collect();
            if texts.len() < 2 {
                self.error(
                    c.factor.pos,
                    format!("compare: factor `{}` has a single level, nothing to compare", excerpt(factor)),
                );
            }
            if !texts.contains(&c.baseline.value.text.as_str()) {
                let hint = suggest(&c.baseline.value.text, texts.iter().copied());
                self.error_hint(
                    c.baseline.pos,
                    format!(
                        "compare: baseline `{}` is not a level of `{}`",
                        excerpt(&c.baseline.value.text),
                        excerpt(factor)
                    ),
                    hint,
                );
            }
            if let Some(p) = &c.paired_by {
                if p.value == factor {
                    self.error(p.pos, "compare: a factor cannot be paired by itself");
                } else if !keys.contains(&p.value) {
                    let hint = suggest(&p.value, keys.iter().map(String::as_str));
                    self.error_hint(
                        p.pos,
                        format!("compare: `paired_by` names unknown factor `{}`", excerpt(&p.value)),
                        hint,
                    );
                }
            }
        }
    }

    /// `analysis.outliers`: a cutoff for `mad` and `iqr`, a false-flag rate for
    /// `studentized` (docs/statistics.md, Outliers).
    fn outliers(&mut self, o: &super::Outliers) {
        use super::OutlierMethod;
        if let Some(cutoff) = &o.cutoff {
            if o.method == OutlierMethod::Studentized || o.method == OutlierMethod::None {
                self.error_hint(
                    cutoff.pos,
                    "outliers: `cutoff` applies to the `mad` and `iqr` methods",
                    Some("`studentized` takes a false-flag rate instead, e.g. `rate: 1%`".into()),
                );
            } else if !(cutoff.value > 0.0 && cutoff.value.is_finite()) {
                self.error(
                    cutoff.pos,
                    format!("outliers: cutoff must be a positive number, found {}", cutoff.value),
                );
            }
        }
        if let Some(rate) = &o.rate {
            if o.method != OutlierMethod::Studentized {
                self.error_hint(
                    rate.pos,
                    "outliers: `rate` applies to the `studentized` method",
                    Some("`mad` and `iqr` take a `cutoff` instead, e.g. `cutoff: 3.5`".into()),
                );
            } else {
                match parse_percent(&rate.value) {
                    Err(e) => self.error(rate.pos, format!("outliers: rate: {e}")),
                    Ok(p) if p.0 > 0.5 => self.error_hint(
                        rate.pos,
                        format!("outliers: rate must be at most 50%, found `{}`", rate.value.text),
                        Some("the chance a clean cell loses a value; 1% is the default".into()),
                    ),
                    Ok(_) => {}
                }
            }
        }
    }

    fn report(&mut self) {
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
