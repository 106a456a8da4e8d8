"""Columnar views of runs: one pass over the items, then numpy for everything per item.

A comparison of 100,000 items touches each item a dozen times (paired differences, item-level
regressions, cost certification, sample counts); doing that on pydantic objects would dominate
the run time, so each run is read once into arrays here.
"""

from __future__ import annotations

import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from axl_action.schema import EvalResult

F64 = npt.NDArray[np.float64]
Bools = npt.NDArray[np.bool_]


@dataclass(frozen=True)
class SampleCounts:
    """``scorerCounts`` of one scorer over one or more runs (spec §0.3)."""

    scored: int = 0
    failed: int = 0
    skipped: int = 0

    def __add__(self, other: SampleCounts) -> SampleCounts:
        return SampleCounts(
            self.scored + other.scored, self.failed + other.failed, self.skipped + other.skipped
        )


@dataclass
class RunArrays:
    """One run's per-item facts as arrays (index = item position in the run)."""

    result: EvalResult
    errored: Bools
    """Item has a truthy ``error`` (it did not run to completion)."""
    scores: dict[str, F64]
    """Score per scorer; NaN where the score is null or missing."""
    counts: dict[str, SampleCounts] = field(default_factory=dict)
    """Scored/failed/skipped per scorer, with the reference's rules."""

    @property
    def size(self) -> int:
        return len(self.errored)


def _bucket(detail_outcome: str | None, score: object, skipped: object, has_duration: bool) -> int:
    """0 scored, 1 failed, 2 skipped, -1 no bucket (spec §0.3 ``scorerCounts``)."""
    if detail_outcome is not None:
        return {"scored": 0, "failed": 1, "skipped": 2}.get(detail_outcome, -1)
    if score is not None:
        return 0
    if skipped is True:
        return 2
    if has_duration:
        return 1
    return -1


# Columns read straight from the JSON by the lean loader (lean.py), keyed by id(result); the
# entry is dropped when the result is garbage-collected.
_PRECOMPUTED: dict[int, RawColumns] = {}


@dataclass
class RawColumns:
    """Per-item columns extracted from raw JSON items (see ``raw_columns``)."""

    errored: Bools
    scores: dict[str, F64]
    counts: dict[str, SampleCounts]


def attach_columns(result: EvalResult, columns: RawColumns) -> None:
    """Remember columns extracted from the raw items of ``result`` (lean loading)."""
    key = id(result)
    _PRECOMPUTED[key] = columns
    weakref.finalize(result, _PRECOMPUTED.pop, key, None)


def raw_columns(items: Sequence[Mapping[str, Any]], names: Sequence[str]) -> RawColumns:
    """The same facts as ``run_arrays`` reads, from raw wire-format item dicts.

    Raises ``ValueError`` naming the item for a score that is not a number.
    """
    n = len(items)
    errored = np.zeros(n, dtype=np.bool_)
    scores = {name: np.full(n, np.nan) for name in names}
    tallies = {name: [0, 0, 0] for name in names}
    columns = [(name, scores[name], tallies[name]) for name in names]
    for i, item in enumerate(items):
        item_scores = item.get("scores") or {}
        for name, column, _ in columns:
            v = item_scores.get(name)
            if v is not None:
                if isinstance(v, bool) or not isinstance(v, int | float):
                    raise ValueError(f"items[{i}].scores.{name} is not a number")
                column[i] = v
        if item.get("error"):
            errored[i] = True
            continue
        details = item.get("scoreDetails")
        if not details:
            continue
        for name, _, tally in columns:
            detail = details.get(name)
            if not isinstance(detail, Mapping):
                continue
            b = _bucket(
                detail.get("outcome"), detail.get("score"), detail.get("skipped"), "duration" in detail
            )
            if b >= 0:
                tally[b] += 1
    counts = {name: SampleCounts(*tallies[name]) for name in names}
    return RawColumns(errored=errored, scores=scores, counts=counts)


def run_arrays(result: EvalResult, names: list[str]) -> RunArrays:
    """Read one run into arrays for the given scorer names."""
    cached = _PRECOMPUTED.get(id(result))
    if cached is not None:
        size = len(cached.errored)
        return RunArrays(
            result=result,
            errored=cached.errored,
            scores={n: cached.scores.get(n, np.full(size, np.nan)) for n in names},
            counts={n: cached.counts.get(n, SampleCounts()) for n in names},
        )
    n = len(result.items)
    errored = np.zeros(n, dtype=np.bool_)
    scores = {name: np.full(n, np.nan) for name in names}
    tallies = {name: [0, 0, 0] for name in names}
    columns = [(name, scores[name], tallies[name]) for name in names]
    for i, item in enumerate(result.items):
        item_scores = item.scores
        for name, column, _ in columns:
            v = item_scores.get(name)
            if v is not None:
                column[i] = v
        if item.error:
            errored[i] = True
            continue
        details = item.score_details
        if not details:
            continue
        for name, _, tally in columns:
            detail = details.get(name)
            if detail is None:
                continue
            b = _bucket(detail.outcome, detail.score, detail.skipped, detail.has("duration"))
            if b >= 0:
                tally[b] += 1
    counts = {name: SampleCounts(*tallies[name]) for name in names}
    return RunArrays(result=result, errored=errored, scores=scores, counts=counts)
