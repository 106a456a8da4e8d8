"""Provider hardening over real loopback HTTP: truncated 2xx, body cap, server-requested waits.

Each test runs against the fake of every flavor, through both client paths: the lean
keep-alive client (``wire.py``) and ``requests`` (used with a custom session or a proxy).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import requests

from axl_action.providers.base import MAX_RESPONSE_ENV, HttpProvider, response_limit_from
from axl_action.providers.errors import ProviderConfigError, ProviderError
from axl_action.providers.registry import ProviderRegistry
from axl_action.providers.transport import HttpTransport, RetryPolicy
from axl_action.providers.types import ChatMessage, ChatRequest
from axl_action.runtime.runtime import Runtime
from axl_action.runtime.scope import track
from tests.fakes.llm_servers import OPEN_TRANSPORTS, FakeLLMServer
from tests.integration.providers.test_provider_http import CLASSES, KEY

FLAVORS = ("openai", "anthropic", "google")


@pytest.fixture(params=FLAVORS)
def server(request: pytest.FixtureRequest) -> Iterator[FakeLLMServer]:
    with FakeLLMServer(request.param) as fake:
        yield fake


@pytest.fixture(params=("lean", "requests"))
def path(request: pytest.FixtureRequest) -> str:
    return str(request.param)


class Harness:
    def __init__(
        self, server: FakeLLMServer, path: str, *, attempts: int = 4, max_bytes: int = 1 << 25
    ) -> None:
        self.sleeps: list[float] = []
        self.transport = HttpTransport(
            server.flavor,
            session=requests.Session() if path == "requests" else None,
            secrets=(KEY,),
            sleep=self.sleeps.append,
            rng=lambda: 0.5,
            policy=RetryPolicy(max_attempts=attempts, base_delay=0.1),
            max_response_bytes=max_bytes,
        )
        OPEN_TRANSPORTS.append(self.transport)
        self.provider: HttpProvider = CLASSES[server.flavor](
            api_key=KEY, base_url=server.base_url, transport=self.transport
        )

    def chat(self) -> Any:
        request = ChatRequest(model="model-a", messages=(ChatMessage("user", "hello"),), timeout=5)
        return self.provider.chat(request)


def test_truncated_2xx_is_not_retried_and_its_cost_is_unknown(server: FakeLLMServer, path: str) -> None:
    h = Harness(server, path)
    server.enqueue(server.truncated(keep=40))  # a retry would get the default success
    with pytest.raises(ProviderError, match=r"HTTP 200 response was cut off") as info:
        h.chat()
    assert (info.value.status, info.value.retryable, info.value.attempts) == (200, False, 1)
    assert len(server.requests) == 1 and h.sleeps == []
    # Through the measured gateway: one operation, dispatched, cost unknown (usage_missing:
    # the run's accounting becomes incomplete, never a silent $0).
    server.enqueue(server.truncated(keep=10))
    rt = Runtime(providers={server.flavor: h.provider})
    result = track(lambda: rt.chat(f"{server.flavor}:model-a", "hi"))
    assert result.status == "rejected"
    accounting = result.accounting
    assert accounting["operations"]["total"] == 1 and accounting["operations"]["unknown"] == 1
    assert accounting["reasons"] == {"usage_missing": 1}
    assert accounting["completeness"] == "incomplete" and accounting["knownCost"] == 0
    assert len(server.requests) == 2


def test_reset_before_any_response_is_still_retried(server: FakeLLMServer, path: str) -> None:
    h = Harness(server, path, attempts=2)
    server.enqueue(server.reset(), server.ok("second try"))
    assert h.chat().text == "second try"
    assert len(server.requests) == 2


def test_a_body_over_the_cap_fails_clearly_without_retry(server: FakeLLMServer, path: str) -> None:
    h = Harness(server, path, max_bytes=64 * 1024)
    server.enqueue(server.ok("x" * 200_000))
    with pytest.raises(ProviderError, match=r"larger than the 64 KiB limit") as info:
        h.chat()
    assert not info.value.retryable and len(server.requests) == 1
    assert info.value.hint is not None and MAX_RESPONSE_ENV in info.value.hint
    # Chunked framing (no content-length to refuse up front) is capped as well.
    chunked = server.ok("y" * 200_000)
    chunked.chunked = True
    server.enqueue(chunked)
    with pytest.raises(ProviderError, match=r"larger than the 64 KiB limit"):
        h.chat()
    # Under the cap, the same framing is fine.
    small = server.ok("z" * 1000)
    small.chunked = True
    server.enqueue(small)
    assert h.chat().text == "z" * 1000


def test_default_cap_is_32_mib_and_configurable_from_the_environment(server: FakeLLMServer) -> None:
    assert response_limit_from({}) == 32 * 1024 * 1024
    assert response_limit_from({MAX_RESPONSE_ENV: "64MiB"}) == 64 * 1024 * 1024
    assert response_limit_from({MAX_RESPONSE_ENV: "4096"}) == 4096
    for bad in ("0", "-5", "lots", "1.5MiB"):
        with pytest.raises(ProviderConfigError, match=MAX_RESPONSE_ENV) as info:
            response_limit_from({MAX_RESPONSE_ENV: bad})
        assert "positive number of bytes" in str(info.value.hint)
    key_var = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY", "google": "GOOGLE_API_KEY"}
    url_var = {"openai": "OPENAI_BASE_URL", "anthropic": "ANTHROPIC_BASE_URL", "google": "GOOGLE_BASE_URL"}
    env = {key_var[server.flavor]: KEY, url_var[server.flavor]: server.base_url, MAX_RESPONSE_ENV: "2KiB"}
    with ProviderRegistry(env) as registry:
        provider = registry.get(server.flavor)
        server.enqueue(server.ok("w" * 5000))
        with pytest.raises(ProviderError, match=r"larger than the 2 KiB limit"):
            provider.chat(ChatRequest(model="m", messages=(ChatMessage("user", "hi"),), timeout=5))


def test_retry_after_zero_or_past_falls_back_to_the_backoff(server: FakeLLMServer, path: str) -> None:
    h = Harness(server, path)
    server.enqueue(
        server.rate_limited(retry_after=0),
        server.rate_limited(retry_after=-3),
        server.rate_limited(http_date_in=-30),
        server.ok("finally"),
    )
    assert h.chat().text == "finally"
    assert h.sleeps == pytest.approx([0.1125, 0.225, 0.45])  # the backoff at rng=0.5, not 0 s


@pytest.mark.parametrize(("delay", "expected"), [("2s", 2.0), ("1.5s", 1.5), ("90s", 60.0), ("0s", 0.1125)])
def test_gemini_retry_info_is_honoured_like_retry_after(path: str, delay: str, expected: float) -> None:
    with FakeLLMServer("google") as server:
        h = Harness(server, path)
        server.enqueue(server.retry_info(delay), server.ok("after the quota window"))
        response = h.chat()
        assert response.text == "after the quota window"
        assert h.sleeps == pytest.approx([expected])  # 90 s is capped at 60; 0 s -> backoff
        assert response.timing.rate_limit_retries == 1


def test_a_retry_after_header_wins_over_retry_info() -> None:
    with FakeLLMServer("google") as server:
        h = Harness(server, "lean")
        server.enqueue(server.retry_info("9s", headers={"retry-after": "3"}), server.ok())
        h.chat()
        assert h.sleeps == [3.0]
