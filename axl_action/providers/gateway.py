"""The measured chat call every workflow and judge goes through (``Runtime.chat``).

One call = one accounting operation (spec §7.1): opened before anything is sent, checked for
admission before every HTTP attempt, then settled exactly once:

* provider-reported cost            -> ``settle(cost, usage, provider_reported | adapter_reported)``
* usage and a price-table entry     -> ``settle(estimate, usage, price_table_estimate)``
* usage but no price                -> ``unknown("unpriced_model", usage)`` (never $0)
* no usage                          -> ``unknown("usage_missing")``
* failure after dispatch            -> ``unknown("usage_missing")``, error re-raised
* admission refused                 -> the operation already retracted/settled itself

With a response cache on the runtime (``Runtime(cache=...)``, ``--cache MODE``), the cache is
asked before the operation opens: a hit settles it as *replayed* (billed $0, the recorded cost
kept as certified), a ``replay`` miss raises before anything is opened or sent, and a live
reply the one rule allows is stored after it settled (``axl_action/cache``, docs/cache.md).

The completion text is redacted here, by the one rule (``axl_action.redaction``), before the
workflow or judge sees it: a model that echoes a key therefore echoes ``[REDACTED]`` into the
output, the report and the sidecar alike (one rule for every copy of the text).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from axl_action.providers.base import HttpProvider, Provider
from axl_action.providers.capture import build_record, sink_setting
from axl_action.providers.errors import ProviderConfigError, ProviderError
from axl_action.providers.measure import call_purpose, settle_usage
from axl_action.providers.pricing import PricingTable, default_pricing
from axl_action.providers.registry import ProviderRegistry, default_registry, parse_model_uri
from axl_action.providers.types import CallTiming, ChatMessage, ChatRequest, ChatResponse, TokenUsage
from axl_action.redaction import redact
from axl_action.runtime.scope import Operation, current_scope, is_admission_denial, open_operation

if TYPE_CHECKING:
    from axl_action.cache import CacheEntry, CacheRequest, CertifiedCost
    from axl_action.cache.calls import ResponseCache

MessageLike = ChatMessage | Mapping[str, Any]

_ROLES = ("system", "user", "assistant")


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

    def keyless(self, name: str) -> Provider | None:
        if name in self.names():
            return super().keyless(name)
        return self._fallback.keyless(name)


def close_providers(runtime: Any | None = None) -> None:
    """Close the providers a command built: the runtime's own registry (``Runtime(registry=)``
    or ``Runtime(providers=)``) and the default one. Called where the command ends (``axl-eval
    run`` and ``rescore``), so no keep-alive connection is left to the garbage collector; the
    registries stay usable."""
    for attribute in ("registry", "_axl_provider_registry"):
        registry = getattr(runtime, attribute, None)
        if isinstance(registry, ProviderRegistry) and registry is not default_registry:
            registry.close()
    default_registry.close()


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
    provider = _provider(registry or registry_for(runtime), provider_name, runtime)
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
    live = functools.partial(
        _live, provider, provider_name, model_uri, request, runtime, pricing_for(runtime, pricing)
    )
    cache: ResponseCache | None = getattr(runtime, "cache", None)
    if cache is None:
        return live()[0]
    key, keyed = cache.keyed(cache_request(provider, provider_name, model_uri, request))
    if not cache.reads:
        return _live_stored(cache, key, keyed, live, model_uri)
    entry = cache.store.get(key)
    if entry is not None:
        return _replayed(entry, model_uri)
    if cache.mode == "replay":
        raise cache.replay_miss(keyed, f"a {model_uri} chat call")
    return _live_stored(cache, key, keyed, live, model_uri)


def _live(
    provider: Provider,
    provider_name: str,
    model_uri: str,
    request: ChatRequest,
    runtime: Any | None,
    table: PricingTable,
) -> tuple[ChatResponse, CertifiedCost | None]:
    """The live call: one operation, admitted per attempt, settled once, captured."""
    op = open_operation("chat", model=model_uri)
    model = request.model
    try:
        response = provider.chat(request, before_dispatch=op.before_dispatch)
    except BaseException as exc:
        # A denial has already retracted or settled the operation, making this a no-op.
        op.unknown("usage_missing")
        if not is_admission_denial(exc) and isinstance(exc, Exception):
            table.note_call(model_uri, "failed")
            _capture(op, runtime, provider_name, model, getattr(exc, "exchange", None), exc)
        raise
    certified = settle(op, model_uri, response, table)
    _capture(op, runtime, provider_name, model, response.exchange, None)
    safe = redact(response.text)
    return (response if safe is response.text else dataclasses.replace(response, text=safe)), certified


def _live_stored(
    cache: ResponseCache,
    key: str,
    keyed: CacheRequest,
    live: Callable[[], tuple[ChatResponse, CertifiedCost | None]],
    model_uri: str,
) -> ChatResponse:
    """A live call (``live``: :func:`_live` of the call) whose reply is stored when the mode
    writes and the one rule allows it. With ``on``, threads asking for the same key wait for
    one call (single flight)."""
    from axl_action.cache import NotCacheable, request_record, settle_reply

    def compute() -> tuple[ChatResponse, Any]:
        response, certified = live()
        try:
            reply = settle_reply(
                status=200,
                body={"text": response.text, "requestId": response.request_id},
                usage=response.usage.to_wire() if response.usage is not None else None,
                model=response.model,
                complete=True,
                finish_reason=response.finish_reason,
                cost=certified,
            )
        except NotCacheable:
            reply = None
        return response, reply

    if cache.mode == "on":
        served = cache.store.get_or_compute(key, lambda: request_record(keyed), compute)
        if served.hit and served.entry is not None:
            return _replayed(served.entry, model_uri)
        assert served.value is not None
        return served.value
    response, reply = compute()
    if reply is not None and cache.writes:
        cache.store.put(key, request_record(keyed), reply)
    return response


def cache_request(
    provider: Provider, provider_name: str, model_uri: str, request: ChatRequest
) -> CacheRequest:
    """What the cache key hashes for a ``runtime.chat`` call: the adapter's whole wire body
    (every parameter, ``provider_options`` merged) at its endpoint, or, for a provider that is
    not JSON over HTTP, the request's own fields. A judge's call is keyed as a judge's."""
    from axl_action.cache import CacheRequest

    purpose = call_purpose(model_uri)
    if isinstance(provider, HttpProvider):
        url = urlsplit(provider.endpoint(request))
        base = urlsplit(provider.base_url)
        endpoint = url.path[len(base.path) :] if url.path.startswith(base.path) else url.path
        return CacheRequest(
            provider=provider_name,
            endpoint=endpoint or "/",
            base_url=provider.base_url,
            model=request.model,
            body=provider.build_body(request),
            purpose=purpose,
        )
    return CacheRequest(
        provider=provider_name,
        endpoint="runtime.chat",
        base_url="",
        model=request.model,
        body={
            "messages": [m.to_wire() for m in request.messages],
            "temperature": request.temperature,
            "max_tokens": request.max_tokens,
            "stop": list(request.stop) if request.stop else None,
            "response_format": dict(request.response_format) if request.response_format else None,
            **dict(request.provider_options),
        },
        purpose=purpose,
    )


