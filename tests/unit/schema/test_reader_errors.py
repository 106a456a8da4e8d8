"""Results files the readers refuse: one line naming the file and the problem, exit 1."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from axl_action.cli.main import main
from axl_action.errors import ResultFileError
from axl_action.schema import load_result_file, load_run_views

FIXTURE = Path(__file__).parent.parent.parent / "fixtures" / "axl-eval-0.16.1" / "tiny3-baseline.json"


def _variant(tmp_path: Path, name: str, raw: bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(raw)
    return path


def _huge_duration() -> bytes:
    data = json.loads(FIXTURE.read_text())
    data["items"][1]["duration"] = "HUGE"
    return json.dumps(data).replace('"HUGE"', "1" + "0" * 400).encode()


CASES = {
    "nan": (lambda: FIXTURE.read_bytes().replace(b'"duration": ', b'"duration": NaN, "x": ', 1), "NaN"),
    "infinity": (
        lambda: FIXTURE.read_bytes().replace(b'"duration": ', b'"duration": -Infinity, "x": ', 1),
        "NaN",
    ),
    # Issue 13 finding 5: 200k levels made compare and report die with a RecursionError.
    "deep": (
        lambda: b'{"items": ' + b"[" * 200_000 + b"]" * 200_000 + b"}",
        "nesting deeper than 200 levels",
    ),
    "latin1": (lambda: FIXTURE.read_bytes().replace(b'"tiny-3"', b'"tiny-\xe9"', 1), "not UTF-8 text"),
    "python": (lambda: b"from axl_action import define_eval\n", "not an eval file"),
    # JSON allows any integer; one past a double's range is refused with its path, not a crash.
    "huge-number": (lambda: _huge_duration(), "items[1].duration"),
    "accounting": (
        lambda: json.dumps(
            {**json.loads(FIXTURE.read_text()), "accounting": {"version": 99, "knownCost": 0}}
        ).encode(),
        "unknown accounting version 99",
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("reader", [load_result_file, load_run_views])
def test_reader_refuses_with_one_clear_line(case: str, reader: Any, tmp_path: Path) -> None:
    make, expected = CASES[case]
    path = _variant(tmp_path, f"{case}.json", make())
    with pytest.raises(ResultFileError) as info:
        reader(path)
    text = f"{info.value} {info.value.hint or ''}"
    assert str(path) in str(info.value)
    assert expected in text


@pytest.mark.parametrize("command", ["compare", "report"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_compare_and_report_exit_1_without_a_traceback(
    case: str, command: str, tmp_path: Path, capsys: Any
) -> None:
    make, expected = CASES[case]
    bad = _variant(tmp_path, f"{case}.json", make())
    argv = (
        ["compare", str(FIXTURE), str(bad)]
        if command == "compare"
        else ["report", str(bad), "--html", str(tmp_path / "r.html")]
    )
    code = main(argv)
    err = capsys.readouterr().err
    assert code == 1
    assert "Traceback" not in err
    assert expected in err
