"""Join the results of ``axl-eval run --shard i/n`` jobs into the result of the whole dataset.

Shard ``i`` of ``n`` ran the dataset items whose index ``j`` has ``j % n == i - 1`` (a spread
sample, in dataset order), so dataset order is restored by interleaving. Every shard must carry
the stamp ``metadata.shard = {index, count, datasetItems}`` and agree on the dataset (name and
fingerprint), the shard count and the scorers; each index ``1..n`` must appear exactly once.

Recomputed from the joined items: coverage, per-scorer stats, timing, failures, item error
rate, degraded scorers (with the limit the shards used), accounting (conservative fold: one
unverified or incomplete shard taints the whole). Not recomputable from items, so combined
from the shard summaries: per-model call timing (calls and min/max exact; mean weighted by
calls; p50/p95 are call-weighted averages of the shard percentiles, an approximation) and the
budget (limits, spend and overshoot summed; closed if any shard closed). ``duration`` is the
longest shard's (shards run in parallel); ``timestamp`` the latest.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from axl_action.errors import CompareError
from axl_action.schema import (
    DEFAULT_MAX_ITEM_ERROR_RATE,
    WIRE,
    EvalItem,
    EvalResult,
    Fingerprint,
    ModelTimingStats,
    Stats,
    aggregate_accounting,
    build_summary,
    item_columns,
    read_accounting,
    round3,
)

_HINT = "pass every shard's results file exactly once (the files written by `axl-eval run --shard i/n`)"


def _stamp(result: EvalResult, label: str) -> tuple[int, int, int]:
    raw = result.metadata.get("shard")
    ok = isinstance(raw, Mapping) and all(
        isinstance(raw.get(k), int) and not isinstance(raw.get(k), bool)
        for k in ("index", "count", "datasetItems")
    )
    if not ok or not isinstance(raw, Mapping):
        raise CompareError(
            f"{label} has no shard stamp (metadata.shard)",
            hint="only results written by `axl-eval run --shard i/n` can be merged",
        )
    index, count, total = int(raw["index"]), int(raw["count"]), int(raw["datasetItems"])
    if count < 1 or not 1 <= index <= count or total < 0:
        raise CompareError(f"{label} has an invalid shard stamp {index}/{count}", hint=_HINT)
    return index, count, total


_Stamped = tuple[str, EvalResult, int, int, int]
"""A shard's (label, result, index, count, total items) as its stamp says."""


def _validate(shards: Sequence[tuple[str, EvalResult]]) -> tuple[int, int, list[tuple[str, EvalResult]]]:
    """Check the stamps; return (count, total items, shards ordered by index)."""
    stamped: list[_Stamped] = [(label, r, *_stamp(r, label)) for label, r in shards]
    _, _, _, count, total = stamped[0]
    for shard in stamped[1:]:
        _check_same_eval(shard, stamped[0])
    _check_indices(stamped, count)
    ordered = sorted(stamped, key=lambda s: s[2])
    for label, r, index, _, _ in ordered:
        expected = len(range(index - 1, total, count))
        if len(r.items) != expected:
            raise CompareError(
                f"{label} (shard {index}/{count}) holds {len(r.items)} items, expected {expected} "
                f"of a {total}-item dataset",
                hint="the file was edited or its run did not finish writing",
            )
    return count, total, [(label, r) for label, r, *_ in ordered]


def _check_same_eval(shard: _Stamped, first_shard: _Stamped) -> None:
    """A shard belongs with the first one: the same split, dataset (and its version) and scorers."""
    label, r, _, c, t = shard
    first_label, first, _, count, total = first_shard
    first_fp = Fingerprint.of(first.metadata)
    if c != count:
        raise CompareError(f"{label} is a shard of {c} but {first_label} is a shard of {count}", hint=_HINT)
    if t != total:
        raise CompareError(
            f"{label} was cut from a dataset of {t} items but {first_label} from one of {total}",
            hint="every shard must run the same dataset",
        )
    if r.dataset != first.dataset:
        raise CompareError(
            f'{label} ran dataset "{r.dataset}" but {first_label} ran "{first.dataset}"',
            hint="merge shards of one eval at a time",
        )
    fp = Fingerprint.of(r.metadata)
    if (fp and fp.dataset) != (first_fp and first_fp.dataset):
        raise CompareError(
            f'{label} and {first_label} ran different versions of dataset "{first.dataset}" '
            "(dataset fingerprints differ)",
            hint="re-run every shard from the same commit",
        )
    if list(r.summary.scorers) != list(first.summary.scorers):
        raise CompareError(
            f"{label} ran scorers {', '.join(r.summary.scorers)} but {first_label} ran "
            f"{', '.join(first.summary.scorers)}",
            hint="every shard must run the same scorers",
        )


