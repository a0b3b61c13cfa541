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
use super::{Outcome, RunError, RunOptions, Stopping, facts, host_of, session, ssh};
use crate::plan::Plan;
use crate::plan::boots::{BootPlan, Rendered, boot_plan, booted_hosts, combinations, render_boot};
use crate::spec::{Boot, Boots, Experiment, Host, parse_duration};
use crate::store::{Appender, BootEvent, BootRecord, Store};

/// How long a host may take from the reboot command to answering in a new boot.
pub(crate) const DEFAULT_BOOT_TIMEOUT: Duration = Duration::from_secs(600);
/// Failed boots of a host before its remaining cells are left pending.
pub(crate) const DEFAULT_MAX_FAILED: u32 = 3;
/// Between two probes of a rebooting host.
const POLL: Duration = Duration::from_secs(2);
/// For `select` and `reboot`, run on the host (a reboot that keeps the connection open
/// ends when ssh notices the host gone).
const ON_HOST: Duration = Duration::from_secs(60);

/// Run the cells of `plan`: those of hosts with a boot recipe boot by boot, the others in
/// one session as ever (`session::run`).
pub fn run(
    exp: &Experiment,
    plan: &Plan,
    store: &Store,
    options: &RunOptions,
    rule: &dyn Stopping,
    interrupt: &AtomicBool,
    ui: &mut dyn Progress,
) -> Result<Outcome, RunError> {
    let mut hosts = booted_hosts(exp, plan);
    if let Some(only) = &options.host {
        hosts.retain(|h| h == only);
    }
    if hosts.is_empty() || options.boots_left.is_some() {
        return session::run(exp, plan, store, options, rule, interrupt, ui);
    }
    let mut options = options.clone();
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
        let outcome = session::run(exp, plan, store, &o, rule, interrupt, ui)?;
        total.complete += outcome.complete;
        total.pending.extend(outcome.pending.iter().cloned());
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
            total.host_errors.push((host.clone(), why.clone()));
            stopped.push((host.clone(), why));
        }
    }
    // what the boot hosts' cells stand at, from the store: a boot's session knows only
    // its own levels' cells
    let snapshot = store.load()?;
    let (progress, _) = crate::store::progress_labelled(
        plan,
        &snapshot.trials,
        &snapshot.sessions,
        options.label.as_deref(),
        rule.needs_board(),
    );
    let board = if rule.needs_board() { progress.clone() } else { crate::store::Board::new() };
    for (i, cell) in plan.cells.iter().enumerate() {
        let host = host_of(plan, cell);
        if !hosts.iter().any(|h| h == host) {
            continue;
        }
        let p = progress.get(&i).cloned().unwrap_or_default();
        if rule.is_done(i, &p, &board) {
            total.complete += 1;
        } else if total.abandoned.iter().any(|(label, _)| *label == plan.label(cell)) {
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
            total.pending.push((plan.label(cell), why));
        }
    }
    Ok(total)
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
        _board: &crate::store::Board,
    ) -> bool {
        progress.ok >= self.0.unwrap_or(0)
    }

    fn remaining(
        &self,
        _cell: usize,
        progress: &crate::store::CellProgress,
        _board: &crate::store::Board,
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
        let (entry, destination) = super::ssh_entry(exp, host).ok_or_else(|| RunError::Io {
            what: format!("host `{host}`"),
            source: std::io::Error::other("a host with `boot:` needs `ssh:`"),
        })?;
        let recipe = &entry.boot.as_ref().expect("booted_hosts: a host with a boot recipe").value;
        // a `by:` host without `ssh:` is this machine (checked: a key of `hosts:`)
        let by = recipe.by.as_ref().and_then(|by| super::ssh_entry(exp, &by.value));
        let (records, _) = store.boot_records()?;
        let records: Vec<BootRecord> = records.into_iter().filter(|r| r.host == host).collect();
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
        })
    }

    /// Adaptive boots: the boots of the first `min` blocks, after which the looks begin
    /// (`None` when the boots are fixed).
    fn first_phase(&self) -> Option<usize> {
        match self.count {
            Boots::Fixed(_) => None,
            Boots::UntilVerdict { min, .. } => Some(min as usize * self.block),
        }
    }

    /// A boot's cost in trials: the mean time from the reboot to ssh answering in the
    /// verified boots so far against the mean wall time of the host's trials.
    fn boot_cost(&self, progress: &std::collections::HashMap<usize, crate::store::CellProgress>) -> f64 {
        let (records, _) = self.store.boot_records().unwrap_or_default();
        let ready: Vec<f64> = records
            .iter()
            .filter(|r| r.host == self.host && r.event == BootEvent::Verified)
            .filter_map(|r| r.ready_seconds)
            .collect();
        let walls: Vec<f64> = self
            .plan
            .cells
            .iter()
            .enumerate()
            .filter(|(_, c)| host_of(self.plan, c) == self.host)
            .filter_map(|(i, _)| progress.get(&i).and_then(|p| p.mean_wall))
            .collect();
        if ready.is_empty() || walls.is_empty() {
            return crate::stats::components::BOOT_COST_IN_TRIALS;
        }
        let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
        (mean(&ready) / mean(&walls).max(1e-3)).clamp(1.0, 1e4)
    }

    /// Adaptive boots, at the start of a block past the first `min`: whether this block
    /// is a look and the trials so far settle every comparison across boots.
    fn settled_at(&self, index: usize, rule: &dyn Stopping) -> Result<Option<u32>, RunError> {
        let Some(first) = self.first_phase() else { return Ok(None) };
        let blocks = (index / self.block) as u32;
        if index < first || !index.is_multiple_of(self.block) || !self.count.looks().contains(&blocks) {
            return Ok(None);
        }
        let snapshot = self.store.load()?;
        Ok(rule.settled_across_boots(&snapshot).then_some(blocks))
    }

    /// Adaptive boots: the trials per cell of the boots past the first `min` blocks,
    /// decided from the trials so far at the first of them and kept.
    fn decide_per_boot(&self, rule: &dyn Stopping) -> Result<u32, RunError> {
        if let Some(m) = self.per_boot.get() {
            return Ok(m);
        }
        let snapshot = self.store.load()?;
        let (progress, _) = crate::store::progress_labelled(
            self.plan,
            &snapshot.trials,
            &snapshot.sessions,
            self.options.label.as_deref(),
            false,
        );
        let cost = self.boot_cost(&progress);
        let first = super::repetitions(self.plan, self.options).bounds().0;
        let m = rule.trials_per_boot(&snapshot, cost).unwrap_or(first.div_ceil(2).max(2));
        self.per_boot.set(Some(m));
        Ok(m)
    }

    /// Carry out the rest of the plan; `Some(why)` when the host was given up on.
    fn run(
        &self,
        rule: &dyn Stopping,
        interrupt: &AtomicBool,
        ui: &mut dyn Progress,
        total: &mut Outcome,
    ) -> Result<Option<String>, RunError> {
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
            return Err(RunError::Io {
                what: format!("host `{host}`"),
                source: std::io::Error::other(
                    "it is the machine margin runs on (the same boot_id): margin never reboots the machine \
                     it runs on; run margin on another machine that reaches this one over ssh",
                ),
            });
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
            Some(r) => (r.boot as usize - 1, r.attempt + 1),
        };
        while index < count {
            if total.interrupted || interrupt.load(Ordering::SeqCst) {
                total.interrupted = true;
                return Ok(None);
            }
            if failed >= self.max_failed {
                let last = self.records_why();
                return Ok(Some(format!(
                    "host `{host}`: {failed} boots failed (`max_failed: {}`){last}; fix the host and run again",
                    self.max_failed
                )));
            }
            if let Some(blocks) = self.settled_at(index, rule)? {
                ui.note(&format!(
                    "host `{host}`: the comparisons across its boots are settled after {blocks} boots of each \
                     combination of levels (a look of `boots: {{ until: verdict }}`): no more boots"
                ));
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
            .find(|r| r.host == self.host && matches!(r.event, BootEvent::Rejected | BootEvent::Lost))
            .and_then(|r| r.why.as_ref())
            .map(|why| format!("; the last: {}", why.lines().next().unwrap_or_default()))
            .unwrap_or_default()
    }

    /// Whether some cell of this host still needs trials: else no boot is needed.
    fn needs_trials(&self, rule: &dyn Stopping) -> Result<bool, RunError> {
        let snapshot = self.store.load()?;
        let (progress, _) = crate::store::progress_labelled(
            self.plan,
            &snapshot.trials,
            &snapshot.sessions,
            self.options.label.as_deref(),
            rule.needs_board(),
        );
        let board = if rule.needs_board() { progress.clone() } else { crate::store::Board::new() };
        Ok(self.plan.cells.iter().enumerate().any(|(i, c)| {
            host_of(self.plan, c) == self.host
                && !rule.is_done(i, &progress.get(&i).cloned().unwrap_or_default(), &board)
        }))
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
        session::run(self.exp, self.plan, self.store, &options, rule, interrupt, ui)
    }

    /// One boot: the commands, the wait for a new boot, the check of its levels; each
    /// step logged before the next.
    fn boot(
        &self,
        index: usize,
        attempt: u32,
        log: &mut Appender,
        interrupt: &AtomicBool,
        ui: &mut dyn Progress,
    ) -> Result<Booted, RunError> {
        let host = self.host;
        let wanted = &self.boots.boots[index];
        let number = index as u32 + 1;
        let record = |event: BootEvent| BootRecord {
            host: host.to_string(),
            boot: number,
            attempt,
            event,
            at: now(),
            seed: self.boots.seed,
            wanted: wanted.clone(),
            boot_id: None,
            detected: IndexMap::new(),
            ready_seconds: None,
            why: None,
            trials_per_boot: self.first_phase().filter(|&first| index >= first).and(self.per_boot.get()),
        };
        let before = self.probe().ok();
        log.append(&record(BootEvent::Requested))?;
        ui.note(&format!(
            "host `{host}`: boot {number} of {} ({}){}",
            self.boots.boots.len(),
            levels_text(wanted),
            if attempt > 1 { format!(", attempt {attempt}") } else { String::new() }
        ));
        let lost = |log: &mut Appender, why: String| -> Result<Booted, RunError> {
            log.append(&BootRecord { why: Some(why.clone()), ..record(BootEvent::Lost) })?;
            Ok(Booted::Failed(why))
        };
        let commands = match self.render(wanted, number) {
            Ok(c) => c,
            Err(why) => return lost(log, why),
        };
        let started = Instant::now();
        if let Some((select, env)) = &commands.select
            && let Err(why) = self.on_host(select, env)
        {
            return lost(log, format!("`select` failed: {why}"));
        }
        match &commands.restart {
            Some((restart, env)) => {
                if let Err(why) = self.on_controller(restart, env) {
                    return lost(log, format!("`restart` failed: {why}"));
                }
            }
            None => {
                let (reboot, env) =
                    commands.reboot.clone().unwrap_or_else(|| ("reboot".to_string(), Vec::new()));
                // the connection dropping under it is the reboot working (ssh's 255)
                if let Err(why) = self.on_host(&reboot, &env)
                    && !why.starts_with("exit code 255")
                    && !why.starts_with("no answer")
                    && !why.starts_with("a signal")
                {
                    return lost(log, format!("`reboot` failed: {why}"));
                }
            }
        }
        let mut back = self.wait_new_boot(before.as_deref(), started + self.timeout, interrupt);
        if let Waited::NotBack(why) = &back
            && let Some((cycle, env)) = &commands.power_cycle
        {
            ui.note(&format!(
                "host `{host}`: no new boot within {} ({why}); power cycle: {cycle}",
                jiff_like(self.timeout)
            ));
            if let Err(e) = self.on_controller(cycle, env) {
                return lost(
                    log,
                    format!("not back within {}, and `power_cycle` failed: {e}", jiff_like(self.timeout)),
                );
            }
            back = self.wait_new_boot(before.as_deref(), Instant::now() + self.timeout, interrupt);
        }
        let boot_id = match back {
            Waited::Interrupted => return Ok(Booted::Interrupted),
            Waited::NotBack(why) => {
                let cycled = if commands.power_cycle.is_some() { " (after the power cycle)" } else { "" };
                return lost(
                    log,
                    format!("no answer in a new boot within {}{cycled}: {why}", jiff_like(self.timeout)),
                );
            }
            Waited::Back(id) => id,
        };
        let ready = started.elapsed().as_secs_f64();
        let detected = self.detect();
        let wrong: Vec<String> = wanted
            .iter()
            .filter(|(k, v)| detected.levels.get(*k) != Some(*v))
            .map(|(k, v)| match detected.levels.get(k) {
                Some(got) => format!("booted {k}={got}, wanted {k}={v}"),
                None => format!(
                    "{k} not detected ({}), wanted {k}={v}",
                    detected.unknown.get(k).map_or("no value", String::as_str)
                ),
            })
            .collect();
        let mut r = record(if wrong.is_empty() { BootEvent::Verified } else { BootEvent::Rejected });
        r.boot_id = Some(boot_id);
        r.detected = detected.levels.clone();
        r.ready_seconds = Some((ready * 10.0).round() / 10.0);
        if wrong.is_empty() {
            log.append(&r)?;
            ui.note(&format!(
                "host `{host}`: boot {number} back in {ready:.0} s, verified ({})",
                levels_text(wanted)
            ));
            Ok(Booted::Verified)
        } else {
            let why = format!("{}; no trial runs in it", wrong.join(", "));
            r.why = Some(why.clone());
            log.append(&r)?;
            Ok(Booted::Failed(why))
        }
    }

    /// The boot the host answers in: its `boot_id`, over a connection of its own.
    fn probe(&self) -> Result<String, String> {
        let remote = format!("cat -- \"{}/proc/sys/kernel/random/boot_id\"", ssh::REMOTE_ROOT);
        let argv = ssh::oneshot_argv(self.entry, self.destination, &remote);
        let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
        super::process::capture_argv(&argv, Path::new("."), Duration::from_secs(30))
    }

    /// Probe until the host answers in a boot other than `before`, or `deadline`.
    fn wait_new_boot(&self, before: Option<&str>, deadline: Instant, interrupt: &AtomicBool) -> Waited {
        loop {
            if interrupt.load(Ordering::SeqCst) {
                return Waited::Interrupted;
            }
            let last = match self.probe() {
                Ok(id) if Some(id.as_str()) != before => return Waited::Back(id),
                Ok(_) => "it still answers in the old boot".to_string(),
                Err(e) => format!("the last probe: {e}"),
            };
            if Instant::now() + POLL >= deadline {
                return Waited::NotBack(last);
            }
            std::thread::sleep(POLL);
        }
    }

    /// The host's facts and levels in its new boot, read as a session reads them.
    fn detect(&self) -> facts::Detected {
        let empty = || facts::Detected { levels: IndexMap::new(), unknown: IndexMap::new() };
        let Ok(control) = ControlDir::new() else { return empty() };
        let executor = super::host::executor(self.exp, self.store, self.host, Some(control.path()));
        let src = executor.facts();
        let found = facts::gather(src);
        let detected = facts::detect(self.exp, &found, src);
        executor.close();
        detected
    }

    /// Run `command` on the host, its values exported first.
    fn on_host(&self, command: &str, env: &[(String, String)]) -> Result<String, String> {
        over_ssh((self.entry, self.destination), command, env, ON_HOST)
    }

    /// Run `restart` or `power_cycle` where the recipe says: on the `by:` host over ssh,
    /// else on this machine; either may take the boot's timeout.
    fn on_controller(&self, command: &str, env: &[(String, String)]) -> Result<String, String> {
        match self.by {
            Some(by) => over_ssh(by, command, env, self.timeout),
            None => on_this_machine(command, env, self.timeout),
        }
    }

    /// The recipe's commands rendered for a boot into `wanted`.
    fn render(&self, wanted: &IndexMap<String, String>, number: u32) -> Result<Rendered, String> {
        render_boot(self.recipe, wanted, self.host, number)
    }
}

