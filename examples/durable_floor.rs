//! The floor under `margin run`'s per-trial cost: what any tool must spend to run a
//! trial and make a record of it durable before the next one starts, and nothing else.
//!
//! Each of N trials spawns `true` (output to /dev/null, as `hyperfine -N` does), waits
//! for it, writes one 740-byte line (the size of margin's record for it) over zeros laid
//! ahead, and `fdatasync`s. `bench/run.sh` times it beside `margin run` and hyperfine:
//! margin ÷ floor is what margin itself adds, floor ÷ hyperfine what durability costs on
//! the disk under TMPDIR.
//!
//! At the end it prints `own_cpu_s S`: the CPU time of its own thread (from
//! /proc/thread-self/schedstat, in nanoseconds), without the children's — what
//! `bench/run.sh` sets against margin's own CPU time per trial, which no disk's flush
//! jitter moves; and `period_s S`: from the first trial's start to the last one's, over
//! the trials between, the time one trial takes in the loop, start-up and end left out
//! (what margin's trial log gives as the spacing of its `started_at` times).
//!
//! With a third argument `env`, each spawn also adds one variable to the child's
//! environment, as margin adds its store's marker to every command's: std then copies the
//! whole environment into a new one at every spawn, which shows what that costs.
//!
//! With `counters`, each trial is also measured as margin's default telemetry measures it
//! (`monitor:` left out: cpu and disks): `/proc/stat` and `/proc/diskstats` read with one
//! `pread` each right before and right after the trial, `/proc/meminfo` before it, from
//! handles opened once, and the text read appended to a second file in DIR (made durable
//! at the end; margin flushes it once a second). That is the floor under a run with
//! telemetry: what the kernel spends writing those files out is in any tool that keeps
//! them, and no change to margin's code removes it.
//!
//! With `outputs`, each trial's stdout and stderr go into two files in memory made for it
//! (`memfd_create`), as margin captures every command's output, rather than to /dev/null;
//! after the wait each is looked at, and one that holds anything is copied to a file in
//! DIR and made durable before the record (`true` prints nothing). That is the floor under
//! a runner that keeps every raw output, as margin must (docs/store.md): a file per stream
//! and per trial, never one reused, since a daemon the command left running may still
//! hold it. (std's `Command` takes each file's own descriptor, so the floor hands it a
//! copy: one `dup` and one `close` a stream that margin's spawn does not make.)
//!
//! With `clone`, `true` is started as margin starts a command (`margin::run::process::
//! Starter`: `clone` into a process group of its own, the child setting back to their
//! defaults only the few signals margin handles) rather than by std's `Command`, whose
//! `posix_spawn` has its child set all 64 signals' dispositions one by one: the floor
//! under a runner that starts its commands that way, so that margin's own work is held
//! against a floor that starts as cheaply as margin does.
//!
//! usage: durable_floor DIR [N] [env] [counters] [outputs] [clone]   (default N: 1000; the files go in DIR and are removed)

use std::fs::OpenOptions;
use std::os::unix::fs::FileExt;
use std::path::PathBuf;
use std::process::{Command, ExitCode, Stdio};

const LINE: usize = 740;

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let Some(dir) = args.next().map(PathBuf::from) else {
        eprintln!("usage: durable_floor DIR [N] [env] [counters] [outputs] [clone]");
        return ExitCode::from(2);
    };
    let n: u64 = match args.next().map(|n| n.parse()) {
        None => 1000,
        Some(Ok(n)) => n,
        Some(Err(e)) => {
            eprintln!("durable_floor: N: {e}");
            return ExitCode::from(2);
        }
    };
    let mut flags = Flags::default();
    for flag in args {
        match flag.as_str() {
            "env" => flags.env = true,
            "counters" => flags.counters = true,
            "outputs" => flags.outputs = true,
            "clone" => flags.clone = true,
            other => {
                eprintln!("durable_floor: expected `env`, `counters`, `outputs` or `clone`, found `{other}`");
                return ExitCode::from(2);
            }
        }
    }
    match run(&dir, n, flags) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("durable_floor: {}: {e}", dir.display());
            ExitCode::FAILURE
        }
    }
}

/// What the floor does besides the spawn, the wait and the durable line (each flag above).
#[derive(Default)]
struct Flags {
    env: bool,
    counters: bool,
    outputs: bool,
    clone: bool,
}

/// A trial's stdout and stderr in memory, and the copy of a non-empty one made durable in
/// `dir` (as margin keeps a raw output) before the record.
struct Outputs {
    files: [std::fs::File; 2],
}

impl Outputs {
    fn new() -> std::io::Result<Outputs> {
        let memory = |name| -> std::io::Result<std::fs::File> {
            let fd = nix::sys::memfd::memfd_create(name, nix::sys::memfd::MFdFlags::MFD_CLOEXEC)?;
            Ok(std::fs::File::from(fd))
        };
        Ok(Outputs { files: [memory("stdout")?, memory("stderr")?] })
    }

