"""The LLM judge: prompt text, reply parsing and validation, measured calls."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from pydantic import BaseModel, Field

from axl_action.evals.llm_scorer import (
    DEFAULT_SCHEMA,
    JudgeResponseError,
    build_prompt,
    extract_json,
    llm_scorer,
)
from axl_action.evals.scorer import ScorerContext
from axl_action.providers.mock import MockProvider
from axl_action.providers.types import TokenUsage
from axl_action.runtime.runtime import Runtime
from axl_action.runtime.scope import track


def _score(
    reply: str, *, schema: Any = None, annotations: Any = None, cost: float | None = 0.01
) -> tuple[Any, MockProvider]:
    judge = MockProvider([reply], usage=TokenUsage(100, 20), cost=cost)
    runtime = Runtime(providers={"judge": judge})
    scorer = llm_scorer("quality", "judge:j-1", "You are strict.", schema=schema)
    context = ScorerContext(runtime, threading.Event())
    result = track(
        lambda: scorer.call_score({"answer": 42}, {"q": "life?"}, annotations, context), purpose="judging"
    )
    return result, judge


def test_good_reply_scores_with_reasoning_as_metadata() -> None:
    result, judge = _score('{"score": 0.8, "reasoning": "mostly right"}')
    assert result.status == "fulfilled"
    assert result.value == {"score": 0.8, "metadata": {"reasoning": "mostly right"}, "cost": 0.01}
    assert result.accounting["breakdown"]["judging"] == 0.01
    (request,) = judge.requests
    assert request.model == "j-1" and request.temperature == 0.2
    assert request.response_format == {"type": "json_object"}
    assert [m.role for m in request.messages] == ["system", "user"]
    assert request.messages[0].content == "You are strict."


def test_reply_wrapped_in_prose_and_fences_is_extracted() -> None:
    result, _ = _score('Sure!\n```json\n{"score": 1, "reasoning": "has {braces} in \\"text\\""}\n```\nBye')
    assert result.value["score"] == 1


def test_garbage_reply_is_an_invalid_response_with_its_cost() -> None:
    result, _ = _score("I think it is pretty good")
    assert isinstance(result.error, JudgeResponseError)
    assert str(result.error).startswith('LLM scorer "quality" returned an invalid response: ')
    assert result.error.cost == 0.01


@pytest.mark.parametrize(
    ("reply", "message"),
    [
        ('{"score": 1.5, "reasoning": "x"}', "score: Number must be less than or equal to 1"),
        ('{"score": -0.1, "reasoning": "x"}', "score: Number must be greater than or equal to 0"),
        ('{"score": "high", "reasoning": "x"}', "score: Expected number, received string"),
        ('{"score": 0.5}', "reasoning: Required"),
        ("[1, 2]", "Expected object, received array"),
    ],
)
def test_schema_violations_are_listed(reply: str, message: str) -> None:
    result, _ = _score(reply)
    assert str(result.error) == f'LLM scorer "quality" returned an invalid response: {message}'


def test_custom_pydantic_schema_and_unpriced_cost() -> None:
    class Verdict(BaseModel):
        score: float = Field(ge=0, le=1)
        label: str

    result, _ = _score('{"score": 0.25, "label": "meh", "extra": 1}', schema=Verdict, cost=None)
    assert result.value == {"score": 0.25, "metadata": {"label": "meh"}}  # judge:j-1 is unpriced: no cost
    assert result.accounting["reasons"] == {"unpriced_model": 1}
    bad, _ = _score('{"score": 2, "label": "x"}', schema=Verdict)
    assert "score: Input should be less than or equal to 1" in str(bad.error)


def test_prompt_matches_the_reference_layout() -> None:
    prompt = build_prompt({"q": 1.0}, {"expected": "y"}, "out", '{"s": 1}')
    assert prompt == (
        'Evaluate the following output.\n\n## Input\n{\n  "q": 1\n}\n'
        '\n## Annotations (Ground Truth)\n{\n  "expected": "y"\n}\n'
        '\n## Output to Evaluate\n"out"\n\nRespond with valid JSON matching this schema:\n{"s": 1}'
    )
    without = build_prompt("in", None, "out", "S")
    assert (
        without
        == 'Evaluate the following output.\n\n## Input\n"in"\n\n\n## Output to Evaluate\n"out"\n\nRespond with valid JSON matching this schema:\nS'
    )
    assert "Annotations" in build_prompt("in", {}, "out", "S")  # {} is truthy in JS


def test_schema_json_is_in_the_prompt_and_scorer_is_llm() -> None:
    scorer = llm_scorer("q", "judge:j", "sys")
    assert scorer.is_llm and scorer.name == "q"
    _, judge = _score('{"score": 0, "reasoning": "no"}')
    assert '"minimum": 0' in judge.requests[0].messages[1].content
    assert DEFAULT_SCHEMA["required"] == ["score", "reasoning"]


def test_extract_json_skips_unbalanced_prefixes() -> None:
    assert extract_json('note {not json} then {"score": 1}') == '{"score": 1}'
    assert extract_json("no object") == "no object"


def test_schema_without_numeric_score_is_rejected_at_definition() -> None:
    with pytest.raises(Exception, match="numeric score"):
        llm_scorer(
            "q", "judge:j", "sys", schema={"type": "object", "properties": {"label": {"type": "string"}}}
        )


def test_without_a_runtime_the_judge_explains() -> None:
    scorer = llm_scorer("q", "judge:j", "sys")
    with pytest.raises(Exception, match='LLM scorer "q" has no provider'):
        scorer.score("o", "i", None, None)


_SUBSET = {
    "type": "object",
    "properties": {
        "score": {"type": "number", "minimum": 0, "maximum": 1},
        "grade": {"type": "integer"},
        "label": {"type": "string", "minLength": 2, "maxLength": 4},
        "tone": {"enum": ["calm", "rude"]},
        "ok": {"type": "boolean"},
        "tags": {"type": "array", "items": {"type": "string"}},
        "nested": {"properties": {"n": {"type": "number"}}, "required": ["n"]},
        "free": {"type": ["string", "null"]},
    },
    "required": ["score"],
}


@pytest.mark.parametrize(
    ("reply", "message"),
    [
        ('{"score": 0.5, "grade": 1.5}', "grade: Expected integer, received float"),
        ('{"score": 0.5, "grade": "1"}', "grade: Expected number, received string"),
        ('{"score": 0.5, "label": "x"}', "label: String must contain at least 2 character(s)"),
        ('{"score": 0.5, "label": "xxxxx"}', "label: String must contain at most 4 character(s)"),
        ('{"score": 0.5, "label": 3}', "label: Expected string, received number"),
        ('{"score": 0.5, "tone": "meh"}', 'tone: Invalid enum value. Expected "calm" | "rude"'),
        ('{"score": 0.5, "ok": 1}', "ok: Expected boolean, received number"),
        ('{"score": 0.5, "tags": "a"}', "tags: Expected array, received string"),
        ('{"score": 0.5, "tags": ["a", 2]}', "tags.1: Expected string, received number"),
        ('{"score": 0.5, "nested": {}}', "nested.n: Required"),
        ('{"score": 0.5, "nested": []}', "nested: Expected object, received array"),
    ],
)
def test_json_schema_subset_names_each_violation(reply: str, message: str) -> None:
    result, _ = _score(reply, schema=_SUBSET)
    assert str(result.error) == f'LLM scorer "quality" returned an invalid response: {message}'


def test_json_schema_subset_keeps_declared_fields_and_drops_the_rest() -> None:
    reply = (
        '{"score": 0.5, "grade": 2, "label": "abc", "tone": "calm", "ok": true, "tags": ["a"], '
        '"nested": {"n": 1, "x": 2}, "free": 7, "extra": 1}'
    )
    result, _ = _score(reply, schema=_SUBSET)
    assert result.error is None
    assert result.value["score"] == 0.5
    # A type outside the subset (a list of types) is passed through unchecked.
    assert result.value["metadata"] == {
        "grade": 2,
        "label": "abc",
        "tone": "calm",
        "ok": True,
        "tags": ["a"],
        "nested": {"n": 1},
        "free": 7,
    }
