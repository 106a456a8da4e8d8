"""The application's own SDK calls, measured as they are (issue 26): the real ``openai``,
``anthropic`` and ``google-genai`` clients against loopback servers speaking their wire formats."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from typing import Any

import anthropic
import httpx2
import openai
import pytest
import requests
from google import genai
from google.genai import types as genai_types

from axl_action import (
    ContextThreadPoolExecutor,
    define_eval,
    measure_model_calls,
    propagate_context,
    run_eval,
)
from axl_action.evals.dataset import Dataset
from axl_action.providers import intercept
from axl_action.providers.pricing import ModelPrice, PricingTable
from axl_action.runtime.runtime import Runtime
from axl_action.runtime.scope import track
from tests.fakes.llm_servers import OPEN_TRANSPORTS, FakeLLMServer, RecordedRequest, Reply

KEY = "sk-sdk-capture-SECRET-0123456789abcdef"
PRICES = {
    "openai:fake-model": ModelPrice(input=1.0, output=2.0),
    "anthropic:fake-model": ModelPrice(input=3.0, output=15.0),
    "google:fake-model": ModelPrice(input=0.5, output=1.5),
    "openai:gpt-x": ModelPrice(input=10.0, output=30.0),
}


def table() -> PricingTable:
    return PricingTable(dict(PRICES), as_of="2026-01-01", sources=["test"])


def runtime() -> Runtime:
    return Runtime(pricing=table())


def dataset(n: int) -> Dataset:
    return Dataset("d", items=[{"input": {"n": i}} for i in range(n)])


def by_prompt_size(server: FakeLLMServer) -> None:
    """Usage that depends on the request (prompt length), so each item's figures are its own."""

    def answer(request: RecordedRequest) -> Reply:
        body = request.body or {}
        text = json.dumps(body.get("messages") or body.get("contents") or body.get("input"))
        prompt = len(text)
        usage: dict[str, Any]
        if server.flavor == "openai":
            usage = {"prompt_tokens": prompt, "completion_tokens": 7, "total_tokens": prompt + 7}
        elif server.flavor == "anthropic":
            usage = {"input_tokens": prompt, "output_tokens": 7}
        else:
            usage = {"promptTokenCount": prompt, "candidatesTokenCount": 7, "totalTokenCount": prompt + 7}
        return server.ok("ok", usage=usage)

    server.responder = answer


def prompt_tokens(n: int) -> int:
    return len(json.dumps([{"role": "user", "content": f"question {n}"}]))


@pytest.fixture
def oa() -> Iterator[FakeLLMServer]:
    with FakeLLMServer("openai") as fake:
        yield fake


def test_openai_sync_calls_are_measured_per_item_and_priced(oa: FakeLLMServer) -> None:
    by_prompt_size(oa)
    client = openai.OpenAI(base_url=oa.base_url, api_key=KEY)

    def workflow(input_: Any, _rt: Any) -> dict[str, Any]:
        reply = client.chat.completions.create(
            model="fake-model", messages=[{"role": "user", "content": f"question {input_['n']}"}]
        )
        return {"output": reply.choices[0].message.content}

    result = run_eval(define_eval("wf", dataset(12), [], workflow, concurrency=8), runtime()).model_dump(
        by_alias=True, exclude_none=True
    )
    assert len(oa.requests) == 12
    for index, item in enumerate(result["items"]):
        n = item["input"]["n"]
        assert item["outcome"] == "completed", item
        acc = item["accounting"]
        assert acc["operations"]["total"] == 1 and acc["operations"]["settled"] == 1
        assert acc["usage"]["inputTokens"] == prompt_tokens(n), index
        assert acc["usage"]["outputTokens"] == 7
        assert item["cost"] == pytest.approx((prompt_tokens(n) * 1.0 + 7 * 2.0) / 1e6)
        assert item["metadata"]["modelCallCounts"] == {"openai:fake-model": 1}
    assert result["accounting"]["operations"]["total"] == 12
    assert "unattributed" not in result["accounting"]
    assert result["summary"]["modelTiming"]["openai:fake-model"]["calls"] == 12


def test_openai_async_client_per_item(oa: FakeLLMServer) -> None:
    by_prompt_size(oa)

    async def workflow(input_: Any, _rt: Any) -> dict[str, Any]:
        async with openai.AsyncOpenAI(base_url=oa.base_url, api_key=KEY) as client:
            reply = await client.chat.completions.create(
                model="fake-model", messages=[{"role": "user", "content": f"question {input_['n']}"}]
            )
        return {"output": reply.choices[0].message.content}

    result = run_eval(define_eval("wf", dataset(8), [], workflow, concurrency=8), runtime()).model_dump(
        by_alias=True, exclude_none=True
    )
    for item in result["items"]:
        assert item["accounting"]["usage"]["inputTokens"] == prompt_tokens(item["input"]["n"])
        assert item["accounting"]["operations"]["settled"] == 1


