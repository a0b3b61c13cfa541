//! The experiment file: its typed form, loading with line/column errors, and validation.
//!
//! Loading is two passes. serde-saphyr turns the YAML into the types below, keeping the
//! position of every value a later check may need to point at ([`Located`]); then
//! [`validate`] checks what types cannot express (references between keys, templates,
//! durations, percentages) and reports every problem it finds, not only the first.

mod boot;
pub mod confirm;
pub mod git;
mod load;
mod schema;
mod validate;
mod values;

use std::path::PathBuf;

use indexmap::IndexMap;
use serde::Deserialize;

use crate::diag::Pos;
use vocab::{Better, MeanKind, Method, Scalar};

pub use boot::{Boot, Boots, BootsSpec, DEFAULT_BOOTS};
pub use load::{load_file, load_file_pinned, load_str};
pub use schema::json_schema;
pub use values::{Percent, parse_duration, parse_percent};

/// A loaded, validated experiment file.
#[derive(Debug, Clone)]
pub struct Experiment {
    /// The file it came from (as given on the command line).
    pub path: PathBuf,
    /// `name:` or the file stem.
    pub name: String,
    /// The file's text, hashed into the session record by later stages.
    pub source: String,
    pub spec: Spec,
    /// The git factors' resolved levels, in the matrix's order (spec/git.rs).
    pub git: Vec<git::GitLevels>,
}

impl Experiment {
    /// The resolution of git factor `factor`, if it is one.
    pub fn git_factor(&self, factor: &str) -> Option<&git::GitLevels> {
        self.git.iter().find(|g| g.factor == factor)
    }
}

/// A value together with where it was written.
#[derive(Debug, Clone)]
pub struct Located<T> {
    pub value: T,
    pub pos: Pos,
    /// Byte range of the value in the source, when the parser knows it.
    pub span: Option<(usize, usize)>,
}

impl<T> Located<T> {
    pub fn new(value: T, pos: Pos) -> Self {
        Self { value, pos, span: None }
    }
}

impl<T: PartialEq> PartialEq for Located<T> {
    fn eq(&self, other: &Self) -> bool {
        self.value == other.value
    }
}
impl<T: Eq> Eq for Located<T> {}
impl<T: std::hash::Hash> std::hash::Hash for Located<T> {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.value.hash(state);
    }
}
impl<T> std::ops::Deref for Located<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.value
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Located<T> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = serde_saphyr::Spanned::<T>::deserialize(d)?;
        let loc = s.referenced;
        let span = loc.span();
        let span = match (span.byte_offset(), span.byte_len()) {
            (Some(o), Some(l)) => Some((o as usize, l as usize)),
            _ => None,
        };
        let pos = Pos::new(loc.line() as u32, loc.column() as u32);
        Ok(Located { value: s.value, pos, span })
    }
}

/// The experiment file, key by key (docs/design.md §3; every key in docs/experiment-file.md).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Spec {
    pub name: Option<Located<String>>,
    pub description: Option<String>,
    pub matrix: Located<Matrix>,
    #[serde(rename = "where")]
    pub filter: Option<Located<String>>,
    #[serde(default)]
    pub environment: IndexMap<Located<String>, Located<EnvFactor>>,
    #[serde(default)]
    pub hosts: IndexMap<Located<String>, Located<Host>>,
    #[serde(default)]
    pub services: IndexMap<Located<String>, Located<Service>>,
    /// `gangs:` — hosts that run each trial together, started at once (a level of the
    /// `host` factor may name one; docs/experiment-file.md, gangs).
    #[serde(default)]
    pub gangs: IndexMap<Located<String>, Located<Gang>>,
    #[serde(default)]
    pub vars: IndexMap<Located<String>, Located<String>>,
    pub setup: Option<Located<String>>,
    pub prepare: Option<Located<String>>,
    pub run: Located<String>,
    pub conclude: Option<Located<String>>,
    pub cleanup: Option<Located<String>>,
    pub parse: Option<Located<String>>,
    #[serde(default)]
    pub metrics: IndexMap<Located<String>, Located<MetricSpec>>,
    pub repetitions: Option<Located<RepetitionsSpec>>,
    pub warmup: Option<u32>,
    pub order: Option<Order>,
    pub seed: Option<u64>,
    pub timeout: Option<Located<Scalar>>,
    pub max_failures: Option<u32>,
    #[serde(default)]
    pub analysis: Analysis,
    #[serde(default)]
    pub report: ReportSpec,
    /// `monitor:` — the counters read around each trial, or `none`.
    pub monitor: Option<Located<MonitorSpec>>,
}

