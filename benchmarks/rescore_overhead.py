"""Rescore overhead benchmark.

(a) judge latency hiding: rescore 2,000 saved outputs with one LLM judge on a mock provider
    that takes 20 ms per call, 64 items at once. Ideal wall = ceil(2000 / 64) x 20 ms = 640 ms;
    we report wall / ideal.
(b) bookkeeping cost: rescore 20,000 saved outputs with 3 deterministic scorers; we report
    microseconds per item (whole rescore incl. summary) and the process's peak RSS.

Each scenario runs in a fresh interpreter so the RSS figure is its own.
Usage: python benchmarks/rescore_overhead.py
"""

from __future__ import annotations

import json
import math
import resource
import subprocess
import sys
import time
from typing import Any


def _source(count: int) -> dict[str, Any]:
    """A 0.24 result as our runner writes it (zero-latency workflow, one trivial scorer)."""
    from axl_action.evals.dataset import dataset
    from axl_action.evals.definition import define_eval
    from axl_action.evals.runner import execute_eval
    from axl_action.evals.scorer import scorer

    items = [{"input": {"id": f"i{n}", "n": n}, "annotations": {"want": n * 2}} for n in range(count)]
    definition = define_eval(
        "bench",
        dataset("bench", items=items),
        [scorer("one", lambda o: 1.0)],
        lambda value, runtime: {"output": value["n"] * 2},
        concurrency=8,
    )
    return execute_eval(definition)


def _scenario(name: str) -> dict[str, Any]:
    from axl_action.evals.llm_scorer import llm_scorer
    from axl_action.evals.rescore import RescoreOptions, execute_rescore
    from axl_action.evals.scorer import scorer
    from axl_action.providers.mock import MockProvider
    from axl_action.runtime.runtime import Runtime

    if name == "latency":
        count, concurrency, delay = 2000, 64, 0.02
        source = _source(count)
        runtime = Runtime(providers={"slow": MockProvider(name="slow", latency=delay)})
        scorers = [llm_scorer("judge", "slow:judge", "Grade it.")]
        start = time.perf_counter()
        out = execute_rescore(
            source, scorers, runtime, RescoreOptions(concurrency=concurrency, scorer_concurrency=1)
        )
        wall = time.perf_counter() - start
        ideal = math.ceil(count / concurrency) * delay
        assert out["summary"]["scorers"]["judge"]["scored"] == count
        return {"scenario": name, "wall_s": round(wall, 3), "ideal_s": ideal, "ratio": round(wall / ideal, 3)}
    count = 20000
    source = _source(count)
    scorers = [
        scorer("exact", lambda o, i, a: 1.0 if o == a["want"] else 0.0),
        scorer("even", lambda o: 1.0 if o % 2 == 0 else 0.0),
        scorer("small", lambda o: min(1.0, 100 / (o + 100))),
    ]
    start = time.perf_counter()
    out = execute_rescore(source, scorers)
    wall = time.perf_counter() - start
    assert out["summary"]["scorers"]["exact"]["scored"] == count
    rss_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {
        "scenario": name,
        "items": count,
        "us_per_item": round(wall / count * 1e6, 1),
        "peak_rss_mib": round(rss_mib),
    }


def main() -> None:
    if len(sys.argv) > 1:
        print(json.dumps(_scenario(sys.argv[1])))
        return
    for name in ("latency", "bookkeeping"):
        proc = subprocess.run([sys.executable, __file__, name], capture_output=True, text=True, check=True)
        print(proc.stdout.strip())


if __name__ == "__main__":
    main()
