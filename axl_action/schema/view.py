"""``RunView``: one run as columns, the one shape that everything which counts or compares reads.

A results file lives as pydantic models (the documented schema, for reading, validating and
writing) and, inside the runner, as the ordered wire data it is about to write. Counting and
comparing need only a handful of facts per item, so a run is read once into columns here and
each rule is written once, over those columns:

* coverage (items per outcome, scorer details per outcome; runner spec §6.3, compare §0.3
  ``buildCoverage``), legacy items included;
* ``scorerCounts`` (scored / failed / skipped, compare spec §0.3), with the pre-0.24 heuristic;
* the item error rate (runner spec §10.1) and degraded scorers (§10.2);
* per-scorer stats and item timing (§4.4, §12).

Every source goes through the same extraction (:func:`item_columns`, over wire-shaped item
mappings): the runner's in-memory items, a results file's items as ``schema.io`` reads them,
and a model's items (:func:`run_view` dumps just the fields the columns need).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from axl_action.schema.itempass import (
    FAILED,
    ITEM_CODE,
    ITEM_OUTCOMES,
    NO_OUTCOME,
    SCORED,
    SCORER_OUTCOMES,
    SKIPPED,
    item_facts,
)
from axl_action.schema.itempass import ItemColumns as ItemColumns  # the view's item columns
from axl_action.schema.itempass import ScorerColumn as ScorerColumn
from axl_action.schema.numbers import compute_stats
from axl_action.schema.result import (
    Coverage,
    EvalResult,
    ItemCoverage,
    ItemErrorRate,
    RunHeader,
    ScorerCoverage,
)

F64 = npt.NDArray[np.float64]
Bools = npt.NDArray[np.bool_]
Codes = npt.NDArray[np.int8]

_FAILED = ITEM_CODE["failed"]
_COMPLETED = ITEM_CODE["completed"]

#: The item fields the columns are read from (wire names), for dumping only those of a model.
ITEM_FIELDS = frozenset(
    {
        "input",
        "error",
        "outcome",
        "failure",
        "scores",
        "score_details",
        "scorer_errors",
        "duration",
        "cost",
        "scorer_cost",
        "unpriced",
        "repeats",
    }
)


@dataclass(frozen=True, eq=False)
class SampleCounts:
    """``scorerCounts`` of one scorer over one or more runs (compare spec §0.3)."""

    scored: int = 0
    failed: int = 0
    skipped: int = 0

    def __add__(self, other: SampleCounts) -> SampleCounts:
        return SampleCounts(
            self.scored + other.scored, self.failed + other.failed, self.skipped + other.skipped
        )


@dataclass(frozen=True, eq=False)
class RunView:
    """One run: its header (everything but the items) and its item columns."""

    header: RunHeader
    items: ItemColumns

    @property
    def id(self) -> str:
        return self.header.id

    @property
    def size(self) -> int:
        return self.items.size


def item_columns(items: Sequence[Any], names: Sequence[str]) -> ItemColumns:
    """Read wire-shaped items into columns (the item pass, :func:`~axl_action.schema.itempass.
    item_facts`); raises :class:`ItemShapeError` naming the first field of the wrong type."""
    return item_facts(items, names)


def run_view(result: EvalResult) -> RunView:
    """The view of a result model: from the columns the file reader read with it, else from its
    items dumped to wire shape (only the fields read)."""
    cached = result._columns
    if cached is not None and cached.items is result.items:
        columns = cached.columns
        if isinstance(columns, ItemColumns) and columns.size == len(result.items):
            return RunView(header=result, items=columns)
    wire = result.model_dump(
        by_alias=True, exclude_unset=True, include={"items": {"__all__": set(ITEM_FIELDS)}}
    )
    return RunView(header=result, items=item_columns(wire["items"], result.scorer_names))


def prepare_validators() -> None:
    """Build the validators of the run header and of the summary's coverage models now.

    The result models build theirs on first use (commands that never validate a result do
    not pay for them). Compare calls this while its forked readers parse; the runner before
    its clock starts, so a run's ``duration`` does not count the process's one-time set-up
    (8-18 ms, about 0.5-0.9 µs per item of a 20,000-item run).
    """
    for model in (RunHeader, ItemCoverage, ScorerCoverage, Coverage, ItemErrorRate):
        model.model_rebuild()


def wire_view(wire: Mapping[str, Any], items: ItemColumns | None = None) -> RunView:
    """The view of a result held as wire data (the runner's or rescore's output, before writing).

    ``items``: columns already read from ``wire["items"]`` (the runner builds them once for
    its summary and passes them on).
    """
    from axl_action.schema.base import WIRE

    header = RunHeader.model_validate({k: v for k, v in wire.items() if k != "items"}, context=WIRE)
    if items is None:
        items = item_columns(wire.get("items") or [], header.scorer_names)
    return RunView(header=header, items=items)


# ---------------------------------------------------------------- the counting rules


def item_buckets(items: ItemColumns) -> Codes:
    """Coverage bucket per item: its outcome, or for a legacy item failed/completed by ``error``.

    A legacy ``"Budget exceeded"`` or ``"Cancelled"`` stub has no outcome and so reads as
    failed: that is the reference reader's rule, kept on purpose. Unknown outcomes: -2.
    """
    derived = np.where(items.errored, np.int8(_FAILED), np.int8(_COMPLETED)).astype(np.int8)
    return np.where(items.outcome == NO_OUTCOME, derived, items.outcome).astype(np.int8)


def item_coverage(items: ItemColumns) -> ItemCoverage:
    """Items per outcome (every key, zeros included)."""
    buckets = item_buckets(items)
    counts = np.bincount(buckets[buckets >= 0], minlength=len(ITEM_OUTCOMES))
    return ItemCoverage(**{name: int(counts[code]) for code, name in enumerate(ITEM_OUTCOMES)})


def scorer_coverage(items: ItemColumns, name: str) -> ScorerCoverage:
    """One scorer's details per *explicit* outcome (legacy details have none to count)."""
    codes = items.column(name).outcome
    counts = np.bincount(codes[codes >= 0], minlength=len(SCORER_OUTCOMES))
    return ScorerCoverage(**{o: int(counts[code]) for code, o in enumerate(SCORER_OUTCOMES)})


