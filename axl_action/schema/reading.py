"""Reading results files as far as the standard library goes, and several at once.

The bytes, the JSON (pydantic-core's parser), the checks every reader makes first, and the
item pass (``schema.itempass``) need neither numpy nor pydantic, so this module imports
neither: ``axl-eval compare`` forks its readers (:class:`ViewFileReads`) before it imports
them, and the parent imports while the children parse. ``schema.io`` turns what is read here
into run views (validating each run's header) and result models.
"""

from __future__ import annotations

import contextlib
import gc
import json
import os
import pickle
import signal
import sys
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import pydantic_core

from axl_action.errors import ResultFileError, read_input_bytes
from axl_action.schema.itempass import ItemFacts, ItemShapeError, item_facts

if TYPE_CHECKING:
    from axl_action.schema.io import ViewFile

HINT = "expected a results file written by `axl-eval --output` (axl-eval 0.24 or older)"
"""The hint of a file that is not a results file this version reads."""

KNOWN_ACCOUNTING_VERSIONS: tuple[int, ...] = (1,)
"""Accounting record versions this reader understands; any other is refused, never certified."""


def check_shape(obj: Any, source: str, where: str) -> None:
    if not isinstance(obj, dict):
        raise ResultFileError(
            f"{source} is not an axl-eval result: {where or 'the top level'} is a "
            f"{type(obj).__name__}, not an object",
            hint=HINT,
        )
    missing = [k for k in ("items", "summary") if k not in obj]
    if missing:
        keys = ", ".join(list(obj)[:8]) or "none"
        raise ResultFileError(
            f"{source} is not an axl-eval result: {where or 'the top level'} has no "
            f"{' or '.join(repr(k) for k in missing)} (keys found: {keys})",
            hint=HINT,
        )


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic GC while building many small objects that are all kept.

    Loading 100,000 items (or building 300,000 item changes in compare) allocates millions of
    acyclic containers, none of them garbage; without this the collector rescans the growing
    heap again and again, which makes such builds super-linear. Reference counting still
    frees everything; the collector's previous state is restored afterwards.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def decode_json(raw: bytes, source: str) -> Any:
    """Parse JSON bytes with pydantic-core (jiter); refuses NaN/Infinity like ``JSON.parse``.

    jiter refuses invalid UTF-8 itself, so the bytes are only decoded as text (for the
    message naming the bad byte) when it refused them: a good file is not scanned twice.
    """
    try:
        return pydantic_core.from_json(raw, allow_inf_nan=False)
    except ValueError as err:
        _check_utf8(raw, source)
        raise _json_error(str(err), source, raw) from None


def _check_utf8(raw: bytes, source: str) -> None:
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise ResultFileError(
            f"{source} is not UTF-8 text (byte {err.start} is {raw[err.start]:#04x})", hint=HINT
        ) from None


def _json_error(message: str, source: str, raw: bytes) -> ResultFileError:
    """One line for JSON that does not parse, with what usually causes it."""
    message = message.removeprefix("Invalid JSON: ")
    hint = HINT
    if "recursion limit" in message:
        message = f"nesting deeper than {_MAX_DEPTH} levels ({message})"
        hint = "a results file never nests that deep; check what wrote it"
    elif source.endswith(".py"):
        return ResultFileError(
            f"{source} is an eval file, not a results file",
            hint=f"run it first with `axl-eval {source} --output results.json`, then pass results.json",
        )
    elif raw.lstrip()[:1] not in (b"{", b"["):
        hint = "pass the results JSON written by `axl-eval --output`, not an eval file or other text"
    elif b"NaN" in raw or b"Infinity" in raw:
        hint = "NaN and Infinity are not JSON numbers; the writer must use null"
    return ResultFileError(f"{source} is not valid JSON: {message}", hint=hint)


# jiter's nesting limit; JSON.parse has none, but no results file comes near it.
_MAX_DEPTH = 200


def check_versions(data: Any, source: str) -> None:
    """Refuse accounting and schema versions this reader does not know (they could mean anything)."""
    entries = data if isinstance(data, list) else [data]
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict):
            return
        where = f"[{i}]." if isinstance(data, list) else ""
        accounting = entry.get("accounting")
        if isinstance(accounting, dict) and "version" in accounting:
            version = accounting["version"]
            if version not in KNOWN_ACCOUNTING_VERSIONS:
                raise ResultFileError(
                    f"{source} is not a results file this version can read: at {where}accounting.version: "
                    f"unknown accounting version {json.dumps(version)} (known: "
                    f"{', '.join(map(str, KNOWN_ACCOUNTING_VERSIONS))})",
                    hint="upgrade axl-eval-action, or compare files written by axl-eval 0.24 or older",
                )


