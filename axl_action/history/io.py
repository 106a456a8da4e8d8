"""Reading and writing history files: bytes in and out, every problem one :class:`HistoryError`.

A file is JSON (``history.json``) or gzipped JSON (``history.json.gz``, how a baseline
artifact stores it); readers take either, told apart by the gzip magic bytes. Decompression
stops at :data:`~axl_action.history.model.MAX_FILE_BYTES`, so a small hostile file cannot
expand into memory. The pure parts (:func:`parse_history`, :func:`history_bytes`) take and
return bytes; :func:`load_history` and :func:`write_history` are the file edges.
"""

from __future__ import annotations

import contextlib
import gzip
import os
import zlib
from pathlib import Path
from typing import Any

import pydantic_core
from pydantic import ValidationError

from axl_action.atomic import write_atomic
from axl_action.errors import InputFileError, read_input_bytes, validation_problem
from axl_action.history.build import Encoded, History, decode, encode
from axl_action.history.model import FORMAT, MAX_FILE_BYTES, VERSION, HistoryFile

_GZIP_MAGIC = b"\x1f\x8b"
_HINT = "build one with `axl-eval history <results.json ...> --output history.json`"


class HistoryError(InputFileError):
    """A history file that is missing, too big, not JSON, foreign or invalid."""

    code = "HISTORY_FILE"


def _inflate(raw: bytes, source: str) -> bytes:
    stream = zlib.decompressobj(wbits=31)  # gzip framing
    try:
        out = stream.decompress(raw, MAX_FILE_BYTES + 1)
    except zlib.error as err:
        raise HistoryError(f"{source} is not a valid gzip file ({err})", hint=_HINT) from None
    if len(out) > MAX_FILE_BYTES or stream.unconsumed_tail:
        raise _too_big(source)
    if not stream.eof:
        raise HistoryError(f"{source} is a truncated gzip file", hint=_HINT)
    return out


def _too_big(source: str) -> HistoryError:
    return HistoryError(
        f"{source} is larger than {MAX_FILE_BYTES // (1024 * 1024)} MiB uncompressed",
        hint="a history this size was not written by axl-eval; build a new one",
    )


def parse_history(raw: bytes, source: str = "history.json", *, suite: str | None = None) -> History:
    """The history in ``raw`` (JSON or gzipped JSON); raises :class:`HistoryError`.

    ``suite``: refuse a history that names another suite (a foreign file).
    """
    if raw[:2] == _GZIP_MAGIC:
        raw = _inflate(raw, source)
    elif len(raw) > MAX_FILE_BYTES:
        raise _too_big(source)
    try:
        data: Any = pydantic_core.from_json(raw, allow_inf_nan=False)
    except ValueError as err:
        message = str(err).removeprefix("Invalid JSON: ")
        raise HistoryError(f"{source} is not valid JSON: {message}", hint=_HINT) from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise HistoryError(
            f'{source} is not an axl-eval history file (it has no "format": "{FORMAT}")',
            hint=_HINT,
        )
    version = data.get("version")
    if isinstance(version, int) and not isinstance(version, bool) and version > VERSION:
        raise HistoryError(
            f"{source} was written by a newer axl-eval (history format {version}; this version reads {VERSION})",
            hint="upgrade axl-eval-action, or start a new history",
        )
    if suite is not None and isinstance(data.get("suite"), str) and data["suite"] != suite:
        raise HistoryError(
            f"{source} is the history of suite {data['suite']!r}, not {suite!r}",
            hint="each suite keeps its own baseline artifact and history",
        )
    try:
        file = HistoryFile.model_validate(data)
    except ValidationError as err:
        raise HistoryError(
            f"{source} is not a valid history file: {validation_problem(err)}", hint=_HINT
        ) from None
    return decode(file)


def history_bytes(history: History, *, gzipped: bool = False) -> Encoded:
    """The file's bytes (JSON, or gzipped JSON for an artifact); see ``build.encode``."""
    encoded = encode(history)
    if not gzipped:
        return encoded
    # mtime=0: the same history always gives the same bytes.
    return Encoded(data=gzip.compress(encoded.data, compresslevel=6, mtime=0), dropped=encoded.dropped)


def load_history(path: str | os.PathLike[str], *, suite: str | None = None) -> History:
    """Read a history file (JSON or gzipped JSON) from disk."""
    source = str(path)
    with contextlib.suppress(OSError):  # a missing or unreadable file is told by the read below
        if os.path.getsize(path) > MAX_FILE_BYTES:
            raise _too_big(source)
    raw = read_input_bytes(path, "history file", HistoryError, missing_hint=_HINT)
    return parse_history(raw, source, suite=suite)


def write_history(path: str | os.PathLike[str], history: History) -> Encoded:
    """Write ``history`` to ``path`` atomically (gzipped when the name ends in ``.gz``)."""
    target = Path(path)
    encoded = history_bytes(history, gzipped=target.name.endswith(".gz"))
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(target, encoded.data)
    except OSError as err:
        raise InputFileError(
            f"cannot write {target}: {err.strerror or err}", hint="check that the directory is writable"
        ) from None
    return encoded
