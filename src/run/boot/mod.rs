//! Boots as units of the experiment (docs/experiment-file.md, boots): a host with a
//! `boot:` recipe is rebooted by margin into each boot of its boot plan
//! (`plan::boots`), checked — a new `boot_id`, the environment's levels detected as
//! wanted — and only then given its cells' share of trials for that boot, in a session of
//! its own. Every step is a durable line of the boot log (`store::boots`), so a run killed
//! while a host reboots resumes where the plan was: a boot is counted once it is
//! verified, a boot that was only requested is asked for again, and a host still in the
//! verified boot it was in goes on in it.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use indexmap::IndexMap;

use super::display::Progress;
use super::host::ControlDir;
use super::trial::now;
use super::{
    HostError, HostFailure, Outcome, Pending, Run, RunError, RunOptions, Stopping, facts, session, ssh,
};
use crate::plan::boots::{BootPlan, Rendered, boot_plan, booted_hosts, combinations, render_boot};
use crate::plan::{Plan, host_of};
use crate::spec::{Boot, Boots, Experiment, Host, parse_duration};
use crate::store::{Appender, BootEvent, BootRecord, Store};

mod adaptive;
mod asked;
mod outline;
mod reboot;

pub(crate) use asked::{AskedBoot, boot_asked, current_boot};
use outline::jiff_like;
pub(crate) use outline::levels_text;
pub(crate) use outline::outline;

/// How long a host may take from the reboot command to answering in a new boot.
pub(crate) const DEFAULT_BOOT_TIMEOUT: Duration = Duration::from_secs(600);
/// Failed boots of a host before its remaining cells are left pending.
pub(crate) const DEFAULT_MAX_FAILED: u32 = 3;
/// Between two probes of a rebooting host.
const POLL: Duration = Duration::from_secs(2);
/// For `select` and `reboot`, run on the host (a reboot that keeps the connection open
/// ends when ssh notices the host gone).
const ON_HOST: Duration = Duration::from_secs(60);

/// Run the cells of `plan` when `hosts` boot (`run::run` decides): those hosts boot by
/// boot, the other cells first in one session as ever (`session::run`).
pub(super) fn by_boot(run: &Run<'_>, ui: &mut dyn Progress, hosts: Vec<String>) -> Result<Outcome, RunError> {
    let Run { exp, plan, store, rule, interrupt, .. } = *run;
    let mut options = run.options.clone();
    if options.fresh {
        // once, before the first boot is logged: the boot log goes aside with the others
        let _lock = store.lock("run")?;
        for moved in store.move_aside()? {
            ui.note(&format!("--fresh: the old log is now {}", moved.display()));
        }
        options.fresh = false;
    }
    let mut total = Outcome { cells: plan.cells.len(), store: store.dir.clone(), ..Outcome::default() };
    let others = plan.cells.iter().any(|c| {
        let h = host_of(plan, c);
        !hosts.iter().any(|b| b == h) && options.host.as_deref().is_none_or(|only| only == h)
    });
    if others {
        let mut o = options.clone();
        o.skip_hosts = hosts.clone();
        let mut outcome = session::run(&Run { options: &o, ..*run }, ui)?;
        total.complete += outcome.complete;
        total.pending.append(&mut outcome.pending);
        merge(&mut total, outcome);
    }
    let mut stopped: Vec<(String, String)> = Vec::new();
    for host in &hosts {
        if total.interrupted || interrupt.load(Ordering::SeqCst) {
            total.interrupted = true;
            break;
        }
        let booting = Booting::new(exp, plan, store, &options, host)?;
        if let Some(why) = booting.run(rule, interrupt, ui, &mut total)? {
            stopped.push((host.clone(), why.to_string()));
            total.host_errors.push(HostFailure { host: host.clone(), why });
        }
    }
    // what the boot hosts' cells stand at, from the store: a boot's session knows only
    // its own levels' cells
    let snapshot = store.load()?;
    let progress = progress(plan, &options, &snapshot, rule.needs_board());
    let board = if rule.needs_board() { progress.clone() } else { crate::store::ProgressByCell::new() };
    for (i, cell) in plan.cells.iter().enumerate() {
        let host = host_of(plan, cell);
        if !hosts.iter().any(|h| h == host) {
            continue;
        }
        let p = progress.get(&i).cloned().unwrap_or_default();
        if rule.is_done(i, &p, &board) {
            total.complete += 1;
        } else if total.abandoned.iter().any(|a| a.label == plan.label(cell)) {
            // said with its reason
        } else {
            let why = match stopped.iter().find(|(h, _)| h == host) {
                Some((_, why)) => why.clone(),
                None if total.interrupted => {
                    "interrupted: the next run goes on with the boot plan".to_string()
                }
                None => "the boot plan's boots are done and the cell needs more trials: raise `boots:` \
                         in the host's `boot:`, and run again"
                    .to_string(),
            };
            total.pending.push(Pending { label: plan.label(cell), why });
        }
    }
    Ok(total)
}

