//! Levels measured in boots or sessions of their own: the boots are the units, each
//! boot's mean the observation; levels of one session are compared trial by trial.

use super::*;

/// A two-level experiment whose trials come in sessions of five, each session in a boot:
/// (level, session, boot, centre of its values).
fn boots_case(sessions: &[(&str, &str, &str, f64)]) -> ComparisonStat {
    boots_report(sessions).0.comparisons[0].clone()
}

/// [`boots_case`]'s summary and report.
fn boots_report(sessions: &[(&str, &str, &str, f64)]) -> (Summary, String) {
    let yaml = "matrix: { v: [a, b] }\nrun: \"true\"\nrepetitions: 5\nanalysis: { compare: [{ factor: v, baseline: a }] }\n";
    let mut f = MemoryStore::new("experiments/boots.yaml", yaml);
    f.metric("wall_time", "s", Better::Lower, MeanKind::Arithmetic);
    for &(level, session, boot, centre) in sessions {
        f.session(session, "local", &[("boot_id", boot)]);
        for d in [-0.02, 0.01, 0.0, 0.02, -0.01] {
            f.trial(&[("v", level)], &[("wall_time", centre + d)]);
        }
    }
    let (summary, markdown) = report(&f, &[]);
    assert_eq!(summary.comparisons.len(), 1, "one comparison");
    (summary, markdown)
}

/// Across boots the report names the unit where the answer is: the sides' boots and
/// their trials (not "n = 3 and 3"), each side's ± as its boots' means', the cells' own
/// interval as within boots, and the boots (of how many trials) a cell's mean needs
/// rather than more trials.
#[test]
fn a_comparison_across_boots_is_said_in_boots() {
    let (summary, markdown) = boots_report(&[
        ("a", "s1", "boot-1", 10.0),
        ("a", "s2", "boot-2", 10.2),
        ("a", "s3", "boot-3", 10.1),
        ("b", "s4", "boot-4", 12.0),
        ("b", "s5", "boot-5", 12.3),
        ("b", "s6", "boot-6", 12.1),
    ]);
    let c = &summary.comparisons[0];
    assert_eq!(c.verdict, VerdictKind::Significant, "{}", c.sentence);
    let r = c.replication.as_ref().unwrap();
    assert_eq!((r.baseline_trials, r.level_trials), (15, 15));
    assert!(markdown.contains("; 3 boots and 3 boots, 15 trials each (5 a boot);"), "{markdown}");
    assert!(!markdown.contains("n = 3 and 3"), "{markdown}");
    assert!(markdown.contains(" (±") && markdown.contains(", its boots' means), b "), "{markdown}");
    let header = markdown.lines().find(|l| l.starts_with("| cell ")).unwrap();
    for column in ["± within boots", "CI within boots", "boots needed"] {
        assert!(header.contains(column), "{header}");
    }
    assert!(!header.contains("runs needed"), "{header}");
    // each cell's boots: their means, and the boots of how many trials its mean needs,
    // from its own components (the boots differ by about 1 %, the trials by 0.15 %)
    for cell in &summary.cells {
        let u = cell.units.as_ref().expect("compared across boots");
        assert_eq!((u.unit, u.per_unit.len()), ("boot", 3));
        assert!(u.per_unit.iter().all(|b| b.n == 5 && b.moe.is_some()), "{u:?}");
        let needed = u.needed.expect("a practical number of boots");
        let row = markdown.lines().find(|l| l.starts_with(&format!("| {} ", cell.label))).unwrap();
        assert!(row.ends_with(&format!("| {} × {} trials |", needed.units, needed.trials_per_unit)), "{row}");
    }
    let a = summary.cells[0].units.as_ref().unwrap();
    let means: Vec<f64> = a.per_unit.iter().map(|b| b.mean).collect();
    for (got, want) in means.iter().zip([10.0, 10.2, 10.1]) {
        assert!((got - want).abs() < 1e-9, "{means:?}");
    }
}

