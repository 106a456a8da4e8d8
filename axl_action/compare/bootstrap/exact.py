"""The reference's bootstrap: resample means summed left to right, as ``pairedBootstrapCI``
sums them (the order matters: a different summation order turns exact-zero resample means into
±1e-17 and moves ``pRegression``/``pImprovement``)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import partial

import numpy as np
import numpy.typing as npt

import axl_action.compare.bootstrap.core as core
from axl_action.compare.bootstrap.core import (
    _LANE_STEPS,
    GATHER_MODE,
    BootstrapResult,
    _indices_into,
    _sequential_mean,
    draw_in_ranges,
    round4,
    worker_threads,
)
from axl_action.compare.prng import ChunkedStream


def _draw_range(
    samples: Sequence[npt.NDArray[np.float64]],
    outputs: list[npt.NDArray[np.float64]],
    first: int,
    last: int,
    state: int,
) -> None:
    """Resample means ``first..last-1`` of every sample; ``state`` = the stream state before
    draw ``first * n``. Works in cache-sized chunks; a resample may span chunks, its running
    sum carried over, so every sum is still the strict left-to-right one."""
    n = len(samples[0])
    total = (last - first) * n
    stream = ChunkedStream(state, core._CHUNK, _LANE_STEPS)
    chunk = stream.chunk
    raw = np.empty(chunk, dtype=np.uint32)
    work = np.empty(chunk, dtype=np.uint64)
    # drawn[0] is scratch: it takes the carried sum in front of the chunk's first draws.
    drawn = [np.empty(chunk + 1, dtype=np.float64) for _ in samples]
    carry = [0.0] * len(samples)
    filled = 0  # draws of the current resample already summed
    r = first
    done = 0
    while done < total:
        stream.next_chunk(raw)
        m = min(chunk, total - done)
        idx = _indices_into(raw[:m], n, work)
        for k, sample in enumerate(samples):
            np.take(sample, idx, out=drawn[k][1 : m + 1], mode=GATHER_MODE)
        i = 0
        while i < m:
            if filled == 0 and m - i >= n:
                # Whole resamples: one accumulate over a (rows, n) view.
                rows = (m - i) // n
                for k in range(len(samples)):
                    block = drawn[k][1 + i : 1 + i + rows * n].reshape(rows, n)
                    np.add.accumulate(block, axis=1, out=block)
                    outputs[k][r : r + rows] = block[:, -1] / n
                r += rows
                i += rows * n
                continue
            take = min(n - filled, m - i)
            for k in range(len(samples)):
                seg = drawn[k][i : i + take + 1]
                seg[0] = carry[k]
                np.add.accumulate(seg, out=seg)
                carry[k] = float(seg[-1])
            filled += take
            i += take
            if filled == n:
                for k in range(len(samples)):
                    outputs[k][r] = carry[k] / n
                    carry[k] = 0.0
                r += 1
                filled = 0
        done += m


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
    With several workers the resamples are split into contiguous ranges, each starting at
    its own jump-ahead state; numpy releases the GIL for the heavy parts.
    """
    n = len(samples[0])
    if any(len(s) != n for s in samples):
        raise ValueError("resample_means_many needs samples of equal length")
    outputs = [np.empty(n_resamples, dtype=np.float64) for _ in samples]
    threads = worker_threads(workers)
    # Threads only pay off for enough draws.
    if n * n_resamples < 4 * core._CHUNK:
        threads = 1
    draw_in_ranges(partial(_draw_range, samples, outputs), n, n_resamples, seed, threads)
    return outputs


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
