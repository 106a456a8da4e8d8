"""An application that calls the official ``openai`` client itself (issue 26), run by the CLI
against the real SmolLM2 server in tests/realmodel/test_sdk_local_model.py.

``SDK_MODE`` picks what the workflow does; every mode answers the same prompts:

* ``chat``: ``openai.OpenAI(base_url=..., api_key=...).chat.completions.create``;
* ``runtime``: the same request through ``runtime.chat`` (the project's own provider);
* ``stream``: a streamed chat call without ``stream_options`` (the runner adds
  ``include_usage``); ``stream_usage``: the app asks for usage itself; ``stream_no_usage``:
  the app sets ``include_usage`` to false (never overridden);
* ``async``: an ``async`` workflow sharing one module-level ``AsyncOpenAI()`` client;
* ``responses``: ``client.responses.create``.
"""

from __future__ import annotations

import os
from typing import Any

import openai

from axl_action import dataset, define_eval, scorer

MODE = os.environ.get("SDK_MODE", "chat")
MODEL = "smollm2-135m"
TOPICS = (
    "the sea", "a mountain", "bread", "winter", "a violin", "the moon", "coffee", "a library",
    "rain", "a train", "honey", "a bridge", "the desert", "a clock", "salt", "a garden",
)  # fmt: skip
ITEMS = int(os.environ.get("SDK_ITEMS", "8"))
OPTIONS: dict[str, Any] = {"temperature": 0, "max_tokens": 8}

# Made at import time, as applications do; reads OPENAI_BASE_URL and OPENAI_API_KEY.
async_client = openai.AsyncOpenAI(max_retries=0)


def _client() -> openai.OpenAI:
    return openai.OpenAI(
        base_url=os.environ["OPENAI_BASE_URL"], api_key=os.environ["OPENAI_API_KEY"], max_retries=0
    )


def _messages(item: dict[str, Any]) -> list[Any]:
    return [{"role": "user", "content": item["prompt"]}]


def _stream(item: dict[str, Any]) -> dict[str, Any]:
    extra: dict[str, Any] = {}
    if MODE == "stream_usage":
        extra["stream_options"] = {"include_usage": True}
    elif MODE == "stream_no_usage":
        extra["stream_options"] = {"include_usage": False}
    text = []
    with _client().chat.completions.create(
        model=MODEL, messages=_messages(item), stream=True, **OPTIONS, **extra
    ) as stream:
        for chunk in stream:
            for choice in chunk.choices:
                text.append(choice.delta.content or "")
    return {"output": "".join(text)}


def sync_workflow(item: dict[str, Any], runtime: Any) -> dict[str, Any]:
    if MODE == "runtime":
        return {"output": runtime.chat(f"openai:{MODEL}", _messages(item), **OPTIONS).text}
    if MODE == "responses":
        reply = _client().responses.create(model=MODEL, input=item["prompt"], max_output_tokens=8)
        return {"output": reply.output_text}
    if MODE.startswith("stream"):
        return _stream(item)
    completion = _client().chat.completions.create(model=MODEL, messages=_messages(item), **OPTIONS)
    return {"output": completion.choices[0].message.content}


async def async_workflow(item: dict[str, Any], runtime: Any) -> dict[str, Any]:
    completion = await async_client.chat.completions.create(model=MODEL, messages=_messages(item), **OPTIONS)
    return {"output": completion.choices[0].message.content}


eval = define_eval(
    workflow=f"sdk-{MODE}",
    dataset=dataset(
        "topics", items=[{"input": {"prompt": f"Say one word about {t}."}} for t in TOPICS[:ITEMS]]
    ),
    scorers=[scorer("answered", lambda output: 1.0 if str(output).strip() else 0.0)],
    execute_workflow=async_workflow if MODE == "async" else sync_workflow,
    concurrency=2,
    metadata={"mode": MODE},
)
