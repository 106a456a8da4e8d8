"""Reading and writing results files (one result, or a JSON array of results).

Two readers, one parser (pydantic-core's, over the bytes):

* :func:`load_result_file` validates the whole file into :class:`EvalResult` models: for code
  that needs every field (reports, merge, rescore).
* :func:`load_run_views` validates only what counting and comparing read, and builds
  :class:`~axl_action.schema.view.RunView` columns from it (compare, gates).

Both refuse what ``JSON.parse`` refuses (NaN, Infinity), nesting deeper than 200 levels, text
that is not UTF-8, and accounting versions this reader does not know, each with one line.
"""

from __future__ import annotations

import contextlib
import gc
import json
import os
import pickle
import signal
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pydantic_core
from pydantic import ValidationError

from axl_action.errors import ResultFileError, read_input_bytes, validation_problem
from axl_action.schema.accounting import KNOWN_ACCOUNTING_VERSIONS
from axl_action.schema.base import WIRE
from axl_action.schema.jsonio import dumps_js_bytes
from axl_action.schema.result import ColumnCache, EvalResult, RunHeader
from axl_action.schema.view import ItemColumns, ItemShapeError, RunView, item_columns

_HINT = "expected a results file written by `axl-eval --output` (axl-eval 0.24 or older)"


@dataclass(frozen=True)
class ResultFile:
    """A parsed results file."""

    path: str
    """Where it was read from (for messages)."""
    results: list[EvalResult]
    """The results, in file order (one for a single-result file)."""
    is_list: bool
    """True when the file holds a JSON array (multi-run or several evals)."""


def _explain(err: ValidationError, source: str, prefix: str) -> ResultFileError:
    return ResultFileError(
        f"{source} is not a valid axl-eval result: {validation_problem(err, prefix=prefix)}", hint=_HINT
    )


def _check_shape(obj: Any, source: str, where: str) -> None:
    if not isinstance(obj, dict):
        raise ResultFileError(
            f"{source} is not an axl-eval result: {where or 'the top level'} is a "
            f"{type(obj).__name__}, not an object",
            hint=_HINT,
        )
    missing = [k for k in ("items", "summary") if k not in obj]
    if missing:
        keys = ", ".join(list(obj)[:8]) or "none"
        raise ResultFileError(
            f"{source} is not an axl-eval result: {where or 'the top level'} has no "
            f"{' or '.join(repr(k) for k in missing)} (keys found: {keys})",
            hint=_HINT,
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


def parse_result_data(data: Any, source: str = "<results>") -> ResultFile:
    """Validate already-decoded JSON as a result or a list of results."""
    with gc_paused():
        return _parse(data, source)


def _parse(data: Any, source: str) -> ResultFile:
    if isinstance(data, list):
        if not data:
            raise ResultFileError(f"{source} holds an empty list of results", hint=_HINT)
        results = []
        for i, entry in enumerate(data):
            _check_shape(entry, source, f"entry [{i}]")
            results.append(_result(entry, source, f"[{i}]"))
        return ResultFile(path=source, results=results, is_list=True)
    _check_shape(data, source, "")
    return ResultFile(path=source, results=[_result(data, source, "")], is_list=False)


def _result(entry: dict[str, Any], source: str, where: str) -> EvalResult:
    """One validated result, with the columns of its items read from the same parsed JSON (so
    counting it later needs no dump of the item models)."""
    try:
        result = EvalResult.model_validate(entry, context=WIRE)
    except ValidationError as err:
        raise _explain(err, source, where) from None
    items = entry.get("items")
    if isinstance(items, list):
        # The model accepted every item, so a field the columns would refuse can only be
        # one validation coerced; such a result is counted from its models instead.
        with contextlib.suppress(ItemShapeError):
            result._columns = ColumnCache(result.items, item_columns(items, result.scorer_names))
    return result


def _decode_json(raw: bytes, source: str) -> Any:
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
            f"{source} is not UTF-8 text (byte {err.start} is {raw[err.start]:#04x})", hint=_HINT
        ) from None


def _json_error(message: str, source: str, raw: bytes) -> ResultFileError:
    """One line for JSON that does not parse, with what usually causes it."""
    message = message.removeprefix("Invalid JSON: ")
    hint = _HINT
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


def _check_versions(data: Any, source: str) -> None:
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


def parse_result_text(text: str | bytes, source: str = "<results>") -> ResultFile:
    """Parse JSON text as a results file."""
    raw = text.encode("utf-8") if isinstance(text, str) else text
    with gc_paused():
        data = _decode_json(raw, source)
    _check_versions(data, source)
    return parse_result_data(data, source)


def _read_bytes(path: str | os.PathLike[str]) -> bytes:
    return read_input_bytes(path, "results file", ResultFileError)


