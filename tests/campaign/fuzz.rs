//! A mutational fuzzer of what margin reads from outside, through the real binary: tool
//! outputs through `margin import` (every parser, seeded with the captured outputs of
//! tests/data/parse), trial logs through `status` and `report`, and experiment files
//! through `check` and `plan` (seeded with the shipped experiments). The guarantees: no
//! panic, no hang, exit codes 0 and 2 only, `check` and `plan` agree, every rejection of
//! an experiment names `file:line:col`, and a store always reads back. An input that
//! breaks one is kept (`keep`), and [`replay`] runs every kept input again as a test.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::{Margin, Rng, Tally, folder};

pub(crate) struct Config {
    /// Mutated inputs per target (tool outputs, logs, experiment files).
    pub(crate) cases: usize,
    pub(crate) seed: u64,
    /// The repository: its captured outputs and shipped experiments are the seeds.
    pub(crate) source: PathBuf,
    /// Where inputs that break a guarantee are written (`tests/data/campaign` keeps them
    /// as regression tests).
    pub(crate) keep: Option<PathBuf>,
}

const LIMIT: Duration = Duration::from_secs(30);

/// The built-in parser that reads a captured output, from its file name.
fn parser_of(name: &str) -> Option<&'static str> {
    let output = [".txt", ".json", ".csv", ".diff"].iter().any(|ext| name.ends_with(ext));
    PREFIXES.iter().find(|(prefix, _)| name.starts_with(prefix) && output).map(|(_, parser)| *parser)
}

/// A parser's name as file names spell it (`bonnie++`: `bonniepp`).
fn tag(parser: &str) -> String {
    parser.replace("++", "pp")
}

/// Captured outputs' name prefixes, and the parser of each.
const PREFIXES: &[(&str, &str)] = &[
    ("dd-", "dd"),
    ("time-", "time"),
    ("fio-", "fio"),
    ("sysbench-", "sysbench"),
    ("iperf3-", "iperf3"),
    ("bonnie++-", "bonnie++"),
    ("hyperfine-", "hyperfine"),
    ("iozone-", "iozone"),
    ("netperf-", "netperf"),
    ("dnetc-", "dnetc"),
];

/// Files of a folder, sorted by name, with `pick` choosing and naming them.
fn files<T>(dir: &Path, pick: impl Fn(&str) -> Option<T>) -> Vec<(T, String, Vec<u8>)> {
    let mut out: Vec<_> = std::fs::read_dir(dir)
        .map(|d| d.filter_map(Result::ok).map(|e| e.path()).collect::<Vec<_>>())
        .unwrap_or_default()
        .into_iter()
        .filter_map(|path| {
            let name = path.file_name()?.to_str()?.to_string();
            let tag = pick(&name)?;
            Some((tag, name, std::fs::read(&path).ok()?))
        })
        .collect();
    out.sort_by(|a, b| a.1.cmp(&b.1));
    out
}

fn import_experiment(parser: &str) -> String {
    format!("matrix:\n  x: [a]\nrun: \"true\"\nparse: {parser}\n")
}

const LOG_EXPERIMENT: &str = "matrix:\n  n: [1, 2]\nrun: echo value={{ n }}\n\
    metrics:\n  value: { regex: 'value=(\\d+)', better: higher }\nrepetitions: 3\n";

/// Values that numbers are made into.
const NUMBERS: &[&str] =
    &["99999999999999999999999999", "-1", "-0", "NaN", "inf", "-inf", "", "0", "1e308", "4e-320"];

