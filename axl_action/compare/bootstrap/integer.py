"""The same bootstrap answers, computed from exact integer sums where that is provably safe.

Scores are stored with three decimals, so every paired difference ``d`` is (within 1e-16) an
integer number ``D`` of thousandths. The integer sum ``S`` of a resample's ``D`` is exact in
any order and cheap (int32 gather, SIMD row sums), and it decides everything the reference's
float sums decide, except in two situations we detect and recompute the reference way:

* ``S == 0``: the reference's left-to-right float sum may be 0 or ±1e-17, which moves
  ``pRegression``/``pImprovement``. Those resamples are re-drawn and summed exactly.
* an order statistic (the CI bounds) whose decimal mean ``S / (1000 n)`` lies exactly on a
  4-decimal rounding boundary: its float may land on either side, so its whole tie group
  (equal ``S``) is recomputed exactly.

Why nothing else can differ: the float mean differs from ``S / (1000 n)`` by at most
``(n + 1) * 2**-53`` (|d| <= 1, partial sums <= n), while two different ``S`` differ by at
least ``1 / (1000 n)`` in mean, a non-zero ``S`` is at least that far from 0, and a decimal
mean not on a boundary is at least ``1 / (20000 n)`` from one. For ``n <= 200,000`` the float
error is more than 10x smaller than those gaps. Outside that range, or when the data is not
in thousandths, or when too many resamples need recomputing, the caller uses the exact path.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial

import numpy as np
import numpy.typing as npt

import axl_action.compare.bootstrap.core as core
from axl_action.compare.prng import (
    ChunkedStream,
    Xorshift32Stream,
    jump,
    jump_many,
    seed_state,
)

I64 = npt.NDArray[np.int64]

MIN_N = 1000
"""Below this the exact path is cheap anyway."""
MAX_N = 200_000
"""Above this the float error bound is no longer far enough below the integer gaps."""
MAX_RECHECK = 64
"""More resamples needing an exact recomputation than this: use the exact path."""


def as_thousandths(d: npt.NDArray[np.float64]) -> npt.NDArray[np.int32] | None:
    """``d * 1000`` as integers when every value is within 1e-6 of one, else None."""
    if not len(d) or not np.all(np.isfinite(d)) or np.max(np.abs(d)) > 1.0:
        return None
    scaled = d * 1000
    rounded = np.rint(scaled)
    if np.max(np.abs(scaled - rounded)) > 1e-6:
        return None
    return rounded.astype(np.int32)


# Samples of equal length whose draws are the same indices share gathers: up to four of them
# are packed into one int64 column, 16 bits each, every thousandth offset to 0..2000. The
# draws are added up by lane first (``lane_steps`` draws each), and a lane's sum of a field
# is at most 2000 * lane_steps < 2**16, so no field carries into the next (the int64 may wrap
# past its sign bit; the fields' bits are exact all the same). Each field's lane sums are then
# taken apart and added up on their own, exact in int64. One gather and one sum over the
# draws serve four scorers, where two int64 columns of two 32-bit halves each took two:
# 4 scorers x 19,500 items x 1,000 resamples on one thread, 61 -> 47 ms (medians of 9).
_OFFSET = 1000
_FIELD = 16
_FIELDS = 4
_FIELD_MASK = (1 << _FIELD) - 1
assert 2 * _OFFSET * core._LANE_STEPS <= _FIELD_MASK


@dataclass(frozen=True)
class _Group:
    """The samples of one length: the columns gathered with the same indices."""

    n: int
    columns: list[npt.NDArray[np.int64]]
    members: list[int]
    """Sample positions in the caller's order; column ``i // 4`` holds member ``i`` in its
    field ``i % 4``."""


def _groups(codes: Sequence[npt.NDArray[np.int32]]) -> list[_Group]:
    by_length: dict[int, list[int]] = {}
    for k, c in enumerate(codes):
        by_length.setdefault(len(c), []).append(k)
    groups = []
    for n, members in by_length.items():
        columns = []
        for i in range(0, len(members), _FIELDS):
            column = np.zeros(n, dtype=np.int64)
            for field, member in enumerate(members[i : i + _FIELDS]):
                column |= (codes[member].astype(np.int64) + _OFFSET) << (_FIELD * field)
            columns.append(column)
        groups.append(_Group(n, columns, members))
    return groups


def _sum_positions(
    groups: Sequence[_Group], n_resamples: int, outputs: list[list[I64]], first: int, last: int, state: int
) -> None:
    """Add the sums of stream draws ``first..last-1`` to each group's column outputs
    (``state`` = stream state before draw ``first``, a chunk boundary). Resample ``r`` of a
    sample of length ``n`` is draws ``r*n .. r*n+n-1``; one that straddles ``first`` or
    ``last`` gets its two parts from two calls, which integer addition joins exactly.

    The draws stay in the block the stream's lanes wrote (``ChunkedStream.next_block``):
    integer sums do not depend on order, so a chunk's gathered values are added up per lane,
    and a resample's sum is the difference of two prefix sums ``F(end) - F(start)``, where
    ``F(q)``, the sum of the chunk's first ``q`` draws, is the lanes wholly before ``q`` plus
    the first ``q % lane_steps`` steps of the lane ``q`` falls in.
    """
    stream = ChunkedStream(state, core._CHUNK, core._LANE_STEPS)
    chunk, steps = stream.chunk, stream.lane_steps
    lanes = chunk // steps
    work = np.empty(chunk, dtype=np.uint64)
    vals = np.empty((steps, lanes), dtype=np.int64)
    lane_prefix = np.zeros(lanes + 1, dtype=np.int64)
    p = first
    while p < last:
        draws = stream.next_block().reshape(-1)
        m = min(chunk, last - p)
        for group, outs in zip(groups, outputs, strict=True):
            n = group.n
            mk = min(m, n * n_resamples - p)
            if mk <= 0:
                continue
            # Every draw of the block is gathered (an index is in range whatever the draw);
            # those from mk on fall after the last edge and are never summed.
            idx = core._indices_into(draws, n, work)
            # Edges of this chunk's segments, one resample each: 0, every resample start
            # inside, and mk. Segment j belongs to resample p // n + j.
            offset = p % n
            edges = np.arange(n - offset if offset else n, mk, n, dtype=np.intp)
            edges = np.concatenate(([0], edges, [mk]))
            lane, step = np.divmod(edges, steps)
            inside = np.minimum(lane, lanes - 1)  # an edge at the chunk's end has step 0
            r0 = p // n
            for c, column in enumerate(group.columns):
                np.take(column, idx, out=vals.reshape(-1), mode=core.GATHER_MODE)
                lane_sums = vals.sum(axis=0)
                heads = np.cumsum(vals[:, inside], axis=0)
                partial = np.where(step > 0, heads[step - 1, np.arange(len(edges))], 0)
                for field, out in enumerate(outs[_FIELDS * c : _FIELDS * (c + 1)]):
                    shift = _FIELD * field
                    np.cumsum((lane_sums >> shift) & _FIELD_MASK, out=lane_prefix[1:])
                    out[r0 : r0 + len(edges) - 1] += np.diff(
                        lane_prefix[lane] + ((partial >> shift) & _FIELD_MASK)
                    )
        p += m


def integer_sums(
    codes: Sequence[npt.NDArray[np.int32]], n_resamples: int, seed: int, workers: int | None = None
) -> list[I64]:
    """Per-resample sums of the drawn thousandths of each sample (lengths up to MAX_N).

    Every sample draws from the start of the same stream (a sample of length ``n`` uses its
    first ``n_resamples * n`` values), so the stream is generated once, for the longest,
    and each chunk of it serves every sample; samples of different lengths (scorers that
    failed on different items) no longer each generate it again. With several workers the
    stream is split into contiguous ranges of whole chunks, each from its jump-ahead state,
    with outputs of their own that are added up at the end.
    """
    groups = _groups(codes)
    total = n_resamples * max(g.n for g in groups)
    chunk = core._CHUNK
    chunks = -(-total // chunk)
    threads = max(1, min(core.worker_threads(workers), chunks))
    bounds = [min(total, chunk * (chunks * t // threads)) for t in range(threads + 1)]
    start = seed_state(seed)
    outputs = [
        [[np.zeros(n_resamples, dtype=np.int64) for _ in g.members] for g in groups] for _ in range(threads)
    ]
    core.run_parallel(
        [
            partial(
                _sum_positions,
                groups,
                n_resamples,
                outputs[t],
                bounds[t],
                bounds[t + 1],
                jump(start, bounds[t]),
            )
            for t in range(threads)
        ]
    )
    sums: list[I64 | None] = [None] * len(codes)
    for g, group in enumerate(groups):
        for k, member in enumerate(group.members):
            sums[member] = sum((out[g][k] for out in outputs[1:]), outputs[0][g][k]) - _OFFSET * group.n
    return [s for s in sums if s is not None]


def exact_means_at(d: npt.NDArray[np.float64], seed: int, resamples: Sequence[int]) -> dict[int, float]:
    """Reference-exact (left-to-right) means of the chosen resamples, re-drawn by jump-ahead."""
    n = len(d)
    out: dict[int, float] = {}
    if not resamples:
        return out
    wanted = sorted(set(resamples))
    # States before every resample start, by doubling with jumps of n * 2**j draws.
    starts = np.array([seed_state(seed)], dtype=np.uint32)
    span = n
    while len(starts) <= wanted[-1]:
        starts = np.concatenate([starts, jump_many(starts, span)])
        span *= 2
    stream = Xorshift32Stream(1)
    work = np.empty(n, dtype=np.uint64)
    for r in wanted:
        stream.reset(int(starts[r]))
        idx = core._indices_into(stream.take(n), n, work)
        drawn = d[idx]
        out[r] = float(np.add.accumulate(drawn)[-1]) / n
    return out


def _on_boundary(s: int, n: int) -> bool:
    # Decimal mean s / (1000 n) equals (k + 0.5) / 10^4 exactly iff 20 s - n is an odd multiple of n.
    return (20 * s - n) % (2 * n) == 0


def _round4_of_sum(s: int, n: int) -> float:
    # round4(s / (1000 n)) = floor(10 s / n + 1/2) / 10^4, in exact integer arithmetic.
    return ((20 * s + n) // (2 * n)) / 10000 + 0.0


def summarise(
    d: npt.NDArray[np.float64], sums: I64, n_resamples: int, alpha: float, seed: int
) -> core.BootstrapResult | None:
    """The bootstrap result from integer sums, or None when the exact path must be used."""
    n = len(d)
    order = np.argsort(sums, kind="stable")
    sorted_sums = sums[order]
    lower_pos = max(0, math.floor((alpha / 2) * n_resamples))
    upper_pos = min(n_resamples - 1, math.floor((1 - alpha / 2) * n_resamples) - 1)
    need = set(np.flatnonzero(sums == 0).tolist())
    positions = [p for p in (lower_pos, upper_pos) if p >= 0]
    for p in positions:
        s = int(sorted_sums[p])
        if _on_boundary(s, n):
            need |= set(np.flatnonzero(sums == s).tolist())
    if len(need) > MAX_RECHECK:
        return None
    recomputed = exact_means_at(d, seed, sorted(need))

    def value_at(p: int) -> float:
        s = int(sorted_sums[p])
        if not _on_boundary(s, n):
            return _round4_of_sum(s, n)
        first = int(np.searchsorted(sorted_sums, s, side="left"))
        group = sorted(recomputed[r] for r in np.flatnonzero(sums == s).tolist())
        return core.round4(group[p - first])

    zero_means = [recomputed[r] for r in np.flatnonzero(sums == 0).tolist()]
    negative = int(np.count_nonzero(sums < 0)) + sum(1 for m in zero_means if m < 0)
    positive = int(np.count_nonzero(sums > 0)) + sum(1 for m in zero_means if m > 0)
    approx = sums / 1000 / n
    for r, m in recomputed.items():
        approx[r] = m
    return core.BootstrapResult(
        lower=value_at(lower_pos),
        upper=value_at(upper_pos) if upper_pos >= 0 else None,
        mean=core.round4(core._sequential_mean(d)),
        p_regression=core.round4(negative / n_resamples),
        p_improvement=core.round4(positive / n_resamples),
        resample_means=np.sort(approx),
    )
