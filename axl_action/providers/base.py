"""The provider interface and the shared skeleton of HTTP adapters.

An adapter is split into pure halves (``build_body`` turns a ``ChatRequest`` into the wire
JSON, ``parse`` turns the wire JSON into a ``ParsedReply``) around one shared transport call,
so each wire format is unit-testable without a socket.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import TracebackType
from typing import Any, ClassVar, Protocol, Self, runtime_checkable

from axl_action.errors import json_location
from axl_action.providers.errors import ProviderConfigError, ProviderError
from axl_action.providers.redact import register_secret
from axl_action.providers.transport import HttpTransport
from axl_action.providers.types import ChatRequest, ChatResponse, TokenUsage
from axl_action.providers.wire import DEFAULT_MAX_BODY_BYTES
from axl_action.schema.numbers import usable_number

DEFAULT_TIMEOUT = 120.0
"""Seconds allowed per HTTP attempt when a request sets no timeout."""
MAX_RESPONSE_ENV = "AXL_EVAL_MAX_RESPONSE_BYTES"
"""Environment variable with the response body cap in bytes (default 32 MiB)."""


@runtime_checkable
class Provider(Protocol):
    """Anything that can answer a chat request (built-in adapters, mocks, custom providers)."""

    name: str

    def chat(
        self, request: ChatRequest, *, before_dispatch: Callable[[], None] | None = None
    ) -> ChatResponse:
        """Answer ``request``. Call ``before_dispatch`` immediately before every attempt that
        could cost money; let whatever it raises propagate."""
        ...


class MalformedResponseError(ValueError):
    """A 2xx response whose JSON lacks a field the adapter needs."""


@dataclass(frozen=True, slots=True)
class ParsedReply:
    """The provider-specific parts of a successful response."""

    text: str
    usage: TokenUsage | None
    model: str
    finish_reason: str | None
    provider_cost: float | None = None
    request_id: str | None = None

    @classmethod
    def from_wire(
        cls,
        text: str,
        usage: TokenUsage | None,
        *,
        model: Any,
        finish_reason: Any,
        request_id: Any = None,
        provider_cost: float | None = None,
    ) -> ParsedReply:
        """The reply from its fields as the body holds them, read by one rule for every adapter:
        the model is text (``""`` when absent), the finish reason and request id are text or
        ``None`` (a provider that sends another JSON value there has not said one)."""
        return cls(
            text=text,
            usage=usage,
            model=str(model or ""),
            finish_reason=str_or_none(finish_reason),
            provider_cost=provider_cost,
            request_id=str_or_none(request_id),
        )


def require_env(env: Mapping[str, str], *names: str, provider: str) -> str:
    """The first non-empty variable among ``names``; a clear error naming them otherwise."""
    for name in names:
        value = env.get(name, "").strip()
        if value:
            register_secret(value)
            return value
    wanted = " or ".join(names)
    raise ProviderConfigError(
        f"The {provider} provider needs an API key but {wanted} is not set",
        hint=f"set {names[0]} in the environment, e.g. from a repository secret",
    )


def response_limit_from(env: Mapping[str, str]) -> int:
    """The response body cap from ``AXL_EVAL_MAX_RESPONSE_BYTES`` (a positive number of bytes,
    optionally with a ``KiB``/``MiB`` suffix), else 32 MiB; anything else is a clear error."""
    raw = env.get(MAX_RESPONSE_ENV, "").strip()
    if not raw:
        return DEFAULT_MAX_BODY_BYTES
    match = re.fullmatch(r"(\d+)\s*(KiB|MiB)?", raw, flags=re.IGNORECASE)
    value = (
        int(match.group(1)) * {"": 1, "kib": 1 << 10, "mib": 1 << 20}[(match.group(2) or "").lower()]
        if match
        else 0
    )
    if value <= 0:
        raise ProviderConfigError(
            f"{MAX_RESPONSE_ENV}={raw!r} is not a size",
            hint="give a positive number of bytes, e.g. 67108864 or 64MiB (the default is 32MiB)",
        )
    return value


def transport_from_env(env: Mapping[str, str], provider: str, api_key: str) -> HttpTransport:
    """The transport of a built-in provider configured from the environment."""
    return HttpTransport(provider, secrets=(api_key,), max_response_bytes=response_limit_from(env))


def base_url_from(env: Mapping[str, str], name: str, default: str) -> str:
    """A base URL from ``env[name]`` or ``default``, without a trailing slash."""
    value = env.get(name, "").strip() or default
    return value.rstrip("/")


def number(value: Any) -> float:
    """A usage count: numbers pass, anything else (absent, null, text) counts 0."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0
    return value


def dig(body: Any, *path: str | int) -> Any:
    """``body[path[0]][path[1]]...``; raises ``MalformedResponseError`` naming the path."""
    current = body
    for depth, key in enumerate(path):
        try:
            current = current[key]
        except (KeyError, IndexError, TypeError):
            raise MalformedResponseError(f"the response has no {json_location(path[: depth + 1])}") from None
    return current


def str_or_none(value: Any) -> str | None:
    """A wire field that should be text: ``value`` when it is a ``str``, else ``None``."""
    return value if isinstance(value, str) else None


class Closing:
    """``with`` support for anything with a ``close()``: the provider and the registry share it,
    so the context-manager protocol is written once."""

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()


