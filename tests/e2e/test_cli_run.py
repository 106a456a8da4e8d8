"""`axl-eval` run command end to end: real subprocesses, real files, real signals."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from axl_action.schema import load_result_file

ROOT = Path(__file__).resolve().parents[2]
QUICKSTART = ROOT / "examples" / "quickstart"


def axl(
    *args: str, cwd: Path | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "axl_action.cli.main", *args],
        capture_output=True,
        text=True,
        cwd=cwd or ROOT,
        env={**os.environ, **(env or {})},
        timeout=120,
    )


EVAL_TEMPLATE = """\
import time
from axl_action import dataset, define_eval, scorer

def execute_workflow(value, runtime):
    time.sleep({sleep})
    if value in {failing}:
        raise ValueError("broken item " + str(value))
    return {{"output": value}}

eval = define_eval(
    "numbers",
    dataset("numbers", items=[{{"input": n, "annotations": n % 2}} for n in range({count})]),
    [scorer("parity", lambda output, value, want: 1.0 if output % 2 == want else 0.0),
     scorer("small", lambda output: 1.0 if output < 10 else 0.5)],
    concurrency={concurrency},
)
"""


def eval_file(
    tmp_path: Path,
    name: str = "nums_eval.py",
    *,
    count: int = 12,
    failing: str = "()",
    sleep: float = 0.0,
    concurrency: int = 4,
) -> Path:
    path = tmp_path / name
    path.write_text(EVAL_TEMPLATE.format(count=count, failing=failing, sleep=sleep, concurrency=concurrency))
    return path


def test_quickstart_runs_and_writes_a_schema_valid_result(tmp_path: Path) -> None:
    out = tmp_path / "out" / "results.json"
    proc = axl("examples/quickstart", "--output", str(out))
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert "Eval: ticket-triage x support-tickets (30 items)" in lines
    assert any(line.startswith("  Failures: 0/30 | Cost: $0.00 | Duration: ") for line in lines)
    assert f"Results saved to {out}" in lines
    [result] = load_result_file(out).results
    wire = result.to_wire()
    assert wire["summary"]["count"] == 30 and wire["metadata"]["variant"] == "candidate"
    assert json.loads(out.read_text())["id"] == wire["id"]


def test_committed_quickstart_baseline_is_reproducible(tmp_path: Path) -> None:
    out = tmp_path / "baseline.json"
    proc = axl("examples/quickstart", "--output", str(out), "--quiet", env={"QUICKSTART_VARIANT": "baseline"})
    assert proc.returncode == 0, proc.stderr
    fresh = json.loads(out.read_text())
    committed = json.loads((QUICKSTART / "baseline.json").read_text())
    assert committed["metadata"]["variant"] == "baseline"
    assert committed["metadata"]["fingerprint"] == fresh["metadata"]["fingerprint"]
    assert [i["scores"] for i in committed["items"]] == [i["scores"] for i in fresh["items"]]
    assert [i["outcome"] for i in committed["items"]] == [i["outcome"] for i in fresh["items"]]


def test_item_error_gate_exit_code_and_lines(tmp_path: Path) -> None:
    path = eval_file(tmp_path, failing="(1, 2)")
    proc = axl(str(path), "--output", str(tmp_path / "r.json"))
    assert proc.returncode == 1
    assert "  Items: 10 completed, 2 failed — item error rate 16.7% (limit 5%)" in proc.stdout
    assert "  Failure causes: 2 × other" in proc.stdout
    assert f"[axl-eval] ITEM ERROR RATE EXCEEDED: {path} — 2 of 12 attempted item(s) failed" in proc.stderr
    assert (tmp_path / "r.json").exists()  # gates never prevent writing the artifact
    ok = axl(str(path), "--max-item-error-rate", "0.2", "--quiet")
    assert ok.returncode == 0, ok.stderr


def test_total_wipeout(tmp_path: Path) -> None:
    path = eval_file(tmp_path, count=3, failing="(0, 1, 2)")
    proc = axl(str(path), "--max-item-error-rate", "1", "--quiet")
    assert proc.returncode == 1
    assert f"[axl-eval] FAILED: {path} — all 3 item(s) errored in the workflow (0 succeeded)" in proc.stderr
    assert "ITEM ERROR RATE EXCEEDED" not in proc.stderr


def test_budget_zero_stops_everything(tmp_path: Path) -> None:
    path = eval_file(tmp_path, count=4)
    proc = axl(str(path), "--budget", "$0")
    assert proc.returncode == 1
    assert (
        "  Budget: STOPPED — $0.00 known spend against a $0.00 limit, $0.00 over, first observed by case"
        in proc.stdout
    )
    assert "  Items: 0 completed, 4 budget-skipped" in proc.stdout
    assert f"[axl-eval] BUDGET STOPPED: {path} — known spend $0.00 reached the $0.00 limit" in proc.stderr


def test_multi_run_writes_a_list_with_group_stamps(tmp_path: Path) -> None:
    path = eval_file(tmp_path, count=5)
    out = tmp_path / "runs.json"
    proc = axl(str(path), "--runs", "3", "--output", str(out), "--scorers", "parity")
    assert proc.returncode == 0, proc.stderr
    assert "Eval: numbers x numbers — 3 runs" in proc.stdout
    assert "[axl-eval] Run 2/3..." in proc.stderr
    runs = json.loads(out.read_text())
    assert isinstance(runs, list) and len(runs) == 3
    assert len({r["metadata"]["runGroupId"] for r in runs}) == 1
    assert [r["metadata"]["runIndex"] for r in runs] == [0, 1, 2]
    assert all(r["metadata"]["scorersRun"] == ["parity"] and r["metadata"]["scorerFiltered"] for r in runs)
    assert all(list(r["summary"]["scorers"]) == ["parity"] for r in runs)
    assert len(load_result_file(out).results) == 3


def test_shard_flag(tmp_path: Path) -> None:
    path = eval_file(tmp_path, count=10)
    out = tmp_path / "s.json"
    assert axl(str(path), "--shard", "2/3", "--output", str(out), "--quiet").returncode == 0
    data = json.loads(out.read_text())
    assert [i["input"] for i in data["items"]] == [1, 4, 7]
    assert data["metadata"]["shard"] == {"index": 2, "count": 3, "datasetItems": 10}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--runs", "zero"], 'Error: --runs: expected a positive integer, got "zero"'),
        (["--concurrency", "0"], 'Error: --concurrency: expected a positive integer, got "0"'),
        (
            ["--max-item-error-rate", "1.5"],
            'Error: --max-item-error-rate must be a number in [0, 1], got "1.5"',
        ),
        (
            ["--budget", "1 USD"],
            'Error: --budget: Invalid budget "1 USD": expected a non-negative USD amount like $1 or 0.50',
        ),
        (["--shard", "4/3"], "Error: --shard: expected i/n with 1 <= i <= n"),
        (["--frobnicate"], "Error: unknown flag: --frobnicate"),
        (["--output"], "Error: --output: expected one argument"),
        (["--capture-requests"], "Error: --capture-requests needs --output"),
        (["--scorers", "nope"], "Error: --scorers: unknown scorer(s): nope. Available: parity, small"),
    ],
)
def test_bad_flags_give_one_clear_line(tmp_path: Path, args: list[str], message: str) -> None:
    path = eval_file(tmp_path)
    proc = axl(str(path), *args)
    assert proc.returncode == 1
    assert proc.stderr.strip().splitlines()[0].startswith(message), proc.stderr
    assert "Traceback" not in proc.stderr and "usage:" not in proc.stderr


def test_no_paths() -> None:
    proc = axl("--quiet")
    assert proc.returncode == 1
    assert proc.stderr.startswith("Error: No eval file path provided")


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("def broken(:\n", "syntax error"),
        ("value = 1\n", "defines no eval (found: value)"),
        (
            "from axl_action import dataset, define_eval, scorer\n"
            "eval = define_eval('w', dataset('d', items=[]), [scorer('s', lambda o: 1)], lambda i, rt: {'output': i})\n",
            "the dataset has no items",
        ),
    ],
)
def test_bad_eval_files(tmp_path: Path, body: str, message: str) -> None:
    path = tmp_path / "bad_eval.py"
    path.write_text(body)
    good = eval_file(tmp_path, "good_eval.py", count=2)
    proc = axl(str(path), str(good), "--quiet", "--output", str(tmp_path / "r.json"))
    assert proc.returncode == 1
    assert message in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr
    assert json.loads((tmp_path / "r.json").read_text())["summary"]["count"] == 2  # the good file still ran


def test_missing_file_and_malformed_dataset_row(tmp_path: Path) -> None:
    proc = axl(str(tmp_path / "missing_eval.py"))
    assert proc.returncode == 1 and "no such file" in proc.stderr
    (tmp_path / "rows.jsonl").write_text('{"input": 1}\n{"input": 2\n')
    path = tmp_path / "rows_eval.py"
    path.write_text(
        "from pathlib import Path\nfrom axl_action import dataset, define_eval, scorer\n"
        "eval = define_eval('w', dataset('d', file='rows.jsonl', base_path=Path(__file__).parent),"
        " [scorer('s', lambda o: 1)], lambda i, rt: {'output': i})\n"
    )
    proc = axl(str(path))
    assert proc.returncode == 1
    assert f"Error running eval {path}: {tmp_path / 'rows.jsonl'} line 2: invalid JSON" in proc.stderr


SLOW_EVAL = """\
import time
from pathlib import Path
from axl_action import dataset, define_eval, scorer

