"""History benchmark: file size, the History panel's cost in the report, and false alarms.

    python benchmarks/history_scale.py [--rows 50] [--items 10000] [--null-runs 1000] [--repeat 3]

1. **history.json** with ``--rows`` rows × ``--items`` items × 4 scorers: two deterministic
   scorers (0/1, a few items flip), a five-level LLM judge and a continuous 3-decimal judge
   (the worst case for compression), each item's score drawn afresh around its quality every
   run. Prints the encode and read times, the JSON size, and the size of ``history.json.gz``
   as the baseline artifact stores it (target ≤ 5 MB). Also the all-continuous worst case.
2. **Report**: the HTML report of a ``--items`` pair (``benchmarks/report_scale.py``'s
   workload: 4 scorers, 2,000-character outputs) rendered without and with that history
   (context + HTML, best of ``--repeat``); the difference is what the panel, the bands, the
   flaky marks and the explorer's score strips cost (target < 0.5 s), and the report size
   with the history (target ≤ 12 MB).
3. **False alarms** over ``--null-runs`` seeded null runs (``tests/unit/history/null_runs.py``):
   the share of comparisons of unchanged code called regressed, with today's default
   thresholds and with ``threshold: auto``, for a judge without and with a run-level drift.
"""

from __future__ import annotations

import argparse
import gzip
import os
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests" / "unit" / "report"))
sys.path.insert(0, str(REPO / "tests" / "unit" / "history"))

from null_runs import false_alarms  # noqa: E402
from report_synth import synthetic_pair  # noqa: E402

from axl_action.compare.engine import CompareOptions, compare_results  # noqa: E402
from axl_action.compare.gates import GateOptions, evaluate_gates  # noqa: E402
from axl_action.history import (  # noqa: E402
    CostPoint,
    History,
    HistoryEntry,
    RowSummary,
    ScorerPoint,
    append,
    history_bytes,
    history_entry,
    parse_history,
)
from axl_action.history.analysis import analyse  # noqa: E402
from axl_action.report import build_report_context, render_report_html  # noqa: E402
from axl_action.schema import run_view  # noqa: E402

SCORERS = ("exact", "judge", "tone", "length")
KINDS = {"exact": "binary", "judge": "levels", "tone": "continuous", "length": "binary"}


def synthetic_history(rows: int, items: int, kinds: dict[str, str], seed: int = 1) -> History:
    """``rows`` baseline runs of ``items`` items keyed like report_synth (``id:q<i>``)."""
    rng = np.random.default_rng(seed)
    keys = [f"id:q{i}" for i in range(items)]
    quality = {name: rng.beta(4, 1.5, items) for name in kinds}
    history = History(suite="default", limit=max(rows, 50))
    for k in range(rows):
        scores: dict[str, np.ndarray] = {}
        for name, kind in kinds.items():
            q = quality[name]
            if kind == "binary":  # deterministic-looking: stable, 1% of items flip per run
                values = (q >= 0.5).astype(np.float64)
                flip = rng.random(items) < 0.01
                values[flip] = 1 - values[flip]
            elif kind == "levels":
                values = np.clip(np.round((q + rng.normal(0, 0.12, items)) * 4) / 4, 0, 1)
            else:
                values = np.round(np.clip(q + rng.normal(0, 0.08, items), 0, 1), 3)
            scores[name] = values
        summary = RowSummary(
            run_id=str(1000 + k),
            commit=f"{rng.integers(0, 2**63):016x}{k:024x}",
            date=f"2026-10-{1 + k % 28:02d}T12:00:00.000Z",
            result_id=f"r{k}",
            dataset="synthetic-qa",
            fingerprint="sha256:bench",
            runs=1,
            items=items,
            scorers={
                n: ScorerPoint(type="llm", mean=float(v.mean()), n=items, scored=items, failed=0)
                for n, v in scores.items()
            },
            item_error_rate=0.0,
            cost=CostPoint(known=1.0 + 0.01 * k, completeness="complete", certified=k > 0),
            latency_ms=800.0 + k,
        )
        history = append(history, HistoryEntry(summary=summary, keys=keys, scores=scores))
    return history


def _best(repeat: int, fn):  # type: ignore[no-untyped-def]
    times = []
    value = None
    for _ in range(repeat):
        t0 = time.perf_counter()
        value = fn()
        times.append(time.perf_counter() - t0)
    return min(times), value


