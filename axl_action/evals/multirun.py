"""``aggregate_runs``: mean ± std across the runs of one eval (runner spec §18, compare §6)."""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from axl_action.schema.accounting import Accounting, aggregate_accounting
from axl_action.schema.numbers import round3, sample_std, usable_number


def _wire_accounting(result: Mapping[str, Any]) -> Accounting:
    raw = result.get("accounting")
    if raw is not None:
        return Accounting.model_validate(raw)
    total = result.get("totalCost")
    return Accounting(known_cost=total if usable_number(total) else 0.0, completeness="unverified")


def aggregate_runs(runs: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """``MultiRunSummary`` of wire results (printed by the CLI, never persisted)."""
    if not runs:
        raise ValueError("Cannot aggregate zero runs")
    first = runs[0]
    group = (first.get("metadata") or {}).get("runGroupId")
    workflows: dict[str, None] = {}
    for run in runs:
        for w in (run.get("metadata") or {}).get("workflows") or []:
            if isinstance(w, str):
                workflows.setdefault(w, None)
    scorers: dict[str, Any] = {}
    for name in (first.get("summary") or {}).get("scorers") or {}:
        entries = [((r.get("summary") or {}).get("scorers") or {}).get(name) or {} for r in runs]
        contributing = [e for e in entries if e.get("scored") is None or e.get("scored", 0) > 0] or entries
        means = [e.get("mean", 0) or 0 for e in contributing]
        scorers[name] = {
            "mean": round3(sum(means) / len(means)) + 0.0,
            "std": round3(sample_std(means)) + 0.0,
            "min": round3(min(means)) + 0.0,
            "max": round3(max(means)) + 0.0,
            "scored": sum(e.get("scored", 0) or 0 for e in entries),
            "failed": sum(e.get("failed", 0) or 0 for e in entries),
            "skipped": sum(e.get("skipped", 0) or 0 for e in entries),
        }
    out: dict[str, Any] = {
        "runGroupId": group if group is not None else str(uuid.uuid4()),
        "runCount": len(runs),
        "workflows": list(workflows),
        "dataset": first.get("dataset"),
        "totalCost": round3(sum(r.get("totalCost", 0) or 0 for r in runs)) + 0.0,
        "accounting": aggregate_accounting(_wire_accounting(r) for r in runs).to_wire(),
        "totalDuration": round3(sum(r.get("duration", 0) or 0 for r in runs)) + 0.0,
        "scorers": scorers,
    }
    timings = [(r.get("summary") or {}).get("timing") for r in runs]
    if all(timings):
        means = [t["mean"] for t in timings if t]
        out["timing"] = {
            "mean": round3(sum(means) / len(means)) + 0.0,
            "std": round3(sample_std(means)) + 0.0,
        }
    return out
