"""Seeded synthetic baseline runs whose noise is known, for history tests and benchmarks.

A suite has ``n`` items; item ``i`` has a true quality ``p[i]`` per scorer. One run draws
each item's score around that quality:

* ``binary`` scorers (an LLM judge answering pass/fail): ``Bernoulli(clip(p + u))``;
* ``levels`` scorers (a 0/0.25/…/1 judge): the nearest level to ``p + u + noise``;
* ``deterministic`` scorers: ``round(p)``, the same every run (no noise at all).

``u`` is the run's shared shift ("day effect": a judge stricter on some days, API drift), drawn
``N(0, day_sigma²)`` per run and scorer; the item-level paired bootstrap cannot see it, which
is what a history measures. Files carry ``metadata.fingerprint`` so their rows are
comparable; summaries come from the schema's own helpers.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from axl_action.schema import compute_stats

LEVELS = (0.0, 0.25, 0.5, 0.75, 1.0)


@dataclass
class Suite:
    """A synthetic suite: item qualities per scorer and how each scorer is noisy."""

    n: int
    kinds: dict[str, str] = field(
        default_factory=lambda: {"judge": "binary", "tone": "levels", "exact": "deterministic"}
    )
    seed: int = 1
    day_sigma: float = 0.0
    dataset: str = "synthetic-history"
    quality: dict[str, list[float]] = field(default_factory=dict)
    flaky: frozenset[int] = frozenset()
    """Items whose score is a coin flip on every run (for the flaky-item tests)."""

    def __post_init__(self) -> None:
        rng = random.Random(self.seed)
        for name in self.kinds:
            self.quality[name] = [min(1.0, max(0.0, rng.betavariate(4, 1.5))) for _ in range(self.n)]

    @property
    def types(self) -> dict[str, str]:
        return {n: ("deterministic" if k == "deterministic" else "llm") for n, k in self.kinds.items()}

    def fingerprint(self) -> dict[str, Any]:
        return {
            "dataset": f"sha256:{self.dataset}-{self.n}",
            "datasetItems": self.n,
            "scorers": "sha256:" + ",".join(f"{k}:{v}" for k, v in self.types.items()),
            "scorerSet": self.types,
        }


def _score(kind: str, p: float, shift: float, rng: random.Random) -> float:
    if kind == "deterministic":
        return 1.0 if p >= 0.5 else 0.0
    q = min(1.0, max(0.0, p + shift))
    if kind == "binary":
        return 1.0 if rng.random() < q else 0.0
    if kind == "continuous":
        return round(min(1.0, max(0.0, q + rng.gauss(0, 0.08))), 3)
    noisy = q + rng.gauss(0, 0.12)
    return min(LEVELS, key=lambda level: abs(level - noisy))


def run_wire(
    suite: Suite,
    seed: int,
    *,
    run_id: str,
    timestamp: str = "2026-11-01T00:00:00.000Z",
    shift: Mapping[str, float] | None = None,
    cost: float = 0.01,
    latency: float = 800.0,
    failed_items: Sequence[int] = (),
) -> dict[str, Any]:
    """One run as a results-file object (wire shape). ``shift``: a real change per scorer."""
    rng = random.Random(seed)
    day = {name: rng.gauss(0, suite.day_sigma) if suite.day_sigma else 0.0 for name in suite.kinds}
    items: list[dict[str, Any]] = []
    for i in range(suite.n):
        inp = {"id": f"item-{i:05d}", "question": f"question {i}"}
        if i in failed_items:
            items.append(
                {
                    "input": inp,
                    "output": None,
                    "scores": {},
                    "error": "boom",
                    "outcome": "failed",
                    "duration": 5,
                }
            )
            continue
        scores: dict[str, float] = {}
        for name, kind in suite.kinds.items():
            if i in suite.flaky and kind != "deterministic":
                scores[name] = 1.0 if rng.random() < 0.5 else 0.0
                continue
            extra = (shift or {}).get(name, 0.0)
            scores[name] = _score(kind, suite.quality[name][i], day[name] + extra, rng)
        items.append(
            {
                "input": inp,
                "output": f"answer {i}",
                "scores": scores,
                "scoreDetails": {n: {"score": s, "outcome": "scored"} for n, s in scores.items()},
                "duration": latency * (0.5 + rng.random()),
                "outcome": "completed",
            }
        )
    stats: dict[str, Any] = {}
    for name in suite.kinds:
        values = [it["scores"][name] for it in items if "error" not in it]
        stats[name] = {**compute_stats(values), "scored": len(values), "failed": 0, "skipped": 0}
    durations = [it["duration"] for it in items if "error" not in it]
    failed = len(failed_items)
    coverage_items = dict.fromkeys(
        ("completed", "failed", "cancelled", "budget_skipped", "budget_interrupted"), 0
    )
    coverage_items["completed"] = suite.n - failed
    coverage_items["failed"] = failed
    summary: dict[str, Any] = {
        "count": suite.n,
        "failures": failed,
        "coverage": {
            "items": coverage_items,
            "scorers": {
                n: {
                    "scored": stats[n]["scored"],
                    "failed": 0,
                    "skipped": 0,
                    "cancelled": 0,
                    "budget_skipped": 0,
                    "budget_interrupted": 0,
                }
                for n in suite.kinds
            },
        },
        "scorers": stats,
        "timing": compute_stats(durations),
    }
    return {
        "id": run_id,
        "dataset": suite.dataset,
        "metadata": {"scorerTypes": suite.types, "fingerprint": suite.fingerprint()},
        "timestamp": timestamp,
        "totalCost": cost,
        "accounting": {
            "version": 1,
            "currency": "USD",
            "knownCost": cost,
            "completeness": "complete",
            "reasons": {},
            "usage": {},
            "operations": {},
            "breakdown": {"generation": cost, "judging": 0, "external": 0},
            "provenance": {},
            "scope": "run",
        },
        "duration": 1000,
        "items": items,
        "summary": summary,
    }


def timestamp(k: int) -> str:
    """A timestamp ``k`` hours after 2026-11-01 00:00 UTC."""
    day, hour = divmod(k, 24)
    return f"2026-11-{1 + day:02d}T{hour:02d}:00:00.000Z"