    /// Kept: each stream that holds anything copied to `dir` and made durable.
    fn keep(self, dir: &std::path::Path) -> std::io::Result<()> {
        use std::io::{Seek, SeekFrom};
        for (mut memory, name) in self.files.into_iter().zip(["durable_floor.out", "durable_floor.err"]) {
            if memory.metadata()?.len() == 0 {
                continue;
            }
            memory.seek(SeekFrom::Start(0))?;
            let mut file = std::fs::File::create(dir.join(name))?;
            std::io::copy(&mut memory, &mut file)?;
            file.sync_data()?;
        }
        Ok(())
    }
}

/// The files margin's default telemetry reads around a trial: before and after, and
/// before only.
const AROUND: [&str; 2] = ["/proc/stat", "/proc/diskstats"];
const BEFORE: &str = "/proc/meminfo";

/// The counters' handles, a buffer for their text and the file it is kept in.
struct Counters {
    around: Vec<std::fs::File>,
    before: std::fs::File,
    buffer: Vec<u8>,
    kept: std::fs::File,
}

impl Counters {
    fn open(dir: &std::path::Path) -> std::io::Result<Counters> {
        let around = AROUND.iter().map(std::fs::File::open).collect::<Result<_, _>>()?;
        let kept = OpenOptions::new()
            .create(true)
            .truncate(true)
            .write(true)
            .open(dir.join("durable_floor.counters"))?;
        Ok(Counters { around, before: std::fs::File::open(BEFORE)?, buffer: vec![0; 64 * 1024], kept })
    }

    /// Each file read from its start and its text kept (`before` adds /proc/meminfo).
    fn read(&mut self, before: bool) -> std::io::Result<()> {
        use std::io::Write as _;
        let files = self.around.iter().chain(before.then_some(&self.before));
        for file in files {
            let n = file.read_at(&mut self.buffer, 0)?;
            self.kept.write_all(&self.buffer[..n])?;
        }
        Ok(())
    }
}

fn run(dir: &std::path::Path, n: u64, flags: Flags) -> std::io::Result<()> {
    let path = dir.join("durable_floor.log");
    let file = OpenOptions::new().read(true).write(true).create(true).truncate(true).open(&path)?;
    file.write_all_at(&vec![0; n as usize * LINE + 4096], 0)?;
    file.sync_all()?;
    let mut line = [b'x'; LINE];
    line[LINE - 1] = b'\n';
    // found on PATH once, as margin does: a bare name would be looked for at every spawn
    let program = std::env::var_os("PATH")
        .iter()
        .flat_map(std::env::split_paths)
        .map(|dir| dir.join("true"))
        .find(|path| path.is_file())
        .ok_or_else(|| std::io::Error::other("`true` is not on PATH"))?;
    let marker = dir.display().to_string();
    let starter = if flags.clone {
        let env = if flags.env { vec![("MARGIN_TRIAL_STORE".to_string(), marker.clone())] } else { vec![] };
        let argv = [program.to_string_lossy().into_owned()];
        Some((margin::run::process::Starter::new(&argv, ".", &env)?, std::fs::File::open("/dev/null")?))
    } else {
        None
    };
    let mut counters = if flags.counters { Some(Counters::open(dir)?) } else { None };
    let mut first_start: Option<std::time::Instant> = None;
    let mut last_start = None;
    for i in 0..n {
        let now = std::time::Instant::now();
        first_start.get_or_insert(now);
        last_start = Some(now);
        let outputs = if flags.outputs { Some(Outputs::new()?) } else { None };
        let status = match &starter {
            Some((starter, null)) => {
                let (stdout, stderr) = outputs.as_ref().map_or((null, null), |o| (&o.files[0], &o.files[1]));
                if let Some(c) = &mut counters {
                    c.read(true)?;
                }
                starter.run(stdout, stderr)?
            }
            None => {
                let mut command = Command::new(&program);
                if flags.env {
                    command.env("MARGIN_TRIAL_STORE", &marker);
                }
                command.stdin(Stdio::null());
                match &outputs {
                    Some(o) => command.stdout(o.files[0].try_clone()?).stderr(o.files[1].try_clone()?),
                    None => command.stdout(Stdio::null()).stderr(Stdio::null()),
                };
                if let Some(c) = &mut counters {
                    c.read(true)?;
                }
                command.status()?
            }
        };
        if let Some(c) = &mut counters {
            c.read(false)?;
        }
        if !status.success() {
            return Err(std::io::Error::other(format!("`true` ended with {status}")));
        }
        if let Some(o) = outputs {
            o.keep(dir)?;
        }
        file.write_all_at(&line, i * LINE as u64)?;
        file.sync_data()?;
    }
    std::fs::remove_file(&path)?;
    for name in ["durable_floor.out", "durable_floor.err"] {
        match std::fs::remove_file(dir.join(name)) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
            _ => {}
        }
    }
    if let Some(c) = counters {
        c.kept.sync_data()?;
        std::fs::remove_file(dir.join("durable_floor.counters"))?;
    }
    // the first field: nanoseconds this thread has run (user and system)
    let schedstat = std::fs::read_to_string("/proc/thread-self/schedstat")?;
    let ns: u64 = schedstat.split_whitespace().next().and_then(|f| f.parse().ok()).unwrap_or(0);
    println!("own_cpu_s {:.6}", ns as f64 / 1e9);
    if let (Some(first), Some(last)) = (first_start, last_start)
        && n > 1
    {
        println!("period_s {:.9}", (last - first).as_secs_f64() / (n - 1) as f64);
    }
    Ok(())
}
