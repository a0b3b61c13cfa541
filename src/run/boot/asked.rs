//! A boot asked for one at a time, outside the host's boot plan: `margin bisect` across
//! boots decides which level to boot next from what it measured. The boot is carried
//! out, checked and logged as a plan's is (`reboot.rs`: the recipe's commands, a new
//! `boot_id`, the levels read back), its records carrying the bisection's label and its
//! place among that bisection's boots, so that the host's boot plan never counts them.

use super::*;

/// How an asked-for boot ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum AskedBoot {
    /// Back in a new boot of the levels asked for: its `boot_id`.
    Verified(String),
    /// Rejected or lost, and why (logged).
    Failed(String),
    Interrupted,
}

/// Boots `host` into `wanted` as boot `number`, try `attempt`, of the bisection labelled
/// `bisect`: each step a line of the boot log before the next.
pub(crate) fn boot_asked(
    run: &Run<'_>,
    host: &str,
    wanted: &IndexMap<String, String>,
    (number, attempt): (u32, u32),
    bisect: &str,
    ui: &mut dyn Progress,
) -> Result<AskedBoot, RunError> {
    let mut booting = Booting::new(run.exp, run.plan, run.store, run.options, host)?;
    booting.boots = BootPlan {
        host: host.to_string(),
        seed: booting.boots.seed,
        boots: vec![wanted.clone(); number as usize],
    };
    booting.count = Boots::Fixed(1);
    booting.per_boot = std::cell::Cell::new(None);
    booting.bisect = Some(bisect.to_string());
    let here = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").ok().map(|s| s.trim().to_string());
    if here.is_some() && booting.probe().ok() == here {
        return Err(RunError::BootsItself { host: host.to_string() });
    }
    let mut log = run.store.boot_appender()?;
    Ok(match booting.boot(number as usize - 1, attempt, &mut log, run.interrupt, ui)? {
        Booted::Verified => {
            let (records, _) = run.store.boot_records()?;
            let id = records.iter().rev().find(|r| r.host == host && r.event == BootEvent::Verified);
            AskedBoot::Verified(id.and_then(|r| r.boot_id.clone()).unwrap_or_default())
        }
        Booted::Failed(why) => AskedBoot::Failed(why),
        Booted::Interrupted => AskedBoot::Interrupted,
    })
}

/// The boot `host` answers in now (its `boot_id`), `None` when it does not answer.
pub(crate) fn current_boot(run: &Run<'_>, host: &str) -> Result<Option<String>, RunError> {
    let booting = Booting::new(run.exp, run.plan, run.store, run.options, host)?;
    Ok(booting.probe().ok())
}