def compute_coverage(items: ItemColumns, scorer_names: Sequence[str]) -> Coverage:
    """``summary.coverage`` computed from the items (runner spec §6.3)."""
    return Coverage(
        items=item_coverage(items),
        scorers={name: scorer_coverage(items, name) for name in scorer_names},
    )


def coverage_of(view: RunView) -> Coverage:
    """The run's coverage: as written, or for a legacy file derived from its items."""
    if view.header.summary.coverage is not None:
        return view.header.summary.coverage
    return compute_coverage(view.items, view.header.scorer_names)


def sample_counts(items: ItemColumns, name: str) -> SampleCounts:
    """``scorerCounts(items, name)`` (compare spec §0.3)."""
    buckets = items.column(name).sample
    counts = np.bincount(buckets[buckets >= 0], minlength=3)
    return SampleCounts(int(counts[SCORED]), int(counts[FAILED]), int(counts[SKIPPED]))


DEFAULT_PASS_SCORE = 0.5
"""The score at or above which a scored item (or repeat) passes (``--pass-score``)."""


@dataclass(frozen=True)
class PassCounts:
    """How many tries of a scorer passed (``repeats`` counted one by one; :func:`pass_counts`)."""

    passed: int = 0
    tried: int = 0

    def __add__(self, other: PassCounts) -> PassCounts:
        return PassCounts(self.passed + other.passed, self.tried + other.tried)

    @property
    def rate(self) -> float | None:
        """``passed / tried``; None when nothing was tried."""
        return self.passed / self.tried if self.tried else None


def pass_counts(items: ItemColumns, name: str, pass_score: float = DEFAULT_PASS_SCORE) -> PassCounts:
    """The pass rule, per try: every repeat of an item with ``repeats``, else the item itself.

    A try whose workflow failed (or a legacy item with an error) is tried and not passed; a
    scorer that failed on it is tried and not passed; a score counts as passed at or above
    ``pass_score``. Not counted: cancelled and budget-stopped tries (nothing ran) and a
    scorer's N/A (``skipped``): they say nothing about quality."""
    whole = np.ones(items.size, dtype=np.bool_)
    if items.repeats:
        whole[list(items.repeats)] = False
    counts = _tally(items, name, pass_score, whole)
    if items.repeats:
        tries = [run for index in sorted(items.repeats) for run in items.repeats[index]]
        each = item_facts(tries, [name])
        counts = counts + _tally(each, name, pass_score, np.ones(each.size, dtype=np.bool_))
    return counts


def _tally(items: ItemColumns, name: str, pass_score: float, rows: Bools) -> PassCounts:
    column = items.column(name)
    ran_and_failed = (items.outcome == _FAILED) | ((items.outcome == NO_OUTCOME) & items.errored)
    scored = column.sample == SCORED
    tried = rows & (ran_and_failed | scored | (column.sample == FAILED))
    with np.errstate(invalid="ignore"):
        passed = rows & scored & ~ran_and_failed & (column.score >= pass_score)
    return PassCounts(int(passed.sum()), int(tried.sum()))


def scorer_values(items: ItemColumns, name: str) -> F64:
    """The non-null scores of items without an error, in item order (what stats are over)."""
    score = items.column(name).score
    kept: F64 = score[~items.errored & ~np.isnan(score)]
    return kept


def scorer_stats(items: ItemColumns, name: str) -> dict[str, Any]:
    """``summary.scorers[name]`` in wire order: stats over the scores, then the counts."""
    counts = sample_counts(items, name)
    return {
        **compute_stats(scorer_values(items, name).tolist()),
        "scored": counts.scored,
        "failed": counts.failed,
        "skipped": counts.skipped,
    }


def timing_stats(items: ItemColumns) -> dict[str, float] | None:
    """``summary.timing``: stats of the durations of items without an error, or None."""
    d = items.duration[~items.errored]
    d = d[~np.isnan(d)]
    return compute_stats(d.tolist()) if len(d) else None


