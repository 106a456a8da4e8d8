"""The journal's writer: every settled item on disk as it settles, so a crash never loses paid
work.

``axl-eval run --output FILE`` (and ``rescore --output FILE``) append to
``FILE.journal.jsonl``: one segment line per result (``schema/journal.py``: the eval's
identity, fingerprints, flags, budget and the result's other facts), then one line per settled
item, holding the item exactly as the results file will. The results file is still written
from the run's state at the end (atomically); the journal is deleted only once that file is
in place and the run was neither interrupted nor left items of another eval behind
(``session.py``).

Durability rule (the one the docs promise):

* A segment line is written and ``fsync``-ed before the first item of its result runs.
* An item that made a measured call (``accounting.operations.total > 0``) or took 1 ms or
  more (its workflow or a scorer waited on something: a model, a network, a sleep; for a
  rescored item, which has no duration, its slowest scorer) is
  written to the operating system by the worker that ran it before that worker takes
  another item. A process that dies after that moment (an exception, a signal, SIGKILL, an
  out-of-memory kill) leaves the line in the file.
* Faster items (no measured call, under 1 ms: free, deterministic work) are queued in memory
  and written every ``AXL_EVAL_JOURNAL_FLUSH_MS`` (default 20 ms) and when the run ends: by
  the next worker that queues an item once that time is up, or by a background thread when
  no item settles. A process death loses at most about that much free work.
* While items are written through, the background thread calls ``fsync`` at most once a
  second (outside the lock, so no worker waits for the disk), and a journal that is kept when
  the run ends is ``fsync``-ed then: losing power loses at most about the last second of paid
  items (free ones are not synced for their own sake: redoing them costs nothing). A journal
  deleted at the end, because the results file is in place, is not synced first.
* Items in flight when the process dies settled nowhere: a resume runs them again (with
  concurrency ``c``, at most ``c`` items).
* A line cut short by the crash (the file's last line) is dropped when the journal is read.
* Every line ends in its checksum (``"crc":N``, the CRC-32 of the line's bytes before that
  field, see ``base.seal_line``): a line that fails it is never used. The last line is then
  dropped as torn; any other refuses the journal, naming the line. Journals written before
  checksums (none on their first line) are read as before.

Per item on the hot path this costs one serialisation of its line (``dumps_line_bytes``, about
1.1 µs for a 4-scorer item) and a deque append, or a ``write(2)`` for an item written at once;
``benchmarks/journal_cost.py`` measures it.
"""

from __future__ import annotations

import collections
import os
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from axl_action.evals.journal.base import seal_line
from axl_action.evals.log import warn
from axl_action.runtime.scope import EMPTY_RECORD
from axl_action.schema.journal import JournalSegment
from axl_action.schema.jsonio import dumps_line_bytes

if TYPE_CHECKING:
    from axl_action.evals.journal.reader import Journal

monotonic = time.monotonic

FLUSH_ENV = "AXL_EVAL_JOURNAL_FLUSH_MS"
DEFAULT_FLUSH_SECONDS = 0.02
"""How long a free item may wait in memory before the background thread writes it."""
SYNC_SECONDS = 1.0
"""At most this long between ``fsync`` calls while lines arrive."""
WRITE_THROUGH_MS = 1
"""An item that took at least this long is written at once, like one that made a measured call."""


def flush_interval(env: Mapping[str, str] | None = None) -> float:
    """``AXL_EVAL_JOURNAL_FLUSH_MS`` in seconds (a positive integer), else 20 ms."""
    raw = (env if env is not None else os.environ).get(FLUSH_ENV, "").strip()
    if raw.isdigit() and int(raw) > 0:
        return int(raw) / 1000
    return DEFAULT_FLUSH_SECONDS


