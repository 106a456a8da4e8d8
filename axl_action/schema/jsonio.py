"""JSON text exactly as ``JSON.stringify(value, null, 2)`` writes it.

Python's ``json`` module cannot be told how to format floats (``1.0``, ``5e-05``), so this is
a small dedicated writer: integral doubles print as integers, other numbers follow JS
``Number#toString``, NaN/Infinity become ``null``, non-ASCII stays as is.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from axl_action.schema.numbers import js_number

# The C string encoder (ensure_ascii=False flavour): JSON.stringify escapes the same set.
_encode_str = json.encoder.encode_basestring


def _number(x: float) -> str:
    if x != x or x in (math.inf, -math.inf):
        return "null"
    return js_number(x)


def dumps_js(value: Any, indent: int | None = 2) -> str:
    """Serialise ``value`` (JSON-compatible Python data) the way JS ``JSON.stringify`` does."""
    parts: list[str] = []
    append = parts.append

    def write(v: Any, level: int) -> None:
        if v is None:
            append("null")
        elif v is True:
            append("true")
        elif v is False:
            append("false")
        elif isinstance(v, str):
            append(_encode_str(v))
        elif isinstance(v, int):
            append(str(v))
        elif isinstance(v, float):
            append(_number(v))
        elif isinstance(v, Mapping):
            if not v:
                append("{}")
                return
            if indent is None:
                append("{")
                first = True
                for k, item in v.items():
                    if not first:
                        append(",")
                    first = False
                    append(_encode_str(str(k)))
                    append(":")
                    write(item, level)
                append("}")
                return
            inner = "\n" + " " * (indent * (level + 1))
            append("{")
            first = True
            for k, item in v.items():
                append(inner if first else "," + inner)
                first = False
                append(_encode_str(str(k)))
                append(": ")
                write(item, level + 1)
            append("\n" + " " * (indent * level) + "}")
        elif isinstance(v, list | tuple):
            if not v:
                append("[]")
                return
            if indent is None:
                append("[")
                for i, item in enumerate(v):
                    if i:
                        append(",")
                    write(item, level)
                append("]")
                return
            inner = "\n" + " " * (indent * (level + 1))
            append("[")
            for i, item in enumerate(v):
                append(inner if i == 0 else "," + inner)
                write(item, level + 1)
            append("\n" + " " * (indent * level) + "]")
        else:
            raise TypeError(f"value of type {type(v).__name__} is not JSON serialisable")

    write(value, 0)
    return "".join(parts)
