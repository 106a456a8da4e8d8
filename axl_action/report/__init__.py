"""Reports: the sticky PR comment, the job summary and the single-file HTML report.

Pure: every function takes loaded results/comparisons and returns text; writing files and
posting comments belong to the CLI and the GitHub layer.

    ctx = build_report_context(candidate, baseline, comparison, gates, run_info)
    render_comment(ctx)   -> Markdown, <= 65,536 characters, ends with comment_marker(suite)
    render_summary(ctx)   -> Markdown, <= 1,000,000 bytes
    render_report_html(ctx, candidate, baseline, comparison) -> one offline HTML file
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from axl_action.compare.models import Comparison
from axl_action.report.context import build_report_context
from axl_action.report.explorer import REPORT_TEXT_LIMIT, ExplorerPayload, build_explorer
from axl_action.report.gate_rows import own_gates
from axl_action.report.html import content_security_policy, render_html
from axl_action.report.models import ReportContext, ReportLimits, RunInfo
from axl_action.report.render import (
    COMMENT_LIMIT,
    SUMMARY_LIMIT_BYTES,
    render_comment,
    render_summary,
)
from axl_action.schema import EvalResult, item_key
from axl_action.suite import comment_marker

if TYPE_CHECKING:
    from axl_action.history.analysis import HistoryAnalysis


def _first(value: EvalResult | Sequence[EvalResult] | None) -> EvalResult | None:
    if value is None or isinstance(value, EvalResult):
        return value
    return value[0] if value else None


def _pairs(
    candidate: EvalResult, baseline: EvalResult, comparison: Comparison | None
) -> list[int | None] | None:
    """Baseline index for each candidate item when the compare engine matched items by key."""
    if comparison is None or comparison.compatibility.items.mode != "key":
        return None
    by_key = {item_key(it.input): j for j, it in enumerate(baseline.items)}
    return [by_key.get(item_key(it.input)) for it in candidate.items]


def render_report_html(
    ctx: ReportContext,
    candidate: EvalResult | Sequence[EvalResult],
    baseline: EvalResult | Sequence[EvalResult] | None = None,
    comparison: Comparison | None = None,
    *,
    history: HistoryAnalysis | None = None,
    text_limit: int = REPORT_TEXT_LIMIT,
) -> str:
    """The single-file HTML report for these results (first run of each side).

    ``history``: the analysis the context was built with; the item explorer then shows each
    item's score history and gets a "flaky" filter. ``text_limit``: the longest output or
    input the report stores (characters, 0: no limit); results.json keeps the whole text.
    """
    return _render_report_html(ctx, candidate, baseline, comparison, history, text_limit)


def _render_report_html(
    ctx: ReportContext,
    candidate: EvalResult | Sequence[EvalResult],
    baseline: EvalResult | Sequence[EvalResult] | None,
    comparison: Comparison | None,
    history: HistoryAnalysis | None = None,
    text_limit: int = REPORT_TEXT_LIMIT,
) -> str:
    cand = _first(candidate)
    assert cand is not None
    base = _first(baseline)
    pairs = _pairs(cand, base, comparison) if base is not None else None
    regressions: list[tuple[int, str]] = []
    improvements: list[tuple[int, str]] = []
    if comparison is not None:
        for ch in comparison.regressions:
            regressions.append(
                (ch.candidate_index if ch.candidate_index is not None else ch.item_index, ch.scorer)
            )
        for ch in comparison.improvements:
            improvements.append(
                (ch.candidate_index if ch.candidate_index is not None else ch.item_index, ch.scorer)
            )
    names = [s.name for s in ctx.scorers] or list(cand.summary.scorers)
    item_history = None
    if history is not None and len(history.history):
        from axl_action.history.panel import item_history as strips_of
        from axl_action.report.explorer import ExplorerHistory

        labels, strips, flaky = strips_of(history, [item_key(it.input) for it in cand.items], names)
        item_history = ExplorerHistory(labels=labels, strips=strips, flaky=flaky)
    explorer = build_explorer(
        cand,
        base,
        names,
        regressions=regressions,
        improvements=improvements,
        pairs=pairs,
        unpriced=ctx.cost.unpriced_models if ctx.cost is not None else (),
        history=item_history,
        text_limit=text_limit,
    )
    return render_html(ctx, explorer, candidate=cand, baseline=base)


__all__ = [
    "COMMENT_LIMIT",
    "REPORT_TEXT_LIMIT",
    "SUMMARY_LIMIT_BYTES",
    "ExplorerPayload",
    "ReportContext",
    "ReportLimits",
    "RunInfo",
    "build_explorer",
    "build_report_context",
    "comment_marker",
    "content_security_policy",
    "own_gates",
    "render_comment",
    "render_html",
    "render_report_html",
    "render_summary",
]
