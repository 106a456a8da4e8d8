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
from axl_action.schema.jsonio import dumps_js_chunks
from axl_action.schema.result import ColumnCache, EvalResult, RunHeader
from axl_action.schema.view import ItemShapeError, RunView, item_columns

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
    """Parse JSON bytes with pydantic-core (jiter); refuses NaN/Infinity like ``JSON.parse``."""
    try:
        return pydantic_core.from_json(raw, allow_inf_nan=False)
    except ValueError as err:
        raise _json_error(str(err), source, raw) from None


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
    source = str(path)
    raw = read_input_bytes(path, "results file", ResultFileError)
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise ResultFileError(
            f"{source} is not UTF-8 text (byte {err.start} is {raw[err.start]:#04x})", hint=_HINT
        ) from None
    return raw


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
    """:func:`load_run_views` of several files, read at the same time where the platform allows.

    Parsing a results file is CPU-bound and holds the GIL, so threads cannot overlap two of
    them; a forked child can. On Linux, when no other thread runs (fork copies only the
    calling thread, so a lock another thread holds would stay locked in the child), every
    file after the first is read in a child process that sends back its views, while this
    process reads the first: compare reads its two 16 MB files in the time of one. Anywhere
    else the files are read one after the other. Either way the results, and the error raised
    for the first bad file in argument order, are the same.
    """
    if len(paths) < 2 or not _can_fork():
        return [load_run_views(p) for p in paths]
    children = [_read_in_child(p) for p in paths[1:]]
    try:
        first = load_run_views(paths[0])
        return [first, *(_collect(fd, path) for (_, fd), path in zip(children, paths[1:], strict=True))]
    finally:
        for pid, fd in children:
            _reap(pid, fd)


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
            try:
                payload: tuple[str, Any] = ("ok", load_run_views(path))
            except ResultFileError as err:
                payload = ("error", err)
            with os.fdopen(write_end, "wb") as out:
                pickle.dump(payload, out, protocol=pickle.HIGHEST_PROTOCOL)
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
    assert isinstance(value, ViewFile)
    return value


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


def _parse_views(raw: bytes, source: str) -> ViewFile:
    data = _decode_json(raw, source)
    _check_versions(data, source)
    is_list = isinstance(data, list)
    entries: list[Any] = data if is_list else [data]
    if is_list and not entries:
        raise ResultFileError(f"{source} holds an empty list of results", hint=_HINT)
    runs = []
    for i in range(len(entries)):
        entry = entries[i]
        prefix = f"[{i}]." if is_list else ""
        _check_shape(entry, source, f"entry [{i}]" if is_list else "")
        items = entry.pop("items")
        if not isinstance(items, list):
            raise ResultFileError(
                f"{source} is not a valid axl-eval result: at {prefix}items: expected a list", hint=_HINT
            )
        try:
            header = RunHeader.model_validate(entry, context=WIRE)
        except ValidationError as err:
            raise _explain(err, source, f"[{i}]" if is_list else "") from None
        try:
            columns = item_columns(items, header.scorer_names)
        except ItemShapeError as err:
            raise ResultFileError(
                f"{source} is not a valid axl-eval result: at {prefix}{err}", hint=_HINT
            ) from None
        entries[i] = None  # drop this run's parsed items before reading the next
        del items
        runs.append(RunView(header=header, items=columns))
    return ViewFile(path=source, runs=runs, is_list=is_list)


Results = EvalResult | Mapping[str, Any] | Sequence[EvalResult | Mapping[str, Any]]


def _wire(result: EvalResult | Mapping[str, Any]) -> Any:
    return result.to_wire() if isinstance(result, EvalResult) else result


def result_json_chunks(
    results: Results, on_replaced: Callable[[list[str]], None] | None = None
) -> Iterator[bytes]:
    """:func:`result_json_bytes` in pieces (see :func:`~axl_action.schema.jsonio.dumps_js_chunks`),
    so that a writer never holds the whole text twice."""
    with gc_paused():
        if isinstance(results, EvalResult | Mapping):
            return dumps_js_chunks(_wire(results), on_replaced)
        return dumps_js_chunks([_wire(r) for r in results], on_replaced)


def result_json_bytes(results: Results, on_replaced: Callable[[list[str]], None] | None = None) -> bytes:
    """UTF-8 JSON of one result (an object) or several (an array), as the TS CLI writes it.

    Wire data (the runner's ordered dicts) is written as it is: no model is built to write it.
    """
    return b"".join(result_json_chunks(results, on_replaced))


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
    pieces = result_json_chunks(results, on_replaced)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.writelines(pieces)
        # mkstemp creates 0600; a results file is an ordinary shareable artifact.
        os.chmod(tmp, 0o644)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target