def load_result_file(path: str | os.PathLike[str]) -> ResultFile:
    """Read and validate a results file into models; every problem is a ``ResultFileError``."""
    return parse_result_text(_read_bytes(path), str(path))


# ---------------------------------------------------------------- run views


@dataclass(frozen=True)
class ViewFile:
    """A results file read as run views (for counting and comparing)."""

    path: str
    """Where it was read from (for messages)."""
    runs: list[RunView]
    """The runs, in file order."""
    is_list: bool
    """True when the file holds a JSON array."""


def load_run_views(path: str | os.PathLike[str]) -> ViewFile:
    """Read a results file straight into run views, building no model per item.

    pydantic-core parses the bytes (measured on the 20,000-item TypeScript file: as fast as
    a ``TypeAdapter.validate_json`` of only the fields read, at a third of its peak memory);
    the header is validated into :class:`RunHeader`; one pass over the items type-checks the
    fields the columns read and builds the columns. Runs are read one after the other, so
    only one file's parsed JSON is alive at a time.
    """
    return parse_run_views(_read_bytes(path), str(path))


def load_run_view_files(paths: Sequence[str | os.PathLike[str]]) -> list[ViewFile]:
    """:func:`load_run_views` of several files, read at the same time where the platform allows
    (see :class:`ViewFileReads`)."""
    with ViewFileReads(paths) as reads:
        return reads.wait()


class ViewFileReads:
    """Results files being read as run views, in forked children where the platform allows,
    while the caller goes on (``compare`` imports its comparison code meanwhile).

    Parsing a results file is CPU-bound and holds the GIL, so threads cannot overlap two of
    them; forked children can. On Linux, when no other thread runs (fork copies only the
    calling thread, so a lock another thread holds would stay locked in the child), each file
    is read by a child that sends back its views and exits without freeing what it parsed:
    compare reads its two 16 MB files in the time of one. Anywhere else, and for a single
    file, :meth:`wait` reads them one after the other. Either way the views, and the error
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
        if not self._children:
            return [load_run_views(p) for p in self._paths]
        try:
            # The children leave the headers to this process, which builds their validator
            # while they parse instead of each child building it after.
            RunHeader.model_rebuild()
            with gc_paused():  # unpickling builds many small objects, all of them kept
                return [_collect(fd, path) for (_, fd), path in zip(self._children, self._paths, strict=True)]
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
    """Fork a child that reads ``path`` and pickles ``("ok", views)`` or ``("error", err)`` into
    a pipe; returns ``(pid, read end)``."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - runs in the child, which never returns
        status = 1
        try:
            os.close(read_end)
            parsed: list[Any] = []  # freed by the exit, not item by item
            try:
                gc.disable()
                payload: tuple[str, Any] = ("ok", _read_runs(_read_bytes(path), str(path), parsed))
            except ResultFileError as err:
                payload = ("error", err)
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


def _collect(fd: int, path: str | os.PathLike[str]) -> ViewFile:
    """The views a child read, or its error; a child that died reads the file here instead."""
    with os.fdopen(os.dup(fd), "rb") as data:
        raw = data.read()
    try:
        status, value = pickle.loads(raw)
    except Exception:  # the child died (killed, out of memory) before sending everything
        return load_run_views(path)
    if status == "error":
        raise value
    assert isinstance(value, _ReadFile)
    try:
        return _finish(value)
    except _NamesChanged:
        return load_run_views(path)


def _reap(pid: int, fd: int) -> None:
    with contextlib.suppress(OSError):
        os.close(fd)
    with contextlib.suppress(ChildProcessError):
        if os.waitpid(pid, os.WNOHANG) == (0, 0):
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)


def parse_run_views(raw: bytes, source: str = "<results>") -> ViewFile:
    """:func:`load_run_views` over bytes already read."""
    with gc_paused():
        return _parse_views(raw, source)


@dataclass(frozen=True)
class _ReadRun:
    """One run as the item pass leaves it: the header still to validate (``raw``) or already
    validated (``header``), its columns, or the error that ended the read at this run."""

    raw: dict[str, Any] | None = None
    header: RunHeader | None = None
    names: list[str] | None = None
    columns: ItemColumns | None = None
    error: ResultFileError | None = None


@dataclass(frozen=True)
class _ReadFile:
    source: str
    is_list: bool
    runs: list[_ReadRun]


def _raw_scorer_names(entry: dict[str, Any]) -> list[str] | None:
    """The keys of ``summary.scorers`` as written, which validation keeps (``RunHeader.
    scorer_names``); None when they are not a plain object, and the header is validated first."""
    summary = entry.get("summary")
    scorers = summary.get("scorers") if type(summary) is dict else None
    if type(scorers) is not dict:
        return None
    return list(scorers)


