"""Numeric and text helpers with JavaScript semantics.

axl-eval result files are written by JavaScript, and byte-for-byte compatibility depends on
JS rounding (half toward +inf), floor-index percentiles and JS number-to-string rules.
Python's defaults differ (banker's rounding, ``1.0`` vs ``1``, ``5e-05`` vs ``0.00005``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any


def round3(x: float) -> float:
    """JS ``Math.round(x * 1000) / 1000``: three decimals, ties toward +infinity."""
    return math.floor(x * 1000 + 0.5) / 1000


# The whole scores, as a reader of the written file gets them back: JSON says "1", not "1.0".
_WHOLE_SCORES: dict[float, int] = {0.0: 0, 1.0: 1}


def score_value(x: float) -> float:
    """A score in [0, 1] as the runner stores it: :func:`round3`, and 0 and 1 as ints.

    The value a reader of the results file gets back, so a run held in memory and the same run
    read from its file carry equal values of equal types. Pass/fail scorers make most scores
    whole; as ints the writer writes them as they are, where each whole float had to be
    respelled ("1.0" to "1") in the text: on the runner's 20,000-item result that respelling
    was a quarter of the write.
    """
    rounded = round3(x)
    return _WHOLE_SCORES.get(rounded, rounded)


def compute_stats(values: Sequence[float]) -> dict[str, float]:
    """``computeStats``: mean/min/max/p50/p95, each rounded to 3 decimals; all 0 when empty."""
    n = len(values)
    if n == 0:
        return {"mean": 0, "min": 0, "max": 0, "p50": 0, "p95": 0}
    ordered = sorted(values)
    total = 0.0
    for v in values:  # left-to-right sum, as JS reduce does
        total += v
    return {
        "mean": round3(total / n),
        "min": round3(ordered[0]),
        "max": round3(ordered[-1]),
        "p50": round3(ordered[math.floor(n * 0.5)]),
        "p95": round3(ordered[math.floor(n * 0.95)]),
    }


def sample_std(values: Sequence[float]) -> float:
    """Sample standard deviation (n - 1 divisor); 0 for fewer than two values."""
    n = len(values)
    if n <= 1:
        return 0.0
    mean = sum(values) / n
    return math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))


def _js_to_fixed1(x: float) -> str:
    # JS toFixed breaks exact decimal ties upward; emulate with a decimal string round-trip.
    from decimal import ROUND_HALF_UP, Decimal

    return str(Decimal(repr(x)).quantize(Decimal("0.1"), rounding=ROUND_HALF_UP))


def format_percent(rate: float) -> str:
    """``formatPercent``: 0.7374 -> '73.7%', 0.05 -> '5%', 1 -> '100%'."""
    fixed = _js_to_fixed1(rate * 100)
    return js_number(float(fixed)) + "%"


def js_number(x: float | int) -> str:
    """JavaScript ``Number.prototype.toString`` for a finite double.

    NaN and infinities give ``NaN``/``Infinity``/``-Infinity`` (what ``String(x)`` prints);
    JSON writers must map them to ``null`` before calling this.
    """
    if isinstance(x, bool):
        return "true" if x else "false"
    if isinstance(x, int):
        return str(x)
    if x != x:
        return "NaN"
    if x in (math.inf, -math.inf):
        return "Infinity" if x > 0 else "-Infinity"
    if x == 0:
        return "0"
    ax = abs(x)
    if x.is_integer() and ax < 2**53:
        return str(int(x))
    if 1e-4 <= ax < 1e16:
        # Python and JS agree on plain notation in this range, but for integral values from
        # 2**53 on Python still writes ".0" (9007199254740992.0); JS never does.
        text = repr(x)
        return text[:-2] if text.endswith(".0") else text
    return _js_number_slow(x)


def _js_number_slow(x: float) -> str:
    text = repr(abs(x))
    mantissa, _, exp_text = text.partition("e")
    exp = int(exp_text) if exp_text else 0
    int_part, _, frac_part = mantissa.partition(".")
    digits = int_part + frac_part
    n = len(int_part) + exp
    stripped = digits.lstrip("0")
    n -= len(digits) - len(stripped)
    digits = stripped.rstrip("0") or "0"
    k = len(digits)
    sign = "-" if x < 0 else ""
    if k <= n <= 21:
        body = digits + "0" * (n - k)
    elif 0 < n <= 21:
        body = digits[:n] + "." + digits[n:]
    elif -6 < n <= 0:
        body = "0." + "0" * (-n) + digits
    else:
        e = n - 1
        exp_str = ("+" if e >= 0 else "-") + str(abs(e))
        body = (digits if k == 1 else digits[0] + "." + digits[1:]) + "e" + exp_str
    return sign + body


def js_string(value: Any) -> str:
    """JS ``String(value)`` for the values scorer messages print (numbers, undefined, ...)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return js_number(value)
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return ",".join("" if v is None else js_string(v) for v in value)
    if isinstance(value, dict):
        return "[object Object]"
    return str(value)


def js_compact_json(value: Any) -> str:
    """``JSON.stringify(value)``: compact separators, non-ASCII kept, JS number format."""
    from axl_action.schema.jsonio import dumps_js

    return dumps_js(value, indent=None)


def describe_input(value: Any) -> str:
    """``describeInput``: compact JSON of an item input, cut to 200 characters plus an ellipsis."""
    try:
        text = js_compact_json(value)
    except (TypeError, ValueError, RecursionError):
        text = "[unserializable input]"
    if len(text) > 200:
        return text[:200] + "…"
    return text
