"""The one money printer (``axl_action.formatting``): enough digits to tell amounts apart,
never ``$0.00`` for a non-zero amount, and what is known about spend that is not money."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from axl_action.formatting import (
    format_known_spend,
    format_worst_scorer,
    signed_usd,
    spend_pair,
    spend_shown,
    usd,
    usd_pair,
)
from axl_action.schema import EvalAccounting


@pytest.mark.parametrize(
    ("amount", "shown"),
    [
        (0, "$0.00"),
        (0.001281, "$0.00128"),
        (0.001753, "$0.00175"),
        (0.003, "$0.003"),
        (0.0123, "$0.0123"),
        (0.01, "$0.01"),
        (0.5, "$0.50"),
        (0.123, "$0.123"),
        (1.5, "$1.50"),
        (1234.5, "$1234.50"),
        (-0.3, "-$0.30"),
        (1e-12, "<$0.00000001"),
        (None, "—"),
        (math.nan, "—"),
    ],
)
def test_usd(amount: float | None, shown: str) -> None:
    assert usd(amount) == shown


@given(st.floats(min_value=1e-8, max_value=1e6, allow_nan=False))
def test_a_non_zero_amount_never_reads_zero(amount: float) -> None:
    text = usd(amount)
    assert text != "$0.00"
    assert float(text.lstrip("<$")) > 0


@given(
    st.floats(min_value=1e-6, max_value=1e4, allow_nan=False),
    st.floats(min_value=1e-6, max_value=1e4, allow_nan=False),
)
def test_a_pair_of_different_amounts_reads_different(a: float, b: float) -> None:
    left, right = usd_pair(a, b)
    if abs(a - b) / max(a, b) > 1e-6:
        assert left != right, (a, b, left, right)
    # Both sides with the same decimals, so they line up.
    assert len(left.split(".")[1]) == len(right.split(".")[1])


def test_the_issue_pairs() -> None:
    # The comment once said $0.0010 -> $0.0020 ($0.00, +36.8%) for these.
    assert usd_pair(0.001281, 0.001753) == ("$0.00128", "$0.00175")
    assert signed_usd(0.001753 - 0.001281) == "+$0.000472"
    # The HTML once said $0.0080 -> $0.0080 next to +7.2%.
    assert usd_pair(0.00766, 0.00821) == ("$0.00766", "$0.00821")
    assert usd_pair(1.001, 1.004) == ("$1.001", "$1.004")
    assert usd_pair(0.08, 0.0742) == ("$0.0800", "$0.0742")
    assert signed_usd(-0.0004) == "-$0.0004"
    assert signed_usd(0) == "$0.00"


def _acc(known: float, completeness: str = "complete", **reasons: int) -> EvalAccounting:
    return EvalAccounting.model_validate(
        {"knownCost": known, "completeness": completeness, "reasons": reasons}
    )


def test_spend_that_is_not_money() -> None:
    assert spend_shown(0, _acc(0, "incomplete", unpriced_model=30)) == "unpriced"
    assert spend_shown(0, _acc(0, "incomplete", usage_missing=2)) == "unknown"
    assert spend_shown(0.12, _acc(0.12, "incomplete", usage_missing=2)) == "≥ $0.12"
    assert spend_shown(0, _acc(0)) == "$0.00"  # measured free (a mock, a local model at $0)
    assert spend_pair(0, _acc(0, "incomplete", unpriced_model=3), 0.0012, _acc(0.0012)) == (
        "unpriced",
        "$0.00120",
    )
    assert format_known_spend(_acc(0, "incomplete", unpriced_model=30)) == (
        "unpriced (incomplete: 30 unpriced_model)"
    )
    assert (
        format_known_spend(_acc(0.5, "incomplete", unpriced_model=2))
        == "$0.50 (incomplete: 2 unpriced_model)"
    )


def test_budget_line_says_what_was_spent() -> None:
    from axl_action.formatting import format_budget_line

    acc = EvalAccounting.model_validate(
        {
            "budget": {
                "limit": 0.003,
                "status": "closed",
                "knownSpend": 0.00312,
                "knownOvershoot": 0.00012,
                "closedBy": "case",
            }
        }
    )
    # Once: "$0.00 known spend against a $0.00 limit, $0.00 over".
    assert format_budget_line(acc) == (
        "  Budget: STOPPED — $0.00312 known spend against a $0.003 limit, $0.00012 over, first observed by case"
    )


def test_worst_scorer_is_named() -> None:
    assert format_worst_scorer("judge", "candidate", 17, 20) == "85% (worst: judge, candidate, 17 of 20)"
    assert format_worst_scorer("judge", None, 17, 60) == "28.3% (worst: judge, 17 of 60)"
