//! The checks of how long and how much: repetitions (fixed or adaptive), the timeout, and
//! `analysis:` (confidence, threshold, outliers, comparisons).

use super::Checker;
use crate::diag::{excerpt, suggest};
use crate::spec::{RepetitionsSpec, parse_duration, parse_percent};

impl Checker<'_> {
    pub(super) fn settings(&mut self) {
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

    pub(super) fn analysis(&mut self) {
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
        self.series(a, &keys);
    }

    /// `analysis.series`: a factor of the matrix with 3 levels or more, not also compared
    /// against a baseline (its levels are read as an order, not as a level and the rest),
    /// listed once.
    fn series(&mut self, a: &crate::spec::Analysis, keys: &[String]) {
        let mut seen: Vec<&str> = Vec::new();
        for entry in &a.series {
            let f = &entry.value.factor;
            let factor = f.value.as_str();
            let levels = self.levels_of(factor).or_else(|| {
                self.zip_group(factor).and_then(|k| k.first().and_then(|first| self.levels_of(first)))
            });
            let Some(levels) = levels else {
                let hint = suggest(factor, keys.iter().map(String::as_str));
                self.error_hint(f.pos, format!("series: unknown factor `{}`", excerpt(factor)), hint);
                continue;
            };
            if levels.len() < 3 {
                self.error_hint(
                    f.pos,
                    format!(
                        "series: factor `{}` has {} level{}; a series needs 3 or more",
                        excerpt(factor),
                        levels.len(),
                        if levels.len() == 1 { "" } else { "s" }
                    ),
                    Some(format!(
                        "two levels are a comparison: `compare: [{{ factor: {factor}, baseline: … }}]`"
                    )),
                );
            }
            if a.compare.iter().any(|c| c.value.factor.value == factor) {
                self.error_hint(
                    f.pos,
                    format!("series: factor `{}` is also compared against a baseline", excerpt(factor)),
                    Some("a factor is either a series (its levels in order) or compared (each level against one); keep one".into()),
                );
            }
            if seen.contains(&factor) {
                self.error(f.pos, format!("series: factor `{}` is listed twice", excerpt(factor)));
            }
            seen.push(factor);
        }
    }

    /// `analysis.outliers`: a cutoff for `mad` and `iqr`, a false-flag rate for
    /// `studentized` (docs/statistics.md, Outliers).
    fn outliers(&mut self, o: &crate::spec::OutlierSettings) {
        use crate::spec::OutlierMethod;
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
}
