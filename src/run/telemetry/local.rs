//! This machine's counters: each `/proc` file opened once and read with one `pread` per
//! snapshot into a buffer kept for the run, and the dirty pages before a local trial.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::{Mutex, OnceLock, PoisonError};
use std::time::Duration;

use super::{CounterSnapshot, FILES, MEMINFO, Monitor, XL_LIST};
use crate::run::process;

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
/// trial, and splitting the 50-odd lines cost 16 000 instructions.
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
