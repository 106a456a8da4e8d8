"""Console layout of the run command (compare spec §9) and multi-run aggregation (§6)."""

from __future__ import annotations

from typing import Any

import pytest

from axl_action.evals import console
from axl_action.evals.multirun import aggregate_runs
from axl_action.schema import EvalAccounting, wire_view


def stats(mean: float, scored: int = 10, failed: int = 0, skipped: int = 0) -> dict[str, Any]:
    return {
        "mean": mean,
        "min": 0,
        "max": 1,
        "p50": mean,
        "p95": 1,
        "scored": scored,
        "failed": failed,
        "skipped": skipped,
    }


def result(**summary: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "id": "r",
        "dataset": "qa",
        "metadata": {"workflows": ["qa-bot"]},
        "timestamp": "2026-09-24T10:15:02.123Z",
        "totalCost": 1.5,
        "accounting": {"knownCost": 1.5, "completeness": "complete", "reasons": {}},
        "duration": 12345,
        "items": [],
        "summary": {"count": 100, "failures": 0, "scorers": {"exact": stats(0.8)}},
    }
    base["summary"].update(summary)
    if "coverage" in summary:
        summary["coverage"].setdefault("scorers", {})  # real files always carry both blocks
    return base


def test_table_layout() -> None:
    r = result(
        scorers={"exact": stats(0.755, failed=2), "na": stats(0, scored=0, skipped=4)},
        timing={"mean": 1234, "min": 1, "max": 3000, "p50": 1100, "p95": 2999},
        modelTiming={
            "openai:gpt-4o": {
                "calls": 10,
                "wireMs": {"mean": 910.4, "min": 1, "max": 1000, "p50": 900, "p95": 1000},
                "queuedMs": {"mean": 37.5, "min": 0, "max": 40, "p50": 37, "p95": 40},
                "retryMs": {"mean": 0, "min": 0, "max": 0, "p50": 0, "p95": 0},
                "rateLimitRetries": 7,
            }
        },
    )
    lines = console.format_table(wire_view(r)).split("\n")
    assert lines[0] == "Eval: qa-bot x qa (100 items)"
    assert lines[1] == "  Scorer      Mean       Min       Max       p50       p95"
    assert lines[2] == "  " + "─" * 58
    assert lines[3] == "  exact       0.76      0.00      1.00      0.76      1.00   (10/12 scored, 2 failed)"
    assert lines[4] == "  na            --        --        --        --        --   (4 N/A)"
    # Every timing figure under its own header: mean, min, max, p50, p95.
    assert lines[5] == "  Timing     1.23s     0.00s     3.00s     1.10s     3.00s"
    assert lines[6:9] == [
        "  Model timing (mean/p95 per call):",
        "    openai:gpt-4o  (10 calls)",
        "      wire 910ms/1000ms · queued 38ms · retries 0ms · rate-limited 7×",
    ]
    assert lines[9] == ""
    assert lines[10] == "  Failures: 0/100 | Cost: $1.50 | Duration: 12.3s"


def test_cost_budget_coverage_and_causes_lines() -> None:
    r = result(
        failures=6,
        coverage={
            "items": {
                "completed": 94,
                "failed": 6,
                "cancelled": 0,
                "budget_skipped": 0,
                "budget_interrupted": 0,
            }
        },
        itemErrorRate={"failed": 6, "attempted": 100, "rate": 0.06, "limit": 0.1, "exceeded": False},
    )
    r["accounting"] = {
        "knownCost": 0.5,
        "completeness": "incomplete",
        "reasons": {"unpriced_model": 2, "usage_missing": 1},
        "budget": {
            "limit": 1,
            "status": "closed",
            "knownSpend": 1.004,
            "knownOvershoot": 0.004,
            "closedBy": "scorer",
        },
    }
    r["items"] = (
        [{"outcome": "failed", "failure": {"name": "ProviderError", "provider": "openai", "status": 429}}] * 3
        + [{"outcome": "failed", "failure": {"name": "ProviderError", "provider": "openai", "status": 0}}]
        + [{"outcome": "failed", "failure": {"name": "ValueError"}}] * 2
    )
    text = console.format_table(wire_view(r))
    assert (
        "  Failures: 6/100 | Cost: $0.50 (incomplete: 2 unpriced_model, 1 usage_missing) | Duration: 12.3s"
        in text
    )
    assert (
        "  Budget: STOPPED — $1.00 known spend against a $1.00 limit, $0.004 over, first observed by scorer"
        in text
    )
    assert "  Items: 94 completed, 6 failed — item error rate 6% (limit 10%)" in text
    assert "  Failure causes: 3 × 429 (openai), 2 × other, 1 × network (openai)" in text


