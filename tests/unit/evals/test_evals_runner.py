"""run_eval / execute_eval: item outcomes, caller claims, gates, timing, roll-ups (spec §5-§13)."""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

from axl_action.errors import BudgetError, ItemErrorRateError
from axl_action.evals.dataset import dataset
from axl_action.evals.definition import define_eval
from axl_action.evals.failure import describe_item_failure
from axl_action.evals.pool import pool_size
from axl_action.evals.runner import execute_eval, run_eval, shard_indices
from axl_action.evals.scorer import Scorer, scorer
from axl_action.providers.errors import ProviderError
from axl_action.providers.types import CallTiming
from axl_action.runtime.runtime import Runtime, UninstrumentedRuntime
from axl_action.runtime.scope import AbortError, open_operation
from axl_action.schema import EvalResult
from axl_action.schema.jsonio import dumps_js

EXACT = scorer("exact", lambda o, i, a: 1.0 if o == (a or {}).get("want") else 0.0)


def items(n: int) -> list[dict[str, Any]]:
    return [{"input": {"id": f"q{k}", "n": k}, "annotations": {"want": k * 2}} for k in range(n)]


def call(cost: float | None, model: str = "openai:gpt-4o-mini", wire: float = 100, retries: int = 0) -> None:
    op = open_operation("chat", model=model)
    op.before_dispatch()
    op.record_timing(model, CallTiming(wire_ms=wire, rate_limit_retries=retries))
    op.settle(cost, {"inputTokens": 100, "outputTokens": 10}, "price_table_estimate")


def run(workflow: Any, n: int = 4, scorers: list[Scorer] | None = None, **kw: Any) -> dict[str, Any]:
    opts = {k: kw.pop(k) for k in ("cancel_event", "on_progress", "shard", "concurrency") if k in kw}
    runtime = kw.pop("runtime", None) or Runtime()
    defn = define_eval("wf", dataset("ds", items=items(n)), scorers or [EXACT], workflow, **kw)
    return execute_eval(defn, runtime, **opts)


def test_completed_items_carry_measured_cost_timing_and_metadata() -> None:
    def workflow(inp: dict[str, Any], rt: Any) -> dict[str, Any]:
        call(0.01, wire=100 + inp["n"])
        return {"output": inp["n"] * 2}

    result = run(workflow, n=3)
    item = result["items"][0]
    assert list(item) == [
        "input", "annotations", "output", "scores", "duration", "timing", "outcome", "metadata",
        "scoreDetails", "accounting", "cost", "scorerCost", "calls",
    ]  # fmt: skip
    (made,) = item["calls"]  # the item's one call, as the report's item detail lists it
    assert (made["model"], made["outcome"], made["cost"], made["wireMs"]) == (
        "openai:gpt-4o-mini",
        "settled",
        0.01,
        100,
    )
    assert item["timing"] == {"openai:gpt-4o-mini": {"calls": 1, "queuedMs": 0, "retryMs": 0, "wireMs": 100}}
    assert item["metadata"]["modelCallCounts"] == {"openai:gpt-4o-mini": 1}
    assert result["totalCost"] == pytest.approx(0.03)
    assert result["metadata"]["models"] == ["openai:gpt-4o-mini"]
    assert result["metadata"]["modelCounts"] == {"openai:gpt-4o-mini": 3}
    assert result["metadata"]["workflows"] == ["wf"]
    timing = result["summary"]["modelTiming"]["openai:gpt-4o-mini"]
    assert timing["calls"] == 3 and timing["wireMs"]["max"] == 102 and timing["rateLimitRetries"] == 0
    assert list(result) == [
        "id",
        "dataset",
        "metadata",
        "timestamp",
        "totalCost",
        "accounting",
        "duration",
        "items",
        "summary",
    ]
    assert result["summary"]["scorers"]["exact"]["mean"] == 1
    assert result["metadata"]["fingerprint"]["pricingVersion"]  # priced calls were made
    assert "pricingVersion" not in run(lambda i, rt: {"output": 0}, n=1)["metadata"]["fingerprint"]


