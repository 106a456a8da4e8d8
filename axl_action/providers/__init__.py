"""LLM providers: HTTP adapters, the measured gateway, pricing, judges' facade, request capture.

Public API::

    from axl_action.providers import register_provider, MockProvider, PricingTable, ProviderError

The names are loaded on first use (PEP 562): a run that calls no model (deterministic scorers,
``axl-eval compare``) reads the price table, and importing ``providers.pricing`` must not pull
in the HTTP adapters, requests and the transports behind them (about 0.2 s).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from axl_action.lazy import kept_lazy_attributes

if TYPE_CHECKING:
    from axl_action.providers.base import Provider
    from axl_action.providers.errors import ProviderConfigError, ProviderError
    from axl_action.providers.mock import MockProvider
    from axl_action.providers.pricing import ModelPrice, PricingTable
    from axl_action.providers.registry import ProviderRegistry, parse_model_uri, register_provider
    from axl_action.providers.types import CallTiming, ChatMessage, ChatRequest, ChatResponse, TokenUsage

_HOME = {
    "CallTiming": ".types",
    "ChatMessage": ".types",
    "ChatRequest": ".types",
    "ChatResponse": ".types",
    "MockProvider": ".mock",
    "ModelPrice": ".pricing",
    "PricingTable": ".pricing",
    "Provider": ".base",
    "ProviderConfigError": ".errors",
    "ProviderError": ".errors",
    "ProviderRegistry": ".registry",
    "TokenUsage": ".types",
    "parse_model_uri": ".registry",
    "register_provider": ".registry",
}

__all__ = [
    "CallTiming",
    "ChatMessage",
    "ChatRequest",
    "ChatResponse",
    "MockProvider",
    "ModelPrice",
    "PricingTable",
    "Provider",
    "ProviderConfigError",
    "ProviderError",
    "ProviderRegistry",
    "TokenUsage",
    "parse_model_uri",
    "register_provider",
]

__getattr__ = kept_lazy_attributes(__name__, _HOME, globals())
