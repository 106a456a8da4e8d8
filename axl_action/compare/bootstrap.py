"""Paired bootstrap confidence interval on score differences (spec §3).

Reproduces ``pairedBootstrapCI`` of ``@axlsdk/eval``: percentile method, resampling ``n``
indices ``floor(u * n)`` per resample from the xorshift32 stream, resample means summed left to
right (the order matters: a different summation order turns exact-zero resample means into
±1e-17 and moves ``pRegression``/``pImprovement``), bounds and p-values rounded to 4 decimals.

Two paths give the same answers: samples of 1,000-200,000 differences in thousandths (every
stored score has three decimals) go through ``bootstrap_fast``'s exact integer sums, which
recompute the few resamples where float summation order could matter; everything else, and
any case the fast path declines, is summed here left to right like the reference.

The reference draws from ``Math.random`` when no seed is given. We always use the xorshift32
stream and, without a seed, draw one from the OS and report it, so every comparison can be
replayed with ``--seed``.
"""

from __future__ import annotations

import math
import os
import secrets
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial
from typing import Literal

import numpy as np
import numpy.typing as npt

from axl_action.compare.prng import ChunkedStream, jump, seed_state

DEFAULT_RESAMPLES = 1000
DEFAULT_ALPHA = 0.05

# Draws per chunk: sized so the chunk's index and value buffers stay in the CPU cache. Each
# worker's buffers are new memory, paid for in page faults: 2**18 draws (3,400 faults for the
# 20,000 x 4 integer sums on two threads) took 89 ms and 137 ms of CPU, against 98 and 172 ms
# for 2**19 (4,500 faults) and 88 and 131 ms for 2**17, whose loop runs twice as often
# (medians of 7 fresh processes each; a whole compare: -4% wall at 20k and at 100k items).
_CHUNK = 1 << 18
_LANE_STEPS = 32
# How the draws are gathered: every index is already in range, and numpy's default
# ``mode="raise"`` checks each one and writes through a buffered copy of ``out``; ``"wrap"``
# does neither (an index in range wraps to itself): 0.20 ms instead of 0.31 ms for 2**19
# int32 draws from 100,000 values, 0.24 instead of 0.48 ms for int64.
GATHER_MODE: Literal["wrap"] = "wrap"
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
    stream = ChunkedStream(state, _CHUNK, _LANE_STEPS)
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
    if n * n_resamples < 4 * _CHUNK:
        threads = 1
    draw_in_ranges(partial(_draw_range, samples, outputs), n, n_resamples, seed, threads)
    return outputs


def worker_threads(workers: int | None) -> int:
    """``workers``, or by default two threads where the machine has two cores."""
    return workers if workers is not None else min(2, os.cpu_count() or 1)


def draw_in_ranges(
    draw_range: Callable[[int, int, int], None], n: int, n_resamples: int, seed: int, threads: int
) -> None:
    """Call ``draw_range(first, last, state)`` over resamples ``0..n_resamples-1`` of ``n``
    draws each, split into up to ``threads`` contiguous ranges of whole resamples run in
    parallel; ``state`` is the seed's stream jumped ahead to draw ``first * n``, so the
    split never changes a single draw."""
    threads = max(1, min(threads, n_resamples))
    bounds = [n_resamples * t // threads for t in range(threads + 1)]
    start = seed_state(seed)
    run_parallel(
        [partial(draw_range, bounds[t], bounds[t + 1], jump(start, bounds[t] * n)) for t in range(threads)]
    )


def run_parallel(jobs: Sequence[Callable[[], None]]) -> None:
    """Run the jobs, on a thread each when there are several (numpy releases the GIL for the
    heavy parts); re-raises the first failure."""
    if len(jobs) == 1:
        jobs[0]()
        return
    with ThreadPoolExecutor(max_workers=len(jobs)) as pool:
        for future in [pool.submit(job) for job in jobs]:
            future.result()


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
    from axl_action.compare import bootstrap_fast as fast

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
