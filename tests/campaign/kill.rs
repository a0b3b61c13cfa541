//! kill -9 of `margin run` at random moments spread over a whole run: no completed trial
//! lost, none duplicated, the log always loads, and the same command completes the store.
//! Then the same for `margin import` of many files and for `margin reparse`.

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use super::{Margin, Rng, Tally, duplicates, folder, lost, ok_per_cell, records, store};

pub(crate) struct Config {
    /// Stores, each killed `kills` times and then resumed to completion.
    pub(crate) stores: usize,
    pub(crate) kills: usize,
    /// Trials per cell.
    pub(crate) repetitions: usize,
    pub(crate) seed: u64,
}

const CELLS: usize = 4;

/// Four cells with every hook, so that kills land in setup, prepare, the trial, conclude,
/// cleanup and the writes between them.
fn experiment(repetitions: usize) -> String {
    format!(
        "matrix:\n  n: [1, 2, 3, 4]\n\
         setup: echo ready > {{{{ workdir }}}}/setup\n\
         prepare: echo before > {{{{ workdir }}}}/prepare\n\
         run: sleep 0.005; echo value={{{{ n }}}}\n\
         conclude: rm -f {{{{ workdir }}}}/prepare\n\
         cleanup: rm -f {{{{ workdir }}}}/setup\n\
         metrics:\n  value: {{ regex: 'value=(\\d+)', better: higher }}\n\
         repetitions: {repetitions}\nwarmup: 1\n"
    )
}

