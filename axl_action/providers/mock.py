"""A deterministic, offline mock model for tests and examples (``mock:<model>``).

Built-in behaviours by model name: ``mock:echo`` repeats the last user message,
``mock:judge`` answers a judge prompt with ``{"score": 1, "reasoning": ...}``, and any other
name replies ``Default output from mock:<model>``. A ``MockProvider`` registered under a name
can instead be given scripted replies (strings, or callables of the request), usage and cost.
"""

from __future__ import annotations

import json
import math
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Literal

from axl_action.providers.types import (
    CallTiming,
    ChatRequest,
    ChatResponse,
    TokenUsage,
    WireExchange,
    chat_completions_head,
)

Reply = str | Callable[[ChatRequest], str]


class MockProvider:
    """Answers without network; still calls ``before_dispatch`` so budgets apply to it."""

    def __init__(
        self,
        replies: Iterable[Reply] | None = None,
        *,
        name: str = "mock",
        usage: TokenUsage | Literal["auto"] | None = "auto",
        cost: float | None = 0.0,
        latency: float = 0.0,
    ) -> None:
        """``replies`` are used in order, then the built-in behaviour takes over.

        ``usage="auto"`` counts about one token per four characters; ``None`` reports no usage
        (to exercise ``usage_missing``). ``cost`` is reported as ``adapter_reported`` (a mock
        is free by default: an explicit 0 keeps accounting complete); ``None`` reports none so
        the gateway falls back to the price table.
        """
        self.name = name
        self._replies = list(replies or ())
        self._lock = threading.Lock()
        self._usage = usage
        self._cost = cost
        self._latency = latency
        self.requests: list[ChatRequest] = []
        """Every request answered, in order (for assertions)."""

    def chat(
        self, request: ChatRequest, *, before_dispatch: Callable[[], None] | None = None
    ) -> ChatResponse:
        if before_dispatch is not None:
            before_dispatch()
        started = time.perf_counter()
        with self._lock:
            self.requests.append(request)
            scripted = self._replies.pop(0) if self._replies else None
        if scripted is None:
            text = default_reply(request)
        elif isinstance(scripted, str):
            text = scripted
        else:
            text = scripted(request)
        if self._latency:
            time.sleep(self._latency)
        wire_ms = (time.perf_counter() - started) * 1000.0
        usage = estimate_usage(request, text) if self._usage == "auto" else self._usage
        return ChatResponse(
            text=text,
            usage=usage,
            provider_cost=self._cost,
            request_id=None,
            model=request.model,
            finish_reason="stop",
            timing=CallTiming(attempts=1, ttfb_ms=wire_ms, wire_ms=wire_ms),
            cost_provenance="adapter_reported",
            exchange=_exchange(request, text, usage),
        )


def _exchange(request: ChatRequest, text: str, usage: TokenUsage | None) -> WireExchange:
    """A synthetic exchange so request capture shows what the mock was asked and answered."""
    body = chat_completions_head(request)
    if request.response_format is not None:
        body["response_format"] = dict(request.response_format)
    reply: dict[str, object] = {"content": text, "finish_reason": "stop"}
    if usage is not None:
        reply["usage"] = usage.to_wire()
    return WireExchange(
        method="CALL",
        url=f"mock:{request.model}",
        request_headers={},
        request_body=body,
        status=200,
        response_body=reply,
        attempts=1,
    )


def default_reply(request: ChatRequest) -> str:
    """The built-in behaviour for ``request.model`` (see the module docstring)."""
    last_user = next((m.content for m in reversed(request.messages) if m.role == "user"), "")
    if request.model == "echo":
        return last_user
    if request.model == "judge":
        return json.dumps({"score": 1, "reasoning": "mock judge: every output passes"})
    return f"Default output from mock:{request.model}"


def estimate_usage(request: ChatRequest, text: str) -> TokenUsage:
    """About one token per four characters, never zero for a non-empty text."""
    prompt_chars = sum(len(m.content) for m in request.messages)
    return TokenUsage(input_tokens=math.ceil(prompt_chars / 4), output_tokens=math.ceil(len(text) / 4))


def from_env(env: Mapping[str, str]) -> MockProvider:
    """The mock needs no configuration."""
    return MockProvider()
