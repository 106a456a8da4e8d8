"""The compare gates (spec §4, §7.5, §11) as pure functions, and the ``GateReport`` built from them.

Reference behaviour first (the functions named after the TS ones keep its messages verbatim),
then the report: one ``Gate`` per concern, in a fixed order, each saying what it checked.
Exit code: 1 iff a gate is ``fail`` or ``refused``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial

from axl_action.compare.models import Comparison, Gate, GateReport, ItemErrorRate, ScorerComparison
from axl_action.errors import ItemErrorRateError
from axl_action.formatting import usd
from axl_action.schema import (
    DEFAULT_MAX_ITEM_ERROR_RATE,
    RunHeader,
    as_views,
    evaluate_scorer_tolerance,
    format_percent,
    is_budget_stopped,
    item_error_rate,
    js_string,
    read_accounting,
)
from axl_action.schema.numbers import is_error_rate_limit, to_fixed
from axl_action.schema.result import SequentialRecord
from axl_action.schema.view import DEFAULT_PASS_SCORE, PassCounts, Run, RunView, Side, pass_counts


@dataclass(frozen=True)
class GateOptions:
    """The gate flags of ``axl-eval compare``."""

    fail_on_regression: bool = False
    """``--fail-on-regression``."""
    max_scorer_error_rate: float | None = None
    """``--max-scorer-error-rate`` (opt-in; None = gate off, warnings only)."""
    max_item_error_rate: float | None = None
    """``--max-item-error-rate``; None means the default 0.05 (the gate is always on)."""
    max_cost_increase: float | None = None
    """``--max-cost-increase`` in percent (None = gate off)."""
    min_pass_rate: float | Mapping[str, float] | None = None
    """``--min-pass-rate``: one rate for every scorer or per-scorer rates (None = gate off)."""
    pass_score: float = DEFAULT_PASS_SCORE
    """``--pass-score``: the score at or above which a try passes."""


# ---------------------------------------------------------------- reference gate functions


def scorer_error_rate_reason(comparison: Comparison, max_scorer_error_rate: float) -> str | None:
    """``evaluateScorerErrorRateGate`` (spec §4.1): first scorer/side over tolerance, or None.

    Only scorers explicitly typed ``deterministic`` get zero tolerance; unknown types are LLM.
    """
    types = comparison.baseline.metadata.get("scorerTypes")
    types = types if isinstance(types, dict) else {}
    for name, s in comparison.scorers.items():
        deterministic = types.get(name) == "deterministic"
        limit = 0.0 if deterministic else max_scorer_error_rate
        for side, scored, failed, skipped in _sides(s):
            verdict = evaluate_scorer_tolerance(
                scored, failed, "deterministic" if deterministic else "llm", limit
            )
            if verdict.zero_sample:
                cause = (
                    f"every one of its items was N/A (the `applies` predicate skipped all {skipped})"
                    if skipped > 0
                    else "its items errored or produced no score"
                )
                return (
                    f'scorer "{name}" has no scored items on {side} ({cause}) — '
                    "cannot certify a mean over an empty sample."
                )
            if verdict.exceeds:
                limit_text = (
                    "deterministic zero-tolerance" if deterministic else f"{to_fixed(limit * 100, 1)}%"
                )
                return (
                    f'scorer "{name}" failed {to_fixed(verdict.rate * 100, 1)}% on {side} '
                    f"({failed}/{verdict.attempted}), over the {limit_text} limit."
                )
    return None


def _sides(s: ScorerComparison) -> tuple[tuple[str, int, int, int], ...]:
    return (
        ("baseline", s.baseline_scored, s.baseline_failed, s.baseline_skipped),
        ("candidate", s.candidate_scored, s.candidate_failed, s.candidate_skipped),
    )


def compare_item_error_rates(
    baseline: Sequence[Run], candidate: Sequence[Run], limit: float | None = None
) -> list[ItemErrorRate]:
    """``compareItemErrorRates`` (spec §4.2): every compared run of each side, judged on its own.

    ``limit=None`` means the default 0.05 (TS: an omitted argument). Legacy runs (no coverage)
    are judged on coverage derived from their items.
    """
    value = DEFAULT_MAX_ITEM_ERROR_RATE if limit is None else limit
    if not is_error_rate_limit(value):
        raise ItemErrorRateError(
            f"Invalid maxItemErrorRate ({js_string(value)}): expected a number in [0, 1].",
            hint="1 disables the item error-rate check",
        )
    run_count = min(len(baseline), len(candidate))
    views = as_views(baseline[:run_count]), as_views(candidate[:run_count])
    rates: list[ItemErrorRate] = []
    for side, runs in (("baseline", views[0]), ("candidate", views[1])):
        for r in range(run_count):
            run = runs[r]
            legacy = run.header.summary.coverage is None
            verdict = item_error_rate(run, value)
            rates.append(
                ItemErrorRate(
                    side=side,
                    run_index=r,
                    run_id=run.id,
                    legacy=legacy,
                    failed=verdict.failed,
                    attempted=verdict.attempted,
                    rate=verdict.rate,
                    limit=value,
                    exceeded=verdict.exceeded,
                )
            )
    return rates


def describe_item_error_rate(rate: ItemErrorRate, multi_run: bool) -> str:
    """``describeItemErrorRate`` (spec §4.3)."""
    which = f" run {rate.run_index + 1} ({rate.run_id})" if multi_run else f" ({rate.run_id})"
    legacy = ", derived from the items of a pre-0.24 artifact" if rate.legacy else ""
    return (
        f"{rate.side}{which} item error rate {format_percent(rate.rate)} "
        f"({rate.failed}/{rate.attempted} attempted items failed{legacy})"
    )


def item_error_rate_reason(rates: Sequence[ItemErrorRate], limit: float) -> str | None:
    """``evaluateItemErrorRateGate`` (spec §4.4) over precomputed rates."""
    multi_run = any(r.run_index > 0 for r in rates)
    over = next((r for r in rates if r.exceeded), None)
    if over is None:
        return None
    return (
        f"coverage: {describe_item_error_rate(over, multi_run)} exceeds the {format_percent(limit)} "
        "limit — its scores cover only the surviving items. Pass --max-item-error-rate <0..1> "
        "to accept a thinned side (1 disables the check)."
    )


def item_error_rate_warnings(rates: Sequence[ItemErrorRate]) -> list[str]:
    """One warning per run that lost items but stayed within the limit (spec §7.5 step 7)."""
    multi_run = any(r.run_index > 0 for r in rates)
    return [
        f"{describe_item_error_rate(r, multi_run)}, within the {format_percent(r.limit)} limit; "
        "its scores cover only the surviving items."
        for r in rates
        if r.failed > 0 and not r.exceeded
    ]


def nothing_scored(failed: int, skipped: int) -> str:
    """``nothing scored (30 failed)``: why a scorer has no mean on a side."""
    why = [f"{failed} failed"] if failed else []
    if skipped:
        why.append(f"{skipped} N/A")
    return "nothing scored" + (f" ({', '.join(why)})" if why else "")


def _unscored_sides(s: ScorerComparison) -> list[str]:
    return [side for side, scored, _, _ in _sides(s) if scored == 0]


def unscored_note(s: ScorerComparison) -> str | None:
    """``nothing scored on the candidate (30 failed)``, or None when both sides have a mean."""
    empty = _unscored_sides(s)
    if not empty:
        return None
    if len(empty) == 2:
        return "nothing scored on either side"
    failed, skipped = (
        (s.baseline_failed, s.baseline_skipped)
        if empty[0] == "baseline"
        else (s.candidate_failed, s.candidate_skipped)
    )
    return nothing_scored(failed, skipped).replace("nothing scored", f"nothing scored on the {empty[0]}", 1)


def thinned_sample_warnings(comparison: Comparison) -> list[str]:
    """Scorers that failed on some items (spec §7.5 step 5, first signal).

    A side where the scorer failed on every item has no surviving sample: the warning says
    that nothing was scored there instead of calling its mean (0 in the JSON) a mean.
    """
    out = []
    for name, s in comparison.scorers.items():
        if s.baseline_failed > 0 or s.candidate_failed > 0:
            counts = (
                f"baseline {s.baseline_failed}/{s.baseline_failed + s.baseline_scored}, "
                f"candidate {s.candidate_failed}/{s.candidate_failed + s.candidate_scored}"
            )
            empty = [side for side in _unscored_sides(s) if getattr(s, f"{side}_failed") > 0]
            if empty:
                where = "both sides" if len(empty) == 2 else f"the {empty[0]}"
                out.append(
                    f'scorer "{name}" failed on every item on {where} ({counts}): nothing was scored '
                    "there, so it has no mean to compare."
                )
                continue
            out.append(
                f'scorer "{name}" failed on some items ({counts}); the means above are computed over '
                "the surviving sample."
            )
    return out


def divergent_skip_notes(comparison: Comparison) -> list[str]:
    """Scorers whose N/A sets differ between sides (spec §7.5 step 5, second signal)."""
    out = []
    for name, s in comparison.scorers.items():
        b_sk, c_sk = s.baseline_skipped, s.candidate_skipped
        min_scored = min(s.baseline_scored, s.candidate_scored)
        if (b_sk > 0 or c_sk > 0) and (b_sk != c_sk or s.n < min_scored):
            out.append(
                f'scorer "{name}" applies to different subsets per side (baseline {b_sk} N/A, '
                f"candidate {c_sk} N/A; {s.n} item(s) scored on both); the two means cover "
                "different applicable subsets, so compare the delta with care."
            )
    return out


def scorer_subset_sides(baseline: RunHeader, candidate: RunHeader) -> list[tuple[str, list[str]]]:
    """Sides produced with ``--scorers`` (``metadata.scorerFiltered``), with the scorers they ran."""
    out = []
    for side, run in (("baseline", baseline), ("candidate", candidate)):
        if run.metadata.get("scorerFiltered") is True:
            ran = run.metadata.get("scorersRun")
            out.append((side, [str(x) for x in ran] if isinstance(ran, list) else []))
    return out


def scorer_subset_warning(side: str, ran: Sequence[str]) -> str:
    """The WARNING printed for a side run with ``--scorers``."""
    listed = f" (ran: {', '.join(ran)})" if ran else ""
    return (
        f"{side} was run with --scorers — it tested only a subset{listed}, so this comparison is incomplete."
    )


def scorer_subset_refusal(sides: Sequence[str]) -> str:
    """The refusal when ``--fail-on-regression`` meets a scorer subset."""
    return (
        f"{', '.join(sides)} was run with --scorers (a scorer subset); re-run without --scorers "
        "for a complete baseline."
    )


def _significant(s: ScorerComparison, use_holm: bool) -> bool | None:
    return s.holm_significant if use_holm and s.holm_significant is not None else s.significant


def regression_fails(comparison: Comparison) -> bool:
    """``--fail-on-regression`` decision (spec §7.5 step 8); Holm-corrected when enabled.

    Only when item-level regressions exist: with significance available, fail iff some scorer
    dropped significantly; without any CI (every n < 2), fail.
    """
    if not comparison.regressions:
        return False
    scorers = comparison.scorers.values()
    if any(s.significant is not None for s in scorers):
        return any(_significant(s, comparison.holm) is True and s.delta < 0 for s in scorers)
    return True


# ---------------------------------------------------------------- the gate report


def _budget_gate(baseline: Sequence[RunHeader], candidate: Sequence[RunHeader]) -> Gate:
    stopped: list[str] = []
    limit: float | None = None
    spend: float | None = None
    for side, runs in (("baseline", baseline), ("candidate", candidate)):
        for run in runs:
            acc = read_accounting(run)
            if acc.budget is not None and side == "candidate":
                limit, spend = acc.budget.limit, acc.budget.known_spend
            if is_budget_stopped(run) and acc.budget is not None:
                items = run.summary.coverage.items if run.summary.coverage else None
                refused = (
                    f": {items.budget_skipped} case(s) never started, {items.budget_interrupted} stopped mid-flight"
                    if items
                    else ""
                )
                stopped.append(
                    f"{side} run {run.id} was stopped by its {usd(acc.budget.limit)} budget{refused}"
                )
    gate = partial(Gate, name="budget", limit=limit, observed=spend)
    if stopped:
        return gate(
            status="warn",
            message=f"{stopped[0]} — its scores and cost cover only the work the budget admitted.",
            details=stopped[1:],
        )
    if limit is None:
        return gate(status="skipped", message="No budget was configured on the candidate.")
    return gate(
        status="pass",
        message=f"Candidate spent {usd(spend or 0)} of its {usd(limit)} budget and was not stopped.",
    )


def _item_gate(rates: list[ItemErrorRate], limit: float) -> Gate:
    worst = max((r.rate for r in rates), default=0.0)
    reason = item_error_rate_reason(rates, limit)
    warnings = item_error_rate_warnings(rates)
    gate = partial(Gate, name="item-error-rate", limit=limit, observed=worst)
    if reason is not None:
        return gate(status="refused", message=reason, details=warnings)
    if warnings:
        return gate(status="warn", message=warnings[0], details=warnings[1:])
    return gate(
        status="pass", message=f"No compared run lost items in the workflow (limit {format_percent(limit)})."
    )


@dataclass(frozen=True)
class ScorerFailure:
    """One scorer's failure rate on one side: what the scorer-error-rate gate observes."""

    scorer: str
    side: str | None
    """``baseline`` / ``candidate``; None for a run judged on its own."""
    failed: int
    attempted: int
    """Scored + failed calls (N/A items are not attempts)."""

    @property
    def rate(self) -> float:
        return self.failed / self.attempted if self.attempted else 0.0


