"""Secret and content redaction for anything that leaves a provider call (errors, captures).

Secret redaction is unconditional: it runs on every error message and every capture record.
Content redaction (prompt and completion text) is an extra mode for runs whose data is itself
sensitive.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable, Mapping
from typing import Any

REDACTED = "[REDACTED]"

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

# Key shapes of the big providers plus bearer tokens. Deliberately broad: a false positive
# costs a few characters of a debugging record, a false negative leaks a credential.
_SECRET_PATTERNS = (
    re.compile(r"sk-[A-Za-z0-9_\-]{8,}"),  # OpenAI (sk-, sk-proj-), Anthropic (sk-ant-)
    re.compile(r"AIza[0-9A-Za-z_\-]{20,}"),  # Google API keys
    re.compile(r"(?i)\bbearer\s+[A-Za-z0-9._~+/\-]+=*"),
    re.compile(r"\bgh[pousr]_[A-Za-z0-9]{20,}"),  # GitHub tokens, in case a prompt echoes one
    re.compile(r"(?i)([?&](?:key|api_key|apikey|access_token)=)[^&#\s\"']+"),
)

_CONTENT_KEYS = frozenset(
    {"content", "text", "system", "thinking", "refusal", "reasoning_content", "partial_json"}
)
"""JSON keys whose string values are prompt/completion text in the three wire formats."""

_PLACEHOLDER = re.compile(r"\[REDACTED(?::\d+ chars)?\]")

_known_secrets: set[str] = set()
_known_lock = threading.Lock()


def register_secret(value: str | None) -> None:
    """Remember an exact secret value (e.g. an API key read from the environment).

    Every later redaction replaces it wherever it appears, even if it matches no key pattern
    (self-hosted gateways use arbitrary tokens).
    """
    if value and len(value) >= 6:
        with _known_lock:
            _known_secrets.add(value)


def redact_secrets(text: str, extra: Iterable[str] = ()) -> str:
    """Replace API keys, bearer tokens and registered secrets in ``text``."""
    with _known_lock:
        known = sorted(_known_secrets, key=len, reverse=True)
    for secret in (*extra, *known):
        if secret and len(secret) >= 6 and secret in text:
            text = text.replace(secret, REDACTED)
    for pattern in _SECRET_PATTERNS:
        if pattern.groups:
            text = pattern.sub(lambda m: m.group(1) + REDACTED, text)
        else:
            text = pattern.sub(REDACTED, text)
    return text


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
    return _walk(value, content, tuple(extra), parent_is_content=False)


def _walk(value: Any, content: bool, extra: tuple[str, ...], *, parent_is_content: bool) -> Any:
    if isinstance(value, str):
        if content and parent_is_content:
            # Idempotent, so a record redacted by the gateway and again by the sink keeps the
            # original length.
            return value if _PLACEHOLDER.fullmatch(value) else f"[REDACTED:{len(value)} chars]"
        return redact_secrets(value, extra)
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        for key, item in value.items():
            name = str(key)
            if name.lower() in SECRET_HEADERS and isinstance(item, str):
                out[name] = REDACTED
                continue
            out[name] = _walk(item, content, extra, parent_is_content=content and name in _CONTENT_KEYS)
        return out
    if isinstance(value, list | tuple):
        # A list under a content key (content parts) keeps the content flag for its strings.
        return [_walk(item, content, extra, parent_is_content=parent_is_content) for item in value]
    return value
