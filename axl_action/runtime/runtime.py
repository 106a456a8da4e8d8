"""The ``runtime`` object an eval's ``execute_workflow(input, runtime)`` receives.

It is the measurement rail: every provider call made through ``runtime.chat`` opens an
:class:`~axl_action.runtime.scope.Operation` in the current accounting scope, so the runner can
attribute spend to the item (and to its scorers) and enforce the run budget. Work the runtime
cannot see (an SDK called directly) can be declared with ``runtime.operation("external")``.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from axl_action.runtime.scope import Operation, open_operation

if TYPE_CHECKING:
    from axl_action.providers.types import ChatResponse


class Runtime:
    """The instrumented runtime (``instrumented = True``).

    ``pricing`` and ``capture`` are forwarded to the provider gateway; ``None`` means the
    gateway's defaults (built-in price table, no capture). ``cache`` is the response cache
    (:class:`axl_action.cache.ResponseCache`, docs/cache.md); ``None`` makes every call live.

    ``stream_usage`` (default on): the runner adds ``stream_options.include_usage`` to the
    application's streamed OpenAI chat requests that lack it, so their usage is reported
    (docs/app-as-is.md); off, such a call settles ``usage_missing``.
    """

    instrumented: bool = True

    def __init__(
        self,
        *,
        pricing: Any = None,
        providers: Mapping[str, Any] | None = None,
        cache: Any = None,
        stream_usage: bool = True,
    ) -> None:
        self.pricing = pricing
        self.providers = dict(providers or {})
        self.cache = cache
        self.stream_usage = stream_usage

    def with_cache(self, cache: Any) -> Runtime:
        """A runtime like this one with another cache (the CLI gives each ``--runs`` repeat its
        own, so each repeat has its own entries); pricing and providers are shared."""
        clone = type(self).__new__(type(self))
        clone.__dict__.update(self.__dict__)
        clone.cache = cache
        return clone

    def chat(self, model_uri: str, messages: Sequence[Any], **options: Any) -> ChatResponse:
        """One measured chat completion through the provider gateway (``provider:model``)."""
        gateway = importlib.import_module("axl_action.providers.gateway")
        response: ChatResponse = gateway.chat(model_uri, messages, runtime=self, **options)
        return response

    def resolve_provider(self, model_uri: str) -> Any:
        """The provider adapter and bare model name for ``model_uri`` (used by LLM judges)."""
        gateway = importlib.import_module("axl_action.providers.gateway")
        return gateway.resolve_provider(model_uri, runtime=self)

    def operation(self, kind: str = "external", *, model: str | None = None) -> Operation:
        """Open a declared operation in the current scope; settle it yourself.

        Prefer :meth:`declared` (a context manager) so that an operation that never reports
        a cost is recorded as ``external_unreported`` rather than ``abandoned``.
        """
        return open_operation(kind, model=model)

    @contextmanager
    def declared(self, kind: str = "external", *, model: str | None = None) -> Iterator[Operation]:
        """``with runtime.declared() as op: ...; op.settle(cost, usage, "caller_reported")``."""
        op = open_operation(kind, model=model)
        try:
            yield op
        except BaseException:
            op.unknown("usage_missing")
            raise
        op.unknown("external_unreported" if kind == "external" else "usage_missing")


class UninstrumentedRuntime(Runtime):
    """A runtime with no measurement rail (spec §5.1): every scope reports ``uninstrumented``.

    The runner detects it through ``instrumented = False`` and writes the fixed
    ``{uninstrumented: 1}`` records; a budget never receives spend on it.
    """

    instrumented = False
