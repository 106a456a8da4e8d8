"""Model URIs (``provider:model``) and the registry of provider factories."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Mapping
from typing import NamedTuple

import axl_action.providers.anthropic as anthropic
import axl_action.providers.google as google
import axl_action.providers.mock as mock
import axl_action.providers.openai as openai
from axl_action.providers.base import Closing, Provider
from axl_action.providers.errors import ProviderConfigError

ProviderFactory = Callable[[Mapping[str, str]], Provider]
"""Builds a provider from environment variables (called once, on first use)."""

BUILTIN_ENV: dict[str, tuple[str, ...]] = {
    cls.name: cls.env_vars()
    for cls in (openai.OpenAIProvider, anthropic.AnthropicProvider, google.GoogleProvider)
}
"""The variables each built-in provider is configured from."""


class _Built(NamedTuple):
    """A provider instance the registry holds, with what decides whether it is still current."""

    signature: tuple[str | None, ...]
    """The watched variables' values it was built from (a change rebuilds it)."""
    provider: Provider
    owned: bool
    """Built by the registry from a factory, so the registry closes it; a ready instance given
    to :meth:`ProviderRegistry.register` belongs to the caller, who closes it."""


def close_provider(provider: Provider) -> None:
    """Close ``provider`` if it has a ``close()`` (built-in HTTP providers do; the
    :class:`Provider` protocol does not require one)."""
    close = getattr(provider, "close", None)
    if callable(close):
        close()


def parse_model_uri(uri: str) -> tuple[str, str]:
    """Split ``provider:model`` at the first colon (model names may contain colons, e.g.
    Ollama's ``openai:llama3:8b``)."""
    provider, sep, model = uri.partition(":")
    if not sep or not provider.strip() or not model.strip():
        raise ProviderConfigError(
            f'Model "{uri}" is not a model URI',
            hint="write it as provider:model, e.g. openai:gpt-4o-mini or anthropic:claude-sonnet-4-5",
        )
    return provider.strip(), model.strip()


class ProviderRegistry(Closing):
    """Factories by provider name, and the instances built from them (one per name, reused
    so connection pools are shared across calls and threads).

    The registry owns what it builds: an instance replaced (by :meth:`register`, or rebuilt
    because its variables changed) is closed, and :meth:`close` (or leaving a ``with`` block)
    closes every instance built so far. Ready instances passed to :meth:`register` are the
    caller's to close.
    """

    def __init__(self, env: Mapping[str, str] | None = None, *, builtins: bool = True) -> None:
        """``env`` defaults to the live ``os.environ`` (read when a provider is first used)."""
        self._env = env
        self._factories: dict[str, ProviderFactory] = {}
        self._instances: dict[str, _Built] = {}
        self._watched: dict[str, tuple[str, ...]] = {}
        self._lock = threading.Lock()
        self._keyless: dict[str, ProviderFactory] = {}
        if builtins:
            self._keyless.update(
                {
                    "openai": openai.OpenAIProvider.for_keying,
                    "anthropic": anthropic.AnthropicProvider.for_keying,
                    "google": google.GoogleProvider.for_keying,
                }
            )
            self._watched.update(BUILTIN_ENV)
            self._factories.update(
                {
                    "openai": openai.from_env,
                    "anthropic": anthropic.from_env,
                    "google": google.from_env,
                    "mock": mock.from_env,
                }
            )

    def keyless(self, name: str) -> Provider | None:
        """A built-in HTTP provider without its key, for keying replayed calls only
        (:meth:`HttpProvider.for_keying`); ``None`` for any other provider."""
        builder = self._keyless.get(name)
        if builder is None:
            return None
        return builder(self._env if self._env is not None else os.environ)

    def register(self, name: str, factory: ProviderFactory | Provider) -> None:
        """Add or replace a provider; accepts a factory or a ready provider instance."""
        if not name or ":" in name:
            raise ProviderConfigError(f'Provider name "{name}" is invalid', hint="use a name without ':'")
        with self._lock:
            replaced = self._instances.pop(name, None)
            self._watched.pop(name, None)
            self._keyless.pop(name, None)  # a user's provider replaces the built-in one
            if isinstance(factory, Provider):
                self._instances[name] = _Built((), factory, owned=False)
                self._factories[name] = _constant(factory)
            else:
                self._factories[name] = factory
        if replaced is not None and replaced.owned and replaced.provider is not factory:
            close_provider(replaced.provider)

    def names(self) -> list[str]:
        """Registered provider names, sorted."""
        with self._lock:
            return sorted(self._factories)

    def get(self, name: str) -> Provider:
        """The provider called ``name``, built on first use."""
        env = self._env if self._env is not None else os.environ
        # A built-in provider is rebuilt when its variables change (tests and long-lived
        # processes switch base URLs or keys); otherwise the instance, and its connection pool,
        # is reused.
        signature = tuple(env.get(var) for var in self._watched.get(name, ()))
        with self._lock:
            cached = self._instances.get(name)
            if cached is not None and cached.signature == signature:
                return cached.provider
            factory = self._factories.get(name)
            if factory is None:
                known = ", ".join(sorted(self._factories))
                # The list is in the message, not only the hint: the message is what an item's
                # error and the run's console show.
                raise ProviderConfigError(
                    f'Unknown provider "{name}": use one of {known}',
                    hint="or register_provider() a custom one",
                )
            instance = factory(env)
            self._instances[name] = _Built(signature, instance, owned=True)
        if cached is not None and cached.owned and cached.provider is not instance:
            # Its idle connections would otherwise wait for the garbage collector. A call still
            # running on it in another thread finishes; only the idle connections close.
            close_provider(cached.provider)
        return instance

    def close(self) -> None:
        """Close and forget every provider this registry built (their idle connections close);
        the registry stays usable, and builds a provider again when one is next asked for."""
        with self._lock:
            built = [name for name, entry in self._instances.items() if entry.owned]
            closing = [self._instances.pop(name).provider for name in built]
        for provider in closing:
            close_provider(provider)

    def resolve(self, uri: str) -> tuple[Provider, str]:
        """The provider and bare model name for ``provider:model``."""
        provider_name, model = parse_model_uri(uri)
        return self.get(provider_name), model


def _constant(provider: Provider) -> ProviderFactory:
    def factory(env: Mapping[str, str]) -> Provider:
        return provider

    return factory


default_registry = ProviderRegistry()
"""The process-wide registry the gateway uses unless given another."""


def register_provider(name: str, factory: ProviderFactory | Provider) -> None:
    """Register a custom provider (or replace a built-in) in the default registry."""
    default_registry.register(name, factory)
