"""The measured chat call every workflow and judge goes through (``Runtime.chat``).

One call = one accounting operation (spec §7.1): opened before anything is sent, checked for
admission before every HTTP attempt, then settled exactly once:

* provider-reported cost            -> ``settle(cost, usage, provider_reported | adapter_reported)``
* usage and a price-table entry     -> ``settle(estimate, usage, price_table_estimate)``
* usage but no price                -> ``unknown("unpriced_model", usage)`` (never $0)
* no usage                          -> ``unknown("usage_missing")``
* failure after dispatch            -> ``unknown("usage_missing")``, error re-raised
* admission refused                 -> the operation already retracted/settled itself

The completion text is redacted here, by the one rule (``axl_action.redaction``), before the
workflow or judge sees it: a model that echoes a key therefore echoes ``[REDACTED]`` into the
output, the report and the sidecar alike (one rule for every copy of the text).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
from collections.abc import Mapping, Sequence
from typing import Any

from axl_action.providers.base import Provider
from axl_action.providers.capture import build_record
from axl_action.providers.errors import ProviderConfigError, ProviderError
from axl_action.providers.measure import settle_usage
from axl_action.providers.pricing import PricingTable
from axl_action.providers.registry import ProviderRegistry, default_registry, parse_model_uri
from axl_action.providers.types import ChatMessage, ChatRequest, ChatResponse
from axl_action.redaction import redact
from axl_action.runtime.scope import Operation, current_scope, is_admission_denial, open_operation

MessageLike = ChatMessage | Mapping[str, Any]

_ROLES = ("system", "user", "assistant")


@functools.cache
def default_pricing() -> PricingTable:
    """The bundled price table (loaded once per process)."""
    return PricingTable.load()


def to_messages(messages: Sequence[MessageLike] | str) -> tuple[ChatMessage, ...]:
    """Accept ``ChatMessage``s, ``{"role", "content"}`` dicts, or a bare prompt string."""
    if isinstance(messages, str):
        return (ChatMessage("user", messages),)
    out: list[ChatMessage] = []
    for index, message in enumerate(messages):
        if isinstance(message, ChatMessage):
            out.append(message)
            continue
        role = message.get("role") if isinstance(message, Mapping) else None
        content = message.get("content") if isinstance(message, Mapping) else None
        if role not in _ROLES or not isinstance(content, str):
            raise ProviderConfigError(
                f"Chat message {index} is not a {{role, content}} message",
                hint='use {"role": "system"|"user"|"assistant", "content": "<text>"}',
            )
        out.append(ChatMessage(role, content))
    if not out:
        raise ProviderConfigError("A chat call needs at least one message")
    return tuple(out)


def registry_for(runtime: Any | None) -> ProviderRegistry:
    """The runtime's providers (``Runtime(providers={...})``) over the default registry."""
    if runtime is None:
        return default_registry
    explicit = getattr(runtime, "registry", None)
    if isinstance(explicit, ProviderRegistry):
        return explicit
    providers = getattr(runtime, "providers", None)
    if not providers:
        return default_registry
    cached = getattr(runtime, "_axl_provider_registry", None)
    if isinstance(cached, ProviderRegistry):
        return cached
    registry = _LayeredRegistry(default_registry)
    for name, factory in providers.items():
        registry.register(name, factory)
    # A runtime with __slots__ cannot cache it: rebuilt per call, still correct.
    with contextlib.suppress(AttributeError):
        runtime._axl_provider_registry = registry
    return registry


class _LayeredRegistry(ProviderRegistry):
    """Runtime-registered providers first, then the fallback registry."""

    def __init__(self, fallback: ProviderRegistry) -> None:
        super().__init__(builtins=False)
        self._fallback = fallback

    def get(self, name: str) -> Provider:
        if name in self.names():
            return super().get(name)
        return self._fallback.get(name)


def pricing_for(runtime: Any | None, pricing: PricingTable | None) -> PricingTable:
    """An explicit table, else the runtime's, else the bundled one."""
    if pricing is not None:
        return pricing
    candidate = getattr(runtime, "pricing", None)
    return candidate if isinstance(candidate, PricingTable) else default_pricing()


