"""Numeric and text helpers with JavaScript semantics: the one home of number formatting.

axl-eval result files are written by JavaScript, and byte-for-byte compatibility depends on
JS rounding (half toward +inf), floor-index percentiles and JS number-to-string rules.
Python's defaults differ (banker's rounding, ``1.0`` vs ``1``, ``5e-05`` vs ``0.00005``).

Each rule is here once: ``js_round`` (``Math.round``), ``round3``, ``to_fixed``
(``Number.prototype.toFixed``), ``js_number`` (``String(x)``) and ``format_percent``. They are
checked against node on a corpus of inexact decimal ties
(``tests/fixtures/js-numbers/corpus.json``, ``tests/unit/schema/test_js_numbers_corpus.py``).

What counts as a number in data read back (a reply, a cache entry, a results file) is here
once too: :func:`finite_number`, :func:`usable_number` (a cost, a budget, a usage count) and
:func:`is_error_rate_limit`.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence
from decimal import ROUND_HALF_UP, Decimal
from typing import TYPE_CHECKING, Any, TypeGuard, overload

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt


# Each test is one expression, not one test calling the other: they run several times on
# every measured model call. The comparison is the finiteness test of a double, as JSON numbers
# are: NaN fails every comparison, and an integer past the largest double is not finite either
# (``math.isfinite`` raised OverflowError on one).
_NUMBER_TYPES = (int, float)
_MAX = sys.float_info.max


def finite_number(x: object) -> TypeGuard[int | float]:
    """An int or float that is finite; a bool is not a number here."""
    return isinstance(x, _NUMBER_TYPES) and not isinstance(x, bool) and -_MAX <= x <= _MAX


def usable_number(x: object) -> TypeGuard[int | float]:
    """A finite number >= 0: a usable cost (an explicit 0 is *known free*), budget or usage count."""
    return isinstance(x, _NUMBER_TYPES) and not isinstance(x, bool) and 0 <= x <= _MAX


def is_error_rate_limit(x: object) -> bool:
    """A finite number (not bool) in [0, 1]."""
    return finite_number(x) and 0 <= x <= 1


def js_round(x: float) -> int:
    """JS ``Math.round``: the nearest integer, halves toward +infinity.

    ``floor(x + 0.5)`` is one too high where ``x + 0.5`` rounds up in binary
    (``0.49999999999999994``), so that case steps back (``r - 0.5`` is exact, ``r - x`` is not).
    """
    r = math.floor(x + 0.5)
    return r - 1 if r - 0.5 > x else r


@overload
def round3(x: float) -> float: ...
@overload
def round3(x: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]: ...
def round3(x: Any) -> Any:
    """JS ``Math.round(x * 1000) / 1000``: three decimals, ties toward +infinity; negative zero
    comes out as 0 (JS prints -0 as 0). Takes a float or a numpy array (element-wise)."""
    if type(x) is float or type(x) is int:
        return js_round(x * 1000) / 1000 + 0.0
    import numpy as np  # an array was passed, so numpy is loaded

    y = x * 1000
    r = np.floor(y + 0.5)
    r -= r - 0.5 > y
    return r / 1000 + 0.0


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


def to_fixed(x: float, digits: int) -> str:
    """JS ``Number.prototype.toFixed``: the exact binary value rounded, ties away from zero,
    -0 -> "0". ``(0.0015 * 100).toFixed(1)`` is "0.1": 0.15 is a little under 0.15 in binary."""
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    if x == 0:
        x = 0.0  # JS prints -0 without a sign
    if abs(x) >= 1e21:  # JS spells these as String(x), exponent and all
        return js_number(x)
    # A negative value that rounds to zero keeps its sign, as in JS: (-0.0004).toFixed(3) is "-0.000".
    return format(Decimal(x).quantize(_QUANTUM[digits], rounding=ROUND_HALF_UP), "f")


_QUANTUM = [Decimal(1).scaleb(-d) for d in range(101)]


def format_percent(rate: float) -> str:
    """``formatPercent``: ``${Number((rate * 100).toFixed(1))}%``: 0.7374 -> '73.7%', 0.05 ->
    '5%', 1 -> '100%', 0.0015 -> '0.1%' (as node prints it)."""
    return js_number(float(to_fixed(rate * 100, 1))) + "%"


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
