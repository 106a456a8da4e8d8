"""The measured chat call: settlement rules, admission, timing and capture records."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from axl_action.providers import gateway
from axl_action.providers.capture import CaptureSink
from axl_action.providers.errors import ProviderError
from axl_action.providers.mock import MockProvider
from axl_action.providers.types import CallTiming, ChatRequest, ChatResponse, TokenUsage, WireExchange
from axl_action.runtime.admission import AdmissionController
from axl_action.runtime.runtime import Runtime
from axl_action.runtime.scope import AdmissionDeniedError, track

SECRET = "sk-live-DONOTLEAK0123456789abcdef"


class ScriptedProvider:
    """A provider returning a fixed response or raising a fixed error, counting dispatches."""

    name = "scripted"

    def __init__(self, response: ChatResponse | None = None, error: Exception | None = None) -> None:
        self.response = response
        self.error = error
        self.dispatches = 0

    def chat(
        self, request: ChatRequest, *, before_dispatch: Callable[[], None] | None = None
    ) -> ChatResponse:
        if before_dispatch is not None:
            before_dispatch()
        self.dispatches += 1
        if self.error is not None:
            raise self.error
        assert self.response is not None
        return self.response


def _response(
    usage: TokenUsage | None, cost: float | None = None, exchange: WireExchange | None = None
) -> ChatResponse:
    return ChatResponse(
        text="hello",
        usage=usage,
        provider_cost=cost,
        request_id="r1",
        model="m",
        finish_reason="stop",
        timing=CallTiming(attempts=2, retry_ms=5, wire_ms=7, rate_limit_retries=1),
        exchange=exchange,
    )


def _run(runtime: Runtime, uri: str, **track_kw: Any) -> Any:
    return track(lambda: runtime.chat(uri, [{"role": "user", "content": "hi"}]), **track_kw)


def test_provider_reported_cost_settles_with_that_provenance() -> None:
    rt = Runtime(providers={"scripted": ScriptedProvider(_response(TokenUsage(10, 5), cost=0.25))})
    result = _run(rt, "scripted:m")
    acc = result.accounting
    assert result.status == "fulfilled"
    assert acc["knownCost"] == 0.25 and acc["completeness"] == "complete"
    assert acc["provenance"] == {"provider_reported": 0.25}
    assert acc["usage"]["inputTokens"] == 10 and acc["usage"]["outputTokens"] == 5
    assert result.timing == {"scripted:m": {"calls": 1, "queuedMs": 0.0, "retryMs": 5, "wireMs": 7}}


def test_usage_with_a_price_settles_as_price_table_estimate() -> None:
    rt = Runtime(providers={"openai": MockProvider(["x"], usage=TokenUsage(1_000_000, 1_000_000), cost=None)})
    acc = _run(rt, "openai:gpt-4o-mini").accounting
    assert acc["knownCost"] == pytest.approx(0.75)
    assert list(acc["provenance"]) == ["price_table_estimate"]
    assert acc["operations"]["settled"] == 1


def test_usage_without_a_price_is_unpriced_never_zero() -> None:
    rt = Runtime(providers={"openai": MockProvider(["x"], usage=TokenUsage(100, 50), cost=None)})
    acc = _run(rt, "openai:not-in-the-table").accounting
    assert acc["completeness"] == "incomplete"
    assert acc["reasons"] == {"unpriced_model": 1}
    assert acc["knownCost"] == 0 and acc["provenance"] == {}
    assert acc["usage"]["inputTokens"] == 100  # usage still counted


def test_no_usage_is_usage_missing() -> None:
    rt = Runtime(providers={"scripted": ScriptedProvider(_response(None))})
    acc = _run(rt, "scripted:m").accounting
    assert acc["reasons"] == {"usage_missing": 1} and acc["operations"]["unknown"] == 1


def test_provider_error_after_dispatch_is_usage_missing_and_reraised_without_timing() -> None:
    err = ProviderError("openai request failed: HTTP 500", provider="openai", status=500, retryable=True)
    rt = Runtime(providers={"scripted": ScriptedProvider(error=err)})
    result = _run(rt, "scripted:m")
    assert result.status == "rejected" and result.error is err
    assert result.accounting["reasons"] == {"usage_missing": 1}
    assert result.timing is None


def test_closed_budget_refuses_before_any_dispatch() -> None:
    provider = ScriptedProvider(_response(TokenUsage(1, 1), cost=0.1))
    rt = Runtime(providers={"scripted": provider})
    result = _run(rt, "scripted:m", admission=AdmissionController(0))
    assert isinstance(result.error, AdmissionDeniedError)
    assert provider.dispatches == 0
    ops = result.accounting["operations"]
    assert ops["denied"] == 1 and ops["total"] == 0


def test_config_errors_open_no_operation() -> None:
    result = _run(Runtime(), "nope:m")
    assert result.status == "rejected" and "Unknown provider" in str(result.error)
    assert result.accounting["operations"]["total"] == 0 and result.measured is False


def test_messages_can_be_a_prompt_string_or_dicts_and_bad_ones_are_named() -> None:
    assert gateway.to_messages("hi")[0].role == "user"
    with pytest.raises(Exception, match="Chat message 1"):
        gateway.to_messages([{"role": "user", "content": "a"}, {"role": "robot", "content": "b"}])


def _exchange() -> WireExchange:
    return WireExchange(
        method="POST",
        url="http://127.0.0.1:1/v1/chat/completions",
        request_headers={"authorization": f"Bearer {SECRET}", "content-type": "application/json"},
        request_body={"model": "m", "messages": [{"role": "user", "content": f"hi, my key is {SECRET}"}]},
        status=200,
        response_headers={"x-request-id": "r1"},
        response_body={"choices": [{"message": {"content": "the answer"}}]},
        attempts=2,
    )


def _captured(tmp_path: Path, provider: Any, *, redact_content: bool = False) -> list[dict[str, Any]]:
    rt = Runtime(providers={"scripted": provider})
    sink = CaptureSink(tmp_path / "out.requests.jsonl", redact_content=redact_content)
    track(
        lambda: track(lambda: rt.chat("scripted:m", "hi"), capture_correlation={"caseIndex": 3}),
        capture=sink,
    )
    manifest = sink.close()
    lines = (tmp_path / "out.requests.jsonl").read_text().splitlines()
    assert manifest["records"] == len(lines)
    return [json.loads(line) for line in lines]


def test_capture_record_is_stamped_and_redacted(tmp_path: Path) -> None:
    (record,) = _captured(
        tmp_path, ScriptedProvider(_response(TokenUsage(1, 1), cost=0.0, exchange=_exchange()))
    )
    text = json.dumps(record)
    assert SECRET not in text
    assert list(record)[:4] == ["v", "phase", "operationId", "kind"]
    assert record["caseIndex"] == 3 and record["kind"] == "chat" and record["phase"] == "end"
    assert record["transportAttempts"] == 2 and record["provider"] == "scripted" and record["model"] == "m"
    assert record["request"]["headers"]["authorization"] == "[REDACTED]"
    assert record["response"]["body"]["choices"][0]["message"]["content"] == "the answer"
    assert record["captured"] == {
        "fidelity": "runtime_request",
        "redacted": False,
        "truncated": False,
        "omitted": [],
    }


def test_capture_content_redaction(tmp_path: Path) -> None:
    (record,) = _captured(
        tmp_path,
        ScriptedProvider(_response(TokenUsage(1, 1), cost=0.0, exchange=_exchange())),
        redact_content=True,
    )
    assert record["request"]["body"]["messages"][0]["content"].startswith("[REDACTED:")
    assert record["response"]["body"]["choices"][0]["message"]["content"] == "[REDACTED:10 chars]"
    assert record["captured"]["redacted"] is True


def test_capture_of_a_failed_call_carries_the_error_without_the_key(tmp_path: Path) -> None:
    err = ProviderError(
        f"openai request failed: HTTP 401: invalid key {SECRET}",
        provider="openai",
        status=401,
        request_id="rq-9",
    )
    (record,) = _captured(tmp_path, ScriptedProvider(error=err))
    assert SECRET not in json.dumps(record)
    assert record["error"]["name"] == "ProviderError" and record["error"]["status"] == 401
    assert record["error"]["requestId"] == "rq-9"
    assert record["captured"]["omitted"] == ["request", "response"]


def test_no_capture_without_a_sink(tmp_path: Path) -> None:
    rt = Runtime(providers={"scripted": ScriptedProvider(_response(TokenUsage(1, 1), cost=0.0))})
    assert track(lambda: rt.chat("scripted:m", "hi")).status == "fulfilled"
    assert list(tmp_path.iterdir()) == []


def test_judge_facade_is_measured() -> None:
    rt = Runtime(providers={"scripted": ScriptedProvider(_response(TokenUsage(1, 1), cost=0.5))})
    facade, model = rt.resolve_provider("scripted:judge-1")
    assert model == "judge-1"
    result = track(lambda: facade.chat([{"role": "user", "content": "x"}], model=model), purpose="judging")
    assert result.accounting["breakdown"]["judging"] == 0.5


class _Wrapper:
    """Like the runner's ref collector: forwards to an inner sink."""

    def __init__(self, sink: CaptureSink) -> None:
        self.sink = sink

    def write(self, record: Any) -> None:
        self.sink.write(record)


def test_content_redaction_is_seen_through_a_sink_wrapper(tmp_path: Path) -> None:
    rt = Runtime(
        providers={"scripted": ScriptedProvider(_response(TokenUsage(1, 1), cost=0.0, exchange=_exchange()))}
    )
    sink = CaptureSink(tmp_path / "w.requests.jsonl", redact_content=True)
    track(lambda: rt.chat("scripted:m", "hi"), capture=_Wrapper(sink))
    sink.close()
    record = json.loads((tmp_path / "w.requests.jsonl").read_text())
    assert record["captured"]["redacted"] is True
    assert record["response"]["body"]["choices"][0]["message"]["content"] == "[REDACTED:10 chars]"
    assert SECRET not in json.dumps(record)
