#!/usr/bin/env python3
"""The robust method's rank statistics by brute force, in plain Python: the independent
computation crates/stats/src/robust/ is tested against (docs/statistics.md, The robust method).

Exact null distributions are enumerated outright — every split of the pooled values into
the two samples (Mann–Whitney), every sign pattern of the differences (Wilcoxon) — rather
than counted by the recurrences the Rust code uses. The intervals are the order
statistics of the pairwise differences (Moses) and of the Walsh averages, at the widest
rank whose tail probability stays within α/2; the normal approximations (ties and
continuity corrected) are written out from their textbook formulas (Hollander & Wolfe,
Nonparametric Statistical Methods, §3.1–3.2 and §4.1–4.3).

    python3 tests/data/stats/robust.py
"""

import itertools
import math


def ranks(values):
    order = sorted(range(len(values)), key=lambda i: values[i])
    out = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            out[order[k]] = (i + j + 2) / 2
        i = j + 1
    return out


def u_statistic(a, b):
    """U of b: the pairs (a_i, b_j) with b_j > a_i, ties counting one half."""
    return sum((y > x) + 0.5 * (y == x) for x in a for y in b)


def exact_u_distribution(m, n):
    """P(U = u) for untied samples of m and n, by enumerating every split of 1..m+n."""
    counts = {}
    total = 0
    for positions in itertools.combinations(range(m + n), n):
        chosen = set(positions)
        a = [i for i in range(m + n) if i not in chosen]
        u = u_statistic(a, list(positions))
        counts[u] = counts.get(u, 0) + 1
        total += 1
    return {u: c / total for u, c in counts.items()}


def normal_sf(z):
    return 0.5 * math.erfc(z / math.sqrt(2))


def normal_quantile(p):
    lo, hi = -40.0, 40.0
    for _ in range(200):
        mid = (lo + hi) / 2
        if 1 - normal_sf(mid) < p:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def tie_term(values):
    counts = {}
    for v in values:
        counts[v] = counts.get(v, 0) + 1
    return sum(t**3 - t for t in counts.values())


def mann_whitney_p(a, b, exact):
    m, n = len(a), len(b)
    u = u_statistic(a, b)
    if exact:
        dist = exact_u_distribution(m, n)
        upper = sum(p for v, p in dist.items() if v >= max(u, m * n - u))
        return u, min(1.0, 2 * upper)
    big_n = m + n
    sd = math.sqrt(m * n / 12 * ((big_n + 1) - tie_term(a + b) / (big_n * (big_n - 1))))
    z = (abs(u - m * n / 2) - 0.5) / sd
    return u, min(1.0, 2 * normal_sf(z))


