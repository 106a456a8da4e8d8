"""The application's own ``openai`` client against the real SmolLM2 server (issue 26), run by
the CLI: an eval file (sdk_app/sdk_eval.py) whose workflow calls ``openai.OpenAI`` itself.

Figures are checked against the server's own ``usage``, kept by the recording proxy.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from tests.realmodel.conftest import PRICING, axl
from tests.realmodel.server import RecordingProxy

pytestmark = pytest.mark.slow

APP = Path(__file__).with_name("sdk_app") / "sdk_eval.py"
MODEL_URI = "openai:smollm2-135m"


def _price() -> tuple[float, float]:
    entry = json.loads(PRICING.read_text())["models"][MODEL_URI]
    return float(entry["input"]), float(entry["output"])


def run_app(
    proxy: RecordingProxy, api_key: str, out: Path, mode: str, *, concurrency: int, items: int = 8
) -> tuple[dict[str, Any], dict[str, Any], list[dict[str, Any]]]:
    """The result, the server's exchanges by prompt, and the capture records of one CLI run."""
    path = out / f"{mode}.json"
    mark = proxy.mark()
    proc = axl(
        str(APP), "--output", str(path), "--pricing", str(PRICING), "--capture-requests",
        "--concurrency", str(concurrency), "--max-item-error-rate", "1",
        env={"OPENAI_BASE_URL": proxy.base_url, "OPENAI_API_KEY": api_key, "SDK_MODE": mode, "SDK_ITEMS": str(items)},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    exchanges = {}
    for e in proxy.since(mark):
        body = e.request
        exchanges[body["messages"][-1]["content"] if "messages" in body else body["input"]] = e
    capture = path.with_name(path.stem + ".requests.jsonl")
    records = [json.loads(line) for line in capture.read_text().splitlines()]
    for text in (path.read_text(), capture.read_text(), proc.stdout, proc.stderr):
        assert api_key not in text
    return json.loads(path.read_text()), exchanges, records


def _check_chat(raw: dict[str, Any], exchanges: dict[str, Any], items: int) -> None:
    per_input, per_output = _price()
    assert len(exchanges) == items
    total_in = total_out = 0
    for item in raw["items"]:
        assert item["outcome"] == "completed", item
        usage = exchanges[item["input"]["prompt"]].response["usage"]
        p, c = int(usage["prompt_tokens"]), int(usage["completion_tokens"])
        assert item["accounting"]["usage"]["inputTokens"] == p > 0
        assert item["accounting"]["usage"]["outputTokens"] == c > 0
        assert math.isclose(item["cost"], (p * per_input + c * per_output) / 1e6, rel_tol=1e-9)
        total_in, total_out = total_in + p, total_out + c
    acc = raw["accounting"]
    assert acc["usage"]["inputTokens"] == total_in and acc["usage"]["outputTokens"] == total_out
    assert acc["operations"]["total"] == acc["operations"]["settled"] == items  # counted once
    assert acc["completeness"] == "complete" and acc["reasons"] == {}
    assert math.isclose(acc["knownCost"], (total_in * per_input + total_out * per_output) / 1e6, rel_tol=1e-9)
    assert raw["summary"]["modelTiming"][MODEL_URI]["calls"] == items


def test_sdk_chat_equals_the_servers_usage_and_runtime_chat(
    proxy: RecordingProxy, api_key: str, tmp_path: Path
) -> None:
    sdk, sdk_exchanges, records = run_app(proxy, api_key, tmp_path, "chat", concurrency=2)
    _check_chat(sdk, sdk_exchanges, 8)
    assert len(records) == 8 and {r["api"] for r in records} == {"openai.chat"}
    rt, rt_exchanges, _ = run_app(proxy, api_key, tmp_path, "runtime", concurrency=2)
    _check_chat(rt, rt_exchanges, 8)
    by_prompt = {i["input"]["prompt"]: i for i in rt["items"]}
    for item in sdk["items"]:
        other = by_prompt[item["input"]["prompt"]]
        assert item["accounting"]["usage"] == other["accounting"]["usage"]
        assert item["cost"] == other["cost"]


# llama-cpp-python's server interrupts a stream when another request arrives
# (interrupt_requests): streamed calls run one at a time.
@pytest.mark.parametrize(
    ("mode", "sent", "added"),
    [("stream", True, True), ("stream_usage", True, False), ("stream_no_usage", False, False)],
)
def test_streamed_calls(
    proxy: RecordingProxy, api_key: str, tmp_path: Path, mode: str, sent: bool, added: bool
) -> None:
    raw, exchanges, records = run_app(proxy, api_key, tmp_path, mode, concurrency=1)
    for item in raw["items"]:
        exchange = exchanges[item["input"]["prompt"]]
        # What the server received: include_usage added only when the app did not decide.
        assert exchange.request["stream_options"] == {"include_usage": sent}
        events = [
            json.loads(line[6:]) for line in exchange.response.splitlines() if line.startswith("data: {")
        ]
        text = "".join(c["delta"].get("content") or "" for e in events for c in e["choices"])
        assert item["output"] == text != ""
        reported = [e["usage"] for e in events if e.get("usage")]
        if reported:  # a server that honours include_usage: its counts, never a guess
            assert item["accounting"]["usage"]["inputTokens"] == reported[-1]["prompt_tokens"]
        else:  # llama-cpp-python 0.3 ignores stream_options: unknown, not $0
            assert item["accounting"]["reasons"] == {"usage_missing": 1}
            assert item["accounting"]["usage"]["inputTokens"] == 0
    if not any("usage" in e.response for e in exchanges.values()):
        assert raw["accounting"]["completeness"] == "incomplete"
        assert raw["accounting"]["reasons"] == {"usage_missing": 8}
    assert [bool(r.get("includeUsageAdded")) for r in records] == [added] * 8
    timing = raw["summary"]["modelTiming"][MODEL_URI]
    assert timing["firstTokenCalls"] == 8 and timing["firstTokenMs"]["min"] > 0


def test_runtime_stream_usage_off_leaves_the_request_as_written(proxy: RecordingProxy, api_key: str) -> None:
    import openai

    from axl_action import define_eval, run_eval
    from axl_action.evals.dataset import Dataset
    from axl_action.providers.pricing import PricingTable
    from axl_action.runtime.runtime import Runtime

    client = openai.OpenAI(base_url=proxy.base_url, api_key=api_key, max_retries=0)

    def workflow(input_: Any, _rt: Any) -> dict[str, Any]:
        messages: Any = [{"role": "user", "content": input_["prompt"]}]
        with client.chat.completions.create(
            model="smollm2-135m", messages=messages, stream=True, max_tokens=8, temperature=0
        ) as stream:
            return {"output": "".join(c.choices[0].delta.content or "" for c in stream if c.choices)}

    mark = proxy.mark()
    data = Dataset("d", items=[{"input": {"prompt": "Say one word about salt."}}])
    result = run_eval(
        define_eval("wf", data, [], workflow, concurrency=1),
        Runtime(pricing=PricingTable.load(PRICING), stream_usage=False),
    ).model_dump(by_alias=True, exclude_none=True)
    (exchange,) = proxy.since(mark)
    assert "stream_options" not in exchange.request
    assert result["items"][0]["outcome"] == "completed" and result["items"][0]["output"]
    assert result["accounting"]["reasons"] == {"usage_missing": 1}


def test_module_level_async_client_at_concurrency_8(
    proxy: RecordingProxy, api_key: str, tmp_path: Path
) -> None:
    # 16 items at concurrency 8: the second wave reuses the client's pooled connections,
    # bound to the first items' event loops ("Event loop is closed" today).
    raw, exchanges, _ = run_app(proxy, api_key, tmp_path, "async", concurrency=8, items=16)
    _check_chat(raw, exchanges, 16)


def test_responses_api(proxy: RecordingProxy, api_key: str, tmp_path: Path) -> None:
    import urllib.error
    import urllib.request

    probe = urllib.request.Request(
        f"{proxy.base_url}/responses",
        data=json.dumps({"model": "smollm2-135m", "input": "hi", "max_output_tokens": 1}).encode(),
        headers={"authorization": f"Bearer {api_key}", "content-type": "application/json"},
    )
    try:
        urllib.request.urlopen(probe, timeout=60).close()
    except urllib.error.HTTPError as exc:
        exc.close()  # it holds the open response; left to the GC it warns (ResourceWarning)
        if exc.code == 404:
            pytest.skip("this llama.cpp server does not serve /v1/responses")
        raise
    raw, exchanges, _ = run_app(proxy, api_key, tmp_path, "responses", concurrency=1)
    for item in raw["items"]:
        usage = exchanges[item["input"]["prompt"]].response["usage"]
        assert item["accounting"]["usage"]["inputTokens"] == usage["input_tokens"]
        assert item["accounting"]["usage"]["outputTokens"] == usage["output_tokens"]
