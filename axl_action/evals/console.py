"""Console output of the run command: the result table and the gate/stop lines (compare spec §9).

Pure functions from a run's view (its header and item columns) to lines of text; the shared
pieces (spend, budget, coverage, model timing) come from :mod:`axl_action.formatting`.
Untrusted strings are printed as they are, with control characters replaced (``clean``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from axl_action.formatting import (
    clean,
    format_budget_line,
    format_coverage_line,
    format_item_errors,
    format_known_spend,
    format_model_timing_lines,
    plural,
    usd,
)
from axl_action.schema import (
    EvalAccounting,
    RunHeader,
    RunView,
    ScorerStats,
    is_budget_stopped,
    is_total_wipeout,
    read_accounting,
    sample_counts,
)
from axl_action.schema.numbers import format_percent, to_fixed


def _sample_counts(view: RunView, name: str, entry: ScorerStats) -> tuple[int, int, int]:
    """The summary's counts where it has them, else ``scorerCounts`` over the items (§9.1)."""
    if entry.scored is not None and entry.failed is not None and entry.skipped is not None:
        return entry.scored, entry.failed, entry.skipped
    counts = sample_counts(view.items, name)
    if entry.scored is not None and entry.failed is not None:
        return entry.scored, entry.failed, counts.skipped
    return counts.scored, counts.failed, counts.skipped


def _workflows(metadata: Mapping[str, Any]) -> str:
    workflows = metadata.get("workflows")
    names = [clean(w) for w in workflows if isinstance(w, str)] if isinstance(workflows, list) else []
    return ", ".join(names) if names else "(unknown)"


def format_table(view: RunView) -> str:
    """The single-run table (compare spec §9.1)."""
    result = view.header
    summary = result.summary
    scorers = summary.scorers
    width = max([6, *(len(clean(n)) for n in scorers)])
    lines = [
        f"Eval: {_workflows(result.metadata)} x {clean(result.dataset)} ({plural(summary.count, 'item')})",
        "  "
        + "Scorer".ljust(width)
        + "".join("  " + h.rjust(8) for h in ("Mean", "Min", "Max", "p50", "p95")),
        "  " + "─" * (width + 2 + 10 * 5),
    ]
    lines.extend(_scorer_row(view, name, entry, width) for name, entry in scorers.items())
    timing = summary.timing
    if timing:
        # Every column under its own header (TS prints mean/p50/p95 under Mean/Min/Max).
        secs = "".join(
            "  " + f"{to_fixed(getattr(timing, k) / 1000, 2)}s".rjust(8)
            for k in ("mean", "min", "max", "p50", "p95")
        )
        lines.append("  " + "Timing".ljust(width) + secs)
    judged = "llm" in result.scorer_types.values()
    accounting = read_accounting(result)
    replayed = accounting.replayed.calls if accounting.replayed is not None else 0
    lines.extend(format_model_timing_lines(summary.model_timing, judged=judged, replayed=replayed))
    lines.append("")
    failed, not_run = _failures_and_not_run(result)
    lines.append(
        f"  Failures: {failed}/{summary.count} | "
        + (f"Not run: {not_run} | " if not_run else "")
        + f"Cost: {format_known_spend(accounting, view.items)} | "
        f"Duration: {to_fixed((result.duration or 0) / 1000, 1)}s"
    )
    coverage = format_coverage_line(summary.coverage, summary.item_error_rate, view.items)
    for extra in (format_budget_line(accounting), coverage):
        if extra:
            lines.append(extra)
    lines.extend(format_item_errors(view.items))
    lines.extend(_scorer_errors(view, summary.count))
    return "\n".join(lines)


def _scorer_row(view: RunView, name: str, entry: ScorerStats, width: int) -> str:
    """One scorer's row: mean, min, max, p50 and p95, and its failed and N/A counts."""
    scored, failed, skipped = _sample_counts(view, name, entry)
    notes = []
    if failed > 0:
        notes.append(f"{scored}/{scored + failed} scored, {failed} failed")
    if skipped > 0:
        notes.append(f"{skipped} N/A")
    values = "".join(
        "  " + ("--" if scored == 0 else to_fixed(getattr(entry, k), 2)).rjust(8)
        for k in ("mean", "min", "max", "p50", "p95")
    )
    return "  " + clean(name).ljust(width) + values + (f"   ({', '.join(notes)})" if notes else "")


def _scorer_errors(view: RunView, count: int) -> list[str]:
    """The scorer errors block: the first 5 distinct messages, and how many items had one."""
    messages: list[str] = []
    for errors in view.items.scorer_errors.values():
        for message in errors:
            if message not in messages:
                messages.append(message)
    if not messages:
        return []
    affected = len(view.items.scorer_errors)
    lines = ["", f"  Scorer errors ({affected}/{count} items affected):"]
    lines.extend(f"    - {clean(m)}" for m in messages[:5])
    if len(messages) > 5:
        lines.append(f"    ... and {len(messages) - 5} more")
    return lines


