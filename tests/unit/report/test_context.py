"""``build_report_context``: verdicts, gates, cost, provenance, regressions, no-baseline mode."""

from __future__ import annotations

from report_cases import RUN_INFO, Case
from report_synth import synthetic_pair

from axl_action.compare.models import Gate, GateReport
from axl_action.report import RunInfo, build_report_context, own_gates
from axl_action.report.regressions import aligned_excerpts


def test_verdict_follows_gates(small_case: Case) -> None:
    gates = GateReport(
        gates=[
            Gate(name="budget", status="pass", message="ok"),
            Gate(name="cost", status="warn", limit=10, observed=12.5, message="cost up"),
        ]
    )
    ctx = build_report_context(small_case.candidate, small_case.baseline, small_case.comparison, gates)
    assert ctx.verdict == "warn" and ctx.warning_gates == ["Cost"] and ctx.failing_gates == []
    cost_row = ctx.gates[1]
    assert (cost_row.limit, cost_row.observed) == ("+10%", "+12.5%")
    refused = GateReport(
        gates=[Gate(name="item-error-rate", status="refused", limit=0.05, observed=0.2, message="x")]
    )
    ctx = build_report_context(small_case.candidate, small_case.baseline, small_case.comparison, refused)
    assert ctx.verdict == "fail" and ctx.failing_gates == ["Item error rate"]
    assert (ctx.gates[0].limit, ctx.gates[0].observed) == ("5%", "20%")


def test_full_context(small_case: Case) -> None:
    ctx = small_case.ctx
    assert ctx.suite == "qa/main" and ctx.has_baseline
    assert [s.name for s in ctx.scorers] == sorted(s.name for s in ctx.scorers)
    assert sum(s.regressed_items for s in ctx.scorers) == len(small_case.comparison.regressions)
    assert ctx.cost is not None and ctx.cost.certified is False and ctx.cost.reason
    assert ctx.provenance is not None and ctx.provenance.commit_sha == RUN_INFO.baseline_commit_sha
    assert ctx.coverage_line == "35 completed, 3 failed, 2 budget-skipped"
    assert ctx.failure_causes == "3 × 429 (openai)"
    assert ctx.model_timing[0].rate_limited == 3
    worst = [it.worst_delta for it in ctx.top_regressions]
    assert worst == sorted(worst)
    assert all(any(ch.regressed for ch in it.changes) for it in ctx.top_regressions)
    assert ctx.links.report_url == RUN_INFO.report_url


def test_no_baseline_uses_own_gates() -> None:
    _, cand = synthetic_pair(50, failed_every=5)
    ctx = build_report_context(cand)
    assert not ctx.has_baseline and ctx.baseline is None
    names = {g.name: g.status for g in ctx.gates}
    assert names == {
        "budget": "skipped",
        "item-error-rate": "fail",
        "scorer-error-rate": "pass",
        "regressions": "skipped",
        "cost": "skipped",
    }
    assert ctx.verdict == "fail"
    assert all(s.verdict == "new" and s.baseline_mean is None for s in ctx.scorers)
    assert ctx.cost is not None and ctx.cost.baseline_total is None


def test_own_gates_budget_stopped() -> None:
    _, cand = synthetic_pair(20, failed_every=0, budget_every=4)
    assert cand.accounting is not None
    from axl_action.schema import BudgetSnapshot

    cand.accounting.budget = BudgetSnapshot(
        limit=0.01, status="closed", known_spend=0.012, known_overshoot=0.002
    )
    rows = {g.name: g for g in own_gates(cand)}
    assert rows["budget"].status == "fail" and rows["budget"].limit == "$0.01"


def test_unsafe_urls_are_dropped() -> None:
    _, cand = synthetic_pair(5)
    info = RunInfo(
        run_url="javascript:alert(1)", report_url="https://ok.example/a b", baseline_run_url="https://x.y/(z)"
    )
    ctx = build_report_context(cand, run_info=info)
    assert ctx.links.run_url is None and ctx.links.report_url is None and ctx.links.baseline_run_url is None


def test_aligned_excerpts_start_near_first_difference() -> None:
    common = "word " * 100
    b, c = aligned_excerpts(common + "old tail", common + "new tail", 80)
    assert b.startswith("…") and "old" in b and "new" in c
    short_b, short_c = aligned_excerpts("abc", "abd", 80)
    assert (short_b, short_c) == ("abc", "abd")
