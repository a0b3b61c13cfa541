//! Expansion tests: GitHub's own include/exclude examples, and the laws of the matrix.

use std::collections::{BTreeMap, HashSet};
use std::path::Path;

use proptest::prelude::*;

use super::{DEFAULT_MAX_CELLS, Plan, expand};
use crate::spec::load_str;

fn plan(yaml: &str) -> Plan {
    let exp = load_str(Path::new("t.yaml"), yaml).unwrap_or_else(|d| panic!("{d}"));
    expand(&exp, DEFAULT_MAX_CELLS).unwrap_or_else(|d| panic!("{d}"))
}

/// Each cell as `k=v` pairs in the cell's key order.
fn cells(p: &Plan) -> Vec<String> {
    p.cells.iter().map(|c| p.label(c)).collect()
}

#[test]
fn last_factor_varies_fastest() {
    // GitHub's first example: jobs are created in this order.
    let p = plan("matrix:\n  version: [10, 12, 14]\n  os: [ubuntu-latest, windows-latest]\nrun: echo\n");
    assert_eq!(
        cells(&p),
        [
            "version=10 os=ubuntu-latest",
            "version=10 os=windows-latest",
            "version=12 os=ubuntu-latest",
            "version=12 os=windows-latest",
            "version=14 os=ubuntu-latest",
            "version=14 os=windows-latest",
        ]
    );
}

#[test]
fn github_include_example_fruit_and_animals() {
    // "Example: Expanding configurations" in GitHub's matrix documentation: original
    // values are never overwritten, added ones may be; an entry that fits no original
    // combination becomes a new one, and new ones are not extended by later entries.
    let p = plan(
        r#"
matrix:
  fruit: [apple, pear]
  animal: [cat, dog]
  include:
    - color: green
    - color: pink
      animal: cat
    - fruit: apple
      shape: circle
    - fruit: banana
    - fruit: banana
      animal: cat
run: echo
"#,
    );
    assert_eq!(
        cells(&p),
        [
            "fruit=apple animal=cat color=pink shape=circle",
            "fruit=apple animal=dog color=green shape=circle",
            "fruit=pear animal=cat color=pink",
            "fruit=pear animal=dog color=green",
            "fruit=banana",
            "fruit=banana animal=cat",
        ]
    );
    let added: Vec<bool> = p.cells.iter().map(|c| c.added).collect();
    assert_eq!(added, [false, false, false, false, true, true]);
}

#[test]
fn github_include_extends_one_combination() {
    let p = plan(
        r#"
matrix:
  os: [windows-latest, ubuntu-latest]
  node: [14, 16]
  include:
    - os: windows-latest
      node: 16
      npm: 6
run: echo
"#,
    );
    assert_eq!(
        cells(&p),
        [
            "os=windows-latest node=14",
            "os=windows-latest node=16 npm=6",
            "os=ubuntu-latest node=14",
            "os=ubuntu-latest node=16",
        ]
    );
}

#[test]
fn github_include_only_matrix() {
    let p = plan(
        r#"
matrix:
  include:
    - site: production
      datacenter: site-a
    - site: staging
      datacenter: site-b
run: echo {{ site }}
"#,
    );
    assert_eq!(cells(&p), ["site=production datacenter=site-a", "site=staging datacenter=site-b"]);
}

#[test]
fn github_exclude_example() {
    // "Example: Excluding configurations": 12 combinations, a full match removes one,
    // a partial match removes both environments of windows-latest/16.
    let p = plan(
        r#"
matrix:
  os: [macos-latest, windows-latest]
  version: [12, 14, 16]
  environment: [staging, production]
  exclude:
    - os: macos-latest
      version: 12
      environment: production
    - os: windows-latest
      version: 16
run: echo
"#,
    );
    assert_eq!(
        cells(&p),
        [
            "os=macos-latest version=12 environment=staging",
            "os=macos-latest version=14 environment=staging",
            "os=macos-latest version=14 environment=production",
            "os=macos-latest version=16 environment=staging",
            "os=macos-latest version=16 environment=production",
            "os=windows-latest version=12 environment=staging",
            "os=windows-latest version=12 environment=production",
            "os=windows-latest version=14 environment=staging",
            "os=windows-latest version=14 environment=production",
        ]
    );
}

#[test]
fn exclude_applies_before_include() {
    // An include matching only an excluded combination adds it back as a new cell.
    let p = plan(
        r#"
matrix:
  kernel: [xen, bare]
  pin: [pinned, floating]
  exclude:
    - { kernel: bare, pin: pinned }
  include:
    - { kernel: bare, pin: pinned, note: again }
run: echo
"#,
    );
    assert_eq!(
        cells(&p),
        [
            "kernel=xen pin=pinned",
            "kernel=xen pin=floating",
            "kernel=bare pin=floating",
            "kernel=bare pin=pinned note=again",
        ]
    );
}

