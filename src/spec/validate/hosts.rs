//! The checks of where cells run: `hosts:` (and the `host` factor naming them), `gangs:`
//! and `services:`.

use super::Checker;
use crate::diag::{excerpt, suggest};
use crate::spec::{Level, parse_duration};
use vocab::ENGINE_METRICS;

impl Checker<'_> {
    pub(super) fn hosts(&mut self) {
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
    pub(super) fn gangs(&mut self) {
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
                m.value.regex.is_none() && m.value.json.is_none() && !vocab::is_measured_metric(&k.value)
            });
            let open = exp.spec.parse.is_some() && !selects;
            for (metric, rule) in &g.aggregate {
                let reported =
                    ENGINE_METRICS.contains(&metric.value.as_str()) || named.contains(&metric.value.as_str());
                if !reported && !open {
                    let mut known: Vec<&str> = ENGINE_METRICS.to_vec();
                    known.extend(named.iter().copied().filter(|n| !vocab::is_telemetry_metric(n)));
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
                if vocab::is_telemetry_metric(&metric.value) {
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
                if !crate::spec::AGGREGATES.contains(&rule.value.as_str()) {
                    let hint = suggest(&rule.value, crate::spec::AGGREGATES.iter().copied())
                        .or_else(|| Some(format!("one of: {}", crate::spec::AGGREGATES.join(", "))));
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
    pub(super) fn services(&mut self) {
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
}
