//! What `margin bisect` is asked to bisect, checked against the experiment before any
//! trial runs: the factor and its levels in the file's order, the good and bad ends, the
//! cell of each level between them (the other factors fixed), the metric, and the label
//! its sessions carry. Every refusal names the flag and the file, and what exists.

use indexmap::IndexMap;

use crate::diag::suggest;
use crate::plan::Plan;
use crate::spec::Experiment;

/// The command line's request, as given.
pub(crate) struct Ask<'a> {
    pub factor: &'a str,
    pub good: Option<&'a str>,
    pub bad: Option<&'a str>,
    pub metric: Option<&'a str>,
    /// `--set factor=level`, in the order given.
    pub set: &'a [(String, String)],
}

/// A bisection's target in the plan.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Target {
    pub experiment: String,
    pub factor: String,
    /// Every level of the factor, in the file's order; the bisection's levels are indices
    /// into it.
    pub levels: Vec<String>,
    pub good: usize,
    pub bad: usize,
    /// The plan's cell (an index into `Plan::cells`) of each level from `good` to `bad`;
    /// `None` outside the range.
    pub cells: Vec<Option<usize>>,
    /// The other factors' levels of those cells.
    pub fixed: IndexMap<String, String>,
    pub metric: String,
    /// The label of the bisection's sessions: `bisect:FACTOR:GOOD..BAD` when that is a
    /// valid label, else `bisect:` and a hash of it.
    pub label: String,
    /// Across boots: the host that boots into each level (the factor is an environment
    /// factor of a host with `boot:`), and each level's environment levels to boot into
    /// (beside `cells`); `None` within a session.
    pub booted: Option<Booted>,
}

/// A bisection across boots: where, and into what, each level is booted.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Booted {
    pub host: String,
    pub wanted: Vec<IndexMap<String, String>>,
}

/// The levels of key `key` in the order the cells first have them: the file's order.
pub(super) fn levels_of(plan: &Plan, key: usize) -> Vec<String> {
    let mut levels: Vec<String> = Vec::new();
    for c in &plan.cells {
        for (_, v) in c.levels.iter().filter(|(k, _)| usize::from(*k) == key) {
            if !levels.contains(&v.text) {
                levels.push(v.text.clone());
            }
        }
    }
    levels
}

/// Checks the request against the experiment and finds each level's cell.
pub(crate) fn target(exp: &Experiment, plan: &Plan, ask: &Ask<'_>) -> Result<Target, String> {
    let file = exp.path.display();
    let factors = &plan.keys[..plan.factor_keys];
    let Some(key) = factors.iter().position(|k| k == ask.factor) else {
        let hint = suggest(ask.factor, factors.iter().map(String::as_str))
            .map(|h| format!("{h}; "))
            .unwrap_or_default();
        return Err(format!(
            "--factor {}: {file} has no factor `{}`; {hint}its factors are: {}",
            ask.factor,
            ask.factor,
            factors.join(", ")
        ));
    };
    let levels = levels_of(plan, key);
    if levels.len() < 3 {
        return Err(format!(
            "--factor {}: in {file}, `{}` has {} level(s) ({}); a bisection needs 3 or more, in order",
            ask.factor,
            ask.factor,
            levels.len(),
            levels.join(", ")
        ));
    }
    let (good, bad) = ends(ask, &levels, &file.to_string())?;
    let fixed = fixed(plan, key, ask, &file.to_string())?;
    let metric = metric(exp, ask.metric)?;
    let mut cells = vec![None; levels.len()];
    for (level, cell) in cells.iter_mut().enumerate().take(bad + 1).skip(good) {
        let mut set: Vec<(String, String)> = fixed.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        set.push((ask.factor.to_owned(), levels[level].clone()));
        let found =
            plan.find_cell(&set).map_err(|e| format!("{file}: {}={}: {e}", ask.factor, levels[level]))?;
        *cell = plan.cells.iter().position(|c| c.id == found.id);
    }
    let target = Target {
        experiment: exp.name.clone(),
        factor: ask.factor.to_owned(),
        label: label(ask.factor, &levels[good], &levels[bad]),
        levels,
        good,
        bad,
        cells,
        fixed,
        metric,
        booted: None,
    };
    let booted = booted(exp, plan, &target)?;
    Ok(Target { booted, ..target })
}

