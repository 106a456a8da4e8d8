"""Adapters over real HTTP against loopback fakes of each provider's API."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from axl_action.providers.anthropic import AnthropicProvider
from axl_action.providers.base import HttpProvider
from axl_action.providers.capture import CaptureSink
from axl_action.providers.errors import ProviderError
from axl_action.providers.google import GoogleProvider
from axl_action.providers.openai import OpenAIProvider
from axl_action.providers.registry import ProviderRegistry
from axl_action.providers.transport import HttpTransport, RetryPolicy
from axl_action.providers.types import ChatMessage, ChatRequest
from axl_action.runtime.admission import AdmissionController
from axl_action.runtime.runtime import Runtime
from axl_action.runtime.scope import AdmissionDeniedError, track
from tests.fakes.llm_servers import OPEN_TRANSPORTS, FakeLLMServer

KEY = "sk-integration-SECRET-0123456789abcdef"
FLAVORS = ("openai", "anthropic", "google")
KEY_HEADER = {"openai": "authorization", "anthropic": "x-api-key", "google": "x-goog-api-key"}
ID_HEADER_PREFIX = {"openai": "oa", "anthropic": "an", "google": "go"}
CLASSES: dict[str, type[HttpProvider]] = {
    "openai": OpenAIProvider,
    "anthropic": AnthropicProvider,
    "google": GoogleProvider,
}


@pytest.fixture(params=FLAVORS)
def server(request: pytest.FixtureRequest) -> Iterator[FakeLLMServer]:
    with FakeLLMServer(request.param, request_id_prefix=ID_HEADER_PREFIX[request.param]) as fake:
        yield fake


class Harness:
    def __init__(self, server: FakeLLMServer, attempts: int = 3, max_retry_after: float = 60) -> None:
        self.server = server
        self.sleeps: list[float] = []
        self.transport = HttpTransport(
            server.flavor,
            secrets=(KEY,),
            sleep=self.sleeps.append,
            rng=lambda: 0.5,
            policy=RetryPolicy(max_attempts=attempts, base_delay=0.1, max_retry_after=max_retry_after),
        )
        OPEN_TRANSPORTS.append(self.transport)
        self.provider = CLASSES[server.flavor](
            api_key=KEY, base_url=server.base_url, transport=self.transport
        )

    def chat(self, timeout: float | None = 5, **kw: Any) -> Any:
        request = ChatRequest(model="model-a", messages=(ChatMessage("user", "hello"),), timeout=timeout)
        return self.provider.chat(request, **kw)


def _no_key(*texts: object) -> None:
    for text in texts:
        assert KEY not in str(text), text
        assert KEY not in repr(text), text


def test_happy_path_usage_request_id_and_key_only_in_its_header(server: FakeLLMServer) -> None:
    h = Harness(server)
    server.enqueue(server.ok("the answer", model="model-a"))
    response = h.chat()
    assert response.text == "the answer"
    assert (
        response.usage is not None and response.usage.input_tokens == 12 and response.usage.output_tokens == 5
    )
    assert response.request_id == f"{ID_HEADER_PREFIX[server.flavor]}_1"
    assert response.timing.attempts == 1 and response.timing.wire_ms > 0 and response.timing.ttfb_ms > 0
    (req,) = server.requests
    assert req.body is not None and "hello" in json.dumps(req.body)
    assert int(req.headers["content-length"]) == len(req.raw)
    assert KEY in req.headers[KEY_HEADER[server.flavor]]
    others = {k: v for k, v in req.headers.items() if k != KEY_HEADER[server.flavor]}
    _no_key(req.path, others, req.raw.decode())
    expected_path = {
        "openai": "/v1/chat/completions",
        "anthropic": "/v1/messages",
        "google": "/v1beta/models/model-a:generateContent",
    }[server.flavor]
    assert req.path == expected_path
    if server.flavor == "anthropic":
        assert req.headers["anthropic-version"] == "2023-06-01"


def test_client_error_is_not_retried_and_fields_are_set(server: FakeLLMServer) -> None:
    h = Harness(server)
    server.enqueue(server.error(400, f"bad request for key {KEY}"))
    with pytest.raises(ProviderError) as info:
        h.chat()
    err = info.value
    assert (err.provider, err.status, err.retryable, err.attempts) == (server.flavor, 400, False, 1)
    assert err.request_id == f"{ID_HEADER_PREFIX[server.flavor]}_1"
    assert "HTTP 400" in str(err) and "bad request for key" in str(err)
    _no_key(err, err.message, err.hint, err.exchange)
    assert len(server.requests) == 1 and h.sleeps == []


def test_429_retry_after_seconds_is_honoured_and_counted(server: FakeLLMServer) -> None:
    h = Harness(server)
    server.enqueue(server.rate_limited(retry_after=2), server.ok("after wait"))
    response = h.chat()
    assert response.text == "after wait"
    assert h.sleeps == [2.0]
    t = response.timing
    assert (t.attempts, t.rate_limit_retries, t.retry_ms) == (2, 1, 2000.0)


def test_429_retry_after_http_date_is_honoured_and_capped(server: FakeLLMServer) -> None:
    h = Harness(server, max_retry_after=5)
    server.enqueue(server.rate_limited(http_date_in=3), server.rate_limited(retry_after=120), server.ok())
    response = h.chat()
    assert 1.0 <= h.sleeps[0] <= 3.0  # HTTP-date has 1 s resolution
    assert h.sleeps[1] == 5  # capped
    assert response.timing.rate_limit_retries == 2


def test_5xx_retries_with_backoff_until_attempts_run_out(server: FakeLLMServer) -> None:
    h = Harness(server, attempts=3)
    server.enqueue(server.error(500), server.error(503), server.error(503, "still down"))
    with pytest.raises(ProviderError) as info:
        h.chat()
    err = info.value
    assert (err.status, err.retryable, err.attempts) == (503, True, 3)
    assert "after 3 attempts" in str(err) and "still down" in str(err)
    assert h.sleeps == pytest.approx([0.1125, 0.225])  # axl_action.retry at rng=0.5: base*2**n * 1.125
    assert len(server.requests) == 3


def test_connection_reset_is_retried_then_reported_as_network(server: FakeLLMServer) -> None:
    h = Harness(server, attempts=2)
    server.enqueue(server.reset(), server.ok("recovered"))
    assert h.chat().text == "recovered"
    server.enqueue(server.reset(), server.reset())
    with pytest.raises(ProviderError) as info:
        h.chat()
    assert (info.value.status, info.value.retryable) == (0, True)
    assert "network error" in str(info.value)


def test_slow_reply_times_out(server: FakeLLMServer) -> None:
    h = Harness(server, attempts=1)
    server.enqueue(server.slow(1.5))
    with pytest.raises(ProviderError, match="timed out") as info:
        h.chat(timeout=0.2)
    assert info.value.status == 0


def test_malformed_json_is_not_retried(server: FakeLLMServer) -> None:
    h = Harness(server)
    server.enqueue(server.malformed())
    with pytest.raises(ProviderError, match="not valid JSON") as info:
        h.chat()
    assert info.value.status == 200 and not info.value.retryable
    assert len(server.requests) == 1


def test_missing_fields_are_a_clear_error(server: FakeLLMServer) -> None:
    h = Harness(server)
    server.enqueue(server.ok(extra={"choices": None, "content": None, "candidates": None}))
    with pytest.raises(ProviderError, match="unexpected response for model model-a"):
        h.chat()


def test_missing_usage_is_none_and_unknown_in_accounting(server: FakeLLMServer) -> None:
    h = Harness(server)
    server.enqueue(server.no_usage("fine"))
    response = h.chat()
    assert response.text == "fine" and response.usage is None
    server.enqueue(server.no_usage("fine"))
    rt = Runtime(providers={server.flavor: h.provider})
    result = track(lambda: rt.chat(f"{server.flavor}:model-a", "hi"))
    assert result.accounting["reasons"] == {"usage_missing": 1}


def test_before_dispatch_runs_before_every_attempt(server: FakeLLMServer) -> None:
    h = Harness(server)
    calls: list[int] = []
    server.enqueue(server.error(503), server.ok())
    h.chat(before_dispatch=lambda: calls.append(len(server.requests)))
    assert calls == [0, 1]  # each check happened before that attempt reached the server

    def refuse_second() -> None:
        calls.append(-1)
        if calls.count(-1) == 2:
            raise RuntimeError("refused")

    server.enqueue(server.error(503))
    before = len(server.requests)
    with pytest.raises(RuntimeError, match="refused"):
        h.chat(before_dispatch=refuse_second)
    assert len(server.requests) == before + 1


def test_budget_closing_during_backoff_refuses_the_retry(server: FakeLLMServer) -> None:
    h = Harness(server)
    controller = AdmissionController(0.5)
    h.transport._sleep = lambda _s: controller.charge(1.0)  # another call settles while we wait
    server.enqueue(server.error(503))
    rt = Runtime(providers={server.flavor: h.provider})
    result = track(lambda: rt.chat(f"{server.flavor}:model-a", "hi"), admission=controller)
    assert isinstance(result.error, AdmissionDeniedError)
    assert result.accounting["reasons"] == {"usage_missing": 1}  # an attempt had left the process
    assert len(server.requests) == 1


def test_registry_from_env_end_to_end_with_pricing_and_capture(server: FakeLLMServer, tmp_path: Path) -> None:
    env = {
        "openai": {"OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": server.base_url},
        "anthropic": {"ANTHROPIC_API_KEY": KEY, "ANTHROPIC_BASE_URL": server.base_url},
        "google": {"GEMINI_API_KEY": KEY, "GOOGLE_BASE_URL": server.base_url},
    }[server.flavor]
    model = {"openai": "gpt-4o-mini", "anthropic": "claude-sonnet-4-5", "google": "gemini-2.5-flash"}[
        server.flavor
    ]
    registry = ProviderRegistry(env=env)
    runtime = Runtime()
    runtime.registry = registry  # type: ignore[attr-defined]
    sink = CaptureSink(tmp_path / "results.requests.jsonl")
    server.enqueue(server.ok("priced"), server.error(401, f"Incorrect API key provided: {KEY}"))

    def workflow() -> None:
        runtime.chat(f"{server.flavor}:{model}", [{"role": "user", "content": "q"}], temperature=0)
        runtime.chat(f"{server.flavor}:{model}", "again")

    with registry:
        result = track(lambda: track(workflow, capture_correlation={"caseIndex": 0}), capture=sink).value
    assert result is not None
    assert isinstance(result.error, ProviderError) and result.error.status == 401
    _no_key(result.error)
    acc = result.accounting
    assert acc["operations"]["settled"] == 1 and acc["reasons"] == {"usage_missing": 1}
    assert acc["knownCost"] > 0 and list(acc["provenance"]) == ["price_table_estimate"]
    sink.close()
    text = (tmp_path / "results.requests.jsonl").read_text()
    _no_key(text)
    records = [json.loads(line) for line in text.splitlines()]
    assert [("error" in r) for r in records] == [False, True]
    assert all(r["caseIndex"] == 0 and r["provider"] == server.flavor for r in records)
    assert records[0]["request"]["headers"][KEY_HEADER[server.flavor]] == "[REDACTED]"


def test_concurrent_calls_share_the_pool_and_keep_bodies_apart(server: FakeLLMServer) -> None:
    from concurrent.futures import ThreadPoolExecutor

    h = Harness(server)

    def ask(i: int) -> str:
        request = ChatRequest(model="model-a", messages=(ChatMessage("user", f"question {i}"),), timeout=5)
        return h.provider.chat(request).text

    with ThreadPoolExecutor(8) as pool:
        assert list(pool.map(ask, range(40))) == ["ok"] * 40
    seen = sorted(int(json.dumps(r.body).split("question ")[1].split('"')[0]) for r in server.requests)
    assert seen == list(range(40))
