"""Anthropic Messages API adapter."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from axl_action.providers.base import (
    HttpProvider,
    MalformedResponseError,
    ParsedReply,
    dig,
    number,
)
from axl_action.providers.types import ChatRequest, TokenUsage

DEFAULT_BASE_URL = "https://api.anthropic.com"
API_VERSION = "2023-06-01"
DEFAULT_MAX_TOKENS = 4096
"""The Messages API requires ``max_tokens``; used when the request sets none."""


class AnthropicProvider(HttpProvider):
    """``POST {base}/v1/messages`` with ``x-api-key`` and ``anthropic-version``."""

    name = "anthropic"
    key_env = ("ANTHROPIC_API_KEY",)
    base_url_env = "ANTHROPIC_BASE_URL"
    default_base_url = DEFAULT_BASE_URL

    def endpoint(self, request: ChatRequest) -> str:
        return f"{self.base_url}/v1/messages"

    def headers(self) -> dict[str, str]:
        return {"x-api-key": self.api_key, "anthropic-version": API_VERSION}

    def wire_body(self, request: ChatRequest) -> dict[str, Any]:
        system = "\n\n".join(m.content for m in request.messages if m.role == "system")
        body: dict[str, Any] = {
            "model": request.model,
            "max_tokens": request.max_tokens or DEFAULT_MAX_TOKENS,
            "messages": [m.to_wire() for m in request.messages if m.role != "system"],
        }
        if system:
            body["system"] = system
        if request.temperature is not None:
            body["temperature"] = request.temperature
        if request.stop:
            body["stop_sequences"] = list(request.stop)
        # The Messages API has no JSON mode: a json_object response_format is satisfied by the
        # prompt itself, so it is deliberately not sent.
        return body

    def parse(self, body: Any) -> ParsedReply:
        blocks = dig(body, "content")
        if not isinstance(blocks, list):
            raise MalformedResponseError("content is not a list of blocks")
        text = "".join(
            str(b.get("text", "")) for b in blocks if isinstance(b, Mapping) and b.get("type") == "text"
        )
        return ParsedReply.from_wire(
            text,
            parse_usage(body.get("usage")),
            model=body.get("model"),
            finish_reason=body.get("stop_reason"),
            request_id=body.get("id"),
        )


def parse_usage(raw: Any) -> TokenUsage | None:
    """Anthropic reports cache reads/writes *beside* ``input_tokens``; they are added in so
    ``input_tokens`` means the whole prompt, as for the other providers."""
    if not isinstance(raw, Mapping) or ("input_tokens" not in raw and "output_tokens" not in raw):
        return None
    cache_read = number(raw.get("cache_read_input_tokens"))
    cache_write = number(raw.get("cache_creation_input_tokens"))
    return TokenUsage(
        input_tokens=number(raw.get("input_tokens")) + cache_read + cache_write,
        output_tokens=number(raw.get("output_tokens")),
        cached_tokens=cache_read,
        cache_write_tokens=cache_write,
    )


from_env = AnthropicProvider.from_env
"""Build from ``ANTHROPIC_API_KEY`` and optional ``ANTHROPIC_BASE_URL``."""
