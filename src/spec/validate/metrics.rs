//! The metrics' checks: the parser, each metric's source (regex, JSON pointer, `from`),
//! its unit, and the telemetry `monitor:` selects.

use regex::Regex;

use super::Checker;
use crate::diag::{excerpt, suggest};
use vocab::{ENGINE_METRICS, MONITOR_SOURCES, PARSERS};

impl Checker<'_> {
    pub(super) fn metrics(&mut self) {
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
                && let Err(e) = vocab::parse_unit(&unit.value)
            {
                self.error(unit.pos, format!("metric `{}`: {e}", excerpt(&name.value)));
            }
            let has_source = sources.iter().any(|s| *s);
            if !has_source && exp.spec.parse.is_none() && !vocab::is_measured_metric(&name.value) {
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
    pub(super) fn monitor(&mut self) {
        let exp = self.exp;
        let sources = MONITOR_SOURCES.join(", ");
        if let Some(m) = exp.spec.monitor.as_ref() {
            match &m.value {
                crate::spec::MonitorSpec::Word(w) if w == "none" => {}
                crate::spec::MonitorSpec::Word(w) => self.error_hint(
                    m.pos,
                    format!("monitor: expected `none` or a list of sources, found `{}`", excerpt(w)),
                    Some(format!(
                        "write `monitor: none`, or a list such as `monitor: [cpu, disks]`; sources: {sources}"
                    )),
                ),
                crate::spec::MonitorSpec::List(names) => {
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
            if !vocab::is_telemetry_metric(&name.value) {
                continue;
            }
            let source = vocab::telemetry_source(&name.value);
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
}
