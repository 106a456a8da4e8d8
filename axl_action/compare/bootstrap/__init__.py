"""Paired bootstrap confidence interval on score differences (spec §3).

Reproduces ``pairedBootstrapCI`` of ``@axlsdk/eval``: percentile method, resampling ``n``
indices ``floor(u * n)`` per resample from the xorshift32 stream, resample means summed left to
right (the order matters: a different summation order turns exact-zero resample means into
±1e-17 and moves ``pRegression``/``pImprovement``), bounds and p-values rounded to 4 decimals.

Two paths give the same answers: samples of 1,000-200,000 differences in thousandths (every
stored score has three decimals) go through ``integer``'s exact integer sums, which
recompute the few resamples where float summation order could matter; everything else, and
any case the fast path declines, is summed left to right like the reference (``exact``). ``core`` holds what both share.

The reference draws from ``Math.random`` when no seed is given. We always use the xorshift32
stream and, without a seed, draw one from the OS and report it, so every comparison can be
replayed with ``--seed``.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import numpy.typing as npt

from axl_action.compare.bootstrap import integer as fast
from axl_action.compare.bootstrap.core import (
    DEFAULT_ALPHA,
    DEFAULT_RESAMPLES,
    BootstrapResult,
    _sequential_mean,
    random_seed,
    round4,
)
from axl_action.compare.bootstrap.exact import _summarise, _trivial, resample_means_many

__all__ = [
    "DEFAULT_ALPHA",
    "DEFAULT_RESAMPLES",
    "BootstrapResult",
    "bootstrap_many",
    "paired_bootstrap_ci",
    "random_seed",
    "resample_means_many",
    "round4",
]


def bootstrap_many(
    samples: Mapping[str, npt.ArrayLike],
    *,
    n_resamples: int = DEFAULT_RESAMPLES,
    alpha: float = DEFAULT_ALPHA,
    seed: int,
    workers: int | None = None,
) -> dict[str, BootstrapResult]:
    """``paired_bootstrap_ci`` for each named sample, all with the same seed.

    Samples of equal length share one pass over the random stream (their results are the
    same as separate calls would give).
    """
    arrays = {name: np.asarray(v, dtype=np.float64) for name, v in samples.items()}
    results: dict[str, BootstrapResult] = {}
    resampled: list[str] = []
    for name, d in arrays.items():
        trivial = _trivial(d, n_resamples)
        if trivial is not None:
            results[name] = trivial
        else:
            resampled.append(name)
    by_length: dict[int, list[str]] = {}
    for name in _fast_path(arrays, resampled, n_resamples, alpha, seed, workers, results):
        by_length.setdefault(len(arrays[name]), []).append(name)
    for names in by_length.values():
        all_means = resample_means_many([arrays[k] for k in names], n_resamples, seed, workers=workers)
        for name, means in zip(names, all_means, strict=True):
            results[name] = _summarise(_sequential_mean(arrays[name]), means, n_resamples, alpha)
    return {name: results[name] for name in arrays}


def _fast_path(
    arrays: Mapping[str, npt.NDArray[np.float64]],
    names: list[str],
    n_resamples: int,
    alpha: float,
    seed: int,
    workers: int | None,
    results: dict[str, BootstrapResult],
) -> list[str]:
    """Fill ``results`` for the samples the integer-sum path can answer (all of them from one
    pass over the stream, whatever their lengths); return the others."""
    if n_resamples < 2:
        return names
    remaining: list[str] = []
    candidates: list[tuple[str, npt.NDArray[np.int32]]] = []
    for name in names:
        d = arrays[name]
        if not fast.MIN_N <= len(d) <= fast.MAX_N:
            remaining.append(name)
            continue
        if not np.any(d):
            # Every difference is exactly 0: every left-to-right sum is exactly 0.
            zeros = np.zeros(n_resamples)
            results[name] = BootstrapResult(0.0, 0.0, 0.0, 0.0, 0.0, zeros)
            continue
        codes = fast.as_thousandths(d)
        if codes is None:
            remaining.append(name)
        else:
            candidates.append((name, codes))
    if candidates:
        sums = fast.integer_sums([c for _, c in candidates], n_resamples, seed, workers)
        for (name, _), s in zip(candidates, sums, strict=True):
            result = fast.summarise(arrays[name], s, n_resamples, alpha, seed)
            if result is None:
                remaining.append(name)
            else:
                results[name] = result
    return remaining


def paired_bootstrap_ci(
    differences: npt.ArrayLike,
    *,
    n_resamples: int = DEFAULT_RESAMPLES,
    alpha: float = DEFAULT_ALPHA,
    seed: int | None = None,
) -> BootstrapResult:
    """Percentile bootstrap CI of the mean paired difference, exactly as the reference computes it.

    ``seed=None`` draws a random seed (the result then varies run to run, like the reference).
    """
    used = random_seed() if seed is None else seed
    return bootstrap_many({"d": differences}, n_resamples=n_resamples, alpha=alpha, seed=used)["d"]