/// `--good` and `--bad` as indices: by default the first level and the last.
fn ends(ask: &Ask<'_>, levels: &[String], file: &str) -> Result<(usize, usize), String> {
    let find = |flag: &str, given: Option<&str>, default: usize| match given {
        None => Ok(default),
        Some(name) => levels.iter().position(|l| l == name).ok_or_else(|| {
            format!(
                "{flag} {name}: `{name}` is not a level of `{}` in {file}; its levels are: {}",
                ask.factor,
                levels.join(", ")
            )
        }),
    };
    let good = find("--good", ask.good, 0)?;
    let bad = find("--bad", ask.bad, levels.len() - 1)?;
    if good >= bad {
        return Err(format!(
            "--good {} --bad {}: the good level must come before the bad one in the order {file} lists `{}`: {}",
            levels[good],
            levels[bad],
            ask.factor,
            levels.join(", ")
        ));
    }
    Ok((good, bad))
}

/// The other factors' levels: those given with `--set`, and those with a single level;
/// a factor of several levels left unset is refused, with the flags to add.
fn fixed(plan: &Plan, key: usize, ask: &Ask<'_>, file: &str) -> Result<IndexMap<String, String>, String> {
    let factors = &plan.keys[..plan.factor_keys];
    for (k, v) in ask.set {
        if k == ask.factor {
            return Err(format!(
                "--set {k}={v}: `{k}` is the factor bisected; its ends are --good and --bad"
            ));
        }
        let Some(i) = factors.iter().position(|f| f == k) else {
            let hint =
                suggest(k, factors.iter().map(String::as_str)).map(|h| format!("{h}; ")).unwrap_or_default();
            return Err(format!(
                "--set {k}={v}: {file} has no factor `{k}`; {hint}its factors are: {}",
                factors.join(", ")
            ));
        };
        let levels = levels_of(plan, i);
        if !levels.contains(v) {
            return Err(format!(
                "--set {k}={v}: `{v}` is not a level of `{k}` in {file}; its levels are: {}",
                levels.join(", ")
            ));
        }
    }
    let mut fixed = IndexMap::new();
    let mut unset = Vec::new();
    for (i, name) in factors.iter().enumerate().filter(|(i, _)| *i != key) {
        let levels = levels_of(plan, i);
        match (ask.set.iter().rev().find(|(k, _)| k == name), levels.as_slice()) {
            (Some((_, v)), _) => {
                fixed.insert(name.clone(), v.clone());
            }
            (None, [one]) => {
                fixed.insert(name.clone(), one.clone());
            }
            (None, many) => unset.push(format!("--set {name}=LEVEL ({})", many.join(", "))),
        }
    }
    if !unset.is_empty() {
        return Err(format!(
            "--factor {}: the other factors of {file} with several levels must be fixed: add {}",
            ask.factor,
            unset.join(", ")
        ));
    }
    Ok(fixed)
}

/// The metric: the one named, else the file's first; margin's own times
/// (`wall_time`, …) when the file reads nothing from the output.
pub(super) fn metric(exp: &Experiment, asked: Option<&str>) -> Result<String, String> {
    let file = exp.path.display();
    let declared: Vec<&str> = exp.spec.metrics.keys().map(|k| k.value.as_str()).collect();
    let parser = exp.spec.parse.as_ref().map(|p| p.value.as_str());
    match (asked, declared.first(), parser) {
        (Some(m), ..) if declared.contains(&m) || vocab::engine_metric(m) || parser.is_some() => {
            Ok(m.to_owned())
        }
        (Some(m), ..) => {
            let known: Vec<&str> =
                declared.iter().copied().chain(vocab::ENGINE_METRICS.iter().copied()).collect();
            let hint = suggest(m, known.iter().copied()).map(|h| format!("{h}; ")).unwrap_or_default();
            Err(format!(
                "--metric {m}: {file} has no metric `{m}`; {hint}its metrics are: {}",
                known.join(", ")
            ))
        }
        (None, Some(first), _) => Ok((*first).to_owned()),
        (None, None, Some(p)) => {
            Err(format!("{file}: its parser `{p}` names the metrics; say which to bisect with --metric NAME"))
        }
        (None, None, None) => Ok("wall_time".to_owned()),
    }
}

