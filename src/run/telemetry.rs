//! Telemetry: the host's counters (`/proc/stat`, `/proc/diskstats`, `/proc/vmstat`,
//! `/proc/net/dev`, `xl list`) read right before and right after a trial's timed command,
//! kept raw in the session's `raw/<session>.telemetry`, and the secondary metrics derived from them
//! (docs/design.md §6.9).
//!
//! Nothing runs during the trial, so nothing competes with it. Locally each file is read
//! with one `pread` from a handle opened once per run (the per-trial overhead goal of
//! issue 17); over ssh the reads ride on the trial's own command (`Ssh::execute` wraps it),
//! so they add no round trip.
//!
//! The raw form is the same on both: a line `margin-telemetry before` (or `after`), then
//! each source as `tail -v -n +1` prints files, a `==> /proc/stat <==` header before its
//! text, a blank line between two.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::fs::File;
use std::io::Write as _;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use indexmap::IndexMap;

use super::process;
use crate::spec::Spec;
use crate::vocab::DIRTY_BEFORE;

/// The line that opens a snapshot in the raw file and in a remote trial's stderr.
pub(crate) const MARK: &str = "margin-telemetry";
/// The line that ends the snapshot taken before a remote trial, in its stderr.
pub(crate) const END: &str = "margin-telemetry end";
/// The header under which `xl list`'s output is kept.
const XL_LIST: &str = "xl list";

/// The file each `monitor:` source reads.
const FILES: [(&str, &str); 4] = [
    ("cpu", "/proc/stat"),
    ("disks", "/proc/diskstats"),
    ("vmstat", "/proc/vmstat"),
    ("net", "/proc/net/dev"),
];

/// The header of the dirty-page figures read before a local trial (`dirty_part`).
const MEMINFO: &str = "/proc/meminfo";

/// The `Dirty:` and `Writeback:` lines of `/proc/meminfo` now, as a part of the snapshot
/// before a local trial whose disks are monitored: what the kernel may write back during
/// the trial that no process of the trial wrote (an earlier trial's pages among it). Read
/// only where the trial's own writes are measured too (`Execution::written`).
pub(crate) fn dirty_part() -> Option<(String, String)> {
    // opened once and read with one `pread`, as the counters are (`LocalCounters`)
    static FILE: OnceLock<Option<File>> = OnceLock::new();
    static BUFFER: Mutex<Vec<u8>> = Mutex::new(Vec::new());
    let file = FILE.get_or_init(|| File::open(MEMINFO).ok()).as_ref()?;
    let mut buffer = BUFFER.lock().unwrap_or_else(PoisonError::into_inner);
    let kept = dirty_lines(read_into(file, &mut buffer)?);
    (!kept.is_empty()).then(|| (MEMINFO.to_string(), kept))
}

/// The `Dirty:` and `Writeback:` lines of a `/proc/meminfo` text, in its order, each
/// ended by a newline. Each name is looked for as a line's start and its first line taken
/// (the kernel writes each once), rather than every line tested: this runs before every
/// trial, and splitting the 50-odd lines cost 16 000 instructions (issue 17).
fn dirty_lines(text: &str) -> String {
    // each name, and the name after a newline
    let line_at = |(name, after): (&str, &str)| {
        let start = match text.starts_with(name) {
            true => 0,
            false => text.find(after)? + 1,
        };
        let rest = &text[start..];
        Some((start, rest.find('\n').map_or(rest, |end| &rest[..end])))
    };
    let mut lines: Vec<(usize, &str)> =
        [("Dirty:", "\nDirty:"), ("Writeback:", "\nWriteback:")].into_iter().filter_map(line_at).collect();
    lines.sort_unstable();
    let mut kept = String::with_capacity(64);
    for (_, l) in lines {
        kept.push_str(l);
        kept.push('\n');
    }
    kept
}

/// Bytes per sector in `/proc/diskstats`, whatever the device's own sector size
/// (Documentation/admin-guide/iostats.rst: "sectors" are 512 bytes).
const SECTOR: f64 = 512.0;

/// What is read around each trial: files, and whether `xl list` runs.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Monitor {
    pub files: Vec<&'static str>,
    pub xl: bool,
    /// The `monitor:` sources, for the record.
    pub sources: Vec<&'static str>,
}

