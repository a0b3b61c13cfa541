//! Readers during a write: `status`, `report` and `export` while `margin run` appends,
//! some of them at once. Every reader succeeds with output that parses; a second writer
//! (`run`, `import`) is refused; and the report left after the run is the run's own.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use super::{Margin, Rng, Tally, folder, records, store};

pub(crate) struct Config {
    /// Reader calls spread over the run.
    pub(crate) readers: usize,
    pub(crate) seed: u64,
}

const EXPERIMENT: &str = "matrix:\n  n: [1, 2, 3]\n\
    run: sleep 0.02; echo value={{ n }}\n\
    metrics:\n  value: { regex: 'value=(\\d+)', better: higher }\n\
    repetitions: 40\n";

const OTHER: &str = "matrix:\n  m: [1, 2]\nrun: echo value={{ m }}\n\
    metrics:\n  value: { regex: 'value=(\\d+)', better: higher }\nrepetitions: 5\n";

const LIMIT: Duration = Duration::from_secs(120);

#[allow(
    clippy::too_many_lines,
    reason = "test code: a campaign is a script of readers and checks, read top to bottom"
)]
pub(crate) fn campaign(margin: &Margin, root: &Path, cfg: &Config) -> Tally {
    let mut rng = Rng::new(cfg.seed);
    let mut failures = Vec::new();
    let dir = folder(root, "readers", EXPERIMENT);
    // an output the experiment's metric reads: an import of it is refused only by the lock
    std::fs::write(dir.join("output.txt"), "value=7\n").expect("an output to import");
    let store = store(&dir, "exp");
    let mut run = margin
        .command(&dir, &["run", "exp.yaml"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("margin starts");
    std::thread::sleep(Duration::from_millis(300));
    let (mut readers, mut during, mut corrupted, mut refused, mut panics) = (0, 0, 0, 0, 0);
    // a second experiment under the same store root, run at the same time: stores are
    // separate, so neither waits for the other
    std::fs::write(dir.join("other.yaml"), OTHER).expect("a second experiment file");
    let other = margin.output(&dir, &["run", "other.yaml"], LIMIT);
    if !other.as_ref().is_some_and(|o| o.status.success()) {
        failures.push(format!(
            "a second experiment under the same root during the run: {:?}",
            other.map(|o| super::said(&o))
        ));
    }
    let kinds = ["status", "report", "export", "export parquet", "reports at once", "a second writer"];
    for i in 0..cfg.readers {
        let kind = *rng.pick(&kinds);
        let running = run.try_wait().ok().flatten().is_none();
        let outs: Vec<_> = match kind {
            "status" => vec![margin.output(&dir, &["status", "exp.yaml"], LIMIT)],
            "report" => vec![margin.output(&dir, &["report", "exp.yaml"], LIMIT)],
            "export" => vec![margin.output(&dir, &["export", "--format", "ndjson", "exp.yaml"], LIMIT)],
            "export parquet" => {
                vec![margin.output(
                    &dir,
                    &["export", "--format", "parquet", "-o", "trials.parquet", "exp.yaml"],
                    LIMIT,
                )]
            }
            "reports at once" => std::thread::scope(|s| {
                let all: Vec<_> =
                    (0..4).map(|_| s.spawn(|| margin.output(&dir, &["report", "exp.yaml"], LIMIT))).collect();
                all.into_iter().map(|h| h.join().ok().flatten()).collect()
            }),
            _ if !running => continue,
            _ => {
                let args: &[&str] = if rng.below(2) == 0 {
                    &["run", "exp.yaml"]
                } else {
                    &["import", "exp.yaml", "--set", "n=1", "output.txt"]
                };
                match margin.output(&dir, args, LIMIT) {
                    Some(out)
                        if out.status.code() == Some(2)
                            && super::said(&out).contains("is writing this experiment's store") =>
                    {
                        refused += 1
                    }
                    // the run ended meanwhile: a writer may then go ahead
                    Some(out) if out.status.success() && run.try_wait().ok().flatten().is_some() => {}
                    Some(out) => failures.push(format!(
                        "reader {i}: `margin {}` during a run: exit {:?}, expected a refusal (2): {}",
                        args.join(" "),
                        out.status.code(),
                        super::said(&out)
                    )),
                    None => failures.push(format!("reader {i}: `margin {}` hung", args.join(" "))),
                }
                continue;
            }
        };
        for out in outs {
            readers += 1;
            during += usize::from(running);
            let Some(out) = out else {
                failures.push(format!("reader {i} ({kind}) hung"));
                continue;
            };
            if super::panicked(&out) {
                panics += 1;
            }
            if !out.status.success() {
                failures.push(format!(
                    "reader {i} ({kind}): exit {:?}: {}",
                    out.status.code(),
                    super::said(&out)
                ));
                continue;
            }
            let parses = match kind {
                "export" => String::from_utf8_lossy(&out.stdout)
                    .lines()
                    .all(|l| serde_json::from_str::<serde_json::Value>(l).is_ok()),
                "status" => true,
                // a whole parquet file begins and ends with its magic bytes
                "export parquet" => std::fs::read(dir.join("trials.parquet"))
                    .is_ok_and(|b| b.len() > 8 && b.starts_with(b"PAR1") && b.ends_with(b"PAR1")),
                // a report of a store that changed meanwhile writes nothing: what is there parses
                _ => std::fs::read(store.join("summary.json"))
                    .map_or(true, |b| serde_json::from_slice::<serde_json::Value>(&b).is_ok()),
            };
            if !parses {
                corrupted += 1;
                failures.push(format!("reader {i} ({kind}) read or left a corrupted file"));
            }
        }
        std::thread::sleep(Duration::from_millis(20 + rng.below(120) as u64));
    }
    let finished = run.wait().is_ok_and(|s| s.success());
    if !finished {
        failures.push("the run under the readers failed".into());
    }
    // The report on disk after the run is the run's: it counts every trial of the log.
    let (log, _) = records(&store);
    let measured = log.iter().filter(|r| r["status"] == "ok").count();
    let summary: serde_json::Value = std::fs::read(store.join("summary.json"))
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default();
    let analysed = summary["trials"]["analysed"].as_u64().unwrap_or(0) as usize;
    if analysed != measured {
        failures.push(format!(
            "the report left after the run counts {analysed} trials; the log holds {measured}"
        ));
    }
    let line = format!(
        "readers during a write: {readers} status/report/export (ndjson, parquet) calls ({during} while the run wrote), \
         {corrupted} corrupted, {panics} panics, {refused} second writers refused, a second experiment of the same \
         root run meanwhile, the last report {}",
        if analysed == measured { "is the run's own" } else { "is stale" }
    );
    Tally { line, failures }
}
