"""LLM providers: HTTP adapters, the measured gateway, pricing, judges' facade, request capture.

Public API::

    from axl_action.providers import register_provider, MockProvider, PricingTable, ProviderError
"""

from __future__ import annotations

from axl_action.providers.base import Provider
from axl_action.providers.errors import ProviderConfigError, ProviderError
from axl_action.providers.mock import MockProvider
from axl_action.providers.pricing import ModelPrice, PricingTable
from axl_action.providers.registry import ProviderRegistry, parse_model_uri, register_provider
from axl_action.providers.types import CallTiming, ChatMessage, ChatRequest, ChatResponse, TokenUsage

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