impl Monitor {
    /// The experiment's `monitor:` (docs/experiment-file.md, monitor).
    pub(crate) fn of(spec: &Spec) -> Monitor {
        let sources = spec.monitor();
        let files = FILES.iter().filter(|(s, _)| sources.contains(s)).map(|(_, f)| *f).collect();
        Monitor { files, xl: sources.contains(&"xl"), sources }
    }

    pub(crate) fn is_off(&self) -> bool {
        self.files.is_empty() && !self.xl
    }

    /// The shell text that prints a snapshot to stderr on a remote host: one `tail` for
    /// the files (one process, the headers keep them apart), `xl list` when selected.
    pub(crate) fn remote_snapshot(&self, when: &str) -> String {
        let mut sh = format!("printf '{MARK} {when}\\n' >&2");
        if !self.files.is_empty() {
            let _ = write!(sh, "; tail -v -n +1 {} >&2 2>/dev/null", self.files.join(" "));
        }
        if self.xl {
            let _ = write!(sh, "; printf '\\n==> {XL_LIST} <==\\n' >&2; xl list >&2 2>/dev/null");
        }
        sh
    }
}

/// The counters of one moment: each source's text under its header.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct CounterSnapshot {
    pub parts: Vec<(String, String)>,
}

impl CounterSnapshot {
    fn get(&self, name: &str) -> Option<&str> {
        self.parts.iter().find(|(n, _)| n == name).map(|(_, t)| t.as_str())
    }

    /// The text `tail -v -n +1` prints for these files (and `xl list` after them).
    fn render(&self, when: &str, out: &mut String) {
        let _ = writeln!(out, "{MARK} {when}");
        for (i, (name, text)) in self.parts.iter().enumerate() {
            if i > 0 {
                out.push('\n');
            }
            let _ = writeln!(out, "==> {name} <==");
            out.push_str(text);
            if !text.is_empty() && !text.ends_with('\n') {
                out.push('\n');
            }
        }
    }

    /// The sources of a snapshot's text (what follows its `margin-telemetry` line).
    pub(crate) fn parse(text: &str) -> CounterSnapshot {
        let mut parts: Vec<(String, String)> = Vec::new();
        for line in text.split_inclusive('\n') {
            let bare = line.trim_end_matches('\n');
            if let Some(name) = bare.strip_prefix("==> ").and_then(|r| r.strip_suffix(" <==")) {
                // the blank line `tail` puts between two files is not the first's text
                if let Some((_, last)) = parts.last_mut()
                    && last.ends_with("\n\n")
                {
                    last.pop();
                }
                parts.push((name.to_string(), String::new()));
            } else if let Some((_, t)) = parts.last_mut() {
                t.push_str(line);
            }
        }
        CounterSnapshot { parts }
    }
}

/// The counters before and after one trial.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Snapshots {
    pub before: CounterSnapshot,
    pub after: CounterSnapshot,
}

impl Snapshots {
    /// A trial's block in the session's raw file: a line naming the trial, then
    /// the two snapshots' text, each as `CounterSnapshot::render` writes it.
    pub(crate) fn render_for(&self, trial: &str) -> String {
        // one string of about the right size (the text of the files and a line per part)
        let size: usize =
            self.before.parts.iter().chain(&self.after.parts).map(|(n, t)| n.len() + t.len() + 16).sum();
        let mut out = String::with_capacity(size + trial.len() + 96);
        let _ = writeln!(out, "{MARK} trial {trial}");
        self.before.render("before", &mut out);
        self.after.render("after", &mut out);
        out
    }

    /// The two snapshots' text.
    #[cfg(test)]
    pub(crate) fn render(&self) -> String {
        let mut out = String::new();
        self.before.render("before", &mut out);
        self.after.render("after", &mut out);
        out
    }

    /// Read back a raw file (or a remote trial's two blocks put together).
    pub(crate) fn parse(text: &str) -> Snapshots {
        let before_mark = format!("{MARK} before\n");
        let after_mark = format!("\n{MARK} after\n");
        let body = text.strip_prefix(&before_mark).unwrap_or(text);
        let (before, after) = match body.find(&after_mark) {
            Some(at) => (&body[..at + 1], &body[at + after_mark.len()..]),
            None => match body.strip_prefix(&after_mark[1..]) {
                Some(after) => ("", after),
                None => (body, ""),
            },
        };
        Snapshots { before: CounterSnapshot::parse(before), after: CounterSnapshot::parse(after) }
    }

