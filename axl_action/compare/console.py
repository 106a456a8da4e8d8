"""The compare table printed on stdout (spec §10), byte-compatible with the TS CLI except
where TS misleads: money is shown with enough digits to tell the sides apart (never ``$0.00``
for a non-zero amount) and a side whose scorer scored nothing shows ``—``, not a mean of 0."""

from __future__ import annotations

from typing import TYPE_CHECKING

from axl_action.compare.models import Comparison, ScorerComparison
from axl_action.compare.text import pad_end, pad_start
from axl_action.formatting import signed_usd, spend_is_money, spend_pair, usd
from axl_action.schema.numbers import js_number, to_fixed

if TYPE_CHECKING:
    from axl_action.schema import EvalAccounting

HEADER = "  Baseline  Candidate  Delta     Change"
RULE = "  --------  ---------  --------  ------"
CI_HEADER = "  CI 95%            Sig"
"""The CI columns' header at the usual α = 0.05 (the reference's, byte for byte)."""
CI_RULE = "  ----------------  ---"


def ci_header(alpha: float) -> str:
    """:data:`CI_HEADER` for a comparison at level ``alpha`` (``repeats: auto`` compares at
    α / K: ``CI 99%`` for K = 5), padded to the same columns."""
    label = f"CI {format_level(alpha)}%"
    return "  " + label.ljust(18) + "Sig"


def format_level(alpha: float) -> str:
    """``1 - alpha`` as a percentage, by the project's number rules: ``95``, ``99``, ``98.75``."""
    return js_number(float(to_fixed((1 - alpha) * 100, 2)))


def _bound(x: float | None) -> str:
    if x is None:  # only with a single resample; TS would throw here
        return "null"
    return ("+" if x >= 0 else "") + to_fixed(x, 4)


def _row(name: str, s: ScorerComparison, width: int, has_ci: bool) -> str:
    sign = "+" if s.delta > 0 else ""
    # A side that scored nothing has no mean (its JSON mean is 0): "—", and no change.
    both = s.baseline_scored > 0 and s.candidate_scored > 0
    row = (
        "  "
        + pad_end(name, width)
        + "  "
        + pad_start(to_fixed(s.baseline_mean, 3) if s.baseline_scored > 0 else "—", 8)
        + "  "
        + pad_start(to_fixed(s.candidate_mean, 3) if s.candidate_scored > 0 else "—", 9)
        + "  "
        + pad_start(sign + to_fixed(s.delta, 3) if both else "—", 8)
        + "  "
        + pad_start(("new" if s.from_zero else sign + to_fixed(s.delta_percent, 1) + "%") if both else "—", 6)
    )
    if has_ci:
        if s.ci is not None:
            row += f"  [{_bound(s.ci.lower)}, {_bound(s.ci.upper)}]" + ("  *" if s.significant else "   ")
        else:
            row += pad_end("  —", 22)
    return row


def format_compare(
    comparison: Comparison,
    baseline_accounting: EvalAccounting | None = None,
    candidate_accounting: EvalAccounting | None = None,
) -> str:
    """The stdout block of ``axl-eval compare`` (leading and trailing blank lines included).

    The accountings (each side's first run, ``schema.read_accounting``) say whether its spend
    was measured: a side that was not reads ``unpriced``, ``unknown`` or ``≥ $x`` instead of
    money, and then the line has no change in dollars, as the report's has none.
    """
    names = list(comparison.scorers)
    width = max([6, *(len(n) for n in names)])
    has_ci = any(s.ci is not None for s in comparison.scorers.values())
    lines = [
        "",
        f"Compare: baseline ({comparison.baseline.id[:8]}) -> candidate ({comparison.candidate.id[:8]})",
        "",
        "  " + pad_end("Scorer", width) + HEADER + (ci_header(comparison.alpha) if has_ci else ""),
        "  " + "-" * width + RULE + (CI_RULE if has_ci else ""),
    ]
    lines += [_row(name, comparison.scorers[name], width, has_ci) for name in names]
    timing = comparison.timing
    if timing is not None:
        sign = "+" if timing.delta > 0 else ""
        lines += [
            "",
            f"  Timing: baseline {to_fixed(timing.baseline_mean / 1000, 2)}s -> candidate "
            f"{to_fixed(timing.candidate_mean / 1000, 2)}s ({sign}{to_fixed(timing.delta_percent, 1)}%)",
        ]
    cost = comparison.cost
    if cost is not None:
        # Money with enough digits to tell the sides apart, and the direction from the
        # unrounded change (TS prints "$0.00 -> $0.00 (36.8%)" for $0.00128 -> $0.00175).
        before, after = spend_pair(
            cost.baseline_exact, baseline_accounting, cost.candidate_exact, candidate_accounting
        )
        change = ""
        if spend_is_money(baseline_accounting) and spend_is_money(candidate_accounting):
            delta = cost.delta_exact
            sign = "+" if delta > 0 else ""
            if cost.delta_percent is None:
                change = f" ({sign}{usd(abs(delta))}, no % from a $0 baseline)"
            else:
                change = f" ({signed_usd(delta)}, {sign}{to_fixed(cost.delta_percent, 1)}%)"
        lines.append(f"  Cost: baseline {before} -> candidate {after}{change}")
        if not cost.certified:
            lines.append(f"        not certified: {cost.reason or 'costs are not comparable'}")
    lines += [
        "",
        f"  Regressions: {len(comparison.regressions)} | Improvements: {len(comparison.improvements)} "
        f"| Stable: {comparison.stable}",
        "",
    ]
    return "\n".join(lines)
