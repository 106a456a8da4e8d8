"""``compare_results``: the reference ``evalCompare`` (spec §1-§2) plus our extras.

Pure: takes parsed results, returns a ``Comparison``; no I/O, inputs are not modified.
Processing order follows the spec: normalise and validate, truncate to a common run count,
resolve thresholds, pair differences, per-scorer block with bootstrap CI, item-level changes,
timing, cost with certification, summary, partial-batch detection.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from axl_action.compare.alignment import Alignment, align
from axl_action.compare.averaging import item_average
from axl_action.compare.bootstrap import DEFAULT_ALPHA, DEFAULT_RESAMPLES, bootstrap_many, random_seed
from axl_action.compare.compatibility import check_compatibility
from axl_action.compare.cost import compare_cost
from axl_action.compare.models import (
    Comparison,
    ConfidenceInterval,
    CostComparison,
    ItemChanges,
    PartialBatch,
    ScorerComparison,
    SideInfo,
    TimingComparison,
)
from axl_action.compare.significance import (
    bootstrap_p_value,
    holm,
    is_significant,
    minimum_detectable_effect,
    verdict,
)
from axl_action.compare.thresholds import ResolvedThreshold, Thresholds, resolve_threshold
from axl_action.errors import CompareError
from axl_action.formatting import plural
from axl_action.schema import RunHeader, RunView, SampleCounts, as_views, round3, sample_counts
from axl_action.schema.numbers import finite_number, to_fixed
from axl_action.schema.view import F64, Bools, Run, Side, header_of


@dataclass(frozen=True)
class CompareOptions:
    """Knobs of ``compare_results``."""

    thresholds: Thresholds = None
    """Global threshold, per-scorer map, or None for the auto-calibrated defaults (spec §2.4)."""
    seed: int | None = None
    """Bootstrap seed; None draws one (reported in ``Comparison.seed``)."""
    resamples: int = DEFAULT_RESAMPLES
    """Bootstrap resamples."""
    alpha: float = DEFAULT_ALPHA
    """1 - confidence level of the CI; also the Holm family-wise level."""
    holm: bool = False
    """Apply Holm correction across scorers to the verdicts."""
    workers: int | None = None
    """Bootstrap threads (None: up to 2)."""


def _validate(baseline: list[RunView], candidate: list[RunView]) -> list[str]:
    if not baseline or not candidate:
        raise CompareError(
            "Cannot compare empty eval result arrays",
            hint="each results file must hold at least one run",
        )
    b_ref, c_ref = baseline[0].header, candidate[0].header
    if b_ref.dataset != c_ref.dataset:
        raise CompareError(
            f'Cannot compare evals from different datasets: "{b_ref.dataset}" vs "{c_ref.dataset}"',
            hint="compare two runs of the same eval (same dataset name)",
        )
    b_names, c_names = sorted(b_ref.summary.scorers), sorted(c_ref.summary.scorers)
    if b_names != c_names:
        only_b = [n for n in b_names if n not in c_names]
        only_c = [n for n in c_names if n not in b_names]
        detail = []
        if only_b:
            detail.append(f"only the baseline has {', '.join(only_b)}")
        if only_c:
            detail.append(f"only the candidate has {', '.join(only_c)}")
        raise CompareError(
            f"Cannot compare evals with different scorers: {'; '.join(detail)}",
            hint="run both sides with the same scorers (or rescore the baseline with the new ones)",
        )
    return b_names


def detect_partial(runs: Sequence[Run]) -> PartialBatch | None:
    """A side holding fewer runs than its batch attempted (spec §2.13); reads the raw list."""
    if not runs:
        return None
    attempted: float | None = None
    for run in runs:
        v = header_of(run).metadata.get("batchAttempted")
        if finite_number(v):
            attempted = v
            break
    if attempted is None or len(runs) >= attempted:
        return None
    return PartialBatch(completed=len(runs), attempted=int(attempted))


def _side_info(runs: list[RunView], run_count: int) -> SideInfo:
    """One side's identity: its first run's id and metadata, and how many runs it holds."""
    first = runs[0].header
    return SideInfo(
        id=first.id,
        metadata=first.metadata,
        run_count=run_count,
        partial=detect_partial(runs),
        runs_available=len(runs),
    )


def _summary_mean(run: RunView, name: str) -> float:
    stats = run.header.summary.scorers.get(name)
    return stats.mean if stats is not None else 0.0


def _paired_diffs(b_runs: Sequence[RunView], c_runs: Sequence[RunView], name: str, al: Alignment) -> F64:
    parts: list[F64] = []
    for b, c in zip(b_runs, c_runs, strict=True):
        bi, ci = al.pairs(b.size, c.size)
        bs, cs = b.items.column(name).score[bi], c.items.column(name).score[ci]
        ok = ~b.items.errored[bi] & ~c.items.errored[ci] & ~np.isnan(bs) & ~np.isnan(cs)
        parts.append(cs[ok] - bs[ok])
    return np.concatenate(parts) if parts else np.empty(0)


def _item_changes(
    b_runs: Sequence[RunView],
    c_runs: Sequence[RunView],
    names: Sequence[str],
    thresholds: dict[str, ResolvedThreshold],
    al: Alignment,
) -> tuple[ItemChanges, ItemChanges]:
    """Spec §2.9, vectorised: per (item, scorer), run-averaged scores compared to the threshold."""
    if al.mode == "key":
        b_idx, c_idx = al.baseline_index, al.candidate_index
    else:
        count = min(ra.size for ra in [*b_runs, *c_runs])
        b_idx = c_idx = np.arange(count, dtype=np.intp)
    inputs = b_runs[0].items.inputs
    key_mode = al.mode == "key"
    parts: list[tuple[npt.NDArray[np.intp], int, F64, F64, F64, Bools]] = []
    for order, name in enumerate(names):
        # An item that errored in any run of either side is left out (the one averaging rule).
        b_avg, b_ok = item_average(b_runs, name, b_idx)
        c_avg, c_ok = item_average(c_runs, name, c_idx)
        use = b_ok & c_ok
        with np.errstate(invalid="ignore"):
            delta = round3(c_avg - b_avg)
        t = thresholds[name].value
        with np.errstate(invalid="ignore"):
            worse = use & (delta < -t)
            better = use & ~worse & (delta > t)
        picked = np.flatnonzero(worse | better)
        parts.append(
            (picked, order, round3(b_avg[picked]), round3(c_avg[picked]), delta[picked], worse[picked])
        )
    if not parts:
        return ItemChanges.none(), ItemChanges.none()
    pos = np.concatenate([p[0] for p in parts])
    scorer = np.concatenate([np.full(len(p[0]), p[1], dtype=np.intp) for p in parts])
    # Ordered by item index, then scorer (spec §2.9); positions follow the baseline order.
    order_ = np.lexsort((scorer, b_idx[pos]))
    pos, scorer = pos[order_], scorer[order_]
    b_score = np.concatenate([p[2] for p in parts])[order_]
    c_score = np.concatenate([p[3] for p in parts])[order_]
    delta = np.concatenate([p[4] for p in parts])[order_]
    is_worse = np.concatenate([p[5] for p in parts])[order_]
    item_index, other = b_idx[pos], c_idx[pos]

    def changes(rows: Bools) -> ItemChanges:
        return ItemChanges(
            item_index=item_index[rows],
            scorer=scorer[rows],
            names=names,
            baseline_score=b_score[rows],
            candidate_score=c_score[rows],
            delta=delta[rows],
            inputs=inputs,
            candidate_index=np.where(other[rows] != item_index[rows], other[rows], -1) if key_mode else None,
            key_at=pos[rows] if key_mode else None,
            keys=al.keys if key_mode else None,
        )

    return changes(is_worse), changes(~is_worse)


def _timing(b_runs: Sequence[RunView], c_runs: Sequence[RunView]) -> TimingComparison | None:
    b_t = [r.header.summary.timing.mean for r in b_runs if r.header.summary.timing is not None]
    c_t = [r.header.summary.timing.mean for r in c_runs if r.header.summary.timing is not None]
    if not b_t or not c_t:
        return None
    b_mean = _js_mean(b_t)
    c_mean = _js_mean(c_t)
    return TimingComparison(
        baseline_mean=round3(b_mean),
        candidate_mean=round3(c_mean),
        delta=round3(c_mean - b_mean),
        delta_percent=round3((c_mean - b_mean) / b_mean * 100) if b_mean > 0 else 0.0,
    )


def _js_mean(values: Sequence[float]) -> float:
    total = 0.0
    for v in values:
        total += v
    return total / len(values)


def summarise(
    scorers: dict[str, ScorerComparison],
    timing: TimingComparison | None,
    cost: CostComparison | None,
    regressions: int,
    improvements: int,
) -> str:
    """The one-line summary (spec §2.12); cost appears only when certified.

    Two deliberate differences from TS: the direction of the timing and cost clauses follows
    the sign of ``delta_percent`` (unrounded values), not of the 3-decimal ``delta``, so a cost
    that rose by less than $0.0005 is not called "cheaper"; and a scorer that scored nothing on
    one side is said to have scored nothing there, not to have regressed (or improved) by 100%.
    Also: a change from a baseline mean of 0 says "improves from 0", not "by +0.0%" (no
    percentage of 0 exists), and counts are pluralised ("1 improvement", not "1 improvements").
    """
    parts: list[str] = []
    for name, s in scorers.items():
        empty = [
            side for side, n in (("baseline", s.baseline_scored), ("candidate", s.candidate_scored)) if n == 0
        ]
        if empty and len(empty) < 2:
            # Its mean there is 0 only because nothing was scored: not a regression of 100%.
            parts.append(f"'{name}' scored nothing on the {empty[0]}")
            continue
        if abs(s.delta) > 0.001:
            direction = "improves" if s.delta > 0 else "regresses"
            sign = "+" if s.delta > 0 else ""
            sig = ""
            if s.significant is True:
                sig = " (significant)"
            elif s.significant is False:
                sig = " (not significant)"
            by = "from 0" if s.from_zero else f"by {sign}{to_fixed(s.delta_percent, 1)}%"
            parts.append(
                f"'{name}' {direction} {by} "
                f"({to_fixed(s.baseline_mean, 2)} -> {to_fixed(s.candidate_mean, 2)}){sig}"
            )
    # Direction from the percentage, which is computed from the unrounded values: the rounded
    # ``delta`` is 0 for any change under 0.0005 ($0.0005 of cost), and TS then says "cheaper".
    if timing is not None and abs(timing.delta_percent) > 1:
        direction = "slower" if timing.delta_percent > 0 else "faster"
        parts.append(f"{to_fixed(abs(timing.delta_percent), 0)}% {direction}")
    if cost is not None and cost.certified and cost.delta_percent is not None and abs(cost.delta_percent) > 1:
        direction = "more expensive" if cost.delta_percent > 0 else "cheaper"
        parts.append(f"{to_fixed(abs(cost.delta_percent), 0)}% {direction}")
    body = ", ".join(parts) if parts else "no meaningful changes"
    return (
        f"candidate {body} with {plural(regressions, 'regression')} and {plural(improvements, 'improvement')}"
    )


def compare_results(baseline: Side, candidate: Side, options: CompareOptions | None = None) -> Comparison:
    """Compare a baseline and a candidate: one run or a list of runs each, as models or views.

    Views (``schema.load_run_views``) are what the CLI passes: a model is read into one first.
    """
    return _compare(baseline, candidate, options)


def _level(opts: CompareOptions, candidate: RunHeader) -> float:
    """The comparison's α. A ``repeats: auto`` candidate spent its α over its looks, so it is
    compared at the level of one look, as its rounds were (``evals/sequential.py``)."""
    record = candidate.sequential
    return min(opts.alpha, record.look_alpha) if record is not None else opts.alpha


def _compare(baseline: Side, candidate: Side, options: CompareOptions | None) -> Comparison:
    opts = options or CompareOptions()
    raw_b, raw_c = as_views(baseline), as_views(candidate)
    names = _validate(raw_b, raw_c)
    b_ref, c_ref = raw_b[0].header, raw_c[0].header
    run_count = min(len(raw_b), len(raw_c))
    trunc_b, trunc_c = raw_b[:run_count], raw_c[:run_count]
    alignment = align(trunc_b, trunc_c)
    thresholds = {n: resolve_threshold(n, opts.thresholds, b_ref.metadata) for n in names}
    types = b_ref.scorer_types
    seed = opts.seed if opts.seed is not None else random_seed()
    alpha = _level(opts, c_ref)

    diffs = {n: _paired_diffs(trunc_b, trunc_c, n, alignment) for n in names}
    boots = bootstrap_many(
        {n: d for n, d in diffs.items() if len(d) >= 2},
        n_resamples=opts.resamples,
        alpha=alpha,
        seed=seed,
        workers=opts.workers,
    )

    scorers: dict[str, ScorerComparison] = {}
    p_values: dict[str, float] = {}
    for name in names:
        b_mean_raw = _js_mean([_summary_mean(r, name) for r in trunc_b])
        c_mean_raw = _js_mean([_summary_mean(r, name) for r in trunc_c])
        b_counts = sum((sample_counts(ra.items, name) for ra in trunc_b), SampleCounts())
        c_counts = sum((sample_counts(ra.items, name) for ra in trunc_c), SampleCounts())
        t = thresholds[name]
        n = len(diffs[name])
        boot = boots.get(name)
        significant = is_significant(boot, t.value) if boot is not None else None
        p_value = bootstrap_p_value(boot) if boot is not None else None
        if p_value is not None:
            p_values[name] = p_value
        raw_type = types.get(name)
        scorers[name] = ScorerComparison(
            baseline_mean=round3(b_mean_raw),
            candidate_mean=round3(c_mean_raw),
            delta=round3(c_mean_raw - b_mean_raw),
            delta_percent=round3((c_mean_raw - b_mean_raw) / b_mean_raw * 100) if b_mean_raw > 0 else 0.0,
            baseline_scored=b_counts.scored,
            baseline_failed=b_counts.failed,
            candidate_scored=c_counts.scored,
            candidate_failed=c_counts.failed,
            baseline_skipped=b_counts.skipped,
            candidate_skipped=c_counts.skipped,
            n=n,
            ci=ConfidenceInterval(lower=boot.lower, upper=boot.upper) if boot is not None else None,
            p_regression=boot.p_regression if boot is not None else None,
            p_improvement=boot.p_improvement if boot is not None else None,
            significant=significant,
            threshold=t.value,
            threshold_source=t.source,
            scorer_type=raw_type if raw_type in ("llm", "deterministic") else "unknown",
            mean_difference=boot.mean if boot is not None else None,
            verdict=verdict(boot, n, t.value, bool(significant)),
            mde=minimum_detectable_effect(diffs[name], alpha),
            p_value=p_value,
        )
    if opts.holm:
        adjusted = holm(p_values, alpha)
        for name, (p_adj, rejected) in adjusted.items():
            s = scorers[name]
            s.holm_p_value = round(p_adj, 6)
            s.holm_significant = bool(s.significant) and rejected
            if s.verdict in ("regressed", "improved") and not s.holm_significant:
                s.verdict = "inconclusive"

    regressions, improvements = _item_changes(trunc_b, trunc_c, names, thresholds, alignment)
    timing = _timing(trunc_b, trunc_c)
    cost = compare_cost(trunc_b, trunc_c, names)
    matched = len(alignment.baseline_index) if alignment.mode == "key" else min(raw_b[0].size, raw_c[0].size)
    return Comparison(
        baseline=_side_info(raw_b, run_count),
        candidate=_side_info(raw_c, run_count),
        scorers=scorers,
        timing=timing,
        cost=cost,
        regressions=regressions,
        improvements=improvements,
        summary=summarise(scorers, timing, cost, len(regressions), len(improvements)),
        seed=seed,
        resamples=opts.resamples,
        alpha=alpha,
        holm=opts.holm,
        stable=max(0, raw_b[0].size - len(regressions) - len(improvements)),
        compatibility=check_compatibility(b_ref, c_ref, alignment, matched),
    )
