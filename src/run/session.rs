//! A run of one experiment over all its hosts: the store locked and read once, the cells
//! grouped by host, one thread per host, and the calling thread writing the session log
//! and driving the progress display until every host is done.

use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::sync::{Barrier, Mutex, PoisonError, mpsc};
use std::time::Duration;

use super::display::{Progress, TrialLine};
use super::exec::Executor;
use super::host::{ControlDir, HostCells, Msg, executor};
use super::state::{Counts, HostRun, Machine, Places, Shared, Shown};
use super::{DEFAULT_MAX_FAILURES, Outcome, Pending, RunError, RunOptions, Stopping, facts, workdir};
use crate::parse::Recipe;
use crate::plan::{Plan, host_of};
use crate::spec::{Experiment, parse_duration};
use crate::store::{Board, Start, Store};

/// Run the cells of `plan` that match their host and still need trials.
pub(crate) fn run(
    exp: &Experiment,
    plan: &Plan,
    store: &Store,
    options: &RunOptions,
    rule: &dyn Stopping,
    interrupt: &AtomicBool,
    ui: &mut dyn Progress,
) -> Result<Outcome, RunError> {
    let connect = |host: &str, control: Option<&Path>| executor(exp, store, host, control);
    let outcome = run_on(exp, plan, store, options, rule, interrupt, ui, &connect);
    // the telemetry snapshots of the last second, flushed with the run (telemetry.rs)
    super::telemetry::close_all();
    outcome
}

/// The executor of a host, given the directory for ssh's sockets when some host is remote.
pub(crate) type Connect<'a> = dyn Fn(&str, Option<&Path>) -> Box<dyn Executor> + 'a;