def test_open_budget_and_unverified_spend() -> None:
    assert (
        console.format_budget_line(
            EvalAccounting.model_validate(
                {"budget": {"limit": 2, "status": "open", "knownSpend": 0.25, "knownOvershoot": 0}}
            )
        )
        == "  Budget: $0.25 of $2.00 (open)"
    )
    legacy = result()
    del legacy["accounting"]
    assert "Cost: $1.50 (unverified)" in console.format_table(wire_view(legacy))


def test_scorer_errors_block_lists_five_distinct() -> None:
    r = result()
    r["items"] = [{"scorerErrors": [f"err {i}", "err 0"]} for i in range(7)] + [{}]
    lines = console.format_table(wire_view(r)).split("\n")
    at = lines.index("  Scorer errors (7/100 items affected):")
    assert lines[at + 1 : at + 7] == [f"    - err {i}" for i in range(5)] + ["    ... and 2 more"]


def test_gate_messages() -> None:
    stopped = result(
        coverage={
            "items": {
                "completed": 5,
                "failed": 0,
                "cancelled": 0,
                "budget_skipped": 3,
                "budget_interrupted": 1,
            },
            "scorers": {},
        }
    )
    stopped["accounting"]["budget"] = {
        "limit": 0.01,
        "status": "closed",
        "knownSpend": 0.012,
        "knownOvershoot": 0.002,
    }
    assert console.budget_stop_message(wire_view(stopped).header, "f.py") == (
        "[axl-eval] BUDGET STOPPED: f.py — known spend $0.012 reached the $0.01 limit (over by $0.002). 3 case(s) never "
        "started, 1 stopped mid-flight, 5 completed. The run is incomplete by design; this is NOT a model or scorer failure."
    )
    exact = result(
        coverage={
            "items": {
                "completed": 5,
                "failed": 0,
                "cancelled": 0,
                "budget_skipped": 0,
                "budget_interrupted": 0,
            }
        }
    )
    exact["accounting"]["budget"] = {"limit": 1, "status": "closed", "knownSpend": 1, "knownOvershoot": 0}
    assert console.budget_stop_message(wire_view(exact).header, "f.py") is None

    wiped = result(
        count=3,
        failures=3,
        coverage={
            "items": {
                "completed": 0,
                "failed": 3,
                "cancelled": 0,
                "budget_skipped": 0,
                "budget_interrupted": 0,
            }
        },
    )
    assert console.wipeout_message(wire_view(wiped).header, "f.py") == (
        "[axl-eval] FAILED: f.py — all 3 item(s) errored in the workflow (0 succeeded); the eval produced no scorable output."
    )
    cancelled = result(
        count=3,
        failures=3,
        coverage={
            "items": {
                "completed": 0,
                "failed": 0,
                "cancelled": 3,
                "budget_skipped": 0,
                "budget_interrupted": 0,
            }
        },
    )
    assert console.wipeout_message(wire_view(cancelled).header, "f.py") is None

    rate = result(
        itemErrorRate={"failed": 250, "attempted": 339, "rate": 250 / 339, "limit": 0.05, "exceeded": True}
    )
    message = console.item_error_rate_message(wire_view(rate).header, "f.py run 2/3")
    assert message is not None and message.startswith(
        "[axl-eval] ITEM ERROR RATE EXCEEDED: f.py run 2/3 — 250 of 339 attempted item(s) failed in the workflow "
        "(item error rate 73.7%), over the 5% limit;"
    )
    degraded = result(
        degraded=[
            {"scorer": "exact", "rate": 0.1, "limit": 0, "type": "deterministic", "scored": 9, "failed": 1},
            {"scorer": "judge", "rate": 0.3, "limit": 0.25, "type": "llm", "scored": 7, "failed": 3},
        ]
    )
    assert console.degraded_messages(wire_view(degraded).header, "f.py") == [
        '[axl-eval] DEGRADED: f.py scorer "exact" (deterministic) failed 10.0% (1/10), over the deterministic zero-tolerance.',
        '[axl-eval] DEGRADED: f.py scorer "judge" (llm) failed 30.0% (3/10), over the 25.0% limit.',
    ]
    na = result(scorers={"na": stats(0, scored=0, skipped=4)})
    assert console.fully_skipped_notes(wire_view(na), "f.py")[0].startswith(
        '[axl-eval] NOTE: f.py scorer "na" was not applicable to any item (4 N/A, 0 scored)'
    )


def test_control_characters_are_neutralised() -> None:
    r = result(scorers={"bad\x1b[2Jname": stats(1)})
    assert "\x1b" not in console.format_table(wire_view(r))


@pytest.mark.parametrize(
    ("x", "digits", "text"),
    [
        (0.125, 2, "0.13"),
        (1.005, 2, "1.00"),
        (-0.0, 2, "0.00"),
        (12.25, 1, "12.3"),
        # From 1e21 JavaScript prints String(x); Decimal's quantize had raised there.
        (9.99e20, 1, "999000000000000000000.0"),
        (1e21, 3, "1e+21"),
        (-1.5e40, 2, "-1.5e+40"),
    ],
)
def test_to_fixed_matches_js(x: float, digits: int, text: str) -> None:
    assert console.to_fixed(x, digits) == text