def test_failed_item_keeps_spend_timing_and_a_provider_failure() -> None:
    def workflow(inp: dict[str, Any], rt: Any) -> dict[str, Any]:
        if inp["n"] == 1:
            call(0.004)
            op = open_operation("chat", model="openai:gpt-4o-mini")
            op.before_dispatch()
            op.unknown("usage_missing")
            try:
                raise ProviderError(
                    "Rate limit reached", provider="openai", status=429, retryable=True, request_id="req_1"
                )
            except ProviderError as exc:
                raise RuntimeError("workflow gave up") from exc
        return {"output": inp["n"] * 2}

    result = run(workflow, n=20)
    item = result["items"][1]
    assert item["outcome"] == "failed" and item["error"] == "workflow gave up"
    assert item["failure"] == {
        "name": "ProviderError",
        "provider": "openai",
        "status": 429,
        "retryable": True,
        "requestId": "req_1",
    }
    assert item["cost"] == 0.004 and item["unpriced"] is True and "timing" in item
    assert item["scores"] == {} and "scoreDetails" not in item
    assert result["unpriced"] is True
    rate = result["summary"]["itemErrorRate"]
    assert rate == {"failed": 1, "attempted": 20, "rate": 0.05, "limit": 0.05, "exceeded": False}


def test_item_error_gate_trips_strictly_above_the_limit() -> None:
    def workflow(inp: dict[str, Any], rt: Any) -> dict[str, Any]:
        if inp["n"] < 2:
            raise ValueError("nope")
        return {"output": inp["n"] * 2}

    result = run(workflow, n=10, fail_on_item_error_rate=0.1)
    assert result["summary"]["itemErrorRate"]["exceeded"] is True
    assert result["items"][0]["failure"] == {"name": "ValueError"}
    assert run(lambda i, rt: {"output": 0}, n=3)["summary"].get("itemErrorRate") is None


def test_invalid_limits_and_budgets_fail_before_the_dataset_loads() -> None:
    loaded: list[int] = []

    with pytest.raises(ItemErrorRateError):
        run(lambda i, rt: loaded.append(1), fail_on_item_error_rate=1.5)
    with pytest.raises(BudgetError):
        run(lambda i, rt: loaded.append(1), budget="1 USD")
    assert loaded == []


def test_cancelled_stubs_and_in_flight_abort() -> None:
    cancel = threading.Event()

    def workflow(inp: dict[str, Any], rt: Any) -> dict[str, Any]:
        if inp["n"] == 1:
            cancel.set()
            raise AbortError("user stopped")
        return {"output": inp["n"] * 2}

    result = run(workflow, n=4, cancel_event=cancel, concurrency=1)
    outcomes = [i["outcome"] for i in result["items"]]
    assert outcomes == ["completed", "cancelled", "cancelled", "cancelled"]
    assert "duration" in result["items"][1]
    stub = result["items"][2]
    assert list(stub) == [
        "input",
        "annotations",
        "output",
        "error",
        "outcome",
        "accounting",
        "cost",
        "scorerCost",
        "scores",
    ]
    assert stub["error"] == "Cancelled"
    assert result["summary"]["failures"] == 3
    assert "itemErrorRate" not in result["summary"]


def test_budget_skips_and_interrupts_items() -> None:
    def workflow(inp: dict[str, Any], rt: Any) -> dict[str, Any]:
        call(0.006)
        if inp["n"] == 1:
            call(0.006)  # refused: the first item's call plus this one's first call closed it
        return {"output": inp["n"] * 2}

    result = run(workflow, n=4, budget="$0.01", concurrency=1)
    outcomes = [i["outcome"] for i in result["items"]]
    assert outcomes == ["completed", "budget_interrupted", "budget_skipped", "budget_skipped"]
    interrupted = result["items"][1]
    assert interrupted["error"] == "Budget interrupted" and interrupted["cost"] == 0.006
    assert interrupted["accounting"]["operations"]["denied"] == 1
    assert result["items"][2]["error"] == "Budget exceeded"
    budget = result["accounting"]["budget"]
    assert budget == {
        "limit": 0.01,
        "status": "closed",
        "knownSpend": 0.012,
        "knownOvershoot": 0.002,
        "closedBy": "operation",
    }
    assert result["summary"]["failures"] == 3


def test_zero_budget_on_an_uninstrumented_runtime_skips_everything() -> None:
    result = run(lambda i, rt: {"output": 0}, n=3, budget="$0", runtime=UninstrumentedRuntime())
    assert [i["outcome"] for i in result["items"]] == ["budget_skipped"] * 3
    assert result["accounting"]["budget"]["closedBy"] == "case"
    open_run = run(lambda i, rt: {"output": 0}, n=2, budget="$1", runtime=UninstrumentedRuntime())
    assert open_run["accounting"]["budget"]["status"] == "open"
    assert open_run["accounting"]["reasons"] == {"uninstrumented": 1}


