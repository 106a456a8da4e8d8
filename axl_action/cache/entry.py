"""What the cache keeps for one reply, and the one rule for what may be kept.

A reply enters the cache only as a :class:`SettledReply`, and only :func:`settle_reply` makes
one. It refuses (raises :class:`NotCacheable`):

* ``error``: a status outside 2xx;
* ``cut_off``: a 2xx whose body did not arrive whole (the transport's ``WireTruncated``);
* ``refused``: a call refused before or by the model: an admission refusal never produces a
  reply at all, and a 2xx whose finish reason is a refusal (:data:`REFUSAL_FINISH_REASONS`)
  is a moderation decision that may not repeat, not an answer;
* ``no_usage``: no token usage, so nothing to certify the replayed call's cost with.

A reply cut off by ``max_tokens`` (finish reason ``length``) *is* cacheable: ``max_tokens`` is
part of the key, and the live call would be cut off the same way.

The stored :class:`CacheEntry` adds the key, the redacted request record and the time it was
made. Everything text-like in it (body, headers, request) passes through the one redaction
rule before it is built, so an entry on disk never holds a registered secret.

On disk an entry is one file: a header line ``AXLC1 <sha256 of the rest>`` and the entry as
JSON. A reader verifies the digest and that the entry's own key is the key asked for; a file
that fails either check is damaged (a miss, never a wrong answer).
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, Literal

import orjson
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from axl_action.cache.errors import NotCacheable
from axl_action.cache.key import is_cache_key
from axl_action.redaction import redact, redact_deep
from axl_action.schema.numbers import usable_number

ENTRY_FORMAT = 1
"""Version of :class:`CacheEntry`'s layout (its ``format`` field)."""

FILE_MAGIC = b"AXLC1 "
"""First bytes of an entry file; the SHA-256 of the payload follows, then a newline."""

KEPT_RESPONSE_HEADERS = frozenset({"content-type", "x-request-id", "request-id", "x-goog-request-id"})
"""Response headers an entry keeps: what a replay needs (how to read the body, the original
request id for support tickets). Rate-limit and tracing headers describe the original moment,
not the reply."""

REFUSAL_FINISH_REASONS = frozenset(
    {
        "content_filter",  # OpenAI Chat Completions
        "refusal",  # Anthropic Messages stop_reason
        "SAFETY",  # Gemini finishReason values that withhold the answer
        "RECITATION",
        "BLOCKLIST",
        "PROHIBITED_CONTENT",
        "SPII",
    }
)
"""Finish reasons that mean the provider withheld the answer: such a 2xx is never cached."""

CostProvenance = Literal["provider_reported", "adapter_reported", "price_table_estimate", "caller_reported"]
"""How a certified cost was established (the gateway's settle rules, docs/cost.md)."""


class CertifiedCost(BaseModel):
    """What the call cost when it was made, and on what basis."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    usd: float = Field(ge=0, allow_inf_nan=False)
    """The cost in USD."""
    provenance: CostProvenance
    """``provider_reported``/``adapter_reported`` (the provider said so), ``price_table_estimate``
    (usage times the price table), ``caller_reported`` (a declared operation)."""
    price_table: str | None = None
    """The price table the estimate came from (e.g. ``bundled asOf 2025-10-01``); ``None`` when
    the provider reported the cost itself."""


def _check_usage(usage: Mapping[str, float]) -> dict[str, float]:
    out: dict[str, float] = {}
    for name, value in usage.items():
        if not usable_number(value):
            raise ValueError(f"usage.{name} must be a finite number >= 0, got {value!r}")
        out[name] = float(value)
    if not out:
        raise ValueError("usage is empty")
    return out


class SettledReply(BaseModel):
    """A reply that may be cached: 2xx, whole, not refused, with usage. Build it with
    :func:`settle_reply`; the validators repeat the rules so a hand-built one cannot break them."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    status: int = Field(ge=200, le=299)
    """The HTTP status (2xx)."""
    headers: dict[str, str] = Field(default_factory=dict)
    """The kept response headers (:data:`KEPT_RESPONSE_HEADERS`), redacted."""
    body: Any = None
    """The parsed JSON body, redacted; ``None`` when ``body_base64`` holds the bytes."""
    body_base64: str | None = None
    """The raw body bytes (base64) when the body was not JSON."""
    usage: dict[str, float]
    """Token usage as result files spell it (``inputTokens``, ``outputTokens``...)."""
    model: str
    """The model the reply names (which may be a dated version of the one asked for)."""
    finish_reason: str | None = None
    """Why generation stopped, as the provider said."""
    cost: CertifiedCost | None = None
    """The certified cost, when the call was priced; an unpriced model has usage but no cost."""

    @field_validator("usage", mode="before")
    @classmethod
    def _usage(cls, value: Any) -> Any:
        return _check_usage(value) if isinstance(value, Mapping) else value

    @field_validator("finish_reason")
    @classmethod
    def _not_refused(cls, value: str | None) -> str | None:
        if value in REFUSAL_FINISH_REASONS:
            raise ValueError(f"finish reason {value!r} is a refusal")
        return value

    @model_validator(mode="after")
    def _one_body(self) -> SettledReply:
        if self.body is not None and self.body_base64 is not None:
            raise ValueError("a reply has a JSON body or raw bytes, not both")
        return self


