#!/usr/bin/env python3
"""Reference values for margin's statistics core (src/analyze/), from numpy and scipy.

Run from this directory:  python3 reference.py  (writes reference.json next to it).

Everything here is computed independently of the Rust code: scipy where it has the
function, the formula of docs/statistics.md written out with scipy's distributions where it
has not (Fieller, runs needed, MDE, the order statistics of the median CI, Holm, the
outlier policy). The Rust tests load reference.json and demand 6 significant digits.
"""

import json
import math
from pathlib import Path

import numpy as np
import scipy
from scipy import stats

CONFIDENCE = 0.95
ALPHA = 1 - CONFIDENCE
POWER = 0.80
DELTA = 0.05

# Seed 000 (a Xen mailing-list post): dnetc -bench seconds per RC5-72/OGR core, bare
# kernel (the '-' lines) and Xen dom0 kernel (the '+' lines), cores in the same order.
DNETC_BARE = [16.60, 16.36, 16.15, 16.35, 16.58, 16.51]
DNETC_XEN = [16.99, 16.10, 16.62, 17.52, 17.36, 16.42]
# Seed 000 bonnie++ CSV rows: block writes (K/sec, a rate: harmonic mean) and seeks/s,
# dom0 (4 runs) against a domU on an LVM volume (8 runs).
PUT_BLOCK_DOM0 = [50260, 50728, 51006, 50861]
PUT_BLOCK_DOMU = [40828, 40588, 41021, 40697, 40953, 39823, 39890, 41270]
PUTC_DOMU = [38290, 31075, 35591, 30129, 31205, 26187, 23953, 30671]
SEEKS_DOM0 = [273.3, 270.6, 267.5, 266.9]
SEEKS_DOMU = [194.5, 194.3, 193.2, 194.2, 193.5, 185.3, 193.4, 195.3]

rng = np.random.default_rng(20240611)
WIDE_30 = [round(float(x), 4) for x in rng.normal(100.0, 7.0, 30)]

CELLS = {
    "dnetc_bare": (DNETC_BARE, "arithmetic"),
    "dnetc_xen": (DNETC_XEN, "arithmetic"),
    "put_block_dom0": (PUT_BLOCK_DOM0, "harmonic"),
    "put_block_domu": (PUT_BLOCK_DOMU, "harmonic"),
    "putc_domu": (PUTC_DOMU, "harmonic"),
    "seeks_dom0": (SEEKS_DOM0, "arithmetic"),
    "seeks_domu": (SEEKS_DOMU, "arithmetic"),
    "n1": ([12.5], "arithmetic"),
    "n2": ([10.0, 10.4], "arithmetic"),
    "n3": ([5.1, 4.9, 5.3], "arithmetic"),
    "n5": ([1.02, 0.98, 1.01, 1.05, 0.99], "arithmetic"),
    "n6_slow_first": ([14.2, 10.1, 10.0, 10.2, 9.9, 10.1], "arithmetic"),
    "n9": ([3.31, 3.29, 3.35, 3.30, 3.28, 3.36, 3.33, 3.27, 3.32], "arithmetic"),
    "n12_trend": (
        [2.01, 2.03, 2.02, 2.05, 2.04, 2.07, 2.08, 2.06, 2.10, 2.11, 2.09, 2.13],
        "arithmetic",
    ),
    "quantised": ([3.0, 3.0, 3.0, 3.0, 4.0, 3.0], "arithmetic"),
    "noisy_a": ([9.1, 12.4, 10.3, 8.2, 11.9, 10.6], "arithmetic"),
    "wild_2": ([1.0, 10.0], "arithmetic"),
    "wide_30": (WIDE_30, "arithmetic"),
}


def analysis_scale(values, kind):
    """Harmonic-mean metrics are analysed on the reciprocals (time per unit of work)."""
    x = np.asarray(values, dtype=float)
    return 1.0 / x if kind == "harmonic" else x


def t_ppf(p, df):
    return float(stats.t.ppf(p, df))


