"""The workload of ``../shared/fixtures/axl-eval-0.16.1-big`` (20,000 items x 4 scorers, no LLM).

The TypeScript CLI wrote that pair from this eval's twin; running it here gives the same shape,
so its in-process ``duration`` per item compares directly with the TS CLI's 11 µs. Like its
twin, which validates its rows with zod schemas, the dataset validates each input and each
annotation with a schema: a user's run pays for that. ``BIG_SCHEMA=0`` leaves the schemas out.
``BIG_ITEMS`` sets the item count; ``BIG_VARIANT=candidate`` switches the system under test.
"""

from __future__ import annotations

import os
from typing import Any

from pydantic import BaseModel

from axl_action import dataset, define_eval, scorer

COUNT = int(os.environ.get("BIG_ITEMS", "20000"))
CANDIDATE = os.environ.get("BIG_VARIANT", "baseline") == "candidate"
SCHEMA = os.environ.get("BIG_SCHEMA", "1") != "0"


class Input(BaseModel):
    id: int
    v: int


class Annotations(BaseModel):
    target: int


def items(count: int) -> list[dict[str, Any]]:
    out = []
    for i in range(count):
        v = (i * 2654435761) % 1000
        out.append({"input": {"id": i, "v": v}, "annotations": {"target": (v * 3) % 1000}})
    return out


def workflow(value: dict[str, Any], runtime: Any) -> dict[str, Any]:
    i, v = value["id"], value["v"]
    out = (v * 3) % 1000
    if CANDIDATE:
        if i % 10 == 3 and i % 20 != 3:
            out += v % 7
        if i % 13 == 0:
            out += 1 + v % 5
        if i % 89 == 88:
            raise ValueError(f"candidate fails on {i}")
        return {"output": out, "cost": 0.00011}
    if i % 10 == 3:
        out += v % 7
    if i % 97 == 96:
        raise ValueError(f"baseline fails on {i}")
    return {"output": out, "cost": 0.0001}


def exact(output: Any, _input: Any, annotations: Any) -> float:
    return 1.0 if output == annotations["target"] else 0.0


def closeness(output: Any, _input: Any, annotations: Any) -> float:
    return 1 / (1 + abs(output - annotations["target"]))


def bucket(output: Any) -> float:
    return (output % 5) / 4


def flaky(output: Any, value: Any) -> float:
    i = value["id"]
    if i % 31 == 30:
        return 1.5
    if i % 43 == 42:
        raise RuntimeError("flaky scorer")
    return value["v"] / 999


SCORERS = [
    scorer("exact", exact),
    scorer("closeness", closeness),
    scorer("bucket", bucket),
    scorer("flaky", flaky),
]

eval = define_eval(
    "big",
    dataset(
        f"big-{COUNT}",
        items=items(COUNT),
        schema=Input if SCHEMA else None,
        annotations_schema=Annotations if SCHEMA else None,
    ),
    SCORERS,
    execute_workflow=workflow,
    concurrency=20,
)
