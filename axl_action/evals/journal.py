"""The run journal: every settled item on disk as it settles, so a crash never loses paid work.

``axl-eval run --output FILE`` (and ``rescore --output FILE``) append to
``FILE.journal.jsonl``: one segment line per result (``schema/journal.py``: the eval's
identity, fingerprints, flags, budget and the result's other facts), then one line per settled
item, holding the item exactly as the results file will. The results file is still written
from the run's state at the end (atomically); the journal is deleted only once that file is
in place and the run was neither interrupted nor left items of another eval behind.

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
  field, see :func:`seal_line`): a line that fails it is never used. The last line is then
  dropped as torn; any other refuses the journal, naming the line. Journals written before
  checksums (none on their first line) are read as before.

Per item on the hot path this costs one serialisation of its line (``dumps_line_bytes``, about
1.1 µs for a 4-scorer item) and a deque append, or a ``write(2)`` for an item written at once;
``benchmarks/journal_cost.py`` measures it.
"""

from __future__ import annotations

import collections
import contextlib
import hashlib
import os
import sys
import threading
import time
import zlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

import pydantic_core
from pydantic import ValidationError

from axl_action.errors import InputFileError, UsageError, read_input_bytes
from axl_action.evals.common import empty_accounting_wire
from axl_action.evals.log import warn
from axl_action.runtime.scope import EMPTY_RECORD
from axl_action.schema.accounting import fold_accounting
from axl_action.schema.itempass import ItemShapeError, item_facts
from axl_action.schema.journal import (
    JOURNAL_FORMAT,
    JournalFlags,
    JournalSegment,
    RunFacts,
    RunGroup,
    ShardFacts,
)
from axl_action.schema.jsonio import dumps_line_bytes

monotonic = time.monotonic

JOURNAL_SUFFIX = ".journal.jsonl"
FLUSH_ENV = "AXL_EVAL_JOURNAL_FLUSH_MS"
DEFAULT_FLUSH_SECONDS = 0.02
"""How long a free item may wait in memory before the background thread writes it."""
SYNC_SECONDS = 1.0
"""At most this long between ``fsync`` calls while lines arrive."""
WRITE_THROUGH_MS = 1
"""An item that took at least this long is written at once, like one that made a measured call."""
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


def flush_interval(env: Mapping[str, str] | None = None) -> float:
    """``AXL_EVAL_JOURNAL_FLUSH_MS`` in seconds (a positive integer), else 20 ms."""
    raw = (env if env is not None else os.environ).get(FLUSH_ENV, "").strip()
    if raw.isdigit() and int(raw) > 0:
        return int(raw) / 1000
    return DEFAULT_FLUSH_SECONDS


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


# ------------------------------------------------------------------------------------ writing

_CRC_KEY = b',"crc":'


def seal_line(line: bytes) -> bytes:
    """``line`` (one JSON object and ``\\n``, as :func:`dumps_line_bytes` writes it) with its
    checksum as the object's last field: ``..., "crc": N}`` where ``N`` is the CRC-32 of every
    byte before ``,"crc":``. Appending bytes costs no second serialisation (about 0.4 µs for a
    4-scorer item's line); a flipped byte anywhere in the line fails the check."""
    body = line[:-2]  # without the closing brace and the newline
    return b"%s%s%d}\n" % (body, _CRC_KEY, zlib.crc32(body))


def _line_checksum(line: bytes, obj: dict[str, Any]) -> bool | None:
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


# ------------------------------------------------------------------------------------ reading


@dataclass
class SegmentRecord:
    """One segment of a journal as read back."""

    number: int
    """Its number (position among the segment lines)."""
    segment: JournalSegment
    """The segment line."""
    items: dict[int, dict[str, Any]] = field(default_factory=dict)
    """The latest item line per index."""
    spent: list[dict[str, Any]] = field(default_factory=list)
    """The accounting record of every item line (earlier attempts of an index included)."""

    @property
    def final(self) -> dict[int, dict[str, Any]]:
        """The items a resume keeps (see :func:`is_final`), by index."""
        return {i: item for i, item in self.items.items() if is_final(item)}

    @property
    def known_spend(self) -> float:
        """Known spend of every item line."""
        total = 0.0
        for record in self.spent:
            value = record.get("knownCost")
            if isinstance(value, int | float) and not isinstance(value, bool) and value >= 0:
                total += value
        return total


