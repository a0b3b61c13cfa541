//! The table `margin calibrate` prints: one Markdown row per scenario, so that it reads
//! on a terminal and pastes into docs/statistics.md as it is.

use super::{ADAPTIVE_N_FACTOR, ALPHA, MIN_COVERAGE, Options, Rate, ScenarioResult};

/// The lines before the rows: what was run and how to read it.
pub fn header(options: &Options, scenarios: usize) -> String {
    format!(
        "margin calibrate: {scenarios} scenario{}, {} simulated experiments per scenario and true change \
         (0 %, +10 %, +20 %), seed {}.\n\
         Rates in % ± one binomial standard error. ✗ marks a rate worse than its goal: false claims above \
         α + 3 SE (α = {} %; with one session per level, any claim), coverage below {} %, adaptive mean n \
         above {} × the fixed n that reaches the target; ? marks false claims 2–3 SE above α, where a few of \
         the table's rates land by chance.\n\n\
         | scenario | false: CI ∌ 1 | false: claimed | coverage 0 % | coverage +10 % | coverage +20 % \
         | power +10 % | power +20 % | n per cell | set aside |\n\
         | --- | --: | --: | --: | --: | --: | --: | --: | --: | --: |\n",
        if scenarios == 1 { "" } else { "s" },
        options.experiments,
        options.seed,
        ALPHA * 100.0,
        MIN_COVERAGE * 100.0,
        ADAPTIVE_N_FACTOR,
    )
}

/// One scenario's row.
pub fn row(r: &ScenarioResult) -> String {
    let mut cells = vec![r.name.clone(), rate(&r.false_interval), rate(&r.false_claim)];
    cells.extend(r.coverage.iter().map(|c| rate(&c.rate)));
    cells.extend(r.power.iter().map(|c| rate(&c.rate)));
    let mut n = format!("{:.1}", r.mean_trials);
    if let Some(fixed) = r.fixed_trials_for_target {
        n.push_str(&format!(" (fixed {fixed})"));
    }
    if matches!(r.scenario.trials, super::TrialsPerCell::Verdict { .. }) {
        let by: Vec<String> = r.mean_trials_by_truth.iter().map(|n| format!("{n:.1}")).collect();
        n.push_str(&format!(" (0 / +10 / +20 %: {})", by.join(" / ")));
    }
    if matches!(r.scenario.trials, super::TrialsPerCell::Boots { .. }) {
        let by: Vec<String> = r.mean_boots_by_truth.iter().map(|n| format!("{n:.1}")).collect();
        n.push_str(&format!(" (boots a level, 0 / +10 / +20 %: {})", by.join(" / ")));
    }
    if r.mean_trials_misses {
        n.push_str(" ✗");
    }
    cells.push(n);
    cells.push(rate(&r.set_aside));
    let mut line = format!("| {} |\n", cells.join(" | "));
    if r.not_analysed > 0 {
        line.push_str(&format!(
            "|  ↳ {} experiments not analysed: {} |\n",
            r.not_analysed,
            r.not_analysed_why.as_deref().unwrap_or("?")
        ));
    }
    line
}

/// After the rows: what the names mean and what missed.
pub fn footer(results: &[ScenarioResult], seconds: f64) -> String {
    let missing: Vec<&str> =
        results.iter().filter(|r| !r.misses.is_empty()).map(|r| r.name.as_str()).collect();
    let mut out = String::from(
        "\nNames: nN = N trials per level (paired6: 6 blocks × N per level; sessionsSx5: S sessions of 5 \
         trials per level, betweenB = between-session sd / within sd; paired6-sessionsSx3: paired by 6 blocks, \
         S sessions per level each running every block 3 times), cvC = within-cell CV in %, \
         -none = `outliers: none` (otherwise margin's default, the studentized rule); rate- = a rate with a harmonic mean; \
         adaptive = repetitions { min: 5, max: 30, target: 2% }; verdict = { min: 5, max: 30, until: verdict } \
         (n per cell also at each true change), verdict-fixed-nN = the fixed n of about its power at +10 %; \
         robust- = `analysis: { method: robust }` (every value, by ranks); boots3-12 = `boots: { min: 3, max: 12, \
         until: verdict }` across boots that differ by betweenB × the trials' sd, 5 trials a boot in the first 3 \
         blocks, then as the rule decides (a boot costing 10 trials; boots a level at each true change), stopping for \
         futility where the boots needed exceed 2 × max; -to-max = without that stop.\n",
    );
    let experiments: u64 = results.iter().map(|r| r.experiments * super::TRUTHS.len() as u64).sum();
    out.push_str(&format!("{experiments} experiments in {seconds:.0} s. "));
    if missing.is_empty() {
        out.push_str("Every scenario meets its goals.\n");
    } else {
        out.push_str(&format!(
            "{} of {} scenarios miss a goal: {}.\n",
            missing.len(),
            results.len(),
            missing.join(", ")
        ));
    }
    let doubtful: Vec<String> = results
        .iter()
        .filter(|r| !r.doubtful.is_empty())
        .map(|r| format!("{} ({})", r.name, r.doubtful.join(", ")))
        .collect();
    if !doubtful.is_empty() {
        out.push_str(&format!(
            "2–3 SE above α, likely chance among the table's rates (re-run them with more experiments \
             and another seed to tell): {}.\n",
            doubtful.join(", ")
        ));
    }
    out
}

/// `6.0 ±0.5`, in %, with ✗ when it misses its goal.
fn rate(r: &Rate) -> String {
    if r.of == 0 {
        return "–".to_owned();
    }
    format!("{:.1} ±{:.1}{}", r.rate * 100.0, r.se * 100.0, r.mark())
}
