"""Issue 11's report findings: cost direction and digits, unpriced spend, a scorer that scored
nothing, one scorer-error-rate definition, consistent item labels, the Δ chart's room.

The golden ``comment-cost-increase.md`` is the comment for a priced cost that rose by less than
$0.0005 per run ($0.001281 -> $0.001753): it once said "37% cheaper" and "$0.0010 -> $0.0020
($0.00, +36.8%)" beside a cost gate that failed on +36.8%.
"""

from __future__ import annotations

import re
from typing import Any

from report_synth import _accounting, build_result
from report_unpack import unpack_payload
from test_render_markdown import check_golden

from axl_action.compare.engine import CompareOptions, compare_results
from axl_action.compare.gates import GateOptions, evaluate_gates
from axl_action.report import (
    RunInfo,
    build_explorer,
    build_report_context,
    render_comment,
    render_report_html,
)
from axl_action.report.charts import delta_forest
from axl_action.schema import EvalResult

N = 30


def _item(i: int, *, gen: float, score: float | None = 1.0, fail_scorer: bool = False) -> dict[str, Any]:
    detail: dict[str, Any] = {"score": score, "duration": 0, "outcome": "scored"}
    item: dict[str, Any] = {
        "input": {"id": f"q{i}", "question": f"{i} + {i}"},
        "output": str(2 * i),
        "scores": {"exact": score},
        "duration": 100,
        "outcome": "completed",
        "accounting": _accounting(gen, 0.0),
        "cost": gen,
        "scorerCost": 0,
    }
    if fail_scorer:
        item["scores"] = {"exact": None}
        detail = {"score": None, "duration": 0, "outcome": "failed"}
        item["scorerErrors"] = [
            f'Scorer "exact" returned a bool (True); return a number, e.g. float(...), for input q{i}'
        ]
    item["scoreDetails"] = {"exact": detail}
    return item


def _run(run_id: str, items: list[dict[str, Any]], timestamp: str) -> EvalResult:
    return build_result(
        run_id=run_id,
        items=items,
        scorers=["exact"],
        scorer_types={"exact": "deterministic"},
        dataset="math",
        timestamp=timestamp,
    )


def _pair(b_gen: float, c_gen: float, **candidate: Any) -> tuple[EvalResult, EvalResult]:
    baseline = _run(
        "b0000000-0000-4000-8000-000000000001",
        [_item(i, gen=b_gen) for i in range(N)],
        "2026-11-30T12:00:00.000Z",
    )
    cand = _run(
        "c0000000-0000-4000-8000-000000000002",
        [_item(i, gen=c_gen, **candidate) for i in range(N)],
        "2026-11-30T13:00:00.000Z",
    )
    return baseline, cand


def _comment(baseline: EvalResult, candidate: EvalResult, **gates: Any) -> tuple[str, Any]:
    comparison = compare_results(baseline, candidate, CompareOptions(seed=1))
    report = evaluate_gates(comparison, [baseline], [candidate], GateOptions(**gates))
    ctx = build_report_context(candidate, baseline, comparison, report, RunInfo(suite="math"))
    return render_comment(ctx), (ctx, comparison)


def test_small_priced_cost_increase_golden() -> None:
    baseline, candidate = _pair(0.001281 / N, 0.001753 / N)
    text, (ctx, comparison) = _comment(baseline, candidate, max_cost_increase=20)
    check_golden("comment-cost-increase.md", text)
    # The JSON keeps the spec's rounding: both totals are $0.001 or $0.002, the delta 0.
    wire = comparison.cost.to_wire()
    assert wire["delta"] == 0 and wire["deltaPercent"] == 36.846
    # Direction and size from the unrounded values, everywhere.
    assert "37% more expensive" in text and "cheaper" not in text
    assert "- **Cost:** $0.00128 → $0.00175 (Δ +$0.000472, +36.8%)" in text
    assert (
        "| Cost | +20% | +36.8% | ❌ fail: Certified cost change +36.8% exceeds the +20.0% limit. |" in text
    )
    html = render_report_html(ctx, candidate, baseline, comparison)
    assert "37% more expensive" in html and "cheaper" not in html
    assert "$0.00128 → $0.00175" in html


def test_small_cost_decrease_is_cheaper() -> None:
    baseline, candidate = _pair(0.001753 / N, 0.001281 / N)
    text, _ = _comment(baseline, candidate)
    assert "27% cheaper" in text
    assert "- **Cost:** $0.00175 → $0.00128 (Δ -$0.000472, -26.9%)" in text


def _unpriced(item: dict[str, Any]) -> dict[str, Any]:
    acc = _accounting(0.0, 0.0)
    acc.update(completeness="incomplete", reasons={"unpriced_model": 1})
    acc["operations"].update(settled=0, unknown=1)
    return {
        **item,
        "accounting": acc,
        "cost": 0,
        "unpriced": True,
        "metadata": {"models": ["openai:smollm2-135m"], "modelCallCounts": {"openai:smollm2-135m": 1}},
    }


def _unpriced_run(run_id: str, timestamp: str) -> EvalResult:
    run = _run(run_id, [_unpriced(_item(i, gen=0.0)) for i in range(N)], timestamp)
    assert run.accounting is not None
    run.accounting.reasons = {"unpriced_model": N}
    return run