def test_caller_claims_are_recorded_never_measured(capsys: pytest.CaptureFixture[str]) -> None:
    claims = [
        {"cost": 0.5, "metadata": {"models": ["fake"], "team": "x"}},
        {"cost": "free"},
        {"metadata": [1, 2]},
        {"cost": 0, "metadata": {}},
    ]

    def workflow(inp: dict[str, Any], rt: Any) -> dict[str, Any]:
        return {"output": inp["n"] * 2, **claims[inp["n"]]}

    result = run(workflow, n=4, concurrency=1)
    first = result["items"][0]
    assert first["callerReport"] == {"cost": 0.5, "metadata": {"models": ["fake"]}}
    assert first["metadata"] == {"team": "x"}
    assert "callerReport" not in result["items"][1] and "metadata" not in result["items"][2]
    assert result["items"][3]["callerReport"] == {"cost": 0}
    assert result["accounting"]["callerReported"] == {"costItems": 2, "costTotal": 0.5, "metadataItems": 1}
    assert result["totalCost"] == 0
    assert "models" not in result["metadata"]  # a caller cannot rewrite the roll-ups
    err = capsys.readouterr().err
    assert "ignoring invalid cost 'free'" in err and "ignoring execute_workflow metadata of type list" in err


def test_broken_workflow_contract_is_an_item_failure() -> None:
    result = run(lambda i, rt: "just text", n=1)
    item = result["items"][0]
    assert item["outcome"] == "failed"
    assert "must return a mapping with an output key" in item["error"]


def test_degraded_gate_zero_tolerance_for_deterministic() -> None:
    flaky = scorer("flaky", lambda o, i: 2 if i["n"] == 0 else 1)
    judge = Scorer(name="judge", score=lambda o, i: 2 if i["n"] < 2 else 1, is_llm=True)
    result = run(lambda i, rt: {"output": 0}, n=10, scorers=[flaky, judge], fail_on_scorer_error_rate=0.25)
    assert result["summary"]["degraded"] == [
        {"scorer": "flaky", "rate": 0.1, "limit": 0, "type": "deterministic", "scored": 9, "failed": 1}
    ]
    assert "degraded" not in run(lambda i, rt: {"output": 0}, n=2, scorers=[flaky])["summary"]


def test_progress_events_once_per_item_then_run_done() -> None:
    events: list[dict[str, Any]] = []
    lock = threading.Lock()

    def record(event: Any) -> None:
        with lock:
            events.append(dict(event))

    run(lambda i, rt: {"output": 0}, n=7, on_progress=record, concurrency=3)
    done = [e for e in events if e["type"] == "item_done"]
    assert sorted(e["itemIndex"] for e in done) == list(range(7))
    assert events[-1] == {"type": "run_done", "totalItems": 7, "failures": 0}


def test_results_keep_dataset_order_under_concurrency() -> None:
    import random
    import time

    def workflow(inp: dict[str, Any], rt: Any) -> dict[str, Any]:
        time.sleep(random.random() / 200)
        return {"output": inp["n"] * 2}

    result = run(workflow, n=40, concurrency=8)
    assert [i["input"]["n"] for i in result["items"]] == list(range(40))


def test_a_run_hands_every_object_it_set_aside_back_to_the_collector() -> None:
    """Objects older than the run and settled items are frozen out of the collector's passes
    while it runs (a thousand items at a time); none may stay frozen once it ended."""
    import gc

    before = gc.get_freeze_count()
    result = run(lambda inp, rt: {"output": inp["n"]}, n=2_500, concurrency=4)
    assert len(result["items"]) == 2_500
    assert gc.get_freeze_count() == before == 0


@pytest.mark.parametrize(
    ("requested", "n", "workers"),
    [(0, 5, 1), (float("nan"), 5, 1), (2.5, 5, 2), (64, 3, 3), (4, 0, 0), ("x", 2, 1)],
)
def test_pool_size_rule(requested: Any, n: int, workers: int) -> None:
    assert pool_size(requested, n) == workers


def test_shard_slices_by_index_modulo_and_stamps_metadata() -> None:
    assert shard_indices(7, (1, 3)) == [0, 3, 6]
    assert shard_indices(7, (3, 3)) == [2, 5]
    result = run(lambda i, rt: {"output": i["n"] * 2}, n=7, shard=(2, 3))
    assert [i["input"]["n"] for i in result["items"]] == [1, 4]
    assert result["metadata"]["shard"] == {"index": 2, "count": 3, "datasetItems": 7}
    assert result["metadata"]["fingerprint"]["datasetItems"] == 7


