"""How long does ``axl-eval compare`` take, as a whole command, and how much memory does it need?

Two parts, each in fresh processes (the median of ``--repeat`` runs is printed):

1. The 20,000-item x 4-scorer pair written by the real TypeScript CLI
   (``../shared/fixtures/axl-eval-0.16.1-big/``): ``axl-eval compare`` from process start to
   exit, 1,000 resamples, seed fixed. The TypeScript CLI takes 0.85 s and 179 MiB on it on an
   idle machine of this kind, 0.22 s of that in ``JSON.parse``. Measured in the same run as a
   reference: Node's ``JSON.parse`` of the same two files, so the ratio to the TypeScript
   figure can be read against how fast this machine is right now.
2. Growth: generated pairs of N items x 4 scorers (0.24 format, ~2% failed items, failed and
   N/A scorer verdicts) at 10k / 50k / 100k / 200k, whole command again, with the per-item
   time so linearity shows.

Peak RSS is the child's ``ru_maxrss``. Run:
  python benchmarks/compare_scale.py [--items 10000 50000 100000 200000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from bench_bytecode import ensure_bytecode

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


BIG = Path(__file__).resolve().parent.parent.parent / "shared" / "fixtures" / "axl-eval-0.16.1-big"
TS_WALL_S, TS_RSS_MIB, TS_PARSE_S = 0.85, 179, 0.22


def _child(cmd: list[str]) -> tuple[float, float]:
    """Wall seconds and peak RSS (MiB) of one child process."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{cmd[:3]} exited {proc.returncode}")
    return wall, usage.ru_maxrss / 1024


def _middle(values: Iterable[Any]) -> Any:
    """The median of an odd count (the upper middle of an even one)."""
    ordered = sorted(values)
    return ordered[len(ordered) // 2]


def _median(cmd: list[str], repeat: int) -> tuple[float, float]:
    wall, rss = _middle(_child(cmd) for _ in range(repeat))
    return wall, rss


def _compare_cmd(base: Path, cand: Path) -> list[str]:
    return [sys.executable, "-m", "axl_action", "compare", str(base), str(cand), "--seed", "1"]


def _node_parse_once(node: str, base: Path, cand: Path) -> float:
    script = (
        "const fs=require('fs');const t=process.hrtime.bigint();"
        f"JSON.parse(fs.readFileSync({json.dumps(str(base))},'utf8'));"
        f"JSON.parse(fs.readFileSync({json.dumps(str(cand))},'utf8'));"
        "console.log(Number(process.hrtime.bigint()-t)/1e9)"
    )
    return float(subprocess.run([node, "-e", script], capture_output=True, text=True, check=True).stdout)


def _with_node_reference(base: Path, cand: Path, repeat: int) -> tuple[float, float, float | None]:
    """Median compare wall and RSS, and the median Node ``JSON.parse`` of the same files, the
    two interleaved run by run: this machine's speed swings within minutes, and a reference
    measured minutes apart from the figure it scales would not be one."""
    node = shutil.which("node")
    runs: list[tuple[float, float]] = []
    parses: list[float] = []
    for _ in range(repeat):
        runs.append(_child(_compare_cmd(base, cand)))
        if node is not None:
            parses.append(_node_parse_once(node, base, cand))
    wall, rss = _middle(runs)
    return wall, rss, (_middle(parses) if parses else None)


def main() -> int:
    ensure_bytecode()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, nargs="+", default=[10_000, 50_000, 100_000, 200_000])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print(f"load average before: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    base, cand = BIG / "big-baseline.json", BIG / "big-candidate.json"
    if base.exists():
        wall, rss, parse = _with_node_reference(base, cand, max(args.repeat, 7))
        print("\n20,000 x 4 pair written by the TypeScript CLI (axl-eval compare, whole command):")
        print(f"  axl-eval-action: {wall:.2f} s, {rss:.0f} MiB")
        print(
            f"  TypeScript CLI (idle, recorded): {TS_WALL_S} s, {TS_RSS_MIB} MiB -> ratio {wall / TS_WALL_S:.2f}x "
            f"wall, {rss / TS_RSS_MIB:.2f}x memory"
        )
        if parse is not None:
            speed = parse / TS_PARSE_S
            print(
                f"  same run: node JSON.parse of both files {parse:.2f} s (idle {TS_PARSE_S} s: this machine "
                f"runs at {1 / speed:.2f}x idle speed); ratio at today's speed {wall / (TS_WALL_S * speed):.2f}x"
            )
    else:
        print(f"(skipped the TypeScript pair: {BIG} not found)")
    print("\n| items x 4 scorers | JSON (both files) | whole command | per item | peak RSS |")
    print("|---:|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as tmp:
        for n in args.items:
            b, c = Path(tmp) / f"b{n}.json", Path(tmp) / f"c{n}.json"
            b.write_text(json.dumps(_result(n, 0.0, 1, "base-run")))
            c.write_text(json.dumps(_result(n, -0.01, 2, "cand-run")))
            size_mb = (b.stat().st_size + c.stat().st_size) / 2**20
            wall, rss = _median(_compare_cmd(b, c), args.repeat)
            print(f"| {n:,} | {size_mb:.0f} MB | {wall:.2f} s | {wall / n * 1e6:.1f} µs | {rss:.0f} MiB |")
            b.unlink()
            c.unlink()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
