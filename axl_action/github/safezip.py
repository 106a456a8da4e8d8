"""Unpack an artifact zip without trusting it.

An artifact from another run is untrusted input: a PR can upload anything under the
baseline's name in its own run (we filter those out, but defence in depth costs little).
``extract_zip`` never touches the filesystem; it returns ``{name: bytes}`` and rejects:

* absolute paths, drive letters and other colons, ``..`` components, backslash tricks
  and NUL bytes;
* symlinks, encrypted entries and duplicate names;
* more than ``max_entries`` entries, more than ``max_total_bytes`` uncompressed, and
  entries whose compression ratio marks a zip bomb;
* corrupt archives (bad central directory, CRC mismatch, truncated data).

Sizes are enforced on the bytes actually inflated, not only on the sizes the headers claim,
so a header that lies about ``file_size`` cannot slip a bomb through.
"""

from __future__ import annotations

import io
import stat
import zipfile
import zlib
from dataclasses import dataclass

from axl_action.github.errors import ArtifactError

_CHUNK = 64 * 1024
# Below this many inflated bytes a high ratio is harmless (a 1 KiB file of spaces).
_RATIO_FLOOR = 1024 * 1024


@dataclass(frozen=True)
class ZipLimits:
    """Caps applied while unpacking an artifact."""

    max_entries: int = 1000
    """Most entries (files and directories) an archive may hold."""
    max_total_bytes: int = 256 * 1024 * 1024
    """Most uncompressed bytes across all files."""
    max_ratio: float = 200.0
    """Largest uncompressed/compressed ratio for an entry bigger than 1 MiB."""


def extract_zip(
    data: bytes, limits: ZipLimits | None = None, *, source: str = "artifact"
) -> dict[str, bytes]:
    """Return the regular files of the zip ``data`` as ``{posix name: bytes}``.

    ``source`` names the archive in error messages (e.g. ``artifact 'axl-eval-baseline' (id 5)``).
    """
    limits = limits or ZipLimits()
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError) as exc:
        raise ArtifactError(
            f"The {source} is not a valid zip archive ({exc})",
            hint="the upload was corrupted or is not an artifact zip; re-run the baseline workflow",
        ) from None
    with archive:
        infos = archive.infolist()
        if len(infos) > limits.max_entries:
            raise ArtifactError(
                f"The {source} has {len(infos)} entries, more than the limit of {limits.max_entries}",
                hint="a baseline artifact holds a few result files; check what was uploaded under this name",
            )
        files: dict[str, bytes] = {}
        total = 0
        for info in infos:
            name = _safe_name(info.filename, source)
            if info.is_dir():
                continue
            if info.flag_bits & 0x1:
                raise ArtifactError(
                    f"The {source} entry {name!r} is encrypted",
                    hint="artifacts are never encrypted; refusing it",
                )
            mode = info.external_attr >> 16
            if stat.S_ISLNK(mode):
                raise ArtifactError(
                    f"The {source} entry {name!r} is a symbolic link",
                    hint="symlinks could point outside the archive; refusing it",
                )
            if name in files:
                raise ArtifactError(
                    f"The {source} holds {name!r} twice", hint="refusing an ambiguous archive"
                )
            if total + info.file_size > limits.max_total_bytes:
                raise _too_big(source, limits)
            content = _read_entry(archive, info, name, source, limits, limits.max_total_bytes - total)
            total += len(content)
            files[name] = content
    return files


def _safe_name(raw: str, source: str) -> str:
    name = raw.replace("\\", "/")
    problem = None
    if "\x00" in name:
        problem = "contains a NUL byte"
    elif name.startswith("/") or (len(name) > 1 and name[1] == ":"):
        problem = "is an absolute path"
    elif ":" in name:
        # Artifact paths may not contain ':' (upload-artifact refuses it); on Windows it
        # would name a drive or an alternate data stream.
        problem = "contains ':'"
    elif any(part == ".." for part in name.split("/")):
        problem = "climbs out of the archive with '..'"
    elif not name.strip("/"):
        problem = "has an empty name"
    if problem:
        raise ArtifactError(
            f"The {source} entry {raw!r} {problem}",
            hint="refusing a path-traversal (zip-slip) archive; nothing was extracted",
        )
    parts = [p for p in name.split("/") if p not in ("", ".")]
    if not parts:
        raise ArtifactError(
            f"The {source} entry {raw!r} has an empty name",
            hint="refusing a path-traversal (zip-slip) archive; nothing was extracted",
        )
    return "/".join(parts)


def _read_entry(
    archive: zipfile.ZipFile,
    info: zipfile.ZipInfo,
    name: str,
    source: str,
    limits: ZipLimits,
    budget: int,
) -> bytes:
    out = bytearray()
    try:
        with archive.open(info) as fh:
            while chunk := fh.read(_CHUNK):
                out += chunk
                if len(out) > budget:
                    raise _too_big(source, limits)
                if len(out) > _RATIO_FLOOR and len(out) / max(info.compress_size, 1) > limits.max_ratio:
                    raise ArtifactError(
                        f"The {source} entry {name!r} inflates more than {limits.max_ratio:.0f}x "
                        f"({info.compress_size} compressed bytes)",
                        hint="this looks like a zip bomb; refusing it",
                    )
    except (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError) as exc:
        raise ArtifactError(
            f"The {source} entry {name!r} is corrupt ({exc})",
            hint="the artifact was damaged; re-run the workflow that uploaded it",
        ) from None
    return bytes(out)


def _too_big(source: str, limits: ZipLimits) -> ArtifactError:
    return ArtifactError(
        f"The {source} unpacks to more than {limits.max_total_bytes} bytes",
        hint="a baseline artifact should hold result files only; check what was uploaded under this name",
    )
