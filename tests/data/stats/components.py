#!/usr/bin/env python3
"""Variance components of trials within boots, by the textbook one-way random-effects
ANOVA (method of moments, unbalanced; Searle, Casella & McCulloch §3.6), in plain Python:
the independent computation crates/stats/src/components.rs is tested against.

    python3 tests/data/stats/components.py
"""


def components(groups):
    k = len(groups)
    n = sum(len(g) for g in groups)
    grand = sum(sum(g) for g in groups) / n
    means = [sum(g) / len(g) for g in groups]
    ssb = sum(len(g) * (m - grand) ** 2 for g, m in zip(groups, means))
    ssw = sum(sum((x - m) ** 2 for x in g) for g, m in zip(groups, means))
    msb, msw = ssb / (k - 1), ssw / (n - k)
    n0 = (n - sum(len(g) ** 2 for g in groups) / n) / (k - 1)
    return msw, max(0.0, (msb - msw) / n0)


if __name__ == "__main__":
    unbalanced = [[10.1, 10.3, 9.9, 10.2, 10.0], [10.9, 11.2, 11.0], [9.6, 9.8, 9.5, 9.9]]
    close = [[10.0, 11.0, 9.0], [10.1, 9.2, 10.9]]
    for name, groups in [("unbalanced", unbalanced), ("close", close)]:
        within, between = components(groups)
        print(f"{name}: within variance {within:.15f}, between variance {between:.15f}")
