"""``OPENAI_BASE_URL`` given as a bare server address gets ``/v1`` (it used to be a 404 on every call)."""

from __future__ import annotations

import pytest

from axl_action.providers.openai import from_env, with_api_version
from axl_action.providers.types import ChatMessage, ChatRequest
from tests.fakes.llm_servers import FakeLLMServer

KEY = "sk-base-url-test-0123456789abcdef"


@pytest.mark.parametrize("suffix", ["", "/", "/v1", "/v1/"])
def test_both_forms_reach_chat_completions(suffix: str) -> None:
    with FakeLLMServer("openai") as server:
        root = f"http://127.0.0.1:{server.port}"
        with from_env({"OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": root + suffix}) as provider:
            reply = provider.chat(
                ChatRequest(model="local", messages=(ChatMessage("user", "hi"),), timeout=5)
            )
        assert reply.text
        assert [r.path for r in server.requests] == ["/v1/chat/completions"]


def test_a_url_with_a_path_is_used_as_given() -> None:
    assert with_api_version("https://openrouter.ai/api/v1") == "https://openrouter.ai/api/v1"
    assert with_api_version("http://gateway:4000/openai") == "http://gateway:4000/openai"
    assert with_api_version("http://127.0.0.1:8080") == "http://127.0.0.1:8080/v1"
