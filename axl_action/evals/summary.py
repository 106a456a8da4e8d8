"""Run-level figures: coverage, per-scorer stats, gates, timing and metadata roll-ups.

Pure functions over the ordered wire items the runner just built (spec §4.4, §6.3, §10, §12,
§13). They mirror ``axl_action.schema.outcomes``, which reads *models* of any (also legacy)
file; the runner works on wire dicts on its hot path and every item it builds has outcomes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from axl_action.evals.scorer import Scorer
from axl_action.schema import ITEM_OUTCOMES, SCORER_OUTCOMES, ItemCoverage, evaluate_item_error_rate
from axl_action.schema.numbers import compute_stats


def coverage(items: Sequence[Mapping[str, Any]], names: Sequence[str]) -> dict[str, Any]:
    """``summary.coverage`` (every key present, zeros included)."""
    item_counts = dict.fromkeys(ITEM_OUTCOMES, 0)
    scorer_counts = {name: dict.fromkeys(SCORER_OUTCOMES, 0) for name in names}
    for item in items:
        bucket = item.get("outcome") or ("failed" if item.get("error") else "completed")
        if bucket in item_counts:
            item_counts[bucket] += 1
        for name, detail in (item.get("scoreDetails") or {}).items():
            counts = scorer_counts.get(name)
            outcome = detail.get("outcome") if isinstance(detail, Mapping) else None
            if counts is not None and outcome in counts:
                counts[outcome] += 1
    return {"items": item_counts, "scorers": scorer_counts}


def scorer_sample(items: Sequence[Mapping[str, Any]], name: str) -> tuple[list[float], int, int, int]:
    """(scores, scored, failed, skipped) over items without ``error`` (spec §4.4)."""
    scores: list[float] = []
    scored = failed = skipped = 0
    for item in items:
        if item.get("error"):
            continue
        value = (item.get("scores") or {}).get(name)
        if value is not None:
            scores.append(value)
        outcome = ((item.get("scoreDetails") or {}).get(name) or {}).get("outcome")
        if outcome == "scored":
            scored += 1
        elif outcome == "failed":
            failed += 1
        elif outcome == "skipped":
            skipped += 1
    return scores, scored, failed, skipped


def item_error_rate(items: Mapping[str, int], count: int, limit: float) -> dict[str, Any]:
    """``evaluateItemErrorRate`` (spec §10.1) over wire coverage counts; ``rate`` is not rounded."""
    return evaluate_item_error_rate(ItemCoverage(**items), count, limit).to_wire()


def model_timing(samples: Mapping[str, Sequence[Any]]) -> dict[str, Any] | None:
    """``summary.modelTiming`` from pooled per-call ``CallTiming`` samples (spec §12.3)."""
    out: dict[str, Any] = {}
    for model, calls in samples.items():
        if not calls:
            continue
        entry: dict[str, Any] = {
            "calls": len(calls),
            "wireMs": compute_stats([c.wire_ms for c in calls]),
            "queuedMs": compute_stats([c.queued_ms for c in calls]),
            "retryMs": compute_stats([c.retry_ms for c in calls]),
            "rateLimitRetries": sum(c.rate_limit_retries or 0 for c in calls),
        }
        first = [c.first_token_ms for c in calls if c.first_token_ms is not None]
        if first:
            entry["firstTokenMs"] = compute_stats(first)
            entry["firstTokenCalls"] = len(first)
        out[model] = entry
    return out or None


def build_summary(
    items: Sequence[Mapping[str, Any]],
    scorers: Sequence[Scorer],
    timing_by_model: dict[str, Any] | None,
    *,
    item_error_limit: float,
    scorer_error_limit: float | None,
) -> dict[str, Any]:
    """``EvalSummary`` in wire order (spec §14.4)."""
    names = [s.name for s in scorers]
    cov = coverage(items, names)
    summary: dict[str, Any] = {
        "count": len(items),
        "failures": sum(1 for i in items if i.get("error")),
        "coverage": cov,
    }
    stats: dict[str, Any] = {}
    degraded: list[dict[str, Any]] = []
    for s in scorers:
        values, scored, failed, skipped = scorer_sample(items, s.name)
        stats[s.name] = {**compute_stats(values), "scored": scored, "failed": failed, "skipped": skipped}
        if scorer_error_limit is not None:
            kind = "llm" if s.is_llm else "deterministic"
            limit = scorer_error_limit if s.is_llm else 0
            attempted = scored + failed
            rate = failed / attempted if attempted else 0
            exceeds = attempted > 0 and (failed > 0 if kind == "deterministic" else rate > limit)
            if exceeds:
                degraded.append(
                    {
                        "scorer": s.name,
                        "rate": rate,
                        "limit": limit,
                        "type": kind,
                        "scored": scored,
                        "failed": failed,
                    }
                )
    summary["scorers"] = stats
    durations = [i["duration"] for i in items if not i.get("error") and "duration" in i]
    if durations:
        summary["timing"] = compute_stats(durations)
    if timing_by_model:
        summary["modelTiming"] = timing_by_model
    if degraded:
        summary["degraded"] = degraded
    error_rate = item_error_rate(cov["items"], len(items), item_error_limit)
    if error_rate["failed"] > 0:
        summary["itemErrorRate"] = error_rate
    return summary


def _rollup(items: Sequence[Mapping[str, Any]], counts_key: str, list_key: str) -> dict[str, float]:
    totals: dict[str, float] = {}
    for item in items:
        metadata = item.get("metadata")
        if not isinstance(metadata, Mapping):
            continue
        counts = metadata.get(counts_key)
        if isinstance(counts, Mapping):
            for name, n in counts.items():
                if isinstance(n, int | float) and not isinstance(n, bool):
                    totals[name] = totals.get(name, 0) + n
        elif isinstance(metadata.get(list_key), list):
            for name in metadata[list_key]:
                if isinstance(name, str):
                    totals[name] = totals.get(name, 0) + 1
    # sorted() is stable, so ties keep first-seen order as the reference's sort does.
    return dict(sorted(totals.items(), key=lambda kv: -kv[1]))


def build_metadata_rollups(items: Sequence[Mapping[str, Any]], workflow: str) -> dict[str, Any]:
    """``models``/``modelCounts`` and ``workflows``/``workflowCounts`` (spec §13)."""
    out: dict[str, Any] = {}
    models = _rollup(items, "modelCallCounts", "models")
    if models:
        out["models"] = list(models)
        out["modelCounts"] = models
    workflows = _rollup(items, "workflowCallCounts", "workflows")
    if workflows:
        out["workflows"] = list(workflows)
        out["workflowCounts"] = workflows
    elif workflow:
        out["workflows"] = [workflow]
        out["workflowCounts"] = {workflow: len(items)}
    return out
