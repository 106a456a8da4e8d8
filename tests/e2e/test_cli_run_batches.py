"""`axl-eval` run: request capture with the offline mock provider, partial --runs batches, pricing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def axl(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "axl_action.cli.main", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=dict(os.environ),
        timeout=120,
    )


MOCK_EVAL = """\
from axl_action import dataset, define_eval, scorer

def execute_workflow(text, runtime):
    reply = runtime.chat("mock:echo", [{"role": "user", "content": text}])
    return {"output": reply.text}

eval = define_eval("echo", dataset("words", items=[{"input": w} for w in ["alpha", "beta", "gamma"]]),
                   [scorer("same", lambda output, text: 1.0 if output == text else 0.0)])
"""


def test_capture_requests_writes_a_sidecar_and_item_refs(tmp_path: Path) -> None:
    path = tmp_path / "mock_eval.py"
    path.write_text(MOCK_EVAL)
    out = tmp_path / "out" / "r.json"
    proc = axl(str(path), "--output", str(out), "--capture-requests")
    assert proc.returncode == 0, proc.stderr
    assert "    mock:echo  (3 calls)\n      wire " in proc.stdout and "mean/p95 per call" in proc.stdout
    result = json.loads(out.read_text())
    manifest = result["diagnostics"]
    assert manifest["version"] == 1 and manifest["fidelity"] == "runtime_request"
    assert manifest["status"] == "complete" and manifest["records"] >= 3
    sidecar = tmp_path / "out" / "r.requests.jsonl"
    records = [json.loads(line) for line in sidecar.read_text().splitlines()]
    by_op = {r["operationId"]: r for r in records}
    for index, item in enumerate(result["items"]):
        [ref] = item["diagnostics"]["operations"]
        assert by_op[ref["operationId"]]["caseIndex"] == index
        assert item["metadata"]["models"] == ["mock:echo"]
    assert result["metadata"]["models"] == ["mock:echo"]
    assert not list((tmp_path / "out").glob(".*part"))


FLAKY_EVAL = """\
from axl_action import dataset, define_eval, scorer

LOADS = {"n": 0}

def check(value):
    LOADS["n"] += 1
    if LOADS["n"] > 4:  # the third run's dataset load fails
        raise ValueError("the dataset service went away")
    return value

def execute_workflow(value, runtime):
    return {"output": value}

eval = define_eval("flaky", dataset("flaky", items=[{"input": 1}, {"input": 2}], schema=check),
                   [scorer("one", lambda output: 1)])
"""


def test_partial_batch_is_stamped_and_fails_the_file(tmp_path: Path) -> None:
    path = tmp_path / "flaky_eval.py"
    path.write_text(FLAKY_EVAL)
    out = tmp_path / "runs.json"
    proc = axl(str(path), "--runs", "4", "--output", str(out), "--quiet")
    assert proc.returncode == 1
    assert "[axl-eval] Run 3/4 failed: " in proc.stderr
    assert f"[axl-eval] PARTIAL: 2 of 4 runs completed for {path}." in proc.stderr
    assert "Run 4/4" not in proc.stderr  # no further attempts after a failure
    runs = json.loads(out.read_text())
    assert len(runs) == 2
    for run in runs:
        meta = run["metadata"]
        assert meta["fromPartialBatch"] is True
        assert meta["batchCompleted"] == 2 and meta["batchAttempted"] == 4
        assert "the dataset service went away" in meta["batchFailure"]


def test_bad_pricing_file_is_one_error_line(tmp_path: Path) -> None:
    path = tmp_path / "mock_eval.py"
    path.write_text(MOCK_EVAL)
    pricing = tmp_path / "prices.json"
    pricing.write_text("{not json")
    proc = axl(str(path), "--pricing", str(pricing))
    assert proc.returncode == 1
    assert proc.stderr.startswith("Error: ") and "Traceback" not in proc.stderr
    assert str(pricing) in proc.stderr
