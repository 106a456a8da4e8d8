"""examples/local-model end to end on a real model: SmolLM2-135M served by llama.cpp.

Each run goes through the installed ``axl-eval`` CLI, over real HTTP, via a recording proxy
that keeps the server's own replies. The project's tokens and cost are checked against those
replies (the server's ``usage``), priced independently from the pricing file here.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.realmodel.conftest import PRICING, Run, axl
from tests.realmodel.server import ALIAS, Exchange
from tests.unit.report.report_unpack import explorer_data

pytestmark = pytest.mark.slow

RunExample = Callable[..., Run]
MODEL_URI = f"openai:{ALIAS}"
ITEMS = 8


def _price() -> tuple[float, float]:
    entry = json.loads(PRICING.read_text())["models"][MODEL_URI]
    return float(entry["input"]), float(entry["output"])


def _usage(exchange: Exchange) -> tuple[int, int]:
    usage = exchange.response["usage"]
    return int(usage["prompt_tokens"]), int(usage["completion_tokens"])


def _cost(exchanges: list[Exchange]) -> float:
    per_input, per_output = _price()
    return sum(p * per_input + c * per_output for p, c in map(_usage, exchanges)) / 1_000_000


def _is_judge(exchange: Exchange) -> bool:
    return "response_format" in exchange.request


def _calls_for(run: Run, item: dict[str, Any]) -> tuple[Exchange, Exchange]:
    """The item's generation call (its review is the last message) and its judge call (the
    judge prompt embeds the item's input, id included)."""
    review, item_id = item["input"]["review"], item["input"]["id"]
    generation = [
        e for e in run.exchanges if not _is_judge(e) and e.request["messages"][-1]["content"].endswith(review)
    ]
    judge = [
        e for e in run.exchanges if _is_judge(e) and f'"{item_id}"' in e.request["messages"][-1]["content"]
    ]
    assert len(generation) == 1 and len(judge) == 1, (item_id, len(generation), len(judge))
    return generation[0], judge[0]


@pytest.mark.parametrize("variant", ["baseline", "candidate"])
def test_every_item_and_judge_completes_against_the_server(run_example: RunExample, variant: str) -> None:
    run = run_example(variant, priced=True)
    assert run.raw["metadata"]["variant"] == variant
    assert [i["outcome"] for i in run.raw["items"]] == ["completed"] * ITEMS
    for item in run.raw["items"]:
        for name in ("sentiment", "one_word", "judge_agrees"):
            assert item["scoreDetails"][name]["outcome"] == "scored", (name, item["scoreDetails"][name])
        # The judge's reasoning is the model's own text, kept as scorer metadata.
        assert isinstance(item["scoreDetails"]["judge_agrees"]["metadata"]["reasoning"], str)
    # One generation and one judge call per item, each answered 200 by the server with the
    # key it was started with.
    assert len(run.exchanges) == 2 * ITEMS
    assert sum(map(_is_judge, run.exchanges)) == ITEMS
    assert {e.status for e in run.exchanges} == {200}
    assert {e.response["model"] for e in run.exchanges} == {ALIAS}


def test_the_two_prompts_answer_differently(run_example: RunExample) -> None:
    baseline, candidate = run_example("baseline", priced=True), run_example("candidate", priced=True)
    # The candidate's instruction makes the model answer with one label; the baseline chats.
    assert (
        candidate.raw["summary"]["scorers"]["one_word"]["mean"]
        > baseline.raw["summary"]["scorers"]["one_word"]["mean"]
    )
    assert [i["output"] for i in baseline.raw["items"]] != [i["output"] for i in candidate.raw["items"]]


