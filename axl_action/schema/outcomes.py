"""Reader-side rules over results: coverage, scorer counts, gates and budget predicates.

These are the one place where pre-0.24 (legacy) files are interpreted: coverage derived from
items, the duration heuristic for scorer counts, the ``failures >= count`` wipeout rule.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Literal

from pydantic import BaseModel

from axl_action.schema.result import (
    Coverage,
    EvalItem,
    EvalResult,
    ItemCoverage,
    ItemErrorRate,
    ScorerCoverage,
)

DEFAULT_MAX_ITEM_ERROR_RATE = 0.05


def compute_coverage(items: Iterable[EvalItem], scorer_names: Sequence[str]) -> Coverage:
    """Count items per outcome and scorer details per outcome (runner spec §6.3)."""
    item_counts = dict.fromkeys(ItemCoverage.model_fields, 0)
    scorer_counts_: dict[str, dict[str, int]] = {
        name: dict.fromkeys(ScorerCoverage.model_fields, 0) for name in scorer_names
    }
    for item in items:
        bucket = item.bucket
        if bucket in item_counts:
            item_counts[bucket] += 1
        for name, detail in (item.score_details or {}).items():
            counts = scorer_counts_.get(name)
            if counts is not None and detail.outcome is not None and detail.outcome in counts:
                counts[detail.outcome] += 1
    return Coverage(
        items=ItemCoverage(**item_counts),
        scorers={name: ScorerCoverage(**c) for name, c in scorer_counts_.items()},
    )


def coverage_of(result: EvalResult) -> Coverage:
    """The result's coverage; derived from its items for a legacy file (no ``coverage``).

    A legacy ``"Budget exceeded"`` or ``"Cancelled"`` stub has no outcome and therefore reads
    as ``failed`` — that is the reference reader's rule, kept on purpose.
    """
    if result.summary.coverage is not None:
        return result.summary.coverage
    return compute_coverage(result.items, result.scorer_names)


def scorer_counts(items: Iterable[EvalItem], name: str) -> tuple[int, int, int]:
    """(scored, failed, skipped) of one scorer, skipping items with an error (spec §4.4)."""
    scored = failed = skipped = 0
    for item in items:
        if item.error:
            continue
        detail = (item.score_details or {}).get(name)
        if detail is None:
            continue
        if detail.outcome is not None:
            if detail.outcome == "scored":
                scored += 1
            elif detail.outcome == "failed":
                failed += 1
            elif detail.outcome == "skipped":
                skipped += 1
        elif detail.score is not None:
            scored += 1
        elif detail.skipped is True:
            skipped += 1
        elif detail.has("duration"):
            failed += 1
    return scored, failed, skipped


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


class Tolerance(BaseModel):
    """Result of ``evaluate_scorer_tolerance``."""

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


def _positive(n: object) -> float:
    if isinstance(n, int | float) and not isinstance(n, bool) and math.isfinite(n) and n > 0:
        return float(n)
    return 0.0


def refused_work(coverage: Coverage | None) -> float:
    """Items and scorers the budget refused (runner spec §8.5)."""
    if coverage is None:
        return 0.0
    total = _positive(coverage.items.budget_skipped) + _positive(coverage.items.budget_interrupted)
    for counts in coverage.scorers.values():
        total += _positive(counts.budget_skipped) + _positive(counts.budget_interrupted)
    return total


def is_budget_stopped(result: EvalResult) -> bool:
    """The budget closed AND refused work; a legacy file is never budget-stopped."""
    budget = result.accounting.budget if result.accounting is not None else None
    return bool(
        budget is not None and budget.status == "closed" and refused_work(result.summary.coverage) > 0
    )


def is_total_wipeout(result: EvalResult) -> bool:
    """Every attempted item failed (runner spec §10.3); an all-cancelled run is not one."""
    count = result.summary.count
    if count == 0:
        return False
    cov = result.summary.coverage
    if cov is None:
        return result.summary.failures >= count
    items = cov.items
    if items.completed > 0 or items.budget_skipped > 0 or items.budget_interrupted > 0:
        return False
    return items.failed == count
