"""Load results files for comparison without building a model per item.

A 100,000-item results file becomes several hundred MB of pydantic objects; compare needs
only a few facts per item. Here each run's items are read once from the parsed JSON into
numpy columns (``arrays.raw_columns``), and the run keeps one slim ``EvalItem`` per item with
just ``input``, ``error`` and ``outcome`` (what messages and item-level changes quote). The
rest of the result (metadata, accounting, summary) is validated as usual. Sides are loaded one
after the other, so the raw JSON of only one file is alive at a time.

Results loaded this way are for ``compare_results``/``evaluate_gates`` only: their items are
incomplete, so never write them back or merge them.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from axl_action.compare.arrays import attach_columns, raw_columns
from axl_action.errors import ResultFileError
from axl_action.schema import EvalItem, EvalResult, ResultFile, parse_result_data
from axl_action.schema.io import gc_paused as paused_gc

_HINT = "expected a results file written by `axl-eval --output` (axl-eval 0.24 or older)"


_PRIVATE = EvalItem.model_construct().__pydantic_private__
_FIELDS_SETS: dict[tuple[bool, bool, bool], frozenset[str]] = {}


def _slim_item(raw: Any, source: str, where: str) -> EvalItem:
    """An ``EvalItem`` holding only input, error, outcome (scores live in the columns).

    Built by hand: ``model_construct`` resolves every field default through ``inspect`` and
    costs ~100x more; and a full ``__dict__`` of defaults per item is most of the memory.
    Reading any other field of a slim item raises ``AttributeError``.
    """
    if not isinstance(raw, dict):
        raise ResultFileError(
            f"{source} is not a valid axl-eval result: {where} is not an object", hint=_HINT
        )
    present = ("input" in raw, "error" in raw, "outcome" in raw)
    fields_set = _FIELDS_SETS.get(present)
    if fields_set is None:
        names = ("input", "error", "outcome")
        fields_set = _FIELDS_SETS[present] = frozenset(n for n, p in zip(names, present, strict=True) if p)
    item = EvalItem.__new__(EvalItem)
    _set = object.__setattr__
    _set(
        item,
        "__dict__",
        {
            "input": raw.get("input"),
            "error": raw.get("error"),
            "outcome": raw.get("outcome"),
            "scores": _NO_SCORES,
            "score_details": None,
        },
    )
    _set(item, "__pydantic_fields_set__", fields_set)
    _set(item, "__pydantic_extra__", None)
    _set(item, "__pydantic_private__", dict(_PRIVATE) if _PRIVATE else None)
    return item


_NO_SCORES: dict[str, float | None] = {}


def _lean_result(raw: dict[str, Any], source: str, prefix: str) -> EvalResult:
    items = raw.get("items")
    if not isinstance(items, list):
        # Let the schema produce its usual message for a malformed file.
        return parse_result_data(raw, source).results[0]
    shell = parse_result_data({**raw, "items": []}, source).results[0]
    names = list(shell.summary.scorers)
    try:
        columns = raw_columns(items, names)
    except (AttributeError, TypeError) as err:
        raise ResultFileError(
            f"{source} is not a valid axl-eval result: malformed item ({err})", hint=_HINT
        ) from None
    except ValueError as err:
        raise ResultFileError(f"{source} is not a valid axl-eval result: {prefix}{err}", hint=_HINT) from None
    shell.items = [_slim_item(item, source, f"{prefix}items[{i}]") for i, item in enumerate(items)]
    attach_columns(shell, columns)
    return shell


def load_for_compare(path: str | os.PathLike[str]) -> ResultFile:
    """Read a results file (one result or a list) for comparison; errors are ``ResultFileError``."""
    with paused_gc():
        return _load(path)


def _load(path: str | os.PathLike[str]) -> ResultFile:
    source = str(path)
    try:
        text = Path(path).read_bytes().decode("utf-8")
    except FileNotFoundError:
        raise ResultFileError(f"results file not found: {source}", hint="check the path") from None
    except IsADirectoryError:
        raise ResultFileError(
            f"{source} is a directory, not a results file", hint="pass the JSON file itself"
        ) from None
    except UnicodeDecodeError:
        raise ResultFileError(f"{source} is not UTF-8 text", hint=_HINT) from None
    except OSError as err:
        raise ResultFileError(f"cannot read {source}: {err.strerror}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as err:
        raise ResultFileError(
            f"{source} is not valid JSON: {err.msg} at line {err.lineno}, column {err.colno}", hint=_HINT
        ) from None
    del text
    if isinstance(data, list):
        if not data:
            raise ResultFileError(f"{source} holds an empty list of results", hint=_HINT)
        if not all(isinstance(entry, dict) for entry in data):
            parse_result_data(data, source)  # raises the schema's message naming the entry
        results = [_lean_result(entry, source, f"[{i}].") for i, entry in enumerate(data)]
        return ResultFile(path=source, results=results, is_list=True)
    if not isinstance(data, dict):
        parse_result_data(data, source)
    return ResultFile(path=source, results=[_lean_result(data, source, "")], is_list=False)