@pytest.mark.parametrize("variant", ["baseline", "candidate"])
def test_tokens_and_cost_equal_the_servers_usage(run_example: RunExample, variant: str) -> None:
    run = run_example(variant, priced=True)
    acc = run.raw["accounting"]
    prompt = sum(_usage(e)[0] for e in run.exchanges)
    completion = sum(_usage(e)[1] for e in run.exchanges)
    assert prompt > 0 and completion > 0
    assert acc["usage"]["inputTokens"] == prompt
    assert acc["usage"]["outputTokens"] == completion
    assert acc["operations"]["total"] == acc["operations"]["settled"] == len(run.exchanges)
    assert acc["completeness"] == "complete" and acc["reasons"] == {}
    assert math.isclose(acc["knownCost"], _cost(run.exchanges), rel_tol=1e-9)
    assert math.isclose(
        acc["breakdown"]["generation"], _cost([e for e in run.exchanges if not _is_judge(e)]), rel_tol=1e-9
    )
    assert math.isclose(
        acc["breakdown"]["judging"], _cost([e for e in run.exchanges if _is_judge(e)]), rel_tol=1e-9
    )
    assert acc["provenance"] == {"price_table_estimate": pytest.approx(acc["knownCost"], rel=1e-12)}

    for item in run.raw["items"]:
        generation, judge = _calls_for(run, item)
        (gen_in, gen_out), (judge_in, judge_out) = _usage(generation), _usage(judge)
        assert item["metadata"]["tokens"] == {"input": gen_in, "output": gen_out, "reasoning": 0}
        assert item["accounting"]["usage"]["inputTokens"] == gen_in + judge_in
        assert item["accounting"]["usage"]["outputTokens"] == gen_out + judge_out
        assert item["scoreDetails"]["judge_agrees"]["accounting"]["usage"]["inputTokens"] == judge_in
        assert math.isclose(item["cost"], _cost([generation]), rel_tol=1e-9)
        assert math.isclose(item["scorerCost"], _cost([judge]), rel_tol=1e-9)
        # The output recorded is what the server generated.
        assert item["output"] == generation.response["choices"][0]["message"]["content"].strip()


def test_an_unpriced_run_is_incomplete_and_never_certified(run_example: RunExample, tmp_path: Path) -> None:
    unpriced = run_example("baseline", priced=False)
    priced = run_example("candidate", priced=True)
    acc = unpriced.raw["accounting"]
    # Tokens are still the server's; only the price is unknown, and it is not taken as $0.
    assert acc["usage"]["inputTokens"] == sum(_usage(e)[0] for e in unpriced.exchanges)
    assert acc["completeness"] == "incomplete"
    assert acc["reasons"] == {"unpriced_model": 2 * ITEMS}
    assert acc["knownCost"] == 0

    for base, cand in ((unpriced, priced), (priced, unpriced)):
        out = tmp_path / "cmp.json"
        proc = axl("compare", str(base.path), str(cand.path), "--json", str(out), "--seed", "1")
        assert proc.returncode == 0, proc.stdout + proc.stderr
        cost = json.loads(out.read_text())["comparison"]["cost"]
        assert cost["certified"] is False
        assert "incomplete accounting (unpriced_model" in cost["reason"]
        assert "not certified: " in proc.stdout


def test_priced_runs_are_certified_and_reported(run_example: RunExample, tmp_path: Path) -> None:
    baseline, candidate = run_example("baseline", priced=True), run_example("candidate", priced=True)
    out = tmp_path / "cmp.json"
    proc = axl("compare", str(baseline.path), str(candidate.path), "--json", str(out), "--seed", "1")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    comparison = json.loads(out.read_text())["comparison"]
    cost = comparison["cost"]
    assert cost["certified"] is True, cost
    assert "not certified" not in proc.stdout
    assert set(comparison["scorers"]) == {"sentiment", "one_word", "judge_agrees"}

    html, markdown = tmp_path / "report.html", tmp_path / "comment.md"
    proc = axl(
        "report", str(candidate.path), "--baseline", str(baseline.path),
        "--html", str(html), "--markdown", str(markdown), "--seed", "1",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    page, comment = html.read_text(), markdown.read_text()
    assert "judge_agrees" in page and "judge\\_agrees" in comment
    assert "Certified cost change" in comment
    # R-08's review carries markup; it reaches the page as packed item data, never as a live tag.
    assert "<script>alert(1)</script>" not in page
    _meta, _rows, details = explorer_data(page)
    assert "<script>alert(1)" in json.dumps(details, ensure_ascii=False)


def test_the_key_reaches_the_server_and_nothing_else(run_example: RunExample, api_key: str) -> None:
    run = run_example("candidate", priced=True)
    assert {e.headers["authorization"] for e in run.exchanges} == {f"Bearer {api_key}"}
    capture = run.path.with_name(run.path.stem + ".requests.jsonl")
    records = [json.loads(line) for line in capture.read_text().splitlines()]
    assert len(records) == len(run.exchanges)
    for text in (run.path.read_text(), capture.read_text(), run.proc.stdout, run.proc.stderr):
        assert api_key not in text