def run_result(
    mean: float, timing: float | None, scored: int = 5, failed: int = 0, cost: float = 0.1
) -> dict[str, Any]:
    summary: dict[str, Any] = {
        "count": 5,
        "failures": 0,
        "scorers": {"exact": stats(mean, scored=scored, failed=failed)},
    }
    if timing is not None:
        summary["timing"] = {"mean": timing}
    return {
        "dataset": "qa",
        "metadata": {"workflows": ["w1"], "runGroupId": "g"},
        "totalCost": cost,
        "accounting": {"knownCost": cost, "completeness": "complete", "reasons": {}},
        "duration": 1000,
        "summary": summary,
    }


def test_aggregate_runs_and_table() -> None:
    runs = [run_result(0.8, 1000), run_result(0.9, 2000, failed=1), run_result(0.7, 1500, scored=0)]
    agg = aggregate_runs(runs)
    assert list(agg) == [
        "runGroupId",
        "runCount",
        "workflows",
        "dataset",
        "totalCost",
        "accounting",
        "totalDuration",
        "scorers",
        "timing",
    ]
    assert agg["runGroupId"] == "g" and agg["runCount"] == 3
    exact = agg["scorers"]["exact"]
    assert exact["mean"] == 0.85 and exact["std"] == 0.071 and exact["scored"] == 10 and exact["failed"] == 1
    assert agg["timing"] == {"mean": 1500, "std": 500}
    assert agg["accounting"]["knownCost"] == pytest.approx(0.3)
    table = console.format_multi_run_table(agg).split("\n")
    assert table[0] == "Eval: w1 x qa — 3 runs"
    assert table[3] == "  exact      0.850 ± 0.071     0.800     0.900   (10/11 scored, 1 failed)"
    assert table[4] == "  Timing      1.50 ± 0.50s"
    assert table[-1] == "  Total Cost: $0.30 | Total Duration: 3.0s"
    assert "timing" not in aggregate_runs([run_result(0.8, 1000), run_result(0.8, None)])
    with pytest.raises(ValueError, match="Cannot aggregate zero runs"):
        aggregate_runs([])


def test_legacy_file_counts_come_from_the_duration_heuristic() -> None:
    import json
    from pathlib import Path

    fixture = Path(__file__).resolve().parents[2] / "fixtures" / "axl-eval-0.16.1" / "math20-baseline.json"
    data = json.loads(fixture.read_text())
    legacy = data if isinstance(data, dict) else data[0]
    lines = console.format_table(wire_view(legacy)).split("\n")
    bounded = next(line for line in lines if line.startswith("  bounded"))
    assert bounded.endswith("(15/19 scored, 4 failed)")
    assert any("Cost: $0.043 (unverified)" in line for line in lines)


def test_budget_skipped_and_cancelled_items_are_not_failures() -> None:
    # 11 items budget-skipped, 1 cancelled, 2 failed: the summary's failures says 14, as TS does.
    r = result(
        failures=14,
        count=20,
        coverage={
            "items": {
                "completed": 6,
                "failed": 2,
                "cancelled": 1,
                "budget_skipped": 11,
                "budget_interrupted": 0,
            }
        },
    )
    text = console.format_table(wire_view(r))
    assert "  Failures: 2/20 | Not run: 12 | Cost: " in text
    assert "  Items: 6 completed, 2 failed, 1 cancelled, 11 budget-skipped" in text


def test_model_timing_fits_80_columns_and_says_it_leaves_judge_calls_out() -> None:
    stats_ms = {"mean": 12345.4, "min": 1, "max": 99999, "p50": 900, "p95": 98765}
    r = result(
        scorers={"judge": stats(0.5)},
        modelTiming={
            "openai:smollm2-135m": {
                "calls": 40,
                "wireMs": stats_ms,
                "queuedMs": stats_ms,
                "retryMs": stats_ms,
                "firstTokenMs": stats_ms,
                "firstTokenCalls": 40,
                "rateLimitRetries": 12,
            }
        },
    )
    r["metadata"]["scorerTypes"] = {"judge": "llm"}
    text = console.format_table(wire_view(r))
    block = text.split("  Model timing", 1)[1].split("\n\n", 1)[0]
    assert block.startswith(" (mean/p95 per call; judge calls not included):")
    assert "first token 12345ms/98765ms" in block and "rate-limited 12×" in block
    assert all(len(line) <= 80 for line in ("  Model timing" + block).split("\n")), block


def test_a_one_item_eval_says_item() -> None:
    assert console.format_table(wire_view(result(count=1))).startswith("Eval: qa-bot x qa (1 item)\n")
