"""parse_budget (spec §8.1) and the AdmissionController threshold (spec §8.2)."""

from __future__ import annotations

import threading

import pytest

from axl_action.errors import BudgetError
from axl_action.runtime.admission import AdmissionController, parse_budget


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("$1", 1),
        ("1", 1),
        ("$0.50", 0.5),
        ("0.50", 0.5),
        ("$10.00", 10),
        ("0", 0),
        ("$0", 0),
        ("12.345", 12.345),
        ("$0.010", 0.01),
    ],
)
def test_parse_budget_accepts_plain_usd_amounts(text: str, value: float) -> None:
    assert parse_budget(text) == value


@pytest.mark.parametrize(
    "text",
    [
        "-1",
        "$-1",
        "abc",
        "$",
        "",
        "1.2.3",
        "Infinity",
        "$1,000",
        "1 USD",
        " $1",
        "$1 ",
        "1e3",
        "1.",
        ".5",
        None,
        5,
        {"a": 1},
    ],
)
def test_parse_budget_rejects_everything_else(text: object) -> None:
    with pytest.raises(BudgetError) as info:
        parse_budget(text)
    assert "expected a non-negative USD amount like $1 or 0.50" in str(info.value)
    assert info.value.code == "INVALID_BUDGET"


def test_zero_budget_is_closed_from_the_start() -> None:
    ctl = AdmissionController(0)
    assert ctl.closed
    assert ctl.snapshot() == {"limit": 0, "status": "closed", "knownSpend": 0, "knownOvershoot": 0}


def test_closes_at_the_limit_not_above_it() -> None:
    ctl = AdmissionController(0.01)
    ctl.charge(0.004)
    assert not ctl.closed
    ctl.charge(0.006)
    assert ctl.closed  # 0.004 + 0.006 == 0.01 exactly: >= closes


def test_unusable_charges_are_ignored_and_closure_is_noted_once() -> None:
    ctl = AdmissionController(1)
    for bad in (float("nan"), float("inf"), -1.0):
        ctl.charge(bad)
    assert ctl.known_spend == 0
    ctl.note_closure("case")  # still open: nothing recorded
    assert ctl.closed_by is None
    ctl.charge(1.5)
    ctl.note_closure("scorer")
    ctl.note_closure("operation")
    snap = ctl.snapshot()
    assert snap["closedBy"] == "scorer"
    assert snap["knownOvershoot"] == 0.5


def test_alternating_charges_sum_in_settlement_order() -> None:
    ctl = AdmissionController(0.01)
    for i in range(6):
        ctl.charge(0.001 if i % 2 == 0 else 0.003)
    assert ctl.known_spend == 0.012
    assert ctl.snapshot()["knownOvershoot"] == 0.002


def test_concurrent_charges_are_not_lost() -> None:
    ctl = AdmissionController(1_000_000)
    threads = [threading.Thread(target=lambda: [ctl.charge(1) for _ in range(1000)]) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert ctl.known_spend == 8000


@pytest.mark.parametrize("limit", [float("nan"), float("inf"), -0.5])
def test_controller_rejects_bad_limits(limit: float) -> None:
    with pytest.raises(BudgetError):
        AdmissionController(limit)