def worst_scorer_failure(entries: Iterable[ScorerFailure]) -> ScorerFailure | None:
    """The scorer error rate, defined once for every report: the highest failure rate of any one
    scorer on any one side, ``failed / (scored + failed)`` (the first such scorer on ties).

    Per scorer, because that is how the gate judges (each LLM scorer against the limit,
    deterministic ones against zero): a share of all scorer calls would hide one broken scorer
    among healthy ones.
    """
    worst: ScorerFailure | None = None
    for entry in entries:
        if entry.attempted and (worst is None or entry.rate > worst.rate):
            worst = entry
    return worst


def comparison_scorer_failures(comparison: Comparison) -> list[ScorerFailure]:
    """Each scorer on each side of a comparison."""
    return [
        ScorerFailure(name, side, failed, scored + failed)
        for name, s in comparison.scorers.items()
        for side, scored, failed, _ in _sides(s)
    ]


def _scorer_gate(comparison: Comparison, limit: float | None) -> Gate:
    details = thinned_sample_warnings(comparison) + divergent_skip_notes(comparison)
    found = worst_scorer_failure(comparison_scorer_failures(comparison))
    worst = found.rate if found is not None else 0.0
    gate = partial(Gate, name="scorer-error-rate", observed=worst, details=details)
    if limit is None:
        if thinned_sample_warnings(comparison):
            return gate(
                status="warn",
                message="Some scorers failed on some items; pass --max-scorer-error-rate <0..1> to fail CI on a thinned sample.",
            )
        return gate(
            status="skipped",
            message="No scorer failed on any item (gate not enabled: --max-scorer-error-rate).",
        )
    reason = scorer_error_rate_reason(comparison, limit)
    if reason is not None:
        return gate(status="refused", limit=limit, message=reason)
    return gate(
        status="pass",
        limit=limit,
        message=f"Every scorer stayed within its failure tolerance ({format_percent(limit)} for LLM scorers, 0 for deterministic ones).",
    )