class HttpProvider(Closing, ABC):
    """Common ``chat`` for JSON-over-HTTP providers, and their configuration from the environment."""

    name: str
    key_env: ClassVar[tuple[str, ...]]
    """API key variables, first non-empty wins; the first is the one an error asks for."""
    base_url_env: ClassVar[str]
    """The variable that overrides :attr:`default_base_url`."""
    default_base_url: ClassVar[str]

    def __init__(self, *, api_key: str, base_url: str, transport: HttpTransport | None = None) -> None:
        self.api_key = api_key
        self.base_url = base_url.rstrip("/")
        self.base_url_source: str | None = None
        """The variable the base URL came from (``from_env`` with it set), for error messages."""
        self.transport = transport or HttpTransport(self.name, secrets=(api_key,))

    def close(self) -> None:
        """Close the transport's idle keep-alive connections, so none is left for the garbage
        collector to close (a ``ResourceWarning``). The provider stays usable: a later call
        opens a new connection."""
        self.transport.close()

    @classmethod
    def env_vars(cls) -> tuple[str, ...]:
        """Every variable :meth:`from_env` reads (the registry rebuilds when one changes)."""
        return (*cls.key_env, cls.base_url_env, MAX_RESPONSE_ENV)

    @staticmethod
    def configured_base_url(url: str) -> str:
        """Adjust a base URL taken from the environment (a hook: OpenAI adds ``/v1``)."""
        return url

    @classmethod
    def from_env(cls, env: Mapping[str, str], transport: HttpTransport | None = None) -> Self:
        """Build from :attr:`key_env` and the optional :attr:`base_url_env`."""
        key = require_env(env, *cls.key_env, provider=cls.name)
        provider = cls(
            api_key=key,
            base_url=cls.configured_base_url(base_url_from(env, cls.base_url_env, cls.default_base_url)),
            transport=transport or transport_from_env(env, cls.name, key),
        )
        if env.get(cls.base_url_env, "").strip():
            provider.base_url_source = cls.base_url_env
        return provider

    def _where(self, exc: ProviderError, url: str) -> ProviderError:
        """``exc`` naming the URL requested and the variable that set it, when the URL is the
        likely fault: no such route (404, 405) or no server there (no connection). A bare
        ``HTTP 404: {"detail": "Not Found"}`` said neither."""
        if exc.status not in (0, 404, 405) or (exc.status == 0 and "could not connect" not in exc.message):
            return exc
        source = (
            f"{self.base_url_source}={self.base_url}"
            if self.base_url_source
            else f"the default base URL (set {self.base_url_env} to change it)"
        )
        if exc.status == 0:
            return exc.with_note(f"; the URL comes from {source}")
        usual = (
            " (an OpenAI-compatible server usually serves under /v1)"
            if self.base_url_env == "OPENAI_BASE_URL"
            else ""
        )
        return exc.with_note(
            f" — POST {url} has no such route; the URL comes from {source}: check its path{usual}"
        )

    @classmethod
    def for_keying(cls, env: Mapping[str, str]) -> Self:
        """The adapter without a key, for ``--cache replay`` on a run that has none (a fork's
        pull request): it builds the same endpoint and body, so the same cache key, and it
        never sends (a replay miss fails before any request)."""
        return cls(
            api_key="",
            base_url=cls.configured_base_url(base_url_from(env, cls.base_url_env, cls.default_base_url)),
        )

    @abstractmethod
    def endpoint(self, request: ChatRequest) -> str:
        """The URL to POST to."""

    @abstractmethod
    def headers(self) -> dict[str, str]:
        """Request headers, including the credential header."""

    @abstractmethod
    def wire_body(self, request: ChatRequest) -> dict[str, Any]:
        """The adapter's JSON body for ``request``, before ``provider_options``."""

    def build_body(self, request: ChatRequest) -> dict[str, Any]:
        """The JSON body for ``request``: :meth:`wire_body` with ``provider_options`` merged last,
        so the escape hatch overrides whatever an adapter set."""
        return with_options(self.wire_body(request), request)

    @abstractmethod
    def parse(self, body: Any) -> ParsedReply:
        """Read a 2xx body; raise ``MalformedResponseError`` when a needed field is missing."""

    def chat(
        self, request: ChatRequest, *, before_dispatch: Callable[[], None] | None = None
    ) -> ChatResponse:
        body = self.build_body(request)
        url = self.endpoint(request)
        try:
            result = self.transport.post_json(
                url,
                headers=self.headers(),
                body=body,
                timeout=request.timeout or DEFAULT_TIMEOUT,
                before_dispatch=before_dispatch,
            )
        except ProviderError as exc:
            raise self._where(exc, url) from exc.__cause__
        try:
            reply = self.parse(result.body)
        except MalformedResponseError as exc:
            raise ProviderError(
                f"{self.name} returned an unexpected response for model {request.model}: {exc}",
                provider=self.name,
                status=result.status,
                retryable=False,
                request_id=result.request_id,
                attempts=result.timing.attempts,
                hint="check the base URL points at a compatible API",
                secrets=(self.api_key,),
                exchange=result.exchange,
            ) from None
        return ChatResponse(
            text=reply.text,
            usage=reply.usage,
            provider_cost=reply.provider_cost,
            request_id=result.request_id or reply.request_id,
            model=reply.model or request.model,
            finish_reason=reply.finish_reason,
            timing=result.timing,
            exchange=result.exchange,
        )


def with_options(body: dict[str, Any], request: ChatRequest) -> dict[str, Any]:
    """Merge ``provider_options`` last (the documented escape hatch)."""
    if request.provider_options:
        body.update(dict(request.provider_options))
    return body


def usable_cost(value: Any) -> float | None:
    """A provider-reported cost if it is a finite number ≥ 0, else ``None``."""
    return float(value) if usable_number(value) else None


__all__ = [
    "DEFAULT_TIMEOUT",
    "MAX_RESPONSE_ENV",
    "HttpProvider",
    "MalformedResponseError",
    "ParsedReply",
    "Provider",
    "base_url_from",
    "dig",
    "number",
    "require_env",
    "response_limit_from",
    "str_or_none",
    "transport_from_env",
    "usable_cost",
    "with_options",
]