def median(values):
    s = sorted(values)
    k = len(s)
    return s[k // 2] if k % 2 else (s[k // 2 - 1] + s[k // 2]) / 2


def moses(a, b, confidence, exact):
    """Hodges–Lehmann shift of the logs and its interval, as ratios; None if too few."""
    la, lb = [math.log(x) for x in a], [math.log(y) for y in b]
    diffs = sorted(y - x for x in la for y in lb)
    m, n = len(a), len(b)
    alpha = 1 - confidence
    if exact:
        dist = exact_u_distribution(m, n)
        c, tail = -1, 0.0
        for u in range(m * n + 1):
            t = sum(p for v, p in dist.items() if v <= u)
            if t <= alpha / 2 + 1e-12:
                c, tail = u, t
        if c < 0:
            return None
        coverage = 1 - 2 * tail
    else:
        big_n = m + n
        sd = math.sqrt(m * n / 12 * ((big_n + 1) - tie_term(a + b) / (big_n * (big_n - 1))))
        c = math.floor(m * n / 2 - 0.5 - normal_quantile(1 - alpha / 2) * sd)
        if c < 0:
            return None
        coverage = 1 - 2 * (1 - normal_sf((c + 0.5 - m * n / 2) / sd))
    k = c + 1
    return (
        math.exp(median(diffs)),
        math.exp(diffs[k - 1]),
        math.exp(diffs[m * n - k]),
        k,
        coverage,
    )


def exact_signed_rank_distribution(k):
    counts = {}
    for signs in itertools.product([0, 1], repeat=k):
        t = sum(r + 1 for r, s in enumerate(signs) if s)
        counts[t] = counts.get(t, 0) + 1
    return {t: c / 2**k for t, c in counts.items()}


def signed_rank_p(d, exact):
    nz = [x for x in d if x != 0]
    k = len(nz)
    r = ranks([abs(x) for x in nz])
    t_plus = sum(ri for ri, x in zip(r, nz) if x > 0)
    if exact:
        dist = exact_signed_rank_distribution(k)
        top = k * (k + 1) / 2
        upper = sum(p for v, p in dist.items() if v >= max(t_plus, top - t_plus))
        return t_plus, min(1.0, 2 * upper)
    mean = k * (k + 1) / 4
    var = k * (k + 1) * (2 * k + 1) / 24 - tie_term([abs(x) for x in nz]) / 48
    z = (abs(t_plus - mean) - 0.5) / math.sqrt(var)
    return t_plus, min(1.0, 2 * normal_sf(z))


def walsh(d, confidence):
    k = len(d)
    averages = sorted((d[i] + d[j]) / 2 for i in range(k) for j in range(i, k))
    big_m = len(averages)
    dist = exact_signed_rank_distribution(k)
    alpha = 1 - confidence
    c, tail = -1, 0.0
    for t in range(big_m + 1):
        p = sum(q for v, q in dist.items() if v <= t)
        if p <= alpha / 2 + 1e-12:
            c, tail = t, p
    if c < 0:
        return None
    return (
        math.exp(median(averages)),
        math.exp(averages[c]),
        math.exp(averages[big_m - 1 - c]),
        c + 1,
        1 - 2 * tail,
    )


if __name__ == "__main__":
    # seconds of two levels, 5 and 6 trials (continuous: no ties)
    a = [10.12, 9.87, 10.31, 10.05, 9.94]
    b = [10.71, 10.48, 11.02, 10.66, 10.39, 10.93]
    print("independent a =", a, "b =", b)
    print("  mann-whitney U, exact p:", mann_whitney_p(a, b, True))
    print("  mann-whitney U, normal p:", mann_whitney_p(a, b, False))
    print("  moses 95%:", moses(a, b, 0.95, True))
    print("  moses 99%:", moses(a, b, 0.99, True))
    # overlapping samples: p near the middle
    c = [10.2, 9.8, 10.6, 10.1, 9.7, 10.4, 10.0]
    print("overlapping a =", a, "c =", c)
    print("  mann-whitney U, exact p:", mann_whitney_p(a, c, True))
    print("  moses 95%:", moses(a, c, 0.95, True))
    # three a side: too few for 95 %, enough for 90 %
    print("three a side:", moses(a[:3], b[:3], 0.95, True), moses(a[:3], b[:3], 0.90, True))
    print("four a side:", moses(a[:4], b[:4], 0.95, True))
    # quantised integers with ties: the normal approximation
    qa = [101, 100, 100, 99, 101, 100, 102, 100, 99, 100]
    qb = [103, 102, 102, 101, 103, 102, 104, 101, 102, 103]
    print("quantised qa =", qa, "qb =", qb)
    print("  mann-whitney U, normal p:", mann_whitney_p(qa, qb, False))
    print("  moses normal 95%:", moses(qa, qb, 0.95, False))
    # paired log-ratios of 7 blocks
    d = [0.031, 0.052, -0.012, 0.044, 0.027, 0.061, 0.018]
    print("paired d =", d)
    print("  signed-rank T+, exact p:", signed_rank_p(d, True))
    print("  signed-rank T+, normal p:", signed_rank_p(d, False))
    print("  walsh 95%:", walsh(d, 0.95))
    print("  six blocks:", walsh(d[:6], 0.95), "five blocks:", walsh(d[:5], 0.95))
    dt = [0.02, 0.02, -0.01, 0.03, 0.0, 0.02, 0.05, 0.03]
    print("paired with ties and a zero dt =", dt)
    print("  signed-rank T+, normal p:", signed_rank_p(dt, False))
