"""Errors of the response cache.

    AxlError
    ├── CacheError                  the local cache directory or a cache input is unusable
    │   ├── CacheKeyError           a request that has no canonical form (NaN, a non-JSON value)
    │   └── NotCacheable            a reply the cache refuses to keep (error, cut off, refused, no usage)
    └── GitHubError
        └── CacheServiceError       the GitHub Actions cache service refused or failed

A damaged entry on disk is not an error: it is a miss with one warning per run (see
:mod:`axl_action.cache.store`). ``NotCacheable`` is raised by :func:`settle_reply`; callers that
only want to *try* to cache catch it and carry on with the live reply.
"""

from __future__ import annotations

from typing import Literal

from axl_action.errors import AxlError
from axl_action.github.errors import CacheServiceError

NotCacheableReason = Literal["error", "cut_off", "refused", "no_usage"]


class CacheError(AxlError):
    """The cache directory cannot be used, or a value given to the cache is not valid."""

    code = "CACHE"


class CacheKeyError(CacheError):
    """A request that cannot be keyed: a number that is not finite, a value that is not JSON."""

    code = "CACHE_KEY"


class NotCacheable(CacheError):
    """A reply that must never be served from the cache (the four rules of ``settle_reply``)."""

    code = "NOT_CACHEABLE"

    def __init__(self, reason: NotCacheableReason, message: str) -> None:
        super().__init__(message)
        self.reason: NotCacheableReason = reason
        """``error`` (non-2xx), ``cut_off`` (2xx body incomplete), ``refused`` (the call or the
        model refused), ``no_usage`` (nothing to certify the cost with)."""


__all__ = ["CacheError", "CacheKeyError", "CacheServiceError", "NotCacheable", "NotCacheableReason"]