/// One to three mutations of `input`: byte flips, truncation, duplicated, deleted and
/// swapped lines, numbers made huge, negative, NaN, inf or empty, random bytes, a long
/// line, invalid UTF-8, a value cut after its colon.
pub(crate) fn mutate(rng: &mut Rng, input: &[u8]) -> Vec<u8> {
    let mut b = input.to_vec();
    for _ in 0..1 + rng.below(3) {
        let lines = line_starts(&b);
        match rng.below(10) {
            0 if !b.is_empty() => {
                let i = rng.below(b.len());
                b[i] = rng.below(256) as u8;
            }
            1 => b.truncate(rng.below(b.len() + 1)),
            2 => {
                let (s, e) = line(&lines, &b, rng.below(lines.len()));
                let copy = b[s..e].to_vec();
                b.splice(s..s, copy);
            }
            3 => {
                let (s, e) = line(&lines, &b, rng.below(lines.len()));
                b.drain(s..e);
            }
            4 => {
                let numbers: Vec<(usize, usize)> = digit_runs(&b);
                if !numbers.is_empty() {
                    let (s, e) = *rng.pick(&numbers);
                    b.splice(s..e, rng.pick(NUMBERS).bytes());
                }
            }
            5 => {
                let at = rng.below(b.len() + 1);
                let junk: Vec<u8> = (0..1 + rng.below(16)).map(|_| rng.below(256) as u8).collect();
                b.splice(at..at, junk);
            }
            6 => {
                let at = line(&lines, &b, rng.below(lines.len())).0;
                let long = format!("{}\n", "9".repeat(100_000));
                b.splice(at..at, long.into_bytes());
            }
            7 => {
                let at = rng.below(b.len() + 1);
                b.splice(at..at, [0xff, 0xfe, 0xc3]);
            }
            8 if lines.len() > 1 => {
                let (i, j) = (rng.below(lines.len()), rng.below(lines.len()));
                let (a, c) = (line(&lines, &b, i.min(j)), line(&lines, &b, i.max(j)));
                if a.1 <= c.0 {
                    let first = b[a.0..a.1].to_vec();
                    let second = b[c.0..c.1].to_vec();
                    b.splice(c.0..c.1, first);
                    b.splice(a.0..a.1, second);
                }
            }
            _ => {
                let (s, e) = line(&lines, &b, rng.below(lines.len()));
                if let Some(colon) = b[s..e].iter().position(|&c| c == b':') {
                    let end = if b[e - 1] == b'\n' { e - 1 } else { e };
                    b.drain(s + colon + 1..end.max(s + colon + 1));
                }
            }
        }
    }
    b
}

fn line_starts(b: &[u8]) -> Vec<usize> {
    std::iter::once(0).chain(b.iter().enumerate().filter(|(_, c)| **c == b'\n').map(|(i, _)| i + 1)).collect()
}

/// Line `i`'s byte range, its newline included.
fn line(starts: &[usize], b: &[u8], i: usize) -> (usize, usize) {
    let s = starts[i].min(b.len());
    (s, starts.get(i + 1).copied().unwrap_or(b.len()).max(s))
}

fn digit_runs(b: &[u8]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i].is_ascii_digit() {
            let s = i;
            while i < b.len() && (b[i].is_ascii_digit() || b[i] == b'.') {
                i += 1;
            }
            out.push((s, i));
        } else {
            i += 1;
        }
    }
    out
}

/// What one input did against the guarantees: `Err` says which it broke.
type Verdict = Result<(), String>;

fn exit_0_or_2(what: &str, out: Option<std::process::Output>) -> Result<std::process::Output, String> {
    let out = out.ok_or_else(|| format!("{what} hung (over {} s)", LIMIT.as_secs()))?;
    if super::panicked(&out) {
        return Err(format!("{what} panicked: {}", super::said(&out)));
    }
    match out.status.code() {
        Some(0 | 2) => Ok(out),
        code => Err(format!("{what} exited {code:?}: {}", super::said(&out))),
    }
}

/// A tool's output through `margin import` into `dir`'s store, then `status` on it.
fn import_case(margin: &Margin, dir: &Path, parser: &str, name: &str, input: &[u8]) -> Verdict {
    std::fs::write(dir.join("exp.yaml"), import_experiment(parser)).map_err(|e| e.to_string())?;
    std::fs::write(dir.join(name), input).map_err(|e| e.to_string())?;
    exit_0_or_2("import", margin.output(dir, &["import", "exp.yaml", "--set", "x=a", name], LIMIT))?;
    let status = exit_0_or_2("status", margin.output(dir, &["status", "exp.yaml"], LIMIT))?;
    if !status.status.success() {
        return Err(format!("the store does not read back after the import: {}", super::said(&status)));
    }
    Ok(())
}