class JournalWriter:
    """Appends segment and item lines to one journal file (see the module's durability rule).

    Thread-safe without a lock on the item path: lines queue in a deque, and every write is one
    ``write(2)`` of whole lines to a file opened ``O_APPEND``, which Linux applies atomically,
    so writers on several threads never interleave within a line and none ever waits for
    another (a lock holder the GIL switched away from would stall every worker behind it).
    :meth:`sink` returns the per-segment ``on_settled`` callback workers call; it never raises:
    a journal that cannot be written any more (a full disk) is reported once and ``on_fail``
    hears why (the command stops admitting items then: every item settled from that moment
    on exists only in memory until the results file is written).
    """

    def __init__(
        self,
        path: Path,
        *,
        interval: float | None = None,
        sync_interval: float = SYNC_SECONDS,
        on_fail: Callable[[str], None] | None = None,
    ) -> None:
        self.path = path
        self.on_fail = on_fail
        self.interval = interval if interval is not None else flush_interval()
        self.sync_interval = sync_interval
        self.failed: str | None = None
        """Why the journal stopped being written, once it did."""
        self.segments = 0
        """Segment lines in the file (the next segment gets this number)."""
        self.next_drain = monotonic() + self.interval
        """When queued lines are due to be written (workers check it as they queue)."""
        # Lines as bytes (objects the cyclic GC does not track: a run's heap of items is large).
        self._pending: collections.deque[bytes] = collections.deque()
        self._dirty = False
        self._unsynced_paid = False
        self._last_sync = monotonic()
        self._stop = threading.Event()
        path.parent.mkdir(parents=True, exist_ok=True)
        self._fd: int | None = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        self._thread = threading.Thread(target=self._run, name="axl-eval-journal", daemon=True)
        self._thread.start()

    @classmethod
    def create(cls, path: Path, **kwargs: Any) -> JournalWriter:
        """A new, empty journal at ``path`` (an existing file there is replaced)."""
        path.parent.mkdir(parents=True, exist_ok=True)
        path.unlink(missing_ok=True)
        return cls(path, **kwargs)

    @classmethod
    def append_to(cls, journal: Journal, **kwargs: Any) -> JournalWriter:
        """Continue an existing journal: a line the crash cut short is cut off first."""
        path = journal.path
        with path.open("r+b") as fh:
            fh.truncate(journal.good_bytes)
        writer = cls(path, **kwargs)
        writer.segments = len(journal.segments)
        return writer

    def begin(self, segment: JournalSegment) -> int:
        """Write a segment line (synced) before any item of its result runs; return its number.
        Called from one thread (the command's)."""
        # Not redacted as a whole: its format tag and hashes must survive a secret that happens
        # to share 8 characters with them. What is free text in it (the eval's metadata) was
        # redacted when the runner took it (``plan_run``), as in the results file.
        line = seal_line(dumps_line_bytes(segment.to_wire()))
        number = self.segments
        self.segments += 1
        self._write(line)
        self._sync()
        return number

    def sink(self, number: int) -> Callable[[int, dict[str, Any]], None]:
        """The ``on_settled(index, item)`` callback for segment ``number``."""
        return _SegmentSink(self, number)

    def flush(self) -> None:
        """Write every queued line to the operating system now."""
        self._drain()

    def close(self, *, sync: bool = False, release: bool = True) -> None:
        """Stop the background thread, write what is queued and close the file. ``sync`` also
        ``fsync``s it (a journal that is kept; one deleted next need not be). ``release=False``
        keeps the descriptor open, for workers a hard stop abandoned that may still settle."""
        self._stop.set()
        self._thread.join()
        self._drain()
        if sync:
            self._sync()
        if release and self._fd is not None:
            fd, self._fd = self._fd, None
            os.close(fd)

    # -- internals --------------------------------------------------------------------------

    def drain_due(self) -> None:
        """Write the queue now that it is due (workers call it as they queue)."""
        self.next_drain = monotonic() + self.interval
        self._drain()

    def _write_now(self, line: bytes) -> None:
        self._write(line)
        self._unsynced_paid = True

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            # Workers write the queue as they add to it; this covers the quiet spells.
            if monotonic() >= self.next_drain:
                self.drain_due()
            # Only lines written through (paid or slow items) are worth a disk flush: free items
            # a power loss takes are redone for nothing, and a run whose journal is deleted at
            # its end then never writes them to disk at all.
            if self._unsynced_paid and monotonic() - self._last_sync >= self.sync_interval:
                self._sync()

    def _drain(self) -> None:
        # Several threads may drain at once: each pops different lines (the deque is
        # thread-safe) and writes them with one append.
        pending = self._pending
        if not pending:
            return
        chunks: list[bytes] = []
        add = chunks.append
        while True:
            try:
                add(pending.popleft())
            except IndexError:
                break
        self._write(b"".join(chunks))

    def _write(self, data: bytes) -> None:
        fd = self._fd
        if fd is None or self.failed is not None:
            return
        # One write(2) per call: an exception a signal handler raises in this thread can only
        # come before or after it, never between two halves of a line. A short write (a full
        # disk) stops the journal, so the cut line stays its last and a reader drops it.
        try:
            written = os.write(fd, data)
        except OSError as err:
            self._fail(f"writing {self.path} failed: {err.strerror or err}")
            return
        self._dirty = True
        if written < len(data):
            self._fail(f"writing {self.path} stopped after {written} of {len(data)} bytes")

    def _sync(self) -> None:
        # fsync waits for the disk (releasing the GIL); no worker ever waits for it.
        fd = self._fd
        if fd is None or not self._dirty or self.failed is not None:
            return
        self._dirty = self._unsynced_paid = False  # lines written from now on count again
        try:
            os.fsync(fd)
        except OSError as err:
            self._fail(f"syncing {self.path} failed: {err.strerror or err}")
            return
        self._last_sync = monotonic()

    def _fail(self, reason: str) -> None:
        if self.failed is not None:
            return
        self.failed = reason
        if self.on_fail is None:
            warn(
                f"[axl-eval] WARNING: the run journal stopped: {reason}. The run goes on, but a crash "
                "from now on would lose the items settled since."
            )
            return
        warn(
            f"[axl-eval] ERROR: the run journal stopped: {reason}. No new item starts: the items in "
            "flight finish, and every item settled is kept in memory and written with the results."
        )
        self.on_fail(reason)