def read_bytes(path: str | os.PathLike[str]) -> bytes:
    """The bytes of a results file the user named (a missing or unreadable file is one error)."""
    return read_input_bytes(path, "results file", ResultFileError)


@dataclass(frozen=True)
class RunRead:
    """One run as the item pass leaves it: its header still to validate (``raw``), the scorer
    names its facts were read with, its item facts, or the problem that ended the pass at
    this run."""

    raw: dict[str, Any] | None = None
    names: list[str] | None = None
    facts: ItemFacts | None = None
    error: ResultFileError | None = None


@dataclass(frozen=True)
class FileRead:
    """A results file after the item pass: its runs in file order, up to the first problem."""

    source: str
    is_list: bool
    runs: list[RunRead]


def raw_scorer_names(entry: dict[str, Any]) -> list[str] | None:
    """The keys of ``summary.scorers`` as written, which validation keeps (``RunHeader.
    scorer_names``); None when they are not a plain object (the header is then invalid)."""
    summary = entry.get("summary")
    scorers = summary.get("scorers") if type(summary) is dict else None
    if type(scorers) is not dict:
        return None
    return list(scorers)


def read_runs(raw: bytes, source: str, retain: list[Any] | None = None) -> FileRead:
    """The item pass over a results file: each run's item facts, read with the scorer names
    as written, and its header left to the caller (``schema.io``), so a forked reader never
    builds the header's validator. The first problem of a run ends the pass and is kept with
    that run, so the caller raises problems in file order.

    Each run's parsed items are dropped as soon as its facts are read, or handed to
    ``retain`` by a caller that is about to exit anyway (freeing 100,000 parsed items one
    object at a time takes 80 ms that a forked reader need not spend).
    """
    data = decode_json(raw, source)
    check_versions(data, source)
    is_list = isinstance(data, list)
    entries: list[Any] = data if is_list else [data]
    if is_list and not entries:
        raise ResultFileError(f"{source} holds an empty list of results", hint=HINT)
    runs: list[RunRead] = []
    for i in range(len(entries)):
        entry = entries[i]
        prefix = f"[{i}]." if is_list else ""
        try:
            check_shape(entry, source, f"entry [{i}]" if is_list else "")
        except ResultFileError as err:
            runs.append(RunRead(error=err))
            break
        items = entry.pop("items")
        if not isinstance(items, list):
            not_a_list = ResultFileError(
                f"{source} is not a valid axl-eval result: at {prefix}items: expected a list", hint=HINT
            )
            runs.append(RunRead(error=not_a_list))
            break
        names = raw_scorer_names(entry)
        if names is None:  # left for the caller's validation to refuse
            runs.append(RunRead(raw=entry))
            break
        try:
            facts = item_facts(items, names)
        except ItemShapeError as err:
            failed = ResultFileError(f"{source} is not a valid axl-eval result: at {prefix}{err}", hint=HINT)
            runs.append(RunRead(raw=entry, names=names, error=failed))
            break
        if retain is not None:
            retain.append(items)
        entries[i] = None  # drop this run's parsed items before reading the next
        del items
        runs.append(RunRead(raw=entry, names=names, facts=facts))
    return FileRead(source, is_list, runs)


