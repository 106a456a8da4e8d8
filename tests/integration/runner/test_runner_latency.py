"""A workflow that blocks on I/O must not serialise the pool (items run on threads).

Asserted as the invariant, not a timing (tests/README.md: speed belongs to benchmarks/): a
barrier of ``concurrency`` parties is passed only if that many workflows block at once.
"""

from __future__ import annotations

import threading
from typing import Any

from axl_action.evals.dataset import dataset
from axl_action.evals.definition import define_eval
from axl_action.evals.runner import execute_eval
from axl_action.evals.scorer import scorer
from axl_action.runtime.runtime import Runtime


def test_blocking_workflow_runs_concurrently() -> None:
    items, concurrency = 320, 32
    # Every workflow blocks until 32 are blocked together: a serialised pool would time out.
    gate = threading.Barrier(concurrency, timeout=30)
    active = peak = 0
    lock = threading.Lock()

    def workflow(inp: Any, rt: Any) -> dict[str, Any]:
        nonlocal active, peak
        with lock:
            active += 1
            peak = max(peak, active)
        gate.wait()
        with lock:
            active -= 1
        return {"output": inp}

    defn = define_eval(
        "io", dataset("n", items=[{"input": i} for i in range(items)]), [scorer("s", lambda o: 1)], workflow
    )
    result = execute_eval(defn, Runtime(), concurrency=concurrency)
    assert result["summary"]["coverage"]["items"]["completed"] == items
    assert peak == concurrency  # never more than the pool, and the pool filled