/// `monitor:` as written: `none`, or a list of sources (`[cpu, disks, vmstat, net, xl]`).
#[derive(Debug, Clone, PartialEq)]
pub enum MonitorSpec {
    Word(String),
    List(Vec<Located<String>>),
}

impl Spec {
    /// The telemetry sources in force: `monitor:`'s list, nothing for `none`, else the
    /// default (`cpu`, `disks`). The file has been validated, so every name is known.
    pub fn monitor(&self) -> Vec<&'static str> {
        let known = |name: &str| vocab::MONITOR_SOURCES.iter().copied().find(|s| *s == name);
        match self.monitor.as_ref().map(|m| &m.value) {
            None => vocab::MONITOR_DEFAULT.to_vec(),
            Some(MonitorSpec::Word(_)) => Vec::new(),
            Some(MonitorSpec::List(names)) => {
                let mut out: Vec<&'static str> = Vec::new();
                for name in names.iter().filter_map(|n| known(&n.value)) {
                    if !out.contains(&name) {
                        out.push(name);
                    }
                }
                out
            }
        }
    }

    /// The command templates that exist, with their key names, in execution order.
    pub fn commands(&self) -> impl Iterator<Item = (&'static str, &Located<String>)> {
        [
            ("setup", self.setup.as_ref()),
            ("prepare", self.prepare.as_ref()),
            ("run", Some(&self.run)),
            ("conclude", self.conclude.as_ref()),
            ("cleanup", self.cleanup.as_ref()),
        ]
        .into_iter()
        .filter_map(|(k, v)| v.map(|v| (k, v)))
    }

    /// A note for a `setup` that differs between cells under interleaved order: it runs
    /// once per cell and session, when the cell is first visited, and the other cells'
    /// trials run in between. Its position, the note and a hint; `None` when the order
    /// is sequential or there is no setup.
    pub fn interleaved_setup(&self) -> Option<(Pos, String, String)> {
        if self.order.unwrap_or_default() != Order::Interleaved {
            return None;
        }
        Some((
            self.setup.as_ref()?.pos,
            "`setup` differs between cells and runs once per cell and session, when the cell is first \
             visited; with `order: interleaved` (the default) other cells' trials run after it"
                .to_string(),
            "if it sets the host up for its cell (vCPU pinning, a sysctl) rather than the cell's own \
             files or ports, those trials run under it too: do it in `prepare`, before every trial, \
             or use `order: sequential`"
                .to_string(),
        ))
    }

    /// The repetitions rule; the file has been validated, so the target parses.
    pub fn repetitions(&self) -> Repetitions {
        match self.repetitions.as_ref().map(|r| &r.value) {
            None => Repetitions::default(),
            Some(RepetitionsSpec::Fixed(n)) => Repetitions::Fixed(*n),
            Some(RepetitionsSpec::Adaptive { min, max, until: Some(_), .. }) => {
                Repetitions::Verdict { min: *min, max: *max }
            }
            Some(RepetitionsSpec::Adaptive { min, max, target, .. }) => Repetitions::Adaptive {
                min: *min,
                max: *max,
                target: target.as_ref().and_then(|t| parse_percent(&t.value).ok()).unwrap_or(Percent(0.05)),
            },
        }
    }
}

/// One entry of a factor's level list: a scalar, or a map whose keys become variables
/// (a zipped group, like `{ bs: 1k, count: 3145728 }`).
#[derive(Debug, Clone, PartialEq)]
pub enum Level {
    Scalar(Scalar),
    Zip(IndexMap<Located<String>, Located<Scalar>>),
}

