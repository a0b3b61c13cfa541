//! A run of one experiment over all its hosts: the store locked and read once, the cells
//! grouped by host, one thread per host, and the calling thread writing the session log
//! and driving the progress display until every host is done.

use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::sync::{Barrier, Mutex, PoisonError, mpsc};
use std::time::Duration;

use super::display::{Progress, TrialLine};
use super::exec::Target;
use super::host::{ControlDir, Done, HostCells, Msg, Ready, target};
use super::state::{Counts, HostRun, Machine, Places, Shared, Shown};
use super::{DEFAULT_MAX_FAILURES, Outcome, Pending, Run, RunError, facts, workdir};
use crate::parse::Recipe;
use crate::plan::host_of;
use crate::spec::parse_duration;
use crate::store::{Appender, CellProgress, ProgressByCell, Start};

/// Run the cells of the plan that match their host and still need trials.
pub(crate) fn run(run: &Run<'_>, ui: &mut dyn Progress) -> Result<Outcome, RunError> {
    let connect = |host: &str, control: Option<&Path>| target(run.exp, run.store, host, control);
    let outcome = run_on(run, ui, &connect);
    // the telemetry snapshots of the last second, flushed with the run (telemetry.rs)
    super::telemetry::close_all();
    outcome
}

/// Where a host's commands run, given the directory for ssh's sockets when some host is
/// remote.
pub(crate) type Connect<'a> = dyn Fn(&str, Option<&Path>) -> Target + 'a;

/// [`run`] with the hosts' executors from `connect` (a test's fakes).
pub(crate) fn run_on(
    run: &Run<'_>,
    ui: &mut dyn Progress,
    connect: &Connect<'_>,
) -> Result<Outcome, RunError> {
    let Run { exp, plan, store, .. } = *run;
    facts::check_sysroot().map_err(RunError::Sysroot)?;
    let _lock = store.lock("run")?;
    let Start { mut progress, set_aside, .. } = clear_the_way(run, ui)?;
    let recipe =
        Recipe::from_spec(&exp.spec).map_err(|(metric, source)| RunError::Recipe { metric, source })?;
    let board = if run.rule.needs_board() { progress.clone() } else { ProgressByCell::new() };
    let shared = shared(run, recipe, board)?;
    let mut outcome = Outcome {
        seed: shared.seed,
        cells: plan.cells.len(),
        set_aside,
        store: store.dir.clone(),
        ..Outcome::default()
    };
    let groups = by_host(&shared, &mut progress, &mut outcome);
    let service_hosts = service_hosts(run, &groups);
    // ssh's multiplexing sockets, only when some host is remote
    let remote = groups.iter().map(|(host, _)| *host).chain(service_hosts.iter().map(String::as_str));
    let control = match remote.clone().any(|host| super::reaches_ssh(exp, host)) {
        true => Some(ControlDir::new().map_err(RunError::ControlDir)?),
        false => None,
    };
    let executors: Vec<Target> =
        groups.iter().map(|(host, _)| connect(host, control.as_ref().map(ControlDir::path))).collect();
    let servers: Vec<Target> =
        service_hosts.iter().map(|host| connect(host, control.as_ref().map(ControlDir::path))).collect();

    // One turn per physical machine: its hosts (dom0 and its guests, or several entries
    // without ssh, which are all this machine) run one trial at a time between them.
    let machines: Vec<String> = groups.iter().map(|(host, _)| super::machine_of(exp, host)).collect();
    let places = Places {
        // a gang runs no service: only hosts are services' (spec::validate)
        executors: remote
            .zip(executors.iter().chain(&servers))
            .filter_map(|(host, e)| Some((host.to_string(), e.one()?)))
            .collect(),
        machines: machines
            .iter()
            .cloned()
            .chain(service_hosts.iter().map(|host| super::machine_of(exp, host)))
            // a gang holds its members' machines (gang.rs)
            .chain(groups.iter().flat_map(|(host, _)| super::machines_of(exp, host)))
            .map(|m| (m, Machine::default()))
            .collect(),
    };
    end_left(executors.iter().chain(&servers), ui);
    let mut sessions = store.session_appender()?;
    let hosts: Vec<HostThread<'_, '_>> = groups
        .into_iter()
        .zip(&executors)
        .zip(&machines)
        .map(|(((_, cells), target), machine)| HostThread {
            cells,
            target,
            machine: &places.machines[machine.as_str()],
        })
        .collect();
    sessions_of(&shared, hosts, &places, &mut sessions, &mut outcome, ui);
    ui.finish();
    for e in executors.iter().chain(&servers) {
        e.close();
    }
    match shared.failure.into_inner().unwrap_or_else(PoisonError::into_inner) {
        Some(e) => Err(e),
        None => Ok(outcome),
    }
}

