"""Gates (spec §4, §7.5, §11): scorer error rate, item error rate, regressions, cost, budget."""

from __future__ import annotations

from pathlib import Path

import pytest
from compare_builders import make_run

from axl_action.compare.engine import CompareOptions, compare_results
from axl_action.compare.gates import (
    GateOptions,
    compare_item_error_rates,
    describe_item_error_rate,
    divergent_skip_notes,
    evaluate_gates,
    item_error_rate_reason,
    regression_fails,
    scorer_error_rate_reason,
    thinned_sample_warnings,
)
from axl_action.compare.models import GateReport
from axl_action.errors import ItemErrorRateError
from axl_action.schema import EvalResult, load_result_file


def gates(
    base: EvalResult | list[EvalResult], cand: EvalResult | list[EvalResult], **opts: object
) -> GateReport:
    b = base if isinstance(base, list) else [base]
    c = cand if isinstance(cand, list) else [cand]
    comparison = compare_results(b, c, CompareOptions(seed=3, holm=bool(opts.pop("holm", False))))
    return evaluate_gates(comparison, b, c, GateOptions(**opts))  # type: ignore[arg-type]


# ---------------------------------------------------------------- scorer error rate (§4.1)


def test_scorer_gate_zero_sample_from_na() -> None:
    base = make_run([{"a": "skip"}, {"a": "skip"}], types={"a": "llm"})
    cand = make_run([{"a": 1}, {"a": 1}], types={"a": "llm"})
    comparison = compare_results(base, cand, CompareOptions(seed=1))
    reason = scorer_error_rate_reason(comparison, 0.5)
    assert reason == (
        'scorer "a" has no scored items on baseline (every one of its items was N/A (the `applies` '
        "predicate skipped all 2)) — cannot certify a mean over an empty sample."
    )


def test_scorer_gate_zero_sample_from_errors_on_candidate() -> None:
    base = make_run([{"a": 1}, {"a": 1}], types={"a": "llm"})
    cand = make_run(["failed", "failed"], types={"a": "llm"}, names=["a"])
    reason = scorer_error_rate_reason(compare_results(base, cand, CompareOptions(seed=1)), 1.0)
    assert reason is not None
    assert "has no scored items on candidate (its items errored or produced no score)" in reason


def test_scorer_gate_deterministic_zero_tolerance_and_llm_limit() -> None:
    rows = [{"d": 1, "j": 1}] * 9 + [{"d": None, "j": None}]
    types = {"d": "deterministic", "j": "llm"}
    comparison = compare_results(
        make_run(rows, types=types), make_run(rows, types=types), CompareOptions(seed=1)
    )
    assert scorer_error_rate_reason(comparison, 0.5) == (
        'scorer "d" failed 10.0% on baseline (1/10), over the deterministic zero-tolerance limit.'
    )
    llm_only = {"d": "llm", "j": "llm"}
    comparison = compare_results(
        make_run(rows, types=llm_only), make_run(rows, types=llm_only), CompareOptions(seed=1)
    )
    assert scorer_error_rate_reason(comparison, 0.1) is None  # 10% is not > 10%
    assert scorer_error_rate_reason(comparison, 0.05) == (
        'scorer "d" failed 10.0% on baseline (1/10), over the 5.0% limit.'
    )


def test_unknown_scorer_types_are_treated_as_llm() -> None:
    rows = [{"a": 1}] * 9 + [{"a": None}]
    comparison = compare_results(make_run(rows), make_run(rows), CompareOptions(seed=1))
    assert scorer_error_rate_reason(comparison, 0.2) is None


def test_scorer_gate_report_states() -> None:
    rows = [{"a": 1}] * 9 + [{"a": None}]
    det = {"a": "deterministic"}
    report = gates(make_run(rows, types=det), make_run(rows, types=det))
    gate = report.gate("scorer-error-rate")
    assert gate.status == "warn" and len(gate.details) == 1
    report = gates(make_run(rows, types=det), make_run(rows, types=det), max_scorer_error_rate=0.5)
    assert report.gate("scorer-error-rate").status == "refused"
    assert report.failed
    clean = [{"a": 1}] * 3
    report = gates(make_run(clean, types=det), make_run(clean, types=det))
    assert report.gate("scorer-error-rate").status == "skipped"
    report = gates(make_run(clean, types=det), make_run(clean, types=det), max_scorer_error_rate=0.1)
    assert report.gate("scorer-error-rate").status == "pass"


