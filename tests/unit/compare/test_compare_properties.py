"""Property tests: self-comparison is quiet and certified; swapping sides mirrors the result."""

from __future__ import annotations

from typing import Any

from compare_builders import make_run
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from axl_action.compare.engine import CompareOptions, compare_results
from axl_action.compare.gates import evaluate_gates

NAMES = ["alpha", "beta", "gamma"]

score = st.one_of(
    st.integers(min_value=0, max_value=1000).map(lambda k: k / 1000),
    st.none(),
    st.just("skip"),
)


@st.composite
def runs(draw: st.DrawFn) -> tuple[list[Any], list[Any], dict[str, str]]:
    k = draw(st.integers(min_value=1, max_value=3))
    names = NAMES[:k]
    n = draw(st.integers(min_value=1, max_value=25))
    types = {name: draw(st.sampled_from(["llm", "deterministic"])) for name in names}

    def rows() -> list[Any]:
        out: list[Any] = []
        for _ in range(n):
            if draw(st.integers(min_value=0, max_value=9)) == 0:
                out.append("failed")
            else:
                out.append({name: draw(score) for name in names})
        return out

    return rows(), rows(), types


settings_ = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@settings_
@given(runs(), st.floats(min_value=0, max_value=3), st.integers(min_value=0, max_value=2**31))
def test_self_compare_is_quiet_and_cost_certified(
    data: tuple[list[Any], list[Any], dict[str, str]], cost: float, seed: int
) -> None:
    rows, _, types = data
    run = make_run(rows, types=types, cost=round(cost, 3), names=list(types))
    result = compare_results(run, run, CompareOptions(seed=seed))
    assert result.regressions == [] and result.improvements == []
    for s in result.scorers.values():
        assert s.delta == 0 and s.delta_percent == 0
        assert s.significant in (None, False)
        assert s.verdict in ("unchanged", "inconclusive")
        if s.ci is not None:
            assert (s.ci.lower, s.ci.upper) == (0, 0)
            assert s.verdict == "unchanged"
    assert result.cost is not None and result.cost.certified and result.cost.delta == 0
    assert "no meaningful changes" in result.summary
    report = evaluate_gates(result, [run], [run])
    assert report.gate("regressions").status == "skipped"
    assert report.gate("cost").status == "skipped"


@settings_
@given(runs(), st.integers(min_value=0, max_value=2**31))
def test_swapping_sides_negates_deltas(data: tuple[list[Any], list[Any], dict[str, str]], seed: int) -> None:
    rows_a, rows_b, types = data
    a = make_run(rows_a, run_id="a", types=types, names=list(types), cost=1.0)
    b = make_run(rows_b, run_id="b", types=types, names=list(types), cost=2.0)
    forward = compare_results(a, b, CompareOptions(seed=seed))
    backward = compare_results(b, a, CompareOptions(seed=seed))
    for name in types:
        f, r = forward.scorers[name], backward.scorers[name]
        assert f.delta == -r.delta
        assert f.n == r.n
        assert (f.baseline_scored, f.candidate_scored) == (r.candidate_scored, r.baseline_scored)
        if f.ci is not None:
            assert f.p_regression == r.p_improvement and f.p_improvement == r.p_regression
            assert f.significant == r.significant
    flip = {(c.item_index, c.scorer, -c.delta) for c in forward.regressions}
    assert flip == {(c.item_index, c.scorer, c.delta) for c in backward.improvements}
    assert forward.cost is not None and backward.cost is not None
    assert forward.cost.delta == -backward.cost.delta
