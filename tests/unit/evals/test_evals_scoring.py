"""The scoring loop: every scorer outcome and the exact scorerErrors messages (spec §4.2, §6.2)."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

from axl_action.evals.dataset import dataset
from axl_action.evals.definition import define_eval
from axl_action.evals.runner import execute_eval
from axl_action.evals.scorer import Scorer, scorer
from axl_action.runtime.runtime import Runtime, UninstrumentedRuntime
from axl_action.runtime.scope import AbortError, open_operation
from axl_action.schema import write_result_file


def run_one(scorers: list[Scorer], output: Any = "out", input_: Any = None, **kw: Any) -> dict[str, Any]:
    runtime = kw.pop("runtime", None) or Runtime()
    items = [{"input": input_ if input_ is not None else {"q": 1}, "annotations": {"a": 1}}]
    defn = define_eval("wf", dataset("d", items=items), scorers, lambda i, rt: {"output": output}, **kw)
    result = execute_eval(defn, runtime)
    item: dict[str, Any] = result["items"][0]
    return item


def test_scored_values_are_rounded_half_up_and_keys_follow_the_list() -> None:
    def slow(o: Any) -> float:
        time.sleep(0.05)
        return 0.1235

    judge = Scorer(name="slow", score=slow, is_llm=True)  # runs on the fan-out pool
    item = run_one([judge, scorer("fast", lambda o: 1), scorer("zero", lambda o: 0)])
    assert list(item["scores"]) == ["slow", "fast", "zero"]
    assert item["scores"] == {"slow": 0.124, "fast": 1, "zero": 0}
    assert item["scoreDetails"]["slow"]["outcome"] == "scored"
    assert list(item["scoreDetails"]["fast"]) == ["score", "duration", "outcome"]
    assert "scorerErrors" not in item


def test_whole_scores_are_stored_as_the_ints_a_reader_of_the_file_gets(tmp_path: Path) -> None:
    # 1.0, 1, 0.9996 and 0.0004 are whole once rounded; a results file says 1 and 0 for them,
    # and the run held in memory carries the same values with the same types.
    returned = [1.0, 1, 0.9996, 0.0004, 0.0, 0.5, 0.1235, {"score": 1.0}, {"score": 0.0}]

    def returning(value: Any) -> Any:
        return lambda output: value

    scorers = [scorer(f"s{i}", returning(v)) for i, v in enumerate(returned)]
    item = run_one(scorers)
    assert item["scores"] == {
        "s0": 1,
        "s1": 1,
        "s2": 1,
        "s3": 0,
        "s4": 0,
        "s5": 0.5,
        "s6": 0.124,
        "s7": 1,
        "s8": 0,
    }
    path = tmp_path / "r.json"
    write_result_file(path, {"items": [item]})
    read = json.loads(path.read_text(encoding="utf-8"))["items"][0]
    for name, value in item["scores"].items():
        for stored, back in (
            (value, read["scores"][name]),
            (item["scoreDetails"][name]["score"], read["scoreDetails"][name]["score"]),
        ):
            assert (stored, type(stored)) == (back, type(back)), name
    assert '"s0": 1,' in path.read_text(encoding="utf-8")


def test_out_of_range_messages_use_js_number_text() -> None:
    item = run_one(
        [
            scorer("seven", lambda o: 7),
            scorer("nan", lambda o: float("nan")),
            scorer("neg", lambda o: -0.5),
            scorer("missing", lambda o: {"metadata": {"why": "no score"}}),
            scorer("text", lambda o: "high"),
            scorer("null", lambda o: {"score": None}),
            scorer("inf", lambda o: float("inf")),
        ],
        input_={"question": "é?"},
    )
    assert item["scorerErrors"] == [
        'Scorer "seven" returned out-of-range score 7 for input {"question":"é?"}',
        'Scorer "nan" returned out-of-range score NaN for input {"question":"é?"}',
        'Scorer "neg" returned out-of-range score -0.5 for input {"question":"é?"}',
        'Scorer "missing" returned out-of-range score undefined for input {"question":"é?"}',
        'Scorer "text" returned out-of-range score undefined for input {"question":"é?"}',
        'Scorer "null" returned out-of-range score null for input {"question":"é?"}',
        'Scorer "inf" returned out-of-range score Infinity for input {"question":"é?"}',
    ]
    assert all(d["outcome"] == "failed" and d["score"] is None for d in item["scoreDetails"].values())
    assert item["scoreDetails"]["missing"]["metadata"] == {"why": "no score"}


def test_long_inputs_are_cut_at_200_characters() -> None:
    item = run_one([scorer("s", lambda o: 2)], input_={"text": "x" * 500})
    message = item["scorerErrors"][0]
    described = message.split(" for input ", 1)[1]
    assert len(described) == 201 and described.endswith("…")


def test_throwing_scorers_and_applies() -> None:
    def boom(o: Any) -> float:
        raise ValueError("bad output")

    def bad_applies(o: Any) -> bool:
        raise KeyError("label")

    item = run_one(
        [
            scorer("boom", boom),
            scorer("guard", lambda o: 1, applies=bad_applies),
            scorer("none", lambda o: None),
        ]
    )
    assert item["scorerErrors"] == [
        'Scorer "boom" threw: bad output',
        "Scorer \"guard\" threw: 'label'",
        'Scorer "none" threw: score() returned None',
    ]
    assert item["scoreDetails"]["guard"]["outcome"] == "failed"
    assert "duration" in item["scoreDetails"]["guard"]


def test_applies_falsy_skips_without_running_the_body() -> None:
    calls: list[int] = []
    item = run_one([scorer("s", lambda o: calls.append(1) or 1, applies=lambda o, i, a: 0)])
    assert item["scoreDetails"]["s"] == {"score": None, "skipped": True, "outcome": "skipped"}
    assert calls == []


def test_scorer_signature_may_take_fewer_arguments() -> None:
    seen: list[Any] = []

    def full(output: Any, input_: Any, annotations: Any, context: Any) -> float:
        seen.append((output, input_, annotations, context.cancelled))
        return 1

    item = run_one([scorer("full", full), scorer("two", lambda o, i: 1)])
    assert item["scores"] == {"full": 1, "two": 1}
    assert seen == [("out", {"q": 1}, {"a": 1}, False)]


def test_abort_error_from_a_scorer_is_cancelled_not_failed() -> None:
    def stop(o: Any) -> float:
        raise AbortError("stopped")

    item = run_one([scorer("s", stop)])
    assert item["scoreDetails"]["s"]["outcome"] == "cancelled"
    assert "duration" in item["scoreDetails"]["s"]
    assert "scorerErrors" not in item


def test_llm_scorer_is_budget_skipped_and_deterministic_one_is_interrupted() -> None:
    def workflow(i: Any, rt: Any) -> dict[str, Any]:
        op = open_operation("chat", model="fake:gen")
        op.before_dispatch()
        op.settle(0.02, {"inputTokens": 5}, "price_table_estimate")  # closes the $0.01 budget
        return {"output": "x"}

    def paying(o: Any) -> float:
        open_operation("tool")  # refused: the budget is closed
        return 1

    judge = Scorer(name="judge", score=lambda o: 1, is_llm=True)
    defn = define_eval(
        "wf",
        dataset("d", items=[{"input": 1}]),
        [judge, scorer("paying", paying), scorer("plain", lambda o: 1)],
        workflow,
        budget="$0.01",
    )
    result = execute_eval(defn, Runtime())
    item = result["items"][0]
    assert item["outcome"] == "completed"
    assert item["scoreDetails"]["judge"] == {"score": None, "outcome": "budget_skipped"}
    paying_detail = item["scoreDetails"]["paying"]
    assert paying_detail["outcome"] == "budget_interrupted"
    assert paying_detail["accounting"]["operations"]["denied"] == 1
    assert paying_detail["cost"] == 0
    assert item["scoreDetails"]["plain"]["outcome"] == "scored"
    budget = result["accounting"]["budget"]
    assert budget["status"] == "closed" and budget["closedBy"] == "case"
    cov = result["summary"]["coverage"]["scorers"]
    assert cov["judge"]["budget_skipped"] == 1 and cov["paying"]["budget_interrupted"] == 1


def test_judge_cost_is_measured_on_an_instrumented_runtime() -> None:
    def judge_score(o: Any) -> dict[str, Any]:
        op = open_operation("chat", model="fake:judge")
        op.before_dispatch()
        op.settle(0.003, {"inputTokens": 300, "outputTokens": 20}, "price_table_estimate")
        return {"score": 0.8, "metadata": {"reasoning": "ok"}, "cost": 99}

    judge = Scorer(name="judge", score=judge_score, is_llm=True)
    item = run_one([judge, scorer("exact", lambda o: 1)])
    detail = item["scoreDetails"]["judge"]
    assert list(detail) == ["score", "metadata", "duration", "accounting", "cost", "outcome"]
    assert detail["cost"] == 0.003  # the claimed 99 is ignored
    assert item["scorerCost"] == 0.003 and item["cost"] == 0
    assert "accounting" not in item["scoreDetails"]["exact"]


def test_caller_cost_is_used_only_on_an_uninstrumented_runtime() -> None:
    judge = Scorer(name="judge", score=lambda o: {"score": 1, "cost": 0.5}, is_llm=True)
    item = run_one([judge], runtime=UninstrumentedRuntime())
    assert item["scoreDetails"]["judge"]["cost"] == 0.5
    assert item["accounting"]["reasons"] == {"uninstrumented": 1}
    assert item["unpriced"] is True


def test_cancelled_before_start_marks_remaining_scorers() -> None:
    cancel = threading.Event()

    def first(o: Any) -> float:
        cancel.set()
        return 1

    defn = define_eval(
        "wf",
        dataset("d", items=[{"input": 1}]),
        [scorer("a", first), scorer("b", lambda o: 1)],
        lambda i, rt: {"output": 1},
    )
    item = execute_eval(defn, Runtime(), cancel_event=cancel)["items"][0]
    assert item["outcome"] == "completed"
    assert item["scoreDetails"]["b"] == {"score": None, "outcome": "cancelled"}
