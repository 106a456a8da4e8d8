"""A directory store packed into one archive and back: how the action carries the cache between
workflow runs in the GitHub Actions cache (``github/actions_cache.py``).

The archive is a gzip-compressed tar of entry files only, each named ``<key>`` (the fan-out
directories, the usage total and the nearest-request log are rebuilt by the store that
unpacks it). Unpacking trusts nothing in it: a member that is not a regular file named by a
cache key, or whose content fails the entry's checks (checksum, its own key), is skipped and
counted, never written; no path from the archive is ever used on disk.
"""

from __future__ import annotations

import io
import os
import tarfile
from dataclasses import dataclass

from axl_action.cache.entry import CacheEntry, DamagedEntry, decode_entry
from axl_action.cache.key import is_cache_key
from axl_action.cache.store import DirectoryStore

ARCHIVE_FORMAT = "axl-cache-archive/1"
"""The first member's name: an archive without it is not one of ours."""


@dataclass(frozen=True)
class Unpacked:
    """What :func:`unpack` did."""

    restored: int
    """Entries written to the store."""
    skipped: int
    """Members that were not a valid entry (damaged, foreign, oversized)."""


def pack(store: DirectoryStore, *, max_bytes: int) -> tuple[bytes, int]:
    """The store's entries as one archive, most recently used first, stopping before the
    archive's input would pass ``max_bytes``; returns the archive and how many entries it holds."""
    files = sorted(store.entry_paths(), key=_mtime, reverse=True)
    out = io.BytesIO()
    count = 0
    total = 0
    with tarfile.open(fileobj=out, mode="w:gz", compresslevel=6) as tar:
        marker = tarfile.TarInfo(ARCHIVE_FORMAT)
        tar.addfile(marker, io.BytesIO(b""))
        for path in files:
            try:
                data = path.read_bytes()
            except OSError:
                continue
            if total + len(data) > max_bytes:
                break
            info = tarfile.TarInfo(path.name)
            info.size = len(data)
            info.mtime = int(_mtime(path))
            tar.addfile(info, io.BytesIO(data))
            total += len(data)
            count += 1
    return out.getvalue(), count


def unpack(store: DirectoryStore, data: bytes, *, max_entry_bytes: int = 64 * 1024 * 1024) -> Unpacked:
    """Write the valid entries of an archive into ``store`` (see the module docstring)."""
    restored = skipped = 0
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
            members = tar.getmembers()
            if not members or members[0].name != ARCHIVE_FORMAT:
                return Unpacked(0, len(members) or 1)
            for member in members[1:]:
                entry = _entry_of(tar, member, max_entry_bytes)
                if entry is None:
                    skipped += 1
                elif store.store_entry(entry):
                    restored += 1
    except (tarfile.TarError, OSError, EOFError):
        return Unpacked(restored, skipped + 1)
    return Unpacked(restored, skipped)


def _entry_of(tar: tarfile.TarFile, member: tarfile.TarInfo, max_bytes: int) -> CacheEntry | None:
    """The verified entry a member holds, or ``None``: only a regular file named by a key,
    whose content is that key's entry, is one."""
    if not member.isreg() or not is_cache_key(member.name) or member.size > max_bytes:
        return None
    handle = tar.extractfile(member)
    if handle is None:
        return None
    try:
        return decode_entry(handle.read(), member.name)
    except DamagedEntry:
        return None


def _mtime(path: os.PathLike[str]) -> float:
    try:
        return os.stat(path).st_mtime
    except OSError:
        return 0.0


__all__ = ["ARCHIVE_FORMAT", "Unpacked", "pack", "unpack"]
