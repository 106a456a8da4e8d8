"""Secret and content redaction for anything that leaves a provider call (errors, captures).

Secret redaction is unconditional and is the project's one rule (``axl_action.redaction``):
it runs on every error message and every capture record, bodies and headers. Content
redaction (prompt and completion text) is an extra mode for runs whose data is itself
sensitive.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from axl_action.redaction import REDACTED, SECRETS, register_secret

SECRET_HEADERS = frozenset(
    {
        "authorization",
        "proxy-authorization",
        "x-api-key",
        "api-key",
        "x-goog-api-key",
        "cookie",
        "set-cookie",
        "openai-organization",
        "openai-project",
    }
)
"""Header names whose values are always replaced (compared case-insensitively)."""

_CONTENT_KEYS = frozenset(
    {"content", "text", "system", "thinking", "refusal", "reasoning_content", "partial_json"}
)
"""JSON keys whose string values are prompt/completion text in the three wire formats."""

_PLACEHOLDER = re.compile(r"\[REDACTED(?::\d+ chars)?\]")


def redact_secrets(text: str, extra: Iterable[str] = ()) -> str:
    """``text`` redacted by the one rule (``axl_action.redaction``); ``extra`` values are
    registered first, so they stay hidden everywhere else too."""
    if extra:
        SECRETS.add_all(extra)
    return SECRETS.redact(text)


def redact_headers(headers: Mapping[str, str]) -> dict[str, str]:
    """Copy of ``headers`` with secret-bearing values replaced."""
    return {
        name: (REDACTED if name.lower() in SECRET_HEADERS else redact_secrets(str(value)))
        for name, value in headers.items()
    }


def redact_value(value: Any, *, content: bool = False, extra: Iterable[str] = ()) -> Any:
    """Deep copy of a JSON-like value with secrets (and, with ``content``, texts) replaced.

    Content redaction replaces every string under a text-bearing key (``content``, ``text``,
    ``system``...) with a placeholder that keeps only the length, so a capture still shows
    the request's shape and size.
    """
    if extra:
        SECRETS.add_all(extra)
    return _walk(value, content, parent_is_content=False)


def _walk(value: Any, content: bool, *, parent_is_content: bool) -> Any:
    if isinstance(value, str):
        if content and parent_is_content:
            # Idempotent, so a record redacted by the gateway and again by the sink keeps the
            # original length.
            return value if _PLACEHOLDER.fullmatch(value) else f"[REDACTED:{len(value)} chars]"
        return SECRETS.redact(value)
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        for key, item in value.items():
            name = SECRETS.redact(str(key))
            if name.lower() in SECRET_HEADERS and isinstance(item, str):
                out[name] = REDACTED
                continue
            out[name] = _walk(item, content, parent_is_content=content and name in _CONTENT_KEYS)
        return out
    if isinstance(value, list | tuple):
        # A list under a content key (content parts) keeps the content flag for its strings.
        return [_walk(item, content, parent_is_content=parent_is_content) for item in value]
    return value


__all__ = [
    "REDACTED",
    "SECRET_HEADERS",
    "redact_headers",
    "redact_secrets",
    "redact_value",
    "register_secret",
]
