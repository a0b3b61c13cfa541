//! The scheduler on a fake executor: order, rounds, hooks, giving up, stopping, warm-ups.

use std::collections::HashSet;
use std::sync::atomic::AtomicBool;

use super::display::{Progress, TrialLine};
use super::fake::{Calls, FakeExecutor, Scripted};
use super::session::run_on;
use super::{Outcome, RunOptions};
use crate::analyze::stopping::Rule;
use crate::store::{Store, TrialRecord};

/// A display that shows nothing.
struct Quiet;

impl Progress for Quiet {
    fn start(&mut self, _cells: usize, _min: u64, _max: u64) {}
    fn trial(&mut self, _t: &TrialLine<'_>) {}
    fn note(&mut self, _text: &str) {}
    fn finish(&mut self) {}
}

/// What one run of `yaml` on a fake local host did: its outcome, its records in log
/// order, and the executor's calls.
struct Ran {
    outcome: Outcome,
    records: Vec<TrialRecord>,
    calls: Vec<String>,
}

fn run_fake(yaml: &str, seed: u64, script: impl Fn(&str) -> Scripted + Send + Sync + Copy + 'static) -> Ran {
    let dir = tempfile::tempdir().unwrap();
    let exp = crate::spec::load_str(std::path::Path::new("experiments/e.yaml"), yaml).unwrap();
    let plan = crate::plan::expand(&exp, 1000).unwrap();
    let store = Store::new(dir.path(), &exp.name);
    store.create().unwrap();
    let calls = Calls::default();
    let options = RunOptions { seed: Some(seed), ..RunOptions::default() };
    let connect = |host: &str, _: Option<&std::path::Path>| -> super::exec::Target {
        super::exec::Target::One(Box::new(FakeExecutor::new(host, &calls, script)))
    };
    let rule = Rule::new(&exp, &plan, exp.spec.repetitions());
    let interrupt = AtomicBool::new(false);
    let run = super::Run {
        exp: &exp,
        plan: &plan,
        store: &store,
        options: &options,
        rule: &rule,
        interrupt: &interrupt,
    };
    let outcome = run_on(&run, &mut Quiet, &connect).unwrap();
    let (records, warnings) = store.records().unwrap();
    assert!(warnings.is_empty(), "{warnings:?}");
    let calls = calls.lock().unwrap().clone();
    Ran { outcome, records, calls }
}

fn ok(_: &str) -> Scripted {
    Scripted::ok(10)
}

fn level(r: &TrialRecord) -> &str {
    r.levels["v"].as_str()
}

const THREE: &str = "matrix:\n  v: [a, b, c]\nrun: run {{ v }}\nrepetitions: 4\n";

/// A full disk is known by its kind, wherever it struck: the command says so and how to
/// resume (`cmd::Error::DiskFull`).
#[test]
fn a_full_disk_is_known_by_its_kind() {
    use std::io;

    use super::RunError;
    use crate::store::StoreError;
    let full = |source| RunError::Store(StoreError::Io { path: "runs.ndjson".into(), source });
    assert!(full(io::Error::from_raw_os_error(28)).is_disk_full());
    assert!(full(io::Error::from(io::ErrorKind::StorageFull)).is_disk_full());
    assert!(!full(io::Error::from(io::ErrorKind::PermissionDenied)).is_disk_full());
    let io = RunError::file("raw/x.out".as_ref(), io::Error::from(io::ErrorKind::StorageFull));
    assert!(io.is_disk_full());
}

#[test]
fn interleaved_rounds_visit_every_cell_once_in_a_seeded_order() {
    let ran = run_fake(THREE, 7, ok);
    assert_eq!(ran.outcome.ok, 12);
    let mut orders = Vec::new();
    for round in 1..=4 {
        let this: Vec<&TrialRecord> = ran.records.iter().filter(|r| r.round == round).collect();
        let cells: Vec<&str> = this.iter().map(|r| level(r)).collect();
        let distinct: HashSet<&str> = cells.iter().copied().collect();
        assert_eq!(distinct.len(), 3, "round {round} is not a permutation: {cells:?}");
        let positions: Vec<u32> = this.iter().map(|r| r.position).collect();
        assert_eq!(positions, [1, 2, 3], "round {round}");
        orders.push(cells.concat());
    }
    // not one fixed order over and over: the rounds are shuffled
    assert!(orders.iter().collect::<HashSet<_>>().len() > 1, "{orders:?}");
    // the same seed, the same order; another seed, another
    let again = run_fake(THREE, 7, ok);
    let seq = |ran: &Ran| ran.records.iter().map(|r| level(r).to_string()).collect::<Vec<_>>();
    assert_eq!(seq(&ran), seq(&again));
    let other = (8..40).map(|seed| seq(&run_fake(THREE, seed, ok))).any(|s| s != seq(&ran));
    assert!(other, "every seed gave the order of seed 7");
}

#[test]
fn sequential_order_finishes_a_cell_before_the_next() {
    let ran = run_fake(&THREE.replace("run:", "order: sequential\nrun:"), 7, ok);
    let cells: Vec<&str> = ran.records.iter().map(level).collect();
    assert_eq!(cells, ["a", "a", "a", "a", "b", "b", "b", "b", "c", "c", "c", "c"]);
    let positions: Vec<u32> = ran.records.iter().take(4).map(|r| r.position).collect();
    assert_eq!(positions, [1, 2, 3, 4]);
}

#[test]
fn a_cell_is_abandoned_after_max_failures_and_the_others_go_on() {
    let yaml = THREE.replace("repetitions: 4", "repetitions: 4\nmax_failures: 2");
    let ran = run_fake(&yaml, 7, |cmd| if cmd == "run b" { Scripted::exit(3) } else { Scripted::ok(10) });
    let of = |v: &str| ran.records.iter().filter(|r| level(r) == v).count();
    assert_eq!((of("a"), of("b"), of("c")), (4, 2, 4));
    assert_eq!(ran.outcome.abandoned.len(), 1);
    assert_eq!(ran.outcome.abandoned[0].label, "v=b");
    let why = &ran.outcome.abandoned[0].why;
    assert!(matches!(why, super::GaveUp::Failures { failures: 2, .. }), "{why:?}");
    assert!(why.to_string().starts_with("2 failures; the last: "), "{why}");
    assert_eq!((ran.outcome.ok, ran.outcome.failed), (8, 2));
}

#[test]
fn hooks_run_in_the_documented_order() {
    let yaml = "matrix:\n  v: [a]\nsetup: setup\nprepare: prepare {{ repetition }}\n\
                run: run\nconclude: conclude {{ repetition }}\ncleanup: cleanup\nrepetitions: 2\n";
    let ran = run_fake(yaml, 7, ok);
    let calls: Vec<String> =
        ran.calls.iter().map(|c| c.split(' ').take(2).collect::<Vec<_>>().join(" ")).collect();
    let mkdir = calls[0].clone();
    assert!(mkdir.starts_with("mkdir "), "{calls:?}");
    let workdir = format!("rmdir /fake/{}", &mkdir["mkdir ".len()..]);
    let expected = [
        &mkdir,
        "setup",
        "prepare 1",
        "run",
        "conclude 1",
        "prepare 2",
        "run",
        "conclude 2",
        "cleanup",
        &workdir,
    ];
    assert_eq!(calls, expected);
}

#[test]
fn the_adaptive_rule_stops_a_cell_when_it_is_met() {
    // the same wall time every trial: no margin of error, so `min` trials suffice
    let yaml = THREE.replace("repetitions: 4", "repetitions: { min: 5, max: 20, target: 5% }");
    let ran = run_fake(&yaml, 7, ok);
    assert_eq!(ran.records.len(), 15, "{}", ran.records.len());
    // a noisy one runs on
    let ran = run_fake(&yaml, 7, |cmd| {
        use std::sync::atomic::{AtomicU64, Ordering};
        static TRIALS_OF_A: AtomicU64 = AtomicU64::new(0);
        if cmd != "run a" {
            return Scripted::ok(5);
        }
        let n = TRIALS_OF_A.fetch_add(1, Ordering::SeqCst);
        Scripted::ok(if n.is_multiple_of(2) { 50 } else { 5 })
    });
    let of = |v: &str| ran.records.iter().filter(|r| level(r) == v).count();
    assert_eq!((of("b"), of("c")), (5, 5));
    assert!(of("a") > 5, "the noisy cell stopped at min");
}

#[test]
fn warmups_are_recorded_as_warmups() {
    let yaml = THREE.replace("repetitions: 4", "repetitions: 2\nwarmup: 1");
    let ran = run_fake(&yaml, 7, ok);
    for v in ["a", "b", "c"] {
        let warmups: Vec<bool> = ran.records.iter().filter(|r| level(r) == v).map(|r| r.warmup).collect();
        assert_eq!(warmups, [true, false, false], "{v}");
    }
    assert_eq!((ran.outcome.warmups, ran.outcome.ok), (3, 6));
}

/// Which hosts share a machine: those that say so, and every host without ssh (all of
/// them this machine); an ssh host without `machine:` is a machine of its own.
#[test]
fn hosts_share_a_machine_when_they_say_so_or_are_this_one() {
    let yaml = "hosts:\n  dom0: { ssh: root@xen1, machine: xen1 }\n  domu: { ssh: root@guest1, machine: xen1 }\n  \
                other: { ssh: root@h2 }\n  here: {}\n  there: {}\nmatrix:\n  host: [dom0, domu, other, here, there]\n\
                run: echo\n";
    let exp = crate::spec::load_str(std::path::Path::new("experiments/m.yaml"), yaml).unwrap();
    let machine = |h: &str| super::machine_of(&exp, h);
    assert_eq!(machine("dom0"), machine("domu"));
    assert_eq!(machine("here"), machine("there"));
    assert_eq!(machine("here"), machine(crate::plan::LOCAL_HOST));
    let distinct: HashSet<String> = ["dom0", "other", "here"].into_iter().map(machine).collect();
    assert_eq!(distinct.len(), 3, "{distinct:?}");
}
