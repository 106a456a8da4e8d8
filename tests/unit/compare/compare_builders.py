"""Build small 0.24-shaped (or legacy) results for compare tests.

A run is described by rows, one per item: either a dict ``{scorer: value}`` where value is a
score, ``None`` (scorer failed), ``"skip"`` (N/A) — or an item outcome string (``"failed"``,
``"cancelled"``, ``"budget_skipped"``, ``"budget_interrupted"``) for an item that did not
complete.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

from axl_action.schema import EvalResult, compute_stats, parse_result_data

Row = Mapping[str, float | str | None] | str


def make_run(
    rows: Sequence[Row],
    *,
    run_id: str = "run",
    dataset: str = "ds",
    types: Mapping[str, str] | None = None,
    legacy: bool = False,
    cost: float = 0.0,
    completeness: str = "complete",
    reasons: Mapping[str, int] | None = None,
    scope: str = "run",
    timing: float | None = None,
    inputs: Sequence[Any] | None = None,
    metadata: Mapping[str, Any] | None = None,
    budget: Mapping[str, Any] | None = None,
    fingerprint: Mapping[str, Any] | None = None,
    names: Sequence[str] | None = None,
) -> EvalResult:
    """One result; scorer names come from ``names`` or the first dict row."""
    if names is None:
        first = next((r for r in rows if isinstance(r, Mapping)), {})
        names = list(first)
    items: list[dict[str, Any]] = []
    for i, row in enumerate(rows):
        inp = inputs[i] if inputs is not None else {"id": i}
        if isinstance(row, str):
            item: dict[str, Any] = {"input": inp, "output": None, "scores": {}, "error": f"{row} error"}
            if not legacy:
                item["outcome"] = row
            items.append(item)
            continue
        scores: dict[str, Any] = {}
        details: dict[str, Any] = {}
        for name in names:
            value = row.get(name)
            if value == "skip":
                scores[name] = None
                details[name] = {"score": None, "skipped": True}
                if not legacy:
                    details[name]["outcome"] = "skipped"
            elif value is None:
                scores[name] = None
                details[name] = {"score": None, "duration": 1}
                if not legacy:
                    details[name]["outcome"] = "failed"
            else:
                scores[name] = value
                details[name] = {"score": value, "duration": 1}
                if not legacy:
                    details[name]["outcome"] = "scored"
        item = {"input": inp, "output": "x", "scores": scores, "duration": 10}
        if not legacy:
            item["outcome"] = "completed"
        item["scoreDetails"] = details
        items.append(item)

    stats: dict[str, Any] = {}
    for name in names:
        vals = [
            it["scores"][name] for it in items if not it.get("error") and it["scores"].get(name) is not None
        ]
        entry: dict[str, Any] = dict(compute_stats(vals))
        if not legacy:
            outcomes = [it["scoreDetails"][name]["outcome"] for it in items if not it.get("error")]
            entry.update(
                scored=outcomes.count("scored"),
                failed=outcomes.count("failed"),
                skipped=outcomes.count("skipped"),
            )
        stats[name] = entry
    summary: dict[str, Any] = {"count": len(items), "failures": sum(1 for it in items if it.get("error"))}
    if not legacy:
        buckets = dict.fromkeys(
            ("completed", "failed", "cancelled", "budget_skipped", "budget_interrupted"), 0
        )
        for it in items:
            buckets[it["outcome"]] += 1
        summary["coverage"] = {"items": buckets, "scorers": {}}
    summary["scorers"] = stats
    if timing is not None:
        summary["timing"] = {"mean": timing, "min": timing, "max": timing, "p50": timing, "p95": timing}
    meta: dict[str, Any] = {}
    if types is not None:
        meta["scorerTypes"] = dict(types)
    if fingerprint is not None:
        meta["fingerprint"] = dict(fingerprint)
    meta.update(metadata or {})
    wire: dict[str, Any] = {
        "id": run_id,
        "dataset": dataset,
        "metadata": meta,
        "timestamp": "2026-01-01T00:00:00.000Z",
        "totalCost": cost,
    }
    if not legacy:
        acc: dict[str, Any] = {
            "version": 1,
            "currency": "USD",
            "knownCost": cost,
            "completeness": completeness,
            "reasons": dict(reasons or {}),
            "usage": {},
            "operations": {},
            "breakdown": {},
            "provenance": {},
            "scope": scope,
        }
        if budget is not None:
            acc["budget"] = dict(budget)
        wire["accounting"] = acc
    wire["duration"] = 100
    wire["items"] = items
    wire["summary"] = summary
    return parse_result_data(copy.deepcopy(wire)).results[0]


def fingerprint(
    dataset: str = "sha256:d", items: int = 3, scorers: Mapping[str, str] | None = None, **extra: Any
) -> dict[str, Any]:
    """A ``metadata.fingerprint`` object."""
    scorer_set = dict(scorers or {"a": "deterministic"})
    out: dict[str, Any] = {
        "dataset": dataset,
        "datasetItems": items,
        "scorers": "sha256:" + ",".join(f"{k}:{v}" for k, v in scorer_set.items()),
        "scorerSet": scorer_set,
    }
    out.update(extra)
    return out