/// Each cell's progress in the store, counting the run's `--label` only when it has one
/// (`values`: with the values the stopping rules read).
fn progress(
    plan: &Plan,
    options: &RunOptions,
    snapshot: &crate::store::Snapshot,
    values: bool,
) -> std::collections::HashMap<usize, crate::store::CellProgress> {
    crate::store::progress_labelled(
        plan,
        &snapshot.trials,
        &snapshot.sessions,
        options.label.as_deref(),
        values,
    )
    .0
}

/// Where a recipe's `restart` and `power_cycle` run: the `by:` host over ssh, or `None` for
/// the machine margin runs on (no `by:`, or a `by:` host without `ssh:`).
fn controller<'e>(exp: &'e Experiment, recipe: &Boot) -> Option<(&'e Host, &'e str)> {
    recipe.by.as_ref().and_then(|by| super::ssh_entry(exp, &by.value))
}

/// Adaptive boots past the first `min` blocks: a cell is done in this boot once it has
/// this many trials in all.
struct UpTo(Option<u32>);

impl Stopping for UpTo {
    fn needs_board(&self) -> bool {
        false
    }

    fn is_done(
        &self,
        _cell: usize,
        progress: &crate::store::CellProgress,
        _board: &crate::store::ProgressByCell,
    ) -> bool {
        progress.ok >= self.0.unwrap_or(0)
    }

    fn remaining(
        &self,
        _cell: usize,
        progress: &crate::store::CellProgress,
        _board: &crate::store::ProgressByCell,
    ) -> (u32, u32) {
        let left = self.0.unwrap_or(0).saturating_sub(progress.ok);
        (left, left)
    }
}

/// Add a session's counts to the run's; its `complete` and `pending` are the caller's.
fn merge(total: &mut Outcome, o: Outcome) {
    total.sessions.extend(o.sessions);
    if total.seed == 0 {
        total.seed = o.seed;
    }
    total.ok += o.ok;
    total.failed += o.failed;
    total.timed_out += o.timed_out;
    total.parse_errors += o.parse_errors;
    total.warmups += o.warmups;
    for a in o.abandoned {
        if !total.abandoned.contains(&a) {
            total.abandoned.push(a);
        }
    }
    total.cleanup_failed.extend(o.cleanup_failed);
    total.host_errors.extend(o.host_errors);
    total.set_aside = total.set_aside.max(o.set_aside);
    total.interrupted |= o.interrupted;
}

/// One host's boot plan being carried out.
struct Booting<'a> {
    exp: &'a Experiment,
    plan: &'a Plan,
    store: &'a Store,
    options: &'a RunOptions,
    host: &'a str,
    entry: &'a Host,
    destination: &'a str,
    recipe: &'a Boot,
    /// `by:`: the host `restart` and `power_cycle` run on, over ssh (`None`: here).
    by: Option<(&'a Host, &'a str)>,
    timeout: Duration,
    max_failed: u32,
    boots: BootPlan,
    /// `boots:` of the recipe: fixed, or adaptive (`until: verdict`).
    count: Boots,
    /// Boots in a block: the combinations of levels, each once.
    block: usize,
    /// Adaptive boots: the trials per cell of the boots beyond the first `min` blocks,
    /// once decided (and logged with the first of them).
    per_boot: std::cell::Cell<Option<u32>>,
    /// This host's records so far.
    records: Vec<BootRecord>,
    /// The bisection label its boots are logged with (`margin bisect`), `None` for a
    /// boot plan's.
    bisect: Option<String>,
}