def _read_runs(
    raw: bytes, source: str, retain: list[Any] | None = None, *, validate_first: bool = False
) -> _ReadFile:
    """The item pass over a results file: each run's columns, built with the scorer names as
    written, and its header left to :func:`_finish` (so a forked reader need not build the
    header's validator while its parent can). The first problem of a run ends the pass and
    is kept with that run, so :func:`_finish` raises problems in file order.

    Each run's parsed items are dropped as soon as its columns are built, or handed to
    ``retain`` by a caller that is about to exit anyway (freeing 100,000 parsed items one
    object at a time takes 80 ms that a forked reader need not spend).
    """
    data = _decode_json(raw, source)
    _check_versions(data, source)
    is_list = isinstance(data, list)
    entries: list[Any] = data if is_list else [data]
    if is_list and not entries:
        raise ResultFileError(f"{source} holds an empty list of results", hint=_HINT)
    runs: list[_ReadRun] = []
    for i in range(len(entries)):
        entry = entries[i]
        prefix = f"[{i}]." if is_list else ""
        try:
            _check_shape(entry, source, f"entry [{i}]" if is_list else "")
        except ResultFileError as err:
            runs.append(_ReadRun(error=err))
            break
        items = entry.pop("items")
        if not isinstance(items, list):
            not_a_list = ResultFileError(
                f"{source} is not a valid axl-eval result: at {prefix}items: expected a list", hint=_HINT
            )
            runs.append(_ReadRun(error=not_a_list))
            break
        header = None
        names = None if validate_first else _raw_scorer_names(entry)
        if names is None:
            try:
                header = RunHeader.model_validate(entry, context=WIRE)
            except ValidationError as err:
                runs.append(_ReadRun(error=_explain(err, source, f"[{i}]" if is_list else "")))
                break
            names = header.scorer_names
        try:
            columns = item_columns(items, names)
        except ItemShapeError as err:
            failed = ResultFileError(f"{source} is not a valid axl-eval result: at {prefix}{err}", hint=_HINT)
            runs.append(_ReadRun(raw=None if header else entry, header=header, names=names, error=failed))
            break
        if retain is not None:
            retain.append(items)
        entries[i] = None  # drop this run's parsed items before reading the next
        del items
        runs.append(_ReadRun(raw=None if header else entry, header=header, names=names, columns=columns))
    return _ReadFile(source, is_list, runs)


class _NamesChanged(Exception):
    """Validation changed the scorer names the columns were built with (never seen: the
    names are dict keys, which validation keeps); the file is read again here."""


def _finish(read: _ReadFile) -> ViewFile:
    """Validate the headers the item pass left, in file order, and raise the first problem."""
    views = []
    for i, run in enumerate(read.runs):
        header = run.header
        if run.raw is not None:
            try:
                header = RunHeader.model_validate(run.raw, context=WIRE)
            except ValidationError as err:
                raise _explain(err, read.source, f"[{i}]" if read.is_list else "") from None
            if header.scorer_names != run.names:
                raise _NamesChanged
        if run.error is not None:
            raise run.error
        assert header is not None and run.columns is not None
        views.append(RunView(header=header, items=run.columns))
    return ViewFile(path=read.source, runs=views, is_list=read.is_list)


def _parse_views(raw: bytes, source: str) -> ViewFile:
    try:
        return _finish(_read_runs(raw, source))
    except _NamesChanged:
        return _finish(_read_runs(raw, source, validate_first=True))


Results = EvalResult | Mapping[str, Any] | Sequence[EvalResult | Mapping[str, Any]]


def _wire(result: EvalResult | Mapping[str, Any]) -> Any:
    return result.to_wire() if isinstance(result, EvalResult) else result


def result_json_bytes(results: Results, on_replaced: Callable[[list[str]], None] | None = None) -> bytes:
    """UTF-8 JSON of one result (an object) or several (an array), as the TS CLI writes it.

    Wire data (the runner's ordered dicts) is written as it is: no model is built to write it.
    """
    with gc_paused():
        if isinstance(results, EvalResult | Mapping):
            return dumps_js_bytes(_wire(results), on_replaced)
        return dumps_js_bytes([_wire(r) for r in results], on_replaced)


def result_json(results: Results) -> str:
    """:func:`result_json_bytes` as text."""
    return result_json_bytes(results).decode("utf-8")


def write_result_file(
    path: str | os.PathLike[str],
    results: Results,
    on_replaced: Callable[[list[str]], None] | None = None,
) -> Path:
    """Write atomically (temp file + rename), so an interrupted write never leaves half a file.

    ``on_replaced`` hears the paths of text that held lone surrogates (written as U+FFFD).
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    text = result_json_bytes(results, on_replaced)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(text)
        # mkstemp creates 0600; a results file is an ordinary shareable artifact.
        os.chmod(tmp, 0o644)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target