def median_ci_rank(n, confidence):
    """Largest k with P(Binomial(n, 1/2) <= k-1) <= alpha/2, or None (1-based ranks)."""
    half_alpha = (1 - confidence) / 2
    k = None
    for j in range(1, n // 2 + 1):
        if stats.binom.cdf(j - 1, n, 0.5) <= half_alpha:
            k = j
    return k


def cell(values, kind):
    raw = np.asarray(values, dtype=float)
    x = analysis_scale(values, kind)
    n = len(x)
    m = float(np.mean(x))
    out = {
        "values": list(map(float, values)),
        "kind": kind,
        "n": n,
        "mean": float(stats.hmean(raw)) if kind == "harmonic" else m,
        "median": float(np.median(raw)),
        "min": float(np.min(raw)),
        "max": float(np.max(raw)),
        "mad": float(stats.median_abs_deviation(raw, scale=1.0)),
    }
    if n >= 2:
        sd = float(np.std(x, ddof=1))
        cv = sd / m
        lo, hi = stats.t.interval(CONFIDENCE, n - 1, loc=m, scale=sd / math.sqrt(n))
        half = (hi - lo) / 2
        if kind == "harmonic":
            # Back from reciprocals: bounds swap, and 1/(m-h) is the upper one.
            lo, hi = 1 / hi, 1 / lo
        out.update(
            cv=cv,
            sd=cv * out["mean"],
            moe_rel=half / m,
            # The margin in the metric's unit: h, or h/m x the harmonic mean (whose
            # interval is not symmetric).
            moe=half if kind == "arithmetic" else half / m * out["mean"],
            ci_low=float(lo),
            ci_high=float(hi),
        )
    k = median_ci_rank(n, CONFIDENCE) if n >= 6 else None
    if k is not None:
        s = np.sort(raw)
        out["median_ci"] = [float(s[k - 1]), float(s[n - k])]
    else:
        out["median_ci"] = None
    if n >= 3 and np.ptp(raw) > 0:
        res = stats.spearmanr(np.arange(n), raw)
        out["spearman"] = {"rho": float(res.statistic), "p": float(res.pvalue)}
    else:
        out["spearman"] = None
    return out


def runs_needed(cv, target, confidence, cap=1_000_000):
    """Smallest n >= 2 with t(1-a/2, n-1) * cv / sqrt(n) <= target, counted up from 2."""
    n = 2
    q = 1 - (1 - confidence) / 2
    while n <= cap:
        if t_ppf(q, n - 1) * cv / math.sqrt(n) <= target:
            return n
        n += 1
    return None


def welch_df_relative(cv_a, n_a, cv_b, n_b):
    wa, wb = cv_a**2 / n_a, cv_b**2 / n_b
    return (wa + wb) ** 2 / (wa**2 / (n_a - 1) + wb**2 / (n_b - 1))


def fieller(a_vals, b_vals, confidence):
    """docs/statistics.md, "Comparing level B with baseline A", written out; returns (ratio, bounds or None, df)."""
    xa, xb = np.asarray(a_vals, float), np.asarray(b_vals, float)
    a, b = xa.mean(), xb.mean()
    na, nb = len(xa), len(xb)
    va, vb = xa.var(ddof=1) / na, xb.var(ddof=1) / nb
    theta = b / a
    nu = (vb + theta**2 * va) ** 2 / (vb**2 / (nb - 1) + theta**4 * va**2 / (na - 1))
    t = t_ppf(1 - (1 - confidence) / 2, nu)
    d = a**2 - t**2 * va
    if d <= 0:
        return theta, None, nu
    root = math.sqrt(a**2 * b**2 - d * (b**2 - t**2 * vb))
    return theta, [(a * b - root) / d, (a * b + root) / d], nu


def settle_independent(cv_a, cv_b, delta, confidence):
    """Smallest equal n per level whose interval is at most delta wide (compare.rs)."""
    s2 = cv_a**2 + cv_b**2
    for n in range(2, 1_000_001):
        nu = s2**2 * (n - 1) / (cv_a**4 + cv_b**4)
        if t_ppf(1 - (1 - confidence) / 2, nu) * math.sqrt(s2 / n) <= delta / 2:
            return n
    return None


def settle_paired(sd_log, delta, confidence):
    for k in range(2, 1_000_001):
        if t_ppf(1 - (1 - confidence) / 2, k - 1) * sd_log / math.sqrt(k) <= math.log1p(delta) / 2:
            return k
    return None


def mwu(a_vals, b_vals):
    if min(len(a_vals), len(b_vals)) < 5:
        return None
    res = stats.mannwhitneyu(b_vals, a_vals, alternative="two-sided")
    both = np.concatenate([a_vals, b_vals])
    ties = len(np.unique(both)) < len(both)
    small = min(len(a_vals), len(b_vals)) <= 8
    method = "exact" if small and not ties else "asymptotic"
    return {"p": float(res.pvalue), "method": method}


def independent(a_name, b_name):
    (a_vals, kind), (b_vals, kind_b) = CELLS[a_name], CELLS[b_name]
    assert kind == kind_b
    xa, xb = analysis_scale(a_vals, kind), analysis_scale(b_vals, kind)
    theta, bounds, nu = fieller(xa, xb, CONFIDENCE)
    out = {"a": a_name, "b": b_name, "design": "independent", "n_a": len(xa), "n_b": len(xb)}
    if kind == "harmonic":
        # Ratio of harmonic means = 1 / ratio of reciprocal means; the bounds swap.
        out["ratio"] = 1 / theta
        out["ci"] = None if bounds is None or bounds[0] <= 0 else [1 / bounds[1], 1 / bounds[0]]
    else:
        out["ratio"] = theta
        out["ci"] = bounds
    out["df"] = nu
    out["p"] = float(stats.ttest_ind(xb, xa, equal_var=False).pvalue)
    cv_a, cv_b = np.std(xa, ddof=1) / xa.mean(), np.std(xb, ddof=1) / xb.mean()
    nu_rel = welch_df_relative(cv_a, len(xa), cv_b, len(xb))
    q = 1 - (1 - CONFIDENCE) / 2
    out["mde"] = (t_ppf(q, nu_rel) + t_ppf(POWER, nu_rel)) * math.sqrt(
        cv_a**2 / len(xa) + cv_b**2 / len(xb)
    )
    n_settle = settle_independent(cv_a, cv_b, DELTA, CONFIDENCE)
    out["settle_n"] = n_settle
    out["mann_whitney"] = mwu(np.asarray(a_vals, float), np.asarray(b_vals, float))
    return out


def paired(a_name, b_name):
    (a_vals, _), (b_vals, _) = CELLS[a_name], CELLS[b_name]
    la, lb = np.log(np.asarray(a_vals, float)), np.log(np.asarray(b_vals, float))
    d = lb - la
    k = len(d)
    sd = float(np.std(d, ddof=1))
    t = t_ppf(1 - (1 - CONFIDENCE) / 2, k - 1)
    half = t * sd / math.sqrt(k)
    mde_log = (t + t_ppf(POWER, k - 1)) * sd / math.sqrt(k)
    return {
        "a": a_name,
        "b": b_name,
        "design": "paired",
        "ratio": math.exp(d.mean()),
        "ci": [math.exp(d.mean() - half), math.exp(d.mean() + half)],
        "df": k - 1,
        "p": float(stats.ttest_rel(lb, la).pvalue),
        "mde": math.expm1(mde_log),
        "settle_n": settle_paired(sd, DELTA, CONFIDENCE),
        # A rank test that ignores the pairing answers another question: not given.
        "mann_whitney": None,
    }


def holm(p):
    """Holm step-down, written as the textbook loop (not the Rust cumulative max)."""
    m = len(p)
    order = sorted(range(m), key=lambda i: (p[i], i))
    adjusted = [0.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p[i]))
        adjusted[i] = running
    return adjusted


