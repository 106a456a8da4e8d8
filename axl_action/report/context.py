"""``build_report_context``: results + comparison + gates -> what every report shows. No I/O.

Works in three situations:

* a comparison and its gates (the usual PR run);
* a baseline and a comparison but no gates (``axl-eval report`` without gate flags);
* the candidate alone ("no baseline yet"): its own figures, and the gates it can answer on
  its own (budget, item error rate, scorer errors); the comparative gates show as skipped.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

from axl_action.compare.console import format_level
from axl_action.compare.gates import (
    describe_pass,
    describe_sequential,
    nothing_scored,
    pooled_pass_counts,
    unscored_note,
)
from axl_action.compare.models import Comparison, GateReport, ItemChange
from axl_action.formatting import (
    format_budget_line,
    format_coverage_line,
    format_failure_causes,
    format_known_spend,
    spend_pair,
    spend_shown,
)
from axl_action.history.panel import HistoryPanel
from axl_action.report.escape import truncate
from axl_action.report.explorer import display_text
from axl_action.report.gate_rows import gate_row, own_gates
from axl_action.report.models import (
    AccountingPanel,
    CostBlock,
    ItemExcerpt,
    Links,
    ModelTimingRow,
    Provenance,
    ReportContext,
    ReportLimits,
    RunInfo,
    RunSide,
    ScorerRow,
    TimingBlock,
)
from axl_action.report.regressions import top_regressions
from axl_action.schema import (
    EvalResult,
    RunView,
    Stats,
    read_accounting,
    run_view,
    sample_counts,
)
from axl_action.schema.accounting import USAGE_KEYS
from axl_action.schema.view import DEFAULT_PASS_SCORE
from axl_action.suite import comment_marker

if TYPE_CHECKING:
    from axl_action.history.analysis import HistoryAnalysis

#: What the context keeps; renderers show less (see render.COMMENT_STEPS).
STORE_LIMITS = ReportLimits(top_items=5000, excerpt_chars=600)


def _runs(value: EvalResult | Sequence[EvalResult]) -> list[EvalResult]:
    return [value] if isinstance(value, EvalResult) else list(value)


def _side(runs: list[EvalResult]) -> RunSide:
    ref = runs[0]
    return RunSide(
        id=ref.id,
        dataset=ref.dataset,
        timestamp=ref.timestamp,
        items=len(ref.items),
        failures=ref.summary.failures,
        duration_ms=ref.duration,
        run_count=len(runs),
    )


def _strip(line: str | None, prefix: str) -> str | None:
    if line is None:
        return None
    text = line.strip()
    return text[len(prefix) :].strip() if text.startswith(prefix) else text


def _scorer_rows(
    view: RunView,
    comparison: Comparison | None,
) -> list[ScorerRow]:
    candidate = view.header
    types = candidate.scorer_types
    rows: list[ScorerRow] = []
    if comparison is None:
        for name, stats in candidate.summary.scorers.items():
            counts = sample_counts(view.items, name)
            scored, failed, skipped = counts.scored, counts.failed, counts.skipped
            rows.append(
                ScorerRow(
                    name=name,
                    kind=types.get(name),
                    candidate_mean=stats.mean if scored else None,
                    unscored=None if scored else nothing_scored(failed, skipped),
                    verdict="new",
                    scored=scored,
                    failed=failed,
                    skipped=skipped,
                )
            )
        return rows
    reg: dict[str, int] = {}
    imp: dict[str, int] = {}
    for ch in comparison.regressions:
        reg[ch.scorer] = reg.get(ch.scorer, 0) + 1
    for ch in comparison.improvements:
        imp[ch.scorer] = imp.get(ch.scorer, 0) + 1
    for name, s in comparison.scorers.items():
        # A side that scored nothing has no mean (the JSON says 0, as TS does): show "—".
        both = s.baseline_scored > 0 and s.candidate_scored > 0
        rows.append(
            ScorerRow(
                name=name,
                kind=s.scorer_type if s.scorer_type != "unknown" else None,
                baseline_mean=s.baseline_mean if s.baseline_scored > 0 else None,
                candidate_mean=s.candidate_mean if s.candidate_scored > 0 else None,
                delta=s.delta if both else None,
                delta_percent=s.delta_percent if both and not s.from_zero else None,
                unscored=unscored_note(s),
                ci_lower=s.ci.lower if s.ci else None,
                ci_upper=s.ci.upper if s.ci else None,
                significant=s.significant,
                verdict=s.verdict,
                threshold=s.threshold,
                mde=s.mde,
                regressed_items=reg.get(name, 0),
                improved_items=imp.get(name, 0),
                scored=s.candidate_scored,
                failed=s.candidate_failed,
                skipped=s.candidate_skipped,
                n=s.n,
            )
        )
    return rows


def unpriced_models(runs: Sequence[EvalResult]) -> list[str]:
    """Models that were called without a price, as far as the results can tell.

    A result records *that* a call had no price (``unpriced_model`` in an item's accounting),
    not for which model. A model is named when it was used by an item with that reason and
    by no item whose spend was complete (a priced model settles its items completely).
    Judge calls record no model, so an unpriced judge alone names nothing.
    """
    suspects: dict[str, None] = {}
    priced: set[str] = set()
    for run in runs:
        for item in run.items:
            acc = item.accounting
            if acc is None:
                continue
            models = [*(item.timing or {})]
            used = (item.metadata or {}).get("models")
            if isinstance(used, list):
                models += [m for m in used if isinstance(m, str)]
            if acc.completeness == "complete":
                priced.update(models)
            elif (acc.reasons or {}).get("unpriced_model"):
                suspects.update(dict.fromkeys(models))
    return [m for m in suspects if m not in priced]


def _stat_mean(value: Stats | float | None) -> float | None:
    if value is None:
        return None
    return value if isinstance(value, int | float) else value.mean


def _stat_p95(value: Stats | float | None) -> float | None:
    return value.p95 if isinstance(value, Stats) else None


def _model_timing(candidate: EvalResult) -> list[ModelTimingRow]:
    rows: list[ModelTimingRow] = []
    for model, t in (candidate.summary.model_timing or {}).items():
        rows.append(
            ModelTimingRow(
                model=model,
                calls=t.calls,
                wire_mean_ms=_stat_mean(t.wire_ms),
                wire_p95_ms=_stat_p95(t.wire_ms),
                first_token_mean_ms=_stat_mean(t.first_token_ms),
                queued_mean_ms=_stat_mean(t.queued_ms),
                retry_mean_ms=_stat_mean(t.retry_ms),
                rate_limited=t.rate_limit_retries or 0,
            )
        )
    return rows


def _accounting_panel(candidate: EvalResult) -> AccountingPanel:
    acc = read_accounting(candidate)
    fp = candidate.metadata.get("fingerprint")
    pricing = fp.get("pricingVersion") if isinstance(fp, Mapping) else None
    budget = _strip(format_budget_line(acc), "Budget:")
    usage = {
        name.replace("_", " "): value
        for name in USAGE_KEYS
        if isinstance(value := getattr(acc.usage, name), int | float) and value
    }
    return AccountingPanel(
        completeness=acc.completeness,
        reasons=dict(acc.reasons),
        usage=usage,
        operations={
            "total": acc.operations.total,
            "settled": acc.operations.settled,
            "unknown": acc.operations.unknown,
            "denied": acc.operations.denied,
        },
        by_kind=dict(acc.operations.by_kind),
        breakdown={
            "generation": acc.breakdown.generation,
            "judging": acc.breakdown.judging,
            "external": acc.breakdown.external,
        },
        provenance=dict(acc.provenance),
        budget=budget,
        pricing_version=str(pricing) if pricing is not None else None,
        scope=acc.scope,
    )


def _warnings(comparison: Comparison | None, run_info: RunInfo) -> list[str]:
    out: list[str] = []
    if comparison is not None:
        for label, side in (("baseline", comparison.baseline), ("candidate", comparison.candidate)):
            if side.partial is not None:
                out.append(
                    f"The {label} batch is partial: {side.partial.completed} of "
                    f"{side.partial.attempted} runs completed."
                )
        if comparison.compatibility.items.reason:
            out.append(comparison.compatibility.items.reason)
    out += [w for w in run_info.warnings if w not in out]
    return out


def build_report_context(
    candidate: EvalResult | Sequence[EvalResult],
    baseline: EvalResult | Sequence[EvalResult] | None = None,
    comparison: Comparison | None = None,
    gates: GateReport | None = None,
    run_info: RunInfo | None = None,
    limits: ReportLimits = STORE_LIMITS,
    history: HistoryAnalysis | None = None,
) -> ReportContext:
    """Everything the comment, summary and HTML report show, from already-loaded inputs.

    ``history``: the baseline's history (``axl_action.history.analysis.analyse``) adds the
    History panel, each scorer's noise band and the flaky marks on regressed items.
    """
    return _build(candidate, baseline, comparison, gates, run_info, limits, history)


def _repeats_line(view: RunView, runs: Sequence[EvalResult]) -> str | None:
    """``5 per item; tries passed (score >= 0.5): accuracy 90.0% (18/20), ...`` for a candidate
    whose items ran ``repeats: N`` times (pooled over its runs, as the pass-rate gate counts)."""
    if not view.items.repeats:
        return None
    views = [view, *(run_view(run) for run in runs[1:])]
    record = view.header.sequential
    if record is not None:
        head = describe_sequential(record)
    else:
        head = f"{max(len(r) for r in view.items.repeats.values())} per item"
    names = list(view.header.scorer_names)
    shown = ", ".join(describe_pass(name, pooled_pass_counts(views, name)) for name in names)
    return f"{head}; tries passed (score >= {DEFAULT_PASS_SCORE:g}): {shown}"


def _not_rerun_line(runs: Sequence[EvalResult]) -> str | None:
    """The evals a scoped run carried from its baseline (``metadata.carriedOver``), by eval file."""
    carried: dict[str, None] = {}
    for run in runs:
        if run.carried_over is not None:
            sources = run.sources
            carried.setdefault(sources.eval_file if sources and sources.eval_file else run.dataset, None)
    if not carried:
        return None
    return (
        f"{', '.join(carried)} (unchanged, not re-run: no file it used, declared env var or input "
        "changed since the baseline, whose results were carried over)"
    )


def _build(
    candidate: EvalResult | Sequence[EvalResult],
    baseline: EvalResult | Sequence[EvalResult] | None,
    comparison: Comparison | None,
    gates: GateReport | None,
    run_info: RunInfo | None,
    limits: ReportLimits,
    history: HistoryAnalysis | None = None,
) -> ReportContext:
    info = run_info or RunInfo()
    c_runs = _runs(candidate)
    b_runs = _runs(baseline) if baseline is not None else []
    cand = c_runs[0]
    base = b_runs[0] if b_runs else None
    suite = info.suite or cand.dataset
    has_baseline = base is not None and comparison is not None

    view = run_view(cand)
    gate_rows = [gate_row(g, comparison) for g in gates.gates] if gates is not None else own_gates(view)
    failing = [g.label for g in gate_rows if g.status in ("fail", "refused")]
    warning = [g.label for g in gate_rows if g.status == "warn"]
    verdict = "fail" if failing else ("warn" if warning else "pass")

    acc = read_accounting(cand)
    cost: CostBlock | None
    unpriced = unpriced_models([*c_runs[:1], *b_runs[:1]])
    if comparison is not None and comparison.cost is not None:
        cc = comparison.cost
        b_acc = read_accounting(base) if base is not None else None
        before, after = spend_pair(cc.baseline_exact, b_acc, cc.candidate_exact, acc)
        cost = CostBlock(
            candidate_total=cc.candidate_exact,
            candidate_text=format_known_spend(acc),
            candidate_shown=after,
            baseline_total=cc.baseline_exact,
            baseline_text=format_known_spend(b_acc) if b_acc is not None else None,
            baseline_shown=before,
            delta=cc.delta_exact,
            delta_percent=cc.delta_percent,
            certified=cc.certified,
            reason=cc.reason,
            unpriced_models=unpriced,
        )
    else:
        cost = CostBlock(
            candidate_total=acc.known_cost,
            candidate_text=format_known_spend(acc),
            candidate_shown=spend_shown(acc.known_cost, acc),
            unpriced_models=unpriced,
        )

    summary = cand.summary
    coverage_line = _strip(format_coverage_line(summary.coverage, summary.item_error_rate), "Items:")
    repeats_line = _repeats_line(view, c_runs)
    causes = _strip(format_failure_causes(view.items), "Failure causes:")

    timing: TimingBlock | None = None
    if comparison is not None and comparison.timing is not None:
        t = comparison.timing
        timing = TimingBlock(
            candidate_mean_ms=t.candidate_mean,
            baseline_mean_ms=t.baseline_mean,
            delta_percent=t.delta_percent,
        )
    elif cand.summary.timing is not None:
        timing = TimingBlock(candidate_mean_ms=cand.summary.timing.mean)

    top: list[ItemExcerpt] = []
    regressed_items = 0
    if comparison is not None:
        top, regressed_items = top_regressions(cand, base, comparison, limits, flaky=_flaky_rule(history))

    errors: list[str] = []
    error_items = len(view.items.scorer_errors)
    for messages in view.items.scorer_errors.values():
        for e in messages:
            if e not in errors and len(errors) < 5:
                errors.append(e)

    provenance = None
    if base is not None:
        provenance = Provenance(
            baseline_id=base.id,
            commit_sha=info.baseline_commit_sha,
            branch=info.baseline_branch,
            run_id=info.baseline_run_id,
            run_url=_safe_url(info.baseline_run_url),
            age=info.baseline_age,
            reason=info.baseline_reason,
            warnings=list(comparison.compatibility.messages) if comparison is not None else [],
        )

    return ReportContext(
        suite=suite,
        marker=comment_marker(suite),
        verdict=verdict,
        failing_gates=failing,
        warning_gates=warning,
        has_baseline=has_baseline,
        summary_sentence=comparison.summary if comparison is not None else None,
        candidate=_side(c_runs),
        baseline=_side(b_runs) if b_runs else None,
        gates=gate_rows,
        scorers=_with_noise(_scorer_rows(view, comparison), history),
        cost=cost,
        budget_line=_strip(format_budget_line(acc), "Budget:"),
        coverage_line=coverage_line,
        repeats_line=repeats_line,
        not_rerun_line=_not_rerun_line(c_runs),
        ci_label=f"{format_level(comparison.alpha)}% CI" if comparison is not None else "95% CI",
        failure_causes=causes,
        timing=timing,
        model_timing=_model_timing(cand),
        provenance=provenance,
        warnings=_warnings(comparison, info),
        regressions_total=len(comparison.regressions) if comparison else 0,
        improvements_total=len(comparison.improvements) if comparison else 0,
        regressed_items_total=regressed_items,
        top_regressions=top,
        scorer_errors=errors,
        scorer_error_items=error_items,
        accounting=_accounting_panel(cand),
        run_metadata=truncate(display_text(cand.metadata), 8000),
        links=Links(
            run_url=_safe_url(info.run_url),
            report_url=_safe_url(info.report_url),
            baseline_run_url=_safe_url(info.baseline_run_url),
        ),
        generated_at=info.generated_at,
        history=_history_panel(history, [view, *(run_view(r) for r in c_runs[1:])], comparison, has_baseline),
        limits=limits,
    )


def _flaky_rule(history: HistoryAnalysis | None) -> Callable[[ItemChange], bool] | None:
    if history is None:
        return None
    from axl_action.history.analysis import change_key

    return lambda ch: history.is_flaky(change_key(ch), ch.scorer)


def _with_noise(rows: list[ScorerRow], history: HistoryAnalysis | None) -> list[ScorerRow]:
    if history is None:
        return rows
    for row in rows:
        band = history.bands.get(row.name)
        if band is not None:
            row.noise_band = band.band
            row.noise_moves = len(band.moves)
    return rows


def _history_panel(
    history: HistoryAnalysis | None, views: list[RunView], comparison: Comparison | None, has_baseline: bool
) -> HistoryPanel | None:
    if history is None or not len(history.history):
        return None
    from axl_action.history.panel import history_panel

    return history_panel(
        history,
        views,
        comparison,
        candidate_label="this PR" if has_baseline else "this run",
    )


def _safe_url(url: str | None) -> str | None:
    """Only plain http(s) URLs without spaces, quotes or brackets reach a Markdown link."""
    if not url:
        return None
    return url if re.fullmatch(r"https?://[^\s()<>\[\]\"'`]+", url) else None
