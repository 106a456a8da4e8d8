"""``dataset(...)``: the items an eval runs, from a Python list or a JSON / JSONL file.

Every problem is a :class:`~axl_action.errors.DatasetError` that names the dataset, the file,
the line (JSONL) or row index (JSON array) and what is wrong (spec §3).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal, cast

from pydantic import BaseModel, TypeAdapter, ValidationError

from axl_action.errors import DatasetError
from axl_action.evals.log import warn

ExtraKeysPolicy = Literal["warn", "error", "ignore"]
Validator = type[BaseModel] | Callable[[Any], Any]
DatasetItem = dict[str, Any]
"""``{"input": ..., "annotations"?: ...}`` (``annotations`` absent when the row had none)."""

_ROW_KEYS = frozenset({"input", "annotations"})


class Dataset:
    """A named list of eval items, loaded (and validated) on each :meth:`get_items` call.

    Exactly one of ``items`` (inline rows) or ``file`` (JSON array / JSONL). ``file`` is
    resolved against ``base_path`` (default: the current directory; eval files usually pass
    ``Path(__file__).parent``). ``schema`` / ``annotations_schema`` are pydantic model classes
    (inputs are validated and dumped back to plain JSON data) or callables that return the
    validated value and raise on bad input.
    """

    def __init__(
        self,
        name: str,
        items: Sequence[Mapping[str, Any]] | None = None,
        file: str | Path | None = None,
        base_path: str | Path | None = None,
        schema: Validator | None = None,
        annotations_schema: Validator | None = None,
        on_extra_annotation_keys: ExtraKeysPolicy = "warn",
    ) -> None:
        if on_extra_annotation_keys not in ("warn", "error", "ignore"):
            raise DatasetError(
                f'dataset "{name}": on_extra_annotation_keys must be "warn", "error" or "ignore", '
                f"got {on_extra_annotation_keys!r}"
            )
        self.name = name
        self._items = items
        self._file = file
        self._base_path = base_path
        self._schema = schema
        self._annotations_schema = annotations_schema
        self._policy: ExtraKeysPolicy = on_extra_annotation_keys
        self._dropped: list[str] = []

    @property
    def file_path(self) -> Path | None:
        """The resolved dataset file, or ``None`` for an inline dataset."""
        if self._file is None:
            return None
        base = Path(self._base_path) if self._base_path is not None else Path.cwd()
        return (base / self._file).resolve()

    @property
    def dropped_annotation_keys(self) -> list[str]:
        """Annotation paths the schema dropped in the last :meth:`get_items` call (a copy)."""
        return list(self._dropped)

    def get_items(self) -> list[DatasetItem]:
        """Load, validate and return the items; raises :class:`DatasetError` on any problem."""
        if self._items is not None and self._file is not None:
            raise DatasetError(
                f'dataset "{self.name}": items and file are mutually exclusive',
                hint="pass either items=[...] or file=...",
            )
        if self._items is None and self._file is None:
            raise DatasetError(
                f'dataset "{self.name}": one of items or file must be provided',
                hint='pass items=[{"input": ...}] or file="data.jsonl"',
            )
        path = self.file_path
        where = str(path) if path is not None else f'dataset "{self.name}"'
        rows = _read_rows(path) if path is not None else list(enumerate(self._items or [], start=0))
        if not rows:
            raise DatasetError(
                f"{where}: the dataset has no items", hint="add at least one {input, annotations?} row"
            )
        label = "line" if path is not None and _is_jsonl(path) else "row"
        self._dropped = []
        seen: dict[str, None] = {}
        out = self._build_items(rows, f"{where} {label}", seen)
        self._dropped = list(seen)
        if self._dropped and self._policy == "error":
            raise DatasetError(
                f'dataset "{self.name}": the annotations schema dropped keys {", ".join(self._dropped)}',
                hint="add them to the annotations schema or set on_extra_annotation_keys='ignore'",
            )
        if self._dropped and self._policy == "warn":
            warn(
                f'[axl-eval] dataset "{self.name}": annotation keys not in the annotations schema were '
                f"dropped: {', '.join(self._dropped)}"
            )
        return out

    def _build_items(
        self, rows: list[tuple[int, Any]], where: str, dropped: dict[str, None]
    ) -> list[DatasetItem]:
        """Check each row's keys, then validate every input (and every annotation) at once.

        A pydantic schema validates the whole column in one call of a list adapter, inside
        pydantic-core, with no Python call per row (a per-row ``model_validate`` cost a run about
        8 µs an item). The first problem in row order is the one raised, as a row-by-row pass
        would: a key problem in row 7 is not reported when row 3's input fails validation.
        """
        if self._schema is None and self._annotations_schema is None:
            return _plain_items(rows, where)
        inputs, notes, noted, key_problem = self._columns(rows, where)
        valid_inputs, input_bad = _validate_all(self._schema, inputs)
        valid_notes, note_bad = _validate_all(self._annotations_schema, notes)
        note_row = (noted[note_bad[0]], note_bad[1]) if note_bad is not None else None
        _raise_earliest(rows, where, input_bad, note_row, key_problem)
        checked = dict(zip(noted, valid_notes, strict=True))
        return self._validated_items(rows, valid_inputs, checked, dropped)

    def _columns(
        self, rows: list[tuple[int, Any]], where: str
    ) -> tuple[list[Any], list[Any], list[int], tuple[int, DatasetError] | None]:
        """The inputs and the annotations to validate, the positions in the inputs of the rows
        whose annotations are checked, and the first row whose keys are wrong (the columns then
        stop before it)."""
        inputs: list[Any] = []
        notes: list[Any] = []
        noted: list[int] = []
        check_notes = self._annotations_schema is not None
        for position, raw in rows:
            if not (type(raw) is dict and "input" in raw and raw.keys() <= _ROW_KEYS):
                problem = _row_problem(raw, f"{where} {position}")
                if problem is not None:
                    return inputs, notes, noted, (len(inputs), problem)
            inputs.append(raw["input"])
            annotations = raw.get("annotations")
            if annotations is not None and check_notes:
                noted.append(len(inputs) - 1)
                notes.append(annotations)
        return inputs, notes, noted, None

    def _validated_items(
        self,
        rows: list[tuple[int, Any]],
        valid_inputs: list[Any],
        checked: dict[int, Any],
        dropped: dict[str, None],
    ) -> list[DatasetItem]:
        """The items from the validated columns; the annotation keys the schema dropped are
        noted in ``dropped``."""
        track = self._policy != "ignore" and _is_model(self._annotations_schema)
        out: list[DatasetItem] = []
        for index, (_, raw) in enumerate(rows):
            item: DatasetItem = {"input": valid_inputs[index]}
            if "annotations" in raw:
                annotations = raw["annotations"]
                if index in checked:
                    parsed = checked[index]
                    # Equal means nothing was dropped: one comparison in C instead of a walk.
                    if track and parsed != annotations:
                        for path in _dropped_paths(annotations, parsed, ""):
                            dropped.setdefault(path, None)
                    annotations = parsed
                item["annotations"] = annotations
            out.append(item)
        return out


def _plain_items(rows: list[tuple[int, Any]], where: str) -> list[DatasetItem]:
    """The rows of a dataset without schemas, their keys checked; a plain dict row needs no
    copy (the runner only reads it)."""
    out: list[DatasetItem] = []
    for position, raw in rows:
        if not (type(raw) is dict and "input" in raw and raw.keys() <= _ROW_KEYS):
            problem = _row_problem(raw, f"{where} {position}")
            if problem is not None:
                raise problem
        out.append(raw if type(raw) is dict else {k: raw[k] for k in raw})
    return out


def _raise_earliest(
    rows: list[tuple[int, Any]],
    where: str,
    input_bad: tuple[int, str] | None,
    note_bad: tuple[int, str] | None,
    key_problem: tuple[int, DatasetError] | None,
) -> None:
    """Raise the problem of the earliest row; within one row the input is reported before its
    annotations, and both before a key problem."""

    def failed(row: int, field: str, problems: str) -> DatasetError:
        # Named only for the row that failed: no label is made per row.
        return DatasetError(f"{where} {rows[row][0]} {field} failed validation: {problems}")

    found: list[tuple[int, int, DatasetError]] = []
    if input_bad is not None:
        found.append((input_bad[0], 0, failed(input_bad[0], "input", input_bad[1])))
    if note_bad is not None:
        found.append((note_bad[0], 1, failed(note_bad[0], "annotations", note_bad[1])))
    if key_problem is not None:
        found.append((key_problem[0], 2, key_problem[1]))
    if found:
        raise min(found, key=lambda bad: bad[:2])[2]


dataset = Dataset
"""Define a dataset: ``dataset(name, items=None, file=None, ...)`` is the :class:`Dataset` itself,
so its parameters and their defaults are written once."""


def _is_jsonl(path: Path) -> bool:
    return path.suffix.lower() in (".jsonl", ".ndjson")


def _read_rows(path: Path) -> list[tuple[int, Any]]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise DatasetError(
            f"{path}: dataset file not found", hint="check file= and base_path= in the eval file"
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise DatasetError(f"{path}: cannot read the dataset file: {exc}") from None
    if _is_jsonl(path) or not text.lstrip().startswith("["):
        rows: list[tuple[int, Any]] = []
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                rows.append((number, json.loads(line)))
            except json.JSONDecodeError as exc:
                raise DatasetError(
                    f"{path} line {number}: invalid JSON: {exc.msg} (column {exc.colno})",
                    hint="each line of a JSONL dataset must be one JSON object",
                ) from None
        return rows
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise DatasetError(
            f"{path} line {exc.lineno}: invalid JSON: {exc.msg} (column {exc.colno})"
        ) from None
    if not isinstance(data, list):
        raise DatasetError(f"{path}: expected a JSON array of items, got {_type_name(data)}")
    return list(enumerate(data))


def _is_model(validator: Validator | None) -> bool:
    return isinstance(validator, type) and issubclass(validator, BaseModel)


def _row_problem(raw: Any, at: str) -> DatasetError | None:
    """What is wrong with a row's keys, if anything (any mapping with ``input`` is a row)."""
    if not isinstance(raw, Mapping):
        return DatasetError(f"{at}: expected an object with an input key, got {_type_name(raw)}")
    if "input" not in raw:
        return DatasetError(f"{at}: missing the required input key", hint='write {"input": ...}')
    extra = [k for k in raw if k not in _ROW_KEYS]
    if extra:
        return DatasetError(
            f"{at}: unknown key(s) {', '.join(map(str, extra))}",
            hint="a row has only input and annotations; put ids inside input",
        )
    return None