/// How one boot ended.
enum Booted {
    Verified,
    Failed(String),
    Interrupted,
}

impl<'a> Booting<'a> {
    fn new(
        exp: &'a Experiment,
        plan: &'a Plan,
        store: &'a Store,
        options: &'a RunOptions,
        host: &'a str,
    ) -> Result<Self, RunError> {
        let (entry, destination) =
            super::ssh_entry(exp, host).ok_or_else(|| RunError::BootWithoutSsh { host: host.to_string() })?;
        let recipe = &entry.boot.as_ref().expect("booted_hosts: a host with a boot recipe").value;
        // a `by:` host without `ssh:` is this machine (checked: a key of `hosts:`)
        let by = controller(exp, recipe);
        let (records, _) = store.boot_records()?;
        // a bisection's boots are no part of the host's boot plan
        let records: Vec<BootRecord> =
            records.into_iter().filter(|r| r.host == host && r.bisect.is_none()).collect();
        let seed = records
            .first()
            .map(|r| r.seed)
            .unwrap_or_else(|| options.seed.or(exp.spec.seed).unwrap_or_else(rand::random));
        let timeout = recipe
            .timeout
            .as_ref()
            .and_then(|t| parse_duration(&t.value).ok())
            .unwrap_or(DEFAULT_BOOT_TIMEOUT);
        Ok(Booting {
            exp,
            plan,
            store,
            options,
            host,
            entry,
            destination,
            recipe,
            by,
            timeout,
            max_failed: recipe.max_failed.as_ref().map_or(DEFAULT_MAX_FAILED, |n| n.value),
            boots: boot_plan(exp, plan, host, seed),
            count: recipe.count(),
            block: combinations(exp, plan, host).len().max(1),
            per_boot: std::cell::Cell::new(records.iter().rev().find_map(|r| r.trials_per_boot)),
            records,
            bisect: None,
        })
    }

    /// Carry out the rest of the plan; `Some(why)` when the host was given up on.
    fn run(
        &self,
        rule: &dyn Stopping,
        interrupt: &AtomicBool,
        ui: &mut dyn Progress,
        total: &mut Outcome,
    ) -> Result<Option<HostError>, RunError> {
        let host = self.host;
        let count = self.boots.boots.len();
        if count == 0 {
            return Ok(None);
        }
        if total.seed == 0 {
            total.seed = self.boots.seed;
        }
        let here =
            std::fs::read_to_string("/proc/sys/kernel/random/boot_id").ok().map(|s| s.trim().to_string());
        let now_in = self.probe().ok();
        if now_in.is_some() && now_in == here {
            return Err(RunError::BootsItself { host: host.to_string() });
        }
        let mut log = self.store.boot_appender()?;
        let mut failed =
            self.records.iter().filter(|r| matches!(r.event, BootEvent::Rejected | BootEvent::Lost)).count()
                as u32;
        let (mut index, mut attempt) = match self.records.last() {
            None => (0, 1),
            Some(r) if r.event == BootEvent::Verified => {
                let i = r.boot as usize - 1;
                if i < count && r.boot_id.is_some() && r.boot_id == now_in && self.boots.boots[i] == r.wanted
                {
                    ui.note(&format!(
                        "host `{host}` is still in boot {} of {count} ({}), verified before: its trials go on in it",
                        r.boot,
                        levels_text(&r.wanted)
                    ));
                    let outcome = self.session(i, rule, interrupt, ui)?;
                    merge(total, outcome);
                }
                (r.boot as usize, 1)
            }
            // requested (a run killed while it rebooted), rejected, lost: that boot again
            Some(r) => {
                if r.event == BootEvent::Requested {
                    ui.note(&format!(
                        "host `{host}`: resuming: boot {} of {count} ({}) was requested by a run that ended                          before it was verified; asking for it again",
                        r.boot,
                        levels_text(&r.wanted)
                    ));
                }
                (r.boot as usize - 1, r.attempt + 1)
            }
        };
        while index < count {
            if total.interrupted || interrupt.load(Ordering::SeqCst) {
                total.interrupted = true;
                return Ok(None);
            }
            if failed >= self.max_failed {
                return Ok(Some(HostError::BootsFailed {
                    host: host.to_string(),
                    failed,
                    max_failed: self.max_failed,
                    last: self.records_why(),
                }));
            }
            if let Some(look) = self.look_at(index, rule)?
                && self.said(&look, attempt, ui)
            {
                return Ok(None);
            }
            match self.first_phase() {
                // past the first `min` blocks the boots go on until the looks settle it
                Some(first) if index >= first => {
                    let m = self.decide_per_boot(rule)?;
                    if index == first && attempt == 1 {
                        ui.note(&format!(
                            "host `{host}`: not settled after {} boots of each combination; {m} trials per cell in \
                             each further boot (from how much boots and trials vary, and a boot's cost)",
                            first / self.block
                        ));
                    }
                }
                Some(first) if !self.needs_trials(rule)? => {
                    index = first;
                    continue;
                }
                None if !self.needs_trials(rule)? => return Ok(None),
                _ => {}
            }
            match self.boot(index, attempt, &mut log, interrupt, ui)? {
                Booted::Verified => {
                    let outcome = self.session(index, rule, interrupt, ui)?;
                    merge(total, outcome);
                    index += 1;
                    attempt = 1;
                }
                Booted::Failed(why) => {
                    ui.note(&format!("host `{host}`: boot {} of {count} failed: {why}", index + 1));
                    failed += 1;
                    attempt += 1;
                }
                Booted::Interrupted => {
                    total.interrupted = true;
                    return Ok(None);
                }
            }
        }
        Ok(None)
    }