/// `matrix:` — factors in declared order, plus `include` and `exclude`.
#[derive(Debug, Clone, Default)]
pub struct Matrix {
    pub factors: Vec<Factor>,
    pub include: Vec<Located<Combination>>,
    pub exclude: Vec<Located<Combination>>,
}

/// A partial combination of levels, as `include`/`exclude` entries write them.
pub type Combination = IndexMap<Located<String>, Located<Scalar>>;

/// A named dimension of the matrix.
#[derive(Debug, Clone)]
pub struct Factor {
    pub name: Located<String>,
    /// Position of the level list itself (for "empty level list").
    pub list_pos: Pos,
    pub levels: Vec<Located<Level>>,
    /// `{ git: { repo, range } }`: the levels are the range's commits, filled in at load.
    pub git: Option<Located<git::GitSpec>>,
}

impl Factor {
    /// The keys of a zipped group, from its first level; empty for a plain factor.
    pub fn zip_keys(&self) -> Vec<&str> {
        match self.levels.first().map(|l| &l.value) {
            Some(Level::Zip(map)) => map.keys().map(|k| k.value.as_str()).collect(),
            _ => Vec::new(),
        }
    }

    pub fn is_zip(&self) -> bool {
        matches!(self.levels.first().map(|l| &l.value), Some(Level::Zip(_)))
    }
}

/// How an environment factor's level is detected on a host.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EnvFactor {
    /// A fact margin detects itself (`hypervisor`, `xen_role`, `kernel`, …).
    pub fact: Option<Located<String>>,
    /// A shell command whose trimmed output is the level.
    pub probe: Option<Located<String>>,
    /// Detected value → level (`{ xen: xen, none: bare }`).
    #[serde(default)]
    pub map: IndexMap<Located<String>, Located<Scalar>>,
    /// The level when the probe prints nothing or fails.
    pub default: Option<Located<Scalar>>,
}

/// A machine trials run on. Without `ssh`, the machine running margin.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Host {
    /// `[user@]hostname`, as given to OpenSSH (`~/.ssh/config` applies).
    pub ssh: Option<Located<String>>,
    pub port: Option<u16>,
    pub user: Option<String>,
    pub identity: Option<String>,
    /// The physical machine the host is on: hosts of one machine never run trials at
    /// the same time. Default: the machine running margin for a host without `ssh`,
    /// else a machine of the host's own.
    pub machine: Option<Located<String>>,
    /// The address other hosts reach it at (`{{ services.NAME.address }}`). Default: the
    /// hostname of `ssh` (without `user@`), or `127.0.0.1` for this machine.
    pub address: Option<Located<String>>,
    /// Extra `-o` options, like `ConnectTimeout=5`.
    #[serde(default)]
    pub options: Vec<Located<String>>,
    /// How margin reboots the host into a combination of the environment's levels
    /// (docs/experiment-file.md, boots): boots become units of the experiment.
    pub boot: Option<Located<Boot>>,
}

/// A long-lived command on a host for the duration of the trials of the cells that use
/// it (docs/experiment-file.md, services): started before the first, checked before
/// every one, stopped after the last. Its host runs no other trial meanwhile.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Service {
    /// A key of `hosts:`; default: the machine running margin.
    pub host: Option<Located<String>>,
    /// The command, in the foreground (a template over the levels and `experiment`).
    pub run: Located<String>,
    /// A command that succeeds once the service answers, tried until `ready_timeout`.
    pub ready: Option<Located<String>>,
    /// How long `ready` may take to succeed (default 30 s).
    pub ready_timeout: Option<Located<Scalar>>,
    /// A command run before every trial that must succeed (the process must be running
    /// in any case).
    pub alive: Option<Located<String>>,
    /// The cells that use it: a condition like `where` (default: every cell).
    pub when: Option<Located<String>>,
}

/// Hosts that run one trial together (docs/experiment-file.md, gangs): each prepared,
/// then the timed commands released at once; each member's output parsed into its own
/// metrics (`metric@host`), plus the aggregates declared here.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Gang {
    /// Keys of `hosts:`, two or more.
    pub hosts: Vec<Located<String>>,
    /// Metric → how the members' values combine: `sum`, `mean`, `min` or `max`.
    #[serde(default)]
    pub aggregate: IndexMap<Located<String>, Located<String>>,
}