def modified_z(x):
    med = np.median(x)
    mad = np.median(np.abs(x - med))
    if mad == 0:
        return None
    return 0.6745 * np.abs(x - med) / mad


def outliers(values, kind, rule, cutoff):
    """Flag by the rule, then set aside the most extreme (ties: earlier first) up to 20 %."""
    x = analysis_scale(values, kind)
    n = len(x)
    if rule == "mad":
        score = modified_z(x)
        if score is None:
            return {"flagged": [], "set_aside": [], "skipped": True}
        flagged = [i for i in range(n) if score[i] > cutoff]
    else:
        q1, q3 = np.percentile(x, [25, 75])  # numpy's default: linear (R type 7)
        iqr = q3 - q1
        if iqr == 0:
            return {"flagged": [], "set_aside": [], "skipped": True}
        lo, hi = q1 - cutoff * iqr, q3 + cutoff * iqr
        score = np.maximum(lo - x, x - hi) / iqr
        flagged = [i for i in range(n) if x[i] < lo or x[i] > hi]
    by_extremeness = sorted(flagged, key=lambda i: (-score[i], i))
    allowed = (n // 5) if n >= 5 else 0
    return {
        "flagged": flagged,
        "set_aside": sorted(by_extremeness[:allowed]),
        "skipped": False,
    }


def main():
    t_points = [(0.975, 1), (0.975, 2), (0.975, 2.5), (0.975, 5), (0.8, 5), (0.995, 9),
                (0.025, 30), (0.9, 123.4), (0.975, 1e4), (0.975, 2e4), (0.999, 5e4),
                (0.975, 1e6), (0.8, 1e7), (0.975, 1e9), (0.975, math.inf)]
    cdf_points = [(-2.5, 1), (0.3, 2), (2.0, 4.5), (-1.1, 30), (3.5, 200), (-6.0, 1e4),
                  (3.0, 2e4), (-0.5, 1e5), (1.96, 1e6), (-4.0, 1e7), (-0.5, 1e9),
                  (-8.0, 1e12), (-30.0, 5e4), (2.0, math.inf)]
    runs_grid = [(cv, e) for cv in (0.01, 0.05, 0.1, 0.003, 0.3) for e in (0.02, 0.05, 0.01)]

    def df_json(df):
        return None if math.isinf(df) else df

    outlier_cases = [
        ("seeks_domu", "mad", 3.5),
        ("seeks_domu", "iqr", 1.5),
        ("n6_slow_first", "mad", 3.5),
        ("n6_slow_first", "iqr", 1.5),
        ("quantised", "mad", 3.5),
        ("quantised", "iqr", 1.5),
        ("putc_domu", "mad", 3.5),
        ("wide_30", "iqr", 1.5),
        ("wide_30", "mad", 2.0),
        ("n3", "mad", 1.0),
    ]

    comparisons = [
        independent("dnetc_bare", "dnetc_xen"),
        paired("dnetc_bare", "dnetc_xen"),
        independent("put_block_dom0", "put_block_domu"),
        independent("seeks_dom0", "seeks_domu"),
        independent("n5", "n6_slow_first"),
        independent("n2", "noisy_a"),
        independent("noisy_a", "wide_30"),
        independent("n9", "n12_trend"),
        independent("n5", "wide_30"),
        independent("wild_2", "n2"),
    ]
    holm_cases = [
        [0.01, 0.04, 0.03, 0.005, 0.5, 0.04],
        [0.2],
        [0.001, 0.9, 0.0001, 0.02],
        [c["p"] for c in comparisons],
    ]

    reference = {
        "generated_by": f"reference.py with numpy {np.__version__}, scipy {scipy.__version__}",
        "confidence": CONFIDENCE,
        "power": POWER,
        "delta": DELTA,
        "t_quantile": [{"p": p, "df": df_json(df), "value": t_ppf(p, df)} for p, df in t_points],
        "t_cdf": [
            {"x": x, "df": df_json(df), "value": float(stats.t.cdf(x, df))} for x, df in cdf_points
        ],
        "runs_needed": [
            {"cv": cv, "target": e, "runs": runs_needed(cv, e, CONFIDENCE)} for cv, e in runs_grid
        ],
        "median_ci_rank": [
            {"n": n, "k": median_ci_rank(n, CONFIDENCE),
             "coverage": 1 - 2 * float(stats.binom.cdf(median_ci_rank(n, CONFIDENCE) - 1, n, 0.5))}
            for n in (6, 7, 8, 9, 10, 11, 12, 20, 50, 101, 1000)
        ],
        "cells": {name: cell(v, kind) for name, (v, kind) in CELLS.items()},
        "comparisons": comparisons,
        "holm": [{"p": p, "adjusted": holm(p)} for p in holm_cases],
        "outliers": [
            {"cell": name, "rule": rule, "cutoff": cutoff, **outliers(*CELLS[name], rule, cutoff)}
            for name, rule, cutoff in outlier_cases
        ],
    }
    path = Path(__file__).with_name("reference.json")
    path.write_text(json.dumps(reference, indent=1, allow_nan=False) + "\n")


if __name__ == "__main__":
    main()
