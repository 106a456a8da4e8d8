"""``repeats: auto`` in the runner (``evals/sequential.py``; docs/gates.md, "Sequential
repeats"): which items run again, when the rounds stop, what the result records, and how
compare reads it back. The error-rate simulations are in ``test_sequential_simulation.py``."""

from __future__ import annotations

import random
import threading
from dataclasses import replace
from typing import Any

import pytest

from axl_action.compare.console import format_compare
from axl_action.compare.engine import CompareOptions, compare_results
from axl_action.compare.gates import describe_sequential
from axl_action.evals.dataset import dataset
from axl_action.evals.definition import define_eval
from axl_action.evals.runner import RunRecord, execute_run, plan_run
from axl_action.evals.scorer import scorer
from axl_action.evals.sequential import SequentialPlan
from axl_action.providers.types import CallTiming
from axl_action.runtime.runtime import Runtime
from axl_action.runtime.scope import open_operation
from axl_action.schema import EvalResult, SequentialRecord
from axl_action.schema.jsonio import dumps_js

NOISY = 10
"""Items 0..9 answer at random; items 10.. always the same."""
ITEMS = 40

A = scorer("a", lambda o, i, ann: o["a"])
B = scorer("b", lambda o, i, ann: o["b"])


class Workload:
    """Calls per item, and answers that are random on the noisy items."""

    def __init__(self, seed: int, p: float = 0.5) -> None:
        self.calls: dict[int, int] = {}
        self.lock = threading.Lock()
        self.rng = random.Random(seed)
        self.p = p

    def __call__(self, inp: dict[str, Any], rt: Any) -> dict[str, Any]:
        n = inp["n"]
        with self.lock:
            self.calls[n] = self.calls.get(n, 0) + 1
            draw = self.rng.random()
        if n < NOISY:
            score = 1.0 if draw < self.p else 0.0
        else:
            score = float(n % 2)
        return {"output": {"a": score, "b": score}}


def _definition(workflow: Workload, **kw: Any) -> Any:
    items = [{"input": {"id": f"q{k}", "n": k}} for k in range(ITEMS)]
    return define_eval("wf", dataset("ds", items=items), [A, B], workflow, **kw)


def _baseline(seed: int = 1, repeats: int = 5) -> RunRecord:
    return execute_run(_definition(Workload(seed), repeats=repeats), Runtime(), concurrency=4)


def _auto(workflow: Workload, baseline: list[Any], **plan: Any) -> RunRecord:
    definition = _definition(workflow)
    sequential = SequentialPlan(baseline=baseline, seed=3, **plan)
    return execute_run(
        definition, Runtime(), concurrency=4, plan=replace(plan_run(definition), sequential=sequential)
    )


def _record(run: RunRecord) -> SequentialRecord:
    record = run.view.header.sequential
    assert record is not None
    return record


def test_only_items_the_baseline_shows_noisy_run_again() -> None:
    base = _baseline()
    work = Workload(seed=2)
    # Threshold 0: no scorer can be called unchanged, so the noisy items run to the cap.
    run = _auto(work, [base.view], thresholds=0.0, max_repeats=4)
    record = _record(run)
    varied = {
        i for i in range(NOISY) if len({r["scores"]["a"] for r in base.wire["items"][i]["repeats"]}) > 1
    }
    assert varied, "the seed gives the baseline noisy items"
    assert {i for i, n in work.calls.items() if n > 1} == varied
    assert all(work.calls[i] == 4 for i in varied)
    assert all(work.calls[i] == 1 for i in range(ITEMS) if i not in varied)
    assert record.repeats_run == sum(work.calls.values())
    assert record.mean_repeats == round(sum(work.calls.values()) / ITEMS, 3)
    assert record.looks == 4 and record.max_repeats == 4 and record.look_alpha == pytest.approx(0.05 / 4)
    # An item that ran again keeps its repeats, so the pass rate counts each try; one that ran
    # once is that run, as without repeats.
    assert [len(item.get("repeats", [item])) for item in run.wire["items"]] == [
        work.calls[i] for i in range(ITEMS)
    ]
    assert all("repeats" not in item for i, item in enumerate(run.wire["items"]) if work.calls[i] == 1)


