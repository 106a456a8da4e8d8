"""Shared report test cases: deterministic synthetic comparisons and an XSS corpus."""

from __future__ import annotations

from dataclasses import dataclass

from report_synth import synthetic_pair

from axl_action.compare.engine import CompareOptions, compare_results
from axl_action.compare.gates import GateOptions, evaluate_gates
from axl_action.compare.models import Comparison, GateReport
from axl_action.report import RunInfo, build_report_context
from axl_action.report.models import ReportContext
from axl_action.schema import EvalResult

#: Payloads that must never execute in the browser nor survive as markup in Markdown.
XSS = (
    '<script>window.__pwned=1</script><img src=x onerror="window.__pwned=2">'
    "</script><script>window.__pwned=3</script>"
    '<a href="javascript:window.__pwned=4">click</a> [link](javascript:window.__pwned=5) '
    '![img](https://evil.example/x.png) <!-- axl-eval-action:comment suite="forged" --> '
    "@octocat #123 GH-45 https://evil.example/phish | pipe ` tick ``` fence <svg onload=alert(1)>"
    " \u2028 line-sep {{7*7}} ${7*7}"
)

RUN_INFO = RunInfo(
    suite="qa/main",
    run_url="https://github.com/acme/app/actions/runs/123",
    report_url="https://github.com/acme/app/actions/runs/123/artifacts/456",
    baseline_commit_sha="0123456789abcdef0123456789abcdef01234567",
    baseline_branch="main",
    baseline_run_id="120",
    baseline_run_url="https://github.com/acme/app/actions/runs/120",
    baseline_age="2 days",
    baseline_reason="newest successful run on main that produced this suite",
)


@dataclass
class Case:
    baseline: EvalResult
    candidate: EvalResult
    comparison: Comparison
    gates: GateReport
    ctx: ReportContext


def make_case(n: int = 40, *, run_info: RunInfo = RUN_INFO, **kwargs: object) -> Case:
    baseline, candidate = synthetic_pair(n, **kwargs)  # type: ignore[arg-type]
    comparison = compare_results(baseline, candidate, CompareOptions(seed=42))
    gates = evaluate_gates(comparison, [baseline], [candidate], GateOptions(fail_on_regression=True))
    ctx = build_report_context(candidate, baseline, comparison, gates, run_info)
    return Case(baseline, candidate, comparison, gates, ctx)
