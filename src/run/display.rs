//! Showing a run as it goes: an indicatif bar on a terminal, plain lines otherwise.

use std::io::Write;

use indicatif::{ProgressBar, ProgressStyle};

/// One finished trial, as the progress display reports it.
#[derive(Debug, Clone)]
pub struct TrialLine<'a> {
    pub label: &'a str,
    /// The measured trial's number in its cell, warm-ups not counted (a failed trial has
    /// the number the trial after it tries again).
    pub repetition: u32,
    pub warmup: bool,
    pub status: &'a str,
    pub wall: f64,
    pub detail: Option<&'a str>,
}

impl TrialLine<'_> {
    /// `#3`, or `warm-up`: warm-ups are not repetitions, and are not numbered as one.
    pub fn number(&self) -> String {
        if self.warmup { "warm-up".to_owned() } else { format!("#{}", self.repetition) }
    }
}

/// Where a run reports what it does.
pub trait Progress {
    /// The run starts: `cells` to run, between `min` and `max` trials.
    fn start(&mut self, cells: usize, min: u64, max: u64);
    fn trial(&mut self, t: &TrialLine<'_>);
    /// A note worth a line of its own (a warning, a hook failure, an abandoned cell).
    fn note(&mut self, text: &str);
    /// One more cell has all its trials, or was abandoned.
    fn cell_ended(&mut self) {}
    /// What was reported since the last call is shown now (a batch of trials at once).
    fn flush(&mut self) {}
    fn finish(&mut self);
}

/// A progress bar for a terminal (on stderr).
pub struct Bar {
    bar: ProgressBar,
    cells: usize,
    ended: usize,
}

impl Bar {
    pub fn new() -> Self {
        Bar { bar: ProgressBar::hidden(), cells: 0, ended: 0 }
    }
}

impl Default for Bar {
    fn default() -> Self {
        Self::new()
    }
}

impl Progress for Bar {
    fn start(&mut self, cells: usize, min: u64, max: u64) {
        self.bar = ProgressBar::new(min);
        (self.cells, self.ended) = (cells, 0);
        self.bar.set_prefix(format!("0/{cells} cells"));
        let style = ProgressStyle::with_template(
            "{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} trials · {prefix} · ETA {eta} · {msg}",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar());
        self.bar.set_style(style);
        let range = if min == max { format!("{min} trials") } else { format!("{min}–{max} trials") };
        self.bar.println(format!("{cells} cells, {range}"));
    }

    fn trial(&mut self, t: &TrialLine<'_>) {
        if !t.warmup {
            self.bar.inc(1);
            if self.bar.position() > self.bar.length().unwrap_or(0) {
                self.bar.set_length(self.bar.position());
            }
        }
        self.bar.set_message(format!("{} {} {}", t.label, t.number(), t.status));
        if t.status != "ok"
            && let Some(d) = t.detail
        {
            self.bar.println(format!("{} {}: {}: {d}", t.label, t.number(), t.status));
        }
    }

    fn cell_ended(&mut self) {
        self.ended += 1;
        self.bar.set_prefix(format!("{}/{} cells", self.ended, self.cells));
    }

    fn note(&mut self, text: &str) {
        // before the bar is drawn (and after it is gone) indicatif would drop the line
        if self.bar.is_hidden() || self.bar.is_finished() {
            line(text.to_string());
        } else {
            self.bar.println(text);
        }
    }

    fn finish(&mut self) {
        self.bar.finish_and_clear();
    }
}

/// Plain lines, one per trial, for logs and pipes (on stderr).
pub struct Lines;

std::thread_local! {
    /// The lines of [`Lines`] not yet written: a batch of trials goes out in one write
    /// ([`Progress::flush`]) rather than a system call per trial.
    static PENDING: std::cell::RefCell<String> = const { std::cell::RefCell::new(String::new()) };
}

/// Write the pending lines to stderr in one write (stderr is unbuffered).
fn flush_lines() {
    PENDING.with_borrow_mut(|pending| {
        if !pending.is_empty() {
            let _ = std::io::stderr().write_all(pending.as_bytes());
            pending.clear();
        }
    });
}

/// One line to stderr, with what is pending before it, in one write (a formatted line
/// would otherwise cost a system call per piece).
fn line(text: String) {
    PENDING.with_borrow_mut(|pending| {
        pending.push_str(&text);
        pending.push('\n');
    });
    flush_lines();
}

/// One line for the next [`flush_lines`].
fn later(text: std::fmt::Arguments<'_>) {
    use std::fmt::Write as _;
    PENDING.with_borrow_mut(|pending| {
        let _ = pending.write_fmt(text);
        pending.push('\n');
    });
}

impl Progress for Lines {
    fn start(&mut self, cells: usize, min: u64, max: u64) {
        let range = if min == max { format!("{min} trials") } else { format!("{min}–{max} trials") };
        line(format!("running {cells} cells, {range}"));
    }

    fn trial(&mut self, t: &TrialLine<'_>) {
        let (label, number, status, wall) = (t.label, t.number(), t.status, t.wall);
        match t.detail {
            Some(d) => later(format_args!("{label} {number}: {status} in {wall:.3} s: {d}")),
            None => later(format_args!("{label} {number}: {status} in {wall:.3} s")),
        }
    }

    fn note(&mut self, text: &str) {
        line(text.to_string());
    }

    fn flush(&mut self) {
        flush_lines();
    }

    fn finish(&mut self) {
        flush_lines();
    }
}
