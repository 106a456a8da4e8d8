"""rescore() on real 0.16.1 legacy files and on 0.24 results produced by our runner (spec §17)."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest

from axl_action.errors import BudgetError
from axl_action.evals.dataset import dataset
from axl_action.evals.definition import define_eval
from axl_action.evals.llm_scorer import llm_scorer
from axl_action.evals.loader import load_eval_file
from axl_action.evals.rescore import RescoreOptions, execute_rescore, rescore
from axl_action.evals.runner import execute_eval
from axl_action.evals.scorer import scorer
from axl_action.providers.mock import MockProvider
from axl_action.runtime.runtime import Runtime, UninstrumentedRuntime
from axl_action.schema import (
    EvalResult,
    is_budget_stopped,
    load_result_file,
    parse_result_text,
    result_json,
)

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
LEGACY = FIXTURES / "axl-eval-0.16.1"
EVAL_FILE = FIXTURES / "evals" / "math20_rescore_eval.py"
MIRRORED = ("exact", "closeness", "flaky", "mul-only")


def math_scorers() -> list[Any]:
    [loaded] = load_eval_file(EVAL_FILE, require_workflow=False)
    return list(loaded.definition.scorers)


def legacy(name: str) -> EvalResult:
    return load_result_file(LEGACY / name).results[0]


def wire(result: EvalResult) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(result_json(result))
    return data


# --- legacy 0.16.1 source ---------------------------------------------------------------------


def test_legacy_rescore_matches_the_reference_rescore_of_the_same_scorers() -> None:
    source = legacy("math20-baseline.json")
    reference = wire(legacy("math20-baseline-rescored-same.json"))
    out = wire(rescore(source, math_scorers()))

    assert out["id"] != source.id and out["dataset"] == "math-20"
    for got, want in zip(out["items"], reference["items"], strict=True):
        if want.get("error"):
            continue
        for name in MIRRORED:
            assert got["scores"][name] == want["scores"][name]
            assert got["scoreDetails"][name]["score"] == want["scoreDetails"][name]["score"]
        assert got["scoreDetails"]["closeness"]["metadata"] == want["scoreDetails"]["closeness"]["metadata"]
        flaky_errors = [e for e in got.get("scorerErrors", []) if "flaky" in e]
        assert flaky_errors == [e for e in want.get("scorerErrors", []) if "flaky" in e]
    for name in MIRRORED:
        stats = {k: out["summary"]["scorers"][name][k] for k in ("mean", "min", "max", "p50", "p95")}
        assert stats == reference["summary"]["scorers"][name]


def test_legacy_rescore_shape_and_provenance() -> None:
    source = legacy("math20-baseline.json")
    out = wire(rescore(source, math_scorers()))

    assert list(out) == [
        "id", "dataset", "metadata", "timestamp", "totalCost", "accounting", "duration", "items", "summary",
    ]  # fmt: skip
    meta = out["metadata"]
    # Existing keys keep their place; rescored/originalId follow; scorerTypes are the new scorers'.
    assert list(meta) == [
        "variant",
        "generator",
        "scorerTypes",
        "workflows",
        "workflowCounts",
        "rescored",
        "originalId",
    ]
    assert meta["rescored"] is True and meta["originalId"] == source.id
    assert list(meta["scorerTypes"]) == ["exact", "closeness", "range", "flaky", "mul-only"]

    accounting = out["accounting"]
    assert accounting["scope"] == "rescore" and "budget" not in accounting
    # A legacy source has no record: the generation is unknown, never synthesized.
    assert accounting["source"] == {"runId": source.id, "generation": None}
    # The flaky scorer's self-reported $0.0005 is a claim; nothing measured was spent, and
    # the source's $0.043 is not added.
    assert accounting["knownCost"] == 0 and out["totalCost"] == 0
    assert accounting["completeness"] == "complete" and "unpriced" not in out

    summary = out["summary"]
    assert list(summary) == ["count", "failures", "coverage", "scorers", "timing"]
    assert summary["timing"] == wire(source)["summary"]["timing"]
    assert summary["count"] == 20 and summary["failures"] == 1
    assert summary["coverage"]["items"] == {
        "completed": 19, "failed": 1, "cancelled": 0, "budget_skipped": 0, "budget_interrupted": 0,
    }  # fmt: skip
    assert summary["coverage"]["scorers"]["flaky"]["failed"] == 3
    assert summary["scorers"]["flaky"]["scored"] == 16


def test_legacy_items_key_orders() -> None:
    out = wire(rescore(legacy("math20-baseline.json"), math_scorers()))
    failed = out["items"][7]
    assert list(failed) == [
        "input",
        "annotations",
        "output",
        "error",
        "accounting",
        "cost",
        "scorerCost",
        "scores",
    ]
    assert failed["error"] == "division by zero (id=7)" and failed["output"] is None
    assert failed["cost"] == 0 and failed["scorerCost"] == 0 and failed["scores"] == {}
    assert failed["accounting"]["knownCost"] == 0 and failed["accounting"]["operations"]["total"] == 0

    scored = out["items"][5]  # flaky throws on id 5
    assert list(scored) == [
        "input", "annotations", "output", "metadata", "outcome", "scores", "scoreDetails",
        "scorerErrors", "accounting", "cost", "scorerCost",
    ]  # fmt: skip
    assert scored["outcome"] == "completed"
    assert scored["scoreDetails"]["flaky"] == {"score": None, "duration": 0, "outcome": "failed"}
    assert "cost" not in scored["scoreDetails"]["flaky"]
    # Round trip: the written text parses back to the same text (orders survive).
    text = json.dumps(out)
    assert json.loads(result_json(parse_result_text(text).results[0])) == out


def test_uninstrumented_runtime_records_caller_costs_on_scorers() -> None:
    out = wire(rescore(legacy("math20-baseline.json"), math_scorers(), UninstrumentedRuntime()))
    assert out["items"][0]["scoreDetails"]["flaky"]["cost"] == 0.0005
    assert out["accounting"]["reasons"] == {"uninstrumented": 1}
    assert out["unpriced"] is True and out["items"][0]["unpriced"] is True


def test_batch_membership_is_not_inherited() -> None:
    source = load_result_file(LEGACY / "math20-baseline-runs3.json").results[1]
    assert "runGroupId" in source.metadata and source.metadata["runIndex"] == 1
    meta = wire(rescore(source, math_scorers()))["metadata"]
    assert "runGroupId" not in meta and "runIndex" not in meta


def test_pre_014_top_level_workflow_is_migrated() -> None:
    source = wire(legacy("tiny3-baseline.json"))
    source["metadata"].pop("workflows", None)
    source["metadata"].pop("workflowCounts", None)
    source["metadata"]["scorerFiltered"] = True
    source["metadata"]["scorersRun"] = ["x"]
    source["workflow"] = "tiny"
    out = wire(rescore(source, [scorer("one", lambda output: 1)]))
    meta = out["metadata"]
    assert meta["workflows"] == ["tiny"] and meta["workflowCounts"] == {"tiny": len(out["items"])}
    assert "scorerFiltered" not in meta and "scorersRun" not in meta


def test_cancelled_before_start_marks_every_item_cancelled_even_failed_ones() -> None:
    cancel = threading.Event()
    cancel.set()
    calls: list[Any] = []
    out = wire(
        rescore(
            legacy("math20-baseline.json"), [scorer("s", lambda o: calls.append(o) or 1)], cancel_event=cancel
        )
    )
    assert calls == []
    for item in out["items"]:
        assert list(item) == ["input", "annotations", "output", "error", "outcome", "accounting", "scores"]
        assert item["error"] == "cancelled" and item["outcome"] == "cancelled"
    assert out["items"][7]["output"] is None
    assert out["summary"]["coverage"]["items"]["cancelled"] == 20 and out["summary"]["failures"] == 20


def test_invalid_budget_raises_before_any_scoring() -> None:
    calls: list[Any] = []
    with pytest.raises(BudgetError):
        rescore(legacy("tiny3-baseline.json"), [scorer("s", lambda o: calls.append(o) or 1)], budget="1 USD")
    with pytest.raises(BudgetError):
        rescore(legacy("tiny3-baseline.json"), [scorer("s", lambda o: calls.append(o) or 1)], budget="")
    assert calls == []


# --- 0.24 sources produced by our runner ------------------------------------------------------

JUDGE_SYSTEM = "Grade the answer."


def generate(cost: float = 0.1) -> tuple[dict[str, Any], Runtime]:
    """A fresh 0.24 run: the workflow pays `cost` per call, item 3 fails, item 5 raises a
    provider-like error (with a failure cause)."""
    runtime = Runtime(
        providers={"gen": MockProvider(cost=cost, name="gen"), "paid": MockProvider(cost=0.004, name="paid")}
    )

    def workflow(n: int, rt: Any) -> dict[str, Any]:
        if n == 3:
            raise ValueError("no answer for 3")
        reply = rt.chat("gen:echo", [{"role": "user", "content": f"value {n}"}])
        return {"output": reply.text}

    definition = define_eval(
        "echo",
        dataset("numbers", items=[{"input": n, "annotations": {"n": n}} for n in range(8)]),
        [scorer("has-digit", lambda output: 1 if any(c.isdigit() for c in output) else 0)],
        execute_workflow=workflow,
        concurrency=2,
        metadata={"owner": "tests"},
    )
    return execute_eval(definition, runtime), runtime


def judge_scorers() -> list[Any]:
    return [
        llm_scorer("judge", "paid:judge", JUDGE_SYSTEM),
        scorer("length", lambda output: min(len(output), 10) / 10),
    ]


def test_runner_source_generation_provenance_and_timing() -> None:
    source, runtime = generate()
    out = wire(rescore(source, judge_scorers(), runtime, concurrency=1, scorer_concurrency=1))

    accounting = out["accounting"]
    assert accounting["source"]["runId"] == source["id"]
    assert accounting["source"]["generation"] == source["accounting"]  # verbatim, scope "run" included
    assert accounting["source"]["generation"]["scope"] == "run"
    # Only new judging: 7 completed items x one $0.004 judge call.
    assert accounting["breakdown"] == {"generation": 0, "judging": pytest.approx(0.028), "external": 0}
    assert accounting["operations"]["total"] == 7
    assert out["totalCost"] == accounting["knownCost"]
    assert source["accounting"]["knownCost"] == pytest.approx(0.7)

    summary = out["summary"]
    assert summary["timing"] == source["summary"]["timing"]
    assert summary["modelTiming"] == source["summary"]["modelTiming"] and "gen:echo" in summary["modelTiming"]
    assert "itemErrorRate" in source["summary"]
    assert "itemErrorRate" not in summary and "degraded" not in summary

    failed = out["items"][3]
    assert list(failed) == [
        "input", "annotations", "output", "error", "outcome", "failure", "accounting", "cost", "scorerCost", "scores",
    ]  # fmt: skip
    assert failed["outcome"] == "failed" and failed["error"] == "no answer for 3"
    assert failed["failure"] == source["items"][3]["failure"] == {"name": "ValueError"}

    item = out["items"][0]
    assert item["metadata"] == source["items"][0]["metadata"]
    assert "duration" not in item and "timing" not in item and "callerReport" not in item
    assert item["cost"] == 0 and item["scorerCost"] == pytest.approx(0.004)
    assert item["scoreDetails"]["judge"]["cost"] == pytest.approx(0.004)
    assert item["scoreDetails"]["judge"]["metadata"] == {"reasoning": "mock judge: every output passes"}
    assert "accounting" not in item["scoreDetails"]["length"]
    assert out["metadata"]["owner"] == "tests" and out["metadata"]["originalId"] == source["id"]


def test_failure_cause_is_carried_through() -> None:
    from axl_action.providers.errors import ProviderError

    def workflow(n: int, rt: Any) -> dict[str, Any]:
        if n == 1:
            raise ProviderError("rate limited", provider="openai", status=429, retryable=True)
        return {"output": str(n)}

    definition = define_eval(
        "w",
        dataset("d", items=[{"input": n} for n in range(3)]),
        [scorer("s", lambda o: 1)],
        execute_workflow=workflow,
    )
    source = execute_eval(definition, Runtime())
    assert "failure" in source["items"][1]
    out = wire(rescore(source, [scorer("t", lambda o: 0.5)]))
    passed = out["items"][1]
    assert passed["failure"] == source["items"][1]["failure"] and passed["outcome"] == "failed"
    assert list(passed).index("failure") == list(passed).index("outcome") + 1
    assert "annotations" not in passed  # absent in the source stays absent


def test_rescore_of_a_rescore_keeps_the_original_generation() -> None:
    source, runtime = generate()
    first = wire(rescore(source, judge_scorers(), runtime))
    second = wire(rescore(first, [scorer("length", lambda output: 0.5)], runtime))
    assert second["accounting"]["source"] == {"runId": first["id"], "generation": source["accounting"]}
    assert second["metadata"]["originalId"] == first["id"]
    assert second["summary"]["timing"] == source["summary"]["timing"]
    assert second["accounting"]["knownCost"] == 0  # deterministic only, nothing measured
    # A rescore of a legacy source keeps the unknown generation as null.
    legacy_first = wire(rescore(legacy("tiny3-baseline.json"), [scorer("one", lambda o: 1)]))
    legacy_second = wire(rescore(legacy_first, [scorer("one", lambda o: 1)]))
    assert legacy_second["accounting"]["source"]["generation"] is None


def test_budget_gates_only_new_judging_spend() -> None:
    source, runtime = generate(cost=0.1)  # the source spent $0.70, far over the limit
    out = wire(rescore(source, judge_scorers(), runtime, concurrency=1, scorer_concurrency=1, budget="$0.01"))

    budget = out["accounting"]["budget"]
    assert budget["limit"] == 0.01 and budget["status"] == "closed"
    assert budget["knownSpend"] == pytest.approx(0.012) and budget["knownOvershoot"] == pytest.approx(0.002)
    assert budget["closedBy"] == "scorer"
    judges = [i["scoreDetails"]["judge"]["outcome"] for i in out["items"] if "scoreDetails" in i]
    assert judges == ["scored"] * 3 + ["budget_skipped"] * 4
    # Deterministic scorers still run after closure, and no item is skipped at case level.
    assert all(
        i["scoreDetails"]["length"]["outcome"] == "scored" for i in out["items"] if "scoreDetails" in i
    )
    items = out["summary"]["coverage"]["items"]
    assert items["budget_skipped"] == 0 and items["completed"] == 7 and items["failed"] == 1
    assert out["items"][3]["cost"] == 0 and out["items"][3]["scorerCost"] == 0
    assert out["summary"]["coverage"]["scorers"]["judge"]["budget_skipped"] == 4
    assert is_budget_stopped(EvalResult.model_validate(out))


def test_zero_budget_skips_judges_without_a_closure_observation() -> None:
    source, runtime = generate()
    out = wire(rescore(source, [llm_scorer("judge", "paid:judge", JUDGE_SYSTEM)], runtime, budget="$0"))
    budget = out["accounting"]["budget"]
    assert budget["status"] == "closed" and budget["knownSpend"] == 0 and "closedBy" not in budget
    assert out["accounting"]["operations"]["total"] == 0
    assert out["summary"]["coverage"]["scorers"]["judge"]["budget_skipped"] == 7
    assert is_budget_stopped(EvalResult.model_validate(out))


def test_deterministic_scorer_refused_after_closure_is_interrupted_by_operation() -> None:
    source, runtime = generate()

    def sneaky(output: Any, input_: Any, annotations: Any, context: Any) -> float:
        context.runtime.chat("paid:x", [{"role": "user", "content": "hi"}])
        return 1.0

    out = wire(rescore(source, [scorer("sneaky", sneaky)], runtime, budget="$0"))
    assert out["accounting"]["budget"]["closedBy"] == "operation"
    details = [i["scoreDetails"]["sneaky"] for i in out["items"] if "scoreDetails" in i]
    assert {d["outcome"] for d in details} == {"budget_interrupted"}
    assert out["accounting"]["operations"]["denied"] >= 7 and out["accounting"]["knownCost"] == 0


def test_open_budget_is_reported_open() -> None:
    source, runtime = generate()
    out = wire(rescore(source, judge_scorers(), runtime, budget="$5"))
    budget = out["accounting"]["budget"]
    assert budget["status"] == "open" and "closedBy" not in budget
    assert not is_budget_stopped(EvalResult.model_validate(out))
    assert list(out["accounting"])[-3:] == ["scope", "source", "budget"]


def test_capture_refs_point_at_judge_calls(tmp_path: Path) -> None:
    from axl_action.providers.capture import CaptureSink

    source, runtime = generate()
    sink = CaptureSink(tmp_path / "r.requests.jsonl")
    out = execute_rescore(source, judge_scorers(), runtime, RescoreOptions(capture=sink))
    assert out["diagnostics"]["status"] == "complete" and out["diagnostics"]["records"] == 7
    records = {
        json.loads(line)["operationId"]: json.loads(line)
        for line in (tmp_path / "r.requests.jsonl").read_text().splitlines()
    }
    for index, item in enumerate(out["items"]):
        if index == 3:
            assert "scoreDetails" not in item
            continue
        # The source's generation refs are not carried (its records were not copied).
        assert "diagnostics" not in item
        [ref] = item["scoreDetails"]["judge"]["diagnostics"]["operations"]
        record = records[ref["operationId"]]
        assert record["caseIndex"] == index and record["scorer"] == "judge"


@pytest.mark.parametrize("name", sorted(p.name for p in LEGACY.glob("*.json")))
def test_every_legacy_fixture_rescores_to_a_consistent_result(name: str) -> None:
    for source in load_result_file(LEGACY / name).results:
        out = wire(rescore(source, [scorer("nonnull", lambda output: 0 if output is None else 1)]))
        coverage = out["summary"]["coverage"]["items"]
        assert sum(coverage.values()) == out["summary"]["count"] == len(out["items"]) == len(source.items)
        assert out["summary"]["failures"] == sum(v for k, v in coverage.items() if k != "completed")
        assert out["summary"]["failures"] == sum(1 for i in source.items if i.error)
        scorer_cov = out["summary"]["coverage"]["scorers"]["nonnull"]
        assert scorer_cov["scored"] == coverage["completed"]
        assert out["accounting"]["knownCost"] == 0 and out["accounting"]["source"]["runId"] == source.id
        # Schema-valid and stable through a write/read cycle.
        text = result_json(parse_result_text(json.dumps(out)).results[0])
        assert json.loads(text) == out
