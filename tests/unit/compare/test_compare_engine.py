"""compare_results against the spec's rules (§2): errors, truncation, thresholds, CI, items, timing."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from compare_builders import make_run

from axl_action.compare.engine import CompareOptions, compare_results, detect_partial, summarise
from axl_action.compare.thresholds import resolve_threshold
from axl_action.errors import CompareError
from axl_action.values import parse_threshold

DET = {"a": "deterministic"}


def seeded(**kw: object) -> CompareOptions:
    return CompareOptions(seed=7, **kw)  # type: ignore[arg-type]


# ---------------------------------------------------------------- §2.1 / §2.3 input errors


def test_empty_side_is_an_error() -> None:
    with pytest.raises(CompareError, match="Cannot compare empty eval result arrays"):
        compare_results([], [make_run([{"a": 1}])])


def test_different_datasets_name_both() -> None:
    with pytest.raises(CompareError) as info:
        compare_results(make_run([{"a": 1}], dataset="x"), make_run([{"a": 1}], dataset="y"))
    assert info.value.message == 'Cannot compare evals from different datasets: "x" vs "y"'


def test_different_scorers_say_which() -> None:
    with pytest.raises(CompareError) as info:
        compare_results(make_run([{"a": 1, "b": 1}]), make_run([{"a": 1, "c": 1}]))
    assert info.value.message.startswith("Cannot compare evals with different scorers")
    assert "only the baseline has b" in info.value.message
    assert "only the candidate has c" in info.value.message


def test_only_reference_runs_are_checked_for_dataset() -> None:
    later = make_run([{"a": 1}], dataset="other", run_id="b2")
    result = compare_results([make_run([{"a": 1}]), later], [make_run([{"a": 1}])], seeded())
    assert result.baseline.run_count == 1


# ---------------------------------------------------------------- §2.4 thresholds


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("0.1", 0.1),
        ("1.2.3", 1.2),
        ("0", 0.0),
        ("a=0.2,b=0.05", {"a": 0.2, "b": 0.05}),
        (" a = 0.2 ", {"a": 0.2}),
        ("a=1=2", {"a": 1.0}),
        ("=0.1,b", None),
        ("-0.1", None),
    ],
)
def test_parse_threshold(text: str, expected: object) -> None:
    assert parse_threshold(text) == expected


def test_parse_threshold_garbage_is_nan() -> None:
    value = parse_threshold(".")
    assert isinstance(value, float) and math.isnan(value)
    overrides = parse_threshold("a=x")
    assert isinstance(overrides, dict) and math.isnan(overrides["a"])


def test_resolve_threshold_paths() -> None:
    meta = {"scorerTypes": {"judge": "llm", "exact": "deterministic", "odd": "weird"}}
    assert resolve_threshold("judge", 0.3, meta).value == 0.3
    assert resolve_threshold("judge", 0.3, meta).source == "global"
    assert resolve_threshold("judge", {"judge": 0.2}, meta).value == 0.2
    assert resolve_threshold("exact", {"judge": 0.2}, meta).source == "deterministic"
    assert resolve_threshold("judge", None, meta).value == 0.05
    assert resolve_threshold("exact", None, meta).value == 0
    assert resolve_threshold("odd", None, meta).value == 0
    assert resolve_threshold("missing", None, meta).value == 0.1
    assert resolve_threshold("exact", None, {}).source == "legacy"
    assert resolve_threshold("exact", None, {"scorerTypes": "nope"}).value == 0.1


def test_thresholds_come_from_the_baseline_only() -> None:
    base = make_run([{"a": 0.5}, {"a": 0.5}], types={"a": "llm"})
    cand = make_run([{"a": 0.47}, {"a": 0.47}], types={"a": "deterministic"})
    result = compare_results(base, cand, seeded())
    assert result.scorers["a"].threshold == 0.05
    assert result.regressions == []  # 0.03 drop is inside the LLM threshold


# ---------------------------------------------------------------- §2.2 truncation, §2.6-2.7


def test_runs_are_truncated_to_the_common_count() -> None:
    base = [make_run([{"a": v}], run_id=f"b{i}", types=DET) for i, v in enumerate((0.2, 0.4, 1.0))]
    cand = [make_run([{"a": v}], run_id=f"c{i}", types=DET) for i, v in enumerate((0.3, 0.5))]
    result = compare_results(base, cand, seeded())
    s = result.scorers["a"]
    assert result.baseline.run_count == result.candidate.run_count == 2
    assert result.baseline.runs_available == 3
    assert s.baseline_mean == 0.3  # mean of 0.2 and 0.4; the third run is ignored
    assert s.candidate_mean == 0.4
    assert s.delta == 0.1
    assert s.n == 2
    assert s.baseline_scored == 2


def test_sample_counts_and_paired_n() -> None:
    base = make_run([{"a": 1}, {"a": None}, {"a": "skip"}, {"a": 0.5}, "failed"], types=DET)
    cand = make_run([{"a": 1}, {"a": 1}, {"a": 1}, {"a": None}, {"a": 1}], types=DET)
    s = compare_results(base, cand, seeded()).scorers["a"]
    assert (s.baseline_scored, s.baseline_failed, s.baseline_skipped) == (2, 1, 1)
    assert (s.candidate_scored, s.candidate_failed, s.candidate_skipped) == (4, 1, 0)
    assert s.n == 1  # only item 0 is scored on both sides and errored on neither
    wire = s.to_wire()
    for key in ("ci", "pRegression", "pImprovement", "significant"):
        assert key not in wire
    assert s.verdict == "inconclusive"


def test_delta_percent_is_zero_for_a_zero_baseline_mean() -> None:
    base = make_run([{"a": 0}, {"a": 0}], types=DET)
    cand = make_run([{"a": 1}, {"a": 1}], types=DET)
    s = compare_results(base, cand, seeded()).scorers["a"]
    assert s.delta_percent == 0
    assert s.delta == 1


# ---------------------------------------------------------------- §2.8 significance, verdicts


def test_clear_improvement_is_significant_and_improved() -> None:
    base = make_run([{"a": 0.2}] * 10, types=DET)
    cand = make_run([{"a": 0.6}] * 10, types=DET)
    s = compare_results(base, cand, seeded()).scorers["a"]
    assert s.ci is not None and s.ci.lower == 0.4 and s.ci.upper == 0.4
    assert s.significant is True
    assert s.verdict == "improved"
    assert s.p_improvement == 1
    assert s.mde == 0  # zero spread: any change is detectable


def test_significance_needs_the_mean_to_reach_the_threshold() -> None:
    base = make_run([{"a": 0.5}] * 8, types={"a": "llm"})
    cand = make_run([{"a": 0.52}] * 8, types={"a": "llm"})
    s = compare_results(base, cand, seeded()).scorers["a"]
    assert s.significant is False  # CI excludes 0 but |0.02| < 0.05
    assert s.verdict == "unchanged"  # and the CI lies inside ±0.05


def test_ci_straddling_the_threshold_is_inconclusive() -> None:
    rows_b = [{"a": 0.5}] * 6
    rows_c = [{"a": v} for v in (0.5, 0.6, 0.4, 0.7, 0.3, 0.55)]
    s = compare_results(
        make_run(rows_b, types={"a": "llm"}), make_run(rows_c, types={"a": "llm"}), seeded()
    ).scorers["a"]
    assert s.significant is False
    assert s.verdict == "inconclusive"
    assert s.mde is not None and s.mde > 0.05


def test_nan_threshold_never_significant() -> None:
    base = make_run([{"a": 0.2}] * 5, types=DET)
    cand = make_run([{"a": 0.9}] * 5, types=DET)
    result = compare_results(base, cand, seeded(thresholds=math.nan))
    assert result.scorers["a"].significant is False
    assert result.regressions == [] and result.improvements == []


def test_same_seed_same_result_and_seed_is_reported() -> None:
    base = make_run([{"a": v} for v in (0.1, 0.5, 0.3, 0.9, 0.7)], types=DET)
    cand = make_run([{"a": v} for v in (0.2, 0.4, 0.6, 0.8, 0.7)], types=DET)
    one = compare_results(base, cand, CompareOptions(seed=123))
    two = compare_results(base, cand, CompareOptions(seed=123))
    assert one.to_wire() == two.to_wire()
    assert one.seed == 123
    unseeded = compare_results(base, cand)
    again = compare_results(base, cand, CompareOptions(seed=unseeded.seed))
    assert unseeded.scorers["a"].ci == again.scorers["a"].ci


def test_holm_is_reported_alongside_and_can_only_weaken() -> None:
    names = ["a", "b", "c"]
    base = make_run([dict.fromkeys(names, 0.5)] * 12, types=dict.fromkeys(names, "deterministic"))
    rows = [{"a": 0.9, "b": 0.5 + (0.02 if i % 2 else -0.01), "c": 0.5} for i in range(12)]
    cand = make_run(rows, types=dict.fromkeys(names, "deterministic"))
    plain = compare_results(base, cand, seeded())
    corrected = compare_results(base, cand, seeded(holm=True))
    assert plain.scorers["a"].holm_p_value is None
    for name in names:
        p, c = plain.scorers[name], corrected.scorers[name]
        assert c.significant == p.significant  # the raw TS result is untouched
        assert c.holm_p_value is not None and p.p_value is not None and c.holm_p_value >= p.p_value
        if c.holm_significant:
            assert p.significant
    assert corrected.scorers["a"].verdict == "improved"
    assert corrected.holm is True


# ---------------------------------------------------------------- §2.9 item-level changes


def test_item_changes_are_strict_and_ordered() -> None:
    base = make_run([{"a": 0.5, "b": 0.5}, {"a": 0.5, "b": 0.5}, {"a": 0.5, "b": 0.5}], types=None)
    cand = make_run([{"a": 0.4, "b": 0.7}, {"a": 0.3, "b": 0.5}, {"a": 0.61, "b": 0.39}], types=None)
    result = compare_results(base, cand, seeded())  # legacy threshold 0.1
    assert [(c.item_index, c.scorer, c.delta) for c in result.regressions] == [
        (1, "a", -0.2),
        (2, "b", -0.11),
    ]
    assert [(c.item_index, c.scorer, c.delta) for c in result.improvements] == [(0, "b", 0.2), (2, "a", 0.11)]
    # exactly -0.1 at item 0 for "a" is stable (strict comparison)
    change = result.regressions[0].to_wire()
    assert list(change) == ["itemIndex", "input", "scorer", "baselineScore", "candidateScore", "delta"]


def test_items_with_an_error_in_any_run_are_skipped() -> None:
    base = [
        make_run([{"a": 1}, {"a": 1}], run_id="b1", types=DET),
        make_run([{"a": 1}, "failed"], run_id="b2", types=DET),
    ]
    cand = [
        make_run([{"a": 0}, {"a": 0}], run_id="c1", types=DET),
        make_run([{"a": 0}, {"a": 0}], run_id="c2", types=DET),
    ]
    result = compare_results(base, cand, seeded())
    assert [c.item_index for c in result.regressions] == [0]


def test_identical_scores_with_zero_threshold_are_neither() -> None:
    run = make_run([{"a": 0.5}, {"a": 1}], types=DET)
    result = compare_results(run, run, seeded())
    assert result.regressions == [] and result.improvements == []
    assert result.summary == "candidate no meaningful changes with 0 regressions and 0 improvements"


# ---------------------------------------------------------------- §2.10 timing, §2.12 summary, §2.13


def test_timing_needs_both_sides() -> None:
    base = make_run([{"a": 1}], types=DET, timing=100)
    cand = make_run([{"a": 1}], types=DET)
    assert compare_results(base, cand, seeded()).timing is None
    timed = compare_results(base, make_run([{"a": 1}], types=DET, timing=150), seeded()).timing
    assert timed is not None and (timed.delta, timed.delta_percent) == (50, 50)


def test_summary_string_rules() -> None:
    base = make_run(
        [{"a": 0.5, "b": 0.5}] * 4, types={"a": "deterministic", "b": "deterministic"}, timing=100, cost=1.0
    )
    cand = make_run(
        [{"a": 0.75, "b": 0.5}] * 4, types={"a": "deterministic", "b": "deterministic"}, timing=98, cost=1.5
    )
    result = compare_results(base, cand, seeded())
    assert result.summary == (
        "candidate 'a' improves by +50.0% (0.50 -> 0.75) (significant), 2% faster, 50% more expensive "
        "with 0 regressions and 4 improvements"
    )


def test_uncertified_cost_stays_out_of_the_summary() -> None:
    base = make_run([{"a": 0.5}], types=DET, cost=1.0, completeness="incomplete")
    cand = make_run([{"a": 0.5}], types=DET, cost=3.0)
    result = compare_results(base, cand, seeded())
    assert result.cost is not None and result.cost.certified is False
    assert "expensive" not in result.summary


def test_summary_without_significance_and_with_negative_delta() -> None:
    base = make_run([{"q": 0.9}], types=DET)
    cand = make_run([{"q": 0.6}], types=DET)
    result = compare_results(base, cand, seeded())
    assert (
        result.summary
        == "candidate 'q' regresses by -33.3% (0.90 -> 0.60) with 1 regression and 0 improvements"
    )
    assert (
        summarise({}, None, None, 0, 0)
        == "candidate no meaningful changes with 0 regressions and 0 improvements"
    )


def test_partial_detection_reads_the_raw_list() -> None:
    runs = [make_run([{"a": 1}], run_id=f"r{i}", metadata={"batchAttempted": 3}) for i in range(2)]
    assert detect_partial(runs) is not None
    assert detect_partial(runs).to_wire() == {"completed": 2, "attempted": 3}  # type: ignore[union-attr]
    assert detect_partial(runs[:1] * 3) is None
    assert detect_partial([make_run([{"a": 1}])]) is None
    result = compare_results(runs, runs[:1], seeded())
    assert result.baseline.partial is not None and result.candidate.partial is not None
    assert result.baseline.partial.completed == 2 and result.candidate.partial.completed == 1


def test_wire_keys_follow_the_reference_order() -> None:
    base = make_run([{"a": 0.5}, {"a": 0.6}], types=DET, timing=10)
    cand = make_run([{"a": 0.6}, {"a": 0.6}], types=DET, timing=10)
    wire = compare_results(base, cand, seeded()).to_wire()
    assert list(wire)[:8] == [
        "baseline",
        "candidate",
        "scorers",
        "timing",
        "cost",
        "regressions",
        "improvements",
        "summary",
    ]
    assert list(wire["scorers"]["a"])[:15] == [
        "baselineMean",
        "candidateMean",
        "delta",
        "deltaPercent",
        "baselineScored",
        "baselineFailed",
        "candidateScored",
        "candidateFailed",
        "baselineSkipped",
        "candidateSkipped",
        "n",
        "ci",
        "pRegression",
        "pImprovement",
        "significant",
    ]
    assert list(wire["baseline"]) == ["id", "metadata", "runCount", "runsAvailable"]


# ---------------------------------------------------------------- lean loading


@pytest.mark.parametrize(
    ("base", "cand"),
    [
        ("math20-baseline.json", "math20-candidate.json"),
        ("math20-baseline-runs3.json", "math20-candidate.json"),
        ("tiny3-baseline.json", "tiny3-candidate.json"),
        ("math20-budget.json", "math20-baseline.json"),
        ("math20-baseline-rescored-same.json", "math20-baseline.json"),
    ],
)
def test_view_loading_gives_the_same_comparison_and_gates(base: str, cand: str, legacy_dir: Path) -> None:
    from axl_action.compare.gates import GateOptions, evaluate_gates
    from axl_action.schema import load_result_file, load_run_views

    full_b, full_c = load_result_file(legacy_dir / base).results, load_result_file(legacy_dir / cand).results
    lean_b, lean_c = load_run_views(legacy_dir / base).runs, load_run_views(legacy_dir / cand).runs
    full = compare_results(full_b, full_c, seeded())
    lean = compare_results(lean_b, lean_c, seeded())
    assert lean.to_wire() == full.to_wire()
    opts = GateOptions(max_scorer_error_rate=0.3)
    assert (
        evaluate_gates(lean, lean_b, lean_c, opts).to_wire()
        == evaluate_gates(full, full_b, full_c, opts).to_wire()
    )


def test_view_loading_rejects_bad_items(tmp_path: object) -> None:
    import json
    from pathlib import Path

    from axl_action.errors import ResultFileError
    from axl_action.schema import load_run_views as load_for_compare

    run = make_run([{"a": 1}])
    data = run.to_wire()
    data["items"][0]["scores"]["a"] = "high"
    path = Path(str(tmp_path)) / "bad.json"
    path.write_text(json.dumps(data))
    with pytest.raises(
        ResultFileError, match=r"at items\[0\]\.scores\.a: expected a number in \[0, 1\] or null"
    ):
        load_for_compare(path)
    # A score no runner writes (the scorer fails instead): refused, not compared.
    for score in (7, -1, 10**40):
        data["items"][0]["scores"]["a"] = score
        path.write_text(json.dumps(data))
        with pytest.raises(
            ResultFileError, match=rf"scores\.a: expected a number in \[0, 1\] or null, got {score}"
        ):
            load_for_compare(path)
    path.write_text(json.dumps([data, 3]))
    with pytest.raises(ResultFileError):
        load_for_compare(path)


def test_a_change_from_a_zero_baseline_mean_has_no_percentage() -> None:
    # The local-model walkthrough: 'one_word' scored 0 on every baseline item, 1 on the candidate.
    base = make_run([{"one_word": 0.0}, {"one_word": 0.0}], types=DET)
    cand = make_run([{"one_word": 1.0}, {"one_word": 1.0}], types=DET)
    result = compare_results(base, cand, seeded())
    scorer = result.scorers["one_word"]
    assert scorer.delta_percent == 0 and scorer.from_zero  # the wire keeps the reference's 0
    assert result.summary.startswith("candidate 'one_word' improves from 0 (0.00 -> 1.00)")
    assert "+0.0%" not in result.summary and "with 0 regressions and 2 improvements" in result.summary
    from axl_action.compare.console import format_compare

    table = format_compare(result)
    assert "+0.0%" not in table and " new" in table
