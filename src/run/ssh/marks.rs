//! What margin writes into the remote shell's commands and reads back out of their
//! output: the remote command with its timing line and counters, the gang's armed line,
//! a service's pgid line, and the sweep script.

use std::path::Path;
use std::time::Duration;

use super::{KILL_AFTER, quote};
use crate::run::process::{self, Invocation};
use crate::run::telemetry::{END, MARK, Monitor, Snapshots};

/// The line the remote shell appends to stderr with the command's start and end (ns).
const WALL_MARK: &str = "margin-wall-ns";

/// What the remote shell added to a trial's stderr, taken out of it: the wall time from
/// its timing line (`None` when the host's `date` has no nanoseconds: the local time
/// stands), and the telemetry snapshots printed before the command and after that line.
/// What the tool printed stays in the file exactly as it was (an empty output is no file).
pub(super) fn take_remote_marks(
    stderr: &Path,
) -> std::io::Result<(Option<Duration>, Option<Snapshots>, Option<u128>)> {
    let text = process::read_raw(stderr)?.into_bytes();
    let find = |hay: &[u8], needle: &str| hay.windows(needle.len()).position(|w| w == needle.as_bytes());
    // the snapshot before: from the very start to its end line
    let begin = format!("{MARK} before\n");
    let (before, start) = match text.starts_with(begin.as_bytes()) {
        true => match find(&text, &format!("\n{END}\n")) {
            Some(at) => (Some(String::from_utf8_lossy(&text[..at + 1]).into_owned()), at + END.len() + 2),
            None => (None, 0),
        },
        false => (None, 0),
    };
    let mark = format!("\n{WALL_MARK} ");
    let Some(at) = text[start..].windows(mark.len()).rposition(|w| w == mark.as_bytes()).map(|a| a + start)
    else {
        if start > 0 {
            rewrite(stderr, &text[start..])?;
        }
        return Ok((None, None, None));
    };
    let rest = &text[at + mark.len()..];
    let line_end = rest.iter().position(|b| *b == b'\n').map_or(rest.len(), |e| e + 1);
    let line = String::from_utf8_lossy(&rest[..line_end]).into_owned();
    let after = String::from_utf8_lossy(&rest[line_end..]).into_owned();
    let mut parts = line.split_whitespace().map(|p| p.parse::<u128>());
    let (wall, begun) = match (parts.next(), parts.next()) {
        (Some(Ok(start)), Some(Ok(end))) if end >= start => {
            (Some(Duration::from_nanos(u64::try_from(end - start).unwrap_or(u64::MAX))), Some(start))
        }
        _ => (None, None),
    };
    rewrite(stderr, &text[start..at])?;
    let snapshots = match (before, after.starts_with(&format!("{MARK} after\n"))) {
        (Some(before), true) => Some(Snapshots::parse(&format!("{before}{after}"))),
        _ => None,
    };
    Ok((wall, snapshots, begun))
}

/// Leave `kept` as the file's content; nothing kept is no file.
pub(super) fn rewrite(path: &Path, kept: &[u8]) -> std::io::Result<()> {
    if kept.is_empty() { std::fs::remove_file(path) } else { std::fs::write(path, kept) }
}

/// The host's side of `Ssh::end_left`; `MARKER` is replaced by the quoted `KEY=value`.
/// Each round, one `grep -z` reads every process's environment (`-l`: the files that hold
/// the marker as a whole entry); a `grep` without `-z` (`z` is then unset) reads them one
/// by one through `tr`, a process or two per process on the host — at 64 hosts on one
/// machine that was most of the run's CPU. The script's own shell is left alone.
pub(super) const SWEEP: &str = r#"m=MARKER; z=; printf 'x\0' | grep -qzx x 2>/dev/null && z=1; i=0; while :; do found=; if [ -n "$z" ]; then hits=$(grep -lzxF -e "$m" /proc/[0-9]*/environ 2>/dev/null); else hits=$(for e in /proc/[0-9]*/environ; do tr '\0' '\n' < "$e" 2>/dev/null | grep -qxF -e "$m" && echo "$e"; done); fi; for e in $hits; do p=${e#/proc/}; p=${p%/environ}; [ "$p" = "$$" ] && continue; g=$(ps -o pgid= -p "$p" | tr -d ' '); c=$(tr '\0' ' ' < "/proc/$p/cmdline" 2>/dev/null); [ -n "$g" ] && kill -KILL -- "-$g" 2>/dev/null; kill -KILL "$p" 2>/dev/null; found=1; echo "$p $c"; done; [ -z "$found" ] && break; i=$((i+1)); [ $i -ge 100 ] && exit 3; sleep 0.1; done; echo margin-swept"#;

/// The line a gang member's remote shell writes to stderr once it waits for the start.
pub(super) const ARMED: &str = "margin-gang-armed";

/// The remote shell's command: in the workdir, the counters before (with a monitor), the
/// start time, the command under `timeout` when there is a limit, the end time and the
/// counters after. `armed`: it says so on stderr and waits for a line on stdin before
/// it takes the start time (a gang's barrier, `Ssh::execute_armed`).
pub(super) fn remote_command(
    invocation: &Invocation<'_>,
    env: &str,
    monitor: Option<&Monitor>,
    armed: bool,
) -> String {
    // sh on the host runs the command in the workdir, under `timeout` when there is a
    // limit (it signals the command's whole process group, then kills it), and times
    // it there: the connection's own cost (a tenth of a second per command, even
    // multiplexed) must not be part of the trial.
    let inner = quote(invocation.command);
    // `env`: the values the command refers to, set in its environment there
    let limited = match invocation.timeout {
        Some(limit) => format!("{env}timeout -k {KILL_AFTER} {:.3} sh -c {inner}", limit.as_secs_f64()),
        None => format!("{env}sh -c {inner}"),
    };
    let (before, after) = match monitor {
        Some(m) => (
            // braced: a `cd` that failed must still stop the command from running
            format!("{{ {}; printf '{END}\\n' >&2; }} && ", m.remote_snapshot("before")),
            format!(" {};", m.remote_snapshot("after")),
        ),
        None => (String::new(), String::new()),
    };
    // stdin is the gang's start: the command itself gets none, as any trial
    let (wait, stdin) = match armed {
        true => (format!("printf '{ARMED}\\n' >&2 && read -r _ && "), " </dev/null"),
        false => (String::new(), ""),
    };
    format!(
        "cd {} && {before}{wait}s=$(date +%s%N) && {{ {limited}{stdin}; r=$?; e=$(date +%s%N); printf '\\n{WALL_MARK} %s %s\\n' \"$s\" \"$e\" >&2;{after} exit $r; }}",
        quote(invocation.dir)
    )
}

/// The line a remote service's shell writes first on stderr: its process group's id.
pub(crate) const SERVICE_MARK: &str = "margin-service-pgid";

/// The process group a remote service's shell announced on stderr.
pub(super) fn service_pgid(stderr: &Path) -> Option<u32> {
    let text = std::fs::read_to_string(stderr).ok()?;
    let line = text.lines().next()?;
    let rest = line.strip_prefix(SERVICE_MARK)?.trim();
    if !text.contains('\n') {
        return None; // not yet the whole line
    }
    rest.parse().ok()
}
