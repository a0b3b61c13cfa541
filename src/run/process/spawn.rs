#![allow(unsafe_code)]
#![deny(clippy::undocumented_unsafe_blocks)]

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::ffi::{CString, OsString};
use std::io;
use std::mem::MaybeUninit;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStringExt;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Command, ExitStatus};
use std::rc::Rc;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};

use nix::sys::signal::Signal;
use nix::unistd::Pid;

use super::Invocation;

/// A command as `posix_spawnp` and `execve` take it: the program, its arguments, its
/// whole environment and its folder, as C strings; the program's path when it was
/// found (a name looked up on `PATH` as `posix_spawnp` would), and the NUL-terminated
/// arrays of pointers to the arguments and the variables.
pub(super) struct PreparedCommand {
    program: CString,
    path: Option<CString>,
    /// The arguments and the variables, which the pointers below point into.
    _argv: Vec<CString>,
    _envp: Vec<CString>,
    dir: CString,
    argv_pointers: Vec<*const libc::c_char>,
    envp_pointers: Vec<*const libc::c_char>,
}

/// What a [`PreparedCommand`] was built from: a run starts the same command in the same
/// folder with the same variables again and again.
#[derive(PartialEq)]
struct Key {
    command: String,
    direct: bool,
    dir: String,
    env: Vec<(String, String)>,
}

/// How many prepared commands a thread keeps: a trial's `prepare`, `run` and
/// `conclude`, and a few more.
const KEPT: usize = 8;

std::thread_local! {
    /// The commands this thread prepared last, the latest first (each host's thread
    /// starts its own).
    static LAST: RefCell<Vec<(Key, Rc<PreparedCommand>)>> = const { RefCell::new(Vec::new()) };
}

/// The prepared form of `invocation`'s command, `argv` (run directly when `direct`,
/// else it is `sh -c`'s): one this thread built lately when it is the same.
pub(super) fn prepared(
    invocation: &Invocation<'_>,
    direct: bool,
    argv: impl FnOnce() -> Vec<String>,
) -> io::Result<Rc<PreparedCommand>> {
    LAST.with_borrow_mut(|last| {
        let same = |key: &Key| {
            key.command == invocation.command
                && key.direct == direct
                && key.dir == invocation.dir
                && key.env == invocation.env
        };
        if let Some(i) = last.iter().position(|(key, _)| same(key)) {
            let kept = last.remove(i);
            let prepared = Rc::clone(&kept.1);
            last.insert(0, kept);
            return Ok(prepared);
        }
        let prepared = Rc::new(PreparedCommand::new(&argv(), invocation.dir, invocation.env)?);
        let key = Key {
            command: invocation.command.to_string(),
            direct,
            dir: invocation.dir.to_string(),
            env: invocation.env.to_vec(),
        };
        last.truncate(KEPT - 1);
        last.insert(0, (key, Rc::clone(&prepared)));
        Ok(prepared)
    })
}

/// A string with a NUL in it: std's error for it.
fn c_string(bytes: Vec<u8>) -> io::Result<CString> {
    CString::new(bytes)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "nul byte found in provided data"))
}

impl PreparedCommand {
    pub(super) fn new(argv: &[String], dir: &str, env: &[(String, String)]) -> io::Result<PreparedCommand> {
        let program = c_string(
            argv.first()
                .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "nothing to run"))?
                .clone()
                .into(),
        )?;
        let argv = argv.iter().map(|a| c_string(a.clone().into())).collect::<io::Result<_>>()?;
        // as std's `Command` builds it: margin's variables, the command's over them,
        // in the order of a map sorted by name, each `NAME=value`
        let mut vars: BTreeMap<OsString, OsString> = std::env::vars_os().collect();
        for (k, v) in env {
            vars.insert(k.into(), v.into());
        }
        let envp = vars
            .into_iter()
            .map(|(k, v)| {
                let mut kv = k.into_vec();
                kv.push(b'=');
                kv.extend(v.into_vec());
                c_string(kv)
            })
            .collect::<io::Result<_>>()?;
        let path = match program.to_str() {
            Ok(name) if name.contains('/') => Some(program.clone()),
            Ok(name) => super::on_path(name).and_then(|p| CString::new(p).ok()),
            Err(_) => None,
        };
        // pointers to the strings' own buffers, which stay where they are as long as
        // the strings live: as long as `self`
        let pointers = |strings: &Vec<CString>| -> Vec<*const libc::c_char> {
            strings.iter().map(|s| s.as_ptr()).chain([std::ptr::null()]).collect()
        };
        let (argv_pointers, envp_pointers) = (pointers(&argv), pointers(&envp));
        Ok(PreparedCommand {
            program,
            path,
            _argv: argv,
            _envp: envp,
            dir: c_string(dir.into())?,
            argv_pointers,
            envp_pointers,
        })
    }
}

