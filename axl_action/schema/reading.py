"""Reading results files as far as the standard library goes.

The bytes, the JSON (pydantic-core's parser), the checks every reader makes first, and the
item pass (``schema.itempass``) need neither numpy nor pydantic, so this module imports
neither: ``axl-eval compare`` starts worker processes that run it (``cli/parallel_read.py``)
before it imports them, and imports them while the workers parse. ``schema.io`` turns what is
read here into run views (validating each run's header) and result models.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any

import pydantic_core

from axl_action.errors import ResultFileError, read_input_bytes
from axl_action.schema.itempass import ItemColumns, ItemShapeError, item_facts

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
    facts: ItemColumns | None = None
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
    as written, and its header left to the caller (``schema.io``), so a worker process never
    builds the header's validator. The first problem of a run ends the pass and is kept with
    that run, so the caller raises problems in file order.

    Each run's parsed items are dropped as soon as its facts are read, or handed to
    ``retain`` by a caller that is about to exit anyway (freeing 100,000 parsed items one
    object at a time takes 80 ms that a worker process need not spend).
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