#[test]
fn zipped_groups_and_where() {
    let p = plan(
        r#"
matrix:
  pin: [pinned, floating]
  io:
    - { bs: 1k,   count: 3145728 }
    - { bs: 10M,  count: 500 }
    - { bs: 100M, count: 50 }
where: "not (pin == 'pinned' and bs == '100M') and count > 50 or pin == 'floating'"
run: "dd bs={{ bs }} count={{ count }}"
"#,
    );
    assert_eq!(
        cells(&p),
        [
            "pin=pinned bs=1k count=3145728",
            "pin=pinned bs=10M count=500",
            "pin=floating bs=1k count=3145728",
            "pin=floating bs=10M count=500",
            "pin=floating bs=100M count=50",
        ]
    );
}

#[test]
fn levels_keep_their_yaml_spelling() {
    let p = plan("matrix:\n  x: [1.50, 0755, 1e3, true, '2']\nrun: echo\n");
    assert_eq!(cells(&p), ["x=1.50", "x=0755", "x=1e3", "x=true", "x=2"]);
}

#[test]
fn cap_counts_before_filtering_and_after_including() {
    let exp = load_str(Path::new("t.yaml"), "matrix:\n  a: [1, 2, 3]\n  b: [1, 2, 3]\nrun: echo\n").unwrap();
    let err = expand(&exp, 8).unwrap_err().to_string();
    assert!(err.contains("expands to 9 combinations, more than the cap of 8"), "{err}");
    assert_eq!(expand(&exp, 9).unwrap().cells.len(), 9);
    let exp =
        load_str(Path::new("t.yaml"), "matrix:\n  a: [1, 2]\n  include: [{a: 3}]\nrun: echo\n").unwrap();
    let err = expand(&exp, 2).unwrap_err().to_string();
    assert!(err.contains("has 3 cells, more than the cap of 2"), "{err}");
}

#[test]
fn ids_are_stable_across_runs() {
    // Pinned: a change here means every stored trial would be orphaned.
    let p = plan("matrix:\n  bs: [1k, 2k]\nrun: dd bs={{ bs }}\n");
    let ids: Vec<String> = p.cells.iter().map(|c| c.id.to_string()).collect();
    assert_eq!(ids, ["c47a541c1e8ac597", "bbf9ab77e3095f93"]);
}

/// A random experiment: factor names, levels, exclude and include entries.
#[derive(Debug, Clone)]
struct Gen {
    factors: Vec<(String, Vec<String>)>,
    exclude: Vec<Vec<(usize, usize)>>,
    include: Vec<Vec<(String, String)>>,
}

fn gen_strategy() -> impl Strategy<Value = Gen> {
    let factors = prop::collection::vec(1usize..5, 1..5).prop_map(|sizes| {
        sizes
            .iter()
            .enumerate()
            .map(|(i, n)| (format!("f{i}"), (0..*n).map(|j| format!("l{j}")).collect()))
            .collect::<Vec<(String, Vec<String>)>>()
    });
    factors.prop_flat_map(|factors| {
        let nf = factors.len();
        let exclude = prop::collection::vec(prop::collection::vec((0..nf, 0usize..4), 1..3), 0..3);
        let include = prop::collection::vec(
            prop::collection::vec((prop::sample::select(vec!["f0", "f1", "x", "y"]), 0usize..5), 1..3),
            0..3,
        )
        .prop_map(|entries| {
            entries
                .into_iter()
                .map(|e| {
                    let mut seen = HashSet::new();
                    e.into_iter()
                        .filter(|(k, _)| seen.insert(*k))
                        .map(|(k, v)| (k.to_string(), format!("l{v}")))
                        .collect::<Vec<_>>()
                })
                .collect::<Vec<_>>()
        });
        (Just(factors), exclude, include).prop_map(|(factors, exclude, include)| {
            // keep only exclude entries naming existing levels, one value per factor
            let exclude = exclude
                .into_iter()
                .map(|e| {
                    let mut seen = HashSet::new();
                    e.into_iter()
                        .filter(|(f, l)| *l < factors[*f].1.len() && seen.insert(*f))
                        .collect::<Vec<_>>()
                })
                .filter(|e| !e.is_empty())
                .collect();
            Gen { factors, exclude, include }
        })
    })
}

impl Gen {
    /// The file, with top-level keys and map keys in an order chosen by `flip`.
    fn yaml(&self, flip: bool, run: &str) -> String {
        let mut matrix = String::from("matrix:\n");
        for (name, levels) in &self.factors {
            matrix.push_str(&format!("  {name}: [{}]\n", levels.join(", ")));
        }
        let entry = |pairs: Vec<(String, String)>| {
            let mut pairs = pairs;
            if flip {
                pairs.reverse();
            }
            format!("{{ {} }}", pairs.iter().map(|(k, v)| format!("{k}: {v}")).collect::<Vec<_>>().join(", "))
        };
        if !self.exclude.is_empty() {
            matrix.push_str("  exclude:\n");
            for e in &self.exclude {
                let pairs = e.iter().map(|(f, l)| (self.factors[*f].0.clone(), format!("l{l}"))).collect();
                matrix.push_str(&format!("    - {}\n", entry(pairs)));
            }
        }
        if !self.include.is_empty() {
            matrix.push_str("  include:\n");
            for e in &self.include {
                matrix.push_str(&format!("    - {}\n", entry(e.clone())));
            }
        }
        let rest = [
            format!("run: \"{run}\"\n"),
            "parse: dd\n".to_string(),
            "metrics:\n  a: { better: higher }\n  b: { regex: 'x=(\\d+)', unit: s }\n".to_string(),
            "vars:\n  one: \"1\"\n  two: \"2\"\n".to_string(),
        ];
        let mut text = String::new();
        if flip {
            for r in rest.iter().rev() {
                text.push_str(r);
            }
            text.push_str(&matrix);
        } else {
            text.push_str(&matrix);
            for r in &rest {
                text.push_str(r);
            }
        }
        text
    }

