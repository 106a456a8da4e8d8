"""JavaScript number formatting used in compare's messages and console output."""

from __future__ import annotations

import math
from decimal import ROUND_HALF_UP, Decimal

from axl_action.schema.numbers import js_number


def to_fixed(x: float, digits: int) -> str:
    """JS ``Number.prototype.toFixed``: exact binary value, ties away from zero, -0 -> "0"."""
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    if x == 0:
        x = 0.0  # JS prints -0 without a sign
    if abs(x) >= 1e21:  # JS spells these as String(x), exponent and all
        return js_number(x)
    quantum = Decimal(1).scaleb(-digits)
    return format(Decimal(x).quantize(quantum, rounding=ROUND_HALF_UP), "f")


def pad_start(text: str, width: int) -> str:
    """JS ``padStart`` with spaces (never truncates)."""
    return text.rjust(width)


def pad_end(text: str, width: int) -> str:
    """JS ``padEnd`` with spaces (never truncates)."""
    return text.ljust(width)
