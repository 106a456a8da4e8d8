"""Provider-neutral value types: chat requests/responses and per-call timing, plus
:class:`~axl_action.schema.accounting.TokenUsage` (declared with the accounting it is summed
into, and re-exported here).

These are plain frozen dataclasses (not pydantic models) because they are created on the hot
path of every provider call and never parsed from untrusted input directly; adapters build them
from already-validated wire JSON.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from axl_action.schema.accounting import TokenUsage as TokenUsage  # the provider API's name for it

Role = Literal["system", "user", "assistant"]


@dataclass(frozen=True, slots=True)
class ChatMessage:
    """One message of a chat conversation."""

    role: Role
    """Who speaks: ``system`` (instructions), ``user`` or ``assistant``."""
    content: str
    """The message text."""

    def to_wire(self) -> dict[str, str]:
        """``{"role", "content"}``: the message as chat APIs and request records carry it."""
        return {"role": self.role, "content": self.content}


@dataclass(frozen=True, slots=True)
class CallTiming:
    """Timing of one provider call, in milliseconds (spec §12.3 ``CallTiming``)."""

    queued_ms: float = 0.0
    """Time spent waiting for a concurrency slot before the first attempt (0 without a limiter)."""
    attempts: int = 1
    """HTTP attempts made, including the successful one."""
    retry_ms: float = 0.0
    """Sum of backoff / retry-after waits between attempts."""
    ttfb_ms: float = 0.0
    """Time to the first response byte (headers) of the final attempt."""
    first_token_ms: float | None = None
    """Time to the first streamed token of the final attempt; ``None`` when not streaming."""
    wire_ms: float = 0.0
    """Time on the wire: sum of all attempts' request/response durations."""
    rate_limit_retries: int = 0
    """How many retries were caused by HTTP 429."""

    def to_wire(self) -> dict[str, float | int]:
        """The camelCase mapping of spec §12.3 (``firstTokenMs`` omitted when absent)."""
        out: dict[str, float | int] = {
            "queuedMs": self.queued_ms,
            "attempts": self.attempts,
            "retryMs": self.retry_ms,
            "ttfbMs": self.ttfb_ms,
        }
        if self.first_token_ms is not None:
            out["firstTokenMs"] = self.first_token_ms
        out["wireMs"] = self.wire_ms
        out["rateLimitRetries"] = self.rate_limit_retries
        return out


@dataclass(frozen=True, slots=True)
class ChatRequest:
    """A provider-neutral chat completion request."""

    model: str
    """The bare model name (without the ``provider:`` prefix)."""
    messages: tuple[ChatMessage, ...]
    """The conversation, oldest first."""
    temperature: float | None = None
    """Sampling temperature; provider default when ``None``."""
    max_tokens: int | None = None
    """Cap on completion tokens; provider default when ``None`` (Anthropic requires one: 4096)."""
    stop: tuple[str, ...] | None = None
    """Stop sequences."""
    response_format: Mapping[str, Any] | None = None
    """E.g. ``{"type": "json_object"}`` to ask for a JSON reply."""
    provider_options: Mapping[str, Any] = field(default_factory=dict)
    """Raw fields merged last into the provider's request body (escape hatch)."""
    timeout: float | None = None
    """Per-attempt timeout in seconds; the adapter default when ``None``."""


def chat_completions_head(request: ChatRequest) -> dict[str, Any]:
    """The fields a Chat Completions body starts with: ``model``, ``messages`` and, when set,
    ``temperature``. One home for them, since the OpenAI adapter's body and the mock's synthetic
    exchange (which shows the request as that API would carry it) must not drift apart; each
    adds its own fields after these, in its own order."""
    body: dict[str, Any] = {
        "model": request.model,
        "messages": [m.to_wire() for m in request.messages],
    }
    if request.temperature is not None:
        body["temperature"] = request.temperature
    return body


@dataclass(frozen=True, slots=True)
class ChatResponse:
    """A provider-neutral chat completion response."""

    text: str
    """The completion text (text parts concatenated)."""
    usage: TokenUsage | None
    """Normalized token usage; ``None`` when the provider reported none."""
    provider_cost: float | None
    """A cost in USD the provider reported itself (e.g. OpenRouter ``usage.cost``), if any."""
    request_id: str | None
    """The provider's request id, from the response headers or body."""
    model: str
    """The model that answered (as the provider names it)."""
    finish_reason: str | None
    """Why generation stopped (``stop``, ``length``, ``end_turn``, ``STOP``...)."""
    timing: CallTiming
    """How long the call took."""
    cost_provenance: str = "provider_reported"
    """Basis of ``provider_cost``: ``provider_reported`` or ``adapter_reported`` (spec §7.1)."""
    exchange: WireExchange | None = field(default=None, repr=False, compare=False)
    """The final HTTP exchange (secret headers already redacted), for request capture."""


@dataclass(frozen=True, slots=True)
class WireExchange:
    """What went over the wire for the final attempt of a call, safe to capture.

    Request headers are stored already redacted (the transport never keeps a secret header
    value here), so logging or capturing an exchange cannot leak an API key through headers.
    """

    method: str
    """HTTP method."""
    url: str
    """Request URL (never carries a key: adapters send keys in headers only)."""
    request_headers: Mapping[str, str]
    """Request headers with secret values replaced by ``[REDACTED]``."""
    request_body: Any
    """The JSON request body as sent."""
    status: int | None = None
    """HTTP status of the final attempt; ``None`` when no response arrived."""
    response_headers: Mapping[str, str] = field(default_factory=dict)
    """Response headers of the final attempt."""
    response_body: Any = None
    """Parsed JSON response body, or the raw text when it was not JSON."""
    attempts: int = 0
    """HTTP attempts dispatched."""
