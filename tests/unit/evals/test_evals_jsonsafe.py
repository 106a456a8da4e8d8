"""Outputs that are not plain JSON are converted before they reach the result file."""

from __future__ import annotations

import dataclasses
import datetime
import decimal
import enum
from typing import Any

from pydantic import BaseModel

from axl_action.evals.dataset import dataset
from axl_action.evals.definition import define_eval
from axl_action.evals.jsonsafe import json_safe
from axl_action.evals.runner import execute_eval
from axl_action.evals.scorer import scorer
from axl_action.runtime.runtime import Runtime
from axl_action.schema.jsonio import dumps_js


class Color(enum.Enum):
    RED = "red"


class Answer(BaseModel):
    text: str
    when: datetime.date


@dataclasses.dataclass
class Point:
    x: int
    y: float


def test_conversions() -> None:
    value = {
        1: datetime.datetime(2026, 1, 2, 3, 4, 5),
        "set": {3, 1, 2},
        "mixed": {1, "a"},
        "tuple": (1, Color.RED),
        "model": Answer(text="hi", when=datetime.date(2026, 5, 1)),
        "point": Point(1, float("inf")),
        "money": decimal.Decimal("1.25"),
        "raw": b"caf\xc3\xa9",
        "nan": float("nan"),
        "other": object,
    }
    safe = json_safe(value)
    assert safe["1"] == "2026-01-02T03:04:05"
    assert safe["set"] == [1, 2, 3] and len(safe["mixed"]) == 2
    assert safe["tuple"] == [1, "red"]
    assert safe["model"] == {"text": "hi", "when": "2026-05-01"}
    assert safe["point"] == {"x": 1, "y": None}
    assert safe["money"] == 1.25 and safe["raw"] == "café" and safe["nan"] is None
    assert safe["other"] == "<class 'object'>"
    dumps_js(safe)
    plain = {"a": [1, "b", None, True]}
    assert json_safe(plain) == plain


def test_runner_stores_json_safe_outputs_but_scorers_see_the_original() -> None:
    seen: list[Any] = []

    def score(output: Any) -> float:
        seen.append(output)
        return 1.0

    defn = define_eval(
        "wf",
        dataset("d", items=[{"input": 1}]),
        [scorer("s", score)],
        lambda i, rt: {
            "output": Answer(text="x", when=datetime.date(2026, 1, 1)),
            "metadata": {"at": {1, 2}},
        },
    )
    item = execute_eval(defn, Runtime())["items"][0]
    assert item["output"] == {"text": "x", "when": "2026-01-01"}
    assert item["metadata"] == {"at": [1, 2]}
    assert isinstance(seen[0], Answer)