class _SegmentSink:
    """``on_settled`` for one segment: serialise the item's line, queue it or write it at once."""

    __slots__ = ("_append", "_now", "_number", "_writer")

    def __init__(self, writer: JournalWriter, number: int) -> None:
        self._append = writer._pending.append  # a deque: thread-safe, no lock on the hot path
        self._now = writer._write_now
        self._number = number
        self._writer = writer

    def __call__(self, index: int, item: dict[str, Any]) -> None:
        duration = item.get("duration")
        if duration is None:
            details = item.get("scoreDetails")
            if details is None:
                return  # a stub or a carried-over item: nothing ran, a resume just redoes it
            # A rescored item has no duration of its own: its scorers' count.
            duration = max((d.get("duration") or 0 for d in details.values()), default=0)
        accounting = item["accounting"]
        if accounting is EMPTY_RECORD:
            # Nothing measured (every free item): the line says null, which the reader turns
            # back into the empty record. It was 40 % of such a line, in serialising and in
            # the bytes written.
            item = item.copy()
            item["accounting"] = None
        line = seal_line(dumps_line_bytes({"segment": self._number, "index": index, "item": item}))
        if duration >= WRITE_THROUGH_MS or accounting["operations"]["total"]:
            self._now(line)
            return
        self._append(line)
        writer = self._writer
        if monotonic() >= writer.next_drain:
            # Due: this worker writes the queue. The background thread alone would not do:
            # with many CPU-bound workers it waits hundreds of ms for the GIL.
            writer.drain_due()
