"""Run-level roll-ups the summary's counting rules do not cover: model timing and metadata.

Coverage, scorer stats, gates and item timing are the run view's rules
(:func:`axl_action.schema.build_summary`); these two fold per-call samples and per-item
metadata (spec §12.3, §13), shared by the runner, rescore and merge.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from axl_action.schema.numbers import compute_stats


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


def _rollup(items: Sequence[Mapping[str, Any]], counts_key: str, list_key: str) -> dict[str, float]:
    totals: dict[str, float] = {}
    for item in items:
        metadata = item.get("metadata")
        # Most items of a run without model calls have none: no ABC check for them.
        if metadata is None or (type(metadata) is not dict and not isinstance(metadata, Mapping)):
            continue
        counts = metadata.get(counts_key)
        if counts is not None and isinstance(counts, Mapping):
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
