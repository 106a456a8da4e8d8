"""What both bootstrap paths share: the result type, the rounding, the random-stream chunking
and index arithmetic, and running ranges of resamples on threads."""

from __future__ import annotations

import math
import os
import secrets
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial
from typing import Literal

import numpy as np
import numpy.typing as npt

from axl_action.compare.prng import jump, seed_state

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
