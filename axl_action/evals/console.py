"""Console output of the run command: the result table and the gate/stop lines (compare spec §9).

Pure functions from wire data (the ordered dicts the runner builds, or ``to_wire()`` of a
loaded result) to lines of text. Untrusted strings (scorer names, error messages) are printed
as they are: this is a terminal, not HTML, but control characters are replaced so a model
output cannot move the cursor or clear the screen.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from decimal import ROUND_HALF_DOWN, ROUND_HALF_UP, Decimal
from typing import Any

from axl_action.compare.text import to_fixed
from axl_action.schema import (
    EvalItem,
    EvalResult,
    is_budget_stopped,
    is_total_wipeout,
    read_accounting,
    scorer_counts,
)
from axl_action.schema.numbers import format_percent

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f\x9b]")


def clean(text: object) -> str:
    """``str(text)`` with terminal control characters replaced by ``?``."""
    return _CONTROL.sub("?", str(text))


def js_round(x: float) -> int:
    """JS ``Math.round`` (halves toward +infinity)."""
    return int(Decimal(x).quantize(Decimal(1), rounding=ROUND_HALF_UP if x >= 0 else ROUND_HALF_DOWN))


def format_known_spend(accounting: Mapping[str, Any]) -> str:
    """``$1.50``, ``$1.50 (unverified)``, ``$0.00 (incomplete: 2 unpriced_model)``."""
    cost = f"${to_fixed(accounting.get('knownCost', 0) or 0, 2)}"
    completeness = accounting.get("completeness")
    if completeness == "complete":
        return cost
    if completeness == "unverified":
        return f"{cost} (unverified)"
    reasons = ", ".join(f"{n} {r}" for r, n in (accounting.get("reasons") or {}).items())
    return f"{cost} (incomplete: {reasons or 'unknown spend'})"


def _light(result: Mapping[str, Any]) -> EvalResult:
    """The result without its items, as a schema model (the predicates read only the rest)."""
    return EvalResult.model_validate({**result, "items": []})


def read_accounting_wire(result: Mapping[str, Any]) -> Mapping[str, Any]:
    """The result's accounting, or the ``unverified`` stand-in of a pre-0.24 file."""
    accounting: Mapping[str, Any] | None = result.get("accounting")
    if accounting is not None:
        return accounting
    return read_accounting(_light(result)).to_wire()


def format_budget_line(accounting: Mapping[str, Any]) -> str | None:
    """``  Budget: ...`` or ``None`` without a budget."""
    budget = accounting.get("budget")
    if not budget:
        return None
    limit = f"${to_fixed(budget['limit'], 2)}"
    spent = f"${to_fixed(budget['knownSpend'], 2)}"
    if budget.get("status") == "open":
        return f"  Budget: {spent} of {limit} (open)"
    by = f", first observed by {budget['closedBy']}" if budget.get("closedBy") else ""
    return (
        f"  Budget: STOPPED — {spent} known spend against a {limit} limit, "
        f"${to_fixed(budget['knownOvershoot'], 2)} over{by}"
    )


def format_failure_causes(result: Mapping[str, Any]) -> str | None:
    """``  Failure causes: 5 × 429 (openai), 2 × other``."""
    counts: dict[str, int] = {}
    for item in result.get("items") or []:
        if item.get("outcome") != "failed":
            continue
        failure = item.get("failure") or {}
        label = "other"
        if failure.get("status") is not None:
            status = "network" if failure["status"] == 0 else str(failure["status"])
            label = f"{status} ({clean(failure['provider'])})" if failure.get("provider") else status
        counts[label] = counts.get(label, 0) + 1
    if not counts:
        return None
    groups = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0].lower(), kv[0]))
    return "  Failure causes: " + ", ".join(f"{n} × {label}" for label, n in groups)


def format_coverage_line(result: Mapping[str, Any]) -> str | None:
    """``  Items: 94 completed, 6 failed — item error rate 6% (limit 10%)`` (+ causes line)."""
    summary = result.get("summary") or {}
    items = (summary.get("coverage") or {}).get("items")
    if not items:
        return None
    labels = (
        ("failed", "failed"),
        ("cancelled", "cancelled"),
        ("budget-skipped", "budget_skipped"),
        ("budget-interrupted", "budget_interrupted"),
    )
    parts = [f"{items.get(key, 0)} {label}" for label, key in labels if items.get(key, 0) > 0]
    if not parts:
        return None
    rate = summary.get("itemErrorRate")
    suffix = (
        f" — item error rate {format_percent(rate['rate'])} (limit {format_percent(rate['limit'])})"
        if rate
        else ""
    )
    line = f"  Items: {items.get('completed', 0)} completed, {', '.join(parts)}{suffix}"
    causes = format_failure_causes(result)
    return f"{line}\n{causes}" if causes else line