/// A trial log through `status` and `report`: both read it or refuse it naming it.
fn log_case(margin: &Margin, dir: &Path, base: &Path, log: &[u8]) -> Verdict {
    let store = super::store(dir, "exp");
    let _ = std::fs::remove_dir_all(dir.join("reports"));
    std::fs::create_dir_all(&store).map_err(|e| e.to_string())?;
    std::fs::copy(base.join("exp.yaml"), dir.join("exp.yaml")).map_err(|e| e.to_string())?;
    std::fs::copy(super::store(base, "exp").join("sessions.ndjson"), store.join("sessions.ndjson"))
        .map_err(|e| e.to_string())?;
    std::fs::write(store.join("runs.ndjson"), log).map_err(|e| e.to_string())?;
    for command in ["status", "report"] {
        let out = exit_0_or_2(command, margin.output(dir, &[command, "exp.yaml"], LIMIT))?;
        if !out.status.success() && !super::said(&out).contains("runs.ndjson") {
            return Err(format!("{command} refused the log without naming it: {}", super::said(&out)));
        }
    }
    Ok(())
}

/// An experiment file through `check` and `plan`: they agree, and a rejection names
/// `x.yaml:line:col`.
fn experiment_case(margin: &Margin, dir: &Path, input: &[u8]) -> Verdict {
    std::fs::write(dir.join("x.yaml"), input).map_err(|e| e.to_string())?;
    let check = exit_0_or_2("check", margin.output(dir, &["check", "x.yaml"], LIMIT))?;
    let plan = exit_0_or_2("plan", margin.output(dir, &["plan", "x.yaml"], LIMIT))?;
    if check.status.success() != plan.status.success() {
        return Err(format!(
            "check exited {:?} and plan {:?}: {} / {}",
            check.status.code(),
            plan.status.code(),
            super::said(&check),
            super::said(&plan)
        ));
    }
    let located = regex::Regex::new(r"x\.yaml:\d+:\d+").expect("a valid pattern");
    if !check.status.success() && !located.is_match(&String::from_utf8_lossy(&check.stderr)) {
        return Err(format!("check refused it without file:line:col: {}", super::said(&check)));
    }
    Ok(())
}

/// A short stable name for a kept input.
fn fingerprint(bytes: &[u8]) -> String {
    format!(
        "{:016x}",
        bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| (h ^ b as u64).wrapping_mul(0x100_0000_01b3))
    )
}

/// The store whose log the log target mutates: a real run of two cells × three trials.
fn base_store(margin: &Margin, root: &Path) -> Result<PathBuf, String> {
    let base = folder(root, "fuzz-log-base", LOG_EXPERIMENT);
    let out =
        margin.output(&base, &["run", "exp.yaml"], Duration::from_secs(120)).ok_or("the base run hung")?;
    if !out.status.success() {
        return Err(format!("the base run failed: {}", super::said(&out)));
    }
    Ok(base)
}