def chat(
    model_uri: str,
    messages: Sequence[MessageLike] | str,
    *,
    runtime: Any | None = None,
    registry: ProviderRegistry | None = None,
    pricing: PricingTable | None = None,
    temperature: float | None = None,
    max_tokens: int | None = None,
    stop: Sequence[str] | None = None,
    response_format: Mapping[str, Any] | None = None,
    provider_options: Mapping[str, Any] | None = None,
    timeout: float | None = None,
) -> ChatResponse:
    """One measured chat completion on ``provider:model``.

    Configuration problems (bad URI, unknown provider, missing key) raise
    ``ProviderConfigError`` before any operation is opened; call failures raise
    ``ProviderError``; a closed budget raises ``AdmissionDeniedError``.
    """
    provider_name, model = parse_model_uri(model_uri)
    provider = (registry or registry_for(runtime)).get(provider_name)
    request = ChatRequest(
        model=model,
        messages=to_messages(messages),
        temperature=temperature,
        max_tokens=max_tokens,
        stop=tuple(stop) if stop else None,
        response_format=response_format,
        provider_options=dict(provider_options or {}),
        timeout=timeout,
    )
    table = pricing_for(runtime, pricing)
    op = open_operation("chat", model=model_uri)
    try:
        response = provider.chat(request, before_dispatch=op.before_dispatch)
    except BaseException as exc:
        # A denial has already retracted or settled the operation, making this a no-op.
        op.unknown("usage_missing")
        if not is_admission_denial(exc) and isinstance(exc, Exception):
            _capture(op, runtime, provider_name, model, getattr(exc, "exchange", None), exc)
        raise
    settle(op, model_uri, response, table)
    op.record_timing(model_uri, response.timing)
    _capture(op, runtime, provider_name, model, response.exchange, None)
    safe = redact(response.text)
    return response if safe is response.text else dataclasses.replace(response, text=safe)


def settle(op: Operation, model_uri: str, response: ChatResponse, table: PricingTable) -> None:
    """Settle ``op`` from ``response`` (the one rule: :func:`measure.settle_usage`)."""
    settle_usage(op, model_uri, response.usage, response.provider_cost, response.cost_provenance, table)


def _capture(
    op: Operation,
    runtime: Any | None,
    provider: str,
    model: str,
    exchange: Any,
    error: BaseException | None,
) -> None:
    scope = current_scope()
    sink = scope.capture if scope is not None else None
    if sink is None:
        return
    redact_content = bool(_sink_setting(sink, "redact_content") or getattr(runtime, "redact_content", False))
    limit = _sink_setting(sink, "max_record_bytes")
    record = build_record(
        provider=provider,
        model=model,
        exchange=exchange,
        error=error,
        redact_content=redact_content,
        **({"max_record_bytes": limit} if isinstance(limit, int) else {}),
    )
    op.capture(record)


def _sink_setting(sink: Any, name: str) -> Any:
    """A setting of the capture sink, looking through one wrapper (``.sink``) if needed."""
    value = getattr(sink, name, None)
    if value is None:
        value = getattr(getattr(sink, "sink", None), name, None)
    return value


class MeasuredProvider:
    """What ``resolve_provider`` hands to judges: a provider-shaped facade whose ``chat``
    goes through the gateway, so judge calls are measured and budget-enforced (spec §4.1)."""

    def __init__(self, provider_name: str, runtime: Any | None, registry: ProviderRegistry | None) -> None:
        self.name = provider_name
        self._runtime = runtime
        self._registry = registry

    def chat(self, messages: Sequence[MessageLike] | str, *, model: str, **options: Any) -> ChatResponse:
        """``chat(messages, model=<bare name>, temperature=..., response_format=...)``."""
        return chat(
            f"{self.name}:{model}", messages, runtime=self._runtime, registry=self._registry, **options
        )


def resolve_provider(
    model_uri: str, *, runtime: Any | None = None, registry: ProviderRegistry | None = None
) -> tuple[MeasuredProvider, str]:
    """``(measured provider facade, bare model name)`` for ``provider:model``.

    Resolves the provider eagerly so an unknown provider or a missing key fails here with a
    clear message rather than on the first call.
    """
    provider_name, model = parse_model_uri(model_uri)
    (registry or registry_for(runtime)).get(provider_name)
    return MeasuredProvider(provider_name, runtime, registry), model


__all__ = [
    "MeasuredProvider",
    "ProviderError",
    "chat",
    "default_pricing",
    "registry_for",
    "resolve_provider",
    "settle",
    "to_messages",
]