@lru_cache(maxsize=64)
def _list_adapter(model: type[BaseModel]) -> TypeAdapter[list[Any]]:
    # Built once per schema: making the core schema costs milliseconds.
    return TypeAdapter(list[model])  # type: ignore[valid-type]


def _validate_all(validator: Validator | None, values: list[Any]) -> tuple[list[Any], tuple[int, str] | None]:
    """Validate one column; returns the values and (index, problems) of the first failure."""
    if validator is None or not values:
        return values, None
    if _is_model(validator):
        adapter = _list_adapter(cast(type[BaseModel], validator))
        try:
            models = adapter.validate_python(values)
        except ValidationError as exc:
            errors = exc.errors()
            index = min(int(err["loc"][0]) for err in errors)
            problems = "; ".join(
                f"{'.'.join(str(p) for p in err['loc'][1:]) or '(root)'}: {err['msg']}"
                for err in errors
                if err["loc"][0] == index
            )
            return values, (index, problems)
        return adapter.dump_python(models, mode="json", by_alias=True), None
    check = cast(Callable[[Any], Any], validator)
    out: list[Any] = []
    for index, value in enumerate(values):
        try:
            out.append(check(value))
        except Exception as exc:
            return values, (index, str(exc))
    return out, None


def _dropped_paths(raw: Any, parsed: Any, prefix: str) -> Iterable[str]:
    """Keys present in a raw plain object but missing from the parsed one (``a.b``, ``t[1].w``)."""
    if isinstance(raw, dict) and isinstance(parsed, dict):
        for key, value in raw.items():
            path = f"{prefix}.{key}" if prefix else str(key)
            if key not in parsed:
                yield path
            else:
                yield from _dropped_paths(value, parsed[key], path)
    elif isinstance(raw, list) and isinstance(parsed, list):
        for index, (r, p) in enumerate(zip(raw, parsed, strict=False)):
            yield from _dropped_paths(r, p, f"{prefix}[{index}]")


def _type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, int | float):
        return "a number"
    return type(value).__name__
