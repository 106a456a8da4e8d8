"""``dataset(...)``: the items an eval runs, from a Python list or a JSON / JSONL file.

Every problem is a :class:`~axl_action.errors.DatasetError` that names the dataset, the file,
the line (JSONL) or row index (JSON array) and what is wrong (spec §3).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, cast

from pydantic import BaseModel, ValidationError

from axl_action.errors import DatasetError
from axl_action.evals.log import warn

ExtraKeysPolicy = Literal["warn", "error", "ignore"]
Validator = type[BaseModel] | Callable[[Any], Any]
DatasetItem = dict[str, Any]
"""``{"input": ..., "annotations"?: ...}`` (``annotations`` absent when the row had none)."""

_ROW_KEYS = frozenset({"input", "annotations"})


class Dataset:
    """A named list of eval items, loaded (and validated) on each :meth:`get_items` call."""

    def __init__(
        self,
        name: str,
        *,
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
        out: list[DatasetItem] = []
        plain = self._schema is None and self._annotations_schema is None
        for position, raw in rows:
            # A plain row needs no copy: the runner only reads it.
            if plain and type(raw) is dict and "input" in raw and raw.keys() <= _ROW_KEYS:
                out.append(raw)
            else:
                out.append(self._parse_row(raw, f"{where} {label} {position}", seen))
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

    def _parse_row(self, raw: Any, at: str, dropped: dict[str, None]) -> DatasetItem:
        if not isinstance(raw, Mapping):
            raise DatasetError(f"{at}: expected an object with an input key, got {_type_name(raw)}")
        if "input" not in raw:
            raise DatasetError(f"{at}: missing the required input key", hint='write {"input": ...}')
        extra = [k for k in raw if k not in _ROW_KEYS]
        if extra:
            raise DatasetError(
                f"{at}: unknown key(s) {', '.join(map(str, extra))}",
                hint="a row has only input and annotations; put ids inside input",
            )
        item: DatasetItem = {"input": _validate(self._schema, raw["input"], f"{at} input")}
        if "annotations" in raw:
            annotations = raw["annotations"]
            if annotations is not None and self._annotations_schema is not None:
                parsed = _validate(self._annotations_schema, annotations, f"{at} annotations")
                if self._policy != "ignore" and _is_model(self._annotations_schema):
                    for path in _dropped_paths(annotations, parsed, ""):
                        dropped.setdefault(path, None)
                annotations = parsed
            item["annotations"] = annotations
        return item


def dataset(
    name: str,
    items: Sequence[Mapping[str, Any]] | None = None,
    file: str | Path | None = None,
    base_path: str | Path | None = None,
    schema: Validator | None = None,
    annotations_schema: Validator | None = None,
    on_extra_annotation_keys: ExtraKeysPolicy = "warn",
) -> Dataset:
    """Define a dataset: exactly one of ``items`` (inline rows) or ``file`` (JSON array / JSONL).

    ``file`` is resolved against ``base_path`` (default: the current directory; eval files
    usually pass ``Path(__file__).parent``). ``schema`` / ``annotations_schema`` are pydantic
    model classes (inputs are validated and dumped back to plain JSON data) or callables that
    return the validated value and raise on bad input.
    """
    return Dataset(
        name,
        items=items,
        file=file,
        base_path=base_path,
        schema=schema,
        annotations_schema=annotations_schema,
        on_extra_annotation_keys=on_extra_annotation_keys,
    )


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


def _is_model(validator: Validator) -> bool:
    return isinstance(validator, type) and issubclass(validator, BaseModel)


def _validate(validator: Validator | None, value: Any, at: str) -> Any:
    if validator is None:
        return value
    if isinstance(validator, type) and issubclass(validator, BaseModel):
        try:
            return validator.model_validate(value).model_dump(mode="json", by_alias=True)
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in err['loc']) or '(root)'}: {err['msg']}" for err in exc.errors()
            )
            raise DatasetError(f"{at} failed validation: {problems}") from None
    check = cast(Callable[[Any], Any], validator)
    try:
        return check(value)
    except Exception as exc:
        raise DatasetError(f"{at} failed validation: {exc}") from None


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