def _regressions_gate(
    comparison: Comparison, options: GateOptions, subset: list[tuple[str, list[str]]]
) -> Gate:
    count = len(comparison.regressions)
    if options.fail_on_regression and subset:
        return Gate(
            name="regressions",
            status="refused",
            observed=count,
            message=scorer_subset_refusal([side for side, _ in subset]),
        )
    fails = regression_fails(comparison)
    dropped = [
        name
        for name, s in comparison.scorers.items()
        if _significant(s, comparison.holm) is True and s.delta < 0
    ]
    if fails:
        what = (
            f"significant drop in {', '.join(dropped)}"
            if dropped
            else "no scorer has two paired samples to test significance"
        )
        message = f"{count} item-level regression(s) and {what}."
    elif count:
        message = f"{count} item-level regression(s), but no scorer dropped significantly."
    else:
        message = "No item-level regressions."
    if not options.fail_on_regression:
        status = "warn" if fails else "skipped"
        if fails:
            message += " Pass --fail-on-regression to fail CI on this."
        return Gate(name="regressions", status=status, observed=count, message=message)
    return Gate(name="regressions", status="fail" if fails else "pass", observed=count, message=message)


def _cost_gate(comparison: Comparison, limit: float | None) -> Gate:
    cost = comparison.cost
    if cost is None:
        message = "Cannot certify a cost change: neither side recorded spend or accounting."
        return Gate(
            name="cost", status="warn" if limit is not None else "skipped", limit=limit, message=message
        )
    if not cost.certified:
        message = f"Cannot certify the cost change: {cost.reason or 'costs are not comparable'}"
        return Gate(
            name="cost",
            status="warn" if limit is not None else "skipped",
            limit=limit,
            observed=cost.delta_percent,
            message=message,
        )
    change = (
        f"{'+' if cost.delta_percent > 0 else ''}{to_fixed(cost.delta_percent, 1)}%"
        if cost.delta_percent is not None
        else f"{usd(cost.baseline_exact)} -> {usd(cost.candidate_exact)} from a $0 baseline"
    )
    if limit is None:
        return Gate(
            name="cost",
            status="skipped",
            observed=cost.delta_percent,
            message=f"Certified cost change {change} (gate not enabled: --max-cost-increase).",
        )
    if cost.delta_percent is None:
        over = cost.candidate_total > 0
    else:
        over = cost.delta_percent > limit
    verb = "exceeds" if over else "is within"
    return Gate(
        name="cost",
        status="fail" if over else "pass",
        limit=limit,
        observed=cost.delta_percent,
        message=f"Certified cost change {change} {verb} the +{to_fixed(limit, 1)}% limit.",
    )