/// How waiting for a new boot ended.
enum Waited {
    Back(String),
    NotBack(String),
    Interrupted,
}

/// Run `command` on an ssh host, its values exported first.
fn over_ssh(
    (entry, destination): (&Host, &str),
    command: &str,
    env: &[(String, String)],
    timeout: Duration,
) -> Result<String, String> {
    let mut script = String::new();
    for (k, v) in env {
        let v = shlex::try_quote(v).map(|q| q.into_owned()).unwrap_or_else(|_| "''".into());
        script.push_str(&format!("export {k}={v}; "));
    }
    script.push_str(command);
    let argv = ssh::oneshot_argv(entry, destination, &script);
    let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
    super::process::run_argv(&argv, Path::new("."), timeout, &[])
}

/// Run `command` here, in the directory margin was started in (a recipe's relative paths
/// are the user's), its values in its environment.
fn on_this_machine(command: &str, env: &[(String, String)], timeout: Duration) -> Result<String, String> {
    super::process::run_argv(&["sh", "-c", command], Path::new("."), timeout, env)
}

/// `kernel=xen dom0_mem=2048M`.
pub(crate) fn levels_text(levels: &IndexMap<String, String>) -> String {
    levels.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(" ")
}

/// `10 min`, `90 s`.
fn jiff_like(d: Duration) -> String {
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
pub fn outline(
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
        let mine: Vec<&BootRecord> = records.iter().filter(|r| r.host == host).collect();
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
        let count = super::ssh_entry(exp, &host).and_then(|(e, _)| e.boot.as_ref()).map(|b| b.value.count());
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
        let recipe = super::ssh_entry(exp, &host).and_then(|(e, _)| e.boot.as_ref()).map(|b| &b.value);
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
                    let controller = match recipe.by.as_ref() {
                        Some(by) if super::ssh_entry(exp, &by.value).is_some() => {
                            format!("on host `{}`", by.value)
                        }
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
