//! The telemetry summary and its warnings, on stores built in memory.

use super::sides::differ;
use super::warnings::{foreign_write, human};
use super::*;
use crate::analyze::{MemoryStore, summarize_owned, summarize_store};
use crate::store::{Telemetry, Trials};
use crate::summary::{SecondaryStat, Summary, TelemetryDifference};
use vocab::{Better, DIRTY_BEFORE, MeanKind, NOT_CONVERGED, OWN_WRITTEN};

/// The store's records given telemetry (and flags) after the fact, as a run records
/// them, and the summary of it: the same, to the byte, as a report's, which lets go of
/// the trial columns before the comparisons (`summarize_owned`).
fn observed(m: &mut MemoryStore, each: impl Fn(usize, &mut crate::store::TrialRecord)) -> Summary {
    for (i, r) in m.records.iter_mut().enumerate() {
        each(i, r);
    }
    m.snapshot.trials = Trials::from_records(&m.records);
    let summary = summarize_store(&m.exp, &m.plan, &m.snapshot, &[]).unwrap();
    let ((), owned) = summarize_owned(&m.exp, &m.plan, m.snapshot.clone(), |_| ());
    let json = |s: &Summary| serde_json::to_string(s).unwrap();
    assert_eq!(json(&owned.unwrap()), json(&summary), "the report's path gives the same summary");
    summary
}

fn telemetry(sources: &[&str], metrics: &[(&str, f64)]) -> Option<Telemetry> {
    Some(Telemetry {
        sources: sources.iter().map(|s| s.to_string()).collect(),
        metrics: metrics.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
        raw: None,
        offset: None,
    })
}

const DD: &str = "matrix:\n  sync: [none, direct]\nrun: dd if=/dev/zero of=f bs=1M count=2500 {% if sync == 'direct' %}oflag=direct{% endif %}\nparse: dd\nanalysis:\n  compare:\n    - factor: sync\n      baseline: direct\n";

fn dd_store() -> MemoryStore {
    let mut m = MemoryStore::new("dd.yaml", DD);
    m.metric("throughput", "B/s", Better::Higher, MeanKind::Harmonic).session("s1", "local", &[]);
    for v in [2.5e9, 2.4e9, 2.6e9] {
        m.trial(&[("sync", "none")], &[("throughput", v)]);
    }
    for v in [1.0e8, 1.1e8, 0.9e8] {
        m.trial(&[("sync", "direct")], &[("throughput", v)]);
    }
    m
}

/// Seed 002's mistake proven: dd claims 2.5 GB over the trial's second, the disks
/// wrote nothing; the direct dd's disk wrote what it claimed, and is not named.
#[test]
fn the_page_cache_warning_compares_the_claim_with_the_disks() {
    let mut m = dd_store();
    let summary = observed(&mut m, |i, r| {
        let written = if i < 3 { 0.0 } else { r.metrics["throughput"] * r.wall_time };
        let mut metrics = vec![("cpu_user_pct", 10.0 + i as f64), ("cpu_steal_pct", 0.0)];
        if written > 0.0 {
            metrics.push(("disk_written_bytes:vda", written));
            metrics.push(("disk_written_bytes:vda1", written));
        }
        r.telemetry = telemetry(&["cpu", "disks"], &metrics);
    });
    let w: Vec<&Warning> = summary.warnings.iter().filter(|w| w.kind == WarningKind::PageCache).collect();
    assert_eq!(w.len(), 1, "{:?}", summary.warnings);
    assert!(
        w[0].message.contains("sync=none: dd reported 2.50 GB/s but the disks wrote 0 B during the trial"),
        "{}",
        w[0].message
    );
    assert!(!w[0].message.contains("sync=direct"), "{}", w[0].message);
    // the busiest device, not the sum of a disk and its partition
    let direct = summary.telemetry.cells.iter().find(|c| c.label == "sync=direct").unwrap();
    let mean = (1.0e8 + 1.1e8 + 0.9e8) / 3.0;
    assert!((direct.values["disk_written_bytes"].mean - mean).abs() < 1e-3);
    assert_eq!(direct.values["cpu_user_pct"].mean, 14.0, "mean of 13, 14, 15");
    // the two sides differ in what the disks wrote: marked, and listed once
    assert!(direct.values["disk_written_bytes"].differs);
    let d: Vec<&TelemetryDifference> =
        summary.telemetry.differences.iter().filter(|d| d.of.metric == "disk_written_bytes").collect();
    assert_eq!(d.len(), 1, "{:?}", summary.telemetry.differences);
    assert_eq!((d[0].of.baseline.as_str(), d[0].of.level.as_str(), d[0].level_mean), ("direct", "none", 0.0));
    // never a main metric, so never a verdict
    assert!(summary.comparisons.iter().all(|c| c.metric == "throughput"));
}