def evaluate_item_error_rate(items: ItemCoverage, count: int, limit: float) -> ItemErrorRate:
    """Item error rate over attempted items; exceeded is strict (runner spec §10.1)."""
    attempted = count - items.cancelled - items.budget_skipped - items.budget_interrupted
    rate = items.failed / attempted if attempted > 0 else 0.0
    return ItemErrorRate(
        failed=items.failed,
        attempted=attempted,
        rate=rate,
        limit=limit,
        exceeded=attempted > 0 and rate > limit,
    )


def item_error_rate(view: RunView, limit: float) -> ItemErrorRate:
    """The item error rate of a run, over its coverage (derived for a legacy file)."""
    return evaluate_item_error_rate(coverage_of(view).items, view.header.summary.count, limit)


def pooled_item_error_rate(runs: Sequence[RunView]) -> float:
    """Failed over attempted items across every run of a side (``--runs N``), each run counted
    by :func:`item_error_rate` (the limit does not change the rate)."""
    rates = [item_error_rate(run, 1.0) for run in runs]
    attempted = sum(r.attempted for r in rates)
    return sum(r.failed for r in rates) / attempted if attempted else 0.0


@dataclass(frozen=True)
class Tolerance:
    """Result of :func:`evaluate_scorer_tolerance`."""

    attempted: int
    """scored + failed."""
    rate: float
    """failed / attempted (0 when nothing was attempted)."""
    exceeds: bool
    """Deterministic: any failure; LLM: rate > limit. Never true with zero attempts."""
    zero_sample: bool
    """Nothing was attempted, so the rate says nothing."""


def evaluate_scorer_tolerance(
    scored: int, failed: int, type_: Literal["llm", "deterministic"] | str, limit: float
) -> Tolerance:
    """Scorer degradation check (runner spec §10.2)."""
    attempted = scored + failed
    rate = failed / attempted if attempted > 0 else 0.0
    if attempted == 0:
        exceeds = False
    elif type_ == "deterministic":
        exceeds = failed > 0
    else:
        exceeds = rate > limit
    return Tolerance(attempted=attempted, rate=rate, exceeds=exceeds, zero_sample=attempted == 0)


def degraded_scorers(
    items: ItemColumns, scorer_types: Mapping[str, str], limit: float
) -> list[dict[str, Any]]:
    """``summary.degraded`` entries (runner spec §10.2): scorers over their error tolerance."""
    out: list[dict[str, Any]] = []
    for name, kind in scorer_types.items():
        counts = sample_counts(items, name)
        tolerance = 0.0 if kind == "deterministic" else limit
        verdict = evaluate_scorer_tolerance(counts.scored, counts.failed, kind, tolerance)
        if verdict.exceeds:
            out.append(
                {
                    "scorer": name,
                    "rate": verdict.rate,
                    "limit": 0 if kind == "deterministic" else limit,
                    "type": "deterministic" if kind == "deterministic" else "llm",
                    "scored": counts.scored,
                    "failed": counts.failed,
                }
            )
    return out


def build_summary(
    items: ItemColumns,
    scorer_types: Mapping[str, str],
    *,
    model_timing: Mapping[str, Any] | None = None,
    timing: Mapping[str, Any] | Literal["items"] | None = "items",
    item_error_limit: float | None = None,
    scorer_error_limit: float | None = None,
) -> dict[str, Any]:
    """``EvalSummary`` in wire order (runner spec §14.4), for the runner, rescore and merge.

    ``timing="items"`` computes item timing from the durations; a rescore passes its source's
    (no generation ran). The gate entries appear only when their limit is given: ``degraded``
    when a scorer is over ``scorer_error_limit``, ``itemErrorRate`` when an item failed.
    """
    names = list(scorer_types)
    cov = compute_coverage(items, names)
    count = items.size
    summary: dict[str, Any] = {
        "count": count,
        "failures": int(items.errored.sum()),
        "coverage": cov.to_wire(),
        "scorers": {name: scorer_stats(items, name) for name in names},
    }
    item_timing = timing_stats(items) if timing == "items" else timing
    if item_timing:
        summary["timing"] = dict(item_timing)
    if model_timing:
        summary["modelTiming"] = dict(model_timing)
    if scorer_error_limit is not None:
        degraded = degraded_scorers(items, scorer_types, scorer_error_limit)
        if degraded:
            summary["degraded"] = degraded
    if item_error_limit is not None:
        rate = evaluate_item_error_rate(cov.items, count, item_error_limit)
        if rate.failed > 0:
            summary["itemErrorRate"] = rate.to_wire()
    return summary


Run = EvalResult | RunView
Side = Run | Sequence[Run]


def as_view(run: Run) -> RunView:
    """A view as it is, or the view of a model."""
    return run if isinstance(run, RunView) else run_view(run)


def header_of(run: Run) -> RunHeader:
    """The header of a view, or the model itself (an ``EvalResult`` is a ``RunHeader``)."""
    return run.header if isinstance(run, RunView) else run


def as_views(side: Side) -> list[RunView]:
    """One run or a list of runs (models or views) as a list of views."""
    if isinstance(side, EvalResult | RunView):
        return [as_view(side)]
    return [as_view(r) for r in side]
