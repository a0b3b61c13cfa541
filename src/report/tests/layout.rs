//! How the report lays out what it shows: a group's values in start order, the rows and
//! axis of a plot, pending cells grouped by why they wait, an interval cut at 0.

use super::*;

/// Trials are logged as they end, and hosts run in parallel: a group's values come in the
/// order the trials started, log order breaking ties, trials of unknown start last.
#[test]
fn groups_hold_their_values_in_start_order() {
    let mut f = dd_store();
    let cell = f.records[0].cell.clone();
    let of_cell: Vec<usize> = (0..f.records.len())
        .filter(|&i| f.records[i].cell == cell && !f.records[i].warmup && f.records[i].status == Status::Ok)
        .collect();
    assert!(of_cell.len() >= 4, "{of_cell:?}");
    // the log: the 1st trial started last, the 2nd has no start time, the 3rd and 4th tie
    let (a, b, c, d) = (of_cell[0], of_cell[1], of_cell[2], of_cell[3]);
    f.records[a].started_at = Some("2030-01-01T00:00:00Z".into());
    f.records[b].started_at = None;
    f.records[d].started_at = f.records[c].started_at.clone();
    for (i, r) in f.records.iter_mut().enumerate() {
        r.metrics.insert("throughput".into(), i as f64);
    }
    f.snapshot.trials = crate::store::Trials::from_records(&f.records);
    let table = crate::analyze::Table::build(&f.snapshot.trials, &f.plan).unwrap();
    let groups = table.groups().unwrap();
    let throughput = f.snapshot.trials.names.find("throughput").unwrap();
    let group = groups
        .iter()
        .find(|g| f.plan.cells[g.cell].id.to_string() == cell && g.metric == throughput)
        .unwrap();
    let mut expected: Vec<f64> = of_cell[2..].iter().map(|&i| i as f64).collect();
    expected.extend([a as f64, b as f64]);
    assert_eq!(group.values, expected);
    assert_eq!(group.rows.started.last(), Some(&crate::store::Started::NONE));
}