def test_fingerprint_is_stable_and_sensitive_to_scorers() -> None:
    a = run(lambda i, rt: {"output": 0}, n=3)["metadata"]["fingerprint"]
    b = run(lambda i, rt: {"output": 1}, n=3)["metadata"]["fingerprint"]
    c = run(lambda i, rt: {"output": 0}, n=3, scorers=[EXACT, scorer("other", lambda o: 1)])["metadata"][
        "fingerprint"
    ]
    assert a == b
    assert a["dataset"] == c["dataset"] and a["scorers"] != c["scorers"]
    assert c["scorerSet"] == {"exact": "deterministic", "other": "deterministic"}


def test_run_eval_returns_a_schema_result_that_round_trips() -> None:
    def workflow(inp: dict[str, Any], rt: Any) -> dict[str, Any]:
        call(0.001)
        if inp["n"] == 2:
            raise ValueError("broken")
        return {"output": inp["n"] * 2, "cost": 1}

    defn = define_eval(
        "wf", dataset("ds", items=items(5)), [EXACT], workflow, budget="$5", metadata={"team": "t"}
    )
    result = run_eval(defn, Runtime(), concurrency=2, scorers_filter=["exact"])
    assert isinstance(result, EvalResult)
    wire = result.to_wire()
    again = EvalResult.model_validate(wire).to_wire()
    assert dumps_js(again) == dumps_js(wire)
    assert wire["metadata"]["team"] == "t" and wire["metadata"]["scorerFiltered"] is True
    assert wire["metadata"]["scorersRun"] == ["exact"]
    assert [k for k in wire["summary"]] == [
        "count",
        "failures",
        "coverage",
        "scorers",
        "timing",
        "modelTiming",
        "itemErrorRate",
    ]


def test_describe_item_failure_edges() -> None:
    class Fake(Exception):
        code = "PROVIDER_ERROR"
        name = "ProviderError"
        status = 0
        provider = 5  # wrong type: dropped

    assert describe_item_failure(Fake()) == {"name": "ProviderError", "status": 0}
    assert describe_item_failure("a string") is None
    deep: BaseException = ValueError("root")
    for _ in range(12):
        nxt = KeyError("x")
        nxt.__cause__ = deep
        deep = nxt
    assert describe_item_failure(deep) == {"name": "KeyError"}
    cyclic = ValueError("a")
    cyclic.__cause__ = cyclic
    assert describe_item_failure(cyclic) == {"name": "ValueError"}


def test_async_workflows_are_measured() -> None:
    import asyncio

    async def workflow(inp: dict[str, Any], rt: Any) -> dict[str, Any]:
        await asyncio.sleep(0.001)
        call(0.002)
        return {"output": inp["n"] * 2}

    result = run(workflow, n=6, concurrency=3)
    assert [i["outcome"] for i in result["items"]] == ["completed"] * 6
    assert result["totalCost"] == pytest.approx(0.012)
    assert result["summary"]["scorers"]["exact"]["mean"] == 1


def test_a_hand_rolled_dataset_works() -> None:
    from axl_action.evals.definition import validate_definition

    class Numbers:
        name = "numbers"

        def get_items(self) -> list[dict[str, Any]]:
            return [{"input": {"n": 1}, "annotations": {"want": 2}}]

    defn = define_eval("wf", Numbers(), [EXACT], lambda i, rt: {"output": i["n"] * 2})  # type: ignore[arg-type]
    assert validate_definition(defn) is None
    result = execute_eval(defn, Runtime())
    assert result["dataset"] == "numbers" and result["summary"]["scorers"]["exact"]["mean"] == 1
    assert "droppedAnnotationKeys" not in result["metadata"]
    assert "without a name and a get_items() method" in str(
        validate_definition(define_eval("w", object(), [EXACT]))
    )  # type: ignore[arg-type]