class ViewFileReads:
    """Results files being read as run views, in forked children where the platform allows,
    while the caller goes on (``compare`` imports numpy, pydantic and its comparison code
    meanwhile).

    Parsing a results file is CPU-bound and holds the GIL, so threads cannot overlap two of
    them; forked children can. On Linux, when no other thread runs (fork copies only the
    calling thread, so a lock another thread holds would stay locked in the child), each file
    is read by a child that runs the item pass (:func:`read_runs`), sends back the item facts
    and the unvalidated headers, and exits without freeing what it parsed; :meth:`wait`
    validates the headers here and builds the views. Anywhere else, and for a single file,
    :meth:`wait` reads the files one after the other. Either way the views, and the error
    raised for the first bad file in argument order, are the same. Use it as a context
    manager, so children are reaped even when the caller fails before :meth:`wait`.
    """

    def __init__(self, paths: Sequence[str | os.PathLike[str]]) -> None:
        self._paths = list(paths)
        self._children: list[tuple[int, int]] = []
        if len(self._paths) >= 2 and _can_fork():
            try:
                for path in self._paths:
                    self._children.append(_read_in_child(path))
            except OSError:  # out of processes or pipes: the files are read here instead
                self.close()

    def wait(self) -> list[ViewFile]:
        """The views of every file, in argument order; raises the first file's error."""
        from axl_action.schema import io, view  # numpy and pydantic: imported while children parse

        if not self._children:
            return [io.load_run_views(p) for p in self._paths]
        try:
            # The children leave the headers to this process, which builds their validator
            # (and the coverage models') while they parse instead of each child after.
            view.prepare_validators()
            shared: dict[bytes, list[Any]] = {}
            with gc_paused():  # unpickling builds many small objects, all of them kept
                return [
                    io.views_of_read(_collect(fd, shared), path)
                    for (_, fd), path in zip(self._children, self._paths, strict=True)
                ]
        finally:
            self.close()

    def close(self) -> None:
        """Reap the children (killing any still reading)."""
        children, self._children = self._children, []
        for pid, fd in children:
            _reap(pid, fd)

    def __enter__(self) -> ViewFileReads:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _can_fork() -> bool:
    return sys.platform == "linux" and hasattr(os, "fork") and threading.active_count() == 1


def _read_in_child(path: str | os.PathLike[str]) -> tuple[int, int]:
    """Fork a child that reads ``path`` and pickles ``("ok", FileRead, inputs)`` (see
    :func:`_inputs_apart`) or ``("error", err, [])`` into a pipe; returns ``(pid, read end)``."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - runs in the child, which never returns
        status = 1
        try:
            os.close(read_end)
            parsed: list[Any] = []  # freed by the exit, not item by item
            try:
                gc.disable()
                read, inputs = _inputs_apart(read_runs(read_bytes(path), str(path), parsed))
                payload: tuple[str, Any, list[bytes | None]] = ("ok", read, inputs)
            except ResultFileError as err:
                payload = ("error", err, [])
            # Pickled whole before writing: a pickler writing into the pipe would stall on it
            # until the parent reads this child, after the children before it.
            blob = pickle.dumps(payload, protocol=pickle.HIGHEST_PROTOCOL)
            with os.fdopen(write_end, "wb") as out:
                out.write(blob)
            status = 0
        finally:
            # No interpreter shutdown in a forked child: no atexit handlers, no flushing of
            # buffers copied from the parent, and no freeing of the parsed file.
            os._exit(status)
    os.close(write_end)
    return pid, read_end


def _inputs_apart(read: FileRead) -> tuple[FileRead, list[bytes | None]]:
    """The read without its runs' item inputs, and those inputs pickled on their own.

    Both sides of a comparison usually ran the same dataset, so their inputs pickle to the
    same bytes: :func:`_collect` then unpickles them once, and the two runs share one list,
    which pairing compares by identity instead of item by item (20,000 inputs: 5-7 ms to
    unpickle and 5-6 ms to compare, twice the first on the command's critical path).
    """
    blobs: list[bytes | None] = []
    runs: list[RunRead] = []
    for run in read.runs:
        if run.facts is None:
            blobs.append(None)
            runs.append(run)
            continue
        blobs.append(pickle.dumps(run.facts.inputs, protocol=pickle.HIGHEST_PROTOCOL))
        runs.append(replace(run, facts=replace(run.facts, inputs=[])))
    return replace(read, runs=runs), blobs


def _collect(fd: int, shared: dict[bytes, list[Any]]) -> FileRead | None:
    """What a child read, or its error raised here; None when the child died (killed, out of
    memory) before sending everything, and the file is read here instead. ``shared``: the
    inputs unpickled so far by their bytes (see :func:`_inputs_apart`)."""
    with os.fdopen(os.dup(fd), "rb") as data:
        raw = data.read()
    try:
        status, value, blobs = pickle.loads(raw)
    except Exception:
        return None
    if status == "error":
        raise value
    assert isinstance(value, FileRead)
    runs: list[RunRead] = []
    for run, blob in zip(value.runs, blobs, strict=True):
        if blob is not None and run.facts is not None:
            inputs = shared.get(blob)
            if inputs is None:
                inputs = shared[blob] = pickle.loads(blob)
            run = replace(run, facts=replace(run.facts, inputs=inputs))
        runs.append(run)
    return replace(value, runs=runs)


def _reap(pid: int, fd: int) -> None:
    with contextlib.suppress(OSError):
        os.close(fd)
    with contextlib.suppress(ChildProcessError):
        if os.waitpid(pid, os.WNOHANG) == (0, 0):
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
