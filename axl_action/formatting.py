"""Formatting shared by the console and every report: numbers, money, spend, coverage lines.

One module, typed over the schema models and the run view, so that the console table, the
PR comment, the job summary and the HTML report say the same thing the same way. The report
filters (:func:`num`, :func:`usd`, ...) and the console's reference-exact lines
(:func:`format_known_spend`, :func:`format_coverage_line`, ...) both live here.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from decimal import ROUND_HALF_DOWN, ROUND_HALF_UP, Decimal

from axl_action.compare.text import to_fixed
from axl_action.schema import (
    Coverage,
    EvalAccounting,
    ItemColumns,
    ItemErrorRate,
    ModelTimingStats,
    Stats,
    format_percent,
    js_number,
)
from axl_action.schema.view import ITEM_CODE

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f\x9b]")


def clean(text: object) -> str:
    """``str(text)`` with terminal control characters replaced by ``?``.

    The console prints untrusted strings (scorer names, error messages) as they are, but a
    model output must not move the cursor or clear the screen.
    """
    return _CONTROL.sub("?", str(text))


def js_round(x: float) -> int:
    """JS ``Math.round`` (halves toward +infinity)."""
    return int(Decimal(x).quantize(Decimal(1), rounding=ROUND_HALF_UP if x >= 0 else ROUND_HALF_DOWN))


def format_known_spend(accounting: EvalAccounting) -> str:
    """``$1.50``, ``$1.50 (unverified)``, ``$0.00 (incomplete: 2 unpriced_model)``."""
    cost = f"${to_fixed(accounting.known_cost or 0, 2)}"
    if accounting.completeness == "complete":
        return cost
    if accounting.completeness == "unverified":
        return f"{cost} (unverified)"
    reasons = ", ".join(f"{n} {r}" for r, n in (accounting.reasons or {}).items())
    return f"{cost} (incomplete: {reasons or 'unknown spend'})"


def format_budget_line(accounting: EvalAccounting) -> str | None:
    """``  Budget: ...`` or ``None`` without a budget."""
    budget = accounting.budget
    if budget is None:
        return None
    limit = f"${to_fixed(budget.limit, 2)}"
    spent = f"${to_fixed(budget.known_spend, 2)}"
    if budget.status == "open":
        return f"  Budget: {spent} of {limit} (open)"
    by = f", first observed by {budget.closed_by}" if budget.closed_by else ""
    return (
        f"  Budget: STOPPED — {spent} known spend against a {limit} limit, "
        f"${to_fixed(budget.known_overshoot, 2)} over{by}"
    )


def _failure_label(failure: Mapping[str, object]) -> str:
    status = failure.get("status")
    if not isinstance(status, int | float) or isinstance(status, bool):
        return "other"
    code = "network" if status == 0 else js_number(status)
    provider = failure.get("provider")
    return f"{code} ({clean(provider)})" if provider else code


def format_failure_causes(items: ItemColumns) -> str | None:
    """``  Failure causes: 5 × 429 (openai), 2 × other``."""
    counts: dict[str, int] = {}
    failed = ITEM_CODE["failed"]
    for i in range(items.size):
        if int(items.outcome[i]) != failed:
            continue
        label = _failure_label(items.failures.get(i) or {})
        counts[label] = counts.get(label, 0) + 1
    if not counts:
        return None
    groups = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0].lower(), kv[0]))
    return "  Failure causes: " + ", ".join(f"{n} × {label}" for label, n in groups)


def format_coverage_line(
    coverage: Coverage | None, rate: ItemErrorRate | None, items: ItemColumns | None = None
) -> str | None:
    """``  Items: 94 completed, 6 failed — item error rate 6% (limit 10%)`` (+ causes line)."""
    if coverage is None:
        return None
    counts = coverage.items
    labels = (
        ("failed", counts.failed),
        ("cancelled", counts.cancelled),
        ("budget-skipped", counts.budget_skipped),
        ("budget-interrupted", counts.budget_interrupted),
    )
    parts = [f"{n} {label}" for label, n in labels if n > 0]
    if not parts:
        return None
    suffix = (
        f" — item error rate {format_percent(rate.rate)} (limit {format_percent(rate.limit)})" if rate else ""
    )
    line = f"  Items: {counts.completed} completed, {', '.join(parts)}{suffix}"
    causes = format_failure_causes(items) if items is not None else None
    return f"{line}\n{causes}" if causes else line


def _stat(value: Stats | float | None, key: str) -> float:
    if isinstance(value, Stats):
        return float(getattr(value, key))
    return float(value) if isinstance(value, int | float) else 0.0


def format_model_timing_lines(
    model_timing: Mapping[str, ModelTimingStats] | None, name_width: int
) -> list[str]:
    """One ``    model  wire m/p · ... (N calls, mean/p95 per call)`` line per model."""
    lines: list[str] = []
    for model, t in (model_timing or {}).items():
        parts = [f"wire {js_round(_stat(t.wire_ms, 'mean'))}ms/{js_round(_stat(t.wire_ms, 'p95'))}ms"]
        if t.first_token_ms is not None:
            first = t.first_token_ms
            parts.append(f"first token {js_round(first.mean)}ms/{js_round(first.p95)}ms")
        parts.append(f"queued {js_round(_stat(t.queued_ms, 'mean'))}ms")
        parts.append(f"retries {js_round(_stat(t.retry_ms, 'mean'))}ms")
        if t.rate_limit_retries:
            parts.append(f"rate-limited {t.rate_limit_retries}×")
        calls = t.calls
        lines.append(
            f"    {clean(model).ljust(max(name_width - 2, 0))}  {' · '.join(parts)}  "
            f"({calls} call{'' if calls == 1 else 's'}, mean/p95 per call)"
        )
    return lines


def _finite(x: float | None) -> bool:
    return x is not None and isinstance(x, int | float) and math.isfinite(x)


def num(x: float | None, digits: int = 3) -> str:
    """Fixed decimals, or an em dash when missing."""
    return f"{x:.{digits}f}" if x is not None and _finite(x) else "—"


def signed(x: float | None, digits: int = 3) -> str:
    """Fixed decimals with an explicit ``+`` (``−`` rendered as a real minus sign)."""
    if x is None or not _finite(x):
        return "—"
    if round(x, digits) == 0:
        return f"{0:.{digits}f}"
    return f"+{x:.{digits}f}" if x > 0 else f"−{abs(x):.{digits}f}"


def usd(x: float | None, digits: int = 2) -> str:
    """``$1.23``; amounts below a cent keep 4 decimals so they do not read as free."""
    if x is None or not _finite(x):
        return "—"
    if 0 < abs(x) < 0.01 and digits == 2:
        digits = 4
    return f"-${abs(x):.{digits}f}" if x < 0 else f"${x:.{digits}f}"


def signed_usd(x: float | None) -> str:
    """``+$0.12`` / ``−$0.12``."""
    if x is None or not _finite(x):
        return "—"
    if x == 0:
        return "$0.00"
    return ("+" if x > 0 else "−") + usd(abs(x))


def pct(rate: float | None) -> str:
    """A rate in [0, 1] as ``formatPercent`` prints it (``5%``, ``73.7%``)."""
    return format_percent(rate) if rate is not None and _finite(rate) else "—"


def signed_pct(percent: float | None, digits: int = 1) -> str:
    """An already-multiplied percentage with sign: ``+13.3%``."""
    if percent is None or not _finite(percent):
        return "—"
    return signed(percent, digits) + "%"


def ms(x: float | None) -> str:
    """Milliseconds, switching to seconds from 10 s."""
    if x is None or not _finite(x):
        return "—"
    if abs(x) >= 10_000:
        return f"{x / 1000:.1f}s"
    return f"{math.floor(x + 0.5)}ms"


def count(n: int | float | None) -> str:
    """Thousands separators: ``12,345``."""
    if n is None or not _finite(n):
        return "—"
    return f"{int(n):,}" if float(n).is_integer() else f"{n:,.2f}"


def plural(n: int, word: str, many: str | None = None) -> str:
    """``1 item`` / ``3 items``."""
    return f"{count(n)} {word if n == 1 else (many or word + 's')}"