/// How a gang combines its members' values of a metric.
pub const AGGREGATES: &[&str] = &["sum", "mean", "min", "max"];

impl Spec {
    /// The gang named `name`, if the experiment declares one.
    pub fn gang(&self, name: &str) -> Option<&Gang> {
        self.gangs.iter().find(|(k, _)| k.value == name).map(|(_, g)| &g.value)
    }
}

impl Gang {
    /// Its members' names, in declared order.
    pub fn members(&self) -> Vec<&str> {
        self.hosts.iter().map(|h| h.value.as_str()).collect()
    }
}

impl Service {
    /// Its command templates with their key names.
    pub fn commands(&self) -> impl Iterator<Item = (&'static str, &Located<String>)> {
        [("run", Some(&self.run)), ("ready", self.ready.as_ref()), ("alive", self.alive.as_ref())]
            .into_iter()
            .filter_map(|(k, v)| v.map(|v| (k, v)))
    }
}

impl Host {
    /// The address other hosts reach it at: `address`, else the hostname of `ssh`
    /// (`user@` and IPv6 brackets taken off), else `127.0.0.1` (this machine).
    pub fn address(&self) -> String {
        if let Some(a) = &self.address {
            return a.value.clone();
        }
        match &self.ssh {
            Some(ssh) => {
                let host = ssh.value.rsplit('@').next().unwrap_or_default();
                host.trim_start_matches('[').trim_end_matches(']').to_string()
            }
            None => "127.0.0.1".to_string(),
        }
    }
}

impl Spec {
    /// The host a service runs on (its `host`, else `local`) and that host's address.
    pub fn service_place(&self, service: &Service) -> (String, String) {
        match &service.host {
            None => ("local".to_string(), "127.0.0.1".to_string()),
            Some(h) => {
                let entry = self.hosts.iter().find(|(k, _)| k.value == h.value).map(|(_, e)| &e.value);
                (h.value.clone(), entry.map_or_else(|| "127.0.0.1".to_string(), Host::address))
            }
        }
    }
}

/// How a metric is taken or annotated.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MetricSpec {
    /// A regular expression with one capture group or named groups.
    pub regex: Option<Located<String>>,
    /// A JSON pointer into the output (`/jobs/0/write/bw_bytes`).
    pub json: Option<Located<String>>,
    /// Take the parser's metric of this name (renaming it).
    pub from: Option<Located<String>>,
    /// The unit of the extracted number (`kB/s`, `ms`, …).
    pub unit: Option<Located<String>>,
    pub better: Option<Better>,
    pub mean: Option<MeanKind>,
    /// `parametric` or `robust`: this metric's comparisons, overriding `analysis.method`.
    pub method: Option<Method>,
    /// What the tool prints, as its stdout: `check`, `plan` and `run` try the `regex` or
    /// `json` on it before any trial runs (`parse::recipe::check_samples`).
    pub sample: Option<Located<String>>,
}

/// `repetitions:` as written: `5`, `{ min: 5, max: 30, target: 2% }` or
/// `{ min: 5, max: 30, until: verdict }` (validation checks that exactly one of `target`
/// and `until` is there).
#[derive(Debug, Clone, PartialEq)]
pub enum RepetitionsSpec {
    Fixed(u32),
    Adaptive { min: u32, max: u32, target: Option<Located<Scalar>>, until: Option<Located<Scalar>> },
}

/// How many trials a cell gets: a fixed number, or adaptive until a relative margin.
#[derive(Debug, Clone, PartialEq)]
pub enum Repetitions {
    Fixed(u32),
    Adaptive {
        min: u32,
        max: u32,
        target: Percent,
    },
    /// Until every comparison a cell takes part in is resolved (docs/statistics.md,
    /// Stopping on the answer): looked at on the schedule of [`Repetitions::looks`].
    Verdict {
        min: u32,
        max: u32,
    },
}

impl Default for Repetitions {
    fn default() -> Self {
        Repetitions::Fixed(5)
    }
}