/// `/dev/null`, opened once for every command's stdin.
fn null() -> io::Result<&'static std::fs::File> {
    static NULL: OnceLock<std::fs::File> = OnceLock::new();
    if let Some(null) = NULL.get() {
        return Ok(null);
    }
    let file = std::fs::File::open("/dev/null")?;
    Ok(NULL.get_or_init(|| file))
}

/// A descriptor the child can take as 0, 1 or 2 whatever the order it takes them in:
/// one of 0–2 itself (margin started with one of its own closed) is copied above them.
fn above_stdio(file: &std::fs::File) -> io::Result<Option<OwnedFd>> {
    if file.as_raw_fd() > 2 { Ok(None) } else { Ok(Some(file.try_clone()?.into())) }
}

/// A posix_spawn* function's result: 0, or the error number.
fn check(code: libc::c_int) -> io::Result<()> {
    if code == 0 { Ok(()) } else { Err(io::Error::from_raw_os_error(code)) }
}

/// The file actions, destroyed when dropped.
struct Actions(MaybeUninit<libc::posix_spawn_file_actions_t>);

impl Drop for Actions {
    fn drop(&mut self) {
        // SAFETY: only built by `start` after `posix_spawn_file_actions_init` succeeded.
        unsafe { libc::posix_spawn_file_actions_destroy(self.0.as_mut_ptr()) };
    }
}

/// The attributes, destroyed when dropped.
struct Attributes(MaybeUninit<libc::posix_spawnattr_t>);

impl Drop for Attributes {
    fn drop(&mut self) {
        // SAFETY: only built by `start` after `posix_spawnattr_init` succeeded.
        unsafe { libc::posix_spawnattr_destroy(self.0.as_mut_ptr()) };
    }
}

/// A started command: its pid (its process group's id too), and a descriptor that
/// becomes readable when it ends, when the start gave one.
pub(super) struct StartedProcess {
    pub(super) pid: Pid,
    pub(super) pidfd: Option<OwnedFd>,
}

/// Start `prepared` in a process group of its own (its pid is the group's id), stdin
/// from `/dev/null`, stdout and stderr into the two files: by [`cloned`], or by
/// `posix_spawnp` where that cannot.
pub(super) fn start(
    prepared: &PreparedCommand,
    stdout: &std::fs::File,
    stderr: &std::fs::File,
) -> io::Result<StartedProcess> {
    let null = null()?;
    let high = [above_stdio(null)?, above_stdio(stdout)?, above_stdio(stderr)?];
    let mut fds = [0; 3];
    for ((fd, file), high) in fds.iter_mut().zip([null, stdout, stderr]).zip(&high) {
        *fd = high.as_ref().map_or(file.as_raw_fd(), |h| h.as_raw_fd());
    }
    if let Some(path) = &prepared.path
        && !NO_CLONE.load(Ordering::Relaxed)
        && let Some(started) = cloned(prepared, path, fds)?
    {
        return Ok(started);
    }
    let pid = spawned(prepared, fds)?;
    drop(high);
    Ok(StartedProcess { pid, pidfd: None })
}

/// Set once the kernel has refused [`cloned`]'s `clone`: `posix_spawnp` from then on.
static NO_CLONE: AtomicBool = AtomicBool::new(false);

