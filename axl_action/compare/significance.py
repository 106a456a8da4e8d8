"""What a bootstrap CI means for one scorer: TS significance, our verdict, MDE, p-values, Holm."""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np
import numpy.typing as npt

from axl_action.compare.bootstrap import BootstrapResult, round4
from axl_action.compare.models import Verdict

# z quantile for 80% power; the MDE uses z(1 - alpha/2) + z(power).
POWER = 0.8


def normal_quantile(p: float) -> float:
    """Inverse standard normal CDF (Acklam's rational approximation, |error| < 1.2e-9)."""
    if not 0.0 < p < 1.0:
        raise ValueError("p must be in (0, 1)")
    a = (-3.969683028665376e01, 2.209460984245205e02, -2.759285104469687e02,
         1.383577518672690e02, -3.066479806614716e01, 2.506628277459239e00)  # fmt: skip
    b = (-5.447609879822406e01, 1.615858368580409e02, -1.556989798598866e02,
         6.680131188771972e01, -1.328068155288572e01)  # fmt: skip
    c = (-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e00,
         -2.549732539343734e00, 4.374664141464968e00, 2.938163982698783e00)  # fmt: skip
    d = (7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e00, 3.754408661907416e00)
    low = 0.02425
    if p < low:
        q = math.sqrt(-2 * math.log(p))
        return (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) / (
            (((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1
        )
    if p > 1 - low:
        return -normal_quantile(1 - p)
    q = p - 0.5
    r = q * q
    return (
        (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5])
        * q
        / (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1)
    )


def is_significant(ci: BootstrapResult, threshold: float) -> bool:
    """The reference rule: the CI excludes zero and |mean difference| >= threshold.

    A NaN threshold (garbage ``--threshold`` value) makes it false, as in TS.
    """
    upper = ci.upper if ci.upper is not None else math.nan
    excludes_zero = ci.lower > 0 or upper < 0
    return bool(excludes_zero and abs(ci.mean) >= threshold)


def verdict(ci: BootstrapResult | None, n: int, threshold: float, significant: bool) -> Verdict:
    """regressed/improved when significant; unchanged when the CI sits inside ±threshold;
    otherwise inconclusive (the CI straddles a threshold, or n < 2)."""
    if ci is None or n < 2:
        return "inconclusive"
    if significant:
        return "regressed" if ci.mean < 0 else "improved"
    upper = ci.upper if ci.upper is not None else math.nan
    if -threshold <= ci.lower and upper <= threshold:
        return "unchanged"
    return "inconclusive"


def minimum_detectable_effect(diffs: npt.NDArray[np.float64], alpha: float) -> float | None:
    """(z(1-alpha/2) + z(0.8)) * sd / sqrt(n): the smallest true mean difference a two-sided
    paired test at this alpha detects with 80% power (normal approximation)."""
    n = len(diffs)
    if n < 2:
        return None
    sd = float(np.std(diffs, ddof=1))
    z = normal_quantile(1 - alpha / 2) + normal_quantile(POWER)
    return round4(z * sd / math.sqrt(n))


def bootstrap_p_value(ci: BootstrapResult) -> float | None:
    """Two-sided p from the resample distribution: 2 * (min(#<=0, #>=0) + 1) / (R + 1), <= 1."""
    means = ci.resample_means
    r = len(means)
    if r < 2:
        return None
    at_most = int(np.count_nonzero(means <= 0))
    at_least = int(np.count_nonzero(means >= 0))
    return min(1.0, 2 * (min(at_most, at_least) + 1) / (r + 1))


def holm(p_values: Mapping[str, float], alpha: float) -> dict[str, tuple[float, bool]]:
    """Holm step-down: name -> (adjusted p, rejected at alpha)."""
    ordered = sorted(p_values.items(), key=lambda kv: (kv[1], kv[0]))
    m = len(ordered)
    out: dict[str, tuple[float, bool]] = {}
    running = 0.0
    still_rejecting = True
    for rank, (name, p) in enumerate(ordered):
        adjusted = min(1.0, (m - rank) * p)
        running = max(running, adjusted)
        still_rejecting = still_rejecting and p <= alpha / (m - rank)
        out[name] = (running, still_rejecting)
    return out