def _compatibility_gate(comparison: Comparison) -> Gate:
    compat = comparison.compatibility
    if compat.status == "changed":
        return Gate(
            name="compatibility",
            status="warn",
            message=f"The sides are not measuring exactly the same thing: {compat.messages[0]}.",
            details=compat.messages[1:],
        )
    if compat.status == "unknown":
        return Gate(
            name="compatibility",
            status="skipped",
            message="No dataset/scorer fingerprint on one side (TypeScript or pre-0.24 file): compatibility unknown.",
        )
    return Gate(
        name="compatibility",
        status="pass",
        message="Same dataset, scorers, configuration and pricing table on both sides.",
    )


def pass_rate_gate(
    candidate: Sequence[RunView], limits: float | Mapping[str, float], pass_score: float = DEFAULT_PASS_SCORE
) -> Gate:
    """``--min-pass-rate``: each scorer's pass rate on the candidate, pooled over its runs and
    over every repeat (``schema.view.pass_counts``), at or above its limit. A scorer with a
    limit and no try (every item N/A, cancelled or stopped) refuses: nothing certifies it."""
    names = list(candidate[0].header.scorer_names) if candidate else []
    wanted = {name: limits for name in names} if not isinstance(limits, Mapping) else dict(limits)
    unknown = [name for name in wanted if name not in names]
    checked: list[tuple[str, float, PassCounts]] = []
    for name in names:
        if name in wanted:
            checked.append((name, float(wanted[name]), pooled_pass_counts(candidate, name, pass_score)))
    details = (
        [f"--min-pass-rate names scorer(s) not in the candidate: {', '.join(unknown)}"] if unknown else []
    )
    bare = [name for name, _, counts in checked if counts.rate is None]
    limit = float(limits) if not isinstance(limits, Mapping) else min(wanted.values(), default=None)
    if bare:
        return Gate(
            name="pass-rate",
            status="refused",
            limit=limit,
            message=f"No scored try to count a pass rate for {', '.join(bare)}.",
            details=details,
        )
    if not checked:
        return Gate(
            name="pass-rate", status="skipped", limit=limit, message="No scorer to count a pass rate for.",
            details=details,
        )  # fmt: skip
    rates = [(name, low, counts, counts.rate or 0.0) for name, low, counts in checked]
    shown = [
        describe_pass(name, counts)
        + (f" below {format_percent(low)}" if rate < low else f" at or above {format_percent(low)}")
        for name, low, counts, rate in rates
    ]
    failing = [line for line, (_, low, _, rate) in zip(shown, rates, strict=True) if rate < low]
    worst = min(rate for *_, rate in rates)
    return Gate(
        name="pass-rate",
        status="fail" if failing else "pass",
        limit=limit,
        observed=worst,
        message=f"Pass rate (score >= {pass_score:g}): " + "; ".join(failing or shown) + ".",
        details=details,
    )


