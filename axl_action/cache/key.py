"""The cache key: a pure function from the canonical request to a SHA-256.

What is hashed (:class:`CacheRequest`):

* ``provider``, ``endpoint`` (the request path and its query), ``base_url`` and ``model``;
* the **whole** JSON body, every parameter included (messages, tools, ``response_format``,
  seed, temperature, max tokens, stop, provider options...): nothing is picked from an
  allow-list, so a parameter a later SDK adds cannot be forgotten;
* ``repeat``, the ``--runs`` repeat index, and ``itemRepeat``, the per-item repeat index of
  ``repeats: N`` (only when above 0), so each repeat has its own entry;
* ``purpose``: a generation, or which judge (scorer name, judge model, judge prompt), so a
  swapped judge never reuses the old judge's grades;
* ``headers``: only the few request headers that change what a model does
  (:data:`BEHAVIOUR_HEADERS`, e.g. ``anthropic-beta``); every other header is dropped, so a
  credential header can never reach the key.

Canonical means two requests that a provider treats alike hash alike:

* object keys are sorted; ``1``, ``1.0`` and ``1e0`` are one number (an integral number is
  written as an integer, others in the shortest round-trip spelling), ``-0.0`` is ``0``;
* base URLs lose their scheme/host case, default port, user-info, fragment and trailing
  slash; query parameters are sorted;
* credentials are removed even where they should never be: user-info in a URL, credential
  query parameters (:data:`CREDENTIAL_QUERY_PARAMS`, e.g. Gemini's ``?key=``) and credential
  fields at the **top level** of the body (:data:`CREDENTIAL_BODY_FIELDS`). Deeper fields are
  kept: a tool whose JSON schema declares an ``api_key`` property is a different tool.

A NaN or infinite number, or a value JSON cannot hold, raises :class:`CacheKeyError` naming
its JSON path: such a body could not have been sent as JSON either.

The *record* of a request (:func:`request_record`) is the same canonical mapping redacted by
the one redaction rule (:mod:`axl_action.redaction`); it is what an entry stores, so that a
replay miss can name the nearest recorded request (:mod:`axl_action.cache.nearest`).
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Mapping
from typing import Any, Literal, NewType
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import orjson
from pydantic import BaseModel, ConfigDict, Field, model_validator

from axl_action.cache.errors import CacheKeyError
from axl_action.errors import json_location
from axl_action.redaction import redact_deep

KEY_FORMAT = 1
"""Version of the hashing rule; part of the hashed document, so a change of rule can never
collide with keys made by the old one."""

CacheKey = NewType("CacheKey", str)
"""64 lower-case hex digits: the SHA-256 of the canonical request."""

CREDENTIAL_BODY_FIELDS = frozenset(
    {
        "api_key",
        "apikey",
        "x_api_key",
        "access_token",
        "auth_token",
        "authorization",
        "bearer_token",
        "client_secret",
        "password",
        "secret_key",
    }
)
"""Top-level body fields dropped before hashing (compared lower-cased, ``-`` read as ``_``)."""

CREDENTIAL_QUERY_PARAMS = frozenset(
    {"key", "api_key", "apikey", "x_api_key", "access_token", "token", "sig", "signature"}
)
"""Query parameters dropped from the base URL and the endpoint (same comparison)."""

BEHAVIOUR_HEADERS = frozenset({"anthropic-version", "anthropic-beta", "openai-beta"})
"""Request headers that change a reply and so are part of the key; every other header is
dropped (they carry credentials, tracing ids, user agents)."""

_DEFAULT_PORTS = {"http": 80, "https": 443}
_INT64 = 2**63
# One match in C: a hit checks its key twice, and a per-character generator was 130 steps.
_KEY = re.compile(r"[0-9a-f]{64}")


class Purpose(BaseModel):
    """Why the call was made: a generation, or one judge's grading call.

    A judge is named by its model, and by its scorer name and prompt template where the caller
    knows them. ``runtime.chat`` keys a judge's call by its model: the judge's rendered prompt
    is in the body, so a changed prompt or a swapped judge model is a different key."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Literal["generation", "judge"] = "generation"
    """``generation`` (the workflow's own calls) or ``judge`` (an LLM scorer)."""
    scorer: str | None = None
    """The judge's scorer name."""
    model: str | None = None
    """The judge's model URI (``provider:model``)."""
    prompt: str | None = None
    """The judge's prompt template, before the item was filled in."""

    @model_validator(mode="after")
    def _judge_is_named(self) -> Purpose:
        judge_fields = (self.scorer, self.model, self.prompt)
        if self.kind == "judge" and self.model is None:
            raise ValueError("a judge purpose names at least its model")
        if self.kind == "generation" and any(f is not None for f in judge_fields):
            raise ValueError("a generation purpose has no scorer, model or prompt")
        return self

    @classmethod
    def judge(cls, scorer: str, model: str, prompt: str) -> Purpose:
        """The purpose of one judge's call."""
        return cls(kind="judge", scorer=scorer, model=model, prompt=prompt)