def _check_indices(stamped: Sequence[_Stamped], count: int) -> None:
    """Every index from 1 to ``count`` given exactly once."""
    by_index: dict[int, list[str]] = {}
    for label, _, index, _, _ in stamped:
        by_index.setdefault(index, []).append(label)
    duplicated = {i: labels for i, labels in by_index.items() if len(labels) > 1}
    if duplicated:
        i, labels = min(duplicated.items())
        raise CompareError(f"shard {i}/{count} is given more than once ({', '.join(labels)})", hint=_HINT)
    missing = [i for i in range(1, count + 1) if i not in by_index]
    if missing:
        listed = ", ".join(f"{i}/{count}" for i in missing)
        raise CompareError(f"missing shard(s) {listed}", hint=_HINT)


def _rollup(shards: Sequence[EvalResult], counts_key: str) -> dict[str, float]:
    totals: dict[str, float] = {}
    for r in shards:
        counts = r.metadata.get(counts_key)
        if isinstance(counts, Mapping):
            for name, n in counts.items():
                if isinstance(n, int | float) and not isinstance(n, bool):
                    totals[name] = totals.get(name, 0) + n
    return dict(sorted(totals.items(), key=lambda kv: -kv[1]))


def _weighted(stats: Sequence[tuple[Stats, int]]) -> dict[str, float]:
    calls = sum(n for _, n in stats) or 1

    def avg(field: str) -> float:
        total: float = sum(getattr(s, field) * n for s, n in stats)
        return round3(total / calls)

    return {
        "mean": avg("mean"),
        "min": min(s.min for s, _ in stats),
        "max": max(s.max for s, _ in stats),
        "p50": avg("p50"),
        "p95": avg("p95"),
    }


def _model_timing(shards: Sequence[EvalResult]) -> dict[str, Any] | None:
    per_model: dict[str, list[ModelTimingStats]] = {}
    for r in shards:
        for model, t in (r.summary.model_timing or {}).items():
            per_model.setdefault(model, []).append(t)
    out: dict[str, Any] = {}
    for model, entries in per_model.items():
        entry: dict[str, Any] = {"calls": sum(e.calls for e in entries)}
        for key, wire in (("wire_ms", "wireMs"), ("queued_ms", "queuedMs"), ("retry_ms", "retryMs")):
            parts = [(getattr(e, key), e.calls) for e in entries if isinstance(getattr(e, key), Stats)]
            if parts:
                entry[wire] = _weighted(parts)
        entry["rateLimitRetries"] = sum(e.rate_limit_retries or 0 for e in entries)
        first = [
            (e.first_token_ms, e.first_token_calls or 0) for e in entries if e.first_token_ms is not None
        ]
        if first:
            entry["firstTokenMs"] = _weighted(first)
            entry["firstTokenCalls"] = sum(n for _, n in first)
        out[model] = entry
    return out or None


def _accounting(shards: Sequence[EvalResult]) -> dict[str, Any] | None:
    if all(r.accounting is None for r in shards):
        return None
    records = [read_accounting(r) for r in shards]
    merged: dict[str, Any] = aggregate_accounting(records).to_wire()
    merged["scope"] = records[0].scope or "run"
    budgets = [a.budget for a in records if a.budget is not None]
    if budgets:
        closed = [b for b in budgets if b.status == "closed"]
        budget: dict[str, Any] = {
            "limit": sum(b.limit for b in budgets),
            "status": "closed" if closed else "open",
            "knownSpend": sum(b.known_spend for b in budgets),
            "knownOvershoot": sum(b.known_overshoot for b in budgets),
        }
        closed_by = next((b.closed_by for b in closed if b.closed_by), None)
        if closed_by:
            budget["closedBy"] = closed_by
        merged["budget"] = budget
    callers = [a.caller_reported for a in records if a.caller_reported is not None]
    if callers:
        merged["callerReported"] = {
            "costItems": sum(c.cost_items for c in callers),
            "costTotal": sum(c.cost_total for c in callers),
            "metadataItems": sum(c.metadata_items for c in callers),
        }
    return merged


