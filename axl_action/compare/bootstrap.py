"""Paired bootstrap confidence interval on score differences (spec §3).

Reproduces ``pairedBootstrapCI`` of ``@axlsdk/eval``: percentile method, resampling ``n``
indices ``floor(u * n)`` per resample from the xorshift32 stream, resample means summed left to
right (the order matters: a different summation order turns exact-zero resample means into
±1e-17 and moves ``pRegression``/``pImprovement``), bounds and p-values rounded to 4 decimals.

The reference draws from ``Math.random`` when no seed is given. We always use the xorshift32
stream and, without a seed, draw one from the OS and report it, so every comparison can be
replayed with ``--seed``.
"""

from __future__ import annotations

import math
import os
import secrets
import threading
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from axl_action.compare.prng import Xorshift32Stream, apply_jump, jump_columns, seed_state

DEFAULT_RESAMPLES = 1000
DEFAULT_ALPHA = 0.05

# Positions drawn per block: bounds the working memory (~8 bytes x a few arrays x this).
_BLOCK_POSITIONS = 1 << 21
# Integer index arithmetic is exact while u * n < 2**53 (see _indices).
_EXACT_INT_LIMIT = 1 << 21


def round4(x: float) -> float:
    """JS ``Math.round(x * 10000) / 10000`` with negative zero normalised to 0."""
    return math.floor(x * 10000 + 0.5) / 10000 + 0.0


@dataclass(frozen=True)
class BootstrapResult:
    """What ``pairedBootstrapCI`` returns. ``upper`` is None only for ``n_resamples == 1``."""

    lower: float
    upper: float | None
    mean: float
    p_regression: float
    p_improvement: float
    # The resample means, sorted (empty for n < 2); kept for verdicts that need quantiles.
    resample_means: npt.NDArray[np.float64]


def random_seed() -> int:
    """A fresh non-zero 31-bit seed for an unseeded comparison."""
    return secrets.randbelow(2**31 - 1) + 1


def _indices_into(raw: npt.NDArray[np.uint32], n: int, work: npt.NDArray[np.uint64]) -> npt.NDArray[np.intp]:
    # JS: Math.floor((u / 2**32) * n). u / 2**32 is exact; when u * n < 2**53 the product is
    # exact too, so the integer form (u * n) >> 32 gives the same floor without float work.
    work = work[: len(raw)]
    if n < _EXACT_INT_LIMIT:
        np.multiply(raw, np.uint64(n), out=work, dtype=np.uint64)
        np.right_shift(work, np.uint64(32), out=work)
        return work.view(np.intp)
    scaled = np.floor(raw.astype(np.float64) * (n / 4294967296.0))
    return scaled.astype(np.intp)


class _Worker(threading.local):
    """Per-thread generator and buffers (fresh buffers of this size cost more in page faults
    than the arithmetic does, so each thread keeps its own across blocks)."""

    def __init__(self) -> None:
        self.stream = Xorshift32Stream(1)
        self.size = 0
        self.raw = np.empty(0, dtype=np.uint32)
        self.work = np.empty(0, dtype=np.uint64)
        self.drawn = np.empty(0, dtype=np.float64)

    def ensure(self, size: int) -> None:
        if self.size < size:
            self.size = size
            self.raw = np.empty(size, dtype=np.uint32)
            self.work = np.empty(size, dtype=np.uint64)
            self.drawn = np.empty(size, dtype=np.float64)


