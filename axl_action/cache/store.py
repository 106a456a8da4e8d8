"""The local directory store: content-addressed entry files under one directory.

Layout (``root`` is the cache directory)::

    root/axl-cache.json          {"format": 1}: refuses a directory of an unknown future layout
    root/CACHEDIR.TAG            the standard tag, so backup tools skip the directory
    root/entries/ab/cd/<key>     one entry per key: two levels of fan-out by the key's first
                                 four hex digits (65,536 leaf directories; 100k entries is about
                                 1.5 files per directory, so no directory grows large)
    root/tmp/                    files being written (renamed into entries/ when whole)
    root/usage                   "<bytes> <count>": the running total, updated under flock
    root/index.log               append-only leaf features for the nearest-request search

**Atomic writes.** An entry is written to ``tmp/`` and renamed over its final name
(``os.replace``), so a reader sees the old file, the new file or no file, never a torn one;
two processes storing the same key both succeed and the last rename wins (both wrote the
same reply for the same request, so either is right). **Fsync policy: none.** A cache is a
cache: after a power loss an entry written just before may be missing, empty or partial, and
the checksum every read verifies turns that into a miss. Fsyncing every entry would cost a
disk flush per model call (milliseconds; 10,000 calls would wait seconds for nothing).

**Reads verify.** An entry file starts with the SHA-256 of its content and holds its own
key; a read checks both. A file that fails (damaged, truncated, unreadable, another key's
entry, an unknown layout) is a miss: the first one of a run logs ONE warning naming the
file, later ones are only counted (:attr:`CacheStats.damaged`). The file is removed so it is
not tried again. Never a crash, never a wrong answer.

**Size cap and LRU.** A hit sets the file's modification time to now (unless it was set in
the last minute), so mtime is the time of last use, to a minute. The store keeps the total size in ``usage`` (updated under an ``flock`` by every
process); when a write takes it over ``max_bytes``, one process (a non-blocking lock on
``evict.lock`` picks it) scans the entries, removes the least recently used until the total is
at most ``low_water`` (90 %) of the cap, and rewrites ``usage`` from what it saw, which also
corrects any drift left by a crashed writer. The margin makes scans rare: after one, the next
is at least 10 % of the cap of new writes away.

**Expiry.** An entry older than ``max_age`` since it was *made* is a miss and is removed:
prices and model aliases move, and a reply from months ago is not the model of today.

**Single flight.** :meth:`DirectoryStore.get_or_compute` lets one thread of a process make
the call for a missing key while the others asking for it wait and then read the entry; if
the first call fails (or its reply may not be cached), the next waiter makes its own call.
Across processes two calls may happen, and both store the same key atomically.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import logging
import os
import struct
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Generic, TypeVar

import orjson

from axl_action.atomic import write_atomic
from axl_action.cache.entry import CacheEntry, DamagedEntry, SettledReply, decode_entry, encode_entry
from axl_action.cache.errors import CacheError
from axl_action.cache.key import CacheKey, is_cache_key
from axl_action.cache.nearest import NearestRequest, RequestIndex, nearest_request, request_features

log = logging.getLogger("axl_action.cache")

STORE_FORMAT = 1
"""Version of the directory layout (``axl-cache.json``)."""
DEFAULT_MAX_BYTES = 1024**3
"""Default size cap: 1 GiB."""
DEFAULT_MAX_AGE = timedelta(days=30)
"""Default expiry: entries made more than 30 days ago are misses."""
LOW_WATER = 0.9
"""An eviction pass stops once the total is at most this fraction of the cap."""
TOUCH_SECONDS = 60.0
"""A hit marks its entry as used (mtime) only when the last mark is older than this."""
STALE_TMP_SECONDS = 3600.0
"""Files in ``tmp/`` older than this are leftovers of a crashed writer and are removed."""

_LOG_RECORD = struct.Struct("<32sH")
_CACHEDIR_TAG = (
    b"Signature: 8a477f597d28d172789f06886806bc55\n"
    b"# This file is a cache directory tag created by axl-eval (the response cache).\n"
    b"# For information about cache directory tags see https://bford.info/cachedir/\n"
)

T = TypeVar("T")


@dataclass
class CacheStats:
    """What the store did in this process (a snapshot is returned by :attr:`DirectoryStore.stats`)."""

    hits: int = 0
    misses: int = 0
    expired: int = 0
    """Misses because the entry was older than ``max_age``."""
    damaged: int = 0
    """Misses because the entry file failed its checks (one warning per run)."""
    stored: int = 0
    write_errors: int = 0
    """Entries that could not be written (disk full, read-only...): one warning per run."""
    evicted: int = 0
    waited: int = 0
    """Lookups that waited for another thread's call to the same key (single flight)."""