/// The signals margin has handlers for: SIGINT and SIGTERM (`margin run`'s Ctrl-C,
/// cmd/run.rs), SIGSEGV and SIGBUS (std's guard against a stack overflow); and SIGPIPE,
/// which margin ignores (std does) and a command gets back at its default, as std's
/// `Command` gives it. A child started by [`cloned`] shares margin's memory until its
/// `execve`: a handler of margin's must not run in it, so these go back to their
/// default first. A handler added to margin must be added here; debug builds check
/// it at every start ([`handlers_are_known`]).
pub(super) const HANDLED: [libc::c_int; 5] =
    [libc::SIGINT, libc::SIGTERM, libc::SIGSEGV, libc::SIGBUS, libc::SIGPIPE];

/// What the child of [`cloned`] needs, built by the parent: the child may not
/// allocate (it shares the parent's heap, whose lock another thread may hold).
struct ChildPlan {
    path: *const libc::c_char,
    argv: *const *const libc::c_char,
    envp: *const *const libc::c_char,
    dir: *const libc::c_char,
    /// stdin, stdout and stderr, each above 2
    fds: [libc::c_int; 3],
    default: libc::sigaction,
    empty: libc::sigset_t,
    /// Set by the child when it could not get as far as running the program: the
    /// error number (0: it ran it).
    error: libc::c_int,
    /// Set by the child when what failed was the `execve` itself (not the folder, …).
    at_exec: bool,
}

/// The child of [`cloned`], on its own stack, in margin's memory, margin's thread
/// suspended until it calls `execve` or ends: its own process group, margin's
/// handlers back to their defaults, the three descriptors, the folder, an empty
/// signal mask (all are blocked when it starts), the program. Only async-signal-safe
/// calls; on a failure it keeps the error number in the plan and ends.
extern "C" fn child(plan: *mut libc::c_void) -> libc::c_int {
    // SAFETY: `plan` is the `ChildPlan` that `cloned` passed, alive for the whole call
    // (its thread is suspended until this child calls execve or ends); its pointers
    // are to C strings and NUL-terminated arrays that `PreparedCommand` owns. Each call
    // below takes pointers to those or to the plan's own fields.
    unsafe {
        let plan = &mut *plan.cast::<ChildPlan>();
        let ok = libc::setpgid(0, 0) == 0
            && HANDLED.iter().all(|&sig| libc::sigaction(sig, &plan.default, std::ptr::null_mut()) == 0)
            && plan.fds.iter().zip(0..).all(|(&fd, target)| libc::dup2(fd, target) == target)
            && libc::chdir(plan.dir) == 0
            && libc::sigprocmask(libc::SIG_SETMASK, &plan.empty, std::ptr::null_mut()) == 0;
        if ok {
            libc::execve(plan.path, plan.argv, plan.envp);
        }
        plan.error = *libc::__errno_location();
        plan.at_exec = ok;
        127
    }
}

/// The stack [`child`] runs on: mapped once per thread (each host's thread starts its
/// own commands), a page at its foot left unmapped so that an overflow faults rather
/// than writes over other memory. Its thread is suspended while the child uses it.
struct Stack {
    base: *mut libc::c_void,
    len: usize,
}

/// [`child`] makes a handful of calls: 64 KiB is many times what it uses (glibc's own
/// child gets 36 KiB).
const STACK: usize = 64 << 10;

impl Stack {
    fn new() -> io::Result<Stack> {
        // SAFETY: sysconf reads a number; mmap asks for a new private mapping that
        // nothing else refers to, and mprotect changes only its first page.
        unsafe {
            let page = usize::try_from(libc::sysconf(libc::_SC_PAGESIZE)).unwrap_or(4096).max(4096);
            let len = page + STACK.div_ceil(page) * page;
            let base = libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_STACK,
                -1,
                0,
            );
            if base == libc::MAP_FAILED {
                return Err(io::Error::last_os_error());
            }
            let stack = Stack { base, len };
            if libc::mprotect(base, page, libc::PROT_NONE) != 0 {
                return Err(io::Error::last_os_error());
            }
            Ok(stack)
        }
    }

    /// Where the child's stack starts (it grows down): the mapping's end, page-aligned.
    fn top(&self) -> *mut libc::c_void {
        self.base.wrapping_byte_add(self.len)
    }
}

impl Drop for Stack {
    fn drop(&mut self) {
        // SAFETY: the mapping is this Stack's own, mapped by `new`, used by no child
        // now (a child runs only during `cloned`, which holds the borrow).
        unsafe { libc::munmap(self.base, self.len) };
    }
}

