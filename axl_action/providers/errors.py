"""Errors raised by provider adapters and the gateway.

``ProviderError`` mirrors the core ``ProviderError`` fields the runner copies into
``item.failure`` (spec §11): ``name``, ``provider``, ``status`` (0 = network level),
``retryable`` and ``request_id``. Its message is scrubbed of secrets on construction, so no
code path can put an API key into a log line, a result file or a capture record through it.
"""

from __future__ import annotations

from collections.abc import Iterable

from axl_action.errors import AxlError
from axl_action.providers.redact import redact_secrets
from axl_action.providers.types import WireExchange


class ProviderError(AxlError):
    """An LLM provider call that failed for good (after any retries)."""

    name = "ProviderError"
    code = "PROVIDER_ERROR"

    def __init__(
        self,
        message: str,
        *,
        provider: str,
        status: int = 0,
        retryable: bool = False,
        request_id: str | None = None,
        attempts: int = 0,
        dispatched: bool = True,
        hint: str | None = None,
        secrets: Iterable[str] = (),
        exchange: WireExchange | None = None,
    ) -> None:
        extra = tuple(secrets)
        super().__init__(redact_secrets(message, extra), hint=redact_secrets(hint, extra) if hint else None)
        self.provider = provider
        self.status = status
        self.retryable = retryable
        self.request_id = request_id
        self.attempts = attempts
        self.dispatched = dispatched
        """Whether at least one attempt left the process (it may have been billed)."""
        self.exchange = exchange

    def with_note(self, note: str) -> ProviderError:
        """The same error with ``note`` added to its message (where the request went)."""
        out = ProviderError(
            f"{self.message}{note}",
            provider=self.provider,
            status=self.status,
            retryable=self.retryable,
            request_id=self.request_id,
            attempts=self.attempts,
            dispatched=self.dispatched,
            hint=self.hint,
            exchange=self.exchange,
        )
        out.__cause__ = self.__cause__
        return out

    @property
    def requestId(self) -> str | None:
        """Alias of ``request_id`` under the name the TS runner reads (spec §11)."""
        return self.request_id

    def __repr__(self) -> str:
        return (
            f"ProviderError(provider={self.provider!r}, status={self.status}, "
            f"retryable={self.retryable}, request_id={self.request_id!r}, message={self.message!r})"
        )


class ProviderConfigError(AxlError):
    """A model URI or provider setup that cannot work (unknown provider, missing API key)."""

    code = "PROVIDER_CONFIG"