def file_figures(rows: int, items: int, repeat: int) -> History:
    print(f"## history.json: {rows} rows × {items:,} items × 4 scorers\n")
    print(
        "| scores | encode | JSON | history.json.gz (in the artifact) | read (gunzip + validate + decode) |"
    )
    print("|---|--:|--:|--:|--:|")
    mixed = synthetic_history(rows, items, KINDS)
    worst = synthetic_history(rows, items, dict.fromkeys(SCORERS, "continuous"))
    for label, history in (
        ("mixed (2 × 0/1, 5-level, continuous)", mixed),
        ("all continuous (worst case)", worst),
    ):
        enc_s, encoded = _best(repeat, lambda h=history: history_bytes(h))
        packed = gzip.compress(encoded.data, compresslevel=6, mtime=0)
        read_s, back = _best(repeat, lambda p=packed: parse_history(p))
        assert len(back) == rows and encoded.dropped == 0
        print(
            f"| {label} | {enc_s:.2f} s | {len(encoded.data) / 1e6:.1f} MB | **{len(packed) / 1e6:.2f} MB** "
            f"| {read_s:.2f} s |"
        )
    return mixed


def report_figures(history: History, items: int, repeat: int) -> None:
    print(f"\n## Report with the History panel: {items:,} items × 4 scorers, {len(history)} baseline runs\n")
    baseline, candidate = synthetic_pair(items, output_chars=2000, seed=items)
    comparison = compare_results(baseline, candidate, CompareOptions(seed=1))
    gates = evaluate_gates(comparison, [baseline], [candidate], GateOptions(fail_on_regression=True))
    view = run_view(baseline)
    t0 = time.perf_counter()
    entry = history_entry([view], run_id="9999")
    row_s = time.perf_counter() - t0

    def plain() -> str:
        ctx = build_report_context(candidate, baseline, comparison, gates)
        return render_report_html(ctx, candidate, baseline, comparison)

    def with_history() -> str:
        analysis = analyse(
            history,
            scorers=baseline.scorer_names,
            types=baseline.scorer_types,
            comparison=comparison,
            repository_url="https://github.com/acme/app",
        )
        ctx = build_report_context(candidate, baseline, comparison, gates, history=analysis)
        return render_report_html(ctx, candidate, baseline, comparison, history=analysis)

    plain()  # warm the template cache
    base_s, base_html = _best(repeat, plain)
    hist_s, hist_html = _best(repeat, with_history)
    analyse_s, _ = _best(
        repeat,
        lambda: analyse(
            history, scorers=baseline.scorer_names, types=baseline.scorer_types, comparison=comparison
        ),
    )
    size = len(hist_html.encode("utf-8")) / 1e6
    print(
        f"| render (context + HTML), best of {repeat} | without history | with history | added | HTML size |"
    )
    print("|---|--:|--:|--:|--:|")
    print(
        f"| {items:,} items | {base_s:.2f} s | {hist_s:.2f} s | **{hist_s - base_s:+.2f} s** "
        f"| {len(base_html.encode()) / 1e6:.1f} → **{size:.1f} MB** |"
    )
    print(
        f"\nOf the added time: bands + flaky items (`analyse`) {analyse_s:.2f} s. "
        f"One row from the run view of a {items:,}-item run (`history_entry`): {row_s * 1000:.0f} ms "
        f"({len(entry.keys or [])} keys)."
    )


def null_figures(trials: int) -> None:
    print(
        f"\n## False alarms over {trials:,} seeded null runs (21 baselines, then a candidate drawn the same way)\n"
    )
    print(
        "| workload | comparisons | default thresholds: regressed | threshold: auto: regressed | auto: regressed or improved |"
    )
    print("|---|--:|--:|--:|--:|")
    cases = (
        ("30-item pass/fail judge, drift sd 0.05 (the test's bound: ≤ 4%)", 30, {"judge": "binary"}, 0.05),
        ("120 items, pass/fail + 5-level judges, no drift", 120, {"judge": "binary", "tone": "levels"}, 0.0),
        (
            "120 items, pass/fail + 5-level judges, drift sd 0.04",
            120,
            {"judge": "binary", "tone": "levels"},
            0.04,
        ),
        (
            "120 items, pass/fail + 5-level judges, drift sd 0.08",
            120,
            {"judge": "binary", "tone": "levels"},
            0.08,
        ),
    )
    for label, n, kinds, drift in cases:
        tally = false_alarms(trials, n=n, day_sigma=drift, kinds=kinds)
        print(
            f"| {label} | {tally.comparisons:,} | {tally.rate(tally.default_regressed):.1%} "
            f"| **{tally.rate(tally.auto_regressed):.1%}** | {tally.rate(tally.auto_flagged):.1%} |"
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=50)
    parser.add_argument("--items", type=int, default=10_000)
    parser.add_argument("--null-runs", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    opts = parser.parse_args()
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"{os.cpu_count()} CPUs, load average {load:.1f} at start\n")
    history = file_figures(opts.rows, opts.items, opts.repeat)
    report_figures(history, opts.items, opts.repeat)
    if opts.null_runs:
        null_figures(opts.null_runs)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"\nload average {load:.1f} at the end")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
