"""The response cache answers the application's own SDK calls too (issue 22 with issue 26): the
real ``openai``, ``anthropic`` and ``google-genai`` clients against loopback servers that count
requests. A hit sends nothing, bills $0 and keeps the certified cost; ``replay`` never sends;
what must not be cached is not."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openai
import pytest

from axl_action.cache.calls import ResponseCache, open_cache
from axl_action.runtime.runtime import Runtime
from tests.fakes.llm_servers import FakeLLMServer
from tests.integration.providers.test_sdk_capture import (
    KEY,
    by_prompt_size,
    question_workflow,
    run_items,
    streaming,
    table,
)


@pytest.fixture
def oa() -> Iterator[FakeLLMServer]:
    with FakeLLMServer("openai") as fake:
        yield fake


def cached(tmp_path: Path, mode: str = "on") -> Runtime:
    cache = open_cache(mode, tmp_path / "cache")  # type: ignore[arg-type]
    assert isinstance(cache, ResponseCache)
    return Runtime(pricing=table(), cache=cache)


def ask(client: openai.OpenAI, prompt: str = "question", **options: Any) -> Any:
    def workflow(input_: Any, _rt: Any) -> dict[str, Any]:
        reply = client.chat.completions.create(
            model="fake-model", messages=[{"role": "user", "content": f"{prompt} {input_['n']}"}], **options
        )
        return {"output": reply.choices[0].message.content}

    return workflow


def test_a_second_identical_run_sends_nothing_bills_zero_and_certifies_the_first_cost(
    oa: FakeLLMServer, tmp_path: Path
) -> None:
    by_prompt_size(oa)
    client = openai.OpenAI(base_url=oa.base_url, api_key=KEY, max_retries=0)
    first = run_items(ask(client), n=6, rt=cached(tmp_path), concurrency=3)
    assert len(oa.requests) == 6
    assert "replayed" not in first["accounting"]
    second = run_items(ask(client), n=6, rt=cached(tmp_path), concurrency=3)
    assert len(oa.requests) == 6  # not one request more
    assert [i["output"] for i in second["items"]] == [i["output"] for i in first["items"]]
    accounting = second["accounting"]
    assert accounting["knownCost"] == 0
    assert accounting["replayed"]["calls"] == 6
    assert accounting["replayed"]["cost"] == pytest.approx(first["accounting"]["knownCost"])
    for before, after in zip(first["items"], second["items"], strict=True):
        assert after["accounting"]["replayed"]["cost"] == pytest.approx(before["cost"])
    # Latency statistics leave hits out.
    assert "openai:fake-model" not in (second["summary"].get("modelTiming") or {})


@pytest.mark.parametrize(
    "change",
    [{"temperature": 0.5}, {"max_tokens": 9}, {"tools": [{"type": "function", "function": {"name": "f"}}]}],
    ids=["temperature", "max_tokens", "tools"],
)
def test_any_changed_parameter_is_a_miss(oa: FakeLLMServer, tmp_path: Path, change: dict[str, Any]) -> None:
    by_prompt_size(oa)
    client = openai.OpenAI(base_url=oa.base_url, api_key=KEY, max_retries=0)
    run_items(ask(client), n=2, rt=cached(tmp_path))
    run_items(ask(client, **change), n=2, rt=cached(tmp_path))
    assert len(oa.requests) == 4


def test_a_stream_is_replayed_as_a_stream(oa: FakeLLMServer, tmp_path: Path) -> None:
    streaming(oa, {"prompt_tokens": 30, "completion_tokens": 3, "total_tokens": 33})
    client = openai.OpenAI(base_url=oa.base_url, api_key=KEY, max_retries=0)

    def workflow(_input: Any, _rt: Any) -> dict[str, Any]:
        stream = client.chat.completions.create(
            model="fake-model", messages=[{"role": "user", "content": "x"}], stream=True
        )
        return {"output": "".join(c.choices[0].delta.content or "" for c in stream if c.choices)}

    first = run_items(workflow, rt=cached(tmp_path))
    second = run_items(workflow, rt=cached(tmp_path))
    assert len(oa.requests) == 1
    assert second["items"][0]["output"] == first["items"][0]["output"] == "one two three"
    assert second["accounting"]["replayed"]["calls"] == 1
    assert second["accounting"]["replayed"]["cost"] == pytest.approx(first["accounting"]["knownCost"])


def test_an_async_client_is_answered_from_the_cache(oa: FakeLLMServer, tmp_path: Path) -> None:
    by_prompt_size(oa)

    async def workflow(input_: Any, _rt: Any) -> dict[str, Any]:
        async with openai.AsyncOpenAI(base_url=oa.base_url, api_key=KEY, max_retries=0) as client:
            reply = await client.chat.completions.create(
                model="fake-model", messages=[{"role": "user", "content": f"question {input_['n']}"}]
            )
        await asyncio.sleep(0)
        return {"output": reply.choices[0].message.content}

    run_items(workflow, n=4, rt=cached(tmp_path), concurrency=4)
    again = run_items(workflow, n=4, rt=cached(tmp_path), concurrency=4)
    assert len(oa.requests) == 4
    assert again["accounting"]["replayed"]["calls"] == 4


def test_replay_never_sends_and_a_miss_fails_the_item_naming_the_nearest_request(
    oa: FakeLLMServer, tmp_path: Path
) -> None:
    by_prompt_size(oa)
    client = openai.OpenAI(base_url=oa.base_url, api_key=KEY)  # the SDK's own retries stay on
    run_items(ask(client), n=3, rt=cached(tmp_path, "write"))
    assert len(oa.requests) == 3

    def workflow(input_: Any, rt: Any) -> dict[str, Any]:
        prompt = "changed" if input_["n"] == 1 else "question"
        return ask(client, prompt)(input_, rt)  # type: ignore[no-any-return]

    replayed = run_items(workflow, n=3, rt=cached(tmp_path, "replay"))
    assert len(oa.requests) == 3  # replay sent nothing, and the SDK retried nothing
    outcomes = [i["outcome"] for i in replayed["items"]]
    assert outcomes == ["completed", "failed", "completed"]
    error = replayed["items"][1]["error"]
    assert "--cache replay: no recorded reply for a openai:fake-model openai.chat call" in error
    assert "body.messages[0].content" in error, error


def test_errors_and_replies_without_usage_are_not_cached(oa: FakeLLMServer, tmp_path: Path) -> None:
    client = openai.OpenAI(base_url=oa.base_url, api_key=KEY, max_retries=0)
    oa.enqueue(oa.error(500), oa.no_usage("no usage"))
    failed = run_items(ask(client), n=2, rt=cached(tmp_path), concurrency=1)
    assert [i["outcome"] for i in failed["items"]] == ["failed", "completed"]
    by_prompt_size(oa)
    run_items(ask(client), n=2, rt=cached(tmp_path), concurrency=1)
    assert len(oa.requests) == 4  # both asked again: nothing of the first run was kept


@pytest.mark.parametrize("flavor", ["anthropic", "google"])
def test_anthropic_and_gemini_calls_are_cached(flavor: str, tmp_path: Path) -> None:
    with FakeLLMServer(flavor) as server:  # type: ignore[arg-type]
        by_prompt_size(server)
        workflow = question_workflow(flavor, server, **({"max_retries": 0} if flavor == "anthropic" else {}))
        first = run_items(workflow, n=3, rt=cached(tmp_path))
        second = run_items(workflow, n=3, rt=cached(tmp_path))
        assert len(server.requests) == 3
        assert [i["output"] for i in second["items"]] == [i["output"] for i in first["items"]]
        assert second["accounting"]["replayed"]["cost"] == pytest.approx(first["accounting"]["knownCost"])
        # The key never holds the credential: no entry file contains it.
        for entry in (tmp_path / "cache").rglob("*"):
            if entry.is_file():
                assert KEY.encode() not in entry.read_bytes(), entry
