"""The nearest recorded request, and the JSON paths where it differs from a missed one.

When ``replay`` misses, the message names the recorded request closest to the one asked for
and the fields that differ (``body.temperature``, ``repeat``, ``purpose.prompt``...), so a
miss says *why* it missed instead of "not found".

Distance is the size of the symmetric difference between two requests' **leaf features**: a
feature is one leaf of the canonical record (its JSON path and value, hashed to 64 bits), so
changing the temperature changes one feature on each side (distance 2), and adding a tool adds
its leaves. Finding the minimum over 100,000 records does not compare records one by one:

* :class:`RequestIndex` keeps every (feature, record) pair in two flat arrays. On the first
  query after a change it sorts them once by feature (numpy ``argsort``, O(P log P) for P
  pairs, about 20 per record);
* a query looks up each of its own features with a binary search (``searchsorted``), which
  yields the records sharing it, and counts shared features per record with one ``bincount``.
  ``distance = |query| + |record| - 2 * shared`` is then a vector operation and the best
  candidates come from ``argpartition``. The cost is O(F log P + matches), F the query's
  features: a few milliseconds at 100k records (``benchmarks/cache_store.py``).

Only the winner's full record is read to compute the differing paths exactly
(:func:`diff_paths`); the hashes only choose it. A hash collision or a stale index entry can
therefore only pick a worse suggestion, never report a false difference.
"""

from __future__ import annotations

import hashlib
import threading
from array import array
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import orjson

MAX_DIFF_PATHS = 20
"""At most this many differing paths are listed (the count of the rest is kept)."""


def request_features(record: Mapping[str, Any]) -> list[int]:
    """The leaf features of a canonical request record (64-bit hashes of path + value)."""
    return [_feature(path, value) for path, value in _leaves(record, "")]


def _feature(path: str, value: Any) -> int:
    digest = hashlib.blake2b(
        path.encode() + b"\0" + orjson.dumps(value, option=orjson.OPT_SORT_KEYS), digest_size=8
    ).digest()
    return int.from_bytes(digest, "little")


def _leaves(value: Any, path: str) -> Iterator[tuple[str, Any]]:
    if isinstance(value, Mapping):
        if not value:
            yield path, {}
        for k in sorted(value):
            yield from _leaves(value[k], f"{path}.{k}" if path else k)
    elif isinstance(value, list):
        if not value:
            yield path, []
        for i, v in enumerate(value):
            yield from _leaves(v, f"{path}[{i}]")
    else:
        yield path, value


def diff_paths(a: Any, b: Any, path: str = "") -> list[str]:
    """The JSON paths where ``a`` and ``b`` differ, in document order (a subtree present on
    one side only is one path)."""
    out: list[str] = []
    _diff(a, b, path, out)
    return out


def _diff(a: Any, b: Any, path: str, out: list[str]) -> None:
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        for k in sorted(set(a) | set(b)):
            sub = f"{path}.{k}" if path else k
            if k not in a or k not in b:
                out.append(sub)
            else:
                _diff(a[k], b[k], sub, out)
    elif isinstance(a, list) and isinstance(b, list):
        for i in range(max(len(a), len(b))):
            if i >= len(a) or i >= len(b):
                out.append(f"{path}[{i}]")
            else:
                _diff(a[i], b[i], f"{path}[{i}]", out)
    elif type(a) is not type(b) or a != b:
        out.append(path or "(top level)")


class RequestIndex:
    """Leaf features of recorded requests, searchable for the nearest one (see the module doc).
    Thread-safe: ``add`` and ``candidates`` take one lock."""

    def __init__(self) -> None:
        self._keys: list[str] = []
        self._slot: dict[str, int] = {}
        self._sizes = array("I")
        self._pair_features = array("Q")
        self._pair_records = array("I")
        self._built: tuple[Any, Any, Any] | None = None
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._slot)

    def add(self, key: str, features: list[int]) -> None:
        """Record ``key``'s features (a key added again replaces nothing: its first record wins,
        as entries are immutable per key)."""
        with self._lock:
            if key in self._slot:
                return
            slot = len(self._keys)
            self._slot[key] = slot
            self._keys.append(key)
            self._sizes.append(len(features))
            self._pair_features.extend(features)
            self._pair_records.extend([slot] * len(features))
            self._built = None

    def _build(self) -> tuple[Any, Any, Any]:
        if self._built is None:
            # Copies, not views: an array.array that exports its buffer cannot grow.
            features = np.array(self._pair_features, dtype=np.uint64)
            records = np.array(self._pair_records, dtype=np.uint32)
            order = np.argsort(features, kind="stable")
            self._built = (features[order], records[order], np.array(self._sizes, dtype=np.int64))
        return self._built

    def candidates(self, features: list[int], *, limit: int = 8) -> list[tuple[str, int]]:
        """Up to ``limit`` recorded keys nearest to ``features``, with their distances, best first."""
        with self._lock:
            if not self._keys:
                return []
            sorted_features, sorted_records, sizes = self._build()
            keys = self._keys
        query = np.unique(np.asarray(features, dtype=np.uint64))
        lo = np.searchsorted(sorted_features, query, side="left")
        hi = np.searchsorted(sorted_features, query, side="right")
        hits = [sorted_records[a:b] for a, b in zip(lo.tolist(), hi.tolist(), strict=True) if b > a]
        shared = (
            np.bincount(np.concatenate(hits), minlength=len(sizes))
            if hits
            else np.zeros(len(sizes), dtype=np.int64)
        )
        distance = len(query) + sizes - 2 * shared.astype(np.int64)
        k = min(limit, len(distance))
        best = np.argpartition(distance, k - 1)[:k]
        best = best[np.lexsort((best, distance[best]))]
        return [(keys[int(i)], int(distance[int(i)])) for i in best]


@dataclass(frozen=True)
class NearestRequest:
    """The recorded request closest to a missed one."""

    key: str
    """Its cache key."""
    record: dict[str, Any]
    """Its redacted canonical record."""
    differences: list[str]
    """JSON paths where it differs from the missed request (at most :data:`MAX_DIFF_PATHS`)."""
    more: int
    """How many further differing paths were left out of ``differences``."""

    def describe(self) -> str:
        """One line for a replay-miss message."""
        listed = ", ".join(self.differences) or "nothing (same canonical request)"
        tail = f" and {self.more} more" if self.more else ""
        return f"nearest recorded request {self.key[:12]} differs at {listed}{tail}"


def nearest_request(
    record: Mapping[str, Any],
    index: RequestIndex,
    load: Callable[[str], Mapping[str, Any] | None],
    *,
    attempts: int = 8,
) -> NearestRequest | None:
    """The nearest recorded request to ``record`` and the paths that differ, or ``None`` when
    nothing is recorded. ``load(key)`` returns a recorded request (``None`` when its entry is
    gone or damaged: the next candidate is tried)."""
    for key, _distance in index.candidates(request_features(record), limit=attempts):
        found = load(key)
        if found is None:
            continue
        paths = diff_paths(found, record)
        return NearestRequest(
            key=key,
            record=dict(found),
            differences=paths[:MAX_DIFF_PATHS],
            more=max(0, len(paths) - MAX_DIFF_PATHS),
        )
    return None


__all__ = [
    "MAX_DIFF_PATHS",
    "NearestRequest",
    "RequestIndex",
    "diff_paths",
    "nearest_request",
    "request_features",
]