def format_model_timing_lines(model_timing: Mapping[str, Any] | None, name_width: int) -> list[str]:
    """One ``    model  wire m/p · ... (N calls, mean/p95 per call)`` line per model."""
    lines: list[str] = []
    for model, t in (model_timing or {}).items():
        parts = [f"wire {js_round(t['wireMs']['mean'])}ms/{js_round(t['wireMs']['p95'])}ms"]
        if t.get("firstTokenMs"):
            first = t["firstTokenMs"]
            parts.append(f"first token {js_round(first['mean'])}ms/{js_round(first['p95'])}ms")
        parts.append(f"queued {js_round(t['queuedMs']['mean'])}ms")
        parts.append(f"retries {js_round(t['retryMs']['mean'])}ms")
        if t.get("rateLimitRetries"):
            parts.append(f"rate-limited {t['rateLimitRetries']}×")
        calls = t.get("calls", 0)
        lines.append(
            f"    {clean(model).ljust(max(name_width - 2, 0))}  {' · '.join(parts)}  "
            f"({calls} call{'' if calls == 1 else 's'}, mean/p95 per call)"
        )
    return lines


def _sample_counts(result: Mapping[str, Any], name: str, entry: Mapping[str, Any]) -> tuple[int, int, int]:
    if (
        entry.get("scored") is not None
        and entry.get("failed") is not None
        and entry.get("skipped") is not None
    ):
        return entry["scored"], entry["failed"], entry["skipped"]
    items = [EvalItem.model_validate(i) for i in result.get("items") or []]
    scored, failed, skipped = scorer_counts(items, name)
    if entry.get("scored") is not None and entry.get("failed") is not None:
        return entry["scored"], entry["failed"], skipped
    return scored, failed, skipped


def _workflows(metadata: Mapping[str, Any]) -> str:
    workflows = metadata.get("workflows")
    names = [clean(w) for w in workflows if isinstance(w, str)] if isinstance(workflows, list) else []
    return ", ".join(names) if names else "(unknown)"


def format_table(result: Mapping[str, Any]) -> str:
    """The single-run table (compare spec §9.1)."""
    summary = result.get("summary") or {}
    scorers: Mapping[str, Any] = summary.get("scorers") or {}
    width = max([6, *(len(clean(n)) for n in scorers)])
    lines = [
        f"Eval: {_workflows(result.get('metadata') or {})} x {clean(result.get('dataset', ''))} "
        f"({summary.get('count', 0)} items)",
        "  "
        + "Scorer".ljust(width)
        + "".join("  " + h.rjust(8) for h in ("Mean", "Min", "Max", "p50", "p95")),
        "  " + "─" * (width + 2 + 10 * 5),
    ]
    for name, entry in scorers.items():
        scored, failed, skipped = _sample_counts(result, name, entry)
        notes = []
        if failed > 0:
            notes.append(f"{scored}/{scored + failed} scored, {failed} failed")
        if skipped > 0:
            notes.append(f"{skipped} N/A")
        values = "".join(
            "  " + ("--" if scored == 0 else to_fixed(entry.get(k, 0), 2)).rjust(8)
            for k in ("mean", "min", "max", "p50", "p95")
        )
        lines.append("  " + clean(name).ljust(width) + values + (f"   ({', '.join(notes)})" if notes else ""))
    timing = summary.get("timing")
    if timing:
        secs = [to_fixed(timing[k] / 1000, 2).rjust(8) for k in ("mean", "p50", "p95")]
        lines.append("  " + "Timing".ljust(width) + "  " + "s ".join(secs) + "s")
    lines.extend(format_model_timing_lines(summary.get("modelTiming"), width))
    lines.append("")
    accounting = read_accounting_wire(result)
    lines.append(
        f"  Failures: {summary.get('failures', 0)}/{summary.get('count', 0)} | "
        f"Cost: {format_known_spend(accounting)} | "
        f"Duration: {to_fixed((result.get('duration') or 0) / 1000, 1)}s"
    )
    for extra in (format_budget_line(accounting), format_coverage_line(result)):
        if extra:
            lines.append(extra)
    messages: list[str] = []
    affected = 0
    for item in result.get("items") or []:
        errors = item.get("scorerErrors") or []
        if errors:
            affected += 1
        for message in errors:
            if message not in messages:
                messages.append(message)
    if messages:
        lines.append("")
        lines.append(f"  Scorer errors ({affected}/{summary.get('count', 0)} items affected):")
        lines.extend(f"    - {clean(m)}" for m in messages[:5])
        if len(messages) > 5:
            lines.append(f"    ... and {len(messages) - 5} more")
    return "\n".join(lines)


