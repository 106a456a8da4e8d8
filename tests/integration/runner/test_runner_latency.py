"""A workflow that blocks on I/O must not serialise the pool (items run on threads)."""

from __future__ import annotations

import math
import time
from typing import Any

from axl_action.evals.dataset import dataset
from axl_action.evals.definition import define_eval
from axl_action.evals.runner import execute_eval
from axl_action.evals.scorer import scorer
from axl_action.runtime.runtime import Runtime


def test_blocking_workflow_runs_concurrently() -> None:
    items, concurrency, sleep = 320, 32, 0.02

    def workflow(inp: Any, rt: Any) -> dict[str, Any]:
        time.sleep(sleep)
        return {"output": inp}

    defn = define_eval(
        "io", dataset("n", items=[{"input": i} for i in range(items)]), [scorer("s", lambda o: 1)], workflow
    )
    start = time.perf_counter()
    result = execute_eval(defn, Runtime(), concurrency=concurrency)
    wall = time.perf_counter() - start
    ideal = math.ceil(items / concurrency) * sleep
    assert result["summary"]["coverage"]["items"]["completed"] == items
    assert wall < ideal * 2.0, f"wall {wall:.3f}s vs ideal {ideal:.3f}s"
    assert wall >= ideal * 0.95
