"""Per-item repeats (``repeats: N``): the fold into one item, the runner's item-major pool and
the cache key of each repeat (docs/run-model.md, "Repeats")."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from axl_action.cache.calls import ITEM_REPEAT
from axl_action.cache.key import CacheRequest, cache_key, canonical_request
from axl_action.evals.dataset import dataset
from axl_action.evals.definition import define_eval, validate_definition
from axl_action.evals.repeats import combine_repeats, validate_repeats
from axl_action.evals.runner import execute_eval
from axl_action.evals.scorer import scorer
from axl_action.providers.types import CallTiming
from axl_action.runtime.runtime import Runtime
from axl_action.runtime.scope import open_operation
from axl_action.schema import EvalResult
from axl_action.schema.jsonio import dumps_js

EXACT = scorer("exact", lambda o, i, a: 1.0 if o == (a or {}).get("want") else 0.0)


def items(n: int) -> list[dict[str, Any]]:
    return [{"input": {"id": f"q{k}", "n": k}, "annotations": {"want": k * 2}} for k in range(n)]


def call(cost: float) -> None:
    op = open_operation("chat", model="openai:gpt-4o-mini")
    op.before_dispatch()
    op.record_timing("openai:gpt-4o-mini", CallTiming(wire_ms=100))
    op.settle(cost, {"inputTokens": 100, "outputTokens": 10}, "price_table_estimate")


def flaky_run(repeats: int, n: int = 3, concurrency: int = 4) -> tuple[dict[str, Any], dict[int, int]]:
    """Item k answers right on its first k+1 calls, wrong after; item 2's 2nd call raises."""
    seen: dict[int, int] = {}
    lock = threading.Lock()

    def workflow(inp: dict[str, Any], rt: Any) -> dict[str, Any]:
        with lock:
            count = seen[inp["n"]] = seen.get(inp["n"], 0) + 1
        call(0.01)
        if inp["n"] == 2 and count == 2:
            raise RuntimeError("flaky upstream")
        return {"output": inp["n"] * 2 if count <= inp["n"] + 1 else -1}

    defn = define_eval("wf", dataset("ds", items=items(n)), [EXACT], workflow, repeats=repeats)
    return execute_eval(defn, Runtime(), concurrency=concurrency), seen


def test_repeats_run_every_item_n_times_and_fold_the_mean() -> None:
    result, seen = flaky_run(4, concurrency=1)  # one worker: the call order is the repeat order
    assert seen == {0: 4, 1: 4, 2: 4}
    assert result["metadata"]["repeats"] == 4
    first, second, third = result["items"]
    assert first["scores"] == {"exact": 0.25}  # right once in four
    assert [r["scores"] for r in first["repeats"]] == [{"exact": 1.0}] + [{"exact": 0.0}] * 3
    assert second["scores"] == {"exact": 0.5}
    assert second["scoreDetails"]["exact"]["score"] == 0.5
    # Item 2: three scored repeats (right, right, wrong) and one failure, counted apart.
    assert third["outcome"] == "completed"
    assert third["scores"] == {"exact": 0.667}  # scores keep three decimals, as every score does
    assert [r["outcome"] for r in third["repeats"]] == ["completed", "failed", "completed", "completed"]
    assert third["repeats"][1]["error"] == "flaky upstream"
    # Every repeat was paid for: the item's accounting folds all four.
    assert first["cost"] == pytest.approx(0.04)
    assert first["accounting"]["operations"]["total"] == 4
    assert "scope" not in first["accounting"]
    assert result["totalCost"] == pytest.approx(0.12)
    assert list(first)[-1] == "repeats"
    # The 0.24 reader reads it (repeats is an extra item key), and the summary reads the means.
    parsed = EvalResult.model_validate_json(dumps_js(result))
    assert parsed.summary.scorers["exact"].mean == pytest.approx((0.25 + 0.5 + 2 / 3) / 3, abs=1e-3)


def test_repeats_run_concurrently_and_each_item_settles_once() -> None:
    settled: list[int] = []
    active = 0
    peak = 0
    lock = threading.Lock()
    gate = threading.Barrier(3, timeout=5)

    def workflow(inp: dict[str, Any], rt: Any) -> dict[str, Any]:
        nonlocal active, peak
        with lock:
            active += 1
            peak = max(peak, active)
        gate.wait()  # the three repeats of one item must be in flight together
        with lock:
            active -= 1
        return {"output": inp["n"] * 2}

    from axl_action.evals.continuation import Continuation
    from axl_action.evals.runner import execute_run

    defn = define_eval("wf", dataset("ds", items=items(2)), [EXACT], workflow, repeats=3)
    record = execute_run(
        defn,
        Runtime(),
        concurrency=3,
        continuation=Continuation(on_settled=lambda i, item: settled.append(i)),
    )
    assert sorted(settled) == [0, 1]
    assert peak == 3
    assert [len(item["repeats"]) for item in record.wire["items"]] == [3, 3]


def test_one_repeat_keeps_the_item_shape_unchanged() -> None:
    result, _ = flaky_run(1)
    assert "repeats" not in result["metadata"]
    assert all("repeats" not in item for item in result["items"])