def test_thinned_and_divergent_messages() -> None:
    base = make_run([{"a": 1}, {"a": None}, {"a": "skip"}, {"a": 1}], types={"a": "llm"})
    cand = make_run([{"a": 1}, {"a": 1}, {"a": 1}, {"a": "skip"}], types={"a": "llm"})
    comparison = compare_results(base, cand, CompareOptions(seed=1))
    assert thinned_sample_warnings(comparison) == [
        'scorer "a" failed on some items (baseline 1/3, candidate 0/3); the means above are computed '
        "over the surviving sample."
    ]
    assert divergent_skip_notes(comparison) == [
        'scorer "a" applies to different subsets per side (baseline 1 N/A, candidate 1 N/A; 1 item(s) '
        "scored on both); the two means cover different applicable subsets, so compare the delta with care."
    ]


# ---------------------------------------------------------------- item error rate (§4.2-4.4)


def test_item_rates_each_side_and_run() -> None:
    ok = [{"a": 1}] * 19
    base = [make_run([*ok, "failed"], run_id="b1"), make_run([*ok, {"a": 1}], run_id="b2")]
    cand = [
        make_run([*ok, {"a": 1}], run_id="c1"),
        make_run([*ok[:17], "failed", "failed", "cancelled"], run_id="c2"),
    ]
    rates = compare_item_error_rates(base, cand, 0.05)
    assert [(r.side, r.run_index, r.failed, r.attempted, r.exceeded) for r in rates] == [
        ("baseline", 0, 1, 20, False),
        ("baseline", 1, 0, 20, False),
        ("candidate", 0, 0, 20, False),
        ("candidate", 1, 2, 19, True),
    ]
    reason = item_error_rate_reason(rates, 0.05)
    assert reason is not None
    assert reason.startswith(
        "coverage: candidate run 2 (c2) item error rate 10.5% (2/19 attempted items failed) exceeds the 5% limit — "
    )
    assert "--max-item-error-rate <0..1>" in reason and "(1 disables the check)" in reason


def test_item_gate_fires_on_the_baseline_too() -> None:
    base = make_run([{"a": 1}] * 8 + ["failed", "failed"], run_id="base")
    cand = make_run([{"a": 1}] * 10, run_id="cand")
    report = gates(base, cand)
    gate = report.gate("item-error-rate")
    assert gate.status == "refused" and "baseline (base) item error rate 20%" in gate.message
    report = gates(base, cand, max_item_error_rate=1.0)
    assert report.gate("item-error-rate").status == "warn"
    assert report.gate("item-error-rate").message.endswith(
        "within the 100% limit; its scores cover only the surviving items."
    )


def test_item_rates_for_legacy_files_are_derived_and_labelled(legacy_dir: Path) -> None:
    base = load_result_file(legacy_dir / "math20-baseline.json").results
    cand = load_result_file(legacy_dir / "math20-candidate.json").results
    rates = compare_item_error_rates(base, cand)
    assert all(r.legacy for r in rates)
    assert describe_item_error_rate(rates[1], False) == (
        f"candidate ({cand[0].id}) item error rate 10% (2/20 attempted items failed, derived from "
        "the items of a pre-0.24 artifact)"
    )
    budget = load_result_file(legacy_dir / "math20-budget.json").results
    # Legacy "Budget exceeded" stubs count as failed, as the reference reader does.
    assert compare_item_error_rates(budget, budget)[0].failed > 1


def test_zero_denominator_never_fires_even_at_limit_zero() -> None:
    runs = make_run(["cancelled", "cancelled"], names=["a"])
    rates = compare_item_error_rates([runs], [runs], 0.0)
    assert rates[0].attempted == 0 and not rates[0].exceeded


@pytest.mark.parametrize("bad", [1.5, -0.1, float("nan"), True])
def test_invalid_item_limit_is_an_error(bad: float) -> None:
    run = make_run([{"a": 1}])
    with pytest.raises(
        ItemErrorRateError, match=r"Invalid maxItemErrorRate \(.*\): expected a number in \[0, 1\]\."
    ):
        compare_item_error_rates([run], [run], bad)


# ---------------------------------------------------------------- regressions (§7.5 step 8)


