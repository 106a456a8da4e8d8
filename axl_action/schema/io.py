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
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from axl_action.atomic import write_atomic
from axl_action.errors import ResultFileError, validation_problem
from axl_action.schema.base import WIRE
from axl_action.schema.itempass import ItemShapeError
from axl_action.schema.jsonio import dumps_js_chunks
from axl_action.schema.reading import (
    HINT,
    FileRead,
    check_shape,
    check_versions,
    decode_json,
    read_bytes,
    read_runs,
)
from axl_action.schema.result import ColumnCache, EvalResult, RunHeader
from axl_action.schema.view import RunView, item_columns


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
        f"{source} is not a valid axl-eval result: {validation_problem(err, prefix=prefix)}", hint=HINT
    )


def parse_result_data(data: Any, source: str = "<results>") -> ResultFile:
    """Validate already-decoded JSON as a result or a list of results."""
    return _parse(data, source)


def _parse(data: Any, source: str) -> ResultFile:
    if isinstance(data, list):
        if not data:
            raise ResultFileError(f"{source} holds an empty list of results", hint=HINT)
        results = []
        for i, entry in enumerate(data):
            check_shape(entry, source, f"entry [{i}]")
            results.append(_result(entry, source, f"[{i}]"))
        return ResultFile(path=source, results=results, is_list=True)
    check_shape(data, source, "")
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


def parse_result_text(text: str | bytes, source: str = "<results>") -> ResultFile:
    """Parse JSON text as a results file."""
    raw = text.encode("utf-8") if isinstance(text, str) else text
    data = decode_json(raw, source)
    check_versions(data, source)
    return parse_result_data(data, source)


def load_result_file(path: str | os.PathLike[str]) -> ResultFile:
    """Read and validate a results file into models; every problem is a ``ResultFileError``."""
    return parse_result_text(read_bytes(path), str(path))


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
    return parse_run_views(read_bytes(path), str(path))


def load_run_view_files(paths: Sequence[str | os.PathLike[str]]) -> list[ViewFile]:
    """:func:`load_run_views` of several files, one after the other; the first bad file in
    argument order raises. (``axl-eval compare`` reads its two files in worker processes it
    starts itself, ``cli/parallel_read.py``: a library call starts no process.)"""
    return [load_run_views(path) for path in paths]


def _finish(read: FileRead) -> ViewFile:
    """The views of a file after the item pass: the headers it left are validated in file
    order, and the first problem is raised."""
    views = []
    for i, run in enumerate(read.runs):
        header = (
            None if run.raw is None else _validated(run.raw, read.source, f"[{i}]" if read.is_list else "")
        )
        if run.error is not None:
            raise run.error
        # Validation keeps a dict's keys and their order: the names the facts were read with
        # are the header's scorer names (a header without them did not validate).
        assert header is not None and run.facts is not None and header.scorer_names == run.names
        views.append(RunView(header=header, items=run.facts))
    return ViewFile(path=read.source, runs=views, is_list=read.is_list)


def _validated(entry: dict[str, Any], source: str, where: str) -> RunHeader:
    try:
        return RunHeader.model_validate(entry, context=WIRE)
    except ValidationError as err:
        raise _explain(err, source, where) from None


def _parse_views(raw: bytes, source: str) -> ViewFile:
    return _finish(read_runs(raw, source))


def views_of_read(read: FileRead | None, path: str | os.PathLike[str]) -> ViewFile:
    """The views of what a worker process sent (``None``: it died, and the file is read here)."""
    return load_run_views(path) if read is None else _finish(read)


def parse_run_views(raw: bytes, source: str = "<results>") -> ViewFile:
    """:func:`load_run_views` over bytes already read."""
    return _parse_views(raw, source)


Results = EvalResult | Mapping[str, Any] | Sequence[EvalResult | Mapping[str, Any]]


def _wire(result: EvalResult | Mapping[str, Any]) -> Any:
    return result.to_wire() if isinstance(result, EvalResult) else result


def result_json_chunks(
    results: Results, on_replaced: Callable[[list[str]], None] | None = None
) -> Iterator[bytes]:
    """:func:`result_json_bytes` in pieces (see :func:`~axl_action.schema.jsonio.dumps_js_chunks`),
    so that a writer never holds the whole text twice."""
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
    return write_atomic(target, result_json_chunks(results, on_replaced))
