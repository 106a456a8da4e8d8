"""A real model end to end: sentiment labels from SmolLM2-135M served by llama.cpp on loopback.

Start the server (see README.md next to this file), then:

    OPENAI_BASE_URL=http://127.0.0.1:8000/v1 OPENAI_API_KEY=local \\
      LOCAL_MODEL_VARIANT=baseline axl-eval examples/local-model --output out/baseline.json \\
      --pricing examples/local-model/pricing.json

``LOCAL_MODEL_VARIANT`` picks the prompt under test (``baseline`` or ``candidate``, default
``candidate``); ``LOCAL_MODEL`` the model URI (default ``openai:smollm2-135m``, the server's
``--model_alias``). The same model also judges every answer through ``llm_scorer``.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from axl_action import dataset, define_eval, llm_scorer, scorer

VARIANTS = ("baseline", "candidate")
VARIANT = os.environ.get("LOCAL_MODEL_VARIANT", "candidate")
if VARIANT not in VARIANTS:
    raise ValueError(f"LOCAL_MODEL_VARIANT must be one of {', '.join(VARIANTS)}, got {VARIANT!r}")
MODEL = os.environ.get("LOCAL_MODEL", "openai:smollm2-135m")
LABELS = ("positive", "negative")


class Review(BaseModel):
    id: str
    review: str


class Expected(BaseModel):
    sentiment: str


def _messages(review: str) -> list[dict[str, str]]:
    if VARIANT == "baseline":
        # The "main branch" prompt: no instructions, so the model chats instead of labelling.
        return [{"role": "user", "content": f"What do you think about this review? {review}"}]
    # The "pull request" prompt: an instruction plus two worked examples.
    return [
        {
            "role": "system",
            "content": "Classify the sentiment of the review. Reply with exactly one word: positive or negative.",
        },
        {"role": "user", "content": "Review: The staff were friendly and helpful."},
        {"role": "assistant", "content": "positive"},
        {"role": "user", "content": "Review: It broke after one use."},
        {"role": "assistant", "content": "negative"},
        {"role": "user", "content": f"Review: {review}"},
    ]


def execute_workflow(item: dict[str, Any], runtime: Any) -> dict[str, Any]:
    # temperature 0 makes llama.cpp decode greedily, so a rerun gives the same answers.
    reply = runtime.chat(MODEL, _messages(item["review"]), temperature=0, max_tokens=12)
    return {"output": reply.text.strip()}


def _words(output: str) -> list[str]:
    return re.findall(r"[a-z']+", output.lower())


def sentiment_label(output: str, item: dict[str, Any], expected: dict[str, Any]) -> float:
    """The first word is the expected label."""
    words = _words(output)
    return 1.0 if words and words[0] == expected["sentiment"] else 0.0


def one_word_label(output: str) -> float:
    """The answer is exactly one of the labels, with nothing around it."""
    return 1.0 if _words(output) in ([label] for label in LABELS) else 0.0


# llama.cpp turns a JSON schema in response_format into a decoding grammar, so even a 135M
# model can only emit replies this schema accepts; llm_scorer validates them again.
JUDGE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "score": {"type": "number", "enum": [0, 0.5, 1]},
        # A pattern rather than maxLength: llama.cpp's string rule lets a raw newline through,
        # which is not valid JSON; the pattern allows plain words only, at most 60 characters.
        "reasoning": {"type": "string", "pattern": "^[A-Za-z0-9 ,.'-]{1,60}$"},
    },
    "required": ["score", "reasoning"],
}

judge = llm_scorer(
    "judge_agrees",
    MODEL,
    system=(
        "You check a sentiment classifier. The ground truth gives the correct sentiment. "
        "Score 1 when the output states that sentiment, 0.5 when it is unclear, 0 when it is wrong."
    ),
    schema=JUDGE_SCHEMA,
    temperature=0,
    max_tokens=48,
    provider_options={"response_format": {"type": "json_object", "schema": JUDGE_SCHEMA}},
    description="SmolLM2 judges whether the answer states the right sentiment",
)

eval = define_eval(
    workflow="review-sentiment",
    dataset=dataset(
        "reviews",
        file="reviews.jsonl",
        base_path=Path(__file__).parent,
        schema=Review,
        annotations_schema=Expected,
    ),
    scorers=[
        scorer("sentiment", sentiment_label, description="first word is the expected label"),
        scorer("one_word", one_word_label, description="answer is exactly one label"),
        judge,
    ],
    # llama-cpp-python's server decodes one request at a time; two in flight keep it busy.
    concurrency=2,
    metadata={"variant": VARIANT, "model": MODEL},
)