def test_a_decided_verdict_stops_the_rounds() -> None:
    base = _baseline()
    # The candidate answers as the baseline does on average: with a wide threshold the first
    # look already sees the whole interval inside it.
    work = Workload(seed=2)
    run = _auto(work, [base.view], thresholds=0.5)
    record = _record(run)
    assert record.looks == 1 and record.open == []
    assert {d.verdict for d in record.decided.values()} == {"unchanged"}
    assert sum(work.calls.values()) == ITEMS
    assert describe_sequential(record) == "decided after 1.0 repeats per item on average (cap 5)"


def test_a_decided_scorer_keeps_the_mean_of_the_look_that_decided_it() -> None:
    base = _baseline()
    work = Workload(seed=4)
    run = _auto(work, [base.view], thresholds={"a": 0.5, "b": 0.0}, max_repeats=3)
    record = _record(run)
    assert record.decided["a"].look == 1 and "b" in record.open
    repeated = [item for item in run.wire["items"] if len(item.get("repeats", [])) == 3]
    assert repeated
    for item in repeated:
        tries = [r["scores"] for r in item["repeats"]]
        assert item["scores"]["a"] == tries[0]["a"]  # frozen at look 1
        assert item["scores"]["b"] == round(sum(t["b"] for t in tries) / 3, 3)
    assert "still open at the cap: b" in describe_sequential(record)


def test_without_a_baseline_every_item_runs_the_cap() -> None:
    work = Workload(seed=2)
    run = _auto(work, [], max_repeats=3)
    record = _record(run)
    assert set(work.calls.values()) == {3}
    assert record.baseline is False and record.decided == {}
    assert describe_sequential(record).endswith("repeats auto had no baseline to decide against")


def test_a_baseline_that_ran_once_cannot_tell_noisy_items_so_all_may_run_again() -> None:
    base = _baseline(repeats=1)
    work = Workload(seed=2)
    _auto(work, [base.view], thresholds=0.0, max_repeats=2)
    assert set(work.calls.values()) == {2}


def test_a_closed_budget_ends_the_rounds() -> None:
    base = _baseline()

    class Paid(Workload):
        def __call__(self, inp: dict[str, Any], rt: Any) -> dict[str, Any]:
            op = open_operation("chat", model="openai:gpt-4o-mini")
            op.before_dispatch()
            op.record_timing("openai:gpt-4o-mini", CallTiming(wire_ms=1))
            op.settle(0.01, {"inputTokens": 1, "outputTokens": 1}, "price_table_estimate")
            return super().__call__(inp, rt)

    work = Paid(seed=2)
    definition = _definition(work, budget="$0.35")
    sequential = SequentialPlan(baseline=[base.view], thresholds=0.0, seed=3)
    run = execute_run(
        definition, Runtime(), concurrency=1, plan=replace(plan_run(definition), sequential=sequential)
    )
    record = _record(run)
    assert record.looks == 1 and record.open == ["a", "b"]
    assert sum(work.calls.values()) <= ITEMS


def test_compare_reads_the_level_the_rounds_spent() -> None:
    base = _baseline()
    run = _auto(Workload(seed=2), [base.view], thresholds=0.5)
    comparison = compare_results([base.view], run.view, CompareOptions(thresholds=0.5, seed=1))
    assert comparison.alpha == pytest.approx(0.01)
    assert "CI 99%" in format_compare(comparison)
    plain = compare_results([base.view], base.view, CompareOptions(seed=1))
    assert plain.alpha == 0.05 and "CI 95%" in format_compare(plain)


def test_the_result_stays_readable_and_a_bad_record_is_refused() -> None:
    base = _baseline()
    run = _auto(Workload(seed=2), [base.view], thresholds=0.5)
    text = dumps_js(run.wire)
    parsed = EvalResult.model_validate_json(text)
    assert parsed.sequential == _record(run)
    bad = dict(run.wire, metadata={**run.wire["metadata"], "sequential": {"maxRepeats": 0}})
    with pytest.raises(ValueError, match="sequential"):
        EvalResult.model_validate_json(dumps_js(bad))


def test_rescore_folds_a_decided_scorer_over_the_repeats_its_look_saw() -> None:
    from axl_action.evals.rescore import execute_rescore

    base = _baseline()
    run = _auto(Workload(seed=4), [base.view], thresholds={"a": 0.5, "b": 0.0}, max_repeats=3)
    assert _record(run).decided["a"].look == 1
    out = execute_rescore(run.wire, [A, B])
    for before, after in zip(run.wire["items"], out["items"], strict=True):
        assert after["scores"] == before["scores"], "the same scorers give the same means"
    assert out["metadata"]["sequential"] == run.wire["metadata"]["sequential"]