/// The page cache is looked at in the trial columns before the analysis (they are let
/// go before the comparisons): a cell whose rate the analysis then leaves out (a
/// harmonic mean of a zero) is warned of as not analysed, and not for the page cache.
#[test]
fn a_rate_the_analysis_leaves_out_is_not_warned_of_for_the_page_cache() {
    let mut m = dd_store();
    let summary = observed(&mut m, |i, r| {
        if i == 0 {
            r.metrics.insert("throughput".into(), 0.0);
        }
        let written = if i < 3 { 0.0 } else { r.metrics["throughput"] * r.wall_time };
        let mut metrics = vec![("cpu_user_pct", 10.0)];
        if written > 0.0 {
            metrics.push(("disk_written_bytes:vda", written));
        }
        r.telemetry = telemetry(&["cpu", "disks"], &metrics);
    });
    let kinds: Vec<WarningKind> = summary.warnings.iter().map(|w| w.kind).collect();
    assert!(kinds.contains(&WarningKind::NotAnalysed), "{:?}", summary.warnings);
    assert!(!kinds.contains(&WarningKind::PageCache), "{:?}", summary.warnings);
    // and the same store with the rate analysed is warned of
    let mut m = dd_store();
    let summary = observed(&mut m, |i, r| {
        let written = if i < 3 { 0.0 } else { r.metrics["throughput"] * r.wall_time };
        let mut metrics = vec![("cpu_user_pct", 10.0)];
        if written > 0.0 {
            metrics.push(("disk_written_bytes:vda", written));
        }
        r.telemetry = telemetry(&["cpu", "disks"], &metrics);
    });
    assert!(summary.warnings.iter().any(|w| w.kind == WarningKind::PageCache), "{:?}", summary.warnings);
}

