"""Budget closure under real concurrency: a fake priced operation at concurrency 32 (spec §8)."""

from __future__ import annotations

import threading
import time
from typing import Any

from axl_action.evals.dataset import dataset
from axl_action.evals.definition import define_eval
from axl_action.evals.runner import execute_eval
from axl_action.evals.scorer import Scorer, scorer
from axl_action.runtime.runtime import Runtime
from axl_action.runtime.scope import current_scope, open_operation

PRICE = 0.01
CONCURRENCY = 32
ITEMS = 400


def test_nothing_is_admitted_after_closure_and_overshoot_is_bounded() -> None:
    lock = threading.Lock()
    dispatched: list[float] = []  # run spend seen by each call that was let through

    def workflow(inp: Any, rt: Any) -> dict[str, Any]:
        for _ in range(2):  # two paid calls per item
            op = open_operation("chat", model="fake:priced")
            op.before_dispatch()
            scope = current_scope()
            assert scope is not None
            run_scope = scope.chain()[-1]
            assert run_scope.admission is not None
            with lock:
                dispatched.append(run_scope.admission.known_spend)
            time.sleep(0.002)
            op.settle(PRICE, {"inputTokens": 100, "outputTokens": 10}, "price_table_estimate")
        return {"output": inp}

    judge = Scorer(name="judge", score=lambda o: 1, is_llm=True)
    defn = define_eval(
        "priced",
        dataset("n", items=[{"input": i} for i in range(ITEMS)]),
        [scorer("exact", lambda o: 1), judge],
        workflow,
        budget="$1",
        concurrency=CONCURRENCY,
    )
    result = execute_eval(defn, Runtime())

    budget = result["accounting"]["budget"]
    assert budget["status"] == "closed"
    # A call let through saw the budget open; in-flight calls settle after the crossing, so the
    # overshoot is bounded by the work in flight (one call per worker).
    assert max(dispatched) < 1.0 + CONCURRENCY * PRICE
    assert 1.0 <= budget["knownSpend"] < 1.0 + CONCURRENCY * PRICE
    assert budget["knownOvershoot"] == budget["knownSpend"] - 1.0
    cov = result["summary"]["coverage"]["items"]
    assert cov["completed"] + cov["budget_interrupted"] + cov["budget_skipped"] == ITEMS
    assert cov["budget_skipped"] > ITEMS // 2
    assert cov["completed"] <= 100  # $1 buys 100 calls = 50 items, plus in-flight completions
    # Item charges add up to the run total, which is exactly what the controller was charged.
    assert abs(sum(i["cost"] for i in result["items"]) - result["totalCost"]) < 1e-9
    assert result["totalCost"] == budget["knownSpend"]
    ops = result["accounting"]["operations"]
    assert ops["total"] == ops["settled"] == len(dispatched)
    assert ops["denied"] == cov["budget_interrupted"]
    for item in result["items"]:
        if item["outcome"] == "budget_skipped":
            assert item["accounting"]["operations"]["total"] == 0 and item["cost"] == 0
        if item["outcome"] == "completed" and item["scoreDetails"]["judge"]["outcome"] == "budget_skipped":
            assert item["scoreDetails"]["exact"]["outcome"] == "scored"
    assert budget["closedBy"] in ("case", "operation", "scorer")
