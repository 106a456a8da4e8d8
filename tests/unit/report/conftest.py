"""Fixtures for report tests (cases live in report_cases.py, shared with tests/browser)."""

from __future__ import annotations

import pytest
from report_cases import RUN_INFO, XSS, Case, make_case
from report_synth import synthetic_pair

from axl_action.compare.engine import CompareOptions, compare_results
from axl_action.compare.gates import GateOptions, evaluate_gates
from axl_action.report import build_report_context


@pytest.fixture(scope="session")
def small_case() -> Case:
    return make_case(40, failed_every=13, budget_every=17)


@pytest.fixture(scope="session")
def xss_case() -> Case:
    base, cand = synthetic_pair(
        12,
        scorers=("exact", XSS[:60]),
        texts={
            "input": XSS,
            "baseline_output": XSS + " old",
            "candidate_output": XSS + " new",
            "reasoning": XSS,
        },
        regress_fraction=0.9,
        failed_every=0,
    )
    base.metadata["note"] = XSS
    cand.metadata["note"] = XSS
    comparison = compare_results(base, cand, CompareOptions(seed=1))
    gates = evaluate_gates(comparison, [base], [cand], GateOptions(fail_on_regression=True))
    info = RUN_INFO.model_copy(update={"suite": XSS[:80], "warnings": [XSS]})
    ctx = build_report_context(cand, base, comparison, gates, info)
    return Case(base, cand, comparison, gates, ctx)
