"""JSON text exactly as ``JSON.stringify(value, null, 2)`` writes it.

Two writers share one number rule (:func:`~axl_action.schema.numbers.js_number`):

* Indented text (results files) comes from pydantic-core's Rust serializer, which already
  escapes strings as ``JSON.stringify`` does and keeps key order; only its number spelling can
  differ from JavaScript's (``1.0``, ``-0.0``, ``1e-6``, ``1e+16``). In indented output every
  number that ends a line ends a value (a raw newline never occurs inside a JSON string), so
  :func:`_respell_numbers` fixes exactly those tokens. Measured on the runner's 20,000-item
  result (17 MB): 0.2 s in all, against 0.62 s for the Python walker below.
* Compact text (keys, fingerprints, prompts: small values) comes from the Python walker, where
  the end-of-line argument does not hold.

Both write NaN/Infinity as ``null`` and keep non-ASCII as is. Text with a lone surrogate
(``"\\ud800"``, from a JSONL escape or a model's output) cannot be UTF-8; :func:`dumps_js`
replaces each with U+FFFD and reports where (``on_replaced``) instead of losing the file.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import orjson
import pydantic_core

from axl_action.schema.numbers import js_number

# Number tokens that end a line of indented output and that JavaScript spells differently.
# Ryu (pydantic-core) ends a number with ".0" only when it is integral, and uses an exponent
# outside [1e-5, 1e16): integral ones are fixed with plain byte replacements (fast, and exact
# because a line never ends inside a string); exponent ones, which are rare, are found from
# their "e+" / "e-" and respelled with ``js_number``.
_NUMBER = re.compile(rb"-?\d+(?:\.\d+)?e[-+]\d+")


def _respell_exponents(raw: bytes) -> bytes:
    """Respell every line-ending exponent-form number with ``js_number``."""
    spans: list[tuple[int, int]] = []
    for marker in (b"e-", b"e+"):
        i = raw.find(marker)
        while i != -1:
            end = raw.find(b"\n", i)
            end = len(raw) if end == -1 else end
            stop = end - 1 if raw[end - 1 : end] == b"," else end
            start = raw.rfind(b" ", 0, i) + 1
            if raw[i + 2 : stop].isdigit() and _NUMBER.fullmatch(raw, start, stop):
                spans.append((start, stop))
            i = raw.find(marker, i + 2)
    if not spans:
        return raw
    spans.sort()
    parts: list[bytes] = []
    last = 0
    for start, stop in spans:
        parts.append(raw[last:start])
        parts.append(js_number(float(raw[start:stop])).encode("ascii"))
        last = stop
    parts.append(raw[last:])
    return b"".join(parts)


def _respell_numbers(raw: bytes) -> bytes:
    """JavaScript's spelling of every number in pydantic-core's indented output."""
    raw = raw.replace(b".0,\n", b",\n").replace(b".0\n", b"\n")
    if b" -0" in raw:  # -0.0 is now "-0"; JavaScript prints 0
        raw = raw.replace(b" -0,\n", b" 0,\n").replace(b" -0\n", b" 0\n")
    if b"e-" in raw or b"e+" in raw:
        raw = _respell_exponents(raw)
    return raw


def _lone_surrogates(value: Any, path: str, found: list[str]) -> Any:
    """``value`` with every lone surrogate replaced by U+FFFD; ``found`` gets their paths."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            found.append(path or "(top level)")
            # Through UTF-16: paired surrogates join into their character, lone ones become U+FFFD.
            return value.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
        return value
    if isinstance(value, Mapping):
        out: dict[Any, Any] = {}
        for k, v in value.items():
            key = _lone_surrogates(k, path, found) if isinstance(k, str) else k
            out[key] = _lone_surrogates(v, f"{path}.{key}" if path else str(key), found)
        return out
    if isinstance(value, list | tuple):
        return [_lone_surrogates(v, f"{path}[{i}]", found) for i, v in enumerate(value)]
    return value


