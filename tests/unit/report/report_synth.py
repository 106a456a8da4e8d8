"""Deterministic synthetic 0.24 result pairs for report tests and the scale benchmark.

A baseline and a candidate over the same dataset: most outputs identical, some edited (so
word diffs have something to show), some candidate scores dropped or raised, a few failed and
budget-stopped items, LLM judges with reasoning, per-item accounting. Summaries are computed
with the schema helpers so the files are self-consistent.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

import orjson

from axl_action.schema import (
    EvalResult,
    compute_coverage,
    compute_stats,
    parse_result_data,
    round3,
)
from axl_action.schema.io import parse_run_views

WORDS = [
    "the",
    "model",
    "answer",
    "returns",
    "a",
    "value",
    "because",
    "each",
    "step",
    "follows",
    "from",
    "prior",
    "facts",
    "so",
    "we",
    "compute",
    "total",
    "cost",
    "latency",
    "tokens",
    "result",
    "invoice",
    "customer",
    "order",
    "shipping",
    "refund",
    "policy",
    "account",
    "balance",
    "date",
    "amount",
    "currency",
    "region",
    "product",
    "support",
    "ticket",
    "priority",
    "status",
    "pending",
    "closed",
    "open",
    "escalated",
    "summary",
    "reason",
    "evidence",
    "context",
    "question",
    "clearly",
    "therefore",
]


def _text(rng: random.Random, chars: int) -> str:
    words: list[str] = []
    size = 0
    while size < chars:
        w = rng.choice(WORDS)
        words.append(w)
        size += len(w) + 1
    return " ".join(words)


def _edit(rng: random.Random, text: str, fraction: float) -> str:
    words = text.split(" ")
    for k in range(len(words)):
        if rng.random() < fraction:
            words[k] = rng.choice(WORDS)
    return " ".join(words)


def _accounting(gen: float, judge: float, unknown: int = 0) -> dict[str, Any]:
    return {
        "version": 1,
        "currency": "USD",
        "knownCost": round(gen + judge, 6),
        "completeness": "incomplete" if unknown else "complete",
        "reasons": {"usage_missing": unknown} if unknown else {},
        "usage": {
            "inputTokens": 120,
            "outputTokens": 80,
            "reasoningTokens": 0,
            "cachedTokens": 0,
            "cacheWriteTokens": 0,
            "audioSeconds": 0,
        },
        "operations": {
            "total": 2 + unknown,
            "settled": 2,
            "unknown": unknown,
            "denied": 0,
            "byKind": {"chat": 2 + unknown},
        },
        "breakdown": {"generation": gen, "judging": judge, "external": 0},
        "provenance": {"price_table_estimate": round(gen + judge, 6)} if gen + judge else {},
    }


def build_result(**options: Any) -> EvalResult:
    """A self-consistent result around the given item dicts: :func:`build_result_data`'s
    options, parsed."""
    return parse_result_data(build_result_data(**options)).results[0]


def build_result_data(
    *,
    run_id: str,
    items: list[dict[str, Any]],
    scorers: Sequence[str],
    scorer_types: dict[str, str],
    dataset: str = "synthetic-qa",
    timestamp: str = "2026-11-30T12:00:00.000Z",
) -> dict[str, Any]:
    """:func:`build_result` in wire shape; ``summary.coverage`` from the run view of the bytes
    (no model per item, so 100,000-item files are quick to write)."""
    gen = sum(it["accounting"]["breakdown"]["generation"] for it in items)
    judge = sum(it["accounting"]["breakdown"]["judging"] for it in items)
    unknown = sum(it["accounting"]["operations"]["unknown"] for it in items)
    acc = _accounting(gen, judge, unknown)
    acc["operations"]["settled"] = 2 * len(items)
    acc["operations"]["total"] = 2 * len(items) + unknown
    acc["operations"]["byKind"] = {"chat": 2 * len(items) + unknown}
    acc["scope"] = "run"
    scorer_stats: dict[str, Any] = {}
    for name in scorers:
        values = [it["scores"][name] for it in items if it["scores"].get(name) is not None]
        stats = compute_stats(values)
        failed = sum(
            1 for it in items if (it.get("scoreDetails") or {}).get(name, {}).get("outcome") == "failed"
        )
        skipped = sum(
            1 for it in items if (it.get("scoreDetails") or {}).get(name, {}).get("outcome") == "skipped"
        )
        scorer_stats[name] = {**stats, "scored": len(values), "failed": failed, "skipped": skipped}
    durations = [it["duration"] for it in items if not it.get("error") and "duration" in it]
    data: dict[str, Any] = {
        "id": run_id,
        "dataset": dataset,
        "metadata": {"scorerTypes": dict(scorer_types), "models": ["openai:gpt-4o-mini"]},
        "timestamp": timestamp,
        "totalCost": acc["knownCost"],
        **({"unpriced": True} if unknown else {}),
        "accounting": acc,
        "duration": int(sum(durations) / 2) if durations else 0,
        "items": items,
        "summary": {
            "count": len(items),
            "failures": sum(1 for it in items if it.get("error")),
            "scorers": scorer_stats,
            **({"timing": compute_stats(durations)} if durations else {}),
            "modelTiming": {
                "openai:gpt-4o-mini": {
                    "calls": len(durations),
                    "wireMs": compute_stats(durations),
                    "queuedMs": compute_stats([5.0] * max(1, len(durations))),
                    "retryMs": compute_stats([0.0] * max(1, len(durations))),
                    "rateLimitRetries": 3,
                }
            },
        },
    }
    view = parse_run_views(orjson.dumps(data)).runs[0]
    data["summary"]["coverage"] = compute_coverage(view.items, list(scorers)).to_wire()
    return data


def synthetic_pair(n: int, **options: Any) -> tuple[EvalResult, EvalResult]:
    """(baseline, candidate) with ``n`` items, as models; ``options`` are
    :func:`synthetic_pair_data`'s (``texts`` overrides fields, for the XSS tests)."""
    b_data, c_data = synthetic_pair_data(n, **options)
    return parse_result_data(b_data).results[0], parse_result_data(c_data).results[0]


