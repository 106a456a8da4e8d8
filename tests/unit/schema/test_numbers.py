"""JS numeric semantics: rounding, stats, number-to-string, percent formatting."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from axl_action.schema import compute_stats, describe_input, dumps_js, format_percent, js_number, round3
from axl_action.schema.numbers import score_value


@pytest.mark.parametrize(
    ("x", "expected"),
    [(2.5e-3, 0.003), (-0.0025, -0.002), (1.0005, 1.001), (0.6666666, 0.667), (0.1235, 0.124)],
)
def test_round3_half_up(x: float, expected: float) -> None:
    assert round3(x) == expected


@pytest.mark.parametrize(
    ("x", "expected"),
    [
        (1.0, 1),
        (1, 1),
        (0.9995, 1),
        (0.0, 0),
        (-0.0, 0),
        (0.0004, 0),
        (0.0005, 0.001),
        (0.5, 0.5),
        (0.1235, 0.124),
    ],
)
def test_score_value_rounds_and_stores_whole_scores_as_ints(x: float, expected: float) -> None:
    value = score_value(x)
    assert (value, type(value)) == (expected, type(expected))


def test_compute_stats_floor_index_percentiles() -> None:
    assert compute_stats([]) == {"mean": 0, "min": 0, "max": 0, "p50": 0, "p95": 0}
    assert compute_stats([0.2, 0.8]) == {"mean": 0.5, "min": 0.2, "max": 0.8, "p50": 0.8, "p95": 0.8}
    stats = compute_stats([1210, 1840])
    assert stats["mean"] == 1525 and stats["p50"] == 1840


@pytest.mark.parametrize(
    ("x", "text"),
    [
        (1.0, "1"),
        (0.5, "0.5"),
        (5e-05, "0.00005"),
        (1e-7, "1e-7"),
        (1.5e-7, "1.5e-7"),
        (1e21, "1e+21"),
        (123456789012345680000.0, "123456789012345680000"),
        (-0.0, "0"),
        (float("nan"), "NaN"),
        (math.inf, "Infinity"),
        (0.006999999999999999, "0.006999999999999999"),
    ],
)
def test_js_number(x: float, text: str) -> None:
    assert js_number(x) == text


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_js_number_round_trips(x: float) -> None:
    assert float(js_number(x)) == x


@pytest.mark.parametrize(
    ("rate", "text"), [(0.7374, "73.7%"), (0.05, "5%"), (0.06, "6%"), (1, "100%"), (0.0025, "0.3%")]
)
def test_format_percent(rate: float, text: str) -> None:
    assert format_percent(rate) == text


def test_dumps_js_matches_json_stringify_conventions() -> None:
    assert dumps_js({"a": [1.0, 2.5, None, True], "b": {}, "c": [], "d": "é\n"}) == (
        '{\n  "a": [\n    1,\n    2.5,\n    null,\n    true\n  ],\n  "b": {},\n  "c": [],\n  "d": "é\\n"\n}'
    )
    assert dumps_js(float("nan")) == "null"


def test_describe_input_truncates_at_200() -> None:
    assert describe_input({"id": 0}) == '{"id":0}'
    long = describe_input({"t": "x" * 300})
    assert len(long) == 201 and long.endswith("…")
