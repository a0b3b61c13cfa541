//! The running registry: the process groups of the commands running now, and what to
//! run elsewhere when margin ends at once (a second Ctrl-C, which [`watch_signals`] sees).

use std::io::Write as _;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

use super::capture_argv;

/// The process groups of the commands running now (trials and hooks): a second Ctrl-C
/// ends them with margin rather than leaving them running on their own.
pub(super) static RUNNING: Mutex<Vec<i32>> = Mutex::new(Vec::new());

/// Set by [`kill_running`]: margin is ending at once, and a command that ends from now on
/// was killed by it, not by itself.
static ABORTING: AtomicBool = AtomicBool::new(false);

/// Commands that stop what runs elsewhere (a service on an ssh host), by id: run by
/// [`kill_running`], since killing the local ssh client leaves the remote command running.
static ON_ABORT: Mutex<Vec<(u64, Vec<String>)>> = Mutex::new(Vec::new());

/// A command in [`ON_ABORT`] while this lives.
pub(crate) struct OnAbort(u64);

impl OnAbort {
    pub(crate) fn new(argv: Vec<String>) -> Self {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let id = NEXT.fetch_add(1, Ordering::SeqCst);
        ON_ABORT.lock().unwrap_or_else(PoisonError::into_inner).push((id, argv));
        OnAbort(id)
    }
}

impl Drop for OnAbort {
    fn drop(&mut self) {
        ON_ABORT.lock().unwrap_or_else(PoisonError::into_inner).retain(|(id, _)| *id != self.0);
    }
}

/// Kill every command margin is running, each with its whole process group; then stop
/// what runs elsewhere ([`OnAbort`]).
pub fn kill_running() {
    // before the kill: a host thread that sees its trial end must know margin ended it
    ABORTING.store(true, Ordering::SeqCst);
    for &pgid in RUNNING.lock().unwrap_or_else(PoisonError::into_inner).iter() {
        let _ = killpg(Pid::from_raw(pgid), Signal::SIGKILL);
    }
    let stops: Vec<Vec<String>> = ON_ABORT
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .iter()
        .map(|(_, argv)| argv.clone())
        .collect();
    let dir = std::env::temp_dir();
    for argv in stops {
        let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
        let _ = capture_argv(&argv, &dir, Duration::from_secs(10));
    }
}

/// Whether [`kill_running`] has been called: what ends now is no result to record.
pub fn aborting() -> bool {
    ABORTING.load(Ordering::SeqCst)
}

/// A process group in [`RUNNING`] while this lives.
pub(super) struct Running(i32);

impl Running {
    pub(super) fn new(pgid: i32) -> Self {
        RUNNING.lock().unwrap_or_else(PoisonError::into_inner).push(pgid);
        Running(pgid)
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let mut running = RUNNING.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(i) = running.iter().position(|p| *p == self.0) {
            running.swap_remove(i);
        }
    }
}

/// Ctrl-C or SIGTERM: finish the trial under way, record it, stop (exit 130; the next
/// `run` resumes). A second one kills the commands running, each with its whole process
/// group (they are not in the terminal's, so Ctrl-C never reaches them), and ends margin
/// at once: the trial under way is lost, the log stays loadable.
pub fn watch_signals(interrupt: Arc<AtomicBool>) {
    use signal_hook::consts::{SIGINT, SIGTERM};
    let Ok(mut signals) = signal_hook::iterator::Signals::new([SIGINT, SIGTERM]) else {
        return;
    };
    std::thread::spawn(move || {
        for _ in signals.forever() {
            if interrupt.swap(true, Ordering::SeqCst) {
                kill_running();
                std::process::exit(130);
            }
            // not `eprintln!`: it panics on a closed stderr, and this thread must live to
            // see the second interrupt
            let _ = writeln!(
                std::io::stderr(),
                "stopping after the trial under way (interrupt again to stop at once)"
            );
        }
    });
}
