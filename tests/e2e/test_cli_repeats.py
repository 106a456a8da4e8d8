"""``repeats`` end to end: ``axl-eval run --repeats`` on a flaky eval, then ``compare
--min-pass-rate`` and ``report`` on what it wrote (issue 23 item 1)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from axl_action.cli.main import main

# Item k is right on its tries whose number (shared across the run, in call order) is not a
# multiple of k + 2: a flaky workflow whose per-item pass rate differs from item to item.
FLAKY_EVAL = """\
import itertools, threading
from axl_action import dataset, define_eval, scorer

_lock = threading.Lock()
_calls = {}

def execute_workflow(value, runtime):
    with _lock:
        n = _calls[value] = _calls.get(value, 0) + 1
    return {"output": value if n % (value + 2) else -1}

eval = define_eval(
    "flaky",
    dataset("flaky", items=[{"input": k, "annotations": {"want": k}} for k in range(4)]),
    [scorer("right", lambda output, value, notes: float(output == notes["want"]))],
    concurrency=4,
    repeats=6,
)
"""


@pytest.fixture
def result(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    (tmp_path / "flaky_eval.py").write_text(FLAKY_EVAL)
    out = tmp_path / "results.json"
    assert main(["run", str(tmp_path / "flaky_eval.py"), "--output", str(out), "--quiet"]) == 0
    capsys.readouterr()
    return out


def test_run_writes_the_mean_and_every_repeat(result: Path) -> None:
    data = json.loads(result.read_text())
    assert data["metadata"]["repeats"] == 6
    # Item k fails on its tries numbered (k + 2), 2(k + 2)...: 3, 2, 1 and 1 of 6.
    assert [sum(r["scores"]["right"] == 0 for r in item["repeats"]) for item in data["items"]] == [3, 2, 1, 1]
    assert [item["scores"]["right"] for item in data["items"]] == [0.5, 0.667, 0.833, 0.833]


def test_compare_gates_on_the_pass_rate_of_every_try(
    result: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # 17 of 24 tries passed (70.8%).
    code = main(["compare", str(result), str(result), "--min-pass-rate", "right=0.75"])
    err = capsys.readouterr().err
    assert code == 1
    assert "PASS RATE: Pass rate (score >= 0.5): right 70.8% (17/24) below 75%." in err
    assert main(["compare", str(result), str(result), "--min-pass-rate", "0.7"]) == 0
    capsys.readouterr()
    assert main(["compare", str(result), str(result), "--min-pass-rate", "0.7", "--pass-score", "1.5"]) == 1
    assert "--pass-score must be a number in [0, 1]" in capsys.readouterr().err
    assert main(["compare", str(result), str(result), "--min-pass-rate", "right=high"]) == 1
    assert (
        '--min-pass-rate has a rate that is not a number from 0 to 1: "right=high"' in capsys.readouterr().err
    )


def test_the_report_shows_the_pass_rate_gate_only_when_enabled(
    result: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    md = tmp_path / "comment.md"
    args = ["report", str(result), "--baseline", str(result), "--markdown", str(md)]
    assert main(args) == 0
    assert "Pass rate" not in md.read_text()
    # The tries are counted in every report of a repeated run, gate or not.
    assert "- **Repeats:** 6 per item; tries passed (score &gt;= 0.5): right 70.8% (17/24)" in md.read_text()
    assert main([*args, "--min-pass-rate", "0.75"]) == 0
    text = md.read_text()
    assert "Pass rate" in text and "17/24" in text
    capsys.readouterr()


def test_rescore_grades_every_repeat_again_and_keeps_the_mean(
    result: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A stricter scorer: right only for even answers. Each repeat's own output is graded.
    (tmp_path / "strict_eval.py").write_text(
        FLAKY_EVAL.replace(
            'float(output == notes["want"])', 'float(output == notes["want"] and output % 2 == 0)'
        )
    )
    out = tmp_path / "rescored.json"
    assert main(["rescore", str(result), str(tmp_path / "strict_eval.py"), "--output", str(out)]) == 0
    capsys.readouterr()
    source = json.loads(result.read_text())["items"]
    items = json.loads(out.read_text())["items"]
    for before, after in zip(source, items, strict=True):
        assert [r["output"] for r in after["repeats"]] == [r["output"] for r in before["repeats"]]
        want = [float(r["output"] == before["input"] and r["output"] % 2 == 0) for r in before["repeats"]]
        assert [r["scores"]["right"] for r in after["repeats"]] == want
        assert after["scores"]["right"] == round(sum(want) / len(want), 3)