/// Six hundred and twenty-five cells (three batches of [`CELLS_AT_ONCE`]) whose trials
/// lie in rounds, on two hosts in three sessions, with telemetry of varying names and
/// warm-ups between them: each cell's figures are what its own trials' give, summed in
/// log order (to the bit), and what a host wrote earlier in a session counts across
/// cells and batches, warm-ups included (two trials a disk wrote just more than that
/// and 32 MiB beside are named; two just less are not).
#[test]
fn a_store_of_many_cells_is_summed_as_each_cells_own_trials_give() {
    use std::cell::RefCell;
    const MIB: f64 = 1024.0 * 1024.0;
    let levels: Vec<String> = (0..25).map(|i| i.to_string()).collect();
    let yaml = format!("matrix:\n  a: [{0}]\n  b: [{0}]\nrun: \"true\"\n", levels.join(", "));
    let mut m = MemoryStore::new("many.yaml", &yaml);
    m.metric("throughput", "B/s", Better::Higher, MeanKind::Arithmetic).session("s1", "h1", &[]);
    let mut x: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut cells: Vec<(usize, usize)> = (0..25).flat_map(|a| (0..25).map(move |b| (a, b))).collect();
    for _ in 0..4 {
        for k in (1..cells.len()).rev() {
            cells.swap(k, next() as usize % (k + 1));
        }
        for &(a, b) in &cells {
            let (a, b) = (levels[a].as_str(), levels[b].as_str());
            m.trial(&[("a", a), ("b", b)], &[("throughput", 1e6 * (1 + next() % 1000) as f64)]);
        }
    }
    let (labels_near, n) = (["a=0 b=1", "a=11 b=3", "a=17 b=20", "a=24 b=24"], m.records.len());
    let near: Vec<String> = labels_near.iter().map(|l| l.replace(' ', ", ")).collect();
    let label = |r: &crate::store::TrialRecord| format!("a={}, b={}", r.levels["a"], r.levels["b"]);
    let randoms: Vec<u64> = (0..n).map(|_| next()).collect();
    let written: RefCell<HashMap<(String, String), f64>> = RefCell::default();
    let summary = observed(&mut m, |i, r| {
        let z = randoms[i];
        let (host, session) = [("h1", "s1"), ("h2", "s2"), ("h1", "s3")][(z % 3) as usize];
        (r.host, r.session) = (host.to_owned(), session.to_owned());
        r.warmup = i % 17 == 5;
        let own = ((z >> 8) % 4) as f64 * MIB;
        let mut metrics = vec![("cpu_user_pct", ((z >> 16) % 10_000) as f64 / 7.0)];
        if !z.is_multiple_of(5) {
            metrics.push(("cpu_steal_pct", ((z >> 24) % 20) as f64));
        }
        let mut earlier = written.borrow_mut();
        let carried = earlier.entry((host.to_owned(), session.to_owned())).or_default();
        // the last trial of each named cell: just over or under what explains it
        let last = !r.warmup && near.contains(&label(r)) && r.repetition == 4;
        let disk = if last {
            let over = if ["a=0, b=1", "a=17, b=20"].contains(&label(r).as_str()) { 0.5 } else { -0.5 };
            own + *carried + 32.0 * MIB + over * MIB
        } else {
            ((z >> 32) % 8) as f64 * MIB
        };
        if !z.is_multiple_of(7) || last {
            metrics.push(("disk_written_bytes:vda", disk));
        }
        if !z.is_multiple_of(4) || last {
            metrics.push((OWN_WRITTEN, own));
            metrics.push((DIRTY_BEFORE, 1e15));
        }
        *carried += if !z.is_multiple_of(4) || last { own } else { 0.0 };
        r.telemetry = telemetry(&["cpu", "disks"], &metrics);
    });
    assert!(m.plan.cells.len() > 2 * CELLS_AT_ONCE);

    // each cell's own trials, in log order
    let mut of_cell: HashMap<String, Vec<&crate::store::TrialRecord>> = HashMap::new();
    for r in m.records.iter().filter(|r| !r.warmup) {
        of_cell.entry(label(r).replace(", ", " ")).or_default().push(r);
    }
    assert_eq!(summary.telemetry.cells.len(), m.plan.cells.len());
    for cell in &summary.telemetry.cells {
        let trials = &of_cell[&cell.label];
        assert_eq!((cell.analysed, cell.trials), (trials.len(), trials.len()), "{}", cell.label);
        let figure = |name: &str| -> Vec<f64> {
            trials
                .iter()
                .filter_map(|r| {
                    let t = &r.telemetry.as_ref().unwrap().metrics;
                    match name {
                        "disk_written_bytes" => Some(
                            t.iter()
                                .filter(|(k, _)| k.starts_with("disk_written_bytes:"))
                                .map(|(_, v)| *v)
                                .fold(0.0, f64::max),
                        ),
                        _ => t.get(name).copied(),
                    }
                })
                .collect()
        };
        for name in ["cpu_user_pct", "cpu_steal_pct", "disk_written_bytes", OWN_WRITTEN] {
            let values = figure(name);
            let Some(got) = cell.values.get(name) else {
                assert!(values.is_empty(), "{} {name}", cell.label);
                continue;
            };
            let want = stat(&values);
            assert_eq!(
                (got.n, got.mean.to_bits(), got.min.to_bits(), got.max.to_bits()),
                (want.n, want.mean.to_bits(), want.min.to_bits(), want.max.to_bits()),
                "{} {name}",
                cell.label
            );
        }
    }
    let foreign = messages(&summary, WarningKind::ForeignWrites);
    assert_eq!(foreign.len(), 1, "{:?}", summary.warnings);
    let named: Vec<&str> =
        labels_near.into_iter().filter(|l| foreign[0].contains(&format!("{l} ("))).collect();
    assert_eq!(named, ["a=0 b=1", "a=17 b=20"], "{}", foreign[0]);
}