def test_same_figures_as_runtime_chat(oa: FakeLLMServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """On the same prompt, an SDK call and runtime.chat settle the same usage and cost, and
    runtime.chat under an installed measurement is counted once (never also by the hooks)."""
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("OPENAI_BASE_URL", oa.base_url)
    client = openai.OpenAI(base_url=oa.base_url, api_key=KEY)
    messages = [{"role": "user", "content": "the same prompt"}]
    rt = runtime()

    def via_sdk(input_: Any, _rt: Any) -> dict[str, Any]:
        client.chat.completions.create(model="fake-model", messages=messages)  # type: ignore[arg-type]
        return {"output": 1}

    def via_runtime(input_: Any, r: Any) -> dict[str, Any]:
        r.chat("openai:fake-model", messages)
        return {"output": 1}

    a = run_eval(define_eval("wf", dataset(1), [], via_sdk), rt).model_dump(by_alias=True)["items"][0]
    b = run_eval(define_eval("wf", dataset(1), [], via_runtime), rt).model_dump(by_alias=True)["items"][0]
    assert len(oa.requests) == 2
    assert a["accounting"]["usage"] == b["accounting"]["usage"]
    assert a["cost"] == b["cost"] > 0
    assert b["accounting"]["operations"]["total"] == 1


def test_budget_refuses_before_dispatch_and_sdks_do_not_retry(oa: FakeLLMServer) -> None:
    """At concurrency 16 with a budget that closes after the first calls: no request is sent
    after the close, the refusal is not retried by the SDK, and the items are interrupted."""
    oa.responder = lambda _r: oa.ok(usage={"prompt_tokens": 100_000, "completion_tokens": 0})
    client = openai.OpenAI(base_url=oa.base_url, api_key=KEY, max_retries=3)
    closed_at: list[int] = []

    def workflow(input_: Any, _rt: Any) -> dict[str, Any]:
        # More calls than the budget pays for even on one thread: whatever the threads'
        # schedule, an item in flight when the budget closes has a call left to refuse (with
        # three calls an item, a schedule where every item in flight was on its last call
        # refused nothing).
        for _ in range(8):
            client.chat.completions.create(model="fake-model", messages=[{"role": "user", "content": "x"}])
        return {"output": 1}

    definition = define_eval("wf", dataset(40), [], workflow, concurrency=16, budget="$0.5")
    result = run_eval(definition, runtime()).model_dump(by_alias=True, exclude_none=True)
    closed_at.append(len(oa.requests))
    acc = result["accounting"]
    # Each call costs $0.1: the budget admits what was in flight when it closed, no more.
    assert acc["operations"]["denied"] > 0
    assert len(oa.requests) == acc["operations"]["settled"] + acc["operations"]["unknown"]
    assert all(r.headers.get("x-stainless-retry-count", "0") == "0" for r in oa.requests)
    outcomes = {item["outcome"] for item in result["items"]}
    assert "budget_interrupted" in outcomes
    assert outcomes <= {"completed", "budget_interrupted", "budget_skipped"}
    # Nothing was sent after a refusal, on any thread: the server saw at most 16 in flight
    # after the close, and every settled call was paid.
    assert acc["knownCost"] == pytest.approx(0.1 * acc["operations"]["settled"])


@pytest.mark.parametrize("flavor", ["openai", "anthropic"])
def test_refusal_is_not_retried_by_the_sdk(flavor: str) -> None:
    with FakeLLMServer(flavor) as server:  # type: ignore[arg-type]
        server.responder = lambda _r: server.ok(usage=_big_usage(flavor))
        client = _client(flavor, server, max_retries=5)

        def workflow(input_: Any, _rt: Any) -> dict[str, Any]:
            for _ in range(5):
                _call(flavor, client)
            return {"output": 1}

        result = run_eval(
            define_eval("wf", dataset(1), [], workflow, concurrency=1, budget="$0.15"), runtime()
        ).model_dump(by_alias=True, exclude_none=True)
        item = result["items"][0]
        assert item["outcome"] == "budget_interrupted", item
        # $0.1 per call: the second call passes the budget, the third is refused unsent.
        assert len(server.requests) == 2
        assert item["accounting"]["operations"]["denied"] == 1
        assert item["accounting"]["operations"]["settled"] == 2


def _big_usage(flavor: str) -> dict[str, Any]:
    if flavor == "openai":
        return {"prompt_tokens": 100_000, "completion_tokens": 0}
    return {"input_tokens": 100_000 / 3, "output_tokens": 0}


def _client(flavor: str, server: FakeLLMServer, **kw: Any) -> Any:
    if flavor == "openai":
        return openai.OpenAI(base_url=server.base_url, api_key=KEY, **kw)
    return anthropic.Anthropic(base_url=server.base_url, api_key=KEY, **kw)


def _call(flavor: str, client: Any) -> Any:
    if flavor == "openai":
        return client.chat.completions.create(model="fake-model", messages=[{"role": "user", "content": "x"}])
    return client.messages.create(
        model="fake-model", max_tokens=10, messages=[{"role": "user", "content": "x"}]
    )


def test_sdk_retries_on_429_and_500_are_attempts_of_one_operation(oa: FakeLLMServer) -> None:
    oa.enqueue(
        oa.error(429, "slow down", headers={"retry-after-ms": "5"}),
        oa.error(500, "oops", headers={"retry-after-ms": "5"}),
        oa.ok(usage={"prompt_tokens": 10, "completion_tokens": 4}),
    )
    client = openai.OpenAI(base_url=oa.base_url, api_key=KEY, max_retries=3)

    def workflow() -> Any:
        return client.chat.completions.create(model="fake-model", messages=[{"role": "user", "content": "x"}])

    with measure_model_calls(pricing=table()):
        scope = track(workflow, capture_timing_samples=True)
    assert scope.status == "fulfilled", scope.error
    assert [r.headers["x-stainless-retry-count"] for r in oa.requests] == ["0", "1", "2"]
    acc = scope.accounting
    assert acc["operations"] == {"total": 1, "settled": 1, "unknown": 0, "denied": 0, "byKind": {"chat": 1}}
    assert acc["knownCost"] == pytest.approx((10 + 8) / 1e6)
    samples = scope.samples
    assert samples is not None
    (timing,) = samples["openai:fake-model"]
    assert timing.attempts == 3 and timing.rate_limit_retries == 1 and timing.retry_ms > 0


def test_a_call_whose_attempts_all_failed_is_free(oa: FakeLLMServer) -> None:
    oa.responder = lambda _r: oa.error(400, "bad request")
    client = openai.OpenAI(base_url=oa.base_url, api_key=KEY, max_retries=0)

    def workflow() -> Any:
        with pytest.raises(openai.BadRequestError):
            client.chat.completions.create(model="fake-model", messages=[{"role": "user", "content": "x"}])

    with measure_model_calls(pricing=table()):
        scope = track(workflow)
    acc = scope.accounting
    assert acc["operations"]["settled"] == 1 and acc["knownCost"] == 0 and acc["completeness"] == "complete"


def question_workflow(flavor: str, server: FakeLLMServer, **client_options: Any) -> Any:
    """A workflow asking "question N" through the real Anthropic or Gemini client."""
    if flavor == "anthropic":
        client: Any = anthropic.Anthropic(base_url=server.base_url, api_key=KEY, **client_options)
    else:
        client = genai.Client(
            api_key=KEY,
            http_options=genai_types.HttpOptions(base_url=server.base_url, api_version="v1beta"),
        )

    def workflow(input_: Any, _rt: Any) -> dict[str, Any]:
        text = f"question {input_['n']}"
        if flavor == "anthropic":
            reply = client.messages.create(
                model="fake-model", max_tokens=10, messages=[{"role": "user", "content": text}]
            )
            return {"output": reply.content[0].text}
        answer = client.models.generate_content(model="fake-model", contents=text)
        return {"output": answer.text}

    return workflow


@pytest.mark.parametrize("flavor", ["anthropic", "google"])
def test_anthropic_and_gemini_clients(flavor: str) -> None:
    with FakeLLMServer(flavor) as server:  # type: ignore[arg-type]
        by_prompt_size(server)
        workflow = question_workflow(flavor, server)
        result = run_eval(define_eval("wf", dataset(6), [], workflow, concurrency=4), runtime()).model_dump(
            by_alias=True, exclude_none=True
        )
        price = PRICES[f"{flavor}:fake-model"]
        for item in result["items"]:
            assert item["outcome"] == "completed", item
            sent = next(
                r for r in server.requests if f"question {item['input']['n']}" in r.raw.decode("utf-8")
            )
            assert sent.path.endswith("/v1/messages" if flavor == "anthropic" else ":generateContent")
            reply = server.responder(sent)  # type: ignore[misc]
            usage = reply.body["usage" if flavor == "anthropic" else "usageMetadata"]
            tokens_in = usage["input_tokens" if flavor == "anthropic" else "promptTokenCount"]
            acc = item["accounting"]
            assert acc["usage"]["inputTokens"] == tokens_in
            assert acc["usage"]["outputTokens"] == 7
            assert item["cost"] == pytest.approx((tokens_in * price.input + 7 * price.output) / 1e6)


def test_threads_the_app_starts(oa: FakeLLMServer) -> None:
    """With the context propagated, calls on the app's threads belong to the item; without it
    they are the run's unattributed spend, never lost (and the budget counts them)."""
    client = openai.OpenAI(base_url=oa.base_url, api_key=KEY)

    def call() -> None:
        client.chat.completions.create(model="fake-model", messages=[{"role": "user", "content": "x"}])

    def workflow(input_: Any, _rt: Any) -> dict[str, Any]:
        with ContextThreadPoolExecutor(2) as pool:
            list(pool.map(lambda _i: call(), range(2)))
        thread = threading.Thread(target=propagate_context(call))
        thread.start()
        thread.join()
        lost = threading.Thread(target=call)  # a plain thread: no context
        lost.start()
        lost.join()
        return {"output": 1}

    result = run_eval(define_eval("wf", dataset(2), [], workflow, concurrency=2), runtime()).model_dump(
        by_alias=True, exclude_none=True
    )
    for item in result["items"]:
        assert item["accounting"]["operations"]["total"] == 3
    stray = result["accounting"]["unattributed"]
    assert stray["operations"]["total"] == 2 and stray["operations"]["settled"] == 2
    assert result["accounting"]["operations"]["total"] == 8
    assert result["accounting"]["knownCost"] == pytest.approx(8 * (12 + 10) / 1e6)


def test_requests_is_measured_and_other_paths_pass_untouched(oa: FakeLLMServer) -> None:
    def workflow() -> Any:
        requests.post(
            f"{oa.base_url}/chat/completions",
            json={"model": "fake-model", "messages": [{"role": "user", "content": "x"}]},
            timeout=5,
        )
        # Not a model API: passes unmeasured.
        requests.post(f"{oa.base_url}/files", json={"model": "fake-model", "messages": []}, timeout=5)
        with httpx2.Client() as http:
            http.post(f"{oa.base_url}/models", json={"model": "x"})

    with measure_model_calls(pricing=table()):
        scope = track(workflow)
    assert scope.status == "fulfilled", scope.error
    assert len(oa.requests) == 3
    assert scope.accounting["operations"]["total"] == 1
    assert scope.accounting["knownCost"] == pytest.approx(22 / 1e6)


def test_hooks_are_restored_exactly_and_nest() -> None:
    before = (httpx2.Client.send, httpx2.AsyncClient.send, requests.Session.send)
    with measure_model_calls():
        assert httpx2.Client.send is not before[0]
        with measure_model_calls():
            pass
        assert intercept.installed() and httpx2.Client.send is not before[0]
    assert (httpx2.Client.send, httpx2.AsyncClient.send, requests.Session.send) == before
    assert not intercept.installed()


def test_bad_usage_settles_usage_missing_with_a_warning(
    oa: FakeLLMServer, capsys: pytest.CaptureFixture[str]
) -> None:
    oa.enqueue(
        oa.ok(usage={"prompt_tokens": -5, "completion_tokens": 2}),
        oa.ok(usage={"prompt_tokens": "many", "completion_tokens": 2}),
    )
    client = openai.OpenAI(base_url=oa.base_url, api_key=KEY)

    def workflow(input_: Any, _rt: Any) -> dict[str, Any]:
        client.chat.completions.create(model="fake-model", messages=[{"role": "user", "content": "x"}])
        return {"output": 1}

    result = run_eval(define_eval("wf", dataset(2), [], workflow, concurrency=1), runtime()).model_dump(
        by_alias=True, exclude_none=True
    )
    for item in result["items"]:
        assert item["outcome"] == "completed"
        assert item["accounting"]["reasons"] == {"usage_missing": 1}
        assert item["cost"] == 0 and item["unpriced"] is True
    err = capsys.readouterr().err
    assert "item 0:" in err and "negative" in err
    assert "item 1:" in err and "not a number" in err


def test_async_clients_measured_outside_the_runner(oa: FakeLLMServer) -> None:
    async def main() -> list[Any]:
        async with openai.AsyncOpenAI(base_url=oa.base_url, api_key=KEY) as client:

            async def one() -> Any:
                return await client.chat.completions.create(
                    model="fake-model", messages=[{"role": "user", "content": "x"}]
                )

            return await asyncio.gather(*(one() for _ in range(8)))

    # On a fresh thread: a session-scoped Playwright (sync API) elsewhere in the suite keeps an
    # event loop running on the main thread, where asyncio.run() is refused.
    from concurrent.futures import ThreadPoolExecutor

    with measure_model_calls(pricing=table()), ThreadPoolExecutor(1) as pool:
        scope = pool.submit(track, lambda: asyncio.run(main())).result()
    assert scope.status == "fulfilled", scope.error
    assert scope.accounting["operations"]["settled"] == 8


# ---- streaming (server-sent events)


def streaming(server: FakeLLMServer, usage: dict[str, Any] | None = None) -> None:
    """Stream replies, with usage only when the request asks for it (as OpenAI does)."""

    def answer(request: RecordedRequest) -> Reply:
        options = (request.body or {}).get("stream_options") or {}
        return server.streamed("one two three", usage=usage, include_usage=bool(options.get("include_usage")))

    server.responder = answer


def run_items(workflow: Any, n: int = 1, rt: Runtime | None = None, **kw: Any) -> dict[str, Any]:
    result = run_eval(define_eval("wf", dataset(n), [], workflow, **kw), rt or runtime())
    return result.model_dump(by_alias=True, exclude_none=True)


def test_openai_stream_gets_include_usage_added(oa: FakeLLMServer) -> None:
    streaming(oa, {"prompt_tokens": 30, "completion_tokens": 3, "total_tokens": 33})
    client = openai.OpenAI(base_url=oa.base_url, api_key=KEY)

    def workflow(input_: Any, _rt: Any) -> dict[str, Any]:
        stream = client.chat.completions.create(
            model="fake-model", messages=[{"role": "user", "content": "x"}], stream=True
        )
        text = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
        return {"output": text}

    result = run_items(workflow)
    item = result["items"][0]
    assert item["output"] == "one two three"
    assert oa.requests[0].body["stream_options"] == {"include_usage": True}
    acc = item["accounting"]
    assert acc["usage"]["inputTokens"] == 30 and acc["usage"]["outputTokens"] == 3
    assert acc["operations"]["byKind"] == {"stream": 1}
    assert item["cost"] == pytest.approx((30 + 6) / 1e6)
    timing = result["summary"]["modelTiming"]["openai:fake-model"]
    assert timing["firstTokenCalls"] == 1 and timing["firstTokenMs"]["mean"] > 0


@pytest.mark.parametrize("how", ["runtime switch off", "app said false"])
def test_openai_stream_without_usage_is_usage_missing(oa: FakeLLMServer, how: str) -> None:
    streaming(oa)
    client = openai.OpenAI(base_url=oa.base_url, api_key=KEY)
    extra: dict[str, Any] = (
        {} if how == "runtime switch off" else {"stream_options": {"include_usage": False}}
    )

    def workflow(input_: Any, _rt: Any) -> dict[str, Any]:
        stream = client.chat.completions.create(
            model="fake-model", messages=[{"role": "user", "content": "x"}], stream=True, **extra
        )
        return {"output": "".join(c.choices[0].delta.content or "" for c in stream if c.choices)}

    rt = Runtime(pricing=table(), stream_usage=how != "runtime switch off")
    item = run_items(workflow, rt=rt)["items"][0]
    assert item["output"] == "one two three"
    assert oa.requests[0].body.get("stream_options", {}).get("include_usage") in (None, False)
    assert item["accounting"]["reasons"] == {"usage_missing": 1}
    assert item["unpriced"] is True


def test_openai_async_stream(oa: FakeLLMServer) -> None:
    streaming(oa, {"prompt_tokens": 8, "completion_tokens": 3, "total_tokens": 11})

    async def workflow(input_: Any, _rt: Any) -> dict[str, Any]:
        async with openai.AsyncOpenAI(base_url=oa.base_url, api_key=KEY) as client:
            stream = await client.chat.completions.create(
                model="fake-model", messages=[{"role": "user", "content": "x"}], stream=True
            )
            parts = [c.choices[0].delta.content or "" async for c in stream if c.choices]
        return {"output": "".join(parts)}

    item = run_items(workflow, 4, concurrency=4)["items"][0]
    assert item["output"] == "one two three"
    assert item["accounting"]["usage"]["inputTokens"] == 8


def test_anthropic_stream_usage_is_cumulative_never_summed() -> None:
    with FakeLLMServer("anthropic") as server:
        streaming(server, {"input_tokens": 20, "output_tokens": 9})
        client = anthropic.Anthropic(base_url=server.base_url, api_key=KEY)

        def workflow(input_: Any, _rt: Any) -> dict[str, Any]:
            with client.messages.stream(
                model="fake-model", max_tokens=50, messages=[{"role": "user", "content": "x"}]
            ) as stream:
                text = "".join(stream.text_stream)
            return {"output": text}

        item = run_items(workflow)["items"][0]
        assert item["output"] == "one two three"
        usage = item["accounting"]["usage"]
        # message_start said output 1, message_delta says 9 in all: 9, not 10.
        assert usage["inputTokens"] == 20 and usage["outputTokens"] == 9
        assert item["cost"] == pytest.approx((20 * 3 + 9 * 15) / 1e6)


def test_anthropic_stream_stopped_early_settles_what_was_reported() -> None:
    with FakeLLMServer("anthropic") as server:
        reply = server.streamed("one two three", usage={"input_tokens": 20, "output_tokens": 9})
        reply.stall_after = reply.body.index(b"event: content_block_start")  # message_start only
        server.enqueue(reply)
        client = anthropic.Anthropic(base_url=server.base_url, api_key=KEY)

        def workflow(input_: Any, _rt: Any) -> dict[str, Any]:
            stream = client.messages.create(
                model="fake-model", max_tokens=50, messages=[{"role": "user", "content": "x"}], stream=True
            )
            first = next(iter(stream))
            stream.close()  # the app stops reading
            return {"output": first.type}

        item = run_items(workflow)["items"][0]
        assert item["output"] == "message_start"
        usage = item["accounting"]["usage"]
        assert usage["inputTokens"] == 20 and usage["outputTokens"] == 1
        assert item["accounting"]["operations"]["settled"] == 1


def test_gemini_stream_reads_the_last_usage() -> None:
    with FakeLLMServer("google") as server:
        server.responder = lambda _r: server.streamed(
            "one two three", usage={"promptTokenCount": 14, "candidatesTokenCount": 3, "totalTokenCount": 17}
        )
        client = genai.Client(
            api_key=KEY, http_options=genai_types.HttpOptions(base_url=server.base_url, api_version="v1beta")
        )

        def workflow(input_: Any, _rt: Any) -> dict[str, Any]:
            chunks = client.models.generate_content_stream(model="fake-model", contents="x")
            return {"output": "".join(c.text or "" for c in chunks)}

        result = run_items(workflow)
        item = result["items"][0]
        assert server.requests[0].path.split("?")[0].endswith(":streamGenerateContent")
        assert item["output"] == "one two three"
        assert item["accounting"]["usage"]["inputTokens"] == 14
        assert item["accounting"]["usage"]["outputTokens"] == 3
        assert result["summary"]["modelTiming"]["google:fake-model"]["firstTokenCalls"] == 1


def test_stream_broken_mid_event_is_usage_missing(
    oa: FakeLLMServer, capsys: pytest.CaptureFixture[str]
) -> None:
    reply = oa.streamed("one two three", include_usage=True)
    reply.truncate_after = len(reply.body) - 30  # inside the usage chunk
    oa.enqueue(reply)
    client = openai.OpenAI(base_url=oa.base_url, api_key=KEY, max_retries=0)

    def workflow(input_: Any, _rt: Any) -> dict[str, Any]:
        stream = client.chat.completions.create(
            model="fake-model", messages=[{"role": "user", "content": "x"}], stream=True
        )
        return {"output": "".join(c.choices[0].delta.content or "" for c in stream if c.choices)}

    item = run_items(workflow)["items"][0]
    assert item["accounting"]["reasons"] == {"usage_missing": 1}
    assert "item 0:" in capsys.readouterr().err


# ---- Responses, Embeddings, tool calls, capture, LangChain


def openai_apis(server: FakeLLMServer) -> None:
    """Replies for /responses and /embeddings beside chat (the fake's default)."""

    def answer(request: RecordedRequest) -> Reply:
        body = request.body or {}
        if request.path.endswith("/responses"):
            return Reply(
                200,
                {
                    "id": "resp_1",
                    "object": "response",
                    "created_at": 0,
                    "model": "gpt-x",
                    "status": "completed",
                    "output": [
                        {
                            "type": "message",
                            "id": "msg_1",
                            "status": "completed",
                            "role": "assistant",
                            "content": [{"type": "output_text", "text": "hello", "annotations": []}],
                        }
                    ],
                    "usage": {
                        "input_tokens": 11,
                        "output_tokens": 4,
                        "total_tokens": 15,
                        "input_tokens_details": {"cached_tokens": 0},
                        "output_tokens_details": {"reasoning_tokens": 0},
                    },
                },
            )
        if request.path.endswith("/embeddings"):
            inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
            return Reply(
                200,
                {
                    "object": "list",
                    "data": [
                        {"object": "embedding", "index": i, "embedding": [0.1, 0.2]}
                        for i in range(len(inputs))
                    ],
                    "model": body["model"],
                    "usage": {"prompt_tokens": 8 * len(inputs), "total_tokens": 8 * len(inputs)},
                },
            )
        messages = body.get("messages") or []
        if body.get("tools") and not any(m.get("role") == "tool" for m in messages):
            return server.ok(
                extra={
                    "choices": [
                        {
                            "index": 0,
                            "finish_reason": "tool_calls",
                            "message": {
                                "role": "assistant",
                                "content": None,
                                "tool_calls": [
                                    {
                                        "id": "call_1",
                                        "type": "function",
                                        "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
                                    }
                                ],
                            },
                        }
                    ]
                }
            )
        return server.ok("sunny")

    server.responder = answer


def test_responses_and_embeddings_priced_by_the_model_the_reply_names(oa: FakeLLMServer) -> None:
    openai_apis(oa)
    client = openai.OpenAI(base_url=oa.base_url, api_key=KEY)

    def workflow(input_: Any, _rt: Any) -> dict[str, Any]:
        # The request names an alias; the reply names the model that answered (gpt-x).
        answer = client.responses.create(model="alias-latest", input="hi")
        vectors = client.embeddings.create(model="text-embedding-3-small", input=["a", "b"])
        return {"output": [answer.output_text, len(vectors.data)]}

    item = run_items(workflow, rt=Runtime())["items"][0]
    assert item["output"] == ["hello", 2]
    acc = item["accounting"]
    assert acc["operations"]["byKind"] == {"chat": 1, "embedding": 1}
    assert acc["operations"]["settled"] == 1 and acc["reasons"] == {"unpriced_model": 1}  # gpt-x: no price
    assert acc["usage"]["inputTokens"] == 11 + 16
    assert item["cost"] == pytest.approx(16 * 0.02 / 1e6)  # the bundled embedding price
    assert item["metadata"]["modelCallCounts"] == {"openai:gpt-x": 1}
    priced = run_items(workflow)["items"][0]  # with gpt-x in the table
    assert priced["cost"] == pytest.approx((11 * 10 + 4 * 30) / 1e6)


def test_tool_calling_round_trip_two_operations_both_captured(oa: FakeLLMServer, tmp_path: Any) -> None:
    from axl_action.providers.capture import CaptureSink

    openai_apis(oa)
    client = openai.OpenAI(base_url=oa.base_url, api_key=KEY)
    tools = [
        {
            "type": "function",
            "function": {
                "name": "get_weather",
                "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
            },
        }
    ]

    def workflow(input_: Any, _rt: Any) -> dict[str, Any]:
        messages: list[Any] = [{"role": "user", "content": "weather in Paris?"}]
        first = client.chat.completions.create(model="fake-model", messages=messages, tools=tools)  # type: ignore[arg-type]
        call = first.choices[0].message.tool_calls[0]  # type: ignore[index]
        messages += [first.choices[0].message.model_dump(exclude_none=True)]
        messages += [{"role": "tool", "tool_call_id": call.id, "content": "sunny, 21C"}]
        final = client.chat.completions.create(model="fake-model", messages=messages, tools=tools)  # type: ignore[arg-type]
        return {"output": final.choices[0].message.content}

    sink = CaptureSink(tmp_path / "r.requests.jsonl")
    result = run_eval(define_eval("wf", dataset(1), [], workflow), runtime(), capture=sink)
    sink.close()
    item = result.model_dump(by_alias=True, exclude_none=True)["items"][0]
    assert item["output"] == "sunny"
    assert item["accounting"]["operations"]["settled"] == 2
    text = (tmp_path / "r.requests.jsonl").read_text("utf-8")
    assert KEY not in text
    records = [json.loads(line) for line in text.splitlines()]
    assert [r["api"] for r in records] == ["openai.chat", "openai.chat"]
    assert all(r["caseIndex"] == 0 for r in records)
    assert (
        records[0]["response"]["body"]["choices"][0]["message"]["tool_calls"][0]["function"]["name"]
        == "get_weather"
    )
    assert records[1]["request"]["body"]["messages"][-1]["role"] == "tool"
    # The item lists its two calls in order, the first naming the tool its reply asked for,
    # each with the operation id its capture record carries.
    calls = item["calls"]
    assert [c["operationId"] for c in calls] == [r["operationId"] for r in records]
    assert [c.get("tools") for c in calls] == [["get_weather"], None]
    for call in calls:
        assert call["model"] == "openai:fake-model" and call["kind"] == "chat"
        assert call["purpose"] == "generation" and call["outcome"] == "settled"
        assert call["inputTokens"] > 0 and call["outputTokens"] > 0
        assert call["wireMs"] >= 0 and call["attempts"] == 1
    assert sum(c["cost"] for c in calls) == pytest.approx(item["cost"])


def test_capture_records_that_include_usage_was_added(oa: FakeLLMServer, tmp_path: Any) -> None:
    from axl_action.providers.capture import CaptureSink

    streaming(oa)
    client = openai.OpenAI(base_url=oa.base_url, api_key=KEY)

    def workflow(input_: Any, _rt: Any) -> dict[str, Any]:
        stream = client.chat.completions.create(
            model="fake-model", messages=[{"role": "user", "content": "x"}], stream=True
        )
        return {"output": "".join(c.choices[0].delta.content or "" for c in stream if c.choices)}

    sink = CaptureSink(tmp_path / "r.requests.jsonl")
    run_eval(define_eval("wf", dataset(1), [], workflow), runtime(), capture=sink)
    sink.close()
    (record,) = [json.loads(line) for line in (tmp_path / "r.requests.jsonl").read_text("utf-8").splitlines()]
    assert record["includeUsageAdded"] is True
    assert record["request"]["body"]["stream_options"] == {"include_usage": True}
    assert record["response"]["body"]["events"][-1]["usage"]["prompt_tokens"] == 12


def test_langchain_over_openai_is_measured_once(oa: FakeLLMServer) -> None:
    from langchain_openai import ChatOpenAI

    model = ChatOpenAI(base_url=oa.base_url, api_key=KEY, model="fake-model")  # type: ignore[arg-type]

    def workflow(input_: Any, _rt: Any) -> dict[str, Any]:
        return {"output": model.invoke("hi").content}

    item = run_items(workflow)["items"][0]
    assert item["output"] == "ok"
    assert len(oa.requests) == 1
    assert item["accounting"]["operations"]["total"] == 1
    assert item["accounting"]["usage"]["inputTokens"] == 12


def test_a_module_level_async_client_serves_every_item_and_every_run(oa: FakeLLMServer) -> None:
    """Issue 26 item 8: one ``AsyncOpenAI()`` made once (as at import time) binds its connection
    pool to the loop it first ran on; every item of every run must share that loop."""
    by_prompt_size(oa)
    client = openai.AsyncOpenAI(base_url=oa.base_url, api_key=KEY)
    loops: set[int] = set()
    in_flight, peak = [0], [0]
    lock = threading.Lock()

    async def workflow(input_: Any, _rt: Any) -> dict[str, Any]:
        loops.add(id(asyncio.get_running_loop()))
        with lock:
            in_flight[0] += 1
            peak[0] = max(peak[0], in_flight[0])
        try:
            reply = await client.chat.completions.create(
                model="fake-model", messages=[{"role": "user", "content": f"question {input_['n']}"}]
            )
            await asyncio.sleep(0.01)
        finally:
            with lock:
                in_flight[0] -= 1
        return {"output": reply.choices[0].message.content}

    try:
        for _run in range(2):  # a second run (a --runs repeat) reuses the client's pooled connections
            result = run_items(workflow, n=24, concurrency=8)
            assert [i["outcome"] for i in result["items"]] == ["completed"] * 24, result["items"][0]
            for item in result["items"]:
                assert item["accounting"]["usage"]["inputTokens"] == prompt_tokens(item["input"]["n"])
    finally:
        # Its pooled connections belong to the shared loop: closed there (track drives an
        # awaitable on it), not left for the garbage collector (a ResourceWarning).
        assert track(client.close).error is None
    assert len(loops) == 1
    assert 1 < peak[0] <= 8  # items overlap on the one loop, bounded by the concurrency
    assert len(oa.requests) == 48


def test_a_custom_scorers_own_sdk_calls_are_measured_in_a_rescore(oa: FakeLLMServer) -> None:
    """``rescore`` measures the SDK calls a custom scorer makes as judging, as a run does."""
    from axl_action.evals.rescore import rescore
    from axl_action.evals.scorer import scorer

    client = openai.OpenAI(base_url=oa.base_url, api_key=KEY)
    OPEN_TRANSPORTS.append(client)  # its pooled connections are closed after the test

    def grade(output: Any, input_: Any) -> float:
        reply = client.chat.completions.create(
            model="fake-model", messages=[{"role": "user", "content": f"grade {output}"}]
        )
        return 1.0 if reply.choices[0].message.content else 0.0

    source = run_eval(define_eval("wf", dataset(3), [], lambda i, _rt: {"output": i["n"]}), runtime())
    before = len(oa.requests)
    again = rescore(source, [scorer("sdk-judge", grade)], runtime()).model_dump(
        by_alias=True, exclude_none=True
    )
    assert len(oa.requests) - before == 3
    for item in again["items"]:
        assert item["scores"] == {"sdk-judge": 1}
        assert item["scorerCost"] > 0 and item["cost"] == 0
        (made,) = item["calls"]
        assert made["purpose"] == "judging" and made["model"] == "openai:fake-model"
    assert again["accounting"]["breakdown"]["judging"] == pytest.approx(
        sum(item["scorerCost"] for item in again["items"])
    )
