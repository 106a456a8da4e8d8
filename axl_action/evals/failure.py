"""``describe_item_failure``: the structured cause of a failed item (spec §11)."""

from __future__ import annotations

import sys
from typing import Any

from axl_action.schema.numbers import finite_number

_MAX_DEPTH = 9  # nodes 0..8; the bound doubles as the cycle guard


def _name(node: BaseException) -> str:
    name = getattr(node, "name", None)
    return name if isinstance(name, str) and name else type(node).__name__


def _provider_like(node: BaseException) -> bool:
    # A ProviderError can only exist once its module is loaded: looking it up instead of
    # importing it keeps a run that calls no provider from importing the HTTP stack (requests
    # and the transports, ~70 ms) on its first failed item.
    errors = sys.modules.get("axl_action.providers.errors")
    if errors is not None and isinstance(node, errors.ProviderError):
        return True
    return getattr(node, "code", None) == "PROVIDER_ERROR" and _name(node) == "ProviderError"


def _next(node: BaseException) -> Any:
    cause = node.__cause__
    if cause is None:
        cause = getattr(node, "cause", None)
    return cause


def describe_item_failure(thrown: object) -> dict[str, Any] | None:
    """``{name, provider?, status?, retryable?, requestId?}`` of the first provider-like error
    in the ``__cause__`` chain, else ``{name}`` of the thrown error, else ``None``.
    """
    current: Any = thrown
    for _ in range(_MAX_DEPTH):
        if not isinstance(current, BaseException):
            break
        if _provider_like(current):
            out: dict[str, Any] = {"name": _name(current)}
            provider = getattr(current, "provider", None)
            if isinstance(provider, str):
                out["provider"] = provider
            status = getattr(current, "status", None)
            if finite_number(status):
                out["status"] = status
            retryable = getattr(current, "retryable", None)
            if isinstance(retryable, bool):
                out["retryable"] = retryable
            request_id = getattr(current, "request_id", getattr(current, "requestId", None))
            if isinstance(request_id, str):
                out["requestId"] = request_id
            return out
        current = _next(current)
    if isinstance(thrown, BaseException):
        return {"name": _name(thrown)}
    return None