def test_regression_decision_table() -> None:
    det = {"a": "deterministic"}
    # significant aggregate drop with item regressions -> fail
    base = make_run([{"a": 0.9}] * 6, types=det)
    worse = make_run([{"a": 0.4}] * 6, types=det)
    comparison = compare_results(base, worse, CompareOptions(seed=1))
    assert comparison.regressions and regression_fails(comparison)
    # item regressions but no significance data at all (n < 2) -> fail
    one_b, one_c = make_run([{"a": 0.9}], types=det), make_run([{"a": 0.4}], types=det)
    comparison = compare_results(one_b, one_c, CompareOptions(seed=1))
    assert comparison.scorers["a"].significant is None and regression_fails(comparison)
    # item regressions, significance available but not significant -> pass
    mixed = make_run([{"a": v} for v in (0.4, 1.0, 0.9, 0.95, 0.85, 0.9)], types=det)
    comparison = compare_results(base, mixed, CompareOptions(seed=1))
    assert comparison.regressions and not comparison.scorers["a"].significant
    assert not regression_fails(comparison)
    # no item regressions -> pass regardless
    assert not regression_fails(compare_results(base, base, CompareOptions(seed=1)))


def test_regressions_gate_statuses() -> None:
    det = {"a": "deterministic"}
    base = make_run([{"a": 0.9}] * 6, types=det)
    worse = make_run([{"a": 0.4}] * 6, types=det)
    assert gates(base, worse).gate("regressions").status == "warn"
    report = gates(base, worse, fail_on_regression=True)
    assert report.gate("regressions").status == "fail" and report.failed
    assert "significant drop in a" in report.gate("regressions").message
    assert gates(base, base, fail_on_regression=True).gate("regressions").status == "pass"


def test_scorer_subset_with_fail_on_regression_refuses() -> None:
    meta = {"scorerFiltered": True, "scorersRun": ["a"]}
    base = make_run([{"a": 1}], metadata=meta)
    report = gates(base, make_run([{"a": 1}]), fail_on_regression=True)
    gate = report.gate("regressions")
    assert gate.status == "refused"
    assert gate.message == (
        "baseline was run with --scorers (a scorer subset); re-run without --scorers for a complete baseline."
    )


# ---------------------------------------------------------------- cost, budget, compatibility


def test_cost_gate() -> None:
    rows = [{"a": 1}]
    base = make_run(rows, cost=1.0)
    assert gates(base, make_run(rows, cost=1.2)).gate("cost").status == "skipped"
    assert gates(base, make_run(rows, cost=1.2), max_cost_increase=10).gate("cost").status == "fail"
    assert gates(base, make_run(rows, cost=1.05), max_cost_increase=10).gate("cost").status == "pass"
    uncertified = gates(base, make_run(rows, cost=5, completeness="incomplete"), max_cost_increase=10).gate(
        "cost"
    )
    assert uncertified.status == "warn" and uncertified.message.startswith("Cannot certify the cost change: ")
    zero = gates(make_run(rows, cost=0), make_run(rows, cost=0.5), max_cost_increase=10).gate("cost")
    assert zero.status == "fail" and "from a $0 baseline" in zero.message
    legacy = gates(make_run(rows, legacy=True), make_run(rows, legacy=True), max_cost_increase=10).gate(
        "cost"
    )
    assert legacy.status == "warn"


def test_budget_gate_warns_on_a_stopped_side() -> None:
    closed = {"limit": 1.0, "status": "closed", "knownSpend": 1.02, "knownOvershoot": 0.02}
    cand = make_run([{"a": 1}, "budget_skipped"], run_id="c", cost=1.02, budget=closed)
    gate = gates(make_run([{"a": 1}, {"a": 1}]), cand).gate("budget")
    assert gate.status == "warn"
    assert gate.message.startswith("candidate run c was stopped by its $1.00 budget: 1 case(s) never started")
    open_budget = {"limit": 5.0, "status": "open", "knownSpend": 1.0, "knownOvershoot": 0}
    gate = gates(make_run([{"a": 1}]), make_run([{"a": 1}], cost=1.0, budget=open_budget)).gate("budget")
    assert gate.status == "pass"
    assert gates(make_run([{"a": 1}]), make_run([{"a": 1}])).gate("budget").status == "skipped"


def test_gate_order_and_names() -> None:
    report = gates(make_run([{"a": 1}]), make_run([{"a": 1}]))
    assert [g.name for g in report.gates] == [
        "budget",
        "item-error-rate",
        "scorer-error-rate",
        "regressions",
        "cost",
        "compatibility",
    ]
    assert not report.failed
    assert report.to_wire()["gates"][0]["name"] == "budget"