GENERATION = Purpose()
"""The purpose of a workflow's own model call."""


class CacheRequest(BaseModel):
    """The fields of a request that the cache key hashes (see the module docstring)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    provider: str = Field(min_length=1)
    """Provider name (``openai``, ``anthropic``...); compared lower-cased."""
    endpoint: str = Field(min_length=1)
    """Request path (and query) below ``base_url``, e.g. ``/chat/completions``."""
    base_url: str
    """The provider base URL the request went to."""
    model: str = Field(min_length=1)
    """The model asked for, exactly as sent."""
    body: Any
    """The whole JSON request body."""
    repeat: int = Field(default=0, ge=0)
    """The ``--runs`` repeat index (0 for the first run)."""
    item_repeat: int = Field(default=0, ge=0)
    """The per-item repeat index (``repeats: N``; 0 for the first). Keyed only when above 0,
    so the keys of runs without repeats are unchanged."""
    purpose: Purpose = GENERATION
    """Generation, or which judge."""
    headers: Mapping[str, str] = Field(default_factory=dict)
    """Request headers; only :data:`BEHAVIOUR_HEADERS` are kept."""


def canonical_request(request: CacheRequest) -> dict[str, Any]:
    """The canonical mapping of ``request``, the document the key hashes (unredacted)."""
    body = request.body
    if isinstance(body, Mapping):
        body = {k: v for k, v in body.items() if not _is_credential(k, CREDENTIAL_BODY_FIELDS)}
    headers = {
        name.lower(): value for name, value in request.headers.items() if name.lower() in BEHAVIOUR_HEADERS
    }
    canonical: dict[str, Any] = {
        "v": KEY_FORMAT,
        "provider": request.provider.lower(),
        "endpoint": _canonical_endpoint(request.endpoint),
        "base_url": canonical_base_url(request.base_url),
        "model": request.model,
        "body": canonical_json(body, "body"),
        "repeat": request.repeat,
        "purpose": request.purpose.model_dump(exclude_none=True),
        "headers": headers,
    }
    if request.item_repeat:
        canonical["itemRepeat"] = request.item_repeat
    return canonical


def cache_key(request: CacheRequest) -> CacheKey:
    """The SHA-256 (hex) of the canonical request: equal for requests a provider treats alike,
    different when any keyed field differs."""
    return key_of(canonical_request(request))


def key_of(canonical: Mapping[str, Any]) -> CacheKey:
    """The key of an already canonical mapping (:func:`canonical_request`)."""
    return CacheKey(hashlib.sha256(orjson.dumps(canonical, option=orjson.OPT_SORT_KEYS)).hexdigest())


def request_record(request: CacheRequest) -> dict[str, Any]:
    """The canonical mapping redacted by the one rule: what an entry stores, and what the
    nearest-request search compares (a registered secret inside a prompt never reaches disk)."""
    record: dict[str, Any] = redact_deep(canonical_request(request))
    return record


def is_cache_key(value: object) -> bool:
    """True for 64 lower-case hex digits (what :func:`cache_key` returns)."""
    return isinstance(value, str) and _KEY.fullmatch(value) is not None


def canonical_json(value: Any, path: str = "") -> Any:
    """``value`` as canonical JSON data: numbers normalised, tuples as lists, mappings with
    string keys only. Raises :class:`CacheKeyError` for a value JSON cannot hold."""
    kind = type(value)
    if kind is str or kind is bool or value is None:
        return value
    if kind is int:
        return value if -_INT64 <= value < _INT64 else {"$bigint": str(value)}
    if kind is float:
        return _canonical_float(value, path)
    if isinstance(value, Mapping):
        return _canonical_mapping(value, path)
    if isinstance(value, list | tuple):
        return [canonical_json(v, f"{path}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, bool | str):  # subclasses (an enum of str)
        return bool(value) if isinstance(value, bool) else str(value)
    if isinstance(value, int):
        return canonical_json(int(value), path)
    if isinstance(value, float):
        return canonical_json(float(value), path)
    raise CacheKeyError(
        f"Cannot key the request: {_where(path)} is a {type(value).__name__}, not a JSON value",
        hint="pass the body as JSON data (dict, list, str, number, bool, None)",
    )


def _canonical_mapping(value: Mapping[Any, Any], path: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in value.items():
        if not isinstance(k, str):
            raise CacheKeyError(
                f"Cannot key the request: the object at {_where(path)} has a non-string key {k!r}",
                hint="JSON object keys are strings; convert the key before sending",
            )
        out[k] = canonical_json(v, f"{path}.{k}" if path else k)
    return out


def _canonical_float(value: float, path: str) -> Any:
    if not math.isfinite(value):
        raise CacheKeyError(
            f"Cannot key the request: {_where(path)} is {value!r}, which JSON cannot represent",
            hint="use a finite number",
        )
    if value.is_integer():
        return canonical_json(int(value), path)  # 1.0 and 1 are one number; -0.0 becomes 0
    return value  # orjson writes the shortest round-trip spelling


def _where(path: str) -> str:
    return json_location(path.split(".")) if path else "the body"


def _is_credential(name: str, names: frozenset[str]) -> bool:
    return name.lower().replace("-", "_") in names


def _clean_query(query: str) -> str:
    pairs = [
        (k, v)
        for k, v in parse_qsl(query, keep_blank_values=True)
        if not _is_credential(k, CREDENTIAL_QUERY_PARAMS)
    ]
    return urlencode(sorted(pairs))


def canonical_base_url(url: str) -> str:
    """``url`` without case, default port, user-info, fragment, credential query parameters or
    trailing slash: ``HTTPS://u:p@API.example.com:443/v1/?key=k`` is ``https://api.example.com/v1``."""
    parts = urlsplit(url.strip())
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").lower()
    if ":" in host:  # an IPv6 literal
        host = f"[{host}]"
    try:
        port = parts.port
    except ValueError:
        port = None
    netloc = host if port is None or port == _DEFAULT_PORTS.get(scheme) else f"{host}:{port}"
    return urlunsplit((scheme, netloc, parts.path.rstrip("/"), _clean_query(parts.query), ""))


def _canonical_endpoint(endpoint: str) -> str:
    parts = urlsplit(endpoint.strip())
    path = parts.path if parts.path.startswith("/") else "/" + parts.path
    query = _clean_query(parts.query)
    return f"{path}?{query}" if query else path


__all__ = [
    "BEHAVIOUR_HEADERS",
    "CREDENTIAL_BODY_FIELDS",
    "CREDENTIAL_QUERY_PARAMS",
    "GENERATION",
    "KEY_FORMAT",
    "CacheKey",
    "CacheRequest",
    "Purpose",
    "cache_key",
    "canonical_base_url",
    "canonical_json",
    "canonical_request",
    "is_cache_key",
    "key_of",
    "request_record",
]