@dataclass
class Journal:
    """A journal file as read back."""

    path: Path
    segments: list[SegmentRecord]
    item_lines: int
    """Item lines read (every attempt of every item)."""
    good_bytes: int
    """Length of the file up to the end of its last whole line."""
    torn: bool = False
    """True when the last line was cut short (and dropped)."""

    def by_key(self, key: str) -> SegmentRecord | None:
        """The segment of the result ``key`` (the last one, should a key repeat)."""
        found = None
        for record in self.segments:
            if record.segment.key == key:
                found = record
        return found


_RECOVER_HINT = "it is written by `axl-eval run --output FILE` as FILE.journal.jsonl"
_DAMAGED_HINT = (
    "only a journal's last line can be cut short by a crash; this one was changed by something "
    "else (the disk, a copy, an edit) and nothing from it can be trusted: move it away and run "
    "again without --resume"
)


def read_journal(path: str | os.PathLike[str]) -> Journal:
    """Read a journal; a damaged or foreign file raises :class:`JournalError` (one line).

    Only the last line may be damaged (a crash cut it short, or it fails its checksum): it is
    dropped with a warning. A line that fails its checksum anywhere else refuses the journal:
    its content is not what was written, and nothing after it is trusted either.
    """
    source = Path(path)
    raw = read_input_bytes(source, "journal", JournalError, directory_hint=_RECOVER_HINT)
    end = raw.rfind(b"\n") + 1
    body, tail = raw[:end], raw[end:]
    lines = body.split(b"\n")[:-1] if body else []
    torn = bool(tail.strip(b"\x00 \t\r"))
    segments: list[SegmentRecord] = []
    item_lines = 0
    checked = False
    """True once a line carried a checksum: from then on every line must."""
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        last = number == len(lines) and not tail
        try:
            obj = pydantic_core.from_json(line, allow_inf_nan=False)
        except ValueError as err:
            if last:
                torn, end = True, end - len(line) - 1  # the last whole-looking line is cut short
                break
            raise JournalError(
                f"{source} is damaged at line {number}: {str(err).removeprefix('Invalid JSON: ')}",
                hint=_DAMAGED_HINT,
            ) from None
        if not isinstance(obj, dict):
            raise JournalError(f"{source} line {number} is not a JSON object", hint=_RECOVER_HINT)
        sound = _line_checksum(line, obj)
        if sound is None and checked:
            sound = False  # a checksum lost to damage: the lines before it had theirs
        if sound is False:
            if last:
                torn, end = True, end - len(line) - 1
                break
            raise JournalError(
                f"{source} is damaged at line {number}: the line fails its checksum",
                hint=_DAMAGED_HINT,
            )
        checked = checked or sound is True
        if "format" in obj:
            segments.append(SegmentRecord(len(segments), _segment(obj, source, number)))
            continue
        if not segments:
            raise JournalError(
                f"{source} is not an axl-eval journal: its first line is not a segment line",
                hint=_RECOVER_HINT,
            )
        record, index, item = _item_line(obj, segments, source, number)
        record.items[index] = item
        accounting = item.get("accounting")
        if accounting is None and "accounting" in item:  # written for the empty record
            item["accounting"] = accounting = empty_accounting_wire()
        if isinstance(accounting, dict):
            record.spent.append(accounting)
        item_lines += 1
    if not segments and lines:
        raise JournalError(f"{source} is not an axl-eval journal: it has no segment line", hint=_RECOVER_HINT)
    if torn:
        warn(
            f"[axl-eval] {source}: dropped the last line, which the crash cut short "
            "(or which fails its checksum)."
        )
    return Journal(path=source, segments=segments, item_lines=item_lines, good_bytes=end, torn=torn)


def _segment(obj: dict[str, Any], source: Path, number: int) -> JournalSegment:
    found = obj.get("format")
    if found != JOURNAL_FORMAT:
        raise JournalError(
            f"{source} line {number}: unknown journal format {found!r} (this version reads {JOURNAL_FORMAT})",
            hint="resume or recover it with the axl-eval-action version that wrote it",
        )
    try:
        return JournalSegment.model_validate(obj)
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "(top level)"
        raise JournalError(
            f"{source} line {number} is not a valid journal segment: at {where}: {first['msg']}",
            hint=_RECOVER_HINT,
        ) from None