/// The messages of the summary's warnings of one kind.
fn messages(summary: &Summary, kind: WarningKind) -> Vec<&str> {
    summary.warnings.iter().filter(|w| w.kind == kind).map(|w| w.message.as_str()).collect()
}

/// The figures of a list of values, as the pass's sums must give them.
fn stat(values: &[f64]) -> SecondaryStat {
    SecondaryStat {
        n: values.len(),
        mean: values.iter().sum::<f64>() / values.len() as f64,
        min: values.iter().copied().fold(f64::INFINITY, f64::min),
        max: values.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        differs: false,
    }
}

/// Without disk telemetry nothing is claimed: no snapshot is no proof.
#[test]
fn no_disk_telemetry_no_page_cache_warning() {
    let mut m = dd_store();
    let summary = observed(&mut m, |_, r| r.telemetry = telemetry(&["cpu"], &[("cpu_user_pct", 5.0)]));
    assert!(summary.warnings.iter().all(|w| w.kind != WarningKind::PageCache), "{:?}", summary.warnings);
}

/// Steal is warned of per host from 5 %, in the words of what steal is there: in a dom0
/// with no guest running it is Xen's own work or the machine under Xen (the lab's
/// dom0 under QEMU showed steal with no guest at all).
#[test]
fn steal_is_warned_about_per_host_from_five_percent() {
    let yaml =
        "hosts:\n  domu: {}\n  dom0: {}\n  box: {}\nmatrix:\n  host: [domu, dom0, box]\nrun: \"true\"\n";
    let mut m = MemoryStore::new("s.yaml", yaml);
    for (session, host, role) in [("s1", "domu", "domU"), ("s2", "dom0", "dom0"), ("s3", "box", "")] {
        let facts: &[(&str, &str)] =
            if role.is_empty() { &[] } else { &[("hypervisor", "xen"), ("xen_role", role)] };
        m.session(session, host, facts);
        for _ in 0..3 {
            m.trial(&[("host", host)], &[("wall_time", 1.0)]);
        }
    }
    let summary = observed(&mut m, |i, r| {
        let steal = [10.0, 12.0, 14.0, 6.0, 6.0, 6.0, 4.9, 4.9, 4.9][i];
        r.telemetry = telemetry(&["cpu"], &[("cpu_steal_pct", steal)]);
    });
    let w = messages(&summary, WarningKind::Steal);
    assert_eq!(
        w,
        [
            "steal time was 6 % during the dom0 trials (mean of 3 trials, at most 6 %): in a Xen dom0, Xen gave \
             the dom0's CPUs to something else: other domains if any ran, else Xen's own work or the machine \
             under Xen (an emulator such as QEMU, or another hypervisor)",
            "steal time was 12 % during the domu trials (mean of 3 trials, at most 14 %): in a Xen guest, Xen \
             gave its CPUs to other domains (other guests or the dom0)",
        ]
    );
}

/// A tool's own "not converged" reaches the cell and the comparisons it is in.
#[test]
fn not_converged_trials_mark_their_cell_and_comparisons() {
    let mut m = dd_store();
    let summary = observed(&mut m, |i, r| {
        if i == 4 {
            r.flags = vec![NOT_CONVERGED.to_string()];
        }
    });
    let cell = summary.telemetry.cells.iter().find(|c| c.not_converged > 0).unwrap();
    assert_eq!(
        (cell.label.as_str(), cell.not_converged, cell.analysed, cell.trials),
        ("sync=direct", 1, 3, 0)
    );
    assert_eq!(summary.telemetry.not_converged.len(), 1);
    assert_eq!(summary.telemetry.not_converged[0].of.metric, "throughput");
    let w = summary.warnings.iter().find(|w| w.kind == WarningKind::NotConverged).unwrap();
    assert!(w.message.contains("sync=direct (1 of 3 trials)"), "{}", w.message);
}

