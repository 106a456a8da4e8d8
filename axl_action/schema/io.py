"""Reading and writing results files (one result, or a JSON array of results)."""

from __future__ import annotations

import contextlib
import gc
import json
import os
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from axl_action.errors import ResultFileError
from axl_action.schema.base import WIRE
from axl_action.schema.jsonio import dumps_js
from axl_action.schema.result import EvalResult

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


def _where(loc: Sequence[int | str]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(top level)"


def _explain(err: ValidationError, source: str, prefix: str) -> ResultFileError:
    first = err.errors()[0]
    loc = _where([*([prefix] if prefix else []), *first["loc"]])
    more = err.error_count() - 1
    tail = f" (and {more} more problem{'s' if more != 1 else ''})" if more else ""
    got = first.get("input")
    got_text = "" if isinstance(got, dict | list) else f", got {json.dumps(got, default=str)[:80]}"
    return ResultFileError(
        f"{source} is not a valid axl-eval result: at {loc}: {first['msg']}{got_text}{tail}",
        hint=_HINT,
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
            try:
                results.append(EvalResult.model_validate(entry, context=WIRE))
            except ValidationError as err:
                raise _explain(err, source, f"[{i}]") from None
        return ResultFile(path=source, results=results, is_list=True)
    _check_shape(data, source, "")
    try:
        return ResultFile(path=source, results=[EvalResult.model_validate(data, context=WIRE)], is_list=False)
    except ValidationError as err:
        raise _explain(err, source, "") from None


def parse_result_text(text: str, source: str = "<results>") -> ResultFile:
    """Parse JSON text as a results file."""
    try:
        with gc_paused():
            data = json.loads(text)
    except json.JSONDecodeError as err:
        raise ResultFileError(
            f"{source} is not valid JSON: {err.msg} at line {err.lineno}, column {err.colno}",
            hint=_HINT,
        ) from None
    return parse_result_data(data, source)


def load_result_file(path: str | os.PathLike[str]) -> ResultFile:
    """Read and validate a results file; every problem is a ``ResultFileError``."""
    source = str(path)
    try:
        raw = Path(path).read_bytes()
    except FileNotFoundError:
        raise ResultFileError(f"results file not found: {source}", hint="check the path") from None
    except IsADirectoryError:
        raise ResultFileError(
            f"{source} is a directory, not a results file", hint="pass the JSON file itself"
        ) from None
    except OSError as err:
        raise ResultFileError(f"cannot read {source}: {err.strerror}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ResultFileError(f"{source} is not UTF-8 text", hint=_HINT) from None
    return parse_result_text(text, source)


def result_json(results: EvalResult | Sequence[EvalResult]) -> str:
    """JSON text of one result (an object) or several (an array), as the TS CLI writes it."""
    with gc_paused():
        if isinstance(results, EvalResult):
            return dumps_js(results.to_wire())
        return dumps_js([r.to_wire() for r in results])


def write_result_file(path: str | os.PathLike[str], results: EvalResult | Sequence[EvalResult]) -> Path:
    """Write atomically (temp file + rename), so an interrupted write never leaves half a file."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    text = result_json(results)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        # mkstemp creates 0600; a results file is an ordinary shareable artifact.
        os.chmod(tmp, 0o644)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target
