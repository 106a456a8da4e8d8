"""The response cache: pay once for a model call (docs/cache.md).

* :mod:`~axl_action.cache.key`: the key, a pure function of the canonical request;
* :mod:`~axl_action.cache.entry`: what is kept for a reply, and the one rule of what may be;
* :mod:`~axl_action.cache.store`: the local directory store (atomic, capped, LRU, expiring);
* :mod:`~axl_action.cache.nearest`: the nearest recorded request for a replay miss;
* :mod:`~axl_action.cache.calls`: the modes, and what a run holds (:class:`ResponseCache`).
"""

from __future__ import annotations

from axl_action.cache.calls import (
    CACHE_MODES,
    CacheMode,
    ReplayMissError,
    ResponseCache,
    open_cache,
    parse_cache_mode,
)
from axl_action.cache.entry import CacheEntry, CertifiedCost, SettledReply, settle_reply
from axl_action.cache.errors import CacheError, CacheKeyError, CacheServiceError, NotCacheable
from axl_action.cache.key import GENERATION, CacheKey, CacheRequest, Purpose, cache_key, request_record
from axl_action.cache.nearest import NearestRequest, RequestIndex, diff_paths, nearest_request
from axl_action.cache.store import CacheStats, DirectoryStore, Served

__all__ = [
    "CACHE_MODES",
    "GENERATION",
    "CacheEntry",
    "CacheError",
    "CacheKey",
    "CacheKeyError",
    "CacheMode",
    "CacheRequest",
    "CacheServiceError",
    "CacheStats",
    "CertifiedCost",
    "DirectoryStore",
    "NearestRequest",
    "NotCacheable",
    "Purpose",
    "ReplayMissError",
    "RequestIndex",
    "ResponseCache",
    "Served",
    "SettledReply",
    "cache_key",
    "diff_paths",
    "nearest_request",
    "open_cache",
    "parse_cache_mode",
    "request_record",
    "settle_reply",
]