#[test]
fn human_numbers() {
    assert_eq!(human(2.5e9, "B/s"), "2.50 GB/s");
    assert_eq!(human(0.0, "B"), "0 B");
    assert_eq!(human(104_857_600.0, "B"), "105 MB");
    assert_eq!(human(512.0, "B"), "512 B");
}

#[test]
fn sides_differ_only_apart_and_beyond_the_threshold() {
    let s = |min: f64, mean: f64, max: f64| SecondaryStat { n: 3, mean, min, max, differs: false };
    assert!(differ(&s(10.0, 12.0, 14.0), &s(0.0, 0.5, 1.0), "%", 0.05));
    assert!(!differ(&s(10.0, 12.0, 14.0), &s(13.0, 15.0, 17.0), "%", 0.05), "ranges overlap");
    assert!(!differ(&s(0.1, 0.2, 0.3), &s(0.5, 0.6, 0.7), "%", 0.05), "less than a point");
    assert!(differ(&s(0.1, 0.2, 0.3), &s(0.5, 0.6, 0.7), "B", 0.05));
    assert!(!differ(&s(100.0, 100.0, 100.0), &s(101.0, 101.0, 101.0), "B", 0.05), "1 % apart");
}

/// The rule of `foreign_writes` on figures worked out by hand: 32 MiB, or the trial's
/// own bytes again, beyond its own bytes and what earlier trials may have left dirty.
#[test]
fn foreign_writes_need_clearly_more_than_the_experiment_explains() {
    const MIB: f64 = 1024.0 * 1024.0;
    // a trial's figures by name, as its record has them, read as the pass reads them
    let foreign_write = |values: &Vec<(&str, f64)>, carried: f64| {
        let get = |name: &str| values.iter().find(|(k, _)| *k == name).map(|&(_, v)| v);
        let devices = values.iter().filter_map(|&(k, v)| Some((k.strip_prefix("disk_written_bytes:")?, v)));
        foreign_write(get(OWN_WRITTEN)?, get(DIRTY_BEFORE), devices, carried)
    };
    let values = |own: f64, dirty: f64, disk: f64| {
        vec![
            (OWN_WRITTEN, own),
            (DIRTY_BEFORE, dirty),
            ("disk_written_bytes:sda", disk),
            ("disk_written_bytes:sdb", 1.0),
        ]
    };
    // 1 MiB of its own: the disk must write more than 1 + 32 MiB
    assert!(foreign_write(&values(MIB, 0.0, 33.0 * MIB), 0.0).is_none());
    let hit = foreign_write(&values(MIB, 0.0, 34.0 * MIB), 0.0).unwrap();
    assert_eq!((hit.0.as_str(), hit.1, hit.2), ("sda", 34.0 * MIB, MIB));
    // 256 MiB of its own: more than twice that (a journal of the data), whatever the floor
    assert!(foreign_write(&values(256.0 * MIB, 0.0, 511.0 * MIB), 0.0).is_none());
    assert!(foreign_write(&values(256.0 * MIB, 0.0, 513.0 * MIB), 0.0).is_some());
    // an earlier trial's 256 MiB written back now: explained up to the dirty pages
    assert!(foreign_write(&values(MIB, 300.0 * MIB, 280.0 * MIB), 256.0 * MIB).is_none());
    assert!(foreign_write(&values(MIB, 100.0 * MIB, 280.0 * MIB), 256.0 * MIB).is_some());
    // dirty pages nobody of the experiment wrote explain nothing
    assert!(foreign_write(&values(MIB, 2000.0 * MIB, 280.0 * MIB), 0.0).is_some());
    // not measured (a remote host, a gang): nothing said
    let mut remote = values(MIB, 0.0, 900.0 * MIB);
    remote.retain(|(k, _)| *k != OWN_WRITTEN);
    assert!(foreign_write(&remote, 0.0).is_none());
}