/// The store read once (the lock held: nobody else writes the logs from here on), with
/// what a killed run left behind ended and removed, the old logs moved aside for
/// `--fresh`, the experiment file kept, and the store's warnings said.
fn clear_the_way(run: &Run<'_>, ui: &mut dyn Progress) -> Result<Start, RunError> {
    let store = run.store;
    let mut start = store.start_locked(run.plan, run.options.label.as_deref())?;
    // what a killed run left running goes first: it would run beside this run's trials,
    // and keep writing into the workdirs removed next
    match super::orphans::end(&store.dir) {
        Ok(ended) => {
            for o in ended {
                ui.note(&format!(
                    "stopped pid {} (`{}`): a run that was killed left it running",
                    o.pid, o.command
                ));
            }
        }
        Err(left) => return Err(RunError::OrphansLeft { pids: left.iter().map(|o| o.pid).collect() }),
    }
    for dir in workdir::remove_stale(store, &start.sessions) {
        ui.note(&format!("removed {}: the workdir of a run that was killed", dir.display()));
    }
    if run.options.fresh {
        for moved in store.move_aside()? {
            ui.note(&format!("--fresh: the old log is now {}", moved.display()));
        }
        // the logs are aside: this run starts from none
        start = Start::default();
    }
    // the store keeps the file it is run with, so it can be reported on without it
    store.keep_experiment(run.exp)?;
    for w in &start.warnings {
        ui.note(&format!("warning: {w}"));
    }
    Ok(start)
}

/// What every host's thread shares, from the run and the experiment's settings.
fn shared<'a>(run: &Run<'a>, recipe: Recipe, board: ProgressByCell) -> Result<Shared<'a>, RunError> {
    let Run { exp, plan, store, options, rule, interrupt } = *run;
    let templates = crate::plan::render::templates(exp);
    Ok(Shared {
        exp,
        plan,
        store,
        options,
        rule,
        board: Mutex::new(board),
        recipe,
        renders_per_trial: crate::plan::render::renders_per_trial(exp, &templates),
        monitor: super::telemetry::Monitor::of(&exp.spec),
        templates,
        timeout: exp.spec.timeout.as_ref().and_then(|t| parse_duration(&t.value).ok()),
        max_failures: exp.spec.max_failures.unwrap_or(DEFAULT_MAX_FAILURES),
        seed: options.seed.or(exp.spec.seed).unwrap_or_else(rand::random),
        interrupt,
        log: Mutex::new(store.trial_appender()?),
        stop: AtomicBool::new(false),
        failure: Mutex::new(None),
        shown: Mutex::new(Vec::new()),
    })
}

/// Cells by host, hosts in the order they first appear; the cells of hosts the boot loop
/// leaves alone are left out, those of hosts not selected (`--host`) counted into
/// `outcome` as complete or pending.
fn by_host<'p>(
    sh: &Shared<'p>,
    progress: &mut std::collections::HashMap<usize, CellProgress>,
    outcome: &mut Outcome,
) -> Vec<(&'p str, HostCells<'p>)> {
    let (plan, options) = (sh.plan, sh.options);
    let mut groups: Vec<(&str, HostCells<'_>)> = Vec::new();
    for (i, cell) in plan.cells.iter().enumerate() {
        let progress = progress.remove(&i).unwrap_or_default();
        let host = host_of(plan, cell);
        if options.skip_hosts.iter().any(|h| h == host) {
            continue;
        }
        if options.host.as_deref().is_some_and(|only| only != host) {
            if sh.rule.is_done(i, &progress, &sh.board()) {
                outcome.complete += 1;
            } else {
                let why = format!("runs on host `{host}`, not selected (--host)");
                outcome.pending.push(Pending { label: plan.label(cell), why });
            }
            continue;
        }
        match groups.iter_mut().find(|(h, _)| *h == host) {
            Some((_, cells)) => cells.push((i, cell, progress)),
            None => groups.push((host, vec![(i, cell, progress)])),
        }
    }
    groups
}

/// The hosts services run on beyond those of the cells (a server runs no trial); none
/// when no cell runs.
fn service_hosts(run: &Run<'_>, groups: &[(&str, HostCells<'_>)]) -> Vec<String> {
    let spec = &run.exp.spec;
    if spec.services.is_empty() || groups.is_empty() {
        return Vec::new();
    }
    let mut hosts: Vec<String> = Vec::new();
    for (_, service) in &spec.services {
        let (host, _) = spec.service_place(&service.value);
        if !groups.iter().any(|(h, _)| *h == host) && !hosts.contains(&host) {
            hosts.push(host);
        }
    }
    hosts
}

/// What a killed run left on the ssh hosts (a service, a trial without `timeout`) goes
/// first too, as this machine's did (orphans.rs).
fn end_left<'e>(executors: impl Iterator<Item = &'e Target>, ui: &mut dyn Progress) {
    for executor in executors {
        // an unreachable host's session says so
        if let Ok(ended) = executor.end_left() {
            for e in ended {
                ui.note(&format!(
                    "stopped pid {e} on host `{}`: a run that was killed left it running",
                    executor.host()
                ));
            }
        }
    }
}