MARKER = Path(__file__).with_name("started")

def execute_workflow(value, runtime):
    MARKER.touch()
    time.sleep(0.2)
    return {"output": value}

eval = define_eval("slow", dataset("slow", items=[{"input": n} for n in range(60)]),
                   [scorer("one", lambda output: 1)], concurrency=4)
"""


def test_sigterm_writes_a_valid_partial_file(tmp_path: Path) -> None:
    path = tmp_path / "slow_eval.py"
    path.write_text(SLOW_EVAL)
    out = tmp_path / "partial.json"
    proc = subprocess.Popen(
        [sys.executable, "-m", "axl_action.cli.main", str(path), "--output", str(out)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 30
    while not (tmp_path / "started").exists():
        assert time.monotonic() < deadline and proc.poll() is None, "the eval never started"
        time.sleep(0.02)
    time.sleep(0.3)  # let a few items finish
    proc.send_signal(signal.SIGTERM)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 143, stderr
    assert "Received SIGTERM" in stderr
    data = json.loads(out.read_text())
    outcomes = [i["outcome"] for i in data["items"]]
    assert len(outcomes) == 60
    assert "cancelled" in outcomes and "completed" in outcomes
    assert set(outcomes) <= {"completed", "cancelled"}
    assert data["summary"]["coverage"]["items"]["cancelled"] == outcomes.count("cancelled")
    assert all(i["error"] == "Cancelled" for i in data["items"] if i["outcome"] == "cancelled")
    assert load_result_file(out).results[0].summary.count == 60
    assert not list(tmp_path.glob(".partial.json.*"))  # no temp file left behind


def test_second_signal_exits_at_once_and_leaves_the_old_file_intact(tmp_path: Path) -> None:
    path = tmp_path / "slow_eval.py"
    path.write_text(SLOW_EVAL.replace("time.sleep(0.2)", "time.sleep(5)"))
    out = tmp_path / "partial.json"
    out.write_text('{"previous": true}')
    proc = subprocess.Popen(
        [sys.executable, "-m", "axl_action.cli.main", str(path), "--output", str(out)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 30
    while not (tmp_path / "started").exists():
        assert time.monotonic() < deadline and proc.poll() is None, "the eval never started"
        time.sleep(0.02)
    proc.send_signal(signal.SIGINT)
    time.sleep(0.3)
    proc.send_signal(signal.SIGINT)
    start = time.monotonic()
    _, stderr = proc.communicate(timeout=30)
    assert time.monotonic() - start < 4  # did not wait for the 5 s items
    assert proc.returncode == 130, stderr
    assert "Hard stop (second signal)" in stderr
    # Nothing had settled, so there was nothing to write: the old file stays as it was.
    assert "Stopped before any item settled" in stderr
    assert json.loads(out.read_text()) == {"previous": True}
