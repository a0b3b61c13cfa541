//! An experiment's way of reading its outputs: the built-in parser, the extractors it
//! declares, and the `metrics:` entries that select, rename and annotate.

use super::extract::{self, ExtractorError};
use super::{Better, MeanKind, ParseError, Parsed, Parser, Sample, builtin};
use crate::diag::{Diagnostic, Diagnostics};
use crate::spec::{Experiment, MetricSpec, Spec};
use vocab::is_measured_metric;

/// A parser metric kept under a name, with the experiment's annotations.
#[derive(Debug, Clone)]
struct Selection {
    name: String,
    from: String,
}

/// How one experiment turns a trial's output into metrics.
pub struct Recipe {
    parser: Option<&'static dyn Parser>,
    extractors: Vec<Box<dyn Parser>>,
    /// Empty: keep every parser metric. Otherwise keep these, renamed.
    selections: Vec<Selection>,
    /// `better:` / `mean:` overrides by (final) metric name.
    annotations: Vec<(String, Option<Better>, Option<MeanKind>)>,
}

impl std::fmt::Debug for Recipe {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Recipe")
            .field("parser", &self.parser.map(|p| p.name()))
            .field("extractors", &self.extractors.len())
            .field("selections", &self.selections)
            .finish()
    }
}

fn extractor(name: &str, m: &MetricSpec) -> Option<Result<Box<dyn Parser>, ExtractorError>> {
    let unit = m.unit.as_ref().map_or("", |u| u.value.as_str());
    let better = m.better.unwrap_or(Better::Higher);
    let mean = m.mean.unwrap_or_default();
    if let Some(re) = &m.regex {
        return Some(
            extract::regex(name, &re.value, unit, better, mean).map(|e| Box::new(e) as Box<dyn Parser>),
        );
    }
    if let Some(pointer) = &m.json {
        return Some(
            extract::json(name, &pointer.value, unit, better, mean).map(|e| Box::new(e) as Box<dyn Parser>),
        );
    }
    None
}

/// Each metric's `regex` or `json` tried on the metric's `sample:` (as a trial's stdout),
/// before any trial runs: an extractor that finds no number there is an error at the
/// sample, so a quoting mistake in the regex costs a `check`, not a run of the matrix.
/// An extractor that does not build is left to validation, which says why.
pub fn check_samples(exp: &Experiment) -> Result<(), Diagnostics> {
    let mut problems = Diagnostics::default();
    for (name, m) in &exp.spec.metrics {
        let (name, m) = (&name.value, &m.value);
        let Some(sample) = &m.sample else { continue };
        let Some(Ok(extractor)) = extractor(name, m) else { continue };
        let what = if m.regex.is_some() { "regex" } else { "JSON pointer" };
        let found = extractor.parse(&sample.value, "");
        let why = match found {
            Ok(parsed) if !parsed.samples.is_empty() => continue,
            Ok(_) => String::new(),
            Err(e) => e.to_string(),
        };
        // the part of the regex that matched, when the search could tell (parse/extract.rs)
        let hint = match why.lines().last() {
            Some(last) if last.starts_with('`') => last.to_string(),
            _ if m.regex.is_some() => "a trial's output is searched the same way; in single quotes YAML \
                                       keeps `\\d` as written, in double quotes write `\\\\d`"
                .to_string(),
            _ => "the pointer is looked up in the first JSON object of the sample".to_string(),
        };
        problems.push(
            Diagnostic::new(
                &exp.path,
                sample.pos,
                format!(
                    "metric `{}`: its {what} finds no number in its `sample:`",
                    crate::diag::excerpt(name)
                ),
            )
            .with_hint(hint),
        );
    }
    problems.into_result(())
}

impl Recipe {
    /// Build the recipe of an experiment; an extractor that cannot be built (bad regex,
    /// unknown unit) is reported with the metric's name.
    pub fn from_spec(spec: &Spec) -> Result<Recipe, (String, ExtractorError)> {
        let parser = spec.parse.as_ref().and_then(|p| builtin(&p.value));
        let mut recipe =
            Recipe { parser, extractors: Vec::new(), selections: Vec::new(), annotations: Vec::new() };
        for (name, m) in &spec.metrics {
            let (name, m) = (&name.value, &m.value);
            match extractor(name, m) {
                Some(built) => recipe.extractors.push(built.map_err(|e| (name.clone(), e))?),
                None => {
                    let from = m.from.as_ref().map_or(name.as_str(), |f| f.value.as_str());
                    if !is_measured_metric(from) {
                        recipe.selections.push(Selection { name: name.clone(), from: from.to_string() });
                    }
                }
            }
            if m.better.is_some() || m.mean.is_some() {
                recipe.annotations.push((name.clone(), m.better, m.mean));
            }
        }
        Ok(recipe)
    }

