"""JSON text exactly as ``JSON.stringify(value, null, 2)`` writes it.

Two writers share one number rule (:func:`~axl_action.schema.numbers.js_number`):

* Indented text (results files) comes from orjson (pydantic-core for what orjson refuses, see
  :func:`_to_json`), which escapes strings as ``JSON.stringify`` does and keeps key order;
  only its number spelling can differ from JavaScript's (``1.0``, ``-0.0``, ``1e-6``,
  ``1e16``). In indented output every number that ends a line ends a value (a raw newline
  never occurs inside a JSON string), so :func:`_respell_numbers` fixes exactly those tokens.
  A long list (a result's items) is serialised a block at a time (:func:`_blocked`), so the
  writer holds one block of text. Measured on the runner's 20,000-item result (31 MB): 80 ms
  to write in fresh processes (orjson about 22 ms, the respelling about 30), where the whole
  text at once took 223 ms; pydantic-core's text and byte replacements took 0.26 s in-process,
  and the Python walker below 0.62 s.
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
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

import orjson
import pydantic_core

from axl_action.schema.numbers import js_number

# Number tokens that end a line of indented output and that JavaScript spells differently.
# The serializers' shortest round-trip digits are JavaScript's (Ryu); only the notation
# differs: a ".0" on integral values, "-0.0", and an exponent outside [1e-5, 1e16) where
# JavaScript's is outside [1e-6, 1e21) and signed ("1e16", JavaScript "10000000000000000";
# "1e21", JavaScript "1e+21"). Each rule is one regex pass whose pattern starts with a literal,
# which the regex engine searches for at memchr-like speed; integral values, the common case,
# are fixed with no Python per match, and exponent forms, which are rare, are respelled
# with ``js_number``. The rarer a pattern's first byte, the faster its pass: "-0" at a line's
# end can only be the whole token (a string ends with a quote, and an exponent never has a
# leading zero), so that pass need not start at the space before it, the most common byte
# of indented text (8 ms instead of 17 over the runner's 20,000-item result).
_INTEGRAL_END = re.compile(rb"\.0(?=,?\n)")
_NEGATIVE_ZERO_END = re.compile(rb"-0(?=,?\n)")
# After its "e" one class, not an optional sign and then digits: every "e" of the text's keys
# and words is a candidate, and the optional group's branch made this pass twice as slow (16
# against 31 ms over the runner's 20,000-item result). A sign with no digit after it matches
# here but is no number: ``_respell_exponents`` respells only what ``_NUMBER`` matches in full.
_EXPONENT_END = re.compile(rb"e[-+0-9][0-9]*(?=,?\n)")
_NUMBER = re.compile(rb"-?\d+(?:\.\d+)?e[-+]?\d+")


def _respell_exponents(raw: bytes) -> bytes:
    """Respell every line-ending exponent-form number with ``js_number``."""
    parts: list[bytes] = []
    last = 0
    for match in _EXPONENT_END.finditer(raw):
        stop = match.end()
        start = raw.rfind(b" ", 0, match.start()) + 1
        if _NUMBER.fullmatch(raw, start, stop):
            parts.append(raw[last:start])
            parts.append(js_number(float(raw[start:stop])).encode("ascii"))
            last = stop
    if not parts:
        return raw
    parts.append(raw[last:])
    return b"".join(parts)


def _respell_numbers(raw: bytes) -> bytes:
    """JavaScript's spelling of every number in the serializer's indented output."""
    raw = _INTEGRAL_END.sub(b"", raw)
    raw = _NEGATIVE_ZERO_END.sub(b"0", raw)  # -0.0 is now "-0"; JavaScript prints 0
    return _respell_exponents(raw)


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


# Types orjson would spell its own way (dates as RFC 3339, dataclasses): it refuses them with
# these options, so they take pydantic-core's path as before. Run data never holds them (it is
# made JSON-safe as it is stored); a caller's own value might.
_ORJSON_REFUSE = orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS


def _to_json(value: Any, on_replaced: Callable[[list[str]], None] | None, option: int) -> tuple[bytes, Any]:
    """The JSON of ``value`` (NaN/Infinity as null) and the value it wrote; ``option``: orjson's
    ``OPT_INDENT_2`` / ``OPT_APPEND_NEWLINE``, which pydantic-core's path follows too.

    orjson writes it, three times as fast as pydantic-core (a results file of 20,000 items:
    27 ms against 87; a journal line: 1.1 µs against 3.1) with the same text for JSON data.
    What orjson refuses (a lone surrogate, an integer past 64 bits, a key that is not text,
    nesting past 255 levels, the types above) goes through pydantic-core: text with lone
    surrogates is written with U+FFFD instead, and ``on_replaced`` hears where."""
    try:
        return orjson.dumps(value, option=option | _ORJSON_REFUSE), value
    except orjson.JSONEncodeError:
        pass
    indent = 2 if option & orjson.OPT_INDENT_2 else None
    end = b"\n" if option & orjson.OPT_APPEND_NEWLINE else b""
    try:
        return pydantic_core.to_json(value, indent=indent, inf_nan_mode="null") + end, value
    except pydantic_core.PydanticSerializationError as err:
        if "surrogates not allowed" not in str(err):
            raise TypeError(str(err)) from None
    found: list[str] = []
    value = _lone_surrogates(value, "", found)
    if on_replaced is not None:
        on_replaced(found)
    return pydantic_core.to_json(value, indent=indent, inf_nan_mode="null") + end, value


# Text serialised at once is respelled in pieces of about this size, each ending a line: the
# regex passes run over text that stays in the CPU cache (the 20,000-item result's
# respelling: 78 ms in 256 KiB pieces, 100 ms over its 31 MB at once).
_PIECE = 1 << 18


def dumps_js_chunks(value: Any, on_replaced: Callable[[list[str]], None] | None = None) -> Iterator[bytes]:
    """:func:`dumps_js_bytes` in pieces, to write one after the other.

    A dict, or a list of dicts, holding a list of more than ``_BLOCKED_MIN`` values (a
    result's items) is serialised as it is taken: that list in blocks (:func:`_blocked`), the
    rest at once. Anything else is serialised before this returns (what cannot be raises
    here), and respelled as the pieces are taken.
    """
    long_lists = _long_lists(value)
    if long_lists:
        return _blocked(value, long_lists, on_replaced)
    raw, value = _to_json(value, on_replaced, orjson.OPT_INDENT_2)
    if raw[:1] not in (b"{", b"["):
        return iter((walk_js(value, indent=None).encode("utf-8"),))  # a scalar: no line to anchor on
    return _respelled(raw)


def _respelled(raw: bytes) -> Iterator[bytes]:
    start, size = 0, len(raw)
    while start < size:
        end = raw.find(b"\n", start + _PIECE)
        end = size if end == -1 else end + 1
        yield _respell_numbers(raw[start:end])
        start = end


# A list longer than this, in a dict or in each dict of a list, is written in blocks of about
# ``_BLOCK_BYTES`` of text. Serialising a 20,000-item result at once made orjson grow one 31 MB
# buffer in fresh memory, then respelled and wrote it; in blocks the process holds about one
# block of text, whose memory is reused from block to block: the write went from 223 to 80 ms
# (medians of 12 fresh processes, each after its run) and the writer's peak RSS from +29 MiB
# to +0. Blocks of 150 or more of those items (230 KB) were as slow as the whole text.
_BLOCKED_MIN = 256
_BLOCK_BYTES = 1 << 16
# Values are sized by their text: the first block takes this many, and each next one as many
# as the last block's bytes per value say fit in ``_BLOCK_BYTES`` (items range from a few
# hundred bytes to megabytes of output).
_FIRST_BLOCK = 16
_MAX_BLOCK = 4096


def _long_lists(value: Any) -> list[tuple[int, str, str, list[Any]]]:
    """(holder, JSON path, key, list) of every list to write in blocks, in text order: a value
    of ``value`` (a dict; holder -1) or of the dict at index ``holder`` of ``value`` (a list)."""
    if type(value) is dict:
        holders: Iterable[tuple[int, Any]] = ((-1, value),)
    elif type(value) is list:
        holders = enumerate(value)
    else:
        return []
    found = []
    for index, holder in holders:
        if type(holder) is not dict:
            continue
        for key, v in holder.items():
            if type(v) is list and len(v) > _BLOCKED_MIN and type(key) is str:
                found.append((index, key if index < 0 else f"[{index}].{key}", key, v))
    return found


def _blocked(
    value: Any,
    long_lists: list[tuple[int, str, str, list[Any]]],
    on_replaced: Callable[[list[str]], None] | None,
) -> Iterator[bytes]:
    """The indented text of ``value`` with each of ``long_lists`` written in blocks.

    The rest (the shell) is serialised once with each long list replaced by a marker string,
    and written up to each marker's position. A list's values go out a block at a time, each
    block nested in as many one-value lists as bring its values to the list's indentation, so
    orjson writes them exactly as they stand in the whole text; the brackets around them are
    cut off. A raw newline never occurs inside a JSON string, so the marker's line gives that
    indentation, and the respelling of each block (its line-ending numbers) is exact.
    """
    nonce = uuid.uuid4().hex
    shell: Any = value if type(value) is dict else list(value)
    copies: dict[int, dict[str, Any]] = {}
    for n, (index, _, key, _) in enumerate(long_lists):
        holder = copies.get(index)
        if holder is None:
            holder = copies[index] = dict(value if index < 0 else value[index])
            if index < 0:
                shell = holder
            else:
                shell[index] = holder
        holder[key] = f"axl-block:{nonce}:{n}"
    # Every path with a lone surrogate, reported once when the text is complete, as the whole
    # value's serialisation reports them (the shell's first, then each list's in order).
    found: list[str] = []
    collect = found.extend if on_replaced is not None else None
    raw, _ = _to_json(shell, collect, orjson.OPT_INDENT_2)
    done = 0
    for n, (_, path, _, values) in enumerate(long_lists):
        marker = f'"axl-block:{nonce}:{n}"'.encode()
        at = raw.index(marker, done)
        line = raw.rfind(b"\n", 0, at) + 1
        indent = len(raw[line:at]) - len(raw[line:at].lstrip(b" "))
        yield from _respelled(raw[done:at])
        yield b"[\n"
        yield from _blocks(values, path, indent // 2 + 1, collect)
        yield b"\n" + b" " * indent + b"]"
        done = at + len(marker)
    yield from _respelled(raw[done:])
    if found and on_replaced is not None:
        on_replaced(found)


def _blocks(
    values: list[Any], path: str, levels: int, on_replaced: Callable[[list[str]], None] | None
) -> Iterator[bytes]:
    """The values of a list whose values stand at ``2 * levels`` spaces, in respelled blocks
    joined by ``,\n`` (no line end after the last)."""
    opening = b"".join(b" " * (2 * j) + b"[\n" for j in range(levels))
    closing = b"".join(b"\n" + b" " * (2 * j) + b"]" for j in reversed(range(levels)))
    total, start, count = len(values), 0, _FIRST_BLOCK
    while start < total:
        block = values[start : start + count]
        wrapped: Any = block
        for _ in range(levels - 1):
            wrapped = [wrapped]
        text, _ = _to_json(wrapped, _shifted(on_replaced, path, start, levels), orjson.OPT_INDENT_2)
        body = text[len(opening) : len(text) - len(closing)]
        start += len(block)
        if start < total:
            yield _respell_numbers(body + b",\n")
        else:  # the line end only lets the respelling see the last value's end
            yield _respell_numbers(body + b"\n")[:-1]
        count = max(1, min(_MAX_BLOCK, count * _BLOCK_BYTES // max(1, len(body))))


def _shifted(
    on_replaced: Callable[[list[str]], None] | None, path: str, offset: int, levels: int
) -> Callable[[list[str]], None] | None:
    """``on_replaced`` for a block: its paths (``[0]...[0][j]...``, in the nesting) as paths
    of the whole value (``items[offset + j]...``)."""
    if on_replaced is None:
        return None
    report = on_replaced
    skip = len("[0]") * (levels - 1)

    def shifted(paths: list[str]) -> None:
        out = []
        for p in paths:
            rest = p[skip:]
            close = rest.index("]")
            out.append(f"{path}[{offset + int(rest[1:close])}]{rest[close + 1 :]}")
        report(out)

    return shifted


def dumps_js_bytes(value: Any, on_replaced: Callable[[list[str]], None] | None = None) -> bytes:
    """UTF-8 ``JSON.stringify(value, null, 2)``; lone surrogates become U+FFFD (see module doc)."""
    return b"".join(dumps_js_chunks(value, on_replaced))


def dumps_line_bytes(value: Any, on_replaced: Callable[[list[str]], None] | None = None) -> bytes:
    """One line of a JSONL file (the run journal): compact UTF-8 JSON of ``value`` and ``\n``.

    The same rules as :func:`dumps_js_bytes` except the number spelling: NaN/Infinity are
    written as ``null`` and lone surrogates become U+FFFD (reported to ``on_replaced``), but
    numbers keep the serializer's spelling (``1.0``): the line is read back by our own reader,
    which gets the identical Python value, and the results file written from it respells them.
    The journal writes every item of a run as it settles: one orjson call per line, newline
    included (``benchmarks/journal_cost.py`` measures the journal).
    """
    return _to_json(value, on_replaced, orjson.OPT_APPEND_NEWLINE)[0]


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


def js_compact_json(value: Any) -> str:
    """``JSON.stringify(value)``: compact separators, non-ASCII kept, JS number format."""
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
