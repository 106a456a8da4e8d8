"""Pure request building and response parsing of each adapter (no sockets)."""

from __future__ import annotations

import pytest

from axl_action.providers import anthropic, google, openai
from axl_action.providers.base import MalformedResponseError
from axl_action.providers.types import ChatMessage, ChatRequest, TokenUsage

KEY = "sk-test-000000000000000000000000"


def _request(**kw: object) -> ChatRequest:
    base: dict[str, object] = {
        "model": "m-1",
        "messages": (
            ChatMessage("system", "be brief"),
            ChatMessage("user", "hi"),
            ChatMessage("assistant", "yo"),
        ),
    }
    base.update(kw)
    return ChatRequest(**base)  # type: ignore[arg-type]


def test_openai_body_has_messages_options_and_provider_options_last() -> None:
    p = openai.OpenAIProvider(api_key=KEY, base_url="http://x/v1")
    body = p.build_body(
        _request(
            temperature=0.2,
            max_tokens=50,
            stop=("END",),
            response_format={"type": "json_object"},
            provider_options={"temperature": 0.9, "seed": 7},
        )
    )
    assert body["messages"][0] == {"role": "system", "content": "be brief"}
    assert body["max_tokens"] == 50  # a compatible server only knows max_tokens
    assert body["stop"] == ["END"]
    assert body["response_format"] == {"type": "json_object"}
    assert body["temperature"] == 0.9 and body["seed"] == 7
    official = openai.OpenAIProvider(api_key=KEY, base_url=openai.DEFAULT_BASE_URL)
    assert official.build_body(_request(max_tokens=5))["max_completion_tokens"] == 5
    assert p.headers() == {"authorization": f"Bearer {KEY}"}


def test_openai_usage_counts_cached_and_reasoning() -> None:
    usage = openai.parse_usage(
        {
            "prompt_tokens": 100,
            "completion_tokens": 40,
            "prompt_tokens_details": {"cached_tokens": 30},
            "completion_tokens_details": {"reasoning_tokens": 10},
        }
    )
    assert usage == TokenUsage(input_tokens=100, output_tokens=40, reasoning_tokens=10, cached_tokens=30)
    assert openai.parse_usage(None) is None
    assert openai.parse_usage({"total_tokens": 3}) is None


def test_openai_parse_reads_text_finish_and_provider_cost() -> None:
    p = openai.OpenAIProvider(api_key=KEY, base_url="http://x/v1")
    reply = p.parse(
        {
            "model": "gpt-x",
            "choices": [{"message": {"content": "hello"}, "finish_reason": "length"}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 2, "cost": 0.0042},
        }
    )
    assert (reply.text, reply.model, reply.finish_reason, reply.provider_cost) == (
        "hello",
        "gpt-x",
        "length",
        0.0042,
    )
    with pytest.raises(MalformedResponseError, match=r"choices\[0\]"):
        p.parse({"choices": []})


def test_anthropic_body_moves_system_out_and_requires_max_tokens() -> None:
    p = anthropic.AnthropicProvider(api_key=KEY, base_url="http://x")
    body = p.build_body(_request(stop=("X",), response_format={"type": "json_object"}))
    assert body["system"] == "be brief"
    assert [m["role"] for m in body["messages"]] == ["user", "assistant"]
    assert body["max_tokens"] == anthropic.DEFAULT_MAX_TOKENS
    assert body["stop_sequences"] == ["X"]
    assert "response_format" not in body
    assert p.headers() == {"x-api-key": KEY, "anthropic-version": anthropic.API_VERSION}


def test_anthropic_usage_adds_cache_reads_and_writes_to_input() -> None:
    usage = anthropic.parse_usage(
        {
            "input_tokens": 10,
            "output_tokens": 7,
            "cache_read_input_tokens": 100,
            "cache_creation_input_tokens": 20,
        }
    )
    assert usage == TokenUsage(input_tokens=130, output_tokens=7, cached_tokens=100, cache_write_tokens=20)


def test_anthropic_parse_joins_text_blocks_only() -> None:
    p = anthropic.AnthropicProvider(api_key=KEY, base_url="http://x")
    reply = p.parse(
        {
            "model": "claude-x",
            "content": [
                {"type": "thinking", "thinking": "hmm"},
                {"type": "text", "text": "a"},
                {"type": "text", "text": "b"},
            ],
            "stop_reason": "end_turn",
            "usage": {"input_tokens": 1, "output_tokens": 1},
        }
    )
    assert reply.text == "ab" and reply.finish_reason == "end_turn"
    with pytest.raises(MalformedResponseError, match="content"):
        p.parse({"type": "message"})


def test_google_body_roles_system_instruction_and_json_mode() -> None:
    p = google.GoogleProvider(api_key=KEY, base_url="http://x")
    body = p.build_body(_request(temperature=0, max_tokens=9, response_format={"type": "json_object"}))
    assert body["systemInstruction"] == {"parts": [{"text": "be brief"}]}
    assert [c["role"] for c in body["contents"]] == ["user", "model"]
    assert body["generationConfig"] == {
        "temperature": 0,
        "maxOutputTokens": 9,
        "responseMimeType": "application/json",
    }
    assert (
        p.endpoint(_request(model="models/gemini-2.5-flash"))
        == "http://x/v1beta/models/gemini-2.5-flash:generateContent"
    )
    assert "key=" not in p.endpoint(_request())
    assert p.headers() == {"x-goog-api-key": KEY}


def test_google_usage_counts_thoughts_as_output() -> None:
    usage = google.parse_usage(
        {
            "promptTokenCount": 50,
            "candidatesTokenCount": 10,
            "cachedContentTokenCount": 20,
            "thoughtsTokenCount": 5,
        }
    )
    assert usage == TokenUsage(input_tokens=50, output_tokens=15, reasoning_tokens=5, cached_tokens=20)


def test_google_parse_skips_thought_parts_and_reports_blocked_prompts() -> None:
    p = google.GoogleProvider(api_key=KEY, base_url="http://x")
    reply = p.parse(
        {
            "candidates": [
                {
                    "content": {"parts": [{"text": "plan", "thought": True}, {"text": "answer"}]},
                    "finishReason": "STOP",
                }
            ],
            "modelVersion": "gemini-x",
        }
    )
    assert reply.text == "answer" and reply.usage is None and reply.finish_reason == "STOP"
    with pytest.raises(MalformedResponseError, match="blocked"):
        p.parse({"promptFeedback": {"blockReason": "SAFETY"}})


def test_usage_wire_keys() -> None:
    assert TokenUsage(1, 2, 3, 4, 5, 6).to_wire() == {
        "inputTokens": 1,
        "outputTokens": 2,
        "reasoningTokens": 3,
        "cachedTokens": 4,
        "cacheWriteTokens": 5,
        "audioSeconds": 6,
    }
