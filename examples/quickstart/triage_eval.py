"""Quick-start eval: a support-ticket triage classifier (no network, no API keys).

Run it:  axl-eval examples/quickstart --output out/results.json
Switch the system under test with QUICKSTART_VARIANT=baseline|candidate (default candidate).
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from pydantic import BaseModel
from triage import PRIORITIES, triage

from axl_action import dataset, define_eval, scorer

VARIANT = os.environ.get("QUICKSTART_VARIANT", "candidate")


class Ticket(BaseModel):
    """One support ticket as the triage system receives it."""

    id: str
    subject: str | None
    body: str
    tier: str = "free"


class Expected(BaseModel):
    """What a human triager decided."""

    category: str
    priority: str
    order_id: str | None = None


def execute_workflow(ticket: dict[str, Any], runtime: Any) -> dict[str, Any]:
    """The system under test: one ticket in, one triage decision out.

    The short sleep stands in for model latency so the timing rows have something to show.
    """
    time.sleep((3 + len(ticket["body"]) % 7) / 1000)
    return {"output": triage(ticket, VARIANT)}


def category_match(output: dict[str, Any], ticket: dict[str, Any], expected: dict[str, Any]) -> float:
    return 1.0 if output["category"] == expected["category"] else 0.0


def priority_match(output: dict[str, Any], ticket: dict[str, Any], expected: dict[str, Any]) -> float:
    """Full credit for the right level, half for one level off."""
    gap = abs(PRIORITIES.index(output["priority"]) - PRIORITIES.index(expected["priority"]))
    return {0: 1.0, 1: 0.5}.get(gap, 0.0)


def order_id_extracted(output: dict[str, Any], ticket: dict[str, Any], expected: dict[str, Any]) -> float:
    return 1.0 if output["order_id"] == expected["order_id"] else 0.0


def no_invented_order_id(output: dict[str, Any]) -> float:
    return 1.0 if output["order_id"] is None else 0.0


eval = define_eval(
    workflow="ticket-triage",
    # Read at import time; declared so a scoped PR run re-runs this eval when it changes.
    env=["QUICKSTART_VARIANT"],
    dataset=dataset(
        "support-tickets",
        file="tickets.jsonl",
        base_path=Path(__file__).parent,
        schema=Ticket,
        annotations_schema=Expected,
    ),
    scorers=[
        scorer("category", category_match, description="exact category"),
        scorer("priority", priority_match, description="priority, half credit one level off"),
        scorer(
            "order_id",
            order_id_extracted,
            applies=lambda output, ticket, expected: expected["order_id"] is not None,
            description="order id extracted (only tickets that mention an order)",
        ),
        scorer(
            "no_invented_order_id",
            no_invented_order_id,
            applies=lambda output, ticket, expected: expected["order_id"] is None,
            description="no order id invented for tickets without one",
        ),
    ],
    concurrency=8,
    metadata={"variant": VARIANT},
)
