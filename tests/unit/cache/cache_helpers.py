"""Builders shared by the cache tests: a realistic chat request and a settled reply."""

from __future__ import annotations

from typing import Any

from axl_action.cache import CacheRequest, CertifiedCost, SettledReply, settle_reply


def chat_body(**overrides: Any) -> dict[str, Any]:
    """An OpenAI Chat Completions body with every commonly keyed parameter."""
    body: dict[str, Any] = {
        "model": "gpt-4o-mini",
        "messages": [
            {"role": "system", "content": "You triage support tickets."},
            {"role": "user", "content": "My invoice is wrong."},
        ],
        "temperature": 0,
        "max_tokens": 200,
        "seed": 7,
        "stop": ["\n\n"],
        "response_format": {"type": "json_object"},
        "tools": [
            {
                "type": "function",
                "function": {
                    "name": "lookup_invoice",
                    "parameters": {"type": "object", "properties": {"id": {"type": "string"}}},
                },
            }
        ],
    }
    body.update(overrides)
    return body


def chat_request(**overrides: Any) -> CacheRequest:
    """A generation request to OpenAI; ``body=`` or any field overrides."""
    fields: dict[str, Any] = {
        "provider": "openai",
        "endpoint": "/chat/completions",
        "base_url": "https://api.openai.com/v1",
        "model": "gpt-4o-mini",
        "body": chat_body(),
    }
    fields.update(overrides)
    return CacheRequest(**fields)


def reply(text: str = "ok", *, usd: float | None = 0.0012) -> SettledReply:
    """A settled 2xx reply with usage and (unless ``usd`` is None) a certified cost."""
    return settle_reply(
        status=200,
        body={"id": "chatcmpl-1", "choices": [{"message": {"role": "assistant", "content": text}}]},
        usage={"inputTokens": 12, "outputTokens": 5},
        model="gpt-4o-mini-2024-07-18",
        complete=True,
        headers={"Content-Type": "application/json", "x-request-id": "req_1", "x-ratelimit-remaining": "99"},
        finish_reason="stop",
        cost=None
        if usd is None
        else CertifiedCost(usd=usd, provenance="price_table_estimate", price_table="bundled asOf 2025-10-01"),
    )
