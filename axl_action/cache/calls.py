"""The cache in front of a measured call: which mode reads, which writes, and what a replay
miss says (docs/cache.md).

``ResponseCache`` is what a run holds: a mode, a store and the ``--runs`` repeat index. The
gateway (``providers/gateway.py``) asks it before it opens an operation and hands it the
settled reply afterwards; everything about *when* a reply may be stored is the one rule of
:func:`axl_action.cache.entry.settle_reply`.

=========  =====  ======  ==========================================================
mode       reads  writes  fits
=========  =====  ======  ==========================================================
``off``    no     no      the default: every call is live
``read``   yes    no      a pull request reading what the default branch recorded
``write``  no     yes     recording a fresh cache (every call live, every reply kept)
``on``     yes    yes     temperature-0 suites: pay once for an unchanged call
``replay`` yes    no      deterministic CI of the scoring code: never a live call; a
                          miss fails the item and names the nearest recorded request
=========  =====  ======  ==========================================================
"""

from __future__ import annotations

import dataclasses
from contextvars import ContextVar
from pathlib import Path
from typing import Literal, get_args

from axl_action.cache.errors import CacheError
from axl_action.cache.key import CacheRequest, cache_key, request_record
from axl_action.cache.store import DirectoryStore

CacheMode = Literal["off", "read", "write", "on", "replay"]
CACHE_MODES: tuple[str, ...] = get_args(CacheMode)
DEFAULT_CACHE_DIR = ".axl-cache"
"""Where the CLI keeps the cache when ``--cache-dir`` is not given (relative to the cwd)."""


ITEM_REPEAT: ContextVar[int] = ContextVar("axl_item_repeat", default=0)
"""The per-item repeat (``repeats: N``) whose calls are being made: the runner sets it around
each repeat, and every key includes it, so each repeat has its own entries (a repeat is a
fresh sample, never the first repeat's reply served again)."""


class ReplayMissError(CacheError):
    """``--cache replay`` found no recorded reply for a call (the item fails; nothing is paid)."""

    code = "CACHE_REPLAY_MISS"


def parse_cache_mode(raw: str, *, where: str = "--cache") -> CacheMode:
    """``raw`` as a mode, or one error naming the modes."""
    value = raw.strip().lower()
    if value not in CACHE_MODES:
        raise CacheError(
            f'{where}: "{raw}" is not a cache mode',
            hint=f"use one of {', '.join(CACHE_MODES)} (docs/cache.md)",
        )
    return value  # type: ignore[return-value]


@dataclasses.dataclass(frozen=True)
class ResponseCache:
    """A run's cache: mode, store and the repeat index each key includes."""

    mode: CacheMode
    store: DirectoryStore
    repeat: int = 0

    @property
    def reads(self) -> bool:
        """True when a recorded reply is served instead of a live call."""
        return self.mode in ("read", "on", "replay")

    @property
    def writes(self) -> bool:
        """True when live replies are stored."""
        return self.mode in ("write", "on")

    def at_repeat(self, repeat: int) -> ResponseCache:
        """The same cache for repeat ``repeat`` of ``--runs`` (each repeat has its own entries)."""
        return dataclasses.replace(self, repeat=repeat)

    def keyed(self, request: CacheRequest) -> tuple[str, CacheRequest]:
        """The key of ``request`` at this cache's repeat, and the request as keyed. Its redacted
        record (:func:`~axl_action.cache.key.request_record`) is made only when a miss needs it:
        redaction is most of a hit's cost otherwise."""
        item_repeat = ITEM_REPEAT.get()
        keyed = (
            request
            if request.repeat == self.repeat and request.item_repeat == item_repeat
            else request.model_copy(update={"repeat": self.repeat, "item_repeat": item_repeat})
        )
        return cache_key(keyed), keyed

    def replay_miss(self, request: CacheRequest, what: str) -> ReplayMissError:
        """The error of a replay miss: what was asked, the nearest recorded request and the
        fields that differ."""
        nearest = self.store.nearest(request_record(request))
        found = nearest.describe() if nearest is not None else f"the cache at {self.store.root} is empty"
        return ReplayMissError(
            f"--cache replay: no recorded reply for {what}; {found}",
            hint="record it first with --cache on or --cache write, or run without --cache replay",
        )


def open_cache(mode: CacheMode, directory: str | Path | None) -> ResponseCache | None:
    """The run's cache, or ``None`` for ``off`` (no directory is created then)."""
    if mode == "off":
        return None
    return ResponseCache(mode=mode, store=DirectoryStore(Path(directory or DEFAULT_CACHE_DIR)))


__all__ = [
    "CACHE_MODES",
    "DEFAULT_CACHE_DIR",
    "CacheMode",
    "ReplayMissError",
    "ResponseCache",
    "open_cache",
    "parse_cache_mode",
]