pub(crate) fn campaign(margin: &Margin, root: &Path, cfg: &Config) -> Tally {
    let mut rng = Rng::new(cfg.seed);
    let mut failures = Vec::new();
    let keep = |name: String, bytes: &[u8], why: String, failures: &mut Vec<String>| {
        let mut saved = String::new();
        if let Some(dir) = &cfg.keep {
            let _ = std::fs::create_dir_all(dir);
            let path = dir.join(&name);
            if std::fs::write(&path, bytes).is_ok() {
                saved = format!(" (kept as {})", path.display());
            }
        }
        failures.push(format!("{name}: {why}{saved}"));
    };
    let outputs = files(&cfg.source.join("tests/data/parse"), parser_of);
    let experiments = files(&cfg.source.join("experiments"), |n| n.ends_with(".yaml").then_some(()));
    let mut parsers: Vec<&str> = outputs.iter().map(|o| o.0).collect();
    parsers.dedup();

    // Tool outputs through import: a fresh store per parser every 100 inputs.
    let mut import_dir = root.join("fuzz-import");
    for i in 0..cfg.cases {
        if i % 100 == 0 {
            import_dir = root.join(format!("fuzz-import-{i}"));
            let _ = std::fs::create_dir_all(&import_dir);
        }
        let (parser, name, original) = rng.pick(&outputs);
        let input = mutate(&mut rng, original);
        let ext = name.rsplit('.').next().unwrap_or("txt");
        let case = format!("case-{i}.{ext}");
        let dir = import_dir.join(tag(parser));
        let _ = std::fs::create_dir_all(&dir);
        if let Err(why) = import_case(margin, &dir, parser, &case, &input) {
            keep(format!("import-{}-{}.{ext}", tag(parser), fingerprint(&input)), &input, why, &mut failures);
        }
    }
    // Trial logs through status and report.
    let logs = match base_store(margin, root) {
        Ok(base) => {
            let log = std::fs::read(super::store(&base, "exp").join("runs.ndjson")).unwrap_or_default();
            let dir = root.join("fuzz-log");
            let _ = std::fs::create_dir_all(&dir);
            for _ in 0..cfg.cases {
                let input = mutate(&mut rng, &log);
                if let Err(why) = log_case(margin, &dir, &base, &input) {
                    keep(format!("log-{}.ndjson", fingerprint(&input)), &input, why, &mut failures);
                }
            }
            cfg.cases
        }
        Err(why) => {
            failures.push(why);
            0
        }
    };
    // Experiment files through check and plan.
    let dir = root.join("fuzz-experiment");
    let _ = std::fs::create_dir_all(&dir);
    for _ in 0..cfg.cases {
        let ((), _, original) = rng.pick(&experiments);
        let input = mutate(&mut rng, original);
        if let Err(why) = experiment_case(margin, &dir, &input) {
            keep(format!("experiment-{}.yaml", fingerprint(&input)), &input, why, &mut failures);
        }
    }
    let line = format!(
        "fuzzer (seed {}): {} mutated tool outputs through `margin import` ({} parsers), {logs} mutated trial logs \
         through status and report, {} mutated experiment files through check and plan: {} broke a guarantee \
         (panic, hang, an exit code other than 0 and 2, check and plan disagreeing, a rejection without \
         file:line:col, a store that does not read back)",
        cfg.seed,
        cfg.cases,
        parsers.len(),
        cfg.cases,
        failures.len()
    );
    Tally { line, failures }
}

/// Every input kept in `dir` through its target again: the regression tests of the
/// fuzzer's findings.
pub(crate) fn replay(margin: &Margin, root: &Path, dir: &Path) -> Tally {
    let mut failures = Vec::new();
    let kept = files(dir, |n| Some(n.to_string()));
    let base = base_store(margin, root);
    for (name, _, input) in &kept {
        let case = root.join(format!("replay-{name}"));
        let _ = std::fs::create_dir_all(&case);
        let verdict = if let Some(rest) = name.strip_prefix("import-") {
            let parser = PREFIXES.iter().map(|p| p.1).find(|p| rest.starts_with(&format!("{}-", tag(p))));
            match parser {
                Some(parser) => import_case(margin, &case, parser, name, input),
                None => Err("import-PARSER-…: no such parser".into()),
            }
        } else if name.starts_with("log-") {
            base.clone().and_then(|base| log_case(margin, &case, &base, input))
        } else if name.starts_with("experiment-") {
            experiment_case(margin, &case, input)
        } else {
            Err("not a kept input: names begin with import-, log- or experiment-".into())
        };
        if let Err(why) = verdict {
            failures.push(format!("{name}: {why}"));
        }
    }
    Tally {
        line: format!("fuzzer's kept inputs: {} replayed, {} broke a guarantee", kept.len(), failures.len()),
        failures,
    }
}