    /// The last failed boot's reason, as `; the last: …`.
    fn records_why(&self) -> String {
        let (records, _) = self.store.boot_records().unwrap_or_default();
        records
            .iter()
            .rev()
            .find(|r| {
                r.host == self.host
                    && r.bisect == self.bisect
                    && matches!(r.event, BootEvent::Rejected | BootEvent::Lost)
            })
            .and_then(|r| r.why.as_ref())
            .map(|why| format!("; the last: {}", why.lines().next().unwrap_or_default()))
            .unwrap_or_default()
    }

    /// The session of boot `index`: the host's cells of its levels, each its share.
    fn session(
        &self,
        index: usize,
        rule: &dyn Stopping,
        interrupt: &AtomicBool,
        ui: &mut dyn Progress,
    ) -> Result<Outcome, RunError> {
        let mut options = self.options.clone();
        let wanted = &self.boots.boots[index];
        let until = UpTo(match self.first_phase() {
            // adaptive, past the first `min` blocks: each boot its `per_boot` trials, on
            // top of those of the first blocks (counted, so that a resumed boot runs only
            // what it lacks)
            Some(first) if index >= first => {
                let m = self.per_boot.get().unwrap_or(2);
                let later = self.boots.boots[first..=index].iter().filter(|b| *b == wanted).count() as u32;
                Some(super::repetitions(self.plan, self.options).bounds().0 + m * later)
            }
            _ => None,
        });
        options.boots_left = Some(match (self.first_phase(), until.0) {
            (_, Some(_)) => 1,
            // the first `min` blocks share the repetitions as `boots: min` would
            (Some(first), None) => {
                self.boots.boots[index..first].iter().filter(|b| *b == wanted).count() as u32
            }
            (None, None) => self.boots.left_from(index),
        });
        options.host = None;
        options.fresh = false;
        options.skip_hosts = self
            .plan
            .cells
            .iter()
            .map(|c| host_of(self.plan, c))
            .filter(|h| *h != self.host)
            .map(str::to_string)
            .collect();
        options.skip_hosts.sort();
        options.skip_hosts.dedup();
        let rule: &dyn Stopping = if until.0.is_some() { &until } else { rule };
        let run =
            Run { exp: self.exp, plan: self.plan, store: self.store, options: &options, rule, interrupt };
        session::run(&run, ui)
    }
}
