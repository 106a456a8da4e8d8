"""dataset(): inline and file items, validation, dropped annotation keys (spec §3)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import BaseModel, ConfigDict

from axl_action.errors import DatasetError
from axl_action.evals.dataset import dataset


class Persona(BaseModel):
    role: str


class Tag(BaseModel):
    weight: float


class Notes(BaseModel):
    answer: str
    persona: Persona | None = None
    tags: list[Tag] = []


class StrictInput(BaseModel):
    model_config = ConfigDict(extra="forbid")
    question: str


def test_inline_items_keep_absent_annotations_absent() -> None:
    items = dataset("d", items=[{"input": 1}, {"input": 2, "annotations": None}]).get_items()
    assert items == [{"input": 1}, {"input": 2, "annotations": None}]


def test_items_and_file_are_mutually_exclusive_and_one_is_required() -> None:
    with pytest.raises(DatasetError, match="mutually exclusive"):
        dataset("d", items=[{"input": 1}], file="x.json").get_items()
    with pytest.raises(DatasetError, match="one of items or file must be provided"):
        dataset("d").get_items()


def test_json_array_and_jsonl_files(tmp_path: Path) -> None:
    (tmp_path / "a.json").write_text(
        json.dumps([{"input": {"q": 1}}, {"input": {"q": 2}, "annotations": {"a": 1}}])
    )
    (tmp_path / "b.jsonl").write_text('{"input": {"q": 1}}\n\n{"input": {"q": 2}}\n')
    assert len(dataset("a", file="a.json", base_path=tmp_path).get_items()) == 2
    assert [i["input"]["q"] for i in dataset("b", file="b.jsonl", base_path=tmp_path).get_items()] == [1, 2]


def test_malformed_jsonl_row_names_file_and_line(tmp_path: Path) -> None:
    (tmp_path / "bad.jsonl").write_text('{"input": 1}\n{"input": 2,\n')
    with pytest.raises(DatasetError) as info:
        dataset("d", file="bad.jsonl", base_path=tmp_path).get_items()
    assert "bad.jsonl line 2: invalid JSON" in str(info.value)


def test_row_without_input_and_unknown_keys(tmp_path: Path) -> None:
    (tmp_path / "rows.jsonl").write_text('{"input": 1}\n{"annotation": 2}\n')
    with pytest.raises(DatasetError, match=r"rows.jsonl line 2: missing the required input key"):
        dataset("d", file="rows.jsonl", base_path=tmp_path).get_items()
    with pytest.raises(DatasetError, match=r"row 0: unknown key\(s\) id"):
        dataset("d", items=[{"input": 1, "id": "x"}]).get_items()


def test_missing_file_and_empty_dataset(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match="dataset file not found"):
        dataset("d", file="nope.jsonl", base_path=tmp_path).get_items()
    (tmp_path / "empty.jsonl").write_text("\n")
    with pytest.raises(DatasetError, match="has no items"):
        dataset("d", file="empty.jsonl", base_path=tmp_path).get_items()
    (tmp_path / "obj.json").write_text("  [1]")
    with pytest.raises(DatasetError, match="row 0: expected an object"):
        dataset("d", file="obj.json", base_path=tmp_path).get_items()


def test_input_schema_validates_and_reports_the_row() -> None:
    ds = dataset(
        "d",
        items=[{"input": {"question": "hi"}}, {"input": {"question": "x", "extra": 1}}],
        schema=StrictInput,
    )
    with pytest.raises(DatasetError) as info:
        ds.get_items()
    assert 'dataset "d" row 1 input failed validation: extra: Extra inputs are not permitted' in str(
        info.value
    )


def test_callable_validator() -> None:
    def upper(value: object) -> str:
        if not isinstance(value, str):
            raise ValueError("input must be text")
        return value.upper()

    assert dataset("d", items=[{"input": "a"}], schema=upper).get_items() == [{"input": "A"}]
    with pytest.raises(DatasetError, match="row 0 input failed validation: input must be text"):
        dataset("d", items=[{"input": 3}], schema=upper).get_items()


ROWS = [
    {
        "input": 1,
        "annotations": {
            "answer": "a",
            "persona": {"role": "x", "mood": "y"},
            "tags": [{"weight": 1}, {"weight": 2, "note": "z"}],
        },
    },
    {"input": 2, "annotations": {"answer": "b", "extra": True, "persona": {"role": "r", "mood": "m"}}},
]


def test_dropped_annotation_keys_warn_with_paths(capsys: pytest.CaptureFixture[str]) -> None:
    ds = dataset("notes", items=ROWS, annotations_schema=Notes)
    items = ds.get_items()
    assert ds.dropped_annotation_keys == ["persona.mood", "tags[1].note", "extra"]
    assert items[1]["annotations"] == {"answer": "b", "persona": {"role": "r"}, "tags": []}
    err = capsys.readouterr().err
    assert err.count("[axl-eval]") == 1 and "persona.mood, tags[1].note, extra" in err
    copy = ds.dropped_annotation_keys
    copy.append("mutated")
    assert "mutated" not in ds.dropped_annotation_keys


def test_dropped_annotation_keys_error_and_ignore(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(DatasetError, match=r"persona\.mood"):
        dataset("notes", items=ROWS, annotations_schema=Notes, on_extra_annotation_keys="error").get_items()
    ds = dataset("notes", items=ROWS, annotations_schema=Notes, on_extra_annotation_keys="ignore")
    ds.get_items()
    assert ds.dropped_annotation_keys == []
    assert capsys.readouterr().err == ""


def test_clean_reload_resets_dropped_keys() -> None:
    rows = [dict(r) for r in ROWS]
    ds = dataset("notes", items=rows, annotations_schema=Notes, on_extra_annotation_keys="ignore")
    ds.get_items()
    ds2 = dataset("clean", items=[{"input": 1, "annotations": {"answer": "a"}}], annotations_schema=Notes)
    ds2.get_items()
    assert ds2.dropped_annotation_keys == []


def test_bad_policy_is_rejected() -> None:
    with pytest.raises(DatasetError, match="on_extra_annotation_keys"):
        dataset("d", items=[{"input": 1}], on_extra_annotation_keys="loud")  # type: ignore[arg-type]


class Pair(BaseModel):
    model_config = ConfigDict(extra="forbid")
    id: int
    v: int


def test_a_schema_validates_every_row_and_dumps_plain_data() -> None:
    rows = [{"input": {"id": str(i), "v": i * 2}, "annotations": {"answer": "a"}} for i in range(50)]
    items = dataset("d", items=rows, schema=Pair, annotations_schema=Notes).get_items()
    assert items[7] == {
        "input": {"id": 7, "v": 14},
        "annotations": {"answer": "a", "persona": None, "tags": []},
    }
    assert all(type(item["input"]) is dict for item in items)


def test_the_first_bad_row_in_order_is_reported_whatever_its_problem() -> None:
    good = {"input": {"id": 1, "v": 2}}
    late_key = [good, good, good, {"input": {"id": "x", "v": 1, "w": 0}}, good, {"inp": 1}]
    with pytest.raises(DatasetError) as info:
        dataset("d", items=late_key, schema=Pair).get_items()
    message = str(info.value)
    assert message.startswith('dataset "d" row 3 input failed validation: ')
    # Every problem of that row, with the row index left out of each location.
    assert "id: Input should be a valid integer" in message and "w: Extra inputs are not permitted" in message
    early_key = [good, {"inp": 1}, {"input": {"id": "x", "v": 1}}]
    with pytest.raises(DatasetError, match="row 1: missing the required input key"):
        dataset("d", items=early_key, schema=Pair).get_items()


def test_an_inputs_problem_comes_before_its_rows_annotations_and_the_earlier_row_first() -> None:
    rows = [
        {"input": {"id": 1, "v": 1}, "annotations": {"answer": "a"}},
        {"input": {"id": 2, "v": 2}, "annotations": {"persona": 3}},
        {"input": {"id": "x", "v": 3}, "annotations": {"answer": "c"}},
    ]
    with pytest.raises(DatasetError, match="row 1 annotations failed validation: answer: Field required"):
        dataset("d", items=rows, schema=Pair, annotations_schema=Notes).get_items()
    rows[1]["input"] = {"id": "y", "v": 2}
    with pytest.raises(DatasetError, match="row 1 input failed validation: id: "):
        dataset("d", items=rows, schema=Pair, annotations_schema=Notes).get_items()


def test_a_mapping_that_is_not_a_dict_is_a_row() -> None:
    from types import MappingProxyType

    rows = [MappingProxyType({"input": {"id": 1, "v": 2}, "annotations": None})]
    assert dataset("d", items=rows).get_items() == [{"input": {"id": 1, "v": 2}, "annotations": None}]
    assert dataset("d", items=rows, schema=Pair).get_items() == [
        {"input": {"id": 1, "v": 2}, "annotations": None}
    ]