/// A host's thread to be: its cells, where they run, its machine's turns.
struct HostThread<'p, 'e> {
    cells: HostCells<'p>,
    target: &'e Target,
    machine: &'e Machine,
}

/// Every host's session in a thread of its own, while this thread writes the session
/// log and shows the progress, until every host is done.
fn sessions_of(
    shared: &Shared<'_>,
    hosts: Vec<HostThread<'_, '_>>,
    places: &Places<'_>,
    sessions: &mut Appender,
    outcome: &mut Outcome,
    ui: &mut dyn Progress,
) {
    let count = hosts.len();
    let barrier = Barrier::new(count + 1);
    let (tx, rx) = mpsc::channel::<Msg>();
    std::thread::scope(|scope| {
        for host in hosts {
            let (tx, barrier) = (tx.clone(), &barrier);
            scope.spawn(move || {
                let mut h = HostRun {
                    shared,
                    target: host.target,
                    machine: host.machine,
                    places,
                    services: Vec::new(),
                    held: Vec::new(),
                    service_machines: Vec::new(),
                    session: uuid::Uuid::now_v7().to_string(),
                    counts: Counts::default(),
                    host_error: None,
                    interrupted: false,
                };
                h.session(host.cells, barrier, &tx);
            });
        }
        drop(tx);
        let mut writer =
            Writer { shared, sessions, outcome, hosts: count, ready: 0, todo: 0, min: 0, max: 0 };
        writer.write(&rx, &barrier, ui);
    });
}

/// The session log's writer: each host's start and end, the run's counts, the display.
struct Writer<'w, 's> {
    shared: &'w Shared<'s>,
    sessions: &'w mut Appender,
    outcome: &'w mut Outcome,
    /// Hosts, and hosts ready (connected, facts gathered).
    hosts: usize,
    ready: usize,
    /// Cells to run, and trials to run, fewest and most, over the hosts ready.
    todo: usize,
    min: u64,
    max: u64,
}

impl Writer<'_, '_> {
    /// Until every host's thread has ended.
    fn write(&mut self, rx: &mpsc::Receiver<Msg>, barrier: &Barrier, ui: &mut dyn Progress) {
        if self.hosts == 0 {
            barrier.wait();
        }
        loop {
            // What the hosts did before a message was sent is shown before it.
            let msg = match rx.recv_timeout(Duration::from_millis(100)) {
                Ok(msg) => msg,
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    show(self.shared, ui);
                    continue;
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    show(self.shared, ui);
                    break;
                }
            };
            show(self.shared, ui);
            match msg {
                Msg::Ready(r) => self.ready(*r, barrier, ui),
                Msg::Done(d) => self.done(*d),
            }
        }
    }

    /// A host's session begins: logged; the trials start once every host is ready.
    fn ready(&mut self, r: Ready, barrier: &Barrier, ui: &mut dyn Progress) {
        if let Err(e) = self.sessions.append(&r.session) {
            self.shared.fail(e.into());
        }
        self.outcome.sessions.push(r.session.session.clone());
        self.outcome.pending.extend(r.pending);
        (self.todo, self.min, self.max) = (self.todo + r.todo, self.min + r.min, self.max + r.max);
        self.ready += 1;
        if self.ready == self.hosts {
            ui.start(self.todo, self.min, self.max);
            barrier.wait();
        }
    }

    /// A host's session ended: logged, and counted into the outcome.
    fn done(&mut self, d: Done) {
        let ended = self.sessions.append(&d.end);
        let (c, outcome) = (d.counts, &mut *self.outcome);
        outcome.ok += c.ok;
        outcome.failed += c.failed;
        outcome.timed_out += c.timed_out;
        outcome.parse_errors += c.parse_errors;
        outcome.warmups += c.warmups;
        outcome.abandoned.extend(d.abandoned);
        outcome.cleanup_failed.extend(d.cleanup_failed);
        outcome.pending.extend(d.pending);
        outcome.complete += d.complete;
        outcome.host_errors.extend(d.host_error);
        outcome.interrupted |= d.interrupted;
        if let Some(e) = d.error {
            self.shared.fail(e);
        }
        // A session without its end reads as a killed run later: never a silent success.
        // After a full disk the trial log's own error comes first (the first failure is
        // the one reported).
        if let Err(e) = ended {
            self.shared.fail(e.into());
        }
    }
}

/// What the hosts did since the display last looked, shown in order.
fn show(shared: &Shared<'_>, ui: &mut dyn Progress) {
    for s in &shared.take_shown() {
        match s {
            Shown::Trial(f) => ui.trial(&TrialLine {
                label: &f.label,
                repetition: f.repetition,
                warmup: f.warmup,
                status: f.status,
                wall: f.wall,
                detail: f.detail.as_deref(),
            }),
            Shown::Note(text) => ui.note(text),
            Shown::CellEnded => ui.cell_ended(),
        }
    }
    ui.flush();
}