@dataclass
class Served(Generic[T]):
    """The outcome of :meth:`DirectoryStore.get_or_compute`."""

    entry: CacheEntry | None
    """The entry served (a hit) or stored (a call that could be cached); ``None`` when the call
    made here could not be cached."""
    value: T | None = None
    """What ``compute`` returned, when this thread made the call; ``None`` on a hit."""
    hit: bool = False
    """True when the reply came from the store."""


@dataclass
class _Flight:
    done: threading.Event = field(default_factory=threading.Event)


def _read_whole(path: str) -> tuple[bytes, float]:
    """The bytes of the file at ``path`` and its mtime, in one ``open``, one ``fstat`` and
    (nearly always) one ``read``: a hit's own cost beside the file system's. An entry file
    never changes once it is in place (it is renamed there whole), so its size at the
    ``fstat`` is its size; a short read is read on until the end all the same."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_BINARY", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        stat = os.fstat(fd)
        data = os.read(fd, stat.st_size + 1)
        while len(data) <= stat.st_size:
            more = os.read(fd, stat.st_size + 1 - len(data))
            if not more:
                break
            data += more
        return data, stat.st_mtime
    finally:
        os.close(fd)


class DirectoryStore:
    """Entries in a local directory (see the module docstring for layout and guarantees).

    Args:
        root: the cache directory (created if missing).
        max_bytes: the size cap; least recently used entries are evicted above it.
        max_age: entries made longer ago are misses; ``None`` keeps them forever.
        clock: the current UNIX time (tests pass a fake one).
        warn: called with the one warning per kind per run (damaged entry, failed write);
            defaults to the ``axl_action.cache`` logger.
    """

    def __init__(
        self,
        root: str | os.PathLike[str],
        *,
        max_bytes: int = DEFAULT_MAX_BYTES,
        max_age: timedelta | None = DEFAULT_MAX_AGE,
        clock: Callable[[], float] = time.time,
        warn: Callable[[str], None] | None = None,
    ) -> None:
        if max_bytes <= 0:
            raise CacheError(f"The cache size cap must be positive, got {max_bytes} bytes")
        self.root = Path(root)
        self.max_bytes = max_bytes
        self.max_age = max_age
        self.clock = clock
        self._warn = warn or log.warning
        self._entries = self.root / "entries"
        # The entries folder as a string ending in a separator: every lookup builds its path
        # from it by concatenation, where three pathlib joins cost a fifth of a hit.
        self._entries_prefix = os.path.join(self._entries, "")
        self._tmp = self.root / "tmp"
        self._lock = threading.Lock()
        self._flights: dict[str, _Flight] = {}
        self._warned: set[str] = set()
        self._stats = CacheStats()
        self._index: RequestIndex | None = None
        self._open()

    def __repr__(self) -> str:
        return f"DirectoryStore({str(self.root)!r}, max_bytes={self.max_bytes})"

    # -- setup --------------------------------------------------------------------------------

    def _open(self) -> None:
        marker = self.root / "axl-cache.json"
        try:
            if self.root.exists() and not self.root.is_dir():
                raise CacheError(
                    f"The cache directory {self.root} is a file, not a directory",
                    hint="point the cache at a directory (it is created if missing)",
                )
            self._tmp.mkdir(parents=True, exist_ok=True)
            self._entries.mkdir(exist_ok=True)
            if marker.exists():
                try:
                    found = orjson.loads(marker.read_bytes()).get("format")
                except (orjson.JSONDecodeError, AttributeError):
                    found = None
                if found != STORE_FORMAT:
                    raise CacheError(
                        f"The cache directory {self.root} has layout {found!r}; this version reads "
                        f"layout {STORE_FORMAT}",
                        hint="use another cache directory, or delete this one to start cold",
                    )
            else:
                self._write_atomic(marker, orjson.dumps({"format": STORE_FORMAT}))
                tag = self.root / "CACHEDIR.TAG"
                if not tag.exists():
                    self._write_atomic(tag, _CACHEDIR_TAG)
        except OSError as exc:
            raise CacheError(
                f"Cannot use {self.root} as the cache directory: {exc.strerror or exc}",
                hint="pick a writable directory",
            ) from None

    # -- paths ----------------------------------------------------------------------------------

    def path_of(self, key: str) -> Path:
        """Where the entry of ``key`` lives (two levels of fan-out)."""
        return Path(self._entry_path(key))

    def _entry_path(self, key: str) -> str:
        return f"{self._entries_prefix}{key[:2]}{os.sep}{key[2:4]}{os.sep}{key}"

    def _write_atomic(self, final: Path, data: bytes) -> None:
        write_atomic(final, data, tmp_dir=self._tmp)

    # -- reading --------------------------------------------------------------------------------

    @property
    def stats(self) -> CacheStats:
        """Counters of this process (a copy)."""
        with self._lock:
            return CacheStats(**vars(self._stats))

    def get(self, key: CacheKey | str) -> CacheEntry | None:
        """The entry of ``key``, or ``None`` (missing, expired or damaged: see the module doc).
        A hit marks the entry as just used."""
        entry = self._lookup(key)
        self._count("hits" if entry is not None else "misses")
        return entry

    def _lookup(self, key: str) -> CacheEntry | None:
        found = self._read_with_mtime(key)
        if found is None:
            return None
        entry, mtime = found
        now = self.clock()
        if self.max_age is not None and now - entry.made_at.timestamp() > self.max_age.total_seconds():
            self._remove(key)
            self._count("expired")
            return None
        # mtime = last use, for LRU eviction, to TOUCH_SECONDS: an entry used in the last minute
        # is not touched again (a syscall that writes metadata is a fifth of a hit's cost, and
        # eviction cannot tell a minute apart among entries used over days). An entry evicted
        # by another process in between was still read whole.
        if now - mtime > TOUCH_SECONDS:
            with contextlib.suppress(OSError):
                os.utime(self._entry_path(key), (now, now))
        return entry

    def _read(self, key: str) -> CacheEntry | None:
        found = self._read_with_mtime(key)
        return found[0] if found is not None else None

    def _read_with_mtime(self, key: str) -> tuple[CacheEntry, float] | None:
        if not is_cache_key(key):
            raise CacheError(f"{key!r} is not a cache key", hint="keys come from axl_action.cache.cache_key")
        path = self._entry_path(key)
        try:
            data, mtime = _read_whole(path)
        except FileNotFoundError:
            return None
        except OSError as exc:
            self._damaged(key, Path(path), f"it cannot be read ({exc.strerror or exc})")
            return None
        try:
            return decode_entry(data, key), mtime
        except DamagedEntry as exc:
            self._damaged(key, Path(path), str(exc))
            self._remove(key)
            return None

    def _damaged(self, key: str, path: Path, why: str) -> None:
        self._count("damaged")
        self._warn_once(
            "damaged",
            f"Response cache: the entry {path} is damaged: {why}. It is treated as a miss (the call is "
            "made again); further damaged entries in this run are counted, not reported.",
        )

    def _warn_once(self, kind: str, message: str) -> None:
        with self._lock:
            if kind in self._warned:
                return
            self._warned.add(kind)
        self._warn(message)

    def _count(self, name: str, n: int = 1) -> None:
        with self._lock:
            setattr(self._stats, name, getattr(self._stats, name) + n)

    # -- writing --------------------------------------------------------------------------------

    def put(
        self,
        key: CacheKey | str,
        request: Mapping[str, Any],
        reply: SettledReply,
        *,
        made_at: datetime | None = None,
    ) -> CacheEntry:
        """Store ``reply`` as the entry of ``key``; ``request`` is the redacted record
        (:func:`axl_action.cache.key.request_record`). Only a :class:`SettledReply` can be
        stored: errors, cut-off and refused replies and replies without usage never get here.

        A write that fails (disk full, read-only directory) is one warning per run and the
        entry is returned unstored: the run goes on, the next run calls again.
        """
        if not isinstance(reply, SettledReply):
            raise TypeError("put() takes a SettledReply (see axl_action.cache.settle_reply)")
        entry = CacheEntry(
            key=key,
            request=dict(request),
            reply=reply,
            made_at=made_at or datetime.fromtimestamp(self.clock(), UTC),
        )
        self.store_entry(entry)
        return entry

    def store_entry(self, entry: CacheEntry) -> bool:
        """Write an already built entry (a restored archive's); False when the write failed."""
        data = encode_entry(entry)
        path = self.path_of(entry.key)
        try:
            try:
                old = path.stat().st_size
            except FileNotFoundError:
                old = None
            path.parent.mkdir(parents=True, exist_ok=True)
            self._write_atomic(path, data)
            now = self.clock()
            os.utime(path, (now, now))
            self._append_features(entry.key, request_features(entry.request))
            total = self._add_usage(len(data) - (old or 0), 0 if old is not None else 1)
        except OSError as exc:
            self._count("write_errors")
            self._warn_once(
                "write",
                f"Response cache: could not write to {self.root} ({exc.strerror or exc}); replies are "
                "not being stored, the run goes on without them.",
            )
            return False
        self._count("stored")
        if total > self.max_bytes:
            self.evict()
        return True

    def _remove(self, key: str) -> None:
        path = self.path_of(key)
        try:
            size = path.stat().st_size
            path.unlink()
        except OSError:
            return
        with contextlib.suppress(OSError):
            self._add_usage(-size, -1)

    # -- accounting -----------------------------------------------------------------------------

    def _add_usage(self, delta_bytes: int, delta_count: int) -> int:
        """Add to the shared running total under an exclusive flock; returns the new total."""
        fd = os.open(self.root / "usage", os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            total, count = _parse_usage(os.pread(fd, 64, 0))
            total, count = max(0, total + delta_bytes), max(0, count + delta_count)
            line = f"{total} {count}\n".encode()
            os.pwrite(fd, line, 0)
            os.ftruncate(fd, len(line))
            return total
        finally:
            os.close(fd)  # closing releases the lock

    def usage(self) -> tuple[int, int]:
        """The shared running total: (bytes, entries)."""
        try:
            return _parse_usage((self.root / "usage").read_bytes())
        except FileNotFoundError:
            return 0, 0

    def evict(self) -> int:
        """Remove least recently used entries until the total is at most ``LOW_WATER`` of the
        cap; returns how many were removed (0 when another process is already evicting)."""
        lock = os.open(self.root / "evict.lock", os.O_RDWR | os.O_CREAT, 0o644)
        try:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as exc:
                if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
                    return 0
                raise
            files = sorted(self._scan())
            total = sum(size for _mtime, size, _path in files)
            target = int(self.max_bytes * LOW_WATER)
            removed = 0
            for _mtime, size, path in files:
                if total <= target:
                    break
                with contextlib.suppress(FileNotFoundError):
                    path.unlink()
                total -= size
                removed += 1
            self._set_usage(total, len(files) - removed)
            self._clean_tmp()
            if removed:
                self._compact_log()
        finally:
            os.close(lock)
        self._count("evicted", removed)
        return removed

    def _set_usage(self, total: int, count: int) -> None:
        fd = os.open(self.root / "usage", os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            line = f"{total} {count}\n".encode()
            os.pwrite(fd, line, 0)
            os.ftruncate(fd, len(line))
        finally:
            os.close(fd)

    def _scan(self) -> Iterator[tuple[float, int, Path]]:
        """(mtime, size, path) of every entry file."""
        for path in self.entry_paths():
            try:
                st = path.stat()
            except FileNotFoundError:
                continue
            yield st.st_mtime, st.st_size, path

    def entry_paths(self) -> Iterator[Path]:
        """Every entry file (names are keys)."""
        try:
            level1 = list(os.scandir(self._entries))
        except FileNotFoundError:
            return
        for d1 in level1:
            if not d1.is_dir():
                continue
            for d2 in os.scandir(d1.path):
                if not d2.is_dir():
                    continue
                for f in os.scandir(d2.path):
                    if is_cache_key(f.name):
                        yield Path(f.path)

    def _clean_tmp(self) -> None:
        cutoff = time.time() - STALE_TMP_SECONDS
        for f in os.scandir(self._tmp):
            try:
                if f.stat().st_mtime < cutoff:
                    os.unlink(f.path)
            except OSError:
                pass

    # -- the nearest-request index --------------------------------------------------------------

    def _append_features(self, key: str, features: list[int]) -> None:
        # One write() on an O_APPEND descriptor: appends of several processes never interleave
        # on a local filesystem. The log is a hint (see nearest.py): a lost record only makes a
        # suggestion worse.
        record = _LOG_RECORD.pack(bytes.fromhex(key), len(features)) + struct.pack(
            f"<{len(features)}Q", *features
        )
        fd = os.open(self.root / "index.log", os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, record)
        finally:
            os.close(fd)
        with self._lock:
            index = self._index
        if index is not None:
            index.add(key, features)

    def _read_log(self) -> Iterator[tuple[str, list[int]]]:
        try:
            data = (self.root / "index.log").read_bytes()
        except FileNotFoundError:
            return
        pos = 0
        while pos + _LOG_RECORD.size <= len(data):
            raw_key, n = _LOG_RECORD.unpack_from(data, pos)
            end = pos + _LOG_RECORD.size + 8 * n
            if end > len(data):
                break  # a torn tail left by a crash: the rest is unreadable, and only a hint
            yield raw_key.hex(), list(struct.unpack_from(f"<{n}Q", data, pos + _LOG_RECORD.size))
            pos = end

    def _compact_log(self) -> None:
        live = {p.name for p in self.entry_paths()}
        out = bytearray()
        for key, features in self._read_log():
            if key in live:
                out += _LOG_RECORD.pack(bytes.fromhex(key), len(features))
                out += struct.pack(f"<{len(features)}Q", *features)
        self._write_atomic(self.root / "index.log", bytes(out))

    def request_index(self) -> RequestIndex:
        """The nearest-request index: loaded from ``index.log`` on first use (rebuilt from the
        entries when the log is missing), then kept current by this process's writes."""
        with self._lock:
            if self._index is not None:
                return self._index
        index = RequestIndex()
        seen = 0
        for key, features in self._read_log():
            index.add(key, features)
            seen += 1
        if not seen:
            for path in self.entry_paths():
                entry = self._read(path.name)
                if entry is not None:
                    self._append_features(entry.key, request_features(entry.request))
                    index.add(entry.key, request_features(entry.request))
        with self._lock:
            if self._index is None:
                self._index = index
            return self._index

    def nearest(self, record: Mapping[str, Any]) -> NearestRequest | None:
        """The recorded request nearest to ``record`` (a redacted canonical record) and the
        JSON paths that differ; ``None`` when the store is empty."""

        def load(key: str) -> Mapping[str, Any] | None:
            entry = self._read(key)
            return entry.request if entry is not None else None

        return nearest_request(record, self.request_index(), load)

    # -- single flight --------------------------------------------------------------------------

    def get_or_compute(
        self,
        key: CacheKey | str,
        record: Callable[[], Mapping[str, Any]],
        compute: Callable[[], tuple[T, SettledReply | None]],
    ) -> Served[T]:
        """The entry of ``key``, or ``compute()``'s result stored under it; ``record()`` makes
        the redacted request record, asked only when there is a reply to store.

        ``compute`` makes the live call and returns ``(value, reply)``, ``reply`` being the
        :class:`SettledReply` to store or ``None`` when the reply may not be cached. Threads
        asking for the same missing key wait for the first one's call; if it raised or stored
        nothing, the next waiter calls ``compute`` itself.
        """
        while True:
            entry = self._lookup(key)
            if entry is not None:
                self._count("hits")
                return Served(entry, None, True)
            with self._lock:
                flight = self._flights.get(key)
                leader = flight is None
                if flight is None:
                    flight = self._flights[key] = _Flight()
            if not leader:
                self._count("waited")
                flight.done.wait()
                continue
            self._count("misses")
            try:
                value, reply = compute()
                stored = self.put(key, record(), reply) if reply is not None else None
                return Served(stored, value, False)
            finally:
                with self._lock:
                    self._flights.pop(key, None)
                flight.done.set()


def _parse_usage(raw: bytes) -> tuple[int, int]:
    parts = raw.split()
    try:
        return int(parts[0]), int(parts[1])
    except (IndexError, ValueError):
        return 0, 0


__all__ = [
    "DEFAULT_MAX_AGE",
    "DEFAULT_MAX_BYTES",
    "LOW_WATER",
    "STORE_FORMAT",
    "CacheStats",
    "DirectoryStore",
    "Served",
]
