//! Telemetry: the host's counters (`/proc/stat`, `/proc/diskstats`, `/proc/vmstat`,
//! `/proc/net/dev`, `xl list`) read right before and right after a trial's timed command,
//! kept raw in the session's `raw/<session>.telemetry`, and the secondary metrics derived from them
//! (docs/design.md §6.9).
//!
//! Nothing runs during the trial, so nothing competes with it. Locally each file is read
//! with one `pread` from a handle opened once per run (a run's overhead per trial is held
//! within 5 % of a durable record alone, docs/performance.md); over ssh the reads ride on the trial's own command (`Ssh::execute` wraps it),
//! so they add no round trip.
//!
//! The raw form is the same on both: a line `margin-telemetry before` (or `after`), then
//! each source as `tail -v -n +1` prints files, a `==> /proc/stat <==` header before its
//! text, a blank line between two.
//!
//! The files: here, what is read ([`Monitor`], from `monitor:`) and the names of the
//! sources; [`snapshot`] the counters of one moment and of a trial, as text and back;
//! [`derive`](mod@derive) the secondary metrics from a trial's two snapshots; [`local`]
//! this machine's counter files, read with one `pread` each; [`log`] the sessions' raw
//! files, appended to and flushed.

mod derive;
mod local;
mod log;
mod snapshot;

pub(crate) use local::{LocalCounters, dirty_part};
pub(crate) use log::{append, close_all};
pub(crate) use snapshot::{CounterSnapshot, Snapshots};

use std::fmt::Write as _;

use crate::spec::Spec;

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

/// The header of the dirty-page figures read before a trial whose disks are monitored
/// (`dirty_part` here, [`Monitor::remote_snapshot`] on an ssh host).
const MEMINFO: &str = "/proc/meminfo";

/// What is read around each trial: files, and whether `xl list` runs.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Monitor {
    pub files: Vec<&'static str>,
    pub xl: bool,
    /// The `monitor:` sources, for the record.
    pub sources: Vec<&'static str>,
}

impl Monitor {
    /// Nothing read: a hook's, a service's check's.
    pub(crate) const OFF: Monitor = Monitor { files: Vec::new(), xl: false, sources: Vec::new() };

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
        // before the trial, where its disks are monitored: the pages already waiting to be
        // written (`Dirty:`, `Writeback:`), as `dirty_part` reads them here: what decides
        // whether a write lands in the cache or waits for the disk (lab-regimes)
        if when == "before" && self.files.contains(&"/proc/diskstats") {
            let _ = write!(
                sh,
                "; printf '\\n==> {MEMINFO} <==\\n' >&2; grep -E '^(Dirty|Writeback):' {MEMINFO} >&2 2>/dev/null"
            );
        }
        if self.xl {
            let _ = write!(sh, "; printf '\\n==> {XL_LIST} <==\\n' >&2; xl list >&2 2>/dev/null");
        }
        sh
    }
}
