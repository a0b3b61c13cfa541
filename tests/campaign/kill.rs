//! kill -9 of `margin run` at random moments spread over a whole run: no completed trial
//! lost, none duplicated, the log always loads, and the same command completes the store.

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
                Some(out) if out.status.success() => {}
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
    let line = format!(
        "kill -9 at {kills} moments in {} stores ({CELLS} cells × {} trials with every hook, a whole run {:.1} s): \
         {lost_n} trials lost, {dup_n} duplicated, {torn_n} logs torn past the last line, {unloadable} unloadable logs, \
         {panics} panics, {completed} of {} stores completed on resume; {stopped} processes the killed runs left \
         running were stopped before the next trial",
        cfg.stores,
        cfg.repetitions,
        whole.as_secs_f64(),
        cfg.stores
    );
    Tally { line, failures }
}
