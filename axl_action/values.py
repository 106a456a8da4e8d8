"""The one grammar of option values, for the CLI's flags and the action's inputs alike.

Each parser takes the text as given and returns the value, or raises ``ValueError`` whose
message says what is allowed ("must be ..."). The caller names the option and words the error
for its surface: the CLI keeps the reference's lines (``--max-item-error-rate must be a number
in [0, 1], got "x"``), the action names the input and the value it got. The rule itself (which
texts are accepted and what they mean) lives only here, so ``max-cost-increase: 20%`` and
``--max-cost-increase 20%`` can never disagree.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Literal

AUTO: Literal["auto"] = "auto"
"""``threshold: auto``: thresholds measured from the baseline history."""

_RATE_RE = re.compile(r"\d*\.?\d+")
_PERCENT_RE = re.compile(r"(\d*\.?\d+)\s*%?")
_INTEGER_RE = re.compile(r"-?[0-9]+")
_SHARD_RE = re.compile(r"([0-9]+)\s*/\s*([0-9]+)")
_GLOBAL_RE = re.compile(r"[\d.]+")
_FLOAT_PREFIX_RE = re.compile(r"[+-]?(?:Infinity|\d+\.?\d*(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?)")
_PIECES_RE = re.compile(r"[\n,]")


def js_parse_float(text: str) -> float:
    """JS ``parseFloat``: the longest leading decimal literal after whitespace, else NaN."""
    match = _FLOAT_PREFIX_RE.match(text.lstrip())
    if not match:
        return math.nan
    token = match.group(0)
    if token.endswith("Infinity"):
        return -math.inf if token.startswith("-") else math.inf
    return float(token)


def parse_threshold(value: str) -> float | dict[str, float] | None:
    """The reference CLI's reading of ``--threshold``: ``0.1`` (global) or ``name=0.1,other=0.02``.

    A value made only of digits and dots is a global number (``"1.2.3"`` -> 1.2, ``"."`` ->
    NaN); anything else is split into ``key=value`` pieces (at commas, and at line breaks for a
    multi-line action input), pieces without a key or ``=`` are dropped, garbage values become
    NaN, and an empty map means "no thresholds" (so ``-0.1`` is not a global value).
    """
    if _GLOBAL_RE.match(value):
        return js_parse_float(value)
    overrides: dict[str, float] = {}
    for piece in _PIECES_RE.split(value):
        key, sep, raw = piece.partition("=")
        if key.strip() and sep:
            # The reference splits on every "=" and keeps the second field: "a=1=2" -> "1".
            overrides[key.strip()] = js_parse_float(raw.split("=")[0].strip())
    return overrides or None


class OutOfRange(ValueError):
    """The value is written right but lies outside the allowed range (``5/4`` as a shard)."""


class NotANumber(ValueError):
    """A threshold piece whose value is not a number; ``piece`` is that piece as written."""

    def __init__(self, piece: str) -> None:
        super().__init__(
            f'has a value that is not a number: "{piece}"; write a non-negative number like 0.05 '
            "or scorer=value pairs like accuracy=0.02,judge=0.05"
        )
        self.piece = piece


def threshold(text: str) -> float | dict[str, float] | Literal["auto"]:
    """A threshold option: ``auto``, one number, or ``scorer=number`` pairs, every number real."""
    if text.strip() == AUTO:
        return AUTO
    parsed = parse_threshold(text)
    if parsed is None:
        raise ValueError(
            "must be a non-negative number like 0.05, scorer=value pairs like accuracy=0.02,judge=0.05, "
            "or auto (measured from the baseline history)"
        )
    if isinstance(parsed, Mapping):
        pieces = {piece.partition("=")[0].strip(): piece.strip() for piece in _PIECES_RE.split(text)}
        bad = [pieces.get(key, key) for key, value in parsed.items() if math.isnan(value)]
    else:
        bad = [text] if math.isnan(parsed) else []
    if bad:
        raise NotANumber(bad[0])
    return parsed


def pass_rates(text: str) -> float | dict[str, float]:
    """A pass-rate floor: one rate in [0, 1] for every scorer, or ``scorer=rate`` pairs (split
    as ``threshold`` splits them: at commas and line breaks)."""
    body = text.strip()
    if "=" not in body:
        try:
            return rate(body)
        except ValueError:
            raise ValueError("must be a rate from 0 to 1 or scorer=rate pairs") from None
    floors: dict[str, float] = {}
    for piece in _PIECES_RE.split(body):
        if not piece.strip():
            continue
        key, sep, raw = piece.partition("=")
        if not key.strip() or not sep:
            raise ValueError(f'has a piece that is not scorer=rate: "{piece.strip()}"')
        try:
            floors[key.strip()] = rate(raw)
        except ValueError:
            raise ValueError(f'has a rate that is not a number from 0 to 1: "{piece.strip()}"') from None
    if not floors:
        raise ValueError("must be a rate from 0 to 1 or scorer=rate pairs")
    return floors


def rate(text: str) -> float:
    """A rate in [0, 1], written with digits and at most one decimal point (``0.05``, ``.5``, ``1``)."""
    body = text.strip()
    if not _RATE_RE.fullmatch(body) or not 0 <= float(body) <= 1:
        raise ValueError("must be a number from 0 to 1, like 0.05")
    return float(body)


def percentage(text: str) -> float:
    """A non-negative percentage, with or without a trailing ``%`` (``20%``, ``20 %``, ``12.5``)."""
    match = _PERCENT_RE.fullmatch(text.strip())
    if match is None:
        raise ValueError("must be a non-negative percentage like 20%")
    return float(match.group(1))


def integer(text: str) -> int:
    """A whole number, negative allowed."""
    body = text.strip()
    if not _INTEGER_RE.fullmatch(body):
        raise ValueError("must be an integer")
    return int(body)


def whole_number(text: str, *, low: int = 1, high: int | None = None) -> int:
    """A whole number from ``low`` (to ``high`` when given)."""
    body = text.strip()
    if not body.isascii() or not body.isdigit() or int(body) < low or (high is not None and int(body) > high):
        raise ValueError(
            f"must be a whole number from {low} to {high}"
            if high is not None
            else f"must be a whole number of at least {low}"
        )
    return int(body)


def repeats(text: str, *, high: int) -> int | Literal["auto"]:
    """``repeats``: a whole number from 1 to ``high``, or ``auto`` (sequential repeats)."""
    if text.strip() == "auto":
        return "auto"
    try:
        return whole_number(text, high=high)
    except ValueError:
        raise ValueError(f"must be a whole number from 1 to {high} or auto") from None


def shard(text: str) -> tuple[int, int]:
    """``index/total``, 1-based: ``2/4`` is the second of four shards."""
    match = _SHARD_RE.fullmatch(text.strip())
    if match is None:
        raise ValueError("must be <index>/<total>, like 2/4 (1-based)")
    index, total = int(match.group(1)), int(match.group(2))
    if not 1 <= index <= total:
        raise OutOfRange(f"index must be between 1 and the total, like 1/{max(total, 1)}")
    return index, total
