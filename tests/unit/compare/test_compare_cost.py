"""Cost block emission and every certify_cost refusal, in order (spec §2.11)."""

from __future__ import annotations

from pathlib import Path

from compare_builders import make_run

from axl_action.compare.engine import CompareOptions, compare_results
from axl_action.compare.models import CostComparison
from axl_action.schema import EvalResult, load_result_file

DET = {"a": "deterministic"}
ROWS = [{"a": 1.0}, {"a": 0.5}]


def cost_of(
    base: EvalResult | list[EvalResult], cand: EvalResult | list[EvalResult]
) -> CostComparison | None:
    return compare_results(base, cand, CompareOptions(seed=1)).cost


def test_certified_when_both_measured_the_same_work() -> None:
    cost = cost_of(make_run(ROWS, cost=2.0), make_run(ROWS, cost=2.5))
    assert cost is not None
    assert cost.to_wire() == {
        "baselineTotal": 2,
        "candidateTotal": 2.5,
        "delta": 0.5,
        "deltaPercent": 25,
        "certified": True,
    }


def test_zero_baseline_gives_null_percent() -> None:
    cost = cost_of(make_run(ROWS, cost=0.0), make_run(ROWS, cost=0.25))
    assert cost is not None and cost.delta_percent is None
    assert cost.to_wire()["deltaPercent"] is None


def test_both_measured_zero_still_gets_a_block() -> None:
    cost = cost_of(make_run(ROWS), make_run(ROWS))
    assert cost is not None and cost.certified and cost.delta == 0


def test_two_legacy_zero_cost_runs_get_no_block(legacy_dir: Path) -> None:
    tiny_b = load_result_file(legacy_dir / "tiny3-baseline.json").results
    tiny_c = load_result_file(legacy_dir / "tiny3-candidate.json").results
    assert cost_of(tiny_b, tiny_c) is None


def test_rule1_unverified_legacy_side(legacy_dir: Path) -> None:
    base = load_result_file(legacy_dir / "math20-baseline.json").results
    cand = load_result_file(legacy_dir / "math20-candidate.json").results
    cost = cost_of(base, cand)
    assert cost is not None and not cost.certified
    assert cost.reason == (
        f"baseline run {base[0].id} carries no accounting (unverified) — its total is not a measured figure."
    )
    assert cost.delta_percent is not None  # totals are still reported


def test_rule1_incomplete_lists_reasons_or_unknown_spend() -> None:
    cand = make_run(
        ROWS, run_id="c1", cost=1, completeness="incomplete", reasons={"unpriced_model": 2, "abandoned": 1}
    )
    cost = cost_of(make_run(ROWS, cost=1), cand)
    assert cost is not None
    assert cost.reason == (
        "candidate run c1 has incomplete accounting (unpriced_model, abandoned) — its total is a lower bound."
    )
    bare = make_run(ROWS, run_id="c2", cost=1, completeness="incomplete")
    cost = cost_of(make_run(ROWS, cost=1), bare)
    assert cost is not None and "(unknown spend)" in (cost.reason or "")


def test_rule1_checks_baseline_before_candidate() -> None:
    base = make_run(ROWS, run_id="b", completeness="incomplete")
    cand = make_run(ROWS, run_id="c", completeness="incomplete")
    cost = cost_of(base, cand)
    assert cost is not None and (cost.reason or "").startswith("baseline run b ")


def test_rule2_mixed_scopes_within_a_side() -> None:
    base = [make_run(ROWS, run_id="b1", cost=1), make_run(ROWS, run_id="b2", cost=1, scope="rescore")]
    cand = [make_run(ROWS, run_id="c1", cost=1), make_run(ROWS, run_id="c2", cost=1)]
    cost = cost_of(base, cand)
    assert cost is not None
    assert (cost.reason or "").startswith('baseline mixes accounting scopes ("run" and "rescore") — ')


def test_rule3_scope_differs_across_sides() -> None:
    cost = cost_of(make_run(ROWS, cost=1), make_run(ROWS, cost=0.2, scope="rescore"))
    assert cost is not None
    assert (cost.reason or "").startswith(
        'accounting scope differs (baseline "run" vs candidate "rescore") — '
    )


def test_rule4_item_counts_differ() -> None:
    cost = cost_of(make_run(ROWS, cost=1), make_run([*ROWS, {"a": 1.0}], cost=1))
    assert cost is not None
    assert (cost.reason or "").startswith("item counts differ (baseline 2 vs candidate 3) — ")


def test_rule4_case_coverage_names_the_side_that_did_not_run() -> None:
    cand = make_run([{"a": 1.0}, "budget_skipped"], cost=0.5)
    cost = cost_of(make_run(ROWS, cost=1), cand)
    assert cost is not None
    assert cost.reason == (
        "case coverage differs at item 1: candidate did not complete it (budget_skipped) — "
        "the cheaper side did less work."
    )
    base = make_run(["failed", {"a": 1.0}], cost=0.5)
    cost = cost_of(base, make_run(ROWS, cost=1))
    assert cost is not None and (cost.reason or "").startswith(
        "case coverage differs at item 0: baseline did not"
    )


def test_rule4_scorer_coverage_names_the_side_that_scored() -> None:
    cand = make_run([{"a": 1.0}, {"a": None}], cost=1)
    cost = cost_of(make_run(ROWS, cost=1), cand)
    assert cost is not None
    assert cost.reason == 'scorer coverage differs for "a" at item 1: only baseline produced a score.'


def test_items_that_failed_on_both_sides_are_fine() -> None:
    rows = [{"a": 1.0}, "failed"]
    cost = cost_of(make_run(rows, cost=1), make_run(rows, cost=1.2))
    assert cost is not None and cost.certified


def test_multi_run_costs_are_averaged_over_the_compared_runs() -> None:
    base = [make_run(ROWS, run_id=f"b{i}", cost=c) for i, c in enumerate((1.0, 3.0, 100.0))]
    cand = [make_run(ROWS, run_id=f"c{i}", cost=c) for i, c in enumerate((2.0, 2.0))]
    cost = cost_of(base, cand)
    assert cost is not None and (cost.baseline_total, cost.candidate_total, cost.delta_percent) == (2, 2, 0)
