"""OpenAI Chat Completions adapter (also vLLM, Ollama, LiteLLM, OpenRouter via ``OPENAI_BASE_URL``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from axl_action.providers.base import (
    HttpProvider,
    MalformedResponseError,
    ParsedReply,
    dig,
    number,
    usable_cost,
)
from axl_action.providers.types import ChatRequest, TokenUsage, chat_completions_head

DEFAULT_BASE_URL = "https://api.openai.com/v1"
_MAPPINGS = (dict, Mapping)
"""A mapping, ``dict`` tested first: a parsed JSON object passes without the ABC check."""


class OpenAIProvider(HttpProvider):
    """``POST {base}/chat/completions`` with ``Authorization: Bearer``."""

    name = "openai"
    key_env = ("OPENAI_API_KEY",)
    base_url_env = "OPENAI_BASE_URL"
    default_base_url = DEFAULT_BASE_URL

    @staticmethod
    def configured_base_url(url: str) -> str:
        return with_api_version(url)

    def endpoint(self, request: ChatRequest) -> str:
        return f"{self.base_url}/chat/completions"

    def headers(self) -> dict[str, str]:
        return {"authorization": f"Bearer {self.api_key}"}

    def wire_body(self, request: ChatRequest) -> dict[str, Any]:
        body = chat_completions_head(request)
        if request.max_tokens is not None:
            # api.openai.com rejects max_tokens for reasoning models; compatible servers
            # (vLLM, Ollama) only know max_tokens.
            key = "max_completion_tokens" if self.base_url == DEFAULT_BASE_URL else "max_tokens"
            body[key] = request.max_tokens
        if request.stop:
            body["stop"] = list(request.stop)
        if request.response_format is not None:
            body["response_format"] = dict(request.response_format)
        return body

    def parse(self, body: Any) -> ParsedReply:
        message = dig(body, "choices", 0, "message")
        if not isinstance(message, Mapping):
            raise MalformedResponseError("choices[0].message is not an object")
        content = message.get("content")
        if content is None:
            content = ""
        if not isinstance(content, str):
            raise MalformedResponseError("choices[0].message.content is not a string")
        usage_raw = body.get("usage") if isinstance(body, Mapping) else None
        return ParsedReply.from_wire(
            content,
            parse_usage(usage_raw),
            model=body.get("model"),
            finish_reason=dig(body, "choices", 0).get("finish_reason"),
            provider_cost=usable_cost(usage_raw.get("cost")) if isinstance(usage_raw, Mapping) else None,
        )


def parse_usage(raw: Any) -> TokenUsage | None:
    """OpenAI ``usage``: prompt_tokens already include cached tokens and completion_tokens
    already include reasoning tokens.

    Runs on every measured call, where the block is a parsed JSON object: each mapping test
    (:data:`_MAPPINGS`) tries ``dict`` first, one C-level check, and the ``Mapping`` ABC (~6x
    slower) only for anything else, which still passes as before."""
    if not isinstance(raw, _MAPPINGS) or ("prompt_tokens" not in raw and "completion_tokens" not in raw):
        return None
    prompt_details = raw.get("prompt_tokens_details")
    completion_details = raw.get("completion_tokens_details")
    cached = number(prompt_details.get("cached_tokens")) if isinstance(prompt_details, _MAPPINGS) else 0
    reasoning = (
        number(completion_details.get("reasoning_tokens")) if isinstance(completion_details, _MAPPINGS) else 0
    )
    return TokenUsage(
        input_tokens=number(raw.get("prompt_tokens")),
        output_tokens=number(raw.get("completion_tokens")),
        reasoning_tokens=reasoning,
        cached_tokens=cached,
    )


def with_api_version(base_url: str) -> str:
    """``http://host:8000`` -> ``http://host:8000/v1``: a base URL without a path gets ``/v1``.

    OpenAI-compatible servers (vLLM, llama.cpp, Ollama, LiteLLM) serve ``/v1/chat/completions``;
    a base URL given as the bare server address would otherwise be a 404 on every call. A URL
    with any path (``/v1``, ``/api/v1``, ``/openai``) is used as it is.
    """
    parts = urlsplit(base_url)
    if parts.scheme and parts.netloc and parts.path in ("", "/"):
        return urlunsplit(parts._replace(path="/v1")).rstrip("/")
    return base_url


from_env = OpenAIProvider.from_env
"""Build from ``OPENAI_API_KEY`` and optional ``OPENAI_BASE_URL`` (see :func:`with_api_version`)."""
