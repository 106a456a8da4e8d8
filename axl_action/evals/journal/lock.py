"""The journal's lock: one process writes a journal at a time (``<journal>.lock``, held with
``flock(2)`` from opening the journal to deleting or keeping it)."""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path

from axl_action.errors import UsageError

LOCK_SUFFIX = ".lock"
LOCK_POLL_SECONDS = 0.2


class JournalLock:
    """The journal's writer holds ``<journal>.lock`` with ``flock(2)`` for as long as it runs.

    ``flock``, not a pid file made with ``O_EXCL``: the kernel drops the lock when its holder
    dies in any way (SIGKILL and out-of-memory kills included), so a lock left by a dead process
    is free at once, without guessing from a pid that may have been reused. The holder's pid is
    written into the file only to name it in the refusal. The lock is taken once, when the
    command opens its journal: nothing is added per item.
    """

    def __init__(self, path: Path, fd: int) -> None:
        self.path = path
        self._fd: int | None = fd

    @classmethod
    def acquire(cls, journal: Path, *, wait: bool) -> JournalLock:
        """Take the lock of ``journal``; refuse (``UsageError``) when a live process holds it,
        or, with ``wait``, wait until it is released."""
        import fcntl

        path = journal.with_name(journal.name + LOCK_SUFFIX)
        path.parent.mkdir(parents=True, exist_ok=True)
        said = False
        while True:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = _lock_holder(fd)
                os.close(fd)
                if not wait:
                    raise UsageError(
                        f"a run is still writing this journal: pid {holder} ({journal})",
                        hint="wait for it to end, or add --wait to wait for it and then continue",
                    ) from None
                if not said:
                    print(
                        f"[axl-eval] Waiting for pid {holder}, which is still writing {journal}...",
                        flush=True,
                    )
                    said = True
                time.sleep(LOCK_POLL_SECONDS)
                continue
            # The holder before us may have removed the file after we opened it: a lock on an
            # unlinked file guards nothing, so take the one now at the path instead.
            try:
                same = os.stat(path).st_ino == os.fstat(fd).st_ino
            except FileNotFoundError:
                same = False
            if not same:
                os.close(fd)
                continue
            os.ftruncate(fd, 0)
            os.write(fd, f"{os.getpid()}\n".encode())
            return cls(path, fd)

    def release(self) -> None:
        """Remove the lock file and unlock (removed while still held, so no process takes an
        unlinked file's lock: see :meth:`acquire`)."""
        fd, self._fd = self._fd, None
        if fd is None:
            return
        with contextlib.suppress(OSError):
            self.path.unlink()
        os.close(fd)


def _lock_holder(fd: int) -> str:
    try:
        text = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
    except OSError:
        text = ""
    return text if text.isdigit() else "unknown"
