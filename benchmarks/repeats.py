"""What ``repeats: N`` costs in bookkeeping, against the same tries made as ``--runs N``.

The workload of the big pair (``benchmarks/evals/big_eval.py``: 4 deterministic scorers, a
zero-latency workflow, so only the runner's own work is timed), run through the CLI three ways
that each make the same number of item tries:

* ``--repeats N`` on ``items`` items (one result; the repeats folded into each item);
* ``--runs N`` on ``items`` items (N results): the reference, measured in the same round;
* plain, on ``items x N`` items: the same tries as separate items.

Printed per way: µs per try from the results' own ``duration`` (summed over ``--runs``), the
whole process's wall seconds, and the ratios to ``--runs N``. Rounds are interleaved and the
median of ``--repeat`` rounds is shown (this machine's speed swings within minutes).

Run:  python benchmarks/repeats.py [--items 4000] [--times 5] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_bytecode import ensure_bytecode

EVAL_FILE = Path(__file__).resolve().parent / "evals" / "big_eval.py"


def _cli(items: int, flags: list[str]) -> tuple[float, float]:
    """(sum of the results' ``duration`` in ms, wall seconds) of one ``axl-eval run``."""
    env = {**os.environ, "BIG_ITEMS": str(items)}
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "r.json"
        cmd = [sys.executable, "-m", "axl_action", str(EVAL_FILE), "--output", str(out), "--quiet", *flags]
        start = time.perf_counter()
        code = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, check=False)
        wall = time.perf_counter() - start
        if code.returncode not in (0, 1):
            raise SystemExit(f"axl-eval run failed: {code.stderr.decode()[-500:]}")
        data = json.loads(out.read_text(encoding="utf-8"))
    results = data if isinstance(data, list) else [data]
    return float(sum(r["duration"] for r in results)), wall


def _median(values: list[float]) -> float:
    return sorted(values)[len(values) // 2]


def main() -> int:
    ensure_bytecode()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=4000)
    parser.add_argument("--times", type=int, default=5, help="N: repeats, runs, and the plain multiple")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    n, items = args.times, args.items
    tries = n * items
    print(f"load average before: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    ways = {
        f"--repeats {n}": (items, ["--repeats", str(n)]),
        f"--runs {n} (reference)": (items, ["--runs", str(n)]),
        f"plain, {tries:,} items": (tries, []),
    }
    rounds = [{name: _cli(count, flags) for name, (count, flags) in ways.items()} for _ in range(args.repeat)]
    ref_name = f"--runs {n} (reference)"
    ref_us = _median([r[ref_name][0] for r in rounds]) * 1000 / tries
    ref_wall = _median([r[ref_name][1] for r in rounds])
    print(f"{items:,} items x {n} tries = {tries:,} tries, 4 deterministic scorers, zero-latency workflow")
    for name in ways:
        us = _median([r[name][0] for r in rounds]) * 1000 / tries
        wall = _median([r[name][1] for r in rounds])
        print(
            f"  {name:<24} {us:6.1f} µs/try (x{us / ref_us:.2f})   whole process {wall:5.2f} s (x{wall / ref_wall:.2f})"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
