"""Run-level predicates over a result's header: budget stops, wipeouts, refused work.

The per-item counting rules (coverage, ``scorerCounts``, the item error rate, degraded
scorers) live in :mod:`axl_action.schema.view`, over a run's columns.
"""

from __future__ import annotations

from axl_action.schema.numbers import finite_number
from axl_action.schema.result import Coverage, RunHeader

DEFAULT_MAX_ITEM_ERROR_RATE = 0.05


def _positive(n: object) -> float:
    if finite_number(n) and n > 0:
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


def is_budget_stopped(result: RunHeader) -> bool:
    """The budget closed AND refused work; a legacy file is never budget-stopped."""
    budget = result.accounting.budget if result.accounting is not None else None
    return bool(
        budget is not None and budget.status == "closed" and refused_work(result.summary.coverage) > 0
    )


def is_total_wipeout(result: RunHeader) -> bool:
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