def _item_line(
    obj: dict[str, Any], segments: list[SegmentRecord], source: Path, number: int
) -> tuple[SegmentRecord, int, dict[str, Any]]:
    segment, index, item = obj.get("segment"), obj.get("index"), obj.get("item")
    problem = None
    if type(segment) is not int or not 0 <= segment < len(segments):
        problem = f"segment {segment!r} is not a segment line before it"
    elif type(index) is not int or not 0 <= index < segments[segment].segment.facts.items:
        problem = (
            f"index {index!r} is outside the {segments[segment].segment.facts.items} items of its segment"
        )
    elif not isinstance(item, dict) or not isinstance(item.get("outcome"), str):
        problem = "its item is not an object with an outcome"
    else:
        # The fields a run's counts read, checked as a results file's are: here the message
        # can still name the line.
        names = [
            n for part in ("scores", "scoreDetails") if isinstance(item.get(part), dict) for n in item[part]
        ]
        try:
            item_facts([item], list(dict.fromkeys(names)))
        except ItemShapeError as err:
            problem = str(err).replace("items[0]", "item", 1)
    if problem is not None:
        raise JournalError(f"{source} line {number} is not a valid item line: {problem}", hint=_RECOVER_HINT)
    assert isinstance(segment, int) and isinstance(index, int) and isinstance(item, dict)
    return segments[segment], index, item


# --------------------------------------------------------------------------- resume checks


def check_flags(journal: Journal, flags: JournalFlags) -> None:
    """Refuse to resume when the command's flags differ from the journal's where it matters."""
    if not journal.segments:
        return
    before = journal.segments[0].segment.flags
    for name, shown in (
        ("shard", "--shard"),
        ("runs", "--runs"),
        ("scorers", "--scorers"),
        ("repeats", "--repeats"),
        ("max_repeats", "--max-repeats"),
        ("baseline", "--baseline (the baseline's contents)"),
        ("pricing", "--pricing (the price table's contents)"),
    ):
        old, new = getattr(before, name), getattr(flags, name)
        if old != new:
            raise _mismatch(journal.path, f"{shown} differs", _shown(old), _shown(new))


def check_segment(
    journal: Journal,
    record: SegmentRecord,
    facts: RunFacts,
    label: str,
    *,
    sources: Mapping[str, str] | None = None,
    force: bool = False,
) -> list[str]:
    """Refuse a segment whose eval is not the one about to run (fingerprints, shard, size).

    Two changes leave the journal's items where they belong but graded or produced by other
    code: the scorer configuration (judge models, prompts, options) and the eval's source files
    (``sources``, see ``LoadedEval.sources``). They are refused too, unless ``force``
    (``--resume --force``); then they are returned, one line each, for the result to record."""
    old = record.segment.facts
    before, now = old.fingerprint, facts.fingerprint
    where = f"eval {label}"
    if "dataset" in before and "dataset" in now and before["dataset"] != now["dataset"]:
        raise _mismatch(journal.path, f"the dataset of {where} changed", before["dataset"], now["dataset"])
    for key, what in (
        ("datasetItems", "the number of dataset items"),
        ("scorers", "the scorers (names or types)"),
    ):
        if before.get(key) != now.get(key):
            raise _mismatch(journal.path, f"{what} of {where} changed", before.get(key), now.get(key))
    accepted: list[str] = []
    if before.get("config") != now.get("config"):
        what = f"the scorer configuration (judge models or prompts) of {where} changed"
        if not force:
            raise _mismatch(journal.path, what, before.get("config"), now.get("config"), forceable=True)
        accepted.append(what)
    changed = source_changes(record.segment.sources, sources)
    if changed:
        what = f"the source of {where} changed ({changed})"
        if not force:
            raise JournalChanged(
                f"cannot resume from {journal.path}: {what} since it was written",
                hint=_FORCE_HINT.format(path=journal.path),
            )
        accepted.append(what)
    _check_items(journal.path, old, facts, where)
    if "dataset" not in before or "dataset" not in now:
        warn(
            f"[axl-eval] WARNING: resuming {where} without a dataset fingerprint to check; only its "
            "size matched."
        )
    return accepted


def _check_items(path: Path, old: RunFacts, facts: RunFacts, where: str) -> None:
    """Refuse another shard, item count or repeat count (a settled item's mean is over its
    repeats: one over another count is not the same item)."""
    if old.shard != facts.shard or old.items != facts.items:
        raise _mismatch(path, f"the items of {where} changed", old.items, facts.items)
    if old.repeats != facts.repeats:
        raise _mismatch(path, f"the repeats of {where} changed", old.repeats, facts.repeats)


