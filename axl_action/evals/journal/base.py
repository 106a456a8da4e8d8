"""What every part of the run journal shares: where it lives, its errors, the checksum that
seals each of its lines (the writer's ``seal_line``, the reader's ``line_checksum``), what a
resume keeps, and the command's flags as its segment lines record them.
"""

from __future__ import annotations

import hashlib
import os
import zlib
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from axl_action.errors import InputFileError
from axl_action.schema.journal import JournalFlags

JOURNAL_SUFFIX = ".journal.jsonl"
FINAL_OUTCOMES = frozenset({"completed", "failed"})
"""Item outcomes a resume keeps; ``cancelled`` and budget-stopped items run again."""


class JournalError(InputFileError):
    """A journal that cannot be read, or that does not belong to the command resuming it."""


class JournalChanged(JournalError):
    """The journal's eval is this one, but its judges or its source changed: refused unless
    ``--resume --force``."""

    code = "JOURNAL"


def journal_path(output: str | os.PathLike[str]) -> Path:
    """Where the journal of ``--output FILE`` lives: ``FILE.journal.jsonl`` next to it."""
    path = Path(output)
    return path.with_name(path.name + JOURNAL_SUFFIX)


def tool_version() -> str:
    """The installed axl-eval-action version ("unknown" from a source tree)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("axl-eval-action")
    except PackageNotFoundError:
        return "unknown"


def file_digest(path: str | os.PathLike[str] | None) -> str | None:
    """``sha256:`` of a file's bytes (``None`` for no file, or one that cannot be read)."""
    if path is None:
        return None
    try:
        return "sha256:" + hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except OSError:
        return None


def iso_utc() -> str:
    """Now, ISO 8601 in UTC with milliseconds (as result timestamps are written)."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def is_final(item: Mapping[str, Any]) -> bool:
    """True for an item a resume keeps as it is: it completed or failed, and none of its
    scorers was cancelled. Anything else (cancelled, budget-stopped, scorers cut off by a hard
    stop) runs again; its spend still counts against the budget."""
    if item.get("outcome") not in FINAL_OUTCOMES:
        return False
    details = item.get("scoreDetails")
    if isinstance(details, Mapping):
        for detail in details.values():
            if isinstance(detail, Mapping) and detail.get("outcome") == "cancelled":
                return False
    return True


def flags_of(
    *,
    shard: tuple[int, int] | None = None,
    runs: int = 1,
    scorers: Sequence[str] | None = None,
    budget: str | None = None,
    pricing: str | None = None,
    max_item_error_rate: float | None = None,
    repeats: int | str | None = None,
    max_repeats: int | None = None,
    baseline: str | None = None,
) -> JournalFlags:
    """:class:`JournalFlags` from parsed flags (``pricing`` and ``baseline`` are file paths)."""
    return JournalFlags(
        shard=f"{shard[0]}/{shard[1]}" if shard is not None else None,
        runs=runs,
        scorers=list(scorers) if scorers is not None else None,
        budget=budget,
        pricing=file_digest(pricing),
        max_item_error_rate=max_item_error_rate,
        repeats=repeats,
        max_repeats=max_repeats,
        baseline=file_digest(baseline),
    )


_CRC_KEY = b',"crc":'


def seal_line(line: bytes) -> bytes:
    """``line`` (one JSON object and ``\\n``, as :func:`dumps_line_bytes` writes it) with its
    checksum as the object's last field: ``..., "crc": N}`` where ``N`` is the CRC-32 of every
    byte before ``,"crc":``. Appending bytes costs no second serialisation (about 0.4 µs for a
    4-scorer item's line); a flipped byte anywhere in the line fails the check."""
    body = line[:-2]  # without the closing brace and the newline
    # A concatenation copies the body once; a %-format of it copied it again (0.44 -> 0.34 µs
    # for a 500-byte line).
    return body + b"%s%d}\n" % (_CRC_KEY, zlib.crc32(body))


def line_checksum(line: bytes, obj: dict[str, Any]) -> bool | None:
    """Whether ``line`` (read as ``obj``) passes its checksum; None when it carries none (a
    journal written before checksums). Takes the ``crc`` field out of ``obj``."""
    if "crc" not in obj:
        return None
    crc = obj.pop("crc")
    if type(crc) is not int:
        return False
    suffix = b"%s%d}" % (_CRC_KEY, crc)
    line = line.rstrip(b"\r")
    return line.endswith(suffix) and zlib.crc32(line[: len(line) - len(suffix)]) == crc