def test_a_repeat_count_must_be_a_whole_number_in_range() -> None:
    assert validate_repeats(3, "--repeats") == 3
    for bad in (0, -1, 1001, 2.5, True, "3"):
        with pytest.raises(ValueError, match="whole number from 1 to 1000"):
            validate_repeats(bad, "--repeats")
    defn = define_eval("wf", dataset("ds", items=items(1)), [EXACT], lambda i, r: {"output": 1}, repeats=0)
    assert validate_definition(defn) == (
        "exports an invalid repeats (0); it must be a whole number from 1 to 1000."
    )


def test_combine_keeps_the_first_completed_repeat_and_stubs_when_none_ran() -> None:
    acc = {
        "knownCost": 0, "completeness": "complete",
        "breakdown": {"generation": 0, "judging": 0},
        "operations": {"total": 0, "priced": 0, "unpriced": 0},
    }  # fmt: skip
    failed = {"input": 1, "output": None, "scores": {}, "duration": 10, "outcome": "failed",
              "error": "boom", "accounting": acc, "cost": 0, "scorerCost": 0}  # fmt: skip
    done = {"input": 1, "output": "ok", "scores": {"s": 1.0}, "duration": 30, "outcome": "completed",
            "accounting": acc, "cost": 0, "scorerCost": 0}  # fmt: skip
    stub = {"input": 1, "output": None, "scores": {}, "outcome": "cancelled", "error": "Cancelled",
            "accounting": acc, "cost": 0, "scorerCost": 0}  # fmt: skip
    item = combine_repeats([failed, done, stub], ["s"])
    assert item["output"] == "ok" and item["outcome"] == "completed"
    assert item["scores"] == {"s": 1.0}
    assert item["duration"] == 20  # the mean of the two that ran
    assert [r["outcome"] for r in item["repeats"]] == ["failed", "completed", "cancelled"]
    assert combine_repeats([stub, stub], ["s"]) is stub  # nothing ran: a stub a resume reruns


def test_each_item_repeat_has_its_own_cache_key_and_first_keys_are_unchanged() -> None:
    request = CacheRequest(
        provider="openai", endpoint="/chat/completions", base_url="http://x", model="m", body={}
    )
    assert "itemRepeat" not in canonical_request(request)
    keys = {cache_key(request.model_copy(update={"item_repeat": r})) for r in range(3)}
    assert len(keys) == 3
    assert cache_key(request.model_copy(update={"item_repeat": 0})) == cache_key(request)
    from axl_action.cache.calls import ResponseCache
    from axl_action.cache.store import DirectoryStore

    cache = ResponseCache(mode="on", store=DirectoryStore("/nonexistent-never-written"))
    token = ITEM_REPEAT.set(2)
    try:
        key, keyed = cache.keyed(request)
    finally:
        ITEM_REPEAT.reset(token)
    assert keyed.item_repeat == 2
    assert key == cache_key(request.model_copy(update={"item_repeat": 2}))
    assert cache.keyed(request)[0] == cache_key(request)


def test_a_judge_scorer_sees_each_repeats_output() -> None:
    outputs: list[Any] = []

    def score(o: Any, i: Any, a: Any) -> float:
        outputs.append(o)
        return 1.0

    count = iter(range(100))
    defn = define_eval(
        "wf",
        dataset("ds", items=items(1)),
        [scorer("s", score)],
        lambda i, r: {"output": next(count)},
        repeats=3,
    )
    execute_eval(defn, Runtime(), concurrency=1)
    assert sorted(outputs) == [0, 1, 2]


def test_a_reader_that_ignores_repeats_reads_the_same_result() -> None:
    """What a 0.24 reader sees (it parses JSON and ignores keys it does not know): the same
    summary from the items without ``repeats``, and ``scores`` holding the mean."""
    from axl_action.compare.engine import CompareOptions, compare_results
    from axl_action.schema.view import build_summary, item_columns

    result, _ = flaky_run(4, concurrency=1)
    stripped = [{k: v for k, v in item.items() if k != "repeats"} for item in result["items"]]
    types = result["metadata"]["scorerTypes"]
    again = build_summary(item_columns(stripped, list(types)), types, model_timing=None)
    assert again["scorers"] == result["summary"]["scorers"]
    assert again["count"] == result["summary"]["count"] == 3
    # Compare pairs items by their mean: one repeated run against one plain run of the same items.
    plain, _ = flaky_run(1, concurrency=1)
    comparison = compare_results(
        EvalResult.model_validate_json(dumps_js(plain)),
        EvalResult.model_validate_json(dumps_js(result)),
        CompareOptions(seed=1),
    )
    exact = comparison.scorers["exact"]
    # Plain: every item right once (its first call); repeated: means 0.25, 0.5, 0.667.
    assert exact.baseline_mean == pytest.approx(1.0)
    assert exact.candidate_mean == pytest.approx((0.25 + 0.5 + 0.667) / 3, abs=1e-3)


def test_a_repeated_items_calls_are_every_repeats_each_stamped_with_it() -> None:
    result, _ = flaky_run(3, concurrency=1)
    for item in result["items"]:
        calls = item["calls"]
        assert [c["repeat"] for c in calls] == [0, 1, 2]  # one call per repeat, in repeat order
        assert all("calls" not in run for run in item["repeats"])  # listed once, on the item
        assert sum(c["cost"] for c in calls) == pytest.approx(item["cost"])
    EvalResult.model_validate(result)
