#!/usr/bin/env python3
"""Seed 000's questions answered with scipy, for margin's report tests.

Run from this directory:  python3 seed000.py  (writes seed000.json next to it).

Seed 000 (a Xen users' list post) timed `dnetc -bench` on six cores under a bare and a
Xen dom0 kernel, once each, and asked what the margin of error is; it also posted
bonnie++ block-write rates of a dom0 (4 runs) and a domU (8 runs). The Rust test builds
trials from the same numbers, runs margin's whole analysis and compares with this.

- dnetc, paired by core: each kernel's mean and 95 % t-interval over its six cores; the
  geometric-mean ratio xen/bare of the per-core ratios with its t-interval on the logs,
  and the paired t-test on the log-ratios.
- bonnie++ put_block (a rate over a fixed amount of work: harmonic mean): each domain's
  harmonic mean with the t-interval of the reciprocals carried back; the ratio domU/dom0
  with Fieller's interval on the reciprocals (Welch-Satterthwaite df) inverted; Welch's
  test on the reciprocals.
"""

import json
import math
from pathlib import Path

import numpy as np
from scipy import stats

CONFIDENCE = 0.95
Q = 1 - (1 - CONFIDENCE) / 2

CORES = ["rc5-72/0", "rc5-72/1", "rc5-72/2", "rc5-72/3", "rc5-72/4", "ogr-p2/0"]
DNETC_BARE = [16.60, 16.36, 16.15, 16.35, 16.58, 16.51]  # the '-' lines of the diff
DNETC_XEN = [16.99, 16.10, 16.62, 17.52, 17.36, 16.42]   # the '+' lines
# put_block column of the CSV rows, K/sec; margin stores bytes per second.
PUT_BLOCK_DOM0 = [50260, 50728, 51006, 50861]
PUT_BLOCK_DOMU = [40828, 40588, 41021, 40697, 40953, 39823, 39890, 41270]


def t_interval(values):
    x = np.asarray(values, dtype=float)
    n = len(x)
    mean = x.mean()
    h = stats.t.ppf(Q, n - 1) * x.std(ddof=1) / math.sqrt(n)
    return mean, h


def arithmetic_arm(values):
    mean, h = t_interval(values)
    return {"n": len(values), "mean": mean, "moe": h, "moe_pct": 100 * h / mean,
            "ci_low": mean - h, "ci_high": mean + h}


def harmonic_arm(values):
    r = 1 / np.asarray(values, dtype=float)
    centre, h = t_interval(r)
    mean = stats.hmean(values)
    return {"n": len(values), "mean": mean, "moe": (h / centre) * mean,
            "moe_pct": 100 * h / centre, "ci_low": 1 / (centre + h), "ci_high": 1 / (centre - h)}


def paired(a, b):
    d = np.log(np.asarray(b) / np.asarray(a))
    centre, h = t_interval(d)
    test = stats.ttest_1samp(d, 0.0)
    return {"ratio": math.exp(centre), "ci_low": math.exp(centre - h),
            "ci_high": math.exp(centre + h), "p_value": float(test.pvalue)}


def fieller_harmonic(a_rates, b_rates):
    """The ratio of harmonic means b/a is mean(1/a) / mean(1/b): Fieller's interval for
    mean(1/b) / mean(1/a) on the reciprocals, with its bounds inverted and swapped."""
    xa, xb = 1 / np.asarray(a_rates, float), 1 / np.asarray(b_rates, float)
    a, b = xa.mean(), xb.mean()
    va, vb = xa.var(ddof=1) / len(xa), xb.var(ddof=1) / len(xb)
    theta = b / a
    df = (vb + theta**2 * va) ** 2 / (vb**2 / (len(xb) - 1) + theta**4 * va**2 / (len(xa) - 1))
    t = stats.t.ppf(Q, df)
    d = a * a - t * t * va
    root = math.sqrt(a * a * b * b - d * (b * b - t * t * vb))
    low, high = (a * b - root) / d, (a * b + root) / d
    test = stats.ttest_ind(xb, xa, equal_var=False)
    return {"ratio": a / b, "ci_low": 1 / high, "ci_high": 1 / low, "p_value": float(test.pvalue)}


def main():
    put_dom0 = [v * 1024 for v in PUT_BLOCK_DOM0]
    put_domu = [v * 1024 for v in PUT_BLOCK_DOMU]
    out = {
        "dnetc": {
            "cores": CORES, "bare": DNETC_BARE, "xen": DNETC_XEN,
            "bare_arm": arithmetic_arm(DNETC_BARE),
            "xen_arm": arithmetic_arm(DNETC_XEN),
            "paired": paired(DNETC_BARE, DNETC_XEN),
        },
        "bonnie": {
            "dom0": put_dom0, "domU": put_domu,
            "dom0_arm": harmonic_arm(put_dom0),
            "domU_arm": harmonic_arm(put_domu),
            "independent": fieller_harmonic(put_dom0, put_domu),
        },
    }
    path = Path(__file__).with_name("seed000.json")
    path.write_text(json.dumps(out, indent=2, default=float) + "\n")


if __name__ == "__main__":
    main()