def source_changes(before: Mapping[str, str] | None, now: Mapping[str, str] | None) -> str:
    """Which source files differ between two ``sources`` maps ("" when none, or when either
    side was not recorded): "workflow.py changed, helpers.py added"."""
    if before is None or now is None:
        return ""
    parts = [f"{name} changed" for name in before if name in now and before[name] != now[name]]
    parts += [f"{name} added" for name in now if name not in before]
    parts += [f"{name} removed" for name in before if name not in now]
    return ", ".join(parts)


def _shown(value: Any) -> str:
    if value is None:
        return "none"
    if isinstance(value, list):
        return ",".join(map(str, value))
    return str(value)


def _mismatch(path: Path, what: str, old: Any, new: Any, *, forceable: bool = False) -> JournalError:
    kind = JournalChanged if forceable else JournalError
    return kind(
        f"cannot resume from {path}: {what} since it was written ({_shown(old)} -> {_shown(new)})",
        hint=_FORCE_HINT.format(path=path)
        if forceable
        else f"run the same command on the same eval; to start over instead, first save its items with "
        f"`axl-eval recover {path} --output FILE` and delete it",
    )


_FORCE_HINT = (
    "the items it holds were made or graded by other code: add --force to keep them anyway (the "
    "result records it in metadata.resumed.forced), or start over after saving them with "
    "`axl-eval recover {path} --output FILE` and deleting it"
)


# ------------------------------------------------------------------------------- recovering


def recover_results(journal: Journal) -> list[dict[str, Any]]:
    """A result for every segment of ``journal``, from its item lines alone, marked
    ``metadata.recovered`` (``partial`` when items are missing)."""
    out: list[dict[str, Any]] = []
    for record in journal.segments:
        if record.segment.command == "rescore":
            from axl_action.evals.rescore import assemble_rescore

            wire = assemble_rescore(
                record.segment.facts.result_id,
                record.segment.rescore_head or {},
                record.segment.facts.scorer_types,
                [record.items[i] for i in sorted(record.items)],
                _run_accounting(record, "rescore"),
                duration=_elapsed_ms(record.segment.started, journal.path),
            )
        else:
            from axl_action.evals.runner import assemble_run

            wire = assemble_run(
                record.segment.facts,
                [record.items[i] for i in sorted(record.items)],
                _run_accounting(record, "run"),
                duration=_elapsed_ms(record.segment.started, journal.path),
            ).wire
        group = record.segment.group
        if group is not None:
            wire["metadata"]["runGroupId"] = group.group_id
            wire["metadata"]["runIndex"] = group.index
        planned = record.segment.facts.items
        wire["metadata"]["recovered"] = {
            "journal": journal.path.name,
            "itemsFromJournal": len(record.items),
            "itemsPlanned": planned,
            "partial": len(record.items) < planned,
        }
        out.append(wire)
    return out


def _run_accounting(record: SegmentRecord, scope: str) -> dict[str, Any]:
    accounting = fold_accounting(record.spent) if record.spent else empty_accounting_wire()
    accounting["scope"] = scope
    budget = record.segment.facts.budget
    if budget is not None:
        from axl_action.runtime.admission import parse_budget

        limit = parse_budget(budget)
        spend = record.known_spend
        accounting["budget"] = {
            "limit": limit,
            "status": "closed" if spend >= limit else "open",
            "knownSpend": spend,
            "knownOvershoot": max(0.0, spend - limit),
        }
    return accounting


def _elapsed_ms(started: str, path: Path) -> int:
    """From the segment's start to the journal's last write: the best duration a journal knows."""
    try:
        begin = datetime.strptime(started, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC).timestamp()
        return max(0, round((path.stat().st_mtime - begin) * 1000))
    except (ValueError, OSError):
        return 0


# ------------------------------------------------------- the results file as a resume source


