"""Google Gemini ``generateContent`` adapter (key in ``x-goog-api-key``, never in the URL)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

from axl_action.providers.base import (
    HttpProvider,
    MalformedResponseError,
    ParsedReply,
    dig,
    number,
)
from axl_action.providers.types import ChatRequest, TokenUsage

DEFAULT_BASE_URL = "https://generativelanguage.googleapis.com"


class GoogleProvider(HttpProvider):
    """``POST {base}/v1beta/models/{model}:generateContent``."""

    name = "google"
    key_env = ("GOOGLE_API_KEY", "GEMINI_API_KEY")
    base_url_env = "GOOGLE_BASE_URL"
    default_base_url = DEFAULT_BASE_URL

    def endpoint(self, request: ChatRequest) -> str:
        model = request.model.removeprefix("models/")
        return f"{self.base_url}/v1beta/models/{quote(model, safe='-._~')}:generateContent"

    def headers(self) -> dict[str, str]:
        return {"x-goog-api-key": self.api_key}

    def wire_body(self, request: ChatRequest) -> dict[str, Any]:
        system = "\n\n".join(m.content for m in request.messages if m.role == "system")
        body: dict[str, Any] = {
            "contents": [
                {"role": "model" if m.role == "assistant" else "user", "parts": [{"text": m.content}]}
                for m in request.messages
                if m.role != "system"
            ]
        }
        if system:
            body["systemInstruction"] = {"parts": [{"text": system}]}
        config: dict[str, Any] = {}
        if request.temperature is not None:
            config["temperature"] = request.temperature
        if request.max_tokens is not None:
            config["maxOutputTokens"] = request.max_tokens
        if request.stop:
            config["stopSequences"] = list(request.stop)
        if request.response_format is not None and request.response_format.get("type") == "json_object":
            config["responseMimeType"] = "application/json"
        if config:
            body["generationConfig"] = config
        return body

    def parse(self, body: Any) -> ParsedReply:
        candidates = body.get("candidates") if isinstance(body, Mapping) else None
        if not candidates:
            feedback = body.get("promptFeedback") if isinstance(body, Mapping) else None
            reason = feedback.get("blockReason") if isinstance(feedback, Mapping) else None
            if reason:
                raise MalformedResponseError(f"the prompt was blocked ({reason}), no candidates returned")
            raise MalformedResponseError("the response has no candidates")
        parts = dig(body, "candidates", 0, "content", "parts") if "content" in candidates[0] else []
        if not isinstance(parts, list):
            raise MalformedResponseError("candidates[0].content.parts is not a list")
        # Thought summaries are flagged ``thought: true``; they are not the answer.
        text = "".join(
            str(p.get("text", "")) for p in parts if isinstance(p, Mapping) and not p.get("thought")
        )
        finish = candidates[0].get("finishReason") if isinstance(candidates[0], Mapping) else None
        return ParsedReply.from_wire(
            text,
            parse_usage(body.get("usageMetadata")),
            model=body.get("modelVersion"),
            finish_reason=finish,
            request_id=body.get("responseId"),
        )


def parse_usage(raw: Any) -> TokenUsage | None:
    """``promptTokenCount`` includes cached tokens; thoughts are billed as output but reported
    beside ``candidatesTokenCount``, so they are added in."""
    if not isinstance(raw, Mapping) or "promptTokenCount" not in raw:
        return None
    thoughts = number(raw.get("thoughtsTokenCount"))
    return TokenUsage(
        input_tokens=number(raw.get("promptTokenCount")),
        output_tokens=number(raw.get("candidatesTokenCount")) + thoughts,
        reasoning_tokens=thoughts,
        cached_tokens=number(raw.get("cachedContentTokenCount")),
    )


from_env = GoogleProvider.from_env
"""Build from ``GOOGLE_API_KEY`` (or ``GEMINI_API_KEY``) and optional ``GOOGLE_BASE_URL``."""