def _summary(shards: Sequence[EvalResult], items: list[dict[str, Any]]) -> dict[str, Any]:
    """The merged summary: the run view's rules over the joined items, with the shards' limits."""
    names = list(shards[0].summary.scorers)
    types = {name: shards[0].scorer_types.get(name, "llm") for name in names}
    degraded = [d for r in shards for d in r.summary.degraded or []]
    # The scorer gate's limit is only on record where a shard tripped it: an LLM entry carries
    # it; with only deterministic entries no LLM scorer can exceed anything (1 stands for that).
    llm_limits = [d.limit for d in degraded if d.type == "llm"]
    scorer_limit = llm_limits[0] if llm_limits else (1.0 if degraded else None)
    item_limits = [r.summary.item_error_rate.limit for r in shards if r.summary.item_error_rate is not None]
    summary = build_summary(
        item_columns(items, names),
        types,
        model_timing=_model_timing(shards),
        item_error_limit=item_limits[0] if item_limits else DEFAULT_MAX_ITEM_ERROR_RATE,
        scorer_error_limit=scorer_limit,
    )
    if not all(r.summary.coverage is not None for r in shards):
        summary.pop("coverage")
        summary.pop("itemErrorRate", None)
    if not all(all(s.scored is not None for s in r.summary.scorers.values()) for r in shards):
        for entry in summary["scorers"].values():
            for key in ("scored", "failed", "skipped"):
                entry.pop(key)
    return summary


def merge_results(
    shards: Sequence[EvalResult | tuple[str, EvalResult]], *, result_id: str | None = None
) -> EvalResult:
    """Merge one run's shards, given in any order.

    Each shard is a result or a ``(label, result)`` pair; the label (a file name, say) is how
    error messages name it, defaulting to ``result <id>``.
    """
    if not shards:
        raise CompareError("no shard results to merge", hint=_HINT)
    labelled = [s if isinstance(s, tuple) else (f"result {s.id}", s) for s in shards]
    count, total, ordered = _validate(labelled)
    results = [r for _, r in ordered]
    slots: list[EvalItem | None] = [None] * total
    for k, r in enumerate(results):
        for pos, item in enumerate(r.items):
            slots[k + pos * count] = item
    merged_items = [item for item in slots if item is not None]
    first = results[0]
    metadata = {k: v for k, v in first.metadata.items() if k != "shard"}
    for counts_key, list_key in (("modelCounts", "models"), ("workflowCounts", "workflows")):
        rolled = _rollup(results, counts_key)
        if rolled:
            metadata[list_key] = list(rolled)
            metadata[counts_key] = rolled
    metadata["merged"] = {"shards": count, "datasetItems": total, "ids": [r.id for r in results]}
    accounting = _accounting(results)
    total_cost = (
        accounting["knownCost"]
        if accounting is not None
        else sum(r.total_cost for r in results if math.isfinite(r.total_cost))
    )
    wire: dict[str, Any] = {
        "id": result_id or str(uuid.uuid4()),
        "dataset": first.dataset,
        "metadata": metadata,
        "timestamp": max(r.timestamp for r in results),
        "totalCost": total_cost,
    }
    if accounting is not None:
        if accounting["completeness"] != "complete":
            wire["unpriced"] = True
        wire["accounting"] = accounting
    wire["duration"] = max(r.duration for r in results)
    wire["items"] = [item.to_wire() for item in merged_items]
    wire["summary"] = _summary(results, wire["items"])
    return EvalResult.model_validate(wire, context=WIRE)


def merge_files(files: Sequence[tuple[str, Sequence[EvalResult]]]) -> list[EvalResult]:
    """Merge shard files that each hold R runs (``--runs R --shard i/n``): run r across shards."""
    if not files:
        raise CompareError("no shard results to merge", hint=_HINT)
    runs = len(files[0][1])
    for label, results in files:
        if len(results) != runs:
            raise CompareError(
                f"{label} holds {len(results)} run(s) but {files[0][0]} holds {runs}",
                hint="every shard must be run with the same --runs",
            )
    return [
        merge_results(
            [(label if runs == 1 else f"{label} run {r + 1}", results[r]) for label, results in files]
        )
        for r in range(runs)
    ]