def test_unpriced_run_shows_unpriced_and_names_the_model() -> None:
    baseline = _unpriced_run("b0000000-0000-4000-8000-000000000001", "2026-11-30T12:00:00.000Z")
    candidate = _unpriced_run("c0000000-0000-4000-8000-000000000002", "2026-11-30T13:00:00.000Z")
    text, (ctx, comparison) = _comment(baseline, candidate)
    assert "- **Cost:** unpriced → unpriced — not certified:" in text
    assert "$0.00 → $0.00" not in text
    assert "- **Unpriced:** no price for `openai:smollm2-135m`" in text and "`--pricing`" in text
    # The item explorer's Cost column (row field 10) and the item detail.
    payload = build_explorer(candidate, baseline, ["exact"], unpriced=ctx.cost.unpriced_models)
    _, rows, details = unpack_payload(payload)
    assert {row[10] for row in rows} == {"unpriced"}
    assert details[0]["bc"] == "unpriced" and details[0]["gc"] == "unpriced"
    assert details[0]["unp"] == "1 unpriced_model (no price for openai:smollm2-135m)"
    html = render_report_html(ctx, candidate, baseline, comparison)
    assert "<code>openai:smollm2-135m</code>" in html
    # Without a baseline too.
    alone = build_report_context(candidate)
    own = render_comment(alone)
    assert "- **Cost:** unpriced (incomplete: 30 unpriced\\_model)" in own
    assert "| Budget | none | unpriced |" in own


def test_priced_explorer_cost_column() -> None:
    baseline, candidate = _pair(0.0000427, 0.000058)
    payload = build_explorer(candidate, baseline, ["exact"])
    _, rows, details = unpack_payload(payload)
    row = rows[0]
    assert row[5] == 0.000058 and row[10] == "$0.000058"
    assert details[0]["bc"] == "$0.000043"  # 4.3e-05 after 6-decimal rounding


def test_a_scorer_that_scored_nothing() -> None:
    baseline, candidate = _pair(0.001, 0.001, fail_scorer=True)
    text, (ctx, comparison) = _comment(baseline, candidate)
    # The JSON says mean 0 (as TS does); no report calls that a mean.
    assert comparison.scorers["exact"].candidate_mean == 0
    row = ctx.scorers[0]
    assert row.candidate_mean is None and row.delta is None
    assert row.unscored == "nothing scored on the candidate (30 failed)"
    assert "| exact | 1.000 | — | — | nothing scored on the candidate (30 failed) |" in text
    assert "0.000" not in text.split("| Scorer |")[1].split("\n\n")[0]
    assert "'exact' scored nothing on the candidate" in comparison.summary
    assert "regresses" not in comparison.summary
    warning = next(w for w in ctx.gates if w.name == "scorer-error-rate").message
    assert "failed on every item on the candidate" in warning and "surviving sample" not in warning
    # No dot at 0 in the Δ chart: there is no change to draw.
    assert delta_forest(ctx.scorers) == ""
    html = render_report_html(ctx, candidate, baseline, comparison)
    assert "nothing scored on the candidate (30 failed)" in html
    # Without a baseline: "—" and the same words.
    own = render_comment(build_report_context(candidate))
    assert "| exact | — (nothing scored (30 failed)) | 0 | 30 | 0 |" in own


def test_scorer_error_rate_means_the_same_with_and_without_a_baseline() -> None:
    baseline, _ = _pair(0.001, 0.001)
    items = [_item(i, gen=0.001, fail_scorer=i < 17) for i in range(20)]
    candidate = _run("c0000000-0000-4000-8000-000000000002", items, "2026-11-30T13:00:00.000Z")
    base20 = _run(
        "b0000000-0000-4000-8000-000000000001",
        baseline.model_dump(by_alias=True)["items"][:20],
        "2026-11-30T12:00:00.000Z",
    )
    compared, _ = _comment(base20, candidate)
    alone = render_comment(build_report_context(candidate))
    assert "| Scorer error rate | none | 85% (worst: exact, candidate, 17 of 20) |" in compared
    assert "| Scorer error rate | none | 85% (worst: exact, 17 of 20) |" in alone


def test_item_detail_labels_match() -> None:
    from report_cases import make_case

    text = render_comment(make_case(40).ctx)
    assert text.count("**Baseline output:**") == text.count("**Candidate output:**") > 0
    assert "**Candidate output**:" not in text


def test_delta_chart_leaves_room_for_its_labels() -> None:
    from axl_action.report.models import ScorerRow

    rows = [
        ScorerRow(
            name="a-long-scorer-name", delta=-0.15, ci_lower=-0.3, ci_upper=0.01, verdict="inconclusive"
        ),
        ScorerRow(name="b", delta=0.002, verdict="unchanged"),
    ]
    svg = delta_forest(rows)
    width = int(re.search(r'viewBox="0 0 (\d+) ', svg).group(1))  # type: ignore[union-attr]
    for x, label in re.findall(r'<text x="([\d.]+)"[^>]*class="c-label">([^<]*)</text>', svg):
        if label.endswith(("inconclusive", "unchanged")):
            # 7 px per character is more than any 11px sans-serif glyph needs.
            assert float(x) + 7 * len(label) <= width, (label, x, width)


def test_a_change_from_a_zero_baseline_mean_shows_no_percent_in_the_comment_and_html() -> None:
    baseline = _run(
        "b0000000-0000-4000-8000-000000000001",
        [_item(i, gen=0.0, score=0.0) for i in range(N)],
        "2026-11-30T12:00:00.000Z",
    )
    candidate = _run(
        "c0000000-0000-4000-8000-000000000002",
        [_item(i, gen=0.0, score=1.0) for i in range(N)],
        "2026-11-30T13:00:00.000Z",
    )
    text, (ctx, comparison) = _comment(baseline, candidate)
    assert comparison.scorers["exact"].from_zero
    assert ctx.scorers[0].delta_percent is None
    html = render_report_html(ctx, candidate, baseline, comparison)
    for surface in (text, html):
        assert "+0.0%" not in surface and "improves from 0 (0.00 -&gt; 1.00)" in surface.replace(
            "->", "-&gt;"
        )
