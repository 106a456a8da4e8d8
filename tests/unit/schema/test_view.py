"""The run view's counting rules, over 0.24 items, legacy items and the runner's own runs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from axl_action.cli.main import main
from axl_action.evals.dataset import dataset
from axl_action.evals.definition import define_eval
from axl_action.evals.runner import execute_run
from axl_action.evals.scorer import scorer
from axl_action.runtime.runtime import Runtime
from axl_action.schema import (
    ItemColumns,
    RunView,
    coverage_of,
    item_columns,
    item_coverage,
    load_result_file,
    load_run_views,
    parse_run_views,
    run_view,
    sample_counts,
    write_result_file,
)

LEGACY = Path(__file__).parent.parent.parent / "fixtures" / "axl-eval-0.16.1"


def counts(items: list[dict[str, Any]], name: str = "s") -> tuple[int, int, int]:
    c = sample_counts(item_columns(items, [name]), name)
    return c.scored, c.failed, c.skipped


def test_legacy_scores_without_score_details_count_as_scored() -> None:
    assert counts([{"scores": {"s": 0.5}}, {"scores": {"s": 1}}]) == (2, 0, 0)


def test_legacy_heuristic_order() -> None:
    items = [
        {"scores": {"s": None}, "scoreDetails": {"s": {"score": None, "skipped": True}}},
        {"scores": {"s": None}, "scoreDetails": {"s": {"score": None, "duration": 3}}},
        {"scores": {"s": None}, "scoreDetails": {"s": {"score": None, "duration": None}}},
        {"scores": {"s": None}},
        {"scores": None},
    ]
    assert counts(items) == (0, 1, 1)


def test_explicit_outcomes_are_authoritative_and_errored_items_are_skipped() -> None:
    items = [
        {"scores": {"s": 0.9}, "scoreDetails": {"s": {"score": 0.9, "outcome": "failed"}}},
        {"scores": {"s": None}, "scoreDetails": {"s": {"score": None, "outcome": "cancelled"}}},
        {"scores": {"s": None}, "scoreDetails": {"s": {"score": None, "outcome": "skipped"}}},
        {"error": "boom", "scores": {"s": 1}, "scoreDetails": {"s": {"score": 1, "outcome": "scored"}}},
    ]
    assert counts(items) == (0, 1, 1)
    cov = item_coverage(item_columns(items, ["s"]))
    assert (cov.completed, cov.failed) == (3, 1)


def test_old_cancel_and_budget_stubs_read_as_failed() -> None:
    items = [{"error": "Cancelled", "scores": {}}, {"error": "Budget exceeded"}, {"scores": {"s": 1}}]
    cov = item_coverage(item_columns(items, ["s"]))
    assert (cov.completed, cov.failed, cov.cancelled) == (1, 2, 0)


def test_every_legacy_fixture_agrees_between_the_model_and_the_file_reader() -> None:
    for path in LEGACY.glob("*.json"):
        models = load_result_file(path).results
        views = load_run_views(path).runs
        for model, view in zip(models, views, strict=True):
            assert_same_columns(run_view(model).items, view.items)
            assert coverage_of(run_view(model)) == coverage_of(view)


def test_a_loaded_model_is_counted_from_its_file_columns_and_they_equal_its_dumped_items() -> None:
    # load_result_file keeps the columns of the JSON it validated, so counting a loaded model
    # dumps nothing; those columns must be exactly what dumping the models would give.
    fixtures = [*LEGACY.glob("*.json"), LEGACY.parent / "spec-0.24-example.json"]
    for path in fixtures:
        for model in load_result_file(path).results:
            from_file = run_view(model)
            assert model._columns is not None and from_file.items is model._columns.columns
            # A copy with other items (here: a new list of the same ones) is counted from its
            # models, by dumping them.
            dumped = model.model_copy(update={"items": list(model.items)})
            assert run_view(dumped).items is not from_file.items
            assert_same_columns(run_view(dumped).items, from_file.items)


def _strip_details(path: Path, out: Path) -> None:
    data = json.loads(path.read_text(encoding="utf-8"))
    for item in data["items"]:
        item.pop("scoreDetails", None)
    for stats in data["summary"]["scorers"].values():
        for key in ("scored", "failed", "skipped"):
            stats.pop(key, None)
    out.write_text(json.dumps(data), encoding="utf-8")


def test_scorer_gate_counts_legacy_scores_without_details(tmp_path: Path, capsys: Any) -> None:
    base, cand = tmp_path / "b.json", tmp_path / "c.json"
    _strip_details(LEGACY / "math20-baseline.json", base)
    _strip_details(LEGACY / "math20-candidate.json", cand)
    code = main(
        ["compare", str(base), str(cand), "--max-scorer-error-rate", "0.1", "--max-item-error-rate", "0.2"]
    )
    err = capsys.readouterr().err
    assert "has no scored items" not in err
    assert code == 0


def assert_same_columns(a: ItemColumns, b: ItemColumns) -> None:
    assert a.inputs == b.inputs
    assert a.errors == b.errors
    assert a.failures == b.failures
    assert a.scorer_errors == b.scorer_errors
    for name in ("outcome", "errored", "unpriced"):
        assert np.array_equal(getattr(a, name), getattr(b, name)), name
    for name in ("duration", "cost", "scorer_cost"):
        assert np.array_equal(getattr(a, name), getattr(b, name), equal_nan=True), name
    assert list(a.scorers) == list(b.scorers)
    for name, col in a.scorers.items():
        other = b.scorers[name]
        assert np.array_equal(col.score, other.score, equal_nan=True), name
        assert np.array_equal(col.outcome, other.outcome), name
        assert np.array_equal(col.sample, other.sample), name


_BEHAVIOUR = st.sampled_from(["ok", "raise", "range", "bool", "skip", "none"])


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    plans=st.lists(st.tuples(st.booleans(), _BEHAVIOUR, _BEHAVIOUR), min_size=1, max_size=12),
)
def test_view_from_the_file_equals_the_view_in_memory(
    plans: list[tuple[bool, str, str]], tmp_path: Path
) -> None:
    def workflow(value: dict[str, Any], runtime: Any) -> dict[str, Any]:
        if plans[value["i"]][0]:
            raise RuntimeError(f"item {value['i']} fails")
        return {"output": value["i"], "cost": 0.001}

    def make(slot: int) -> Any:
        def score(output: Any, value: Any) -> Any:
            kind = plans[value["i"]][slot]
            if kind == "raise":
                raise ValueError("scorer broke")
            return {"range": 1.5, "bool": True, "none": None}.get(kind, output / 100)

        def applies(output: Any, value: Any) -> bool:
            return plans[value["i"]][slot] != "skip"

        return scorer(f"s{slot}", score, applies=applies)

    items = [{"input": {"i": i, "id": f"k{i}"}, "annotations": {"n": i}} for i in range(len(plans))]
    defn = define_eval("w", dataset("d", items=items), [make(1), make(2)], workflow)
    record = execute_run(defn, Runtime(), concurrency=3)
    path = tmp_path / "r.json"
    write_result_file(path, record.wire)
    from_file: RunView = parse_run_views(path.read_bytes(), str(path)).runs[0]
    assert_same_columns(record.view.items, from_file.items)
    assert record.view.header.to_wire() == from_file.header.to_wire()
    assert_same_columns(run_view(load_result_file(path).results[0]).items, from_file.items)