def _replayed(entry: CacheEntry, model_uri: str) -> ChatResponse:
    """The recorded reply as the call's response; its operation settles replayed (billed $0,
    certified at the recorded cost). No timing is recorded: latency statistics leave hits out."""
    op = open_operation("chat", model=model_uri)
    reply = entry.reply
    op.replay(reply.cost.usd if reply.cost is not None else None)
    body = reply.body if isinstance(reply.body, Mapping) else {}
    usage = reply.usage
    return ChatResponse(
        text=redact(str(body.get("text", ""))),
        usage=TokenUsage(
            input_tokens=usage.get("inputTokens", 0),
            output_tokens=usage.get("outputTokens", 0),
            reasoning_tokens=usage.get("reasoningTokens", 0),
            cached_tokens=usage.get("cachedTokens", 0),
            cache_write_tokens=usage.get("cacheWriteTokens", 0),
            audio_seconds=usage.get("audioSeconds", 0),
        ),
        provider_cost=None,
        request_id=body.get("requestId") if isinstance(body.get("requestId"), str) else None,
        model=reply.model,
        finish_reason=reply.finish_reason,
        timing=CallTiming(attempts=0),
    )


def settle(
    op: Operation, model_uri: str, response: ChatResponse, table: PricingTable
) -> CertifiedCost | None:
    """Settle and time ``op`` from ``response`` (the one rule: :func:`measure.settle_usage`);
    returns the cost it settled at, with its provenance (what a cache entry certifies), or
    ``None``."""
    return settle_usage(
        op,
        model_uri,
        response.usage,
        response.provider_cost,
        response.cost_provenance,
        table,
        timing=response.timing,
    )


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
    redact_content = bool(sink_setting(sink, "redact_content") or getattr(runtime, "redact_content", False))
    limit = sink_setting(sink, "max_record_bytes")
    record = build_record(
        provider=provider,
        model=model,
        exchange=exchange,
        error=error,
        redact_content=redact_content,
        **({"max_record_bytes": limit} if isinstance(limit, int) else {}),
    )
    op.capture(record)


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
    _provider(registry or registry_for(runtime), provider_name, runtime)
    return MeasuredProvider(provider_name, runtime, registry), model


def _provider(registry: ProviderRegistry, name: str, runtime: Any | None) -> Provider:
    """The provider ``name``; under ``--cache replay``, a built-in one whose key is not set is
    built without it, for keying only: replay never sends, so a run without keys (a fork's pull
    request) replays what was recorded, and a miss fails as a miss, not as a missing key."""
    try:
        return registry.get(name)
    except ProviderConfigError:
        cache = getattr(runtime, "cache", None)
        keyless = registry.keyless(name) if cache is not None and cache.mode == "replay" else None
        if keyless is None:
            raise
        return keyless


__all__ = [
    "MeasuredProvider",
    "ProviderError",
    "cache_request",
    "chat",
    "close_providers",
    "default_pricing",
    "registry_for",
    "resolve_provider",
    "settle",
    "to_messages",
]
