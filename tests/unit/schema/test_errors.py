"""A file that is not an eval result gets one clear message: which file, which field, what."""

from __future__ import annotations

from pathlib import Path

import pytest

from axl_action.errors import ResultFileError
from axl_action.schema import load_result_file


def _write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "r.json"
    p.write_text(text, encoding="utf-8")
    return p


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ResultFileError, match="not found"):
        load_result_file(tmp_path / "nope.json")


def test_not_json(tmp_path: Path) -> None:
    with pytest.raises(ResultFileError, match=r"not valid JSON: .* line 1"):
        load_result_file(_write(tmp_path, "{oops"))


def test_not_a_result(tmp_path: Path) -> None:
    with pytest.raises(ResultFileError, match=r"has no 'items' or 'summary' \(keys found: name\)"):
        load_result_file(_write(tmp_path, '{"name": "package.json"}'))


def test_empty_list(tmp_path: Path) -> None:
    with pytest.raises(ResultFileError, match="empty list"):
        load_result_file(_write(tmp_path, "[]"))


def test_bad_field_names_its_location(tmp_path: Path) -> None:
    text = (
        '{"id":"a","dataset":"d","timestamp":"t","items":[{"input":1,"scores":{"x":"high"}}],'
        '"summary":{"count":1,"failures":0,"scorers":{}}}'
    )
    with pytest.raises(ResultFileError) as info:
        load_result_file(_write(tmp_path, text))
    msg = str(info.value)
    assert "items[0].scores.x" in msg and "r.json" in msg and "axl-eval --output" in msg