/// A row is labelled by the levels that differ between the rows, the shared ones are said
/// once under the title, and a long label widens the image instead of running off it
/// (seed 002's labels, 80 characters, had lost their start).
#[test]
fn plot_rows_name_what_differs_and_long_labels_fit_the_image() {
    let mut f = MemoryStore::new(
        "experiments/long.yaml",
        r#"matrix:
  kernel_flavour_of_the_machine: [xen-paravirtualised-dom0, bare-metal-reference]
  dom0_memory_limit_in_megabytes: [unlimited-memory-for-dom0]
  block_size: [1k]
run: "dd if=/dev/zero of={{ workdir }}/z bs={{ block_size }} count=1 conv=fdatasync"
parse: dd
metrics:
  throughput: { better: higher }
repetitions: 3
analysis:
  compare:
    - { factor: kernel_flavour_of_the_machine, baseline: bare-metal-reference }
"#,
    );
    f.metric("throughput", "B/s", Better::Higher, MeanKind::Harmonic);
    f.session("s1", "bench1", &[("hostname", "bench1")]);
    for (kernel, values) in [
        ("xen-paravirtualised-dom0", [2.0e8, 2.1e8, 2.05e8]),
        ("bare-metal-reference", [5.0e8, 5.1e8, 4.9e8]),
    ] {
        for v in values {
            let levels = [
                ("kernel_flavour_of_the_machine", kernel),
                ("dom0_memory_limit_in_megabytes", "unlimited-memory-for-dom0"),
                ("block_size", "1k"),
            ];
            f.trial(&levels, &[("throughput", v)]);
        }
    }
    let summary = summarize_store(&f.exp, &f.plan, &f.snapshot, &[]).unwrap();
    let plots = plots(&f.exp, &f.plan, &summary).unwrap();
    let svg = plots[0].svg.as_ref().unwrap();
    let shared = "every row: dom0_memory_limit_in_megabytes=unlimited-memory-for-dom0 block_size=1k";
    assert!(svg.contains(shared), "{svg}");
    // the row labels: right-aligned texts, (x where they end, text)
    let lines: Vec<&str> = svg.lines().collect();
    let rows: Vec<(u32, &str)> = lines
        .windows(2)
        .filter(|w| w[0].contains(r#"text-anchor="end""#))
        .map(|w| (w[0].split("x=\"").nth(1).unwrap().split('"').next().unwrap().parse().unwrap(), w[1]))
        .collect();
    let labels: Vec<&str> = rows.iter().map(|r| r.1).collect();
    assert_eq!(
        labels,
        [
            "kernel_flavour_of_the_machine=xen-paravirtualised-dom0",
            "kernel_flavour_of_the_machine=bare-metal-reference"
        ]
    );
    // each label ends where the values start, and starts inside the image at the
    // estimate's 7 units a character
    let width: u32 = svg.split('"').nth(1).unwrap().parse().unwrap();
    let label_end = rows[0].0;
    assert!(label_end >= labels[0].len() as u32 * 7, "label ends at {label_end}");
    assert!(width >= label_end + 430, "width {width}, labels to {label_end}");
}

/// Cells that wait for the same reason are one line, with their count; a reason of its
/// own keeps the cell's own line (seed 002's 36 pending cells were 36 lines of five
/// reasons).
#[test]
fn pending_cells_are_grouped_by_why_they_wait() {
    let f = dd_store();
    let pending = |cell: &str, reason: &str| Pending { cell: cell.to_owned(), reason: reason.to_owned() };
    let (_, markdown) = report(
        &f,
        &[
            pending("bs=1M sync=direct", "needs kernel=xen; this host is kernel=kvm"),
            pending("bs=8M sync=none", "not run yet: `margin run` on this host runs it"),
            pending("bs=4M sync=direct", "needs kernel=xen; this host is kernel=kvm"),
        ],
    );
    let section = markdown.split("## Pending cells").nth(1).unwrap().split("## ").next().unwrap();
    let lines: Vec<&str> = section.lines().filter(|l| l.starts_with("- ")).collect();
    assert_eq!(
        lines,
        [
            "- needs kernel=xen; this host is kernel=kvm (2 cells): bs=1M sync=direct; bs=4M sync=direct",
            "- bs=8M sync=none: not run yet: `margin run` on this host runs it",
        ]
    );
}

/// CPU time of trials shorter than the kernel's tick: most read 0, a few a tick. The
/// symmetric interval of their mean reached below 0 (`[-166.2, 1341]` µs); a time is never negative,
/// so the interval is cut at 0 and the table says why. A unitless score is not cut.
#[test]
fn an_interval_of_a_quantity_that_is_never_negative_stops_at_0() {
    let yaml = "matrix: { v: [a] }\nrun: \"true\"\n";
    let mut f = MemoryStore::new("experiments/ticks.yaml", yaml);
    f.metric("user_time", "s", Better::Lower, MeanKind::Arithmetic);
    f.metric("score", "", Better::Higher, MeanKind::Arithmetic);
    for i in 0..12 {
        let tick = if i % 5 == 0 { 0.004 } else { 0.0 };
        f.trial(&[("v", "a")], &[("user_time", tick), ("score", tick * 1000.0 - 0.5)]);
    }
    let (summary, markdown) = report(&f, &[]);
    let cell = |m: &str| summary.cells.iter().find(|c| c.metric == m).unwrap();
    let time = cell("user_time");
    assert_eq!(time.ci_low, Some(0.0), "{time:?}");
    assert!(time.ci_high.unwrap() > time.mean);
    assert!(cell("score").ci_low.unwrap() < -0.5, "a score may be negative: {:?}", cell("score"));
    assert!(markdown.contains("An interval that reached below 0 is cut at 0"), "{markdown}");
    assert!(markdown.contains("CPU time is counted in the kernel's clock ticks"), "{markdown}");
}

/// Rates spanning more than 10× get a log axis, so that the slow cells are not squashed
/// against its start; a cell of two regimes shows each regime's mean and the boundary
/// (the default experiment's writes span 60 MB/s to 6 GB/s).
#[test]
fn a_plot_of_values_spanning_decades_is_on_a_log_axis_and_shows_regimes() {
    let yaml =
        "matrix: { bs: [4k, 1M] }\nrun: \"true\"\nparse: dd\nmetrics:\n  throughput: { better: higher }\n";
    let mut f = MemoryStore::new("experiments/span.yaml", yaml);
    f.metric("throughput", "B/s", Better::Higher, MeanKind::Harmonic);
    for i in 0..10 {
        let wobble = 1.0 + 0.01 * (i % 3) as f64;
        f.trial(&[("bs", "4k")], &[("throughput", 6.0e7 * wobble)]);
        // page cache or not: two regimes
        let fast = if i % 3 == 0 { 4.0e8 } else { 3.0e9 };
        f.trial(&[("bs", "1M")], &[("throughput", fast * wobble)]);
    }
    let summary = summarize_store(&f.exp, &f.plan, &f.snapshot, &[]).unwrap();
    assert!(summary.cells.iter().any(|c| c.regimes.is_some()), "the 1M cell is two regimes");
    let drawn = plots(&f.exp, &f.plan, &summary).unwrap();
    let svg = drawn[0].svg.as_ref().unwrap();
    assert!(svg.contains("trials, mean and confidence interval, log scale"), "{svg}");
    // the regimes' means: hollow grey circles (the trials are filled)
    assert!(svg.contains(r##"stroke="#5A5A5A""##) && svg.contains(r#"fill="none""#), "{svg}");

    // within one decade the axis stays linear
    let mut f = MemoryStore::new("experiments/narrow.yaml", yaml);
    f.metric("throughput", "B/s", Better::Higher, MeanKind::Harmonic);
    for i in 0..5 {
        f.trial(&[("bs", "4k")], &[("throughput", 6.0e7 + 1e5 * i as f64)]);
        f.trial(&[("bs", "1M")], &[("throughput", 3.0e8 + 1e6 * i as f64)]);
    }
    let summary = summarize_store(&f.exp, &f.plan, &f.snapshot, &[]).unwrap();
    let svg = plots(&f.exp, &f.plan, &summary).unwrap()[0].svg.clone().unwrap();
    assert!(!svg.contains("log scale"), "{svg}");
}

/// margin's own measures come after the experiment's metrics, folded: the default
/// experiment's report opened on four metric tables, three of them margin's.
/// An experiment with no metric of its own keeps wall_time in view.
#[test]
fn margins_own_measures_are_folded_after_the_experiments_metrics() {
    let yaml =
        "matrix: { bs: [4k, 1M] }\nrun: \"true\"\nparse: dd\nmetrics:\n  throughput: { better: higher }\n";
    let mut f = MemoryStore::new("experiments/fold.yaml", yaml);
    f.metric("throughput", "B/s", Better::Higher, MeanKind::Harmonic);
    f.metric("wall_time", "s", Better::Lower, MeanKind::Arithmetic);
    for i in 0..4 {
        for bs in ["4k", "1M"] {
            f.trial(
                &[("bs", bs)],
                &[("throughput", 1e8 + 1e6 * i as f64), ("wall_time", 0.1 + 0.001 * i as f64)],
            );
        }
    }
    let (_, markdown) = report(&f, &[]);
    let at = |s: &str| markdown.find(s).unwrap_or_else(|| panic!("no {s:?} in {markdown}"));
    assert!(at("### throughput") < at("<details>"));
    assert!(at("<summary>margin's own measures of each trial: wall_time</summary>") < at("### wall_time"));
    assert!(at("### wall_time") < at("</details>"));

    let mut f = MemoryStore::new("experiments/own.yaml", "matrix: { bs: [4k] }\nrun: \"true\"\n");
    f.metric("wall_time", "s", Better::Lower, MeanKind::Arithmetic);
    for i in 0..3 {
        f.trial(&[("bs", "4k")], &[("wall_time", 0.1 + 0.001 * i as f64)]);
    }
    let (_, markdown) = report(&f, &[]);
    assert!(markdown.contains("### wall_time") && !markdown.contains("<details>"), "{markdown}");
}