#[allow(
    clippy::too_many_lines,
    reason = "test code: a campaign is a script of kills and checks, read top to bottom"
)]
pub(crate) fn campaign(margin: &Margin, root: &Path, cfg: &Config) -> Tally {
    let yaml = experiment(cfg.repetitions);
    let mut failures = Vec::new();
    // How long a whole run takes, and a run with nothing left to do: kills are drawn over
    // the first, each restart gets the second on top.
    let scratch = folder(root, "kill-scratch", &yaml);
    let start = Instant::now();
    let full =
        margin.command(&scratch, &["run", "exp.yaml"]).stdout(Stdio::null()).stderr(Stdio::null()).status();
    let whole = start.elapsed();
    let start = Instant::now();
    let _ =
        margin.command(&scratch, &["run", "exp.yaml"]).stdout(Stdio::null()).stderr(Stdio::null()).status();
    let idle = start.elapsed();
    if !full.is_ok_and(|s| s.success()) {
        failures.push(format!("an uninterrupted run of {} failed", scratch.display()));
    }
    let mut rng = Rng::new(cfg.seed);
    let (mut kills, mut lost_n, mut dup_n, mut torn_n, mut unloadable, mut panics, mut completed) =
        (0, 0, 0, 0, 0, 0, 0);
    // processes a killed run left running, which the next run stopped before its first trial
    let mut stopped = 0;
    // `status` answers that said another count of measured trials than the log holds
    let mut disagreed = 0;
    let stopped_in = |text: &str| text.matches("a run that was killed left it running").count();
    for s in 0..cfg.stores {
        let dir = folder(root, &format!("kill-{s}"), &yaml);
        let store = store(&dir, "exp");
        let mut moments: Vec<f64> = (0..cfg.kills).map(|_| rng.unit() * whole.as_secs_f64()).collect();
        moments.sort_by(f64::total_cmp);
        let mut before = Vec::new();
        let mut last = 0.0;
        for (k, at) in moments.into_iter().enumerate() {
            let stderr = dir.join(format!("kill-{k}.output"));
            let output = std::fs::File::create(&stderr).expect("an output file");
            let mut child = margin
                .command(&dir, &["run", "exp.yaml"])
                .stdout(output.try_clone().expect("an output file"))
                .stderr(output)
                .spawn()
                .expect("margin starts");
            std::thread::sleep(idle + Duration::from_secs_f64(at - last));
            last = at;
            let _ = child.kill(); // SIGKILL
            let _ = child.wait();
            kills += 1;
            let said = std::fs::read_to_string(&stderr).unwrap_or_default();
            stopped += stopped_in(&said);
            if said.contains("panicked at") {
                panics += 1;
                failures.push(format!("a panic before kill {k}: {}", stderr.display()));
            }
            let (now, torn) = records(&store);
            if torn > 1 {
                torn_n += 1;
                failures.push(format!("{torn} torn lines after kill {k} of {}", store.display()));
            }
            let gone = lost(&before, &now);
            let doubled = duplicates(&now);
            if gone + doubled > 0 {
                failures.push(format!("kill {k} of {}: {gone} lost, {doubled} duplicated", store.display()));
            }
            lost_n += gone;
            dup_n += doubled;
            match margin.output(&dir, &["status", "exp.yaml"], Duration::from_secs(60)) {
                Some(out) if out.status.success() => {
                    // the first command people run after a crash says what the log holds
                    let said = String::from_utf8_lossy(&out.stdout);
                    let measured = measured_in(&now);
                    if !said.contains(&format!("trials: {measured} measured")) {
                        disagreed += 1;
                        failures.push(format!(
                            "status after kill {k} of {} disagrees with the log ({measured} measured): {}",
                            store.display(),
                            said.lines().find(|l| l.contains("trials:")).unwrap_or("no trials line")
                        ));
                    }
                }
                Some(out) => {
                    unloadable += 1;
                    panics += usize::from(super::panicked(&out));
                    failures.push(format!(
                        "status after kill {k} of {}: {}",
                        store.display(),
                        super::said(&out)
                    ));
                }
                None => failures.push(format!("status after kill {k} of {} hung", store.display())),
            }
            before = now;
        }
        let resumed = margin.output(&dir, &["run", "exp.yaml"], Duration::from_secs(600));
        if let Some(out) = &resumed {
            stopped += stopped_in(&String::from_utf8_lossy(&out.stderr))
                + stopped_in(&String::from_utf8_lossy(&out.stdout));
        }
        let (after, _) = records(&store);
        lost_n += lost(&before, &after);
        let per_cell = ok_per_cell(&after);
        let complete = per_cell.len() == CELLS && per_cell.values().all(|&n| n == cfg.repetitions);
        let log = std::fs::read(store.join("runs.ndjson")).unwrap_or_default();
        let clean_end = log.ends_with(b"}\n") && !log.contains(&0);
        let workdirs_left = store.join("work").exists();
        match resumed {
            Some(out) if out.status.success() && complete && clean_end && !workdirs_left && duplicates(&after) == 0 => {
                completed += 1
            }
            Some(out) => failures.push(format!(
                "resuming {}: exit {:?}, ok per cell {per_cell:?}, log ends cleanly {clean_end}, workdirs left {workdirs_left}, {} duplicated: {}",
                store.display(),
                out.status.code(),
                duplicates(&after),
                super::said(&out)
            )),
            None => failures.push(format!("resuming {} hung", store.display())),
        }
    }
    let (import_kills, import_failures) = writers(margin, root, cfg, &mut rng);
    failures.extend(import_failures);
    let line = format!(
        "kill -9 at {kills} moments in {} stores ({CELLS} cells × {} trials with every hook, a whole run {:.1} s): \
         {lost_n} trials lost, {dup_n} duplicated, {torn_n} logs torn past the last line, {unloadable} unloadable logs, \
         {panics} panics, {disagreed} `status` answers disagreeing with the log, {completed} of {} stores completed on resume; {stopped} processes the killed runs left \
         running were stopped before the next trial; kill -9 of `import` (40 files) and `reparse` at \
         {import_kills} moments: {} broke a guarantee",
        cfg.stores,
        cfg.repetitions,
        whole.as_secs_f64(),
        cfg.stores,
        failures.len()
    );
    Tally { line, failures }
}

/// The measurements (not warm-ups) among `records`, as `status` counts them.
fn measured_in(records: &[serde_json::Value]) -> usize {
    records
        .iter()
        .filter(|r| (r["status"] == "ok" || r["status"] == "imported") && r["warmup"] != true)
        .count()
}

