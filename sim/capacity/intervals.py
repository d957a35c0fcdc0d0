"""Confidence intervals with the standard library only: the Student t quantile, and the
t-interval of a mean over a few replications, clipped at a bound the figure cannot cross.

The quantile is computed, not looked up: for an integer number of degrees of freedom ν the
two-sided probability P(|T| < t) has a finite closed form in θ = atan(t / √ν) (Abramowitz and
Stegun 26.7.3 and 26.7.4), and it increases with t, so bisection inverts it to full double
precision in under a hundred steps. That is exact for every ν a sweep or a batch-means
estimate uses (1 .. a few thousand), where a table would have to interpolate between rows.

Why a clipped t-interval rather than a bootstrap: a sweep has a handful of replications per
grid point (3 by default). A bootstrap of 3 values can only resample those 3, so its interval
is far narrower than the truth (it never reaches beyond the smallest and largest value seen);
the t-interval widens honestly as the replications get fewer (t = 4.30 for 3). Its one flaw
for figures that cannot be negative (durations, counts, rates) is that it may reach below 0;
``t_interval`` clips it there and says it did.
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Sequence


def _two_sided(t: float, df: int) -> float:
    """P(|T| < t) for Student's T with ``df`` degrees of freedom, t >= 0 (A&S 26.7.3/4)."""
    theta = math.atan(t / math.sqrt(df))
    s, c2 = math.sin(theta), math.cos(theta) ** 2
    if df % 2 == 0:  # sin θ (1 + c²/2 + 1·3/(2·4) c⁴ + ... up to c^(ν-2))
        term = total = 1.0
        for k in range(2, df, 2):
            term *= c2 * (k - 1) / k
            total += term
        return s * total
    if df == 1:
        return 2.0 * theta / math.pi
    # (2/π) (θ + sin θ cos θ (1 + 2/3 c² + 2·4/(3·5) c⁴ + ... up to c^(ν-3)))
    term = total = 1.0
    for k in range(3, df - 1, 2):
        term *= c2 * (k - 1) / k
        total += term
    return 2.0 / math.pi * (theta + s * math.sqrt(c2) * total)


@lru_cache(maxsize=256)
def t_quantile(p: float, df: int) -> float:
    """The ``p`` quantile of Student's t with ``df`` degrees of freedom (scipy's
    ``stats.t.ppf(p, df)``), e.g. ``t_quantile(0.975, 2)`` = 4.3027. ``p`` in (0, 1), ``df`` an
    integer >= 1. Raises ValueError outside those ranges."""
    if isinstance(df, bool) or not isinstance(df, int) or df < 1:
        raise ValueError(f"df: degrees of freedom must be an integer >= 1, got {df!r}")
    if not 0.0 < p < 1.0:
        raise ValueError(f"p: a probability strictly between 0 and 1, got {p!r}")
    if p < 0.5:
        return -t_quantile(1.0 - p, df)
    target = 2.0 * p - 1.0
    lo, hi = 0.0, 1.0
    while _two_sided(hi, df) < target:
        hi *= 2.0
    for _ in range(200):
        mid = (lo + hi) / 2.0
        if mid in (lo, hi):
            break
        if _two_sided(mid, df) < target:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2.0


def t_interval(values: Sequence[float], level: float = 0.95,
               floor: float | None = 0.0) -> tuple[float, float, float, bool]:
    """The mean of ``values`` and its two-sided ``level`` Student-t interval over them, as
    ``(mean, low, high, clipped)``: ``low`` raised to ``floor`` when the interval reaches below
    it (a figure that cannot be smaller; None: no floor), ``clipped`` saying so. One value: the
    interval collapses to it (there is no spread to estimate); none: all NaN."""
    n = len(values)
    if n == 0:
        return math.nan, math.nan, math.nan, False
    mean = math.fsum(values) / n
    if n == 1:
        return mean, mean, mean, False
    sd = math.sqrt(math.fsum((v - mean) ** 2 for v in values) / (n - 1))
    half = t_quantile(0.5 + level / 2.0, n - 1) * sd / math.sqrt(n)
    low, high = mean - half, mean + half
    clipped = floor is not None and low < floor
    return mean, (floor if clipped else low), high, clipped
