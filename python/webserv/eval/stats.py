"""The statistics of a report: Wilson intervals for success rates, paired differences with t intervals."""

from __future__ import annotations

import math
from collections.abc import Sequence

#: Two-sided 95% quantiles of Student's t by degrees of freedom (1-30); 1.96 past them.
_T975 = (
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
    2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
    2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
)  # fmt: skip
Z95 = 1.959963984540054


def wilson(successes: int, n: int, z: float = Z95) -> tuple[float, float]:
    """The 95% Wilson score interval of a success rate; (0, 1) when there are no trials."""
    if n <= 0:
        return 0.0, 1.0
    p = successes / n
    d = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / d
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / d
    return max(0.0, centre - half), min(1.0, centre + half)


def t975(df: int) -> float:
    if df < 1:
        return math.inf
    return _T975[df - 1] if df <= len(_T975) else Z95


def paired(diffs: Sequence[float]) -> dict[str, float | int | None]:
    """Mean of paired differences with its 95% t interval (None with fewer than two pairs)."""
    n = len(diffs)
    if n == 0:
        return {"n": 0, "mean": None, "low": None, "high": None}
    mean = sum(diffs) / n
    if n < 2:
        return {"n": n, "mean": mean, "low": None, "high": None}
    sd = math.sqrt(sum((d - mean) ** 2 for d in diffs) / (n - 1))
    half = t975(n - 1) * sd / math.sqrt(n)
    return {"n": n, "mean": mean, "low": mean - half, "high": mean + half}