/// Boots so far apart that the interval of 2 boots a side is unbounded (the lab's dd
/// under TCG: 8 and 33 MB/s in two boots of one level): the sentence speaks of boots, how
/// much they differ and what it would take, not of more trials.
#[test]
fn an_unbounded_ratio_across_boots_asks_for_boots() {
    let c = boots_case(&[
        ("a", "s1", "boot-1", 8.0),
        ("a", "s2", "boot-2", 33.0),
        ("b", "s3", "boot-3", 9.0),
        ("b", "s4", "boot-4", 31.0),
    ]);
    assert_eq!(c.verdict, VerdictKind::Unbounded, "{}", c.sentence);
    assert!(c.sentence.starts_with("inconclusive: too noisy to bound the ratio"), "{}", c.sentence);
    // the boots differ by 60–80 % (their trials by 0.1 %): beyond any number of boots
    // margin would advise, and said so
    let r = c.replication.as_ref().unwrap();
    assert_eq!(r.advice, None);
    assert!(r.baseline_components.unwrap().between_cv > 0.5, "{r:?}");
    assert!(
        c.sentence.contains("its boots differ by about ")
            && c.sentence.contains("more than 100 boots of each level would be needed to settle it"),
        "{}",
        c.sentence
    );
    assert!(!c.sentence.contains("run more trials"), "{}", c.sentence);
}

/// Boots that differ by a fifth and a bounded interval (the lab's dd under TCG, 4 boots a
/// side: ×0.38 to ×14.6): more than 100 boots would be needed, and the sentence says how
/// much the boots differ instead of "about 1742 more boots of each level".
#[test]
fn an_inconclusive_ratio_beyond_any_advised_boots_says_how_much_boots_differ() {
    let c = boots_case(&[
        ("a", "s1", "boot-1", 8.0),
        ("a", "s2", "boot-2", 12.0),
        ("a", "s3", "boot-3", 10.0),
        ("b", "s4", "boot-4", 9.0),
        ("b", "s5", "boot-5", 13.0),
        ("b", "s6", "boot-6", 11.0),
    ]);
    assert_eq!(c.verdict, VerdictKind::Inconclusive, "{}", c.sentence);
    let r = c.replication.as_ref().unwrap();
    assert_eq!(r.advice, None, "{r:?}");
    assert!(
        c.sentence.contains("its boots differ by about 20.0 % between them")
            && c.sentence.contains("more than 100 boots of each level would be needed to settle it"),
        "{}",
        c.sentence
    );
    assert!(!c.sentence.contains(" more boots of each level"), "{}", c.sentence);
}

/// Levels measured in disjoint boots: the boots' means are the observations, and two
/// sessions of one boot are one boot (docs/statistics.md, Sessions and boots).
#[test]
fn levels_from_disjoint_boots_are_compared_by_their_boots() {
    let c = boots_case(&[
        ("a", "s1", "boot-1", 10.0),
        ("a", "s2", "boot-2", 10.6),
        ("b", "s3", "boot-3", 10.3),
        ("b", "s4", "boot-4", 10.9),
    ]);
    let r = c.replication.as_ref().expect("disjoint boots");
    assert_eq!((r.unit, r.baseline_units, r.level_units, r.trials_per_unit), ("boot", 2, 2, (5, 5)));
    // the boots' means, 10.3 and 10.6 with a spread of 0.42 each: nothing settled; on the
    // 20 trials alone, +2.9 % with a spread of 0.3 would have been called real
    assert_eq!((c.baseline_arm.n, c.level_arm.n), (2, 2));
    assert!((c.ratio - 10.6 / 10.3).abs() < 1e-12, "{}", c.ratio);
    assert_eq!(c.verdict, VerdictKind::Inconclusive, "{}", c.sentence);
    // the boots differ by 0.42 where their trials differ by 0.016: few trials per boot,
    // more boots, and the sentence says why (docs/statistics.md, Sessions and boots)
    let (ca, cb) = (r.baseline_components.unwrap(), r.level_components.unwrap());
    assert!(ca.between_cv > 10.0 * ca.within_cv && cb.between_cv > 10.0 * cb.within_cv, "{ca:?} {cb:?}");
    let advice = r.advice.expect("advice on an unsettled verdict");
    assert_eq!(advice.trials_per_unit, 2);
    assert!(advice.between_dominates && advice.more_units >= 10, "{advice:?}");
    assert!(
        c.sentence.contains(&format!(
            "about {} more boots of each level, 2 trials each would settle it 8 times in 10 if boots and \
             trials vary as measured; the boots differ more than their trials do, so more trials per boot \
             would not help",
            advice.more_units
        )),
        "{}",
        c.sentence
    );

    // s1 and s2 in one boot: level a has one boot, so nothing is claimed
    let c = boots_case(&[
        ("a", "s1", "boot-1", 10.0),
        ("a", "s2", "boot-1", 10.0),
        ("b", "s3", "boot-3", 12.0),
        ("b", "s4", "boot-4", 12.1),
    ]);
    let r = c.replication.as_ref().expect("disjoint boots");
    assert_eq!((r.baseline_units, r.level_units, r.trials_per_unit), (1, 2, (10, 5)));
    assert_eq!(c.verdict, VerdictKind::Unreplicated, "{}", c.sentence);
    assert_eq!((c.ci_low, c.ci_high), (None, None));
    assert!(
        c.sentence.contains("a was measured in one boot, so how much boots differ is unmeasured"),
        "{}",
        c.sentence
    );
}