    /// Whether the experiment reads anything from its outputs (else: engine metrics only).
    pub fn reads_output(&self) -> bool {
        self.parser.is_some() || !self.extractors.is_empty()
    }

    /// Overrides of `better:` / `mean:` for a metric, as the experiment declares them.
    pub fn annotation(&self, name: &str) -> (Option<Better>, Option<MeanKind>) {
        self.annotations.iter().find(|(n, ..)| n == name).map_or((None, None), |(_, b, m)| (*b, *m))
    }

    /// Parse one output. Several results (bonnie++ `-x`, hyperfine's runs) stay several
    /// samples; an extractor's i-th match joins the parser's i-th result.
    pub fn apply(&self, stdout: &str, stderr: &str) -> Result<Parsed, ParseError> {
        let mut parsed = match self.parser {
            Some(p) => p.parse(stdout, stderr)?,
            None => Parsed::default(),
        };
        if self.parser.is_some() && !self.selections.is_empty() {
            for sample in &mut parsed.samples {
                self.select(sample)?;
            }
        }
        for extractor in &self.extractors {
            let extra = extractor.parse(stdout, stderr)?;
            parsed.warnings.extend(extra.warnings);
            for (i, s) in extra.samples.into_iter().enumerate() {
                match parsed.samples.get_mut(i) {
                    Some(sample) => sample.metrics.extend(s.metrics),
                    None => parsed.samples.push(s),
                }
            }
        }
        for sample in &mut parsed.samples {
            for metric in &mut sample.metrics {
                let (better, mean) = self.annotation(&metric.name);
                metric.better = better.unwrap_or(metric.better);
                metric.mean = mean.unwrap_or(metric.mean);
            }
        }
        Ok(parsed)
    }

    /// Keep the selected parser metrics under their new names; a selected metric the
    /// output lacks is an error that lists what the output does have.
    fn select(&self, sample: &mut Sample) -> Result<(), ParseError> {
        let mut kept = Vec::with_capacity(self.selections.len());
        for sel in &self.selections {
            match sample.metrics.iter().find(|m| m.name == sel.from) {
                Some(m) => {
                    let mut m = m.clone();
                    m.name = sel.name.clone();
                    kept.push(m);
                }
                None => {
                    let found: Vec<&str> = sample.metrics.iter().map(|m| m.name.as_str()).collect();
                    return Err(ParseError::Missing {
                        missing: format!("`{}`", sel.from),
                        found: found.join(", "),
                    });
                }
            }
        }
        sample.metrics = kept;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::spec::load_str;

    const DD: &str =
        "16384+0 records in\n16384+0 records out\n67108864 bytes (67 MB, 64 MiB) copied, 0.25 s, 268 MB/s\n";

    fn recipe(metrics: &str) -> Recipe {
        let yaml = format!("matrix:\n  bs: [1k]\nrun: echo\nparse: dd\nmetrics:\n{metrics}");
        Recipe::from_spec(&load_str(Path::new("r.yaml"), &yaml).unwrap().spec).unwrap()
    }

    #[test]
    fn without_selection_every_parser_metric_is_kept() {
        let r = recipe("  wall_time: { better: lower }\n");
        let p = r.apply(DD, "").unwrap();
        let names: Vec<&str> = p.samples[0].metrics.iter().map(|m| m.name.as_str()).collect();
        assert!(names.contains(&"throughput") && names.contains(&"bytes"), "{names:?}");
    }

    #[test]
    fn selection_renames_and_annotates() {
        let r = recipe(
            "  rate: { from: throughput, mean: arithmetic }\n  copied: { regex: '(\\d+) bytes', unit: B }\n",
        );
        let p = r.apply(DD, "").unwrap();
        let m = &p.samples[0].metrics;
        assert_eq!(m.len(), 2);
        assert_eq!(m[0].name, "rate");
        assert!((m[0].value - 67108864.0 / 0.25).abs() < 1e-6);
        assert_eq!(m[0].mean, MeanKind::Arithmetic);
        assert_eq!(m[1].name, "copied");
        assert_eq!(m[1].value, 67108864.0);
    }

    #[test]
    fn a_missing_selected_metric_says_what_there_is() {
        let r = recipe("  throughputt: {}\n");
        let err = r.apply(DD, "").unwrap_err().to_string();
        assert!(
            err.starts_with("the output has no metric `throughputt`; it has: throughput, bytes"),
            "{err}"
        );
    }
}
