"""The one place that turns untrusted text into safe Markdown, HTML and inline JSON.

Untrusted text is anything a model, a dataset, a scorer or a PR author controls: outputs,
inputs, judge reasoning, scorer names, metadata. In the PR comment it must not

* break the table it sits in (pipes, newlines),
* become markup (links, images, emphasis, raw HTML, code spans),
* ping people or cross-link issues (``@user``, ``#123``, ``GH-123``, autolinked URLs),
* forge the hidden marker the sticky-comment code searches for.

GitHub autolinks mentions and references *after* Markdown escapes are resolved, so those are
broken with an invisible joiner instead of a backslash.
"""

from __future__ import annotations

import json
import re
from typing import Any

import orjson

from axl_action.formatting import count

#: Joins characters without a visible glyph; GitHub no longer sees ``@name`` or ``#12``.
ZWJ = "\u200d"
#: Breaks ``scheme://`` and ``www.`` so GitHub's autolinker does not fire.
ZWSP = "\u200b"


# ASCII punctuation CommonMark could read as markup; each gets a backslash.
_MD_SPECIAL = frozenset("\\`*_[]!#|~")
_HTML_ENTITIES = {"<": "&lt;", ">": "&gt;", "&": "&amp;"}
_MENTION = re.compile(r"@(?=[A-Za-z0-9_-])")
_ISSUE_REF = re.compile(r"#(?=\d)")
_GH_REF = re.compile(r"\b(GH)-(?=\d)", re.IGNORECASE)
_SCHEME = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*):(?=//)")
_WWW = re.compile(r"(?i)\bwww\.")
_COMMENT_OPEN = re.compile(r"<!--")
_WS = re.compile(r"\s+")
_BLOCK_START = re.compile(r"^(\d{0,9})([-+=.)])(?=\s|$)")


def neutralize_references(text: str) -> str:
    """Break @mentions, #123 / GH-123 references, autolinks and forged comment markers."""
    text = _COMMENT_OPEN.sub("<!" + ZWJ + "--", text)
    text = _MENTION.sub("@" + ZWJ, text)
    text = _ISSUE_REF.sub("#" + ZWJ, text)
    text = _GH_REF.sub(lambda m: m.group(1) + ZWJ + "-", text)
    text = _SCHEME.sub(lambda m: m.group(1) + ":" + ZWSP, text)
    return _WWW.sub(lambda m: m.group(0)[:-1] + ZWSP + ".", text)


def _one_line(value: object, limit: int | None) -> str:
    """``value`` as text with every whitespace run (newlines too) one space, cut to ``limit``."""
    text = _WS.sub(" ", to_text(value)).strip()
    return truncate(text, limit) if limit is not None else text


def md_text(value: object, limit: int | None = None) -> str:
    """Untrusted text as one line of literal Markdown (paragraphs, list items, headings).

    Whitespace runs (newlines included) collapse to one space, so the text cannot start a
    new block; every Markdown metacharacter is escaped and HTML-significant characters
    become entities.
    """
    text = _one_line(value, limit)
    text = neutralize_references(text)
    out: list[str] = []
    for ch in text:
        if ch in _HTML_ENTITIES:
            out.append(_HTML_ENTITIES[ch])
        elif ch in _MD_SPECIAL:
            out.append("\\" + ch)
        else:
            out.append(ch)
    # A list marker or numbered-list prefix only matters where the text could open a line.
    return _BLOCK_START.sub(lambda m: m.group(1) + "\\" + m.group(2), "".join(out), count=1)


def html_inline(value: object, limit: int | None = None) -> str:
    """Untrusted text inside an HTML block of the comment (``<summary>``): one line.

    GitHub does not apply Markdown inside an HTML block, so backslash escapes would show;
    only entities are used, plus the mention/reference/marker neutralisation.
    """
    text = _one_line(value, limit)
    text = neutralize_references(text)
    return "".join(_HTML_ENTITIES.get(ch, ch) for ch in text)


def md_cell(value: object, limit: int | None = None) -> str:
    """Untrusted text for a GFM table cell: one line, pipes escaped, never empty."""
    text = md_text(value, limit=limit)
    return text if text else " "


def md_code_block(value: object, limit: int | None = None, *, lang: str = "text") -> str:
    """Untrusted text as a fenced code block whose fence no line of the text can close."""
    text = to_text(value)
    if limit is not None:
        text = truncate(text, limit)
    # Inside code nothing renders, but the raw body is still searched for the marker.
    text = _COMMENT_OPEN.sub("<!" + ZWJ + "--", text).replace("\r\n", "\n").replace("\r", "\n")
    longest = max((len(m) for m in re.findall(r"`+|~+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{lang}\n{text.rstrip()}\n{fence}"


def md_code_span(value: object, limit: int | None = None) -> str:
    """Untrusted text as an inline code span (one line); safe in table cells too."""
    text = _one_line(value, limit)
    text = _COMMENT_OPEN.sub("<!" + ZWJ + "--", text).replace("|", "\\|")
    if not text:
        return "` `"
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    ticks = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{ticks}{pad}{text}{pad}{ticks}"


def to_text(value: object, *, indent: int | None = None) -> str:
    """Any JSON value as display text: strings as-is, everything else as JSON (compact, or
    pretty-printed with ``indent``)."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    try:
        if indent is None:
            return _COMPACT_TEXT.encode(value)
        return json.dumps(value, ensure_ascii=False, indent=indent, default=str)
    except (TypeError, ValueError):
        return str(value)


# json.dumps builds an encoder per call when given options; the compact one is made once.
_COMPACT_TEXT = json.JSONEncoder(ensure_ascii=False, default=str)


def truncate(text: str, limit: int) -> str:
    """Cut to at most ``limit`` characters, marking the cut with an ellipsis."""
    if limit <= 0:
        return ""
    if len(text) <= limit:
        return text
    return text[: max(0, limit - 1)].rstrip() + "…"


def cut_text(text: str, limit: int) -> str:
    """At most ``limit`` characters of ``text`` and, when cut, a visible mark on its own line:
    ``… 12,345 more characters``. ``limit`` 0 keeps everything."""
    if limit <= 0 or len(text) <= limit:
        return text
    return text[:limit] + f"\n… {count(len(text) - limit)} more characters"


_JSON_SCRIPT_ESCAPES = {
    "<": "\\u003c",
    ">": "\\u003e",
    "&": "\\u0026",
    "\u2028": "\\u2028",
    "\u2029": "\\u2029",
}
_JSON_SCRIPT_RE = re.compile("[<>&\u2028\u2029]")


def _finite(value: Any) -> Any:
    if isinstance(value, float) and (value != value or value in (float("inf"), float("-inf"))):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value


def dumps_finite(data: Any) -> str:
    """Compact JSON; NaN and infinities (which JSON cannot carry) become null."""
    try:
        return json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False, default=str)
    except ValueError:
        return json.dumps(
            _finite(data), ensure_ascii=False, separators=(",", ":"), allow_nan=False, default=str
        )


def dumps_finite_bytes(data: Any) -> bytes:
    """:func:`dumps_finite` as UTF-8 bytes, by orjson (a tenth of the time; the same values).

    orjson writes NaN and infinities as null itself; what it refuses (integers beyond 64 bits,
    lone surrogates) goes through :func:`dumps_finite`.
    """
    try:
        return orjson.dumps(data, default=str, option=orjson.OPT_NON_STR_KEYS)
    except TypeError:  # orjson.JSONEncodeError is one
        return dumps_finite(data).encode("utf-8")


def json_for_script(data: Any) -> str:
    """JSON safe to place inside ``<script type="application/json">`` (Lighthouse pattern).

    These characters can only occur inside JSON strings, where ``\\uXXXX`` is an equivalent
    spelling, so ``</script>`` and ``<!--`` can never appear in the element's text.
    """
    return script_safe(dumps_finite(data))


def script_safe(raw: str) -> str:
    """Rewrite ``<``, ``>``, ``&``, U+2028 and U+2029 in JSON text as ``\\uXXXX`` escapes."""
    return _JSON_SCRIPT_RE.sub(lambda m: _JSON_SCRIPT_ESCAPES[m.group(0)], raw)