def resample_means_many(
    samples: Sequence[npt.NDArray[np.float64]],
    n_resamples: int,
    seed: int,
    *,
    workers: int | None = None,
) -> list[npt.NDArray[np.float64]]:
    """Unsorted resample means for several samples of the same length drawn with one seed.

    Every sample sees the same index draws, so each result equals what
    ``pairedBootstrapCI(sample, {seed})`` computes on its own; the draws are made once.
    Resample blocks are independent stretches of the stream (their start states are jumps
    ahead), so they run on worker threads; numpy releases the GIL for the heavy parts.
    """
    n = len(samples[0])
    if any(len(s) != n for s in samples):
        raise ValueError("resample_means_many needs samples of equal length")
    outputs = [np.empty(n_resamples, dtype=np.float64) for _ in samples]
    per_block = min(n_resamples, max(1, _BLOCK_POSITIONS // n))
    blocks = -(-n_resamples // per_block)
    # Start state of block b = the state after b * per_block * n draws.
    jump_block = jump_columns(per_block * n)
    starts = [seed_state(seed)]
    for _ in range(blocks - 1):
        starts.append(apply_jump(jump_block, starts[-1]))
    local = _Worker()

    def run(block: int) -> None:
        first = block * per_block
        rows = min(per_block, n_resamples - first)
        size = rows * n
        local.ensure(size)
        local.stream.reset(starts[block])
        idx = _indices_into(local.stream.take(size, local.raw), n, local.work)
        for sample, out in zip(samples, outputs, strict=True):
            drawn = np.take(sample, idx, out=local.drawn[:size]).reshape(rows, n)
            # add.accumulate is strictly sequential (np.sum would sum pairwise).
            np.add.accumulate(drawn, axis=1, out=drawn)
            out[first : first + rows] = drawn[:, -1] / n

    threads = workers if workers is not None else min(2, os.cpu_count() or 1)
    if threads <= 1 or blocks == 1:
        for b in range(blocks):
            run(b)
    else:
        with ThreadPoolExecutor(max_workers=threads) as pool:
            list(pool.map(run, range(blocks)))
    return outputs


def _sequential_mean(values: npt.NDArray[np.float64]) -> float:
    total = 0.0
    if len(values) > 0:
        total = float(np.add.accumulate(values)[-1])
    return total / len(values)


def _summarise(
    mean: float, means: npt.NDArray[np.float64], n_resamples: int, alpha: float
) -> BootstrapResult:
    means = np.sort(means)
    lower_idx = math.floor((alpha / 2) * n_resamples)
    upper_idx = math.floor((1 - alpha / 2) * n_resamples) - 1
    lower = round4(float(means[max(0, lower_idx)]))
    upper_pos = min(n_resamples - 1, upper_idx)
    # JS reads means[-1] as undefined -> NaN -> JSON null; only happens for n_resamples == 1.
    upper = round4(float(means[upper_pos])) if upper_pos >= 0 else None
    return BootstrapResult(
        lower=lower,
        upper=upper,
        mean=round4(mean),
        p_regression=round4(int(np.count_nonzero(means < 0)) / n_resamples),
        p_improvement=round4(int(np.count_nonzero(means > 0)) / n_resamples),
        resample_means=means,
    )


def _trivial(d: npt.NDArray[np.float64], n_resamples: int) -> BootstrapResult | None:
    """The closed-form cases (n < 2 or no resampling), or None when resampling is needed."""
    n = len(d)
    empty = np.empty(0, dtype=np.float64)
    if n == 0:
        return BootstrapResult(0.0, 0.0, 0.0, 0.0, 0.0, empty)
    mean = _sequential_mean(d)
    p_reg = 1.0 if mean < 0 else 0.0
    p_imp = 1.0 if mean > 0 else 0.0
    if n == 1:
        one = float(d[0])
        return BootstrapResult(one, one, mean, p_reg, p_imp, np.array([one]))
    if n_resamples <= 0:
        m = round4(mean)
        return BootstrapResult(m, m, m, p_reg, p_imp, empty)
    return None


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
    by_length: dict[int, list[str]] = {}
    for name, d in arrays.items():
        trivial = _trivial(d, n_resamples)
        if trivial is not None:
            results[name] = trivial
        else:
            by_length.setdefault(len(d), []).append(name)
    for names in by_length.values():
        all_means = resample_means_many([arrays[k] for k in names], n_resamples, seed, workers=workers)
        for name, means in zip(names, all_means, strict=True):
            results[name] = _summarise(_sequential_mean(arrays[name]), means, n_resamples, alpha)
    return {name: results[name] for name in arrays}


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
