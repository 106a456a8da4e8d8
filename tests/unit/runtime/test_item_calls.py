"""An item's list of model calls (``EvalItem.calls``, issue 26 item 6): what each scope records
when an operation closes, and the tool names read from each API's replies and stream events."""

from __future__ import annotations

from typing import Any

import pytest

from axl_action.providers.measure import tool_names
from axl_action.providers.types import CallTiming
from axl_action.runtime.admission import AdmissionController
from axl_action.runtime.scope import open_operation, track
from axl_action.schema import EvalItem


def _three_calls() -> None:
    first = open_operation("chat", model="openai:m")
    second = open_operation("stream", model="anthropic:n")
    embed = open_operation("embedding", model="openai:e")
    tool = open_operation("tool")  # not a model call: never listed
    # Closed out of order: the list keeps the order they were opened in.
    second.tools = ("search", "lookup")
    second.settle(0.5, {"inputTokens": 10, "outputTokens": 2}, "price_table_estimate")
    second.record_timing("anthropic:n", CallTiming(attempts=2, wire_ms=12.34567, first_token_ms=3.0))
    first.unknown("usage_missing")
    embed.replay(0.25)
    tool.settle(0, None, "provider_reported")


def test_a_scope_lists_its_model_calls_in_opening_order() -> None:
    scope = track(_three_calls)
    assert scope.status == "fulfilled"
    calls = scope.calls
    assert calls is not None
    assert [c["model"] for c in calls] == ["openai:m", "anthropic:n", "openai:e"]
    unknown, settled, replayed = calls
    assert unknown == {
        "operationId": unknown["operationId"],
        "model": "openai:m",
        "kind": "chat",
        "purpose": "generation",
        "outcome": "unknown",
        "reason": "usage_missing",
    }
    assert settled["outcome"] == "settled" and settled["cost"] == 0.5
    assert (settled["inputTokens"], settled["outputTokens"]) == (10, 2)
    assert settled["tools"] == ["search", "lookup"]
    assert (settled["wireMs"], settled["firstTokenMs"], settled["attempts"]) == (12.346, 3.0, 2)
    assert replayed["outcome"] == "replayed" and replayed["certifiedCost"] == 0.25
    # Every call validates as the item field it becomes.
    item = EvalItem.model_validate({"input": 1, "calls": calls})
    assert item.calls is not None and item.calls[1].tools == ["search", "lookup"]


def test_nested_scopes_share_the_records_and_a_judge_call_says_judging() -> None:
    inner: list[Any] = []

    def judge() -> None:
        open_operation("chat", model="openai:judge").settle(0.1, None, "provider_reported")

    def item() -> None:
        open_operation("chat", model="openai:gen").settle(0.2, None, "provider_reported")
        inner.append(track(judge, purpose="judging"))

    outer = track(item)
    assert [(c["model"], c["purpose"]) for c in outer.calls or []] == [
        ("openai:gen", "generation"),
        ("openai:judge", "judging"),
    ]
    assert [c["model"] for c in inner[0].calls] == ["openai:judge"]
    assert track(lambda: None).calls is None  # a scope that made no call lists none


def test_a_refused_call_is_not_listed_and_a_failed_one_is_free() -> None:
    admission = AdmissionController(1.0)

    def work() -> None:
        failed = open_operation("chat", model="openai:m")
        failed.on_abandon = "free"  # its last attempt got a 5xx and no retry followed
        failed.abandon()
        admission.charge(5.0)  # the budget closes
        with pytest.raises(Exception, match="budget is closed"):
            open_operation("chat", model="openai:m")

    scope = track(work, admission=admission)
    assert [(c["outcome"], c["cost"]) for c in scope.calls or []] == [("failed", 0)]


CHAT_TOOL = {
    "choices": [
        {
            "message": {
                "tool_calls": [
                    {"id": "a", "type": "function", "function": {"name": "get_weather", "arguments": "{}"}},
                    {"id": "b", "type": "function", "function": {"name": "get_time", "arguments": "{}"}},
                ]
            }
        }
    ]
}


@pytest.mark.parametrize(
    ("api", "parsed", "events", "names"),
    [
        ("openai.chat", CHAT_TOOL, [], ("get_weather", "get_time")),
        ("openai.chat", {"choices": [{"message": {"content": "hi"}}]}, [], ()),
        (
            "openai.chat",
            None,
            [
                {
                    "choices": [
                        {"delta": {"tool_calls": [{"index": 0, "function": {"name": "f", "arguments": ""}}]}}
                    ]
                },
                {"choices": [{"delta": {"tool_calls": [{"index": 0, "function": {"arguments": "{}"}}]}}]},
            ],
            ("f",),
        ),
        (
            "openai.responses",
            {
                "object": "response",
                "output": [{"type": "function_call", "name": "lookup"}, {"type": "message"}],
            },
            [],
            ("lookup",),
        ),
        (
            "openai.responses",
            None,
            [{"type": "response.output_item.added", "item": {"type": "function_call", "name": "lookup"}}],
            ("lookup",),
        ),
        (
            "anthropic.messages",
            {"type": "message", "content": [{"type": "text"}, {"type": "tool_use", "name": "calc"}]},
            [],
            ("calc",),
        ),
        (
            "anthropic.messages",
            None,
            [
                {
                    "type": "content_block_start",
                    "index": 1,
                    "content_block": {"type": "tool_use", "name": "calc"},
                }
            ],
            ("calc",),
        ),
        (
            "gemini.generate",
            {"candidates": [{"content": {"parts": [{"functionCall": {"name": "find", "args": {}}}]}}]},
            [],
            ("find",),
        ),
        ("openai.embeddings", {"data": []}, [], ()),
        ("openai.chat", {"choices": "not a list"}, [], ()),  # an odd shape names no tool, never raises
    ],
)
def test_tool_names_in_each_apis_shape(
    api: str, parsed: Any, events: list[Any], names: tuple[str, ...]
) -> None:
    assert tool_names(api, parsed, events) == names