def budget_stop_message(result: Mapping[str, Any], label: str) -> str | None:
    """``[axl-eval] BUDGET STOPPED: ...`` when the budget closed and refused work."""
    light = _light(result)
    if not is_budget_stopped(light):
        return None
    budget = read_accounting(light).budget
    assert budget is not None
    coverage = light.summary.coverage
    stopped = (
        f" {coverage.items.budget_skipped} case(s) never started, {coverage.items.budget_interrupted} "
        f"stopped mid-flight, {coverage.items.completed} completed."
        if coverage is not None
        else ""
    )
    return (
        f"[axl-eval] BUDGET STOPPED: {label} — known spend ${to_fixed(budget.known_spend, 2)} reached "
        f"the ${to_fixed(budget.limit, 2)} limit (over by ${to_fixed(budget.known_overshoot, 2)})."
        f"{stopped} The run is incomplete by design; this is NOT a model or scorer failure."
    )


def wipeout_message(result: Mapping[str, Any], label: str) -> str | None:
    """``[axl-eval] FAILED: ... all N item(s) errored ...``."""
    if not is_total_wipeout(_light(result)):
        return None
    count = (result.get("summary") or {}).get("count", 0)
    return (
        f"[axl-eval] FAILED: {label} — all {count} item(s) errored in the workflow (0 succeeded); "
        "the eval produced no scorable output."
    )


def item_error_rate_message(result: Mapping[str, Any], label: str) -> str | None:
    """``[axl-eval] ITEM ERROR RATE EXCEEDED: ...`` when the item gate fired."""
    rate = (result.get("summary") or {}).get("itemErrorRate")
    if not rate or not rate.get("exceeded"):
        return None
    return (
        f"[axl-eval] ITEM ERROR RATE EXCEEDED: {label} — {rate['failed']} of {rate['attempted']} attempted "
        f"item(s) failed in the workflow (item error rate {format_percent(rate['rate'])}), over the "
        f"{format_percent(rate['limit'])} limit; the scores cover only the surviving items. Raise "
        "failOnItemErrorRate or pass --max-item-error-rate <0..1> to accept it (1 disables the gate)."
    )


def degraded_messages(result: Mapping[str, Any], label: str) -> list[str]:
    """One ``[axl-eval] DEGRADED: ...`` line per degraded scorer."""
    out = []
    for d in (result.get("summary") or {}).get("degraded") or []:
        limit = (
            "deterministic zero-tolerance"
            if d.get("type") == "deterministic"
            else f"{to_fixed(d['limit'] * 100, 1)}% limit"
        )
        out.append(
            f'[axl-eval] DEGRADED: {label} scorer "{clean(d["scorer"])}" ({d["type"]}) failed '
            f"{to_fixed(d['rate'] * 100, 1)}% ({d['failed']}/{d['scored'] + d['failed']}), over the {limit}."
        )
    return out


def fully_skipped_notes(result: Mapping[str, Any], label: str) -> list[str]:
    """Advisory notes for scorers that applied to no item."""
    out = []
    for name, entry in ((result.get("summary") or {}).get("scorers") or {}).items():
        scored, failed, skipped = _sample_counts(result, name, entry)
        if skipped > 0 and scored + failed == 0:
            out.append(
                f'[axl-eval] NOTE: {label} scorer "{clean(name)}" was not applicable to any item '
                f"({skipped} N/A, 0 scored) — its mean is not meaningful; check its applies predicate "
                "and the dataset."
            )
    return out


def format_multi_run_table(summary: Mapping[str, Any]) -> str:
    """The ``--runs N`` table (compare spec §9.7)."""
    scorers: Mapping[str, Any] = summary.get("scorers") or {}
    width = max([6, *(len(clean(n)) for n in scorers)])
    workflows = ", ".join(clean(w) for w in summary.get("workflows") or []) or "(unknown)"
    lines = [
        f"Eval: {workflows} x {clean(summary.get('dataset', ''))} — {summary.get('runCount', 0)} runs",
        "  "
        + "Scorer".ljust(width)
        + "  "
        + "Mean ± Std".rjust(16)
        + "  "
        + "Min".rjust(8)
        + "  "
        + "Max".rjust(8),
        "  " + "─" * (width + 2 + 16 + 2 + 8 + 2 + 8),
    ]
    for name, s in scorers.items():
        row = (
            "  "
            + clean(name).ljust(width)
            + "  "
            + f"{to_fixed(s['mean'], 3)} ± {to_fixed(s['std'], 3)}".rjust(16)
            + "  "
            + to_fixed(s["min"], 3).rjust(8)
            + "  "
            + to_fixed(s["max"], 3).rjust(8)
        )
        if s.get("failed", 0) > 0:
            row += f"   ({s['scored']}/{s['scored'] + s['failed']} scored, {s['failed']} failed)"
        lines.append(row)
    timing = summary.get("timing")
    if timing:
        text = f"{to_fixed(timing['mean'] / 1000, 2)} ± {to_fixed(timing['std'] / 1000, 2)}s"
        lines.append("  " + "Timing".ljust(width) + "  " + text.rjust(16))
    lines.append("")
    lines.append(
        f"  Total Cost: {format_known_spend(summary.get('accounting') or {})} | "
        f"Total Duration: {to_fixed((summary.get('totalDuration') or 0) / 1000, 1)}s"
    )
    return "\n".join(lines)
