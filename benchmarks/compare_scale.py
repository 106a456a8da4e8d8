"""How long does ``axl-eval compare`` take on big runs, and how much memory does it need?

Generates a baseline and a candidate result of N items x 4 scorers (0.24 format: accounting,
coverage, outcomes; ~2% failed items, some failed and N/A scorer verdicts), writes them as
JSON, then in a fresh process per size measures:

* load: reading both files the way ``axl-eval compare`` does (``load_for_compare``: JSON parse,
  result-level validation, per-item columns),
* compare: ``compare_results`` (1,000 bootstrap resamples, seeded) + ``evaluate_gates``,
* peak RSS of that process.

Run:  python benchmarks/compare_scale.py [--items 20000 100000] [--seed 1]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

SCORERS = ("accuracy", "relevance", "tone", "format")
TYPES = {"accuracy": "deterministic", "relevance": "llm", "tone": "llm", "format": "deterministic"}


def _result(n: int, shift: float, seed: int, run_id: str) -> dict[str, Any]:
    rng = random.Random(seed)
    items: list[dict[str, Any]] = []
    counts = {name: {"scored": 0, "failed": 0, "skipped": 0} for name in SCORERS}
    values: dict[str, list[float]] = {name: [] for name in SCORERS}
    failed_items = 0
    for i in range(n):
        inp = {"id": f"case-{i}", "question": f"q{i}"}
        if rng.random() < 0.02:
            failed_items += 1
            items.append(
                {"input": inp, "output": None, "scores": {}, "outcome": "failed", "error": "HTTP 429"}
            )
            continue
        scores: dict[str, float | None] = {}
        details: dict[str, Any] = {}
        for name in SCORERS:
            r = rng.random()
            if r < 0.01:
                scores[name] = None
                details[name] = {"score": None, "duration": 3, "outcome": "failed"}
                counts[name]["failed"] += 1
            elif r < 0.03 and name == "format":
                scores[name] = None
                details[name] = {"score": None, "skipped": True, "outcome": "skipped"}
                counts[name]["skipped"] += 1
            else:
                v = min(1.0, max(0.0, rng.gauss(0.7 + shift, 0.15)))
                v = round(v, 3)
                scores[name] = v
                details[name] = {"score": v, "duration": 3, "outcome": "scored"}
                counts[name]["scored"] += 1
                values[name].append(v)
        items.append(
            {
                "input": inp,
                "output": f"answer {i}",
                "scores": scores,
                "duration": 100 + rng.random() * 50,
                "outcome": "completed",
                "scoreDetails": details,
                "cost": 0.0001,
            }
        )
    scorer_stats = {}
    for name in SCORERS:
        vs = sorted(values[name])
        mean = round(sum(values[name]) / len(vs), 3) if vs else 0
        scorer_stats[name] = {
            "mean": mean,
            "min": vs[0],
            "max": vs[-1],
            "p50": vs[len(vs) // 2],
            "p95": vs[int(len(vs) * 0.95)],
            **counts[name],
        }
    cost = round(0.0001 * (n - failed_items), 6)
    return {
        "id": run_id,
        "dataset": "bench",
        "metadata": {"scorerTypes": TYPES},
        "timestamp": "2026-12-02T00:00:00.000Z",
        "totalCost": cost,
        "accounting": {
            "version": 1,
            "currency": "USD",
            "knownCost": cost,
            "completeness": "complete",
            "reasons": {},
            "usage": {},
            "operations": {},
            "breakdown": {},
            "provenance": {},
            "scope": "run",
        },
        "duration": 1000,
        "items": items,
        "summary": {
            "count": n,
            "failures": failed_items,
            "coverage": {
                "items": {
                    "completed": n - failed_items,
                    "failed": failed_items,
                    "cancelled": 0,
                    "budget_skipped": 0,
                    "budget_interrupted": 0,
                },
                "scorers": {},
            },
            "scorers": scorer_stats,
            "timing": {"mean": 125, "min": 100, "max": 150, "p50": 125, "p95": 148},
        },
    }


def _measure(base: Path, cand: Path, seed: int) -> dict[str, float]:
    from axl_action.compare.engine import CompareOptions, compare_results
    from axl_action.compare.gates import GateOptions, evaluate_gates
    from axl_action.compare.lean import load_for_compare

    t0, p0 = time.perf_counter(), time.process_time()
    b = load_for_compare(base).results
    c = load_for_compare(cand).results
    t1, p1 = time.perf_counter(), time.process_time()
    comparison = compare_results(b, c, CompareOptions(seed=seed))
    t2, p2 = time.perf_counter(), time.process_time()
    evaluate_gates(comparison, b, c, GateOptions(max_item_error_rate=0.05))
    t3 = time.perf_counter()
    return {
        "load_s": t1 - t0,
        "load_cpu": p1 - p0,
        "compare_s": t2 - t1,
        "compare_cpu": p2 - p1,
        "gates_s": t3 - t2,
        "changes": len(comparison.regressions) + len(comparison.improvements),
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "n_paired": comparison.scorers["accuracy"].n,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, nargs="+", default=[20_000, 100_000])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--measure", nargs=2, metavar=("BASE", "CAND"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        print(json.dumps(_measure(Path(args.measure[0]), Path(args.measure[1]), args.seed)))
        return 0
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for n in args.items:
            base, cand = Path(tmp) / f"b{n}.json", Path(tmp) / f"c{n}.json"
            base.write_text(json.dumps(_result(n, 0.0, 1, "base-run")))
            cand.write_text(json.dumps(_result(n, -0.01, 2, "cand-run")))
            size_mb = (base.stat().st_size + cand.stat().st_size) / 2**20
            proc = subprocess.run(
                [sys.executable, __file__, "--seed", str(args.seed), "--measure", str(base), str(cand)],
                capture_output=True,
                text=True,
                check=True,
            )
            figures = json.loads(proc.stdout)
            rows.append((n, size_mb, figures))
    print(f"load average before: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    print(
        "| items x 4 scorers | JSON (both files) | load wall / CPU | compare wall / CPU "
        "(1,000 resamples) | gates | item changes | peak RSS |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for n, size_mb, f in rows:
        print(
            f"| {n:,} | {size_mb:.0f} MB | {f['load_s']:.2f} s / {f['load_cpu']:.2f} s | "
            f"{f['compare_s']:.2f} s / {f['compare_cpu']:.2f} s | {f['gates_s']:.2f} s | "
            f"{f['changes']:,.0f} | {f['peak_rss_mb']:.0f} MB |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