/// [`run`] with the hosts' executors from `connect` (a test's fakes).
#[expect(clippy::too_many_arguments, reason = "those of `run`, and the executors")]
pub(crate) fn run_on(
    exp: &Experiment,
    plan: &Plan,
    store: &Store,
    options: &RunOptions,
    rule: &dyn Stopping,
    interrupt: &AtomicBool,
    ui: &mut dyn Progress,
    connect: &Connect<'_>,
) -> Result<Outcome, RunError> {
    facts::check_sysroot().map_err(RunError::Sysroot)?;
    let _lock = store.lock("run")?;
    // read once, after the lock: nobody else writes the logs from here on
    let mut start = store.start_locked(plan, options.label.as_deref())?;
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
        Err(left) => {
            return Err(RunError::OrphansLeft { pids: left.iter().map(|o| o.pid).collect() });
        }
    }
    for dir in workdir::remove_stale(store, &start.sessions) {
        ui.note(&format!("removed {}: the workdir of a run that was killed", dir.display()));
    }
    if options.fresh {
        for moved in store.move_aside()? {
            ui.note(&format!("--fresh: the old log is now {}", moved.display()));
        }
        // the logs are aside: this run starts from none
        start = Start::default();
    }
    // the store keeps the file it is run with, so it can be reported on without it
    store.keep_experiment(exp)?;
    for w in &start.warnings {
        ui.note(&format!("warning: {w}"));
    }
    let recipe =
        Recipe::from_spec(&exp.spec).map_err(|(metric, source)| RunError::Recipe { metric, source })?;
    let Start { mut progress, set_aside, sessions, warnings } = start;
    drop((sessions, warnings));
    let board = if rule.needs_board() { progress.clone() } else { Board::new() };
    let templates = crate::plan::render::templates(exp);
    let shared = Shared {
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
    };
    let mut outcome = Outcome {
        seed: shared.seed,
        cells: plan.cells.len(),
        set_aside,
        store: store.dir.clone(),
        ..Outcome::default()
    };

    // Cells by host, hosts in the order they first appear.
    let mut groups: Vec<(&str, HostCells<'_>)> = Vec::new();
    for (i, cell) in plan.cells.iter().enumerate() {
        let progress = progress.remove(&i).unwrap_or_default();
        let host = host_of(plan, cell);
        if options.skip_hosts.iter().any(|h| h == host) {
            continue;
        }
        if options.host.as_deref().is_some_and(|only| only != host) {
            if shared.rule.is_done(i, &progress, &shared.board()) {
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
    // The hosts services run on, beyond those of the cells (a server runs no trial).
    let mut service_hosts: Vec<String> = Vec::new();
    for (_, service) in &exp.spec.services {
        let (host, _) = exp.spec.service_place(&service.value);
        if !groups.iter().any(|(h, _)| *h == host) && !service_hosts.contains(&host) {
            service_hosts.push(host);
        }
    }
    let uses_services = !exp.spec.services.is_empty() && !groups.is_empty();
    let service_hosts = if uses_services { service_hosts } else { Vec::new() };
    // ssh's multiplexing sockets, only when some host is remote
    let remote = groups.iter().map(|(host, _)| *host).chain(service_hosts.iter().map(String::as_str));
    let control = match remote.clone().any(|host| super::reaches_ssh(exp, host)) {
        true => Some(ControlDir::new().map_err(RunError::ControlDir)?),
        false => None,
    };
    let executors: Vec<Box<dyn Executor>> =
        groups.iter().map(|(host, _)| connect(host, control.as_ref().map(ControlDir::path))).collect();
    let servers: Vec<Box<dyn Executor>> =
        service_hosts.iter().map(|host| connect(host, control.as_ref().map(ControlDir::path))).collect();

    // One turn per physical machine: its hosts (dom0 and its guests, or several entries
    // without ssh, which are all this machine) run one trial at a time between them.
    let machines: Vec<String> = groups.iter().map(|(host, _)| super::machine_of(exp, host)).collect();
    let places = Places {
        executors: remote
            .zip(executors.iter().chain(&servers))
            .map(|(host, e)| (host.to_string(), e.as_ref()))
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

    // what a killed run left on the ssh hosts (a service, a trial without `timeout`) goes
    // first too, as this machine's did (orphans.rs)
    for executor in executors.iter().chain(&servers) {
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
    let mut sessions = store.session_appender()?;
    let barrier = Barrier::new(groups.len() + 1);
    let (tx, rx) = mpsc::channel::<Msg>();
    std::thread::scope(|scope| {
        for (((_, cells), executor), machine) in groups.into_iter().zip(&executors).zip(&machines) {
            let (tx, shared, barrier) = (tx.clone(), &shared, &barrier);
            let (machine, places) = (&places.machines[machine.as_str()], &places);
            scope.spawn(move || {
                let mut h = HostRun {
                    shared,
                    executor: executor.as_ref(),
                    machine,
                    places,
                    services: Vec::new(),
                    held: Vec::new(),
                    service_machines: Vec::new(),
                    session: uuid::Uuid::now_v7().to_string(),
                    counts: Counts::default(),
                    host_error: None,
                    interrupted: false,
                };
                h.session(cells, barrier, &tx);
            });
        }
        drop(tx);
        let (mut ready, mut todo, mut min, mut max) = (0, 0, 0u64, 0u64);
        let hosts = executors.len();
        if hosts == 0 {
            barrier.wait();
        }
        let show = |ui: &mut dyn Progress| {
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
        };
        loop {
            // What the hosts did before a message was sent is shown before it.
            let msg = match rx.recv_timeout(Duration::from_millis(100)) {
                Ok(msg) => msg,
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    show(ui);
                    continue;
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    show(ui);
                    break;
                }
            };
            show(ui);
            match msg {
                Msg::Ready(r) => {
                    if let Err(e) = sessions.append(&r.session) {
                        shared.fail(e.into());
                    }
                    outcome.sessions.push(r.session.session.clone());
                    outcome.pending.extend(r.pending);
                    (todo, min, max) = (todo + r.todo, min + r.min, max + r.max);
                    ready += 1;
                    if ready == hosts {
                        ui.start(todo, min, max);
                        barrier.wait();
                    }
                }
                Msg::Done(d) => {
                    let ended = sessions.append(&d.end);
                    let c = d.counts;
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
                        shared.fail(e);
                    }
                    // A session without its end reads as a killed run later: never a
                    // silent success. After a full disk the trial log's own error comes
                    // first (the first failure is the one reported).
                    if let Err(e) = ended {
                        shared.fail(e.into());
                    }
                }
            }
        }
    });
    ui.finish();
    for e in executors.iter().chain(&servers) {
        e.close();
    }
    match shared.failure.into_inner().unwrap_or_else(PoisonError::into_inner) {
        Some(e) => Err(e),
        None => Ok(outcome),
    }
}