    /// The secondary metrics (docs/design.md §6.9), in a stable order: CPU shares, disk
    /// bytes per device, pages written back, network bytes per interface, CPU seconds per
    /// Xen domain. A counter that went backwards (a device replaced) gives nothing.
    pub(crate) fn derive(&self) -> IndexMap<String, f64> {
        // room for the usual figures (five CPU shares, a disk or two, the dirty pages) at once
        let mut out = IndexMap::with_capacity(12);
        let both = |name: &str| Some((self.before.get(name)?, self.after.get(name)?));
        if let Some((b, a)) = both("/proc/stat") {
            cpu(b, a, &mut out);
        }
        if let Some((b, a)) = both("/proc/diskstats") {
            // borrowed from the text, not a map of names per snapshot: this runs between
            // every two trials (issue 17). A line the same before and after is a device
            // that moved nothing, and is not parsed at all.
            let lines: Vec<&str> = b.lines().collect();
            let mut parsed: Option<Vec<(&str, [u64; 2])>> = None;
            let mut moved: Vec<(&str, [u64; 2], [u64; 2])> = Vec::new();
            for (i, line) in a.lines().enumerate() {
                if lines.get(i) == Some(&line) {
                    continue;
                }
                let Some((device, after)) = disk_line(line) else { continue };
                // the same device on the same line, as almost always; else looked for
                let before = match lines.get(i).and_then(|l| disk_line(l)) {
                    Some((d, counts)) if d == device => Some(counts),
                    _ => parsed
                        .get_or_insert_with(|| lines.iter().filter_map(|l| disk_line(l)).collect())
                        .iter()
                        .find(|(d, _)| *d == device)
                        .map(|(_, counts)| *counts),
                };
                if let Some(before) = before {
                    moved.push((device, before, after));
                }
            }
            for (prefix, field) in [("disk_read_bytes", 0), ("disk_written_bytes", 1)] {
                for (device, before, after) in &moved {
                    if let Some(d) = after[field].checked_sub(before[field]).filter(|d| *d > 0) {
                        out.insert(format!("{prefix}:{device}"), d as f64 * SECTOR);
                    }
                }
            }
        }
        // the pages waiting to be written when the trial began (`dirty_part`)
        if let Some(text) = self.before.get(MEMINFO) {
            let kb: u64 = text
                .lines()
                .filter_map(|l| l.strip_suffix(" kB"))
                .filter_map(|l| l.split_whitespace().last()?.parse::<u64>().ok())
                .sum();
            out.insert(DIRTY_BEFORE.to_string(), kb as f64 * 1024.0);
        }
        if let Some((b, a)) = both("/proc/vmstat") {
            let field = |text: &str| {
                text.lines()
                    .find_map(|l| l.strip_prefix("nr_written "))
                    .and_then(|v| v.trim().parse::<u64>().ok())
            };
            if let (Some(b), Some(a)) = (field(b), field(a))
                && let Some(d) = a.checked_sub(b)
            {
                out.insert("vm_pages_written".to_string(), d as f64);
            }
        }
        if let Some((b, a)) = both("/proc/net/dev") {
            let (b, a) = (net_dev(b), net_dev(a));
            for (prefix, field) in [("net_rx_bytes", 0), ("net_tx_bytes", 1)] {
                for (interface, after) in &a {
                    let delta = b.get(interface).and_then(|before| after[field].checked_sub(before[field]));
                    if let Some(d) = delta.filter(|d| *d > 0) {
                        out.insert(format!("{prefix}:{interface}"), d as f64);
                    }
                }
            }
        }
        if let Some((b, a)) = both(XL_LIST) {
            let (b, a) = (xl_list(b), xl_list(a));
            for (domain, after) in &a {
                if let Some(before) = b.get(domain)
                    && after >= before
                {
                    out.insert(format!("xl_cpu_seconds:{domain}"), after - before);
                }
            }
        }
        out
    }
}

