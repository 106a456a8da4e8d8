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

from axl_action.redaction import redact
from axl_action.schema import (
    Accounting,
    Coverage,
    EvalAccounting,
    ItemColumns,
    ItemErrorRate,
    ModelTimingStats,
    Stats,
    format_percent,
    js_number,
)
from axl_action.schema.itempass import ITEM_CODE
from axl_action.schema.numbers import js_round, to_fixed

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f\x9b]")


def clean(text: object) -> str:
    """``str(text)`` with terminal control characters replaced by ``?``.

    The console prints untrusted strings (scorer names, error messages) as they are, but a
    model output must not move the cursor or clear the screen.
    """
    return _CONTROL.sub("?", str(text))


def no_call_succeeded(accounting: Accounting, items: ItemColumns) -> bool:
    """Whether the run's only unknown spend is its failed provider calls: nothing was settled,
    and every ``usage_missing`` operation can be one of the items that failed with a
    ``ProviderError`` (an HTTP error status or no connection, never a 2xx). Such a call is not
    billed, so the run cost $0, not an unknown amount. A 2xx without usage, a judge call that
    failed or a call the workflow caught leaves more unknown operations than such items: then
    the spend stays unknown. The accounting itself keeps ``usage_missing`` (the spec's rule)."""
    missing = (accounting.reasons or {}).get("usage_missing", 0)
    if accounting.known_cost or accounting.operations.settled or not missing:
        return False
    if set(accounting.reasons) != {"usage_missing"}:
        return False
    failed = ITEM_CODE["failed"]
    provider_failures = sum(
        1
        for i, failure in items.failures.items()
        if int(items.outcome[i]) == failed and failure.get("name") == "ProviderError"
    )
    return provider_failures >= missing


def format_known_spend(accounting: EvalAccounting, items: ItemColumns | None = None) -> str:
    """``$1.50``, ``$1.50 (unverified)``, ``$0.50 (incomplete: 2 unpriced_model)``.

    Nothing known is not $0: ``unpriced (incomplete: 30 unpriced_model)``. With the run's
    ``items``, a run whose every call failed reads ``$0.00 (no call succeeded)``
    (:func:`no_call_succeeded`).
    """
    if items is not None and no_call_succeeded(accounting, items):
        return "$0.00 (no call succeeded)"
    known = accounting.known_cost or 0
    cost = usd(known) if known else spend_shown(known, accounting)
    replayed = format_replayed(accounting)
    if replayed:
        cost = f"billed {usd(known)} · {replayed}"
    if accounting.completeness == "complete":
        return cost
    if accounting.completeness == "unverified":
        return f"{cost} (unverified)"
    reasons = ", ".join(f"{n} {r}" for r, n in (accounting.reasons or {}).items())
    return f"{cost} (incomplete: {reasons or 'unknown spend'})"


def format_replayed(accounting: EvalAccounting) -> str | None:
    """``$1.80 replayed from cache (412 of 430 calls)``, or ``None`` when the response cache
    answered no call. Replayed calls of unknown original cost are named, never priced $0."""
    replayed = accounting.replayed
    if replayed is None or not replayed.calls:
        return None
    calls = accounting.operations.total
    unpriced = f", {replayed.unpriced} of unknown cost" if replayed.unpriced else ""
    return f"{usd(replayed.cost)} replayed from cache ({replayed.calls} of {calls} calls{unpriced})"