    /// The expected number of cells, by brute force over the product.
    fn expected_count(&self) -> usize {
        let mut combos: Vec<Vec<usize>> = vec![vec![]];
        for (_, levels) in &self.factors {
            combos = combos
                .into_iter()
                .flat_map(|c| (0..levels.len()).map(move |l| [c.clone(), vec![l]].concat()))
                .collect();
        }
        let kept: Vec<Vec<usize>> = combos
            .into_iter()
            .filter(|c| !self.exclude.iter().any(|e| e.iter().all(|(f, l)| c[*f] == *l)))
            .collect();
        let mut distinct: Vec<Vec<(String, String)>> = Vec::new();
        for e in &self.include {
            let mut sorted = e.clone();
            sorted.sort();
            if !distinct.contains(&sorted) {
                distinct.push(sorted);
            }
        }
        let added = distinct
            .iter()
            .filter(|e| {
                !kept.iter().any(|c| {
                    e.iter().all(|(k, v)| match self.factors.iter().position(|(n, _)| n == k) {
                        Some(f) => format!("l{}", c[f]) == *v,
                        None => true,
                    })
                })
            })
            .count();
        kept.len() + added
    }
}

fn ids_by_label(p: &Plan) -> BTreeMap<String, String> {
    p.cells
        .iter()
        .map(|c| {
            let mut pairs: Vec<String> = p.levels(c).map(|(k, v)| format!("{k}={v}")).collect();
            pairs.sort();
            (pairs.join(" "), c.id.to_string())
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn count_is_product_minus_excluded_plus_added(g in gen_strategy()) {
        let yaml = g.yaml(false, "echo");
        let exp = load_str(Path::new("p.yaml"), &yaml);
        let exp = match exp { Ok(e) => e, Err(d) => return Err(TestCaseError::fail(format!("{d}\n{yaml}"))) };
        match expand(&exp, DEFAULT_MAX_CELLS) {
            Ok(p) => {
                prop_assert_eq!(p.cells.len(), g.expected_count(), "{}", yaml);
                let labels: HashSet<String> = ids_by_label(&p).into_keys().collect();
                let ids: HashSet<_> = p.cells.iter().map(|c| c.id).collect();
                prop_assert_eq!(labels.len(), p.cells.len(), "cells are unique");
                prop_assert_eq!(ids.len(), p.cells.len(), "ids are unique");
            }
            Err(d) => {
                prop_assert_eq!(g.expected_count(), 0, "{}", d);
            }
        }
    }

    #[test]
    fn ids_ignore_key_order_and_follow_the_command(g in gen_strategy()) {
        let a = load_str(Path::new("p.yaml"), &g.yaml(false, "echo")).unwrap();
        let b = load_str(Path::new("p.yaml"), &g.yaml(true, "echo")).unwrap();
        let c = load_str(Path::new("p.yaml"), &g.yaml(false, "echo changed")).unwrap();
        if let (Ok(pa), Ok(pb), Ok(pc)) = (expand(&a, DEFAULT_MAX_CELLS), expand(&b, DEFAULT_MAX_CELLS), expand(&c, DEFAULT_MAX_CELLS)) {
            let (ia, ib, ic) = (ids_by_label(&pa), ids_by_label(&pb), ids_by_label(&pc));
            prop_assert_eq!(&ia, &ib, "reordering keys must not change ids");
            prop_assert_eq!(ia.keys().collect::<Vec<_>>(), ic.keys().collect::<Vec<_>>());
            for (label, id) in &ia {
                prop_assert_ne!(id, &ic[label], "a changed command changes every id");
            }
        }
    }
}

/// A warm-up runs once per cell in each session, so once per boot for a host that boots:
/// the plan's line says which.
#[test]
fn warm_ups_are_counted_per_boot_where_a_host_boots() {
    let local = plan("matrix:\n  x: [a]\nrun: echo\nwarmup: 1\n");
    assert!(local.to_string().ends_with("(+ 1 warm-up per cell)"), "{local}");
    let booted = plan(
        "hosts:\n  m: { ssh: root@m.example.org, boot: { reboot: 'echo {{ kernel }}', boots: 3 } }\n\
         matrix:\n  host: [m]\n  kernel: [xen, bare]\nenvironment:\n  kernel: { fact: hypervisor, map: { xen: xen, none: bare } }\n\
         run: echo\nwarmup: 1\n",
    );
    assert!(booted.to_string().ends_with("(+ 1 warm-up per cell per boot)"), "{booted}");
}