/// The `cpu` line of `/proc/stat`: user, nice, system, idle, iowait, irq, softirq, steal
/// (ticks; guest time is already inside user). Shares of all CPUs' time over the trial:
/// the ticks of all states together are the trial's wall time × CPUs as the kernel
/// counted it (proc(5), /proc/stat).
fn cpu(before: &str, after: &str, out: &mut IndexMap<String, f64>) {
    // the first eight numbers after `cpu`; none unless all eight are there
    let line = |text: &str| -> Option<[u64; 8]> {
        let l = text.lines().find(|l| l.starts_with("cpu "))?;
        let mut fields = l.split_ascii_whitespace().skip(1);
        let mut ticks = [0u64; 8];
        for t in &mut ticks {
            *t = fields.next()?.parse().ok()?;
        }
        Some(ticks)
    };
    let (Some(b), Some(a)) = (line(before), line(after)) else {
        return;
    };
    let d: [f64; 8] = std::array::from_fn(|i| a[i].saturating_sub(b[i]) as f64);
    let total: f64 = d.iter().sum();
    if total <= 0.0 {
        return; // shorter than a tick: no share can be told
    }
    let pct = |x: f64| 100.0 * x / total;
    out.insert("cpu_user_pct".into(), pct(d[0] + d[1]));
    out.insert("cpu_system_pct".into(), pct(d[2] + d[5] + d[6]));
    out.insert("cpu_iowait_pct".into(), pct(d[4]));
    out.insert("cpu_steal_pct".into(), pct(d[7]));
    out.insert("cpu_idle_pct".into(), pct(d[3]));
}

/// A diskstats line's device and [sectors read, sectors written] (fields 3, 6 and 10);
/// `None` for a line without them. The kernel writes the file in ASCII, fields apart by
/// spaces: split as ASCII, which costs a fraction of splitting at any Unicode space.
fn disk_line(line: &str) -> Option<(&str, [u64; 2])> {
    let mut f = line.split_ascii_whitespace();
    let device = f.nth(2)?;
    let read = f.nth(2)?.parse().ok()?;
    let written = f.nth(3)?.parse().ok()?;
    Some((device, [read, written]))
}

/// Interface → [bytes received, bytes sent].
fn net_dev(text: &str) -> IndexMap<String, [u64; 2]> {
    let mut out = IndexMap::new();
    for line in text.lines() {
        let Some((name, rest)) = line.split_once(':') else {
            continue;
        };
        let f: Vec<&str> = rest.split_whitespace().collect();
        if f.len() >= 9
            && let (Ok(rx), Ok(tx)) = (f[0].parse(), f[8].parse())
        {
            out.insert(name.trim().to_string(), [rx, tx]);
        }
    }
    out
}

/// Domain → CPU seconds (`xl list`'s last column, `Time(s)`).
fn xl_list(text: &str) -> IndexMap<String, f64> {
    let mut out = IndexMap::new();
    for line in text.lines().skip_while(|l| !l.starts_with("Name")).skip(1) {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() >= 6
            && let Ok(seconds) = f[f.len() - 1].parse::<f64>()
        {
            out.insert(f[0].to_string(), seconds);
        }
    }
    out
}

/// How long a session's snapshots may wait in the page cache before an `fdatasync`.
const FLUSH_EVERY: Duration = Duration::from_secs(1);

/// The sessions' telemetry files open for appending, with when each was last flushed.
/// With each, where its end is (the next block's offset: no `fstat` per trial).
static LOGS: Mutex<Option<HashMap<PathBuf, OpenLog>>> = Mutex::new(None);

/// A session's telemetry file: the handle, its end, when it was last flushed.
type OpenLog = (File, u64, Instant);

/// Append a trial's snapshots to its session's file (created with its folder made
/// durable); where its block starts. The text is written before it is parsed, and made
/// durable by an `fdatasync` at most once a second: each trial of a second or more is
/// durable before its record, and a thousand short trials pay one flush a second rather
/// than a second flush each, which would double what the durable record costs
/// (docs/design.md §10: the last second of snapshots can be lost with the machine).
pub(crate) fn append(path: &Path, text: &str) -> std::io::Result<u64> {
    let mut logs = LOGS.lock().unwrap_or_else(PoisonError::into_inner);
    let logs = logs.get_or_insert_with(HashMap::new);
    let (file, end, flushed) = match logs.entry(path.to_path_buf()) {
        std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
        std::collections::hash_map::Entry::Vacant(v) => {
            let created = !path.exists();
            let file = std::fs::OpenOptions::new().append(true).create(true).open(path)?;
            if created {
                file.sync_data()?;
                if let Some(dir) = path.parent() {
                    crate::store::sync_dir(dir)?;
                }
            }
            let end = file.metadata()?.len();
            v.insert((file, end, Instant::now()))
        }
    };
    let offset = *end;
    // a write cut short by a full disk leaves the end unknown: asked again next time
    if let Err(e) = file.write_all(text.as_bytes()) {
        *end = file.metadata().map_or(offset, |m| m.len());
        return Err(e);
    }
    *end += text.len() as u64;
    if flushed.elapsed() >= FLUSH_EVERY {
        file.sync_data()?;
        *flushed = Instant::now();
    }
    Ok(offset)
}