def describe_pass(name: str, counts: PassCounts) -> str:
    """``accuracy 92.0% (184/200)``: a scorer's pass rate as the gate and the reports write it."""
    rate = counts.rate
    shown = f"{to_fixed(rate * 100, 1)}%" if rate is not None else "—"
    return f"{name} {shown} ({counts.passed}/{counts.tried})"


def describe_sequential(record: SequentialRecord) -> str:
    """How a ``repeats: auto`` run spent its repeats, as the CLI and the reports say it:
    ``decided after 1.4 repeats per item on average (cap 5)``."""
    mean = f"{to_fixed(record.mean_repeats, 1)} repeats per item on average (cap {record.max_repeats})"
    if not record.baseline:
        return f"{mean}: repeats auto had no baseline to decide against"
    if record.open:
        return f"{mean}; still open at the cap: {', '.join(record.open)}"
    return f"decided after {mean}"


def pooled_pass_counts(
    runs: Sequence[RunView], name: str, pass_score: float = DEFAULT_PASS_SCORE
) -> PassCounts:
    """A scorer's pass counts summed over ``runs`` (a side's ``--runs``)."""
    total = PassCounts()
    for run in runs:
        total = total + pass_counts(run.items, name, pass_score)
    return total


def evaluate_gates(
    comparison: Comparison,
    baseline: Side,
    candidate: Side,
    options: GateOptions | None = None,
) -> GateReport:
    """Apply every gate; ``baseline``/``candidate`` are the run lists (models or views) compared."""
    opts = options or GateOptions()
    limit = DEFAULT_MAX_ITEM_ERROR_RATE if opts.max_item_error_rate is None else opts.max_item_error_rate
    run_count = comparison.baseline.run_count
    b_runs, c_runs = as_views(baseline)[:run_count], as_views(candidate)[:run_count]
    rates = compare_item_error_rates(b_runs, c_runs, limit)
    subset = scorer_subset_sides(b_runs[0].header, c_runs[0].header)
    gates = [
        _budget_gate([r.header for r in b_runs], [r.header for r in c_runs]),
        _item_gate(rates, limit),
        _scorer_gate(comparison, opts.max_scorer_error_rate),
        _regressions_gate(comparison, opts, subset),
        _cost_gate(comparison, opts.max_cost_increase),
        _compatibility_gate(comparison),
    ]
    if opts.min_pass_rate is not None:
        gates.append(pass_rate_gate(c_runs, opts.min_pass_rate, opts.pass_score))
    return GateReport(gates=gates, item_rates=rates)