std::thread_local! {
    static CHILD_STACK: RefCell<Option<Stack>> = const { RefCell::new(None) };
}

/// Start `prepared` (the program at `path`) with `clone`, as the module says. `None`
/// when the kernel refused the `clone` (remembered: `posix_spawnp` then starts it);
/// the error when the child could not get as far as running the program (reaped).
fn cloned(
    prepared: &PreparedCommand,
    path: &CString,
    fds: [libc::c_int; 3],
) -> io::Result<Option<StartedProcess>> {
    #[cfg(debug_assertions)]
    handlers_are_known();
    CHILD_STACK.with_borrow_mut(|stack| {
        let stack = match stack {
            Some(stack) => stack,
            None => stack.insert(Stack::new()?),
        };
        // SAFETY: sigaction and sigset_t are plain C structs of numbers and pointers,
        // for which all zeros is a value (SIG_DFL, no flags, an empty set, filled by
        // sigemptyset next).
        let (mut default, mut empty): (libc::sigaction, libc::sigset_t) =
            unsafe { (std::mem::zeroed(), std::mem::zeroed()) };
        default.sa_sigaction = libc::SIG_DFL;
        // SAFETY: pointers to live locals of the types these functions fill.
        unsafe {
            libc::sigemptyset(&mut default.sa_mask);
            libc::sigemptyset(&mut empty);
        }
        let mut plan = ChildPlan {
            path: path.as_ptr(),
            argv: prepared.argv_pointers.as_ptr(),
            envp: prepared.envp_pointers.as_ptr(),
            dir: prepared.dir.as_ptr(),
            fds,
            default,
            empty,
            error: 0,
            at_exec: false,
        };
        let mut pidfd: libc::c_int = -1;
        let with_pidfd = if pidfds_wait() { libc::CLONE_PIDFD } else { 0 };
        let flags = libc::CLONE_VM | libc::CLONE_VFORK | with_pidfd | libc::SIGCHLD;
        // SAFETY: every signal is blocked in this thread from before the clone until
        // it returns, so no handler of margin's runs in the child before it sets them
        // back to their defaults (all but glibc's own 32 and 33, which pthread_sigmask
        // leaves open: glibc sends them with tgkill to the threads it lists, never the
        // child, and its handler ignores them otherwise). The child runs `child` on
        // `stack`, mapped for it and used by nothing else meanwhile (this thread is
        // suspended until the child's execve or end: CLONE_VFORK), with `plan`, which
        // lives on this frame past the clone; `pidfd` is where the kernel writes the
        // child's pidfd (CLONE_PIDFD). After the clone returns the child no longer uses
        // `plan`, read here by volatile loads since the child wrote it behind the
        // compiler's back.
        let (pid, clone_error, (error, at_exec)) = unsafe {
            let (mut all, mut old): (libc::sigset_t, libc::sigset_t) =
                (std::mem::zeroed(), std::mem::zeroed());
            libc::sigfillset(&mut all);
            libc::pthread_sigmask(libc::SIG_BLOCK, &all, &mut old);
            let pid = libc::clone(child, stack.top(), flags, (&raw mut plan).cast(), &raw mut pidfd);
            let clone_error = io::Error::last_os_error();
            libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut());
            let failed = (
                std::ptr::read_volatile(&raw const plan.error),
                std::ptr::read_volatile(&raw const plan.at_exec),
            );
            (pid, clone_error, failed)
        };
        if pid < 0 {
            return match clone_error.raw_os_error() {
                Some(libc::EINVAL | libc::ENOSYS | libc::EPERM) => {
                    NO_CLONE.store(true, Ordering::Relaxed);
                    Ok(None)
                }
                _ => Err(clone_error),
            };
        }
        // SAFETY: with CLONE_PIDFD a successful clone wrote a new descriptor, ours
        // alone (a kernel that ignores the flag leaves -1: no descriptor).
        let pidfd = (pidfd >= 0).then(|| unsafe { OwnedFd::from_raw_fd(pidfd) });
        let pid = Pid::from_raw(pid);
        if error != 0 {
            // it has ended (the clone returned): reaped, and the error is the start's,
            // as posix_spawnp gives it; one before the `execve` (the folder gone) keeps
            // only its text, so that `execute` does not try the shell for it
            reap(pid)?;
            let e = io::Error::from_raw_os_error(error);
            return Err(if at_exec { e } else { io::Error::new(e.kind(), e.to_string()) });
        }
        Ok(Some(StartedProcess { pid, pidfd }))
    })
}