/// Flush and close every session's telemetry file (at the end of a run).
pub(crate) fn close_all() {
    let mut logs = LOGS.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(logs) = logs.take() {
        for (_, (file, _, _)) in logs {
            let _ = file.sync_data();
        }
    }
}

/// This machine's counter files, each opened once and read with one `pread` per snapshot
/// into a buffer kept for the run: a fresh 64 KiB buffer per read cost more than the read
/// (zeroed, then given back to the allocator, which grew and shrank its heap each time).
#[derive(Debug, Default)]
pub(crate) struct LocalCounters {
    files: [OnceLock<Option<File>>; 4],
    buffer: Mutex<Vec<u8>>,
}

/// Room for a snapshot of one file; a read that fills it is done again with twice as much.
const BUFFER: usize = 64 * 1024;

impl LocalCounters {
    pub(crate) fn snapshot(&self, monitor: &Monitor) -> CounterSnapshot {
        let mut parts = Vec::with_capacity(monitor.files.len() + 1);
        let mut buffer = self.buffer.lock().unwrap_or_else(PoisonError::into_inner);
        for (i, (_, path)) in FILES.iter().enumerate() {
            if !monitor.files.contains(path) {
                continue;
            }
            let file = self.files[i].get_or_init(|| File::open(path).ok());
            if let Some(text) = file.as_ref().and_then(|f| read_whole(f, &mut buffer)) {
                parts.push((path.to_string(), text));
            }
        }
        drop(buffer);
        if monitor.xl
            && let Ok(text) = process::capture_argv(&["xl", "list"], Path::new("/"), Duration::from_secs(30))
        {
            parts.push((XL_LIST.to_string(), text + "\n"));
        }
        CounterSnapshot { parts }
    }
}

/// A `/proc` file's whole text from offset 0, in one read when `buffer` holds it (it is
/// grown, and kept grown, when it does not).
fn read_whole(file: &File, buffer: &mut Vec<u8>) -> Option<String> {
    read_into(file, buffer).map(str::to_owned)
}