/// Across boots or within a session: an environment factor is bisected across the boots
/// of the host its cells run on, which must boot (`boot:`); any other factor within a
/// session, on a host that does not boot (a boot plan would choose the boots).
fn booted(exp: &Experiment, plan: &Plan, target: &Target) -> Result<Option<Booted>, String> {
    let file = exp.path.display();
    let factor = &target.factor;
    let booted = crate::plan::boots::booted_hosts(exp, plan);
    let environment: Vec<&str> = exp.spec.environment.keys().map(|k| k.value.as_str()).collect();
    let mut hosts: Vec<&str> = Vec::new();
    for cell in target.cells.iter().flatten() {
        let host = crate::plan::host_of(plan, &plan.cells[*cell]);
        if !hosts.contains(&host) {
            hosts.push(host);
        }
    }
    let boots = |h: &str| booted.iter().any(|b| b == h);
    if !environment.contains(&factor.as_str()) {
        return match hosts.iter().find(|h| boots(h)) {
            Some(host) => Err(format!(
                "--factor {factor}: in {file}, the cells run on host `{host}`, which boots (`boot:`): there \
                 a boot, not a trial, is the unit, and only an `environment:` factor is bisected across \
                 boots; bisect `{factor}` on a host without `boot:`"
            )),
            None => Ok(None),
        };
    }
    let host = match hosts.as_slice() {
        [one] if boots(one) => (*one).to_owned(),
        _ => {
            return Err(format!(
                "--factor {factor}: in {file}, `{factor}` is an environment factor, a fact of the host a cell \
                 runs on: it is bisected across boots of one host with a `boot:` recipe, and its cells run on \
                 {}; give the host a `boot:` recipe (docs/experiment-file.md, boots), or --set host=…",
                if hosts.is_empty() { "no host".to_owned() } else { hosts.join(", ") }
            ));
        }
    };
    let wanted = target
        .cells
        .iter()
        .map(|cell| {
            cell.map(|c| {
                plan.levels(&plan.cells[c])
                    .filter(|(k, _)| environment.contains(k))
                    .map(|(k, v)| (k.to_string(), v.text.clone()))
                    .collect()
            })
            .unwrap_or_default()
        })
        .collect();
    Ok(Some(Booted { host, wanted }))
}

/// `bisect:FACTOR:GOOD..BAD`, or `bisect:` and a hash of it when that is no valid label
/// (longer than 64 characters, or characters a label does not take).
fn label(factor: &str, good: &str, bad: &str) -> String {
    let text = format!("bisect:{factor}:{good}..{bad}");
    let allowed = |c: char| c.is_alphanumeric() || "-_.+:@/".contains(c);
    if text.chars().count() <= 64 && text.chars().all(allowed) {
        return text;
    }
    let hash = blake3::hash(text.as_bytes()).to_hex();
    format!("bisect:{}", &hash.as_str()[..16])
}

#[cfg(test)]
mod tests {
    use super::label;

    #[test]
    fn the_label_names_the_range_or_hashes_it() {
        assert_eq!(label("version", "v01", "v16"), "bisect:version:v01..v16");
        let long = label("version", &"x".repeat(60), "y");
        assert!(long.starts_with("bisect:") && long.len() == 23, "{long}");
        assert_ne!(label("f", "a b", "c"), label("f", "a c", "c"));
    }
}
