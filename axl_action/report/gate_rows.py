"""Gate table rows: from the compare engine's ``GateReport``, or from one result alone."""

from __future__ import annotations

from axl_action.compare.gates import ScorerFailure, comparison_scorer_failures, worst_scorer_failure
from axl_action.compare.models import Comparison, Gate
from axl_action.formatting import count, format_worst_scorer, pct, signed_pct, spend_shown, usd
from axl_action.report.models import GateRow
from axl_action.schema import (
    DEFAULT_MAX_ITEM_ERROR_RATE,
    as_view,
    is_budget_stopped,
    item_error_rate,
    read_accounting,
    sample_counts,
)
from axl_action.schema.view import Run

GATE_LABELS = {
    "budget": "Budget",
    "item-error-rate": "Item error rate",
    "scorer-error-rate": "Scorer error rate",
    "regressions": "Regressions",
    "cost": "Cost",
    "compatibility": "Compatibility",
    "pass-rate": "Pass rate",
}


def _format_gate_value(name: str, value: float | None) -> str:
    if value is None:
        return "—"
    if name in ("item-error-rate", "scorer-error-rate", "pass-rate"):
        return pct(value)
    if name == "budget":
        return usd(value)
    if name == "cost":
        return signed_pct(value)
    return count(value)


def _scorer_observed(failures: list[ScorerFailure]) -> str:
    worst = worst_scorer_failure(failures)
    if worst is None:
        return "—"
    if worst.failed == 0:
        return f"0% (0 of {count(sum(f.attempted for f in failures))} calls)"
    return format_worst_scorer(worst.scorer, worst.side, worst.failed, worst.attempted)


def gate_row(gate: Gate, comparison: Comparison | None = None) -> GateRow:
    """One compare-engine gate as a table row, its limit and observation formatted.

    With the comparison, the scorer error rate names the scorer and side it was observed on.
    """
    limit = "none" if gate.limit is None else _format_gate_value(gate.name, gate.limit)
    if gate.name == "cost" and gate.limit is not None:
        limit = f"+{gate.limit:g}%"
    message = gate.message
    if gate.details and gate.status != "pass":
        message += " " + " ".join(gate.details[:3])
    return GateRow(
        name=gate.name,
        label=GATE_LABELS.get(gate.name, gate.name),
        limit=limit,
        observed=(
            _scorer_observed(comparison_scorer_failures(comparison))
            if gate.name == "scorer-error-rate" and comparison is not None
            else _format_gate_value(gate.name, gate.observed)
        ),
        status=gate.status,
        message=message,
    )


def own_gates(run: Run, *, max_item_error_rate: float | None = None) -> list[GateRow]:
    """The gates one result (a model or a view) can answer without a baseline (its own figures)."""
    view = as_view(run)
    candidate = view.header
    rows: list[GateRow] = []
    acc = read_accounting(candidate)
    if acc.budget is not None:
        stopped = is_budget_stopped(candidate)
        rows.append(
            GateRow(
                name="budget",
                label="Budget",
                limit=usd(acc.budget.limit),
                observed=usd(acc.budget.known_spend),
                status="fail" if stopped else "pass",
                message=(
                    "the budget closed and refused work, so this run is incomplete by design"
                    if stopped
                    else f"budget {acc.budget.status}"
                ),
            )
        )
    else:
        rows.append(
            GateRow(
                name="budget",
                label="Budget",
                limit="none",
                observed=spend_shown(acc.known_cost, acc),
                status="skipped",
                message="no budget configured",
            )
        )
    rate = candidate.summary.item_error_rate
    if rate is None:
        limit = DEFAULT_MAX_ITEM_ERROR_RATE if max_item_error_rate is None else max_item_error_rate
        rate = item_error_rate(view, limit)
    elif max_item_error_rate is not None:
        rate = item_error_rate(view, max_item_error_rate)
    rows.append(
        GateRow(
            name="item-error-rate",
            label="Item error rate",
            limit=pct(rate.limit),
            observed=f"{pct(rate.rate)} ({rate.failed} of {rate.attempted})",
            status="fail" if rate.exceeded else ("warn" if rate.failed else "pass"),
            message=(
                f"{rate.failed} of {rate.attempted} attempted items failed in the workflow"
                if rate.failed
                else "no item failed"
            ),
        )
    )
    failures = []
    for name in candidate.scorer_names:
        c = sample_counts(view.items, name)
        failures.append(ScorerFailure(name, None, c.failed, c.scored + c.failed))
    failed = sum(f.failed for f in failures)
    degraded = candidate.summary.degraded or []
    rows.append(
        GateRow(
            name="scorer-error-rate",
            label="Scorer error rate",
            limit="per scorer" if degraded else "none",
            observed=_scorer_observed(failures),
            status="fail" if degraded else ("warn" if failed else "pass"),
            message=(
                "over tolerance: " + ", ".join(d.scorer for d in degraded)
                if degraded
                else (f"{failed} scorer call(s) failed" if failed else "no scorer failed")
            ),
        )
    )
    for name in ("regressions", "cost"):
        rows.append(
            GateRow(
                name=name,
                label=GATE_LABELS[name],
                limit="—",
                observed="—",
                status="skipped",
                message="no baseline yet",
            )
        )
    return rows