@pytest.mark.parametrize("concurrency", [1, 4])
def test_failed_items_and_scorers_free_their_frames_without_the_cyclic_collector(concurrency: int) -> None:
    # A caught exception's traceback links every caller's frame, one of which holds the scope
    # that holds the exception: unless the runner drops it once the error is text, each failure
    # keeps its frames (and through the workers' frames the run's items) until a full collection.
    import gc
    import weakref

    class Marker:
        pass

    alive: list[weakref.ref[Marker]] = []

    def workflow(inp: dict[str, Any], rt: Any) -> dict[str, Any]:
        marker = Marker()
        alive.append(weakref.ref(marker))
        if inp["n"] % 2:
            raise ValueError(f"workflow fails on {inp['n']}")
        return {"output": inp["n"] * 2}

    def failing(output: Any) -> float:
        marker = Marker()
        alive.append(weakref.ref(marker))
        raise RuntimeError("scorer fails")

    gc.collect()
    gc.disable()
    try:
        result = run(workflow, n=6, scorers=[EXACT, scorer("failing", failing)], concurrency=concurrency)
        assert [i["outcome"] for i in result["items"]] == ["completed", "failed"] * 3
        assert result["items"][0]["scorerErrors"] == ['Scorer "failing" threw: scorer fails']
        assert len(alive) == 9 and all(ref() is None for ref in alive)
    finally:
        gc.enable()


class _Stop(BaseException):
    """What the CLI's hard stop is: a BaseException raised in the main thread."""


def _run_into_a_hard_stop(
    workflow: Any, on_settled: Any, on_abandoned: Any, after: Callable[[], None]
) -> None:
    """Run a two-item eval at concurrency 2 until SIGUSR1 (sent by the test's own code) raises
    the CLI's hard stop in the main thread; ``after`` runs before the handler is put back."""
    from axl_action.evals.continuation import Continuation
    from axl_action.evals.runner import execute_run

    def stop(_signum: int, _frame: Any) -> None:
        raise _Stop

    definition = define_eval("race", dataset("race", items=items(2)), [EXACT], execute_workflow=workflow)
    previous = signal.signal(signal.SIGUSR1, stop)
    try:
        with pytest.raises(_Stop):
            execute_run(
                definition,
                Runtime(),
                concurrency=2,
                continuation=Continuation(on_settled=on_settled, on_abandoned=on_abandoned),
            )
    finally:
        after()
        signal.signal(signal.SIGUSR1, previous)


def _main_thread() -> int:
    main = threading.main_thread().ident
    assert main is not None
    return main


def test_an_item_finishing_during_a_hard_stop_is_either_settled_or_abandoned_never_both() -> None:
    # Item 0 finishes right after the hard stop counted it in flight; item 1 is stuck. Before
    # the settle check, item 0 reached the journal (on_settled) after being counted abandoned,
    # so the CLI said "no result holds them" about an item the partial result held.
    counted = threading.Event()
    release = threading.Event()
    stuck = threading.Event()
    settled: list[int] = []
    abandoned: list[int] = []
    main = _main_thread()

    def workflow(value: Any, runtime: Any) -> Any:
        if value["n"] == 0:
            stuck.wait(10)
            signal.pthread_kill(main, signal.SIGUSR1)
            counted.wait(10)
        else:
            stuck.set()
            release.wait(10)
        return value["n"]

    def on_abandoned(n: int) -> None:
        abandoned.append(n)
        counted.set()

    def after() -> None:
        time.sleep(0.2)  # item 0's worker returns from its workflow and tries to settle
        release.set()

    _run_into_a_hard_stop(workflow, lambda index, item: settled.append(index), on_abandoned, after)
    # Never both: every started item is either counted abandoned or settled, once. On time,
    # the count is 2 and nothing settles; a machine so loaded that the signal lands after the
    # workflows' 10 s waits sees both settled and none abandoned, which is also "never both".
    assert len(abandoned) == 1 and len(settled) == len(set(settled))
    assert abandoned[0] + len(settled) == 2, (abandoned, settled)


def test_a_hard_stop_waits_for_a_settle_under_way_and_counts_that_item_settled() -> None:
    # The journal's work runs outside any lock (workers no longer queue on one): a hard stop
    # that lands while item 0 is being journaled must wait for that settle, so item 0 is
    # settled and only the stuck item 1 is counted in flight.
    release = threading.Event()
    stuck = threading.Event()
    settled: list[int] = []
    abandoned: list[int] = []
    main = _main_thread()

    def workflow(value: Any, runtime: Any) -> Any:
        if value["n"] == 1:
            stuck.set()
            release.wait(10)
        else:
            stuck.wait(10)
        return value["n"]

    def on_settled(index: int, item: dict[str, Any]) -> None:
        signal.pthread_kill(main, signal.SIGUSR1)  # the hard stop lands mid-settle
        time.sleep(0.3)  # a slow journal write
        settled.append(index)

    _run_into_a_hard_stop(workflow, on_settled, abandoned.append, release.set)
    assert settled == [0] and abandoned == [1]
