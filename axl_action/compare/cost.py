"""Cost comparison and its certification (spec §2.11).

A cost delta is only meaningful when both sides *measured* their spend completely and did the
same work; ``certify_cost`` walks the reference's refusal rules in order and returns the first
reason it cannot vouch for the delta, or None.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from axl_action.compare.models import CostComparison
from axl_action.schema import KNOWN_ACCOUNTING_VERSIONS, RunView, certified_cost, read_accounting, round3


def _sides(
    baseline: Sequence[RunView], candidate: Sequence[RunView]
) -> tuple[tuple[str, Sequence[RunView]], ...]:
    return (("baseline", baseline), ("candidate", candidate))


def certify_cost(
    baseline: Sequence[RunView], candidate: Sequence[RunView], scorer_names: Sequence[str]
) -> str | None:
    """The first reason the cost delta cannot be certified, or None (spec §2.11, rules 1-4).

    Items and scorers are matched by index like the reference: a cost total covers every
    item, so a side that ran different items did different work regardless of pairing.
    """
    return (
        _unknown_version(baseline, candidate)
        or _unmeasured(baseline, candidate)
        or _scope_differs(baseline, candidate)
        or _different_work(baseline, candidate, scorer_names)
    )


def _unknown_version(baseline: Sequence[RunView], candidate: Sequence[RunView]) -> str | None:
    """Rule 0: a record format this reader does not know says nothing it can vouch for."""
    for side, runs in _sides(baseline, candidate):
        for ra in runs:
            version = read_accounting(ra.header).version
            if version not in KNOWN_ACCOUNTING_VERSIONS:
                return f"{side} run {ra.id} has an unknown accounting version ({version})."
    return None


def _unmeasured(baseline: Sequence[RunView], candidate: Sequence[RunView]) -> str | None:
    """Rule 1: both sides measured their spend."""
    for side, runs in _sides(baseline, candidate):
        for ra in runs:
            acc = read_accounting(ra.header)
            if acc.completeness == "unverified":
                return (
                    f"{side} run {ra.id} carries no accounting (unverified) — "
                    "its total is not a measured figure."
                )
            if acc.completeness == "incomplete":
                reasons = ", ".join(acc.reasons) or "unknown spend"
                return (
                    f"{side} run {ra.id} has incomplete accounting ({reasons}) — its total is a lower bound."
                )
    return None


def _scope_differs(baseline: Sequence[RunView], candidate: Sequence[RunView]) -> str | None:
    """Rules 2 and 3: one accounting scope per side, and the same scope on both sides."""
    scopes: dict[str, str | None] = {}
    for side, runs in _sides(baseline, candidate):
        for ra in runs:
            scope = read_accounting(ra.header).scope
            if side in scopes and scopes[side] != scope:
                return (
                    f'{side} mixes accounting scopes ("{scopes[side]}" and "{scope}") — a rescore '
                    "total covers judging only and cannot be averaged with a full run."
                )
            scopes[side] = scope
    b_scope, c_scope = scopes.get("baseline"), scopes.get("candidate")
    if b_scope != c_scope:
        return (
            f'accounting scope differs (baseline "{_js(b_scope)}" vs candidate "{_js(c_scope)}") — '
            "a rescore total covers judging only."
        )
    return None


def _different_work(
    baseline: Sequence[RunView], candidate: Sequence[RunView], scorer_names: Sequence[str]
) -> str | None:
    """Rule 4: the same work, run by run, item by item and scorer by scorer."""
    for b, c in zip(baseline, candidate, strict=False):
        if b.size != c.size:
            return (
                f"item counts differ (baseline {b.size} vs candidate {c.size}) — "
                "the runs did different amounts of work."
            )
        reason = _coverage_differs(b, c, scorer_names)
        if reason is not None:
            return reason
    return None


def _coverage_differs(b: RunView, c: RunView, scorer_names: Sequence[str]) -> str | None:
    """The first item where one run of a pair completed it, or scored it, and the other did not."""
    ran_b, ran_c = ~b.items.errored, ~c.items.errored
    mismatch = ran_b != ran_c
    both = ran_b & ran_c
    scorer_mismatch = [
        both & (np.isnan(b.items.column(n).score) != np.isnan(c.items.column(n).score)) for n in scorer_names
    ]
    any_mismatch = mismatch.copy()
    for m in scorer_mismatch:
        any_mismatch |= m
    if not any_mismatch.any():
        return None
    i = int(np.argmax(any_mismatch))
    if mismatch[i]:
        if ran_b[i]:
            return (
                f"case coverage differs at item {i}: candidate did not complete it "
                f"({c.items.stopped_how(i)}) — the cheaper side did less work."
            )
        return (
            f"case coverage differs at item {i}: baseline did not complete it "
            f"({b.items.stopped_how(i)}) — the cheaper side did less work."
        )
    for name, m in zip(scorer_names, scorer_mismatch, strict=True):
        if m[i]:
            only = "candidate" if np.isnan(b.items.column(name).score[i]) else "baseline"
            return f'scorer coverage differs for "{name}" at item {i}: only {only} produced a score.'
    return None


def _js(value: str | None) -> str:
    # TS interpolates a missing scope as "undefined".
    return "undefined" if value is None else value


def compare_cost(
    baseline: Sequence[RunView], candidate: Sequence[RunView], scorer_names: Sequence[str]
) -> CostComparison | None:
    """The cost block, or None when neither side has spend nor accounting (spec §2.11).

    Each side is its *certified* cost (``schema.certified_cost``): calls the response cache
    replayed count at what they cost when made, so a cached run is compared like for like."""
    run_count = len(baseline)
    b_sum = 0.0
    for ra in baseline:
        b_sum += certified_cost(read_accounting(ra.header))
    c_sum = 0.0
    for ra in candidate:
        c_sum += certified_cost(read_accounting(ra.header))
    b_avg, c_avg = b_sum / run_count, c_sum / run_count
    has_accounting = any(ra.header.accounting is not None for ra in [*baseline, *candidate])
    if not (b_avg > 0 or c_avg > 0 or has_accounting):
        return None
    raw = c_avg - b_avg
    reason = certify_cost(baseline, candidate, scorer_names)
    return CostComparison(
        baseline_total=round3(b_avg) + 0.0,
        candidate_total=round3(c_avg) + 0.0,
        delta=round3(raw) + 0.0,
        delta_percent=round3(raw / b_avg * 100) + 0.0 if b_avg > 0 else None,
        certified=reason is None,
        reason=reason,
    ).with_exact(b_avg, c_avg)