impl Repetitions {
    /// The fewest and the most trials a cell may get.
    pub fn bounds(&self) -> (u32, u32) {
        match *self {
            Repetitions::Fixed(n) => (n, n),
            Repetitions::Adaptive { min, max, .. } | Repetitions::Verdict { min, max } => (min, max),
        }
    }

    /// The trial counts at which an `until: verdict` comparison is looked at: `min`, then
    /// each time the smaller side has grown by ×1.5 (rounded up), and `max`. Empty for
    /// the other rules. Its length is the K of the 1 − α/K intervals.
    pub fn looks(&self) -> Vec<u32> {
        match *self {
            Repetitions::Verdict { min, max } => look_schedule(min, max),
            _ => Vec::new(),
        }
    }
}

/// `min`, ⌈1.5·previous⌉, … below `max`, then `max` (docs/statistics.md).
pub fn look_schedule(min: u32, max: u32) -> Vec<u32> {
    let mut looks = Vec::new();
    let mut n = min.max(1);
    while n < max {
        looks.push(n);
        // ⌈1.5 n⌉, and at least one more trial
        n = (n + n.div_ceil(2)).max(n + 1);
    }
    looks.push(max.max(min));
    looks
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Order {
    #[default]
    Interleaved,
    Sequential,
}

/// `analysis:` — confidence, the practical threshold, outliers, comparisons.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Analysis {
    pub confidence: Option<Located<f64>>,
    pub threshold: Option<Located<Scalar>>,
    /// `parametric` (means: Fieller, Welch) or `robust` (ranks: Hodges–Lehmann,
    /// Mann–Whitney, Wilcoxon) for every metric without its own `method`.
    pub method: Option<Method>,
    pub outliers: Option<OutlierSettings>,
    #[serde(default)]
    pub compare: Vec<Located<Compare>>,
    /// Factors whose levels, in the order the matrix writes them, are a series: the report
    /// finds where the metric changed along them (docs/statistics.md, Series).
    #[serde(default)]
    pub series: Vec<Located<Series>>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OutlierSettings {
    pub method: OutlierMethod,
    /// `mad` and `iqr`: the score beyond which a value is flagged.
    pub cutoff: Option<Located<f64>>,
    /// `studentized`: the chance that a clean normal cell loses a value (`1%`).
    pub rate: Option<Located<Scalar>>,
    /// Leave flagged values out of the statistics (from 5 trials, at most a fifth of a
    /// cell). By default only the `studentized` rule does: its false-flag rate is known
    /// at every n, where setting the MAD rule's flags aside doubled the false claims of
    /// plain normal data at 5 trials (docs/statistics.md, Outliers).
    pub set_aside: Option<bool>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum OutlierMethod {
    Studentized,
    Mad,
    Iqr,
    None,
}

/// Compare the levels of `factor` against `baseline`, within each combination of the rest.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Compare {
    pub factor: Located<String>,
    pub baseline: Located<Scalar>,
    pub paired_by: Option<Located<String>>,
}

/// The levels of `factor`, in the order written, as a series: where along them did each
/// metric change, within each combination of the other factors.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Series {
    pub factor: Located<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReportSpec {
    /// A minijinja template replacing the built-in report, relative to the experiment file.
    pub template: Option<Located<String>>,
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use proptest::prelude::*;

    const VALID: &str = include_str!("../../experiments/dd-write.yaml");

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]

        /// Loading never panics: arbitrary text, and the default experiment with one
        /// byte range replaced by arbitrary text.
        #[test]
        fn loading_never_panics(text in ".{0,200}", at in 0usize..2000, cut in 0usize..20, junk in "[ -~\n\t]{0,12}") {
            let _ = super::load_str(Path::new("x.yaml"), &text);
            let start = VALID.floor_char_boundary(at.min(VALID.len()));
            let end = VALID.floor_char_boundary((start + cut).min(VALID.len()));
            let mutated = format!("{}{}{}", &VALID[..start], junk, &VALID[end..]);
            if let Ok(exp) = super::load_str(Path::new("x.yaml"), &mutated) {
                let _ = crate::plan::expand(&exp, 1000);
            }
        }
    }
}
