"""The pass rule (``schema.view.pass_counts``) and the ``pass-rate`` gate built on it."""

from __future__ import annotations

from typing import Any

import pytest

from axl_action import values
from axl_action.compare.gates import pass_rate_gate
from axl_action.schema.itempass import ItemShapeError
from axl_action.schema.view import PassCounts, item_columns, pass_counts


def scored(score: float | None, outcome: str = "scored") -> dict[str, Any]:
    return {
        "outcome": "completed",
        "scores": {"s": score},
        "scoreDetails": {"s": {"score": score, "outcome": outcome}},
    }


FAILED_WORKFLOW = {"outcome": "failed", "error": "boom", "scores": {}}
CANCELLED = {"outcome": "cancelled", "error": "Cancelled", "scores": {}}
BUDGET = {"outcome": "budget_skipped", "error": "Budget exceeded", "scores": {}}


def test_each_row_of_the_rule() -> None:
    items = [
        scored(1.0),  # passed
        scored(0.5),  # passed: at the pass score
        scored(0.49),  # tried, not passed
        scored(None, "failed"),  # the scorer failed: tried, not passed
        scored(None, "skipped"),  # N/A: not counted
        FAILED_WORKFLOW,  # tried, not passed
        CANCELLED,  # not counted
        BUDGET,  # not counted
        {"input": 1, "error": "legacy failure", "scores": {}},  # a legacy error: tried
    ]
    columns = item_columns(items, ["s"])
    assert pass_counts(columns, "s") == PassCounts(passed=2, tried=6)
    assert pass_counts(columns, "s", pass_score=0.4) == PassCounts(passed=3, tried=6)
    assert pass_counts(columns, "other") == PassCounts(passed=0, tried=2)  # the two failures


def test_repeats_count_one_try_each_and_replace_the_item() -> None:
    item = scored(0.667)
    item["repeats"] = [scored(1.0), FAILED_WORKFLOW, scored(1.0), CANCELLED, scored(0.0)]
    columns = item_columns([item, scored(1.0)], ["s"])
    assert pass_counts(columns, "s") == PassCounts(passed=3, tried=5)  # 2 of 4 tries + the plain item
    assert PassCounts(3, 4).rate == 0.75 and PassCounts().rate is None


def test_repeats_of_the_wrong_shape_name_the_path() -> None:
    with pytest.raises(ItemShapeError, match=r"items\[0\]\.repeats: expected a list of objects"):
        item_columns([{"scores": {}, "repeats": [1, 2]}], ["s"])
    with pytest.raises(ItemShapeError, match=r"items\[0\]\.repeats\[0\]\.scores\.s: expected a number"):
        item_columns([{"scores": {}, "repeats": [{"scores": {"s": 7}}]}], ["s"])
    # All repeats are checked in one pass; the path still names the item and the repeat.
    fine = {"scores": {}, "repeats": [{"scores": {"s": 1}}, {"scores": {"s": 0}}]}
    bad = {"scores": {}, "repeats": [{"scores": {"s": 1}}, {"outcome": "done"}]}
    with pytest.raises(ItemShapeError, match=r"^items\[2\]\.repeats\[1\]\.outcome: expected one of"):
        item_columns([fine, {"scores": {}}, bad], ["s"])


def _view(items: list[dict[str, Any]]) -> Any:
    from axl_action.schema.view import wire_view

    result = {
        "id": "r", "dataset": "d", "metadata": {"scorerTypes": {"s": "deterministic", "t": "deterministic"}},
        "timestamp": "2026-01-01T00:00:00.000Z", "totalCost": 0, "duration": 1, "items": items,
        "summary": {"count": len(items), "failures": 0, "scorers": {"s": {"mean": 0, "min": 0, "max": 0,
                    "p50": 0, "p95": 0}, "t": {"mean": 0, "min": 0, "max": 0, "p50": 0, "p95": 0}}},
    }  # fmt: skip
    return wire_view(result, item_columns(items, ["s", "t"]))


def test_the_gate_passes_fails_and_refuses() -> None:
    both = [{"outcome": "completed", "scores": {"s": 1.0, "t": 0.0}}] * 9 + [
        {"outcome": "completed", "scores": {"s": 0.0, "t": 0.0}}
    ]
    run = _view(both)
    gate = pass_rate_gate([run], 0.9)
    assert gate.status == "fail" and gate.observed == 0.0
    assert gate.message == "Pass rate (score >= 0.5): t 0.0% (0/10) below 90%."
    ok = pass_rate_gate([run], {"s": 0.9, "missing": 0.5})
    assert ok.status == "pass"
    assert ok.message == "Pass rate (score >= 0.5): s 90.0% (9/10) at or above 90%."
    assert ok.details == ["--min-pass-rate names scorer(s) not in the candidate: missing"]
    assert pass_rate_gate([run, run], {"s": 0.95}).message.endswith("s 90.0% (18/20) below 95%.")
    bare = _view([CANCELLED])
    assert pass_rate_gate([bare], 0.5).status == "refused"


def test_the_floor_grammar() -> None:
    assert values.pass_rates("0.9") == 0.9
    assert values.pass_rates("accuracy=0.95, tone=.8\n") == {"accuracy": 0.95, "tone": 0.8}
    for bad in ("1.5", "accuracy=2", "accuracy", "=0.5", "x=abc", ""):
        with pytest.raises(ValueError):
            values.pass_rates(bad)