def synthetic_pair_data(
    n: int,
    *,
    scorers: Sequence[str] = ("exact", "judge", "tone", "length"),
    output_chars: int = 300,
    regress_fraction: float = 0.15,
    improve_fraction: float = 0.05,
    change_fraction: float = 0.3,
    failed_every: int = 97,
    budget_every: int = 0,
    seed: int = 7,
    texts: dict[str, str] | None = None,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """:func:`synthetic_pair` in wire shape (``json.dumps`` them to write results files)."""
    rng = random.Random(seed)
    types = {name: ("llm" if name in ("judge", "tone") else "deterministic") for name in scorers}
    b_items: list[dict[str, Any]] = []
    c_items: list[dict[str, Any]] = []
    over = texts or {}
    for i in range(n):
        question = over.get("input") or f"Q{i}: " + _text(rng, 60)
        inp = {"id": f"q{i}", "question": question}
        annotations = {"expected": _text(rng, 20)}
        b_out = over.get("baseline_output") or _text(rng, output_chars)
        roll = rng.random()
        changed = roll < change_fraction
        c_out = over.get("candidate_output") or (_edit(rng, b_out, 0.08) if changed else b_out)
        regress = roll < regress_fraction
        improve = regress_fraction <= roll < regress_fraction + improve_fraction
        b_scores: dict[str, float | None] = {}
        c_scores: dict[str, float | None] = {}
        for name in scorers:
            base = round3(
                rng.choice([1.0, 1.0, 0.8, 0.6]) if types[name] == "llm" else rng.choice([1.0, 1.0, 0.0])
            )
            b_scores[name] = base
            if regress and name in (scorers[0], scorers[1 % len(scorers)]):
                c_scores[name] = round3(max(0.0, base - rng.choice([0.4, 0.6, 1.0])))
            elif improve and name == scorers[0]:
                c_scores[name] = 1.0
            else:
                c_scores[name] = base
        reason = over.get("reasoning")
        for items, scores, out in ((b_items, b_scores, b_out), (c_items, c_scores, c_out)):
            is_cand = items is c_items
            failed = is_cand and failed_every and i % failed_every == failed_every - 1
            budget = is_cand and budget_every and i % budget_every == budget_every - 1
            item: dict[str, Any] = {"input": inp, "annotations": annotations}
            if failed:
                item.update(
                    output=None,
                    scores={},
                    duration=900,
                    outcome="failed",
                    failure={"name": "ProviderError", "provider": "openai", "status": 429, "retryable": True},
                    error="Rate limit reached for gpt-4o-mini",
                    accounting=_accounting(0.0, 0.0, 1),
                    cost=0,
                    scorerCost=0,
                    unpriced=True,
                )
            elif budget:
                item.update(
                    output=None,
                    error="Budget exceeded",
                    outcome="budget_skipped",
                    accounting={
                        **_accounting(0.0, 0.0),
                        "operations": {"total": 0, "settled": 0, "unknown": 0, "denied": 0, "byKind": {}},
                        "usage": _accounting(0, 0)["usage"],
                    },
                    cost=0,
                    scorerCost=0,
                    scores={},
                )
            else:
                details: dict[str, Any] = {}
                for name in scorers:
                    d: dict[str, Any] = {"score": scores[name], "duration": 1, "outcome": "scored"}
                    if types[name] == "llm":
                        why = reason or (
                            f"{'Candidate' if is_cand else 'Baseline'} answer is "
                            f"{'complete' if (scores[name] or 0) >= 0.8 else 'missing key facts'}: {_text(rng, 80)}"
                        )
                        d["metadata"] = {"reasoning": why}
                        d["cost"] = 0.0004
                    details[name] = d
                gen = round(0.0012 * (1.1 if is_cand else 1.0), 6)
                item.update(
                    output=out,
                    scores=scores,
                    duration=float(400 + rng.randint(0, 600) + (40 if is_cand else 0)),
                    timing={"openai:gpt-4o-mini": {"calls": 1, "queuedMs": 5, "retryMs": 0, "wireMs": 380}},
                    outcome="completed",
                    scoreDetails=details,
                    accounting=_accounting(gen, 0.0008),
                    cost=gen,
                    scorerCost=0.0008,
                )
            items.append(item)
    baseline = build_result_data(
        run_id="b0000000-0000-4000-8000-000000000001",
        items=b_items,
        scorers=scorers,
        scorer_types=types,
        timestamp="2026-11-28T09:00:00.000Z",
    )
    candidate = build_result_data(
        run_id="c0000000-0000-4000-8000-000000000002", items=c_items, scorers=scorers, scorer_types=types
    )
    return baseline, candidate