/// Whether a pidfd can be waited on (Linux 5.3 and later: `pidfd_open` exists; 5.2
/// gives one from `clone` that `poll` does not wait on, and older kernels ignore the
/// flag). Asked once, of margin's own pid.
fn pidfds_wait() -> bool {
    static WAIT: OnceLock<bool> = OnceLock::new();
    *WAIT.get_or_init(|| open_pidfd(Pid::this()).is_ok())
}

/// That no signal outside [`HANDLED`] has a handler in margin (debug builds, at every
/// start: what a release build's [`child`] relies on). glibc refuses to say for its
/// own two (32 and 33).
#[cfg(debug_assertions)]
fn handlers_are_known() {
    for sig in 1..=libc::SIGRTMAX() {
        if sig == libc::SIGKILL || sig == libc::SIGSTOP || HANDLED.contains(&sig) {
            continue;
        }
        // SAFETY: all zeros is a value of sigaction.
        let mut action: libc::sigaction = unsafe { std::mem::zeroed() };
        // SAFETY: the call only reads the disposition.
        let queried = unsafe { libc::sigaction(sig, std::ptr::null(), &mut action) } == 0;
        assert!(
            !queried || action.sa_sigaction == libc::SIG_DFL || action.sa_sigaction == libc::SIG_IGN,
            "signal {sig} has a handler in margin: add it to spawn::HANDLED"
        );
    }
}

/// Start `prepared` with `posix_spawnp`, stdin, stdout and stderr from `fds`.
pub(super) fn spawned(prepared: &PreparedCommand, fds: [libc::c_int; 3]) -> io::Result<Pid> {
    let mut pid: libc::pid_t = 0;
    // SAFETY: every pointer handed to the posix_spawn* functions is to a live local
    // (the actions and attributes, initialised before any other use and destroyed by
    // their guards after the last), to a C string of `prepared`, or to its
    // NUL-terminated arrays of pointers to such strings (`prepared` outlives the call;
    // posix_spawnp reads them, writes none and keeps none). The descriptors are open
    // (the caller holds the files for the whole call).
    unsafe {
        let mut actions = Actions(MaybeUninit::uninit());
        check(libc::posix_spawn_file_actions_init(actions.0.as_mut_ptr()))?;
        for (fd, target) in fds.iter().zip([libc::STDIN_FILENO, libc::STDOUT_FILENO, libc::STDERR_FILENO]) {
            check(libc::posix_spawn_file_actions_adddup2(actions.0.as_mut_ptr(), *fd, target))?;
        }
        check(libc::posix_spawn_file_actions_addchdir_np(actions.0.as_mut_ptr(), prepared.dir.as_ptr()))?;
        let mut attributes = Attributes(MaybeUninit::uninit());
        check(libc::posix_spawnattr_init(attributes.0.as_mut_ptr()))?;
        check(libc::posix_spawnattr_setpgroup(attributes.0.as_mut_ptr(), 0))?;
        // SIGPIPE back to its default, as std does (margin ignores it)
        let mut default: MaybeUninit<libc::sigset_t> = MaybeUninit::uninit();
        if libc::sigemptyset(default.as_mut_ptr()) != 0
            || libc::sigaddset(default.as_mut_ptr(), libc::SIGPIPE) != 0
        {
            return Err(io::Error::last_os_error());
        }
        check(libc::posix_spawnattr_setsigdefault(attributes.0.as_mut_ptr(), default.as_ptr()))?;
        // and no signal blocked, as std and `cloned` start it
        let mut empty: MaybeUninit<libc::sigset_t> = MaybeUninit::uninit();
        if libc::sigemptyset(empty.as_mut_ptr()) != 0 {
            return Err(io::Error::last_os_error());
        }
        check(libc::posix_spawnattr_setsigmask(attributes.0.as_mut_ptr(), empty.as_ptr()))?;
        let flags = libc::POSIX_SPAWN_SETPGROUP | libc::POSIX_SPAWN_SETSIGDEF | libc::POSIX_SPAWN_SETSIGMASK;
        check(libc::posix_spawnattr_setflags(attributes.0.as_mut_ptr(), flags as libc::c_short))?;
        check(libc::posix_spawnp(
            &mut pid,
            prepared.program.as_ptr(),
            actions.0.as_ptr(),
            attributes.0.as_ptr(),
            prepared.argv_pointers.as_ptr().cast(),
            prepared.envp_pointers.as_ptr().cast(),
        ))?;
    }
    Ok(Pid::from_raw(pid))
}

