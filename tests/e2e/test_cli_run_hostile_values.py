"""Values that cannot be JSON as they are still give a results file that reads back."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

EVAL = """
from axl_action import dataset, define_eval, scorer
a = {"id": "a"}
a["self"] = a
eval = define_eval(
    "w",
    dataset("d", items=[{"input": a}, {"input": {"id": "b", "note": "x \\ud800"}}]),
    [scorer("s", lambda o: 1.0), scorer("range", lambda o: 2.0)],
    execute_workflow=lambda i, r: {"output": "x \\ud800 y"},
)
"""


def test_circular_input_and_lone_surrogates_are_written_and_read_back(tmp_path: Path) -> None:
    (tmp_path / "s_eval.py").write_text(EVAL, encoding="utf-8")
    out = tmp_path / "s.json"
    run = subprocess.run(
        [sys.executable, "-m", "axl_action", "s_eval.py", "--output", str(out)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    assert "Traceback" not in run.stderr
    assert "dataset fingerprint is unavailable" in run.stderr
    assert "lone surrogate" in run.stderr and "items[0].output" in run.stderr
    data = json.loads(out.read_text(encoding="utf-8"))
    assert data["items"][0]["output"] == "x \ufffd y"
    assert "dataset" not in data["metadata"]["fingerprint"]
    # Spec §4.2: a circular input is described as "[unserializable input]" in scorer errors.
    assert data["items"][0]["scorerErrors"] == [
        'Scorer "range" returned out-of-range score 2 for input [unserializable input]'
    ]
    compare = subprocess.run(
        [sys.executable, "-m", "axl_action", "compare", str(out), str(out)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert compare.returncode == 0, compare.stderr