/// kill -9 of the other writers, `import` of many files and `reparse`, each `cfg.kills`
/// times in a store of its own: after each kill the log loads and keeps what it held;
/// the same command then completes, each file imported once, the reparsed log holding
/// every trial once. How many kills, and the failures.
fn writers(margin: &Margin, root: &Path, cfg: &Config, rng: &mut Rng) -> (usize, Vec<String>) {
    let mut failures = Vec::new();
    let mut kills = 0;
    let yaml = experiment(cfg.repetitions);
    let dir = folder(root, "kill-import", &yaml);
    let files: Vec<String> = (0..40).map(|i| format!("out-{i}.txt")).collect();
    for (i, f) in files.iter().enumerate() {
        // each file its own capture (an import skips a content it already holds)
        std::fs::write(dir.join(f), format!("value={}\ncapture {i}\n", i % 7 + 1))
            .expect("an output to import");
    }
    let mut import: Vec<&str> = vec!["import", "exp.yaml", "--set", "n=1"];
    import.extend(files.iter().map(String::as_str));
    let store = store(&dir, "exp");
    let timed = Instant::now();
    let scratch = folder(root, "kill-import-scratch", &yaml);
    for f in &files {
        let _ = std::fs::copy(dir.join(f), scratch.join(f));
    }
    let _ = margin.output(&scratch, &import, Duration::from_secs(120));
    let whole = timed.elapsed();
    let mut before = Vec::new();
    for k in 0..cfg.kills {
        kill_after(margin, &dir, &import, whole.mul_f64(rng.unit()));
        kills += 1;
        let (now, torn) = records(&store);
        if torn > 1 || lost(&before, &now) > 0 || duplicates(&now) > 0 {
            failures.push(format!(
                "kill {k} of import: {torn} torn, {} lost, {} duplicated",
                lost(&before, &now),
                duplicates(&now)
            ));
        }
        before = now;
    }
    match margin.output(&dir, &import, Duration::from_secs(120)) {
        Some(out) if out.status.success() => {
            let (all, _) = records(&store);
            let mut sources: Vec<String> = all.iter().map(|r| r["source"].to_string()).collect();
            sources.sort();
            sources.dedup();
            if all.len() != files.len() || sources.len() != files.len() {
                failures.push(format!(
                    "import after kills: {} trials from {} files, expected one per file",
                    all.len(),
                    sources.len()
                ));
            }
        }
        other => failures.push(format!("import after kills failed: {:?}", other.map(|o| super::said(&o)))),
    }
    // reparse of a run's store, killed, then run again
    let dir = folder(root, "kill-reparse", &yaml);
    let store = super::store(&dir, "exp");
    let _ = margin.output(&dir, &["run", "exp.yaml"], Duration::from_secs(300));
    let (ran, _) = records(&store);
    let timed = Instant::now();
    let _ = margin.output(&dir, &["reparse", "exp.yaml"], Duration::from_secs(120));
    let whole = timed.elapsed();
    let trials = |records: &[serde_json::Value]| {
        let mut ids: Vec<String> = records.iter().map(|r| r["trial"].to_string()).collect();
        ids.sort();
        ids
    };
    for k in 0..cfg.kills {
        kill_after(margin, &dir, &["reparse", "exp.yaml"], whole.mul_f64(rng.unit()));
        kills += 1;
        let (now, _) = records(&store);
        if trials(&now) != trials(&ran) {
            failures.push(format!(
                "kill {k} of reparse: the log holds {} trials, the run recorded {}",
                now.len(),
                ran.len()
            ));
        }
        if !margin
            .output(&dir, &["status", "exp.yaml"], Duration::from_secs(60))
            .is_some_and(|o| o.status.success())
        {
            failures.push(format!("kill {k} of reparse: the store does not load"));
        }
    }
    match margin.output(&dir, &["reparse", "exp.yaml"], Duration::from_secs(120)) {
        Some(out) if out.status.success() && trials(&records(&store).0) == trials(&ran) => {}
        other => failures.push(format!("reparse after kills: {:?}", other.map(|o| super::said(&o)))),
    }
    (kills, failures)
}

/// `margin ARGS…` in `dir`, killed with SIGKILL after `delay`.
fn kill_after(margin: &Margin, dir: &Path, args: &[&str], delay: Duration) {
    let mut child =
        margin.command(dir, args).stdout(Stdio::null()).stderr(Stdio::null()).spawn().expect("margin");
    std::thread::sleep(delay);
    let _ = child.kill();
    let _ = child.wait();
}