// The other calls that need unsafe code, kept here with the spawn so that this file is
// the only one of process/ that has any: the long-lived command's parent-death signal
// (background.rs), and the reaping with `wait4` and the pidfd (reap.rs re-exports them).

/// Mark every descriptor above 2 that margin was started with close-on-exec, so that no
/// command margin runs (a trial, a `restart`, and the daemon a restart leaves behind)
/// inherits it: a pipe of margin's parent held open by a QEMU that outlives margin keeps
/// that parent waiting for ever. margin's own descriptors are close-on-exec already.
/// How many were marked; those that cannot be read or marked are left as they are.
pub(super) fn inherited_close_on_exec() -> io::Result<usize> {
    let mut marked = 0;
    for entry in std::fs::read_dir("/proc/self/fd")? {
        let Some(fd) = entry?.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) else { continue };
        if fd <= 2 {
            continue;
        }
        // SAFETY: F_GETFD and F_SETFD read and set a descriptor's flags and touch no
        // memory; a descriptor closed meanwhile (the listing's own) fails with EBADF.
        let flags = unsafe { libc::fcntl(fd, libc::F_GETFD) };
        if flags >= 0 && flags & libc::FD_CLOEXEC == 0 {
            // SAFETY: as above.
            if unsafe { libc::fcntl(fd, libc::F_SETFD, flags | libc::FD_CLOEXEC) } == 0 {
                marked += 1;
            }
        }
    }
    Ok(marked)
}

/// Have the kernel kill a long-lived command when the thread that started it ends, even
/// when margin itself is killed (SIGKILL leaves no chance to stop it).
#[allow(unsafe_code)]
pub(super) fn dies_with_margin(command: &mut Command) {
    // SAFETY: the closure runs in the child between fork and exec, and only makes one
    // system call (prctl), which is async-signal-safe; it allocates nothing.
    unsafe {
        command.pre_exec(|| nix::sys::prctl::set_pdeathsig(Signal::SIGKILL).map_err(std::io::Error::from));
    }
}

/// How a reaped child ended, and the CPU time it and what it waited for used.
pub(super) struct Reaped {
    pub status: ExitStatus,
    pub user: f64,
    pub system: f64,
    pub written: f64,
}

/// A descriptor that becomes readable when `pid` ends (Linux 5.3 and later).
pub(super) fn open_pidfd(pid: Pid) -> io::Result<OwnedFd> {
    // SAFETY: pidfd_open takes a pid and flags, touches no memory of ours, and
    // returns a new descriptor or -1.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid.as_raw(), 0) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: the descriptor was just opened for us, and nothing else owns it.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as i32) })
}

/// Reap `pid`, which has ended, with its resource usage.
pub(super) fn reap(pid: Pid) -> io::Result<Reaped> {
    let mut status: libc::c_int = 0;
    // SAFETY: rusage is a plain C struct of numbers, for which all zeros is a value.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: both pointers are to live locals of the types wait4 writes.
        let r = unsafe { libc::wait4(pid.as_raw(), &mut status, 0, &mut usage) };
        if r == pid.as_raw() {
            break;
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    Ok(Reaped {
        status: ExitStatus::from_raw(status),
        user: secs(usage.ru_utime),
        system: secs(usage.ru_stime),
        // getrusage(2): in 512-byte blocks whatever the file system's block size
        written: usage.ru_oublock as f64 * 512.0,
    })
}