def _to_json(
    value: Any, on_replaced: Callable[[list[str]], None] | None, indent: int | None
) -> tuple[bytes, Any]:
    """pydantic-core's JSON of ``value`` (NaN/Infinity as null), and the value it wrote: text
    with lone surrogates is written with U+FFFD instead, and ``on_replaced`` hears where."""
    try:
        return pydantic_core.to_json(value, indent=indent, inf_nan_mode="null"), value
    except pydantic_core.PydanticSerializationError as err:
        if "surrogates not allowed" not in str(err):
            raise TypeError(str(err)) from None
    found: list[str] = []
    value = _lone_surrogates(value, "", found)
    if on_replaced is not None:
        on_replaced(found)
    return pydantic_core.to_json(value, indent=indent, inf_nan_mode="null"), value


def dumps_js_bytes(value: Any, on_replaced: Callable[[list[str]], None] | None = None) -> bytes:
    """UTF-8 ``JSON.stringify(value, null, 2)``; lone surrogates become U+FFFD (see module doc)."""
    raw, value = _to_json(value, on_replaced, indent=2)
    if raw[:1] not in (b"{", b"["):
        return walk_js(value, indent=None).encode("utf-8")  # a scalar: no line to anchor on
    return _respell_numbers(raw)


def dumps_line_bytes(value: Any, on_replaced: Callable[[list[str]], None] | None = None) -> bytes:
    """One line of a JSONL file (the run journal): compact UTF-8 JSON of ``value`` and ``\n``.

    The same rules as :func:`dumps_js_bytes` except the number spelling: NaN/Infinity are
    written as ``null`` and lone surrogates become U+FFFD (reported to ``on_replaced``), but
    numbers keep the serializer's spelling (``1.0``): the line is read back by our own reader,
    which gets the identical Python value, and the results file written from it respells them.

    orjson writes it: the journal writes every item of a run as it settles, and orjson
    serialises one (about 900 bytes, 4 scorers) in 1.1 µs where pydantic-core's ``to_json``
    takes 3.1 µs, and 6 µs when asked to write NaN as null (measured over the 20,000 items of
    ``benchmarks/evals/big_eval.py``; ``benchmarks/journal_cost.py`` measures the journal). What
    orjson refuses (a lone surrogate, an integer past 64 bits, a key that is not text) goes
    through pydantic-core as before.
    """
    try:
        return orjson.dumps(value, option=orjson.OPT_APPEND_NEWLINE)
    except orjson.JSONEncodeError:
        return _to_json(value, on_replaced, indent=None)[0] + b"\n"


# The C string encoder (ensure_ascii=False flavour): JSON.stringify escapes the same set.
_encode_str = json.encoder.encode_basestring


def _number(x: float) -> str:
    if x != x or x in (math.inf, -math.inf):
        return "null"
    return js_number(x)


def dumps_js(value: Any, indent: int | None = 2) -> str:
    """Serialise ``value`` (JSON-compatible Python data) the way JS ``JSON.stringify`` does."""
    if indent == 2:
        return dumps_js_bytes(value).decode("utf-8")
    return walk_js(value, indent)


def walk_js(value: Any, indent: int | None = 2) -> str:
    """The Python writer: any indent, for small values (and the reference in tests)."""
    parts: list[str] = []
    append = parts.append

    def container(v: Mapping[Any, Any] | list[Any] | tuple[Any, ...], level: int) -> None:
        # One layout rule for objects and arrays: compact is bare "," and ":"; indented puts each
        # member on its own line one level deeper and the closing bracket back at this level.
        keyed = isinstance(v, Mapping)
        opening, closing = "{}" if keyed else "[]"
        if not v:
            append(opening + closing)
            return
        if indent is None:
            lead, colon, end, inner = "", ":", "", level
        else:
            lead, colon = "\n" + " " * (indent * (level + 1)), ": "
            end, inner = "\n" + " " * (indent * level), level + 1
        entries: Iterable[tuple[Any, Any]] = v.items() if isinstance(v, Mapping) else enumerate(v)
        append(opening)
        first = True
        for key, item in entries:
            append(lead if first else "," + lead)
            first = False
            if keyed:
                append(_encode_str(str(key)))
                append(colon)
            write(item, inner)
        append(end + closing)

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
        elif isinstance(v, Mapping | list | tuple):
            container(v, level)
        else:
            raise TypeError(f"value of type {type(v).__name__} is not JSON serialisable")

    write(value, 0)
    return "".join(parts)
