//! The warnings a Xen user meets, made true, through the real binary: no
//! page-cache warning for a dd that syncs, the facts that define an environment factor's
//! levels are no confound while its memory is one, and a trend is looked for within
//! sessions at 1 % a cell.

use std::path::Path;

use super::{as_a_user, stderr, stdout};

/// `margin run FILE ARGS` in `dir` as a user runs it, with `env`; it must succeed.
fn run(dir: &Path, file: &str, args: &[&str], env: &[(&str, &str)]) {
    let out = as_a_user(dir).args(["run", file]).args(args).envs(env.iter().copied()).output().unwrap();
    assert!(out.status.success(), "{}\n{}", stdout(&out), stderr(&out));
}

/// The warnings of `kind` in a store's summary.json.
fn warnings(store: &Path, kind: &str) -> Vec<String> {
    let text = std::fs::read_to_string(store.join("summary.json")).unwrap();
    let summary: serde_json::Value = serde_json::from_str(&text).unwrap();
    let all = summary["warnings"].as_array().unwrap();
    all.iter().filter(|w| w["kind"] == kind).map(|w| w["message"].as_str().unwrap().to_owned()).collect()
}

/// A real dd of 8 MiB, far below twice this machine's memory: without a sync flag the
/// page cache can hold it and the report says so; with `conv=fdatasync` its rate is the
/// disk's, the file flushed before dd ends, and no page-cache warning is given.
#[test]
fn a_dd_that_syncs_gets_no_page_cache_warning() {
    let dir = tempfile::tempdir().unwrap();
    let yaml = "matrix:\n  sync: [none, fdatasync]\n\
                run: dd if=/dev/zero of=f.bin bs=1M count=8{% if sync == 'fdatasync' %} conv=fdatasync{% endif %}\n\
                parse: dd\nrepetitions: 3\nmonitor: none\n";
    std::fs::write(dir.path().join("dd.yaml"), yaml).unwrap();
    run(dir.path(), "dd.yaml", &[], &[]);
    let store = dir.path().join("reports/dd");
    let small = warnings(&store, "small_test_file");
    assert_eq!(small.len(), 1, "{small:?}");
    assert!(small[0].contains("sync=none: dd writes 0.01 GiB on local with "), "{}", small[0]);
    assert!(!small[0].contains("sync=fdatasync"), "{}", small[0]);
    let unsynced = warnings(&store, "dd_without_sync");
    assert!(unsynced.len() == 1 && unsynced[0].ends_with(": sync=none"), "{unsynced:?}");
}

/// One machine booted bare, then as a Xen dom0 (the fact fixtures under
/// `MARGIN_SYSROOT`, as the fact tests read them): what makes a dom0 a dom0 — the
/// hypervisor, the Xen role, version and command line, dom0_mem — is the factor, no
/// confound; the dom0's 2 GiB against the bare machine's 8 GiB is one, on its own line.
#[test]
fn the_facts_that_define_a_boot_are_no_confound_and_its_memory_is_one() {
    let dir = tempfile::tempdir().unwrap();
    let yaml = "matrix:\n  kernel: [bare, xen]\n\
                environment:\n  kernel: { fact: hypervisor, map: { xen: xen, none: bare } }\n\
                run: 'true'\nrepetitions: 3\nmonitor: none\n\
                analysis:\n  compare: [{ factor: kernel, baseline: bare }]\n";
    std::fs::write(dir.path().join("boots.yaml"), yaml).unwrap();
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/sysroot");
    for tree in ["bare", "xen-dom0"] {
        let root = fixtures.join(tree);
        run(dir.path(), "boots.yaml", &[], &[("MARGIN_SYSROOT", root.to_str().unwrap())]);
    }
    let differ = warnings(&dir.path().join("reports/boots"), "hosts_differ");
    let [facts, resources] = &differ[..] else { panic!("two lines: {differ:#?}") };
    for defining in
        ["hypervisor", "xen_role", "xen_version", "xen_cmdline", "dom0_mem", "xl_info", "xl_vcpu_list"]
    {
        assert!(!facts.contains(defining), "{defining}: {facts}");
    }
    assert!(facts.starts_with("kernel: the compared machines differ in more than the factor"), "{facts}");
    assert!(resources.contains("xen vs bare: memory 2.00 GiB vs 8.00 GiB"), "{resources}");
}

/// Sixty steady cells and one that rises with its repetition, run in two sessions of 5
/// trials a cell, the second shifted far up (boots that differ). The earlier flag,
/// Spearman over all ten trials at 5 %, read the shift as a trend in every cell. Within
/// sessions the steady cells have none: at 1 % a cell, 2 or fewer of 60 are flagged in
/// 98 % of such runs (their values, a sha256 of the cell and the repetition, are fixed:
/// the test gives the same every time); the rising one is flagged.
#[test]
fn steady_cells_across_two_sessions_are_not_said_to_drift_and_a_rising_one_is() {
    let dir = tempfile::tempdir().unwrap();
    let cells: Vec<String> = (1..=60).map(|c| c.to_string()).chain(["rise".to_owned()]).collect();
    let yaml = format!(
        "matrix:\n  c: [{}]\n\
         run: \"{{% if c == 'rise' %}}v={{{{ repetition }}}}{{% else %}}v=$((0x$(echo {{{{ c }}}} {{{{ repetition }}}} | sha256sum | cut -c1-8))){{% endif %}}; echo value $(( v + $(cat {}/offset) ))\"\n\
         metrics:\n  value: {{ regex: 'value ([0-9]+)' }}\nrepetitions: 5\nmonitor: none\n",
        cells.join(", "),
        dir.path().display()
    );
    std::fs::write(dir.path().join("steady.yaml"), yaml).unwrap();
    std::fs::write(dir.path().join("offset"), "0").unwrap();
    run(dir.path(), "steady.yaml", &[], &[]);
    std::fs::write(dir.path().join("offset"), "100000000000").unwrap();
    run(dir.path(), "steady.yaml", &["--repetitions", "10"], &[]);
    let trend = warnings(&dir.path().join("reports/steady"), "trend");
    let [only] = &trend[..] else { panic!("one trend warning: {trend:#?}") };
    assert!(only.contains("drifts across the repetitions within a session"), "{only}");
    let flagged: Vec<&str> = only.split("; ").collect();
    assert!(flagged.len() <= 3, "{only}");
    assert!(
        flagged.iter().any(|c| c.contains("c=rise (Spearman ρ = 1.00 within each of 2 sessions, p = 0.0")),
        "{only}"
    );
}
