"""Registry, model URIs, retry-after parsing, error descriptions and redaction."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from axl_action.providers.base import HttpProvider
from axl_action.providers.errors import ProviderConfigError, ProviderError
from axl_action.providers.mock import MockProvider
from axl_action.providers.openai import OpenAIProvider
from axl_action.providers.redact import (
    REDACTED,
    redact_headers,
    redact_secrets,
    redact_value,
    register_secret,
)
from axl_action.providers.registry import ProviderRegistry, parse_model_uri
from axl_action.providers.transport import HttpTransport, RetryPolicy, describe_error_body
from axl_action.retry import Backoff, parse_retry_after

NOW = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)


def test_model_uri_split_at_first_colon() -> None:
    assert parse_model_uri("openai:gpt-4o") == ("openai", "gpt-4o")
    assert parse_model_uri("openai:llama3:8b") == ("openai", "llama3:8b")
    for bad in ("gpt-4o", ":x", "openai:", ""):
        with pytest.raises(ProviderConfigError, match="provider:model"):
            parse_model_uri(bad)


def test_missing_key_names_the_variable() -> None:
    registry = ProviderRegistry(env={})
    with pytest.raises(ProviderConfigError, match="OPENAI_API_KEY"):
        registry.get("openai")
    with pytest.raises(ProviderConfigError, match="GOOGLE_API_KEY or GEMINI_API_KEY"):
        registry.get("google")
    with pytest.raises(ProviderConfigError, match="ANTHROPIC_API_KEY"):
        registry.get("anthropic")


def test_gemini_key_alias_and_base_url() -> None:
    registry = ProviderRegistry(
        env={"GEMINI_API_KEY": "AIzaAlias0000000000000000000000000000", "GOOGLE_BASE_URL": "http://h:1/"}
    )
    provider = registry.get("google")
    assert provider.base_url == "http://h:1"


def test_unknown_provider_lists_known_ones_and_custom_registration_works() -> None:
    registry = ProviderRegistry(env={})
    with pytest.raises(ProviderConfigError) as raised:
        registry.resolve("acme:m")
    # The list is in the message itself, which is what an item's error keeps.
    assert raised.value.message == 'Unknown provider "acme": use one of anthropic, google, mock, openai'
    custom = MockProvider(["hi"], name="acme")
    registry.register("acme", custom)
    provider, model = registry.resolve("acme:m")
    assert provider is custom and model == "m"
    registry.register("lazy", lambda env: MockProvider(name="lazy"))
    assert registry.get("lazy") is registry.get("lazy")  # built once, reused


def test_retry_after_forms() -> None:
    assert parse_retry_after({"retry-after": "3"}, NOW) == 3
    assert parse_retry_after({"retry-after": "1.5"}, NOW) == 1.5
    assert parse_retry_after({"retry-after-ms": "250", "retry-after": "9"}, NOW) == 0.25
    assert parse_retry_after({"retry-after": "Fri, 02 Jan 2026 03:04:15 GMT"}, NOW) == 10
    assert parse_retry_after({"retry-after": "Fri, 02 Jan 2026 03:00:00 GMT"}, NOW) == 0  # past
    assert parse_retry_after({"retry-after": "soon"}, NOW) is None
    assert parse_retry_after({}, NOW) is None


def test_backoff_grows_and_is_capped() -> None:
    t = HttpTransport("x", policy=RetryPolicy(base_delay=1, max_delay=5), rng=lambda: 1.0)
    assert [t.backoff(n) for n in (1, 2, 3, 4, 5)] == [1.25, 2.5, 5, 5, 5]
    t0 = HttpTransport("x", policy=RetryPolicy(base_delay=1, max_delay=5), rng=lambda: 0.0)
    assert t0.backoff(3) == 4  # the jitter only lengthens a wait: never below the step
    # One formula: the GitHub layer's Backoff gives the same waits for the same settings.
    assert [Backoff(base=1, cap=5).delay(n, 1.0) for n in (1, 2, 3, 4, 5)] == [
        t.backoff(n) for n in (1, 2, 3, 4, 5)
    ]


def test_error_body_descriptions_for_each_envelope() -> None:
    assert describe_error_body(
        {"error": {"message": "Bad key", "type": "invalid_request_error", "code": None}}
    ) == ("invalid_request_error: Bad key")
    assert describe_error_body(
        {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    ) == ("overloaded_error: Overloaded")
    assert describe_error_body(
        {"error": {"code": 429, "message": "Quota", "status": "RESOURCE_EXHAUSTED"}}
    ) == ("RESOURCE_EXHAUSTED: Quota")
    assert describe_error_body("<html>  bad\n gateway </html>") == "<html> bad gateway </html>"
    assert describe_error_body(None) == "no response body"


def test_provider_error_scrubs_keys_from_message_and_repr() -> None:
    key = "sk-proj-SECRETSECRETSECRET123"
    err = ProviderError(f"Incorrect API key provided: {key}", provider="openai", status=401, secrets=(key,))
    assert key not in str(err) and key not in repr(err) and key not in err.message
    assert (err.name, err.code, err.status, err.retryable, err.requestId) == (
        "ProviderError",
        "PROVIDER_ERROR",
        401,
        False,
        None,
    )
    custom = "gateway-token-7f3a9c"
    err2 = ProviderError(f"denied for {custom}", provider="openai", secrets=(custom,))
    assert custom not in str(err2)


def test_redaction_of_patterns_headers_and_registered_secrets() -> None:
    text = "k1 sk-ant-api03-abcdefghijklmnop k2 AIzaSyA1234567890abcdefghijklmnopqrstu Authorization: Bearer abc.def-ghi"
    out = redact_secrets(text)
    assert "sk-ant" not in out and "AIza" not in out and "abc.def" not in out
    assert redact_secrets("https://h/v1?key=AAA&x=1") == f"https://h/v1?key={REDACTED}&x=1"
    register_secret("plain-secret-value-42")
    assert "plain-secret-value-42" not in redact_secrets("x plain-secret-value-42 y")
    headers = redact_headers(
        {"Authorization": "Bearer x", "X-Api-Key": "k", "x-goog-api-key": "k", "accept": "a"}
    )
    assert headers == {
        "Authorization": REDACTED,
        "X-Api-Key": REDACTED,
        "x-goog-api-key": REDACTED,
        "accept": "a",
    }


def test_content_redaction_keeps_shape() -> None:
    body = {
        "model": "m",
        "system": "secret system",
        "messages": [{"role": "user", "content": "private prompt"}],
        "contents": [{"role": "user", "parts": [{"text": "gemini prompt"}]}],
        "content": [{"type": "text", "text": "reply"}],
    }
    out = redact_value(body, content=True)
    assert out["model"] == "m" and out["messages"][0]["role"] == "user"
    assert out["system"] == "[REDACTED:13 chars]"
    assert out["messages"][0]["content"] == "[REDACTED:14 chars]"
    assert out["contents"][0]["parts"][0]["text"] == "[REDACTED:13 chars]"
    assert out["content"][0] == {"type": "text", "text": "[REDACTED:5 chars]"}
    assert redact_value(body)["messages"][0]["content"] == "private prompt"


def test_builtin_provider_is_rebuilt_when_its_variables_change() -> None:
    env = {"OPENAI_API_KEY": "sk-first-000000000000", "OPENAI_BASE_URL": "http://a:1/v1"}
    registry = ProviderRegistry(env=env)
    first = registry.get("openai")
    assert registry.get("openai") is first
    env["OPENAI_BASE_URL"] = "http://b:2/v1"
    second = registry.get("openai")
    assert second is not first and second.base_url == "http://b:2/v1"


class Closable(MockProvider):
    """A provider that counts its ``close()`` calls."""

    def __init__(self, name: str = "closable") -> None:
        super().__init__(name=name)
        self.closed = 0

    def close(self) -> None:
        self.closed += 1


def test_a_rebuilt_provider_is_closed_and_its_successor_is_not(monkeypatch: pytest.MonkeyPatch) -> None:
    env = {"OPENAI_API_KEY": "sk-first-000000000000", "OPENAI_BASE_URL": "http://a:1/v1"}
    registry = ProviderRegistry(env=env)
    first = registry.get("openai")
    assert isinstance(first, HttpProvider)
    closed: list[str] = []
    monkeypatch.setattr(first.transport, "close", lambda: closed.append("first"))
    assert registry.get("openai") is first and closed == []
    env["OPENAI_BASE_URL"] = "http://b:2/v1"
    second = registry.get("openai")
    assert second is not first and closed == ["first"]
    assert isinstance(second, HttpProvider)
    monkeypatch.setattr(second.transport, "close", lambda: closed.append("second"))
    registry.close()
    assert closed == ["first", "second"]


def test_the_registry_closes_what_it_built_and_leaves_the_callers_instances_open() -> None:
    mine = Closable("mine")
    built: list[Closable] = []
    with ProviderRegistry(env={}) as registry:
        registry.register("mine", mine)
        registry.register("lazy", lambda _env: built.append(Closable("lazy")) or built[-1])
        assert registry.get("lazy") is built[0] and registry.get("mine") is mine
        registry.register("lazy", lambda _env: Closable("other"))  # replaces the built one
        assert built[0].closed == 1
        registry.get("lazy")
    assert mine.closed == 0
    # After close() the registry still works: it builds again, and still knows the caller's one.
    assert registry.get("mine") is mine
    registry.register("lazy", lambda _env: built.append(Closable("lazy")) or built[-1])
    first = registry.get("lazy")
    registry.close()
    assert first.closed == 1 and registry.get("lazy") is not first and mine.closed == 0


def test_an_http_provider_closes_its_transport_when_its_block_ends() -> None:
    closed: list[str] = []

    class Recording(HttpTransport):
        def close(self) -> None:
            closed.append(self.provider)
            super().close()

    provider = OpenAIProvider(
        api_key="sk-closing-000000000000", base_url="http://h:1", transport=Recording("openai")
    )
    with provider as entered:
        assert entered is provider
    assert closed == ["openai"]