/// [`read_whole`], the text left in `buffer`.
fn read_into<'b>(file: &File, buffer: &'b mut Vec<u8>) -> Option<&'b str> {
    if buffer.len() < BUFFER {
        buffer.resize(BUFFER, 0);
    }
    loop {
        let n = file.read_at(buffer, 0).ok()?;
        if n < buffer.len() {
            return std::str::from_utf8(&buffer[..n]).ok();
        }
        let bigger = buffer.len() * 2;
        buffer.resize(bigger, 0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const STAT_BEFORE: &str = "cpu  100 0 50 800 10 0 0 40 0 0\ncpu0 50 0 25 400 5 0 0 20 0 0\nintr 1\n";
    const STAT_AFTER: &str = "cpu  160 10 70 880 20 5 5 50 0 0\ncpu0 80 5 35 440 10 2 3 25 0 0\nintr 2\n";

    #[test]
    fn cpu_shares_are_of_all_ticks() {
        let mut out = IndexMap::new();
        cpu(STAT_BEFORE, STAT_AFTER, &mut out);
        // deltas: user 60 nice 10 system 20 idle 80 iowait 10 irq 5 softirq 5 steal 10 = 200
        assert_eq!(out["cpu_user_pct"], 35.0);
        assert_eq!(out["cpu_system_pct"], 15.0);
        assert_eq!(out["cpu_iowait_pct"], 5.0);
        assert_eq!(out["cpu_steal_pct"], 5.0);
        assert_eq!(out["cpu_idle_pct"], 40.0);
    }

    #[test]
    fn raw_text_reads_back_and_derives_disk_net_xl() {
        let before = CounterSnapshot {
            parts: vec![
                ("/proc/stat".into(), STAT_BEFORE.into()),
                ("/proc/diskstats".into(), " 254       0 vda 10 0 100 5 20 0 2000 9 0 0 0 0 0 0 0 0 0\n".into()),
                ("/proc/net/dev".into(), "Inter-| x\n face |y\n  eth0: 1000 1 0 0 0 0 0 0 500 1 0 0 0 0 0 0\n".into()),
                (XL_LIST.into(), "Name ID Mem VCPUs State Time(s)\nDomain-0 0 1024 2 r----- 10.5\ndomu 1 512 1 -b---- 3.0\n".into()),
            ],
        };
        let mut after = before.clone();
        after.parts[0].1 = STAT_AFTER.into();
        after.parts[1].1 = " 254       0 vda 10 0 100 5 30 0 4048 9 0 0 0 0 0 0 0 0 0\n".into();
        after.parts[2].1 = "Inter-| x\n face |y\n  eth0: 1500 1 0 0 0 0 0 0 800 1 0 0 0 0 0 0\n".into();
        after.parts[3].1 =
            "Name ID Mem VCPUs State Time(s)\nDomain-0 0 1024 2 r----- 12.0\ndomu 1 512 1 -b---- 3.25\n"
                .into();
        let snapshots = Snapshots { before, after };
        let raw = snapshots.render();
        assert_eq!(snapshots.render_for("t1"), format!("{MARK} trial t1\n{raw}"));
        assert!(raw.starts_with("margin-telemetry before\n==> /proc/stat <==\ncpu  100"), "{raw}");
        assert_eq!(Snapshots::parse(&raw), snapshots);
        let m = snapshots.derive();
        assert_eq!(m["disk_written_bytes:vda"], 2048.0 * 512.0);
        assert!(!m.contains_key("disk_read_bytes:vda"), "nothing read: {m:?}");
        assert_eq!(m["net_rx_bytes:eth0"], 500.0);
        assert_eq!(m["net_tx_bytes:eth0"], 300.0);
        assert_eq!(m["xl_cpu_seconds:Domain-0"], 1.5);
        assert_eq!(m["xl_cpu_seconds:domu"], 0.25);
    }

    /// What the remote shell prints (`tail -v -n +1` on two files) reads as two parts.
    #[test]
    fn tail_output_reads_as_its_files() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        std::fs::write(&a, "one\ntwo\n").unwrap();
        std::fs::write(&b, "three\n").unwrap();
        let out = std::process::Command::new("tail")
            .arg("-v")
            .arg("-n")
            .arg("+1")
            .arg(&a)
            .arg(&b)
            .output()
            .unwrap();
        let s = CounterSnapshot::parse(&String::from_utf8(out.stdout).unwrap());
        assert_eq!(s.parts.len(), 2);
        assert_eq!(s.parts[0].1, "one\ntwo\n");
        assert_eq!(s.parts[1].1, "three\n");
    }

    /// The disk metrics as they were derived through a map of devices per snapshot: the
    /// borrowed, in-order reading gives the same, whatever the order of the lines.
    #[test]
    fn disk_metrics_are_what_a_map_of_devices_gave() {
        fn by_map(before: &str, after: &str) -> IndexMap<String, f64> {
            let map = |text: &str| {
                let mut out: IndexMap<String, [u64; 2]> = IndexMap::new();
                for line in text.lines() {
                    let f: Vec<&str> = line.split_whitespace().collect();
                    if f.len() >= 10
                        && let (Ok(read), Ok(written)) = (f[5].parse(), f[9].parse())
                    {
                        out.insert(f[2].to_string(), [read, written]);
                    }
                }
                out
            };
            let (b, a) = (map(before), map(after));
            let mut out = IndexMap::new();
            for (prefix, field) in [("disk_read_bytes", 0), ("disk_written_bytes", 1)] {
                for (device, after) in &a {
                    let delta = b.get(device).and_then(|before| after[field].checked_sub(before[field]));
                    if let Some(d) = delta.filter(|d| *d > 0) {
                        out.insert(format!("{prefix}:{device}"), d as f64 * SECTOR);
                    }
                }
            }
            out
        }
        let derived = |before: &str, after: &str| {
            let snapshot =
                |text: &str| CounterSnapshot { parts: vec![("/proc/diskstats".into(), text.into())] };
            Snapshots { before: snapshot(before), after: snapshot(after) }.derive()
        };
        let before = " 254 0 vda 10 0 100 5 20 0 2000 9 0 0 0\n 254 1 vda1 4 0 40 1 2 0 8 1 0 0 0\n   7 0 loop0 0 0 0 0 0 0 0 0 0 0 0\n";
        let cases = [
            // vda wrote, vda1 read and wrote
            " 254 0 vda 10 0 100 5 30 0 4048 9 0 0 0\n 254 1 vda1 4 0 48 1 3 0 9 1 0 0 0\n   7 0 loop0 0 0 0 0 0 0 0 0 0 0 0\n",
            // the lines in another order, a device gone, one new
            "   7 0 loop0 0 0 8 0 0 0 0 0 0 0 0\n 254 0 vda 10 0 100 5 30 0 4048 9 0 0 0\n 8 0 sdb 1 0 9 1 1 0 9 1 0 0 0\n",
            // a counter that went backwards, a line cut short, a word for a number
            " 254 0 vda 10 0 90 5 30 0 4048 9 0 0 0\n 254 1 vda1 4 0 48\n   7 0 loop0 0 0 x 0 0 0 0 0 0 0 0\n",
            // one line the same, the others moved down, a device in the middle gone
            "   7 0 loop0 0 0 0 0 0 0 0 0 0 0 0\n 254 0 vda 11 0 108 5 20 0 2000 9 0 0 0\n 254 1 vda1 5 0 40 1 3 0 16 1 0 0 0\n",
            " 254 0 vda 10 0 100 5 20 0 2000 9 0 0 0\n 254 1 vda1 4 0 40 1 2 0 8 1 0 0 0\n   7 0 loop0 0 0 0 0 0 0 0 0 0 0 0\n",
            "",
        ];
        for after in cases {
            assert_eq!(derived(before, after), by_map(before, after), "{after:?}");
            assert_eq!(derived(after, before), by_map(after, before), "{after:?}");
        }
        if let Ok(real) = std::fs::read_to_string("/proc/diskstats") {
            assert_eq!(derived(before, &real), by_map(before, &real));
            assert_eq!(derived(&real, &real), by_map(&real, &real));
        }
        assert!(!by_map(before, cases[0]).is_empty());
    }

    #[test]
    fn the_dirty_lines_are_those_a_filter_of_every_line_keeps() {
        let by_filter = |text: &str| {
            let mut kept = String::new();
            for l in text.lines().filter(|l| l.starts_with("Dirty:") || l.starts_with("Writeback:")) {
                kept.push_str(l);
                kept.push('\n');
            }
            kept
        };
        let real = std::fs::read_to_string(MEMINFO).expect("/proc/meminfo");
        assert!(dirty_lines(&real).starts_with("Dirty:"), "{real}");
        let texts = [
            real.as_str(),
            "Dirty:  4 kB\nWriteback:  0 kB\n",
            "Writeback:  8 kB\nMemFree: 1 kB\nDirty: 12 kB",
            "MemFree: 1 kB\nWritebackTmp:  0 kB\nDirtyish: 3 kB\n",
            "NotDirty: 1 kB\n",
            "",
        ];
        for text in texts {
            assert_eq!(dirty_lines(text), by_filter(text), "{text:?}");
        }
    }

    /// One handle serves every snapshot: a second `pread` at 0 sees the counters anew.
    #[test]
    fn local_handles_are_read_again_from_the_start() {
        let counters = LocalCounters::default();
        let monitor =
            Monitor { files: vec!["/proc/stat", "/proc/vmstat"], xl: false, sources: vec!["cpu", "vmstat"] };
        let first = counters.snapshot(&monitor);
        let busy = std::time::Instant::now();
        while busy.elapsed() < Duration::from_millis(50) {}
        let second = counters.snapshot(&monitor);
        assert_eq!(first.parts.len(), 2);
        assert!(second.get("/proc/stat").unwrap().starts_with("cpu "));
        assert_ne!(first.get("/proc/stat"), second.get("/proc/stat"));
    }
}
