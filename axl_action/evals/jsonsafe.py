"""Turn whatever a workflow or scorer returned into plain JSON data before it is stored.

Result files are JSON, so an output that is a ``date``, a ``set``, a pydantic model or a
dataclass must not crash the write at the very end of a long run. Conversions: pydantic
models and dataclasses -> their fields; dates -> ISO text; sets -> sorted lists; tuples ->
lists; non-string dict keys -> text; NaN and infinities -> ``null`` (what JSON.stringify
writes); bytes -> UTF-8 text (replacement characters for invalid bytes); anything else ->
``str(value)`` (``repr``, or ``"[unserializable value]"``, when that raises).
"""

from __future__ import annotations

import dataclasses
import datetime
import decimal
import enum
import math
from collections.abc import Mapping
from typing import Any

_SCALARS = (str, int, bool, type(None))
_FLAT = frozenset(_SCALARS)
# A value nested deeper than this is cut with "[too deeply nested]" (a circular input becomes
# such a cut). The JSON reader (pydantic-core) refuses files nested past 200 levels, and a
# value sits up to ~10 levels down in a results file, so this leaves room to read it back.
_MAX_DEPTH = 128


def json_safe(value: Any, _depth: int = 0) -> Any:
    """A JSON-compatible copy of ``value`` (the value itself when it already is one; a flat
    mapping of text to text, integers, booleans and nulls is returned as it is)."""
    kind = type(value)
    if kind is str or kind is int or kind is bool or value is None:
        return value
    if kind is float:
        return value if math.isfinite(value) else None
    if _depth > _MAX_DEPTH:
        return "[too deeply nested]"
    depth = _depth + 1
    if kind is dict:  # the common case, without the slower ABC checks below
        for k, v in value.items():
            if type(k) is not str or type(v) not in _FLAT:
                break
        else:  # text keys and text/int/bool/null values: already JSON, kept without a copy
            return value
        return {(k if type(k) is str else str(k)): json_safe(v, depth) for k, v in value.items()}
    if kind is list:
        return [json_safe(v, depth) for v in value]
    return _convert(value, depth)


def _convert(value: Any, depth: int) -> Any:
    """``json_safe`` of a value that is not exactly a str, int, bool, None, float, dict or list
    (a subclass of one of those, a container, a date, a model, ...); ``depth`` is its own."""
    if isinstance(value, _SCALARS):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, Mapping):
        return {(k if isinstance(k, str) else str(k)): json_safe(v, depth) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(v, depth) for v in value]
    if isinstance(value, set | frozenset):
        return _sorted([json_safe(v, depth) for v in value])
    return _convert_object(value, depth)


def _sorted(items: list[Any]) -> list[Any]:
    """A set's converted members in order (by ``repr`` when they do not compare)."""
    try:
        return sorted(items)
    except TypeError:
        return sorted(items, key=repr)


def _convert_object(value: Any, depth: int) -> Any:
    """An enum, a date or time, a decimal, bytes, a pydantic model, a dataclass, or text."""
    if isinstance(value, enum.Enum):
        return json_safe(value.value, depth)
    if isinstance(value, datetime.date | datetime.time):
        return value.isoformat()
    if isinstance(value, decimal.Decimal):
        return json_safe(float(value), depth)
    if isinstance(value, bytes | bytearray):
        return bytes(value).decode("utf-8", errors="replace")
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        try:
            return json_safe(dump(mode="json"), depth)
        except Exception:
            return _text(value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return json_safe(dataclasses.asdict(value), depth)
    return _text(value)


UNSERIALIZABLE = "[unserializable value]"
"""Stored for a value with no JSON form whose ``str()`` and ``repr()`` both raise."""


def _text(value: Any) -> str:
    """``str(value)``; a value whose ``__str__`` raises must not lose the run at its end."""
    try:
        return str(value)
    except Exception:
        pass
    try:
        return repr(value)
    except Exception:
        return UNSERIALIZABLE