@dataclass
class EarlierResults:
    """The results file of an earlier attempt, read as a journal is: when a run finished, was
    stopped by its budget, or was killed after its journal was deleted, ``--resume`` continues
    from it. Its results pair with the command's results in order (the same command makes
    them in the same order), each checked as a journal segment is before any item runs."""

    path: Path
    raw: bytes
    results: list[dict[str, Any]]
    taken: int = 0

    def take(
        self, facts: RunFacts, label: str, group: RunGroup | None, *, force: bool = False
    ) -> tuple[SegmentRecord, list[str]]:
        """The next result as a journal segment record, and what ``force`` accepted as changed;
        refuses one that is not this eval's."""
        number = self.taken
        if number >= len(self.results):
            raise self._refuse(
                f"it holds {len(self.results)} result(s) and this command makes more (eval {label})"
            )
        result = self.results[number]
        self.taken += 1
        meta = result["metadata"]
        if meta.get("recovered"):
            raise self._refuse(
                "it was written from a journal after a hard stop; resume from that journal "
                f"({journal_path(self.path).name}), which --resume uses when it is there"
            )
        if result.get("dataset") != facts.dataset:
            raise JournalError(
                _mismatch(
                    self.path,
                    f"the dataset name of eval {label} changed",
                    result.get("dataset"),
                    facts.dataset,
                ).message,
                hint=_RESULTS_HINT,
            )
        run_index = meta.get("runIndex")
        want = group.index if group is not None else None
        if run_index != want:
            raise JournalError(
                _mismatch(self.path, "--runs differs", _runs_of(run_index), _runs_of(want)).message,
                hint=_RESULTS_HINT,
            )
        try:
            shard = ShardFacts.model_validate(meta["shard"]) if meta.get("shard") is not None else None
        except ValidationError:
            raise self._refuse("its metadata.shard is not a shard") from None
        items = result["items"]
        earlier = facts.model_copy(
            update={
                "result_id": result["id"],
                "fingerprint": meta.get("fingerprint") if isinstance(meta.get("fingerprint"), dict) else {},
                "shard": shard,
                "items": len(items),
            }
        )
        record = SegmentRecord(
            number,
            JournalSegment(
                command="run",
                key=label,
                label=label,
                started=iso_utc(),
                tool="",
                flags=JournalFlags(),
                facts=earlier,
            ),
        )
        journal = Journal(path=self.path, segments=[record], item_lines=0, good_bytes=0)
        try:
            forced = check_segment(journal, record, facts, label, force=force)
        except JournalError as err:
            if isinstance(err, JournalChanged):
                raise
            raise JournalError(err.message, hint=_RESULTS_HINT) from None
        for line in forced:
            warn(f"[axl-eval] WARNING: --force: {line}; the items of {self.path.name} are kept.")
        for index, item in enumerate(items):
            if not isinstance(item, dict) or not isinstance(item.get("outcome"), str):
                raise self._refuse(f"items[{index}] is not an item with an outcome")
            record.items[index] = item
            if isinstance(item.get("accounting"), dict):
                record.spent.append(item["accounting"])
        return record, forced

    def keep_unused(self) -> None:
        """Results of the earlier file that no eval of this command took would be lost when the
        new results file replaces it: the earlier file is kept beside it, and a line says so."""
        left = len(self.results) - self.taken
        if left <= 0:
            return
        keep = self.path.with_name(self.path.name + ".before-resume")
        try:
            keep.write_bytes(self.raw)
        except OSError as err:
            warn(
                f"[axl-eval] WARNING: could not keep the earlier results file as {keep}: {err.strerror or err}"
            )
            return
        print(
            f"[axl-eval] {left} result(s) of the earlier {self.path.name} matched no eval this command ran; "
            f"that file was kept as {keep}.",
            file=sys.stderr,
        )

    def check_runs(self, runs: int) -> None:
        """Refuse, before anything runs, a file of single runs for ``--runs N`` or the other way
        round (a journal's flags are checked as early: :func:`check_flags`)."""
        batch = [isinstance(r["metadata"].get("runIndex"), int) for r in self.results]
        if (runs > 1 and not all(batch)) or (runs == 1 and any(batch)):
            before = "--runs N" if any(batch) else "single runs"
            raise JournalError(
                f"cannot resume from the results file {self.path}: --runs differs (it holds {before}, "
                f"this command is --runs {runs})",
                hint=_RESULTS_HINT,
            )

    def _refuse(self, why: str) -> JournalError:
        return JournalError(f"cannot resume from the results file {self.path}: {why}", hint=_RESULTS_HINT)


_RESULTS_HINT = (
    "run the same command that wrote it, or run without --resume to start over (every item runs again)"
)


def _runs_of(index: int | None) -> str:
    return "a single run" if index is None else f"run {index + 1} of a --runs batch"