/// The claim behind [`SKEW_OF_THRESHOLD`], by simulation: members that share a resource
/// (alone at rate 1, k at once at 1/k each), each with the same work, started at the
/// given offsets; every member's throughput, and so their sum, is overstated against a
/// common start by the skew over the wall time — exactly for two members.
#[test]
fn skew_overstates_a_shared_throughput_by_its_share_of_the_wall_time() {
    // event by event: at each step the running members share the rate equally
    fn finish(starts: &[f64], work: f64) -> Vec<f64> {
        let n = starts.len();
        let (mut left, mut end) = (vec![work; n], vec![f64::NAN; n]);
        let mut now = 0.0;
        while end.iter().any(|e| e.is_nan()) {
            let running: Vec<usize> = (0..n).filter(|&i| end[i].is_nan() && starts[i] <= now).collect();
            let next_start = starts.iter().copied().filter(|&s| s > now).fold(f64::INFINITY, f64::min);
            let rate = 1.0 / running.len().max(1) as f64;
            let first_done = running.iter().map(|&i| left[i] / rate).fold(f64::INFINITY, f64::min);
            let step = first_done.min(next_start - now);
            for &i in &running {
                left[i] -= rate * step;
                if left[i] <= 1e-12 {
                    end[i] = now + step;
                }
            }
            now += step;
        }
        (0..n).map(|i| end[i] - starts[i]).collect()
    }
    let work = 10.0;
    let together: f64 = finish(&[0.0, 0.0], work).iter().map(|t| work / t).sum();
    for s in [0.05, 0.2, 0.5, 1.0] {
        let walls = finish(&[0.0, s], work);
        let sum: f64 = walls.iter().map(|t| work / t).sum();
        let wall = walls.iter().copied().fold(0.0, f64::max);
        let overstated = sum / together - 1.0;
        assert!((overstated - s / wall).abs() < 1e-9, "skew {s}: {overstated} vs {}", s / wall);
    }
    // three members: of the order of s / T, at most the members' offsets summed over T
    let together: f64 = finish(&[0.0, 0.0, 0.0], work).iter().map(|t| work / t).sum();
    for starts in [[0.0, 0.1, 0.2], [0.0, 0.2, 0.2], [0.0, 0.0, 0.2]] {
        let walls = finish(&starts, work);
        let sum: f64 = walls.iter().map(|t| work / t).sum();
        let wall = walls.iter().copied().fold(0.0, f64::max);
        let overstated = sum / together - 1.0;
        assert!(
            overstated > 0.5 * 0.2 / wall && overstated <= starts.iter().sum::<f64>() / wall + 1e-9,
            "{starts:?}"
        );
    }
}

/// The skew warning from half the practical threshold of the wall time: at 5 %, a
/// mean skew of 2.5 % of the wall time warns, 2.4 % does not.
#[test]
fn gang_skew_is_warned_about_from_half_the_threshold() {
    let yaml = "hosts:\n  a: {}\n  b: {}\ngangs:\n  g:\n    hosts: [a, b]\nmatrix:\n  host: [g]\nrun: \"true\"\nanalysis: { threshold: 5% }\n";
    for (skew, warned) in [(0.025, true), (0.024, false)] {
        let mut m = MemoryStore::new("g.yaml", yaml);
        m.session("s1", "g", &[]);
        for _ in 0..3 {
            m.trial(&[("host", "g")], &[("wall_time", 1.0)]);
        }
        let summary = observed(&mut m, |_, r| {
            r.wall_time = 1.0;
            r.telemetry = telemetry(&[], &[(GANG_SKEW, skew)]);
        });
        let w: Vec<&Warning> = summary.warnings.iter().filter(|w| w.kind == WarningKind::GangSkew).collect();
        assert_eq!(w.len(), usize::from(warned), "skew {skew}: {w:?}");
        if warned {
            assert!(
                w[0].message.contains("(2.5 %)")
                    && w[0].message.contains("host=g (the members started 25.0 ms apart"),
                "{}",
                w[0].message
            );
        }
    }
}