def settle_reply(
    *,
    status: int,
    body: Any,
    usage: Mapping[str, float] | None,
    model: str,
    complete: bool,
    refused: bool = False,
    headers: Mapping[str, str] | None = None,
    finish_reason: str | None = None,
    cost: CertifiedCost | None = None,
) -> SettledReply:
    """The reply as the cache may keep it, or :class:`NotCacheable` saying why not.

    ``body`` is the parsed JSON body, or ``bytes`` when the reply was not JSON; ``complete`` is
    False when the 2xx body was cut off; ``refused`` is True for a call the budget or the
    provider refused. Body and headers are redacted by the one rule here.
    """
    if not 200 <= status <= 299:
        raise NotCacheable("error", f"HTTP {status} is an error reply; only 2xx replies are cached")
    if not complete:
        raise NotCacheable("cut_off", f"the HTTP {status} body was cut off; only whole replies are cached")
    if refused or finish_reason in REFUSAL_FINISH_REASONS:
        why = f" (finish reason {finish_reason!r})" if finish_reason in REFUSAL_FINISH_REASONS else ""
        raise NotCacheable("refused", f"the call was refused{why}; refusals are not cached")
    if not usage:
        raise NotCacheable("no_usage", "the reply reports no token usage, so its cost cannot be certified")
    kept = {
        name.lower(): redact(value)
        for name, value in (headers or {}).items()
        if name.lower() in KEPT_RESPONSE_HEADERS
    }
    raw = None
    if isinstance(body, bytes | bytearray | memoryview):
        raw = base64.b64encode(
            redact(bytes(body).decode("utf-8", "surrogateescape")).encode("utf-8", "surrogateescape")
        ).decode()
        body = None
    try:
        return SettledReply(
            status=status,
            headers=kept,
            body=redact_deep(body),
            body_base64=raw,
            usage=dict(usage),
            model=redact(model),
            finish_reason=finish_reason,
            cost=cost,
        )
    except ValidationError as exc:
        raise NotCacheable("no_usage", f"the reply cannot be cached: {exc.errors()[0]['msg']}") from None


class CacheEntry(BaseModel):
    """One cached reply: the settled reply, its key, the redacted request, when it was made."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    format: Literal[1] = 1
    """Layout version."""
    key: str
    """The key this entry answers (checked against the key asked for on every read)."""
    request: dict[str, Any]
    """The canonical request, redacted (:func:`axl_action.cache.key.request_record`)."""
    reply: SettledReply
    """What the provider answered."""
    made_at: datetime
    """When the live call was made (UTC)."""

    @field_validator("key")
    @classmethod
    def _hex_key(cls, value: str) -> str:
        if not is_cache_key(value):
            raise ValueError("a cache key is 64 lower-case hex digits")
        return value

    @field_validator("made_at")
    @classmethod
    def _aware(cls, value: datetime) -> datetime:
        if value.tzinfo is None:
            raise ValueError("made_at must carry a time zone")
        return value.astimezone(UTC)

    def body_bytes(self) -> bytes:
        """The reply body as bytes (JSON re-serialised, or the raw bytes)."""
        if self.reply.body_base64 is not None:
            return base64.b64decode(self.reply.body_base64)
        return orjson.dumps(self.reply.body)


def encode_entry(entry: CacheEntry) -> bytes:
    """The bytes of an entry file: the checksummed header line, then the JSON payload."""
    payload = orjson.dumps(entry.model_dump(mode="json"))
    return FILE_MAGIC + hashlib.sha256(payload).hexdigest().encode() + b"\n" + payload


class DamagedEntry(Exception):
    """An entry file that fails its checks (internal: the store turns it into a miss)."""


def decode_entry(data: bytes, key: str) -> CacheEntry:
    """Parse and verify an entry file for ``key``; raises :class:`DamagedEntry` when the header,
    the digest, the JSON, the layout or the entry's own key does not check out."""
    head, newline, payload = data.partition(b"\n")
    if not newline or not head.startswith(FILE_MAGIC):
        raise DamagedEntry("not an entry file (bad header)")
    if hashlib.sha256(payload).hexdigest().encode() != head[len(FILE_MAGIC) :]:
        raise DamagedEntry("its checksum does not match its content")
    try:
        entry = CacheEntry.model_validate_json(payload)
    except ValidationError as exc:
        raise DamagedEntry(f"its content is not a valid entry ({exc.error_count()} problems)") from None
    if entry.key != key:
        raise DamagedEntry("it holds the entry of another key")
    return entry


__all__ = [
    "ENTRY_FORMAT",
    "KEPT_RESPONSE_HEADERS",
    "REFUSAL_FINISH_REASONS",
    "CacheEntry",
    "CertifiedCost",
    "CostProvenance",
    "SettledReply",
    "decode_entry",
    "encode_entry",
    "settle_reply",
]