def earlier_results(output: Path) -> EarlierResults | None:
    """The results file ``--output`` names, as a resume source; ``None`` when there is none.
    A file that is not a results file is refused (one line)."""
    if not output.exists():
        return None
    raw = read_input_bytes(output, "results file", JournalError)
    try:
        data = pydantic_core.from_json(raw, allow_inf_nan=True)
    except ValueError as err:
        raise JournalError(
            f"cannot resume from the results file {output}: it is not JSON ({str(err).removeprefix('Invalid JSON: ')})",
            hint="pass the --output of the run to continue, or run without --resume",
        ) from None
    results = data if isinstance(data, list) else [data]
    for number, result in enumerate(results):
        if not (
            isinstance(result, dict)
            and isinstance(result.get("id"), str)
            and isinstance(result.get("items"), list)
            and isinstance(result.get("metadata"), dict)
        ):
            where = f"result {number}" if isinstance(data, list) else "it"
            raise JournalError(
                f"cannot resume from the results file {output}: {where} is not an axl-eval result "
                "(an object with id, items and metadata)",
                hint="pass the --output of the run to continue, or run without --resume",
            )
    return EarlierResults(path=output, raw=raw, results=results)


# ----------------------------------------------------------------------------------- the lock


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


# ------------------------------------------------------------------------------- the session


@dataclass(frozen=True)
class Resumed:
    """What one result takes over from the journal."""

    result_id: str
    """The id of the interrupted result (the resumed result keeps it)."""
    completed: dict[int, dict[str, Any]]
    """Items kept as they are, by index (not run again)."""
    prior_accounting: list[dict[str, Any]]
    """Accounting of every item line (charged to the budget, folded into the run's)."""
    spend: float
    """Their known spend."""
    results_file: str | None = None
    """Set when they came from the results file (no journal was left), not a journal."""
    forced: tuple[str, ...] = ()
    """The changes ``--force`` accepted (``metadata.resumed.forced``)."""


@dataclass
class StartedResult:
    """One result's hooks into the journal (see :meth:`JournalSession.start`)."""

    facts: RunFacts
    """The facts to run with (the journal's result id when resuming)."""
    on_settled: Callable[[int, dict[str, Any]], None]
    """Hand every settled item to this."""
    resumed: Resumed | None = None
    """Set when an earlier attempt's segment is continued."""


