//! What `margin plan` and `margin run --dry-run` say of a host's boots.

use super::*;

/// `kernel=xen dom0_mem=2048M`.
pub(crate) fn levels_text(levels: &IndexMap<String, String>) -> String {
    levels.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(" ")
}

/// `10 min`, `90 s`.
pub(super) fn jiff_like(d: Duration) -> String {
    let s = d.as_secs();
    match s {
        _ if s >= 60 && s.is_multiple_of(60) => format!("{} min", s / 60),
        120.. => format!("{} min", (s + 30) / 60),
        _ => format!("{s} s"),
    }
}

/// What `margin plan` and `margin run --dry-run` say of a host's boots: the plan in
/// order, which boots are done, the time the rest should take, and (for a dry run) the
/// commands of the next.
pub(crate) fn outline(
    exp: &Experiment,
    plan: &Plan,
    store: &Store,
    options: &RunOptions,
    commands: bool,
) -> Vec<String> {
    let (records, _) = store.boot_records().unwrap_or_default();
    let mut out = Vec::new();
    for host in booted_hosts(exp, plan) {
        if options.host.as_deref().is_some_and(|only| only != host) {
            continue;
        }
        // a bisection's boots are no part of the host's boot plan
        let mine: Vec<&BootRecord> =
            records.iter().filter(|r| r.host == host && r.bisect.is_none()).collect();
        let seed = mine.first().map(|r| r.seed).or(options.seed).or(exp.spec.seed);
        let Some(seed) = seed else {
            let per = boot_plan(exp, plan, &host, 0);
            out.push(format!(
                "boots of host `{host}`: {} ({} combinations of levels × {}); their order is drawn when the run \
                 starts (`seed:` fixes it)",
                per.boots.len(),
                crate::plan::boots::combinations(exp, plan, &host).len(),
                per.boots.len() / crate::plan::boots::combinations(exp, plan, &host).len().max(1)
            ));
            continue;
        };
        let bp = boot_plan(exp, plan, &host, seed);
        let verified: Vec<&BootRecord> =
            mine.iter().copied().filter(|r| r.event == BootEvent::Verified).collect();
        let done = verified.iter().map(|r| r.boot).max().unwrap_or(0) as usize;
        let ready: Vec<f64> = verified.iter().filter_map(|r| r.ready_seconds).collect();
        let failed = mine.iter().filter(|r| matches!(r.event, BootEvent::Rejected | BootEvent::Lost)).count();
        let time = match ready.is_empty() {
            true => "time per boot unknown until the first has run".to_string(),
            false => {
                let mean = ready.iter().sum::<f64>() / ready.len() as f64;
                format!(
                    "about {} for the {} left (boot to ssh {mean:.0} s on average, measured)",
                    jiff_like(Duration::from_secs_f64(
                        mean * (bp.boots.len() - done.min(bp.boots.len())) as f64
                    )),
                    bp.boots.len() - done.min(bp.boots.len())
                )
            }
        };
        let failed = if failed > 0 { format!(", {failed} failed") } else { String::new() };
        let count =
            crate::run::ssh_entry(exp, &host).and_then(|(e, _)| e.boot.as_ref()).map(|b| b.value.count());
        let adaptive = match count {
            Some(c @ Boots::UntilVerdict { .. }) => {
                let looks: Vec<String> = c.looks().iter().map(u32::to_string).collect();
                format!(
                    " (adaptive: at most; it stops once the comparisons across boots are settled, looked at \
                     after {} boots of each combination)",
                    looks.join(", ")
                )
            }
            _ => String::new(),
        };
        out.push(format!(
            "boots of host `{host}` (seed {seed}): {} in all{adaptive}, {done} done{failed}; {time}",
            bp.boots.len()
        ));
        for (i, levels) in bp.boots.iter().enumerate() {
            let state = if i < done {
                "done"
            } else if i == done {
                "next"
            } else {
                ""
            };
            out.push(format!("  {:>3} {:4} {}", i + 1, state, levels_text(levels)).trim_end().to_string());
        }
        let recipe = crate::run::ssh_entry(exp, &host).and_then(|(e, _)| e.boot.as_ref()).map(|b| &b.value);
        if commands && let (Some(recipe), Some(next)) = (recipe, bp.boots.get(done)) {
            match render_boot(recipe, next, &host, done as u32 + 1) {
                Ok(r) => {
                    let shown = |(cmd, env): &(String, Vec<(String, String)>)| {
                        let with: String = env.iter().map(|(k, v)| format!("{k}={v} ")).collect();
                        format!("{with}{cmd}")
                    };
                    if let Some(c) = &r.select {
                        out.push(format!("  next boot, on host `{host}`: {}", shown(c)));
                    }
                    let controller = match (&recipe.by, controller(exp, recipe)) {
                        (Some(by), Some(_)) => format!("on host `{}`", by.value),
                        _ => "on this machine".to_string(),
                    };
                    match (&r.restart, &r.reboot) {
                        (Some(c), _) => out.push(format!("  next boot, {controller}: {}", shown(c))),
                        (None, Some(c)) => out.push(format!("  next boot, on host `{host}`: {}", shown(c))),
                        (None, None) => out.push(format!("  next boot, on host `{host}`: reboot")),
                    }
                    if let Some(c) = &r.power_cycle {
                        out.push(format!("  if it does not come back, {controller}: {}", shown(c)));
                    }
                }
                Err(why) => out.push(format!("  next boot: {why}")),
            }
        }
    }
    out
}