/// A paired experiment (three blocks whose centres differ) whose levels come from
/// disjoint boots: (level, boot, shift of the boot's values, as a fraction).
fn paired_boots_case(boots: &[(&str, &str, f64)]) -> ComparisonStat {
    let yaml = "matrix: { v: [a, b], block: [p1, p2, p3] }\nrun: \"true\"\nrepetitions: 3\nanalysis: { compare: [{ factor: v, baseline: a, paired_by: block }] }\n";
    let mut f = MemoryStore::new("experiments/paired-boots.yaml", yaml);
    f.metric("wall_time", "s", Better::Lower, MeanKind::Arithmetic);
    for &(level, boot, shift) in boots {
        f.session(boot, "local", &[("boot_id", boot)]);
        for (block, centre) in [("p1", 1.0), ("p2", 5.0), ("p3", 20.0)] {
            for d in [-0.01, 0.0, 0.01] {
                f.trial(&[("v", level), ("block", block)], &[("wall_time", centre * (1.0 + shift + d))]);
            }
        }
    }
    let (summary, _) = report(&f, &[]);
    let [c] = &summary.comparisons[..] else { panic!("one comparison") };
    c.clone()
}

/// Paired by block, the levels in disjoint boots: the boot is the unit, each boot's mean
/// log-value over the blocks (their centres cancel), compared by Welch's interval on the
/// logs; one boot on a side is `unreplicated` (docs/statistics.md, Sessions and boots).
#[test]
fn paired_levels_from_disjoint_boots_are_compared_by_their_boots() {
    let c = paired_boots_case(&[
        ("a", "boot-1", 0.0),
        ("a", "boot-2", 0.04),
        ("b", "boot-3", 0.02),
        ("b", "boot-4", 0.07),
    ]);
    let r = c.replication.as_ref().expect("disjoint boots");
    assert_eq!((r.baseline_units, r.level_units, r.trials_per_unit), (2, 2, (9, 9)));
    // independently: each boot's mean log over the blocks is ln(1 + shift) plus the
    // blocks' mean log centre, which cancels
    let logs = |s: [f64; 2]| {
        s.map(|s| [-0.01, 0.0, 0.01].iter().map(|d: &f64| (1.0 + s + d).ln()).sum::<f64>() / 3.0)
    };
    let (la, lb) = (logs([0.0, 0.04]), logs([0.02, 0.07]));
    let mean = |x: [f64; 2]| (x[0] + x[1]) / 2.0;
    let var = |x: [f64; 2]| (x[0] - x[1]).powi(2) / 2.0;
    let diff = mean(lb) - mean(la);
    assert!((c.ratio - diff.exp()).abs() < 1e-12, "{} vs {}", c.ratio, diff.exp());
    let (va, vb) = (var(la) / 2.0, var(lb) / 2.0);
    let df = (va + vb).powi(2) / (va * va + vb * vb);
    let t = stats::dist::t_quantile(0.975, df).unwrap();
    let (low, high) = ((diff - t * (va + vb).sqrt()).exp(), (diff + t * (va + vb).sqrt()).exp());
    assert!((c.ci_low.unwrap() - low).abs() < 1e-9 && (c.ci_high.unwrap() - high).abs() < 1e-9, "{c:?}");
    assert_eq!(c.verdict, VerdictKind::Inconclusive, "{}", c.sentence);
    assert_eq!(c.pairs, ["p1", "p2", "p3"]);
    // trial by trial the same data would have called +2.4 % real: the pairs within boots
    // agree to 1 %
    let one = paired_boots_case(&[("a", "boot-1", 0.0), ("b", "boot-3", 0.024)]);
    assert_eq!(one.verdict, VerdictKind::Unreplicated, "{}", one.sentence);
    assert_eq!((one.ci_low, one.ci_high, one.p_value), (None, None, None));
    assert!(one.sentence.contains("within their boots b measured +2.4 %"), "{}", one.sentence);
}

/// Levels measured in the same session are compared trial by trial, as before.
#[test]
fn levels_of_one_session_are_compared_trial_by_trial() {
    let (c, _) = verdict_case(&BASE, &[10.2, 10.9, 10.4, 10.8, 10.3]);
    assert_eq!(c.replication, None);
    assert_eq!((c.baseline_arm.n, c.level_arm.n), (5, 5));
}