def format_budget_line(accounting: EvalAccounting) -> str | None:
    """``  Budget: ...`` or ``None`` without a budget."""
    budget = accounting.budget
    if budget is None:
        return None
    limit = usd(budget.limit)
    spent = usd(budget.known_spend)
    if budget.status == "open":
        return f"  Budget: {spent} of {limit} (open)"
    by = f", first observed by {budget.closed_by}" if budget.closed_by else ""
    return (
        f"  Budget: STOPPED — {spent} known spend against a {limit} limit, "
        f"{usd(budget.known_overshoot)} over{by}"
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


def format_item_errors(items: ItemColumns, limit: int = 3) -> list[str]:
    """The first ``limit`` distinct errors of failed items, most frequent first, with counts.

    ``Failure causes: 1 × other`` says how many, not why; the why (a missing API key, a
    KeyError in the workflow) is the item's ``error``. Each message is redacted (the one rule
    of :mod:`axl_action.redaction`), cleaned of control characters and cut to one line.
    """
    counts: dict[str, int] = {}
    failed = ITEM_CODE["failed"]
    for i in range(items.size):
        error = items.errors[i]
        code = int(items.outcome[i])
        if error is None or (code != failed and code >= 0):  # cancelled, budget-stopped: no error of theirs
            continue
        text = clean(redact(error.strip().splitlines()[0] if error.strip() else error))
        if len(text) > _ERROR_CHARS:
            text = text[: _ERROR_CHARS - 1] + "…"
        counts[text] = counts.get(text, 0) + 1
    if not counts:
        return []
    ranked = sorted(counts.items(), key=lambda kv: -kv[1])
    lines = [f"  Item errors ({plural(len(ranked), 'distinct message')}):"]
    lines += [f"    {n} × {text}" for text, n in ranked[:limit]]
    if len(ranked) > limit:
        lines.append(f"    … and {len(ranked) - limit} more (each item's error is in the results file)")
    return lines


#: Longest item error printed on the console.
_ERROR_CHARS = 300


def format_worst_scorer(scorer: str, side: str | None, failed: int, attempted: int) -> str:
    """The scorer error rate as the gate tables show it: ``85% (worst: judge, candidate, 17 of 20)``.

    The rate is always the worst single scorer's (``compare.gates.worst_scorer_failure``),
    with the report with a baseline and the one without saying the same thing.
    """
    where = f"{clean(scorer)}, {side}" if side else clean(scorer)
    return f"{pct(failed / attempted if attempted else 0)} (worst: {where}, {failed} of {attempted})"


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


CONSOLE_WIDTH = 80
"""Console lines are wrapped to fit this many columns (a terminal's and a CI log's default)."""


def format_model_timing_lines(
    model_timing: Mapping[str, ModelTimingStats] | None, *, judged: bool = False, replayed: int = 0
) -> list[str]:
    """The console's ``Model timing`` block: a heading, then per model its call count and its
    figures (``wire m/p · first token m/p · queued · retries · rate-limited N×``), wrapped to
    :data:`CONSOLE_WIDTH` columns.

    ``modelTiming`` times the workflow's calls only; with ``judged`` (the eval has an LLM
    scorer) the heading says that the judge calls are left out, and with ``replayed`` (calls
    the response cache answered, which have no latency of their own) how many it left out.
    """
    untimed = f"{plural(replayed, 'replayed call')} not timed (answered from the cache)" if replayed else ""
    if not model_timing:
        return [f"  Model timing: {untimed}"] if untimed else []
    note = ("; judge calls not included" if judged else "") + (f"; {untimed}" if untimed else "")
    lines = [f"  Model timing (mean/p95 per call{note}):"]
    for model, t in model_timing.items():
        parts = [f"wire {js_round(_stat(t.wire_ms, 'mean'))}ms/{js_round(_stat(t.wire_ms, 'p95'))}ms"]
        if t.first_token_ms is not None:
            first = t.first_token_ms
            parts.append(f"first token {js_round(first.mean)}ms/{js_round(first.p95)}ms")
        parts.append(f"queued {js_round(_stat(t.queued_ms, 'mean'))}ms")
        parts.append(f"retries {js_round(_stat(t.retry_ms, 'mean'))}ms")
        if t.rate_limit_retries:
            parts.append(f"rate-limited {t.rate_limit_retries}×")
        lines.append(f"    {clean(model)}  ({plural(t.calls, 'call')})")
        lines.extend(_wrap(parts, "      ", " · ", CONSOLE_WIDTH))
    return lines


def _wrap(parts: list[str], indent: str, sep: str, width: int) -> list[str]:
    """``parts`` joined by ``sep`` on lines of at most ``width`` columns (a part is never split)."""
    lines: list[str] = []
    line = ""
    for part in parts:
        if line and len(indent) + len(line) + len(sep) + len(part) > width:
            lines.append(indent + line)
            line = part
        else:
            line = f"{line}{sep}{part}" if line else part
    if line:
        lines.append(indent + line)
    return lines


def _finite(x: float | None) -> bool:
    return x is not None and isinstance(x, int | float) and math.isfinite(x)


MINUS = "-"
"""The one minus sign of every surface (console, comment, summary, HTML): the ASCII hyphen-minus
that JavaScript's ``toFixed`` and ``String`` print, so the reference-exact sentences ("regresses
by -9.4%") and our own signed numbers never mix two signs in one line."""


def num(x: float | None, digits: int = 3) -> str:
    """Fixed decimals (JS ``toFixed``), or an em dash when missing."""
    return to_fixed(x, digits) if x is not None and _finite(x) else "—"


def signed(x: float | None, digits: int = 3) -> str:
    """Fixed decimals (JS ``toFixed``) with an explicit ``+`` or ``-``; no sign for zero."""
    if x is None or not _finite(x):
        return "—"
    magnitude = to_fixed(abs(x), digits)
    if float(magnitude) == 0:
        return magnitude
    return ("+" if x > 0 else MINUS) + magnitude


#: Below this an amount is float noise or a price too small to matter; shown as a bound.
_SMALLEST_USD = 1e-8
#: Most significant digits :func:`usd_pair` goes to when two amounts look alike.
_MAX_SIGNIFICANT = 8


def _usd_decimals(amount: float, significant: int) -> int:
    """Decimals that show ``amount`` (> 0) with ``significant`` significant digits, at least 2."""
    return max(2, significant - 1 - math.floor(math.log10(amount)))


def _usd_fixed(x: float, decimals: int, *, trim: bool) -> str:
    if x == 0:
        return "$0.00"
    sign = MINUS if x < 0 else ""
    amount = abs(x)
    if amount < _SMALLEST_USD:
        return f"{sign}<${to_fixed(_SMALLEST_USD, 8)}"
    whole, _, frac = to_fixed(amount, decimals).partition(".")
    return f"{sign}${whole}.{frac[:2]}{frac[2:].rstrip('0') if trim else frac[2:]}"


def usd(x: float | None, significant: int = 3) -> str:
    """Money for reading: ``$1.50``, ``$0.123``, ``$0.00128``; ``—`` when missing.

    At least two decimals, and as many more as ``significant`` significant digits need, with
    trailing zeros past the second decimal dropped. So a non-zero amount never reads ``$0.00``
    (below a millionth of a cent it reads ``<$0.00000001``). The JSON keeps the spec's rounding;
    this is display only, and the one money printer of the console, the comment, the summary
    and the HTML report.
    """
    if x is None or not _finite(x):
        return "—"
    if x == 0 or abs(x) < _SMALLEST_USD:
        return _usd_fixed(x, 2, trim=True)
    return _usd_fixed(x, _usd_decimals(abs(x), significant), trim=True)


def usd_pair(a: float | None, b: float | None) -> tuple[str, str]:
    """Two amounts side by side, with the same decimals and enough of them to tell them apart.

    ``(0.001281, 0.001753)`` -> ``($0.00128, $0.00175)``; ``(0.08, 0.0742)`` -> ``($0.0800,
    $0.0742)``; ``(1.001, 1.004)`` -> ``($1.001, $1.004)``.
    """
    if a is None or b is None or not (_finite(a) and _finite(b)):
        return usd(a), usd(b)
    nonzero = [abs(v) for v in (a, b) if abs(v) >= _SMALLEST_USD]
    if not nonzero:
        return usd(a), usd(b)
    left = right = ""
    for significant in range(3, _MAX_SIGNIFICANT + 1):
        decimals = max(_usd_decimals(v, significant) for v in nonzero)
        left, right = _usd_fixed(a, decimals, trim=False), _usd_fixed(b, decimals, trim=False)
        if left != right or a == b:
            break
    return left, right


def spend_is_money(accounting: Accounting | None) -> bool:
    """Whether spend with this accounting reads as money: all of it was measured (or the file
    is too old to say), so a change in dollars means something."""
    return accounting is None or accounting.completeness != "incomplete"


def spend_shown(total: float | None, accounting: Accounting | None, money: str | None = None) -> str:
    """One side of ``before → after``: money, or what is known about spend that is not.

    ``unpriced`` when nothing was priced because a model has no price, ``unknown`` when nothing
    could be measured, ``≥ $0.12`` when the known spend is a lower bound. ``money`` is the
    amount already formatted (by :func:`usd_pair`).
    """
    text = money if money is not None else usd(total)
    if accounting is None or spend_is_money(accounting):
        return text
    if not total:
        return "unpriced" if (accounting.reasons or {}).get("unpriced_model") else "unknown"
    return f"≥ {text}"


def spend_pair(
    baseline: float | None,
    baseline_accounting: Accounting | None,
    candidate: float | None,
    candidate_accounting: Accounting | None,
) -> tuple[str, str]:
    """Both sides of ``before → after`` (:func:`spend_shown`, digits from :func:`usd_pair`)."""
    before, after = usd_pair(baseline, candidate)
    return (
        spend_shown(baseline, baseline_accounting, before),
        spend_shown(candidate, candidate_accounting, after),
    )


def signed_usd(x: float | None) -> str:
    """``+$0.12`` / ``-$0.000472``; ``$0.00`` for no change."""
    if x is None or not _finite(x):
        return "—"
    if x == 0:
        return "$0.00"
    return ("+" if x > 0 else MINUS) + usd(abs(x))


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
        return f"{to_fixed(x / 1000, 1)}s"
    return f"{js_round(x)}ms"


def count(n: int | float | None) -> str:
    """Thousands separators: ``12,345``."""
    if n is None or not _finite(n):
        return "—"
    return f"{int(n):,}" if float(n).is_integer() else f"{n:,.2f}"


def plural(n: int, word: str, many: str | None = None) -> str:
    """``1 item`` / ``3 items``."""
    return f"{count(n)} {word if n == 1 else (many or word + 's')}"
