"""Result files survive a read-write round trip byte for byte."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from axl_action.schema import (
    EvalItem,
    EvalResult,
    coverage_of,
    is_budget_stopped,
    is_total_wipeout,
    load_result_file,
    read_accounting,
    result_json,
    run_view,
    write_result_file,
)

FIXTURES = Path(__file__).parents[2] / "fixtures"
LEGACY_FILES = sorted((FIXTURES / "axl-eval-0.16.1").glob("*.json"))
ALL_FILES = [*LEGACY_FILES, FIXTURES / "spec-0.24-example.json"]


@pytest.mark.parametrize("path", ALL_FILES, ids=lambda p: p.name)
def test_round_trip_is_byte_identical(path: Path, tmp_path: Path) -> None:
    original = path.read_text(encoding="utf-8")
    parsed = load_result_file(path)
    out = write_result_file(tmp_path / "out.json", parsed.results if parsed.is_list else parsed.results[0])
    assert out.read_text(encoding="utf-8") == original


def test_spec_example_reads_as_0_24(spec_example_path: Path) -> None:
    result = load_result_file(spec_example_path).results[0]
    assert not result.is_legacy
    assert result.accounting is not None and result.accounting.budget is not None
    assert result.accounting.budget.known_overshoot == 0.006999999999999999
    assert [i.outcome for i in result.items] == ["completed", "failed", "completed", "budget_skipped"]
    assert result.items[1].failure is not None and result.items[1].failure.status == 429
    assert is_budget_stopped(result)
    assert not is_total_wipeout(result)
    # absent keys stay absent, nulls stay null
    wire = result.to_wire()
    assert "annotations" in wire["items"][0] and "unpriced" not in wire["items"][0]
    assert wire["items"][2]["scores"]["judge"] is None


def test_legacy_file_reads_with_legacy_rules(legacy_dir: Path) -> None:
    result = load_result_file(legacy_dir / "math20-budget.json").results[0]
    assert result.is_legacy
    acc = read_accounting(result)
    assert acc.completeness == "unverified"
    assert acc.known_cost == result.total_cost
    assert acc.scope == "run"
    cov = coverage_of(run_view(result))
    # legacy "Budget exceeded" stubs have no outcome and read as failed
    stubs = sum(1 for i in result.items if i.error == "Budget exceeded")
    assert stubs > 0
    assert cov.items.failed >= stubs
    assert cov.items.completed + cov.items.failed == result.summary.count
    assert not is_budget_stopped(result)


def test_rescored_legacy_file_scope(legacy_dir: Path) -> None:
    result = load_result_file(legacy_dir / "math20-baseline-rescored-same.json").results[0]
    assert read_accounting(result).scope == "rescore"


def test_multi_run_file_is_a_list(legacy_dir: Path) -> None:
    parsed = load_result_file(legacy_dir / "math20-baseline-runs3.json")
    assert parsed.is_list and len(parsed.results) == 3


def test_unknown_fields_survive(tmp_path: Path) -> None:
    data = json.loads((FIXTURES / "spec-0.24-example.json").read_text())
    data["futureTopLevel"] = {"x": 1}
    data["items"][0]["futureItemKey"] = [1, 2]
    data["summary"]["scorers"]["exact"]["futureStat"] = 0.5
    path = tmp_path / "in.json"
    path.write_text(json.dumps(data))
    again = json.loads(result_json(load_result_file(path).results[0]))
    assert again["futureTopLevel"] == {"x": 1}
    assert again["items"][0]["futureItemKey"] == [1, 2]
    assert again["summary"]["scorers"]["exact"]["futureStat"] == 0.5


def test_built_stub_uses_reference_key_order() -> None:
    from axl_action.schema import Accounting

    item = EvalItem(
        input={"q": 1},
        output=None,
        error="Budget exceeded",
        outcome="budget_skipped",
        accounting=Accounting(),
        cost=0,
        scorer_cost=0,
        scores={},
    ).set_key_order(
        "input", "annotations", "output", "error", "outcome", "accounting", "cost", "scorer_cost", "scores"
    )
    assert list(item.to_wire()) == [
        "input",
        "output",
        "error",
        "outcome",
        "accounting",
        "cost",
        "scorerCost",
        "scores",
    ]


def test_result_model_accepts_snake_and_camel() -> None:
    r = EvalResult.model_validate(
        {
            "id": "a",
            "dataset": "d",
            "timestamp": "t",
            "totalCost": 0.5,
            "items": [],
            "summary": {"count": 0, "failures": 0, "scorers": {}},
        }
    )
    assert r.total_cost == 0.5
    assert r.to_wire()["totalCost"] == 0.5