class JournalSession:
    """The journal of one ``axl-eval run`` / ``rescore`` invocation with ``--output``.

    Opening it refuses to overwrite a journal that holds paid items unless the command
    resumes it (and then checks that the flags match). Each result calls :meth:`start` (which
    checks the eval against the journal and writes its segment line) and hands its settled
    items to the returned callback; :meth:`finish` deletes the journal once the results file
    is in place, or keeps it and says why.
    """

    def __init__(
        self,
        output: Path,
        *,
        command: Literal["run", "rescore"],
        flags: JournalFlags,
        resume: bool,
        interval: float | None = None,
        retry_failed: bool = False,
        wait: bool = False,
        force: bool = False,
        on_fail: Callable[[str], None] | None = None,
    ) -> None:
        self.output = output
        self.on_fail = on_fail
        """Hears why the journal stopped being written (a full disk): the command stops admitting."""
        self.path = journal_path(output)
        self.command = command
        self.flags = flags
        self.previous: Journal | None = None
        self.used: set[int] = set()
        self.incomplete = False
        """Set when a result of the command failed after items settled: keep the journal."""
        self.abandoned = False
        """Set by a hard stop: workers left in flight may still settle, so the file stays open."""
        self.retry_failed = retry_failed
        """``--resume-failed``: items that failed run again instead of being kept."""
        self.force = force
        """``--resume --force``: keep the items of an eval whose judges or source changed."""
        self.refused = False
        """Set when a segment was refused (its error said why the journal stays)."""
        self.earlier_results: EarlierResults | None = None
        """The results file a resume continues when no journal was left (see :func:`earlier_results`)."""
        try:
            self.lock = JournalLock.acquire(self.path, wait=wait)
        except OSError as err:
            raise _cannot_write(self.path, output, err) from None
        try:
            self._open(resume, interval)
        except BaseException:
            self.lock.release()
            raise

    def _open(self, resume: bool, interval: float | None) -> None:
        output, command, flags = self.output, self.command, self.flags
        existing = read_journal(self.path) if self.path.exists() else None
        if existing is not None and existing.item_lines and not resume:
            raise UsageError(
                f"{self.path} holds {existing.item_lines} settled item(s) of an interrupted run, already "
                "paid for; this run would overwrite it",
                hint=f"add --resume to continue that run, or save its items with `axl-eval recover {self.path} "
                "--output FILE` and delete the journal to start over",
            )
        if resume and existing is not None and existing.segments:
            check_flags(existing, flags)
            if existing.segments[0].segment.command != command:
                raise JournalError(
                    f"cannot resume from {self.path}: it was written by `axl-eval "
                    f"{existing.segments[0].segment.command}`, not `axl-eval {command}`",
                    hint="resume it with the command that wrote it",
                )
            self.previous = existing
        elif resume:
            self.earlier_results = earlier_results(output) if command == "run" else None
            if self.earlier_results is not None:
                self.earlier_results.check_runs(flags.runs)
            if self.earlier_results is None:
                print(f"[axl-eval] --resume: no journal at {self.path}, so this is a fresh run.", flush=True)
            else:
                print(
                    f"[axl-eval] --resume: no journal at {self.path}; continuing from the results file {output} "
                    "(its settled items are not run again).",
                    flush=True,
                )
        try:
            if self.previous is not None:
                self.writer = JournalWriter.append_to(self.previous, interval=interval, on_fail=self.on_fail)
            else:
                self.writer = JournalWriter.create(self.path, interval=interval, on_fail=self.on_fail)
        except OSError as err:
            # Before any item runs: nothing is paid for yet.
            raise _cannot_write(self.path, output, err) from None

    def group_id(self, identity: str, label: str, runs: int) -> str | None:
        """The ``runGroupId`` of an earlier attempt of this eval's ``--runs`` batch, if any (the
        eval found by its resolved file, or, in older journals, by its label)."""
        if self.previous is None or runs == 1:
            return None
        for record in self.previous.segments:
            segment, group = record.segment, record.segment.group
            if group is not None and (segment.key.startswith(identity + " run ") or segment.label == label):
                return group.group_id
        return None

    def start(
        self,
        key: str,
        label: str,
        facts: RunFacts,
        *,
        group: RunGroup | None = None,
        source_id: str | None = None,
        rescore_head: Callable[[str], dict[str, Any]] | None = None,
        sources: Mapping[str, str] | None = None,
        old_key: str | None = None,
    ) -> StartedResult:
        """Begin (or continue) the segment of result ``key``; raises :class:`JournalError` when
        the journal's segment of that key belongs to another eval. ``key`` names the eval by its
        resolved file (``LoadedEval.identity``); ``old_key``, its spelling as journals written
        before that used it, is tried when no segment has ``key``. ``sources`` are the eval's
        source hashes (``LoadedEval.sources``)."""
        if self.earlier_results is not None:
            return self._start_from_results(key, label, facts, group, sources)
        previous = self.previous
        record = previous.by_key(key) if previous is not None else None
        if previous is not None and record is None and old_key is not None:
            record = previous.by_key(old_key)
        if previous is not None and record is not None:
            try:
                forced = check_segment(previous, record, facts, label, sources=sources, force=self.force)
            except JournalError:
                # Refused: the error names the journal, which is kept as it is, unreported.
                self.used.add(record.number)
                self.refused = True
                raise
            for line in forced:
                warn(
                    f"[axl-eval] WARNING: --force: {line}; its {len(record.final)} settled item(s) are kept."
                )
            old_source = record.segment.source_id
            if old_source != source_id:
                raise _mismatch(self.path, "the rescored results file changed", old_source, source_id)
            facts = facts.model_copy(update={"result_id": record.segment.facts.result_id})
            completed = self._kept(record)
            resumed = Resumed(
                result_id=facts.result_id,
                completed=completed,
                prior_accounting=list(record.spent),
                spend=record.known_spend,
                forced=tuple(forced),
            )
            self.used.add(record.number)
            return StartedResult(facts, self.writer.sink(record.number), resumed)
        segment = JournalSegment(
            command=self.command,
            key=key,
            label=label,
            started=iso_utc(),
            tool=tool_version(),
            flags=self.flags,
            facts=facts,
            group=group,
            source_id=source_id,
            rescore_head=rescore_head(facts.result_id) if rescore_head is not None else None,
            sources=dict(sources) if sources is not None else None,
        )
        number = self.writer.begin(segment)
        self.used.add(number)
        return StartedResult(facts, self.writer.sink(number))

    def _kept(self, record: SegmentRecord) -> dict[int, dict[str, Any]]:
        """The items of ``record`` this resume keeps: the final ones, minus failed ones under
        ``--resume-failed``."""
        final = record.final
        if self.retry_failed:
            return {i: item for i, item in final.items() if item.get("outcome") != "failed"}
        return final

    def _start_from_results(
        self,
        key: str,
        label: str,
        facts: RunFacts,
        group: RunGroup | None,
        sources: Mapping[str, str] | None,
    ) -> StartedResult:
        """:meth:`start` when the resume continues a results file: take its next result, check
        it as a journal segment is checked, then write a fresh journal segment and every item
        that result holds that had run, so that a crash from now on loses none of them."""
        earlier = self.earlier_results
        assert earlier is not None
        record, forced = earlier.take(facts, label, group, force=self.force)
        segment = JournalSegment(
            command=self.command,
            key=key,
            label=label,
            started=iso_utc(),
            tool=tool_version(),
            flags=self.flags,
            facts=record.segment.facts,
            group=group,
            sources=dict(sources) if sources is not None else None,
        )
        number = self.writer.begin(segment)
        self.used.add(number)
        sink = self.writer.sink(number)
        for index, item in record.items.items():
            sink(index, item)  # the sink leaves out stubs (budget-skipped, cancelled): nothing ran
        self.writer.flush()
        resumed = Resumed(
            result_id=record.segment.facts.result_id,
            completed=self._kept(record),
            prior_accounting=list(record.spent),
            spend=record.known_spend,
            results_file=earlier.path.name,
            forced=tuple(forced),
        )
        return StartedResult(record.segment.facts, sink, resumed)

    def unused(self) -> list[SegmentRecord]:
        """Segments of the earlier attempt this command did not continue (with items)."""
        if self.previous is None:
            return []
        return [r for r in self.previous.segments if r.number not in self.used and r.items]

    def finish(self, *, complete: bool) -> None:
        """Close the journal (see :meth:`_finish`), then release its lock: the lock is held
        until the journal is deleted or complete, so no other process reads it half-done."""
        try:
            self._finish(complete=complete)
        finally:
            if not self.abandoned:  # after a hard stop, workers may still write: held until exit
                self.lock.release()

    def _finish(self, *, complete: bool) -> None:
        """Close the journal; delete it when ``complete`` (the results file is in place and the
        run was not interrupted) and nothing of another eval is left in it, else say why it
        stays."""
        left = self.unused()
        if self.earlier_results is not None:
            self.earlier_results.keep_unused()
        self.writer.close(sync=not (complete and not left), release=not self.abandoned)
        if complete and not left:
            # The results file must be on disk before the journal stops being: a power cut
            # right after the unlink would otherwise lose both (issue 25 item 6).
            sync_file_and_directory(Path(self.output))
            self.path.unlink(missing_ok=True)
            return
        if not self.path.exists():
            return
        try:
            paid = read_journal(self.path).item_lines
        except JournalError:
            paid = 1
        if not paid:
            self.path.unlink(missing_ok=True)  # nothing settled: nothing to keep
            return
        if left:
            labels = ", ".join(sorted({r.segment.label for r in left}))
            print(
                f"[axl-eval] The journal {self.path} also holds settled items of {labels}, which this "
                f"command did not run; it was kept. `axl-eval recover {self.path} --output FILE` writes them out.",
                file=sys.stderr,
            )
        elif not complete and not self.refused and self.writer.failed is None:
            # (A journal that failed is not the whole story: the results say where the rest went.)
            print(
                f"[axl-eval] The journal {self.path} was kept: the same command with --resume continues "
                "the run without running or paying for its settled items again.",
                file=sys.stderr,
            )

    def write_settled(self, write: Callable[[list[dict[str, Any]]], None]) -> int:
        """The hard stop: flush, then hand ``write`` a result per segment built from the journal
        alone (marked ``recovered``); returns the number of items written (0: nothing called)."""
        self.abandoned = True
        self.writer.flush()
        journal = read_journal(self.path)
        results = recover_results(_keep_items(journal))
        if not results:
            return 0
        write(results)
        return sum(len(r["items"]) for r in results)


def _cannot_write(path: Path, output: Path, err: OSError) -> InputFileError:
    return InputFileError(
        f"cannot write the run journal {path} next to --output {output}: {err.strerror or err}",
        hint="pass an --output in a directory you can write",
    )


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


def _keep_items(journal: Journal) -> Journal:
    return replace(journal, segments=[r for r in journal.segments if r.items])


def stamp_resumed(result: dict[str, Any], resumed: Resumed | None) -> None:
    """``metadata.resumed``: how much of a result came from the journal."""
    if resumed is None:
        return
    result["metadata"]["resumed"] = {
        "itemsFromJournal": len(resumed.completed),
        "spendFromJournal": resumed.spend,
    }
    if resumed.results_file is not None:
        result["metadata"]["resumed"]["resultsFile"] = resumed.results_file
    if resumed.forced:
        result["metadata"]["resumed"]["forced"] = list(resumed.forced)


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
