"""Runner overhead benchmark.

(a) latency hiding: 2,000 items at concurrency 64, each workflow sleeps 20 ms (blocking I/O).
    Ideal wall time = ceil(2000 / 64) x 20 ms = 640 ms; we report wall / ideal (target <= 1.10).
(b) bookkeeping cost: 20,000 items, zero-latency workflow, 3 deterministic scorers; we report
    microseconds per item (whole run incl. summary) and the process's peak RSS.

Each scenario runs in a fresh interpreter so the RSS figure is its own.
Usage: python benchmarks/runner_overhead.py
"""

from __future__ import annotations

import json
import math
import resource
import subprocess
import sys
import time
from typing import Any


def _definition(count: int, sleep: float) -> Any:
    from axl_action.evals.dataset import dataset
    from axl_action.evals.definition import define_eval
    from axl_action.evals.scorer import scorer

    def workflow(value: dict[str, Any], runtime: Any) -> dict[str, Any]:
        if sleep:
            time.sleep(sleep)
        return {"output": value["n"] * 2}

    items = [{"input": {"id": f"i{n}", "n": n}, "annotations": {"want": n * 2}} for n in range(count)]
    return define_eval(
        "bench",
        dataset("bench", items=items),
        [
            scorer("exact", lambda o, i, a: 1.0 if o == a["want"] else 0.0),
            scorer("even", lambda o: 1.0 if o % 2 == 0 else 0.0),
            scorer("small", lambda o: min(1.0, 100 / (o + 100))),
        ],
        workflow,
    )


def latency(count: int = 2000, concurrency: int = 64, sleep: float = 0.02) -> dict[str, float]:
    from axl_action.evals.runner import execute_eval
    from axl_action.runtime.runtime import Runtime

    defn = _definition(count, sleep)
    start = time.perf_counter()
    execute_eval(defn, Runtime(), concurrency=concurrency)
    wall = time.perf_counter() - start
    ideal = math.ceil(count / concurrency) * sleep
    return {
        "items": count,
        "concurrency": concurrency,
        "wall_s": wall,
        "ideal_s": ideal,
        "ratio": wall / ideal,
    }


def overhead(count: int = 20000, concurrency: int = 5) -> dict[str, float]:
    from axl_action.evals.runner import execute_eval
    from axl_action.runtime.runtime import Runtime

    defn = _definition(count, 0.0)
    start = time.perf_counter()
    result = execute_eval(defn, Runtime(), concurrency=concurrency)
    wall = time.perf_counter() - start
    assert result["summary"]["coverage"]["items"]["completed"] == count
    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    return {
        "items": count,
        "wall_s": wall,
        "us_per_item": wall / count * 1e6,
        "peak_rss_mib": peak_kib / 1024,
    }


def main() -> None:
    if len(sys.argv) > 1:
        figures = latency() if sys.argv[1] == "latency" else overhead()
        print(json.dumps(figures))
        return
    for scenario in ("latency", "overhead"):
        out = subprocess.run([sys.executable, __file__, scenario], capture_output=True, text=True, check=True)
        figures = json.loads(out.stdout)
        if scenario == "latency":
            print(
                f"(a) {figures['items']} items x 20 ms at concurrency {figures['concurrency']}: "
                f"wall {figures['wall_s']:.3f}s, ideal {figures['ideal_s']:.3f}s, ratio {figures['ratio']:.3f}"
            )
        else:
            print(
                f"(b) {figures['items']} items, zero-latency workflow, 3 scorers: "
                f"{figures['us_per_item']:.0f} µs/item ({figures['wall_s']:.2f}s), peak RSS {figures['peak_rss_mib']:.0f} MiB"
            )


if __name__ == "__main__":
    main()