def _failures_and_not_run(result: RunHeader) -> tuple[int, int]:
    """Items that failed, and items that did not run to the end without failing (cancelled,
    budget-skipped, budget-interrupted): the summary's ``failures`` counts both, as the
    reference's does, but a budget stop is not a failure, so the console counts them apart, as
    the comment does. Files without coverage (pre-0.24) have only ``failures``."""
    coverage = result.summary.coverage
    if coverage is None:
        return result.summary.failures, 0
    items = coverage.items
    return items.failed, items.cancelled + items.budget_skipped + items.budget_interrupted


def budget_stop_message(light: RunHeader, label: str) -> str | None:
    """``[axl-eval] BUDGET STOPPED: ...`` when the budget closed and refused work."""
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
        f"[axl-eval] BUDGET STOPPED: {label} — known spend {usd(budget.known_spend)} reached "
        f"the {usd(budget.limit)} limit (over by {usd(budget.known_overshoot)})."
        f"{stopped} The run is incomplete by design; this is NOT a model or scorer failure."
    )


def wipeout_message(result: RunHeader, label: str) -> str | None:
    """``[axl-eval] FAILED: ... all N item(s) errored ...``."""
    if not is_total_wipeout(result):
        return None
    count = result.summary.count
    return (
        f"[axl-eval] FAILED: {label} — all {count} item(s) errored in the workflow (0 succeeded); "
        "the eval produced no scorable output."
    )


def item_error_rate_message(result: RunHeader, label: str) -> str | None:
    """``[axl-eval] ITEM ERROR RATE EXCEEDED: ...`` when the item gate fired."""
    rate = result.summary.item_error_rate
    if rate is None or not rate.exceeded:
        return None
    return (
        f"[axl-eval] ITEM ERROR RATE EXCEEDED: {label} — {rate.failed} of {rate.attempted} attempted "
        f"item(s) failed in the workflow (item error rate {format_percent(rate.rate)}), over the "
        f"{format_percent(rate.limit)} limit; the scores cover only the surviving items. Raise "
        "failOnItemErrorRate or pass --max-item-error-rate <0..1> to accept it (1 disables the gate)."
    )


def degraded_messages(result: RunHeader, label: str) -> list[str]:
    """One ``[axl-eval] DEGRADED: ...`` line per degraded scorer."""
    out = []
    for d in result.summary.degraded or []:
        limit = (
            "deterministic zero-tolerance"
            if d.type == "deterministic"
            else f"{to_fixed(d.limit * 100, 1)}% limit"
        )
        out.append(
            f'[axl-eval] DEGRADED: {label} scorer "{clean(d.scorer)}" ({d.type}) failed '
            f"{to_fixed(d.rate * 100, 1)}% ({d.failed}/{d.scored + d.failed}), over the {limit}."
        )
    return out


def all_failed_warnings(view: RunView, label: str) -> list[str]:
    """``[axl-eval] WARNING: ...`` for each scorer that failed on every item it was run on.

    Such a scorer has no mean at all, whether or not a gate is configured to fail on it; its
    first error usually says what to fix (a scorer that returns a bool, a KeyError, ...).
    """
    out = []
    for name, entry in view.header.summary.scorers.items():
        scored, failed, _ = _sample_counts(view, name, entry)
        if failed > 0 and scored == 0:
            first = _first_scorer_error(view, name)
            out.append(
                f'[axl-eval] WARNING: {label} scorer "{clean(name)}" failed on every item ({failed}/{failed}): '
                f"it produced no score.{f' First error: {clean(first)}' if first else ''}"
            )
    return out


def _first_scorer_error(view: RunView, name: str) -> str | None:
    prefix = f'Scorer "{name}" '
    judge = f'LLM scorer "{name}" '
    for messages in view.items.scorer_errors.values():
        for message in messages:
            if message.startswith((prefix, judge)):
                return message
    return None


def fully_skipped_notes(view: RunView, label: str) -> list[str]:
    """Advisory notes for scorers that applied to no item."""
    out = []
    for name, entry in view.header.summary.scorers.items():
        scored, failed, skipped = _sample_counts(view, name, entry)
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
        f"  Total Cost: {format_known_spend(EvalAccounting.model_validate(summary.get('accounting') or {}))} | "
        f"Total Duration: {to_fixed((summary.get('totalDuration') or 0) / 1000, 1)}s"
    )
    return "\n".join(lines)
