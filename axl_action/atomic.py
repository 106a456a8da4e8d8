"""The one way this package replaces a file: a temporary file beside it, then a rename.

``os.replace`` is atomic on one file system, so a reader (another job, the next run, a resume)
sees the old file, the new file or no file, never half of one, whatever kills the writer. The
temporary file is named ``.<name>.<8 random characters>`` (``mkstemp``'s pattern), which is what
:func:`axl_action.cli.common.remove_stale_temp_files` looks for when a kill left one behind.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable
from pathlib import Path

#: A results file, a history file or a cache entry is an ordinary shareable file, while
#: ``mkstemp`` creates 0600.
FILE_MODE = 0o644


def write_atomic(
    target: Path,
    data: bytes | Iterable[bytes],
    *,
    tmp_dir: Path | None = None,
    sync: bool = False,
) -> Path:
    """Write ``data`` (bytes, or chunks written as they come) to ``target`` atomically.

    ``tmp_dir`` holds the temporary file when not ``target``'s folder (it must be on the same
    file system; the cache keeps its own so half-written entries never sit among entries).
    ``sync`` flushes the file and its folder to the disk before returning, for a file that may
    hold the only copy of paid work. On any failure the temporary file is removed and the error
    is raised as it came, so each caller words it for its own reader.
    """
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=tmp_dir or target.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            if isinstance(data, bytes | bytearray | memoryview):
                fh.write(data)
            else:
                fh.writelines(data)
            if sync:
                fh.flush()
                os.fsync(fh.fileno())
        os.chmod(tmp, FILE_MODE)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    if sync:
        sync_file_and_directory(target)
    return target


def sync_file_and_directory(path: Path) -> None:
    """``fsync`` the file at ``path`` and then its directory (which holds the rename that put
    it there). A file that is gone, or a file system that cannot sync a directory, is skipped:
    this only orders the disk, it never fails a run whose results are written."""
    for target, flags in ((path, os.O_RDONLY), (path.parent, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))):
        try:
            fd = os.open(target, flags)
        except OSError:
            return
        try:
            os.fsync(fd)
        except OSError:
            pass
        finally:
            os.close(fd)
