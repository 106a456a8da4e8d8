"""`axl-eval rescore` end to end: real subprocesses, real files, real signals."""

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
LEGACY = ROOT / "tests" / "fixtures" / "axl-eval-0.16.1"
MATH_EVAL = ROOT / "tests" / "fixtures" / "evals" / "math20_rescore_eval.py"


def axl(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "axl_action.cli.main", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={k: v for k, v in os.environ.items() if k != "AXL_EVAL_CONCURRENCY"},
        timeout=120,
    )


# A judge on a registered mock that charges $0.004 per call, plus a deterministic scorer.
JUDGE_EVAL = """\
from axl_action import dataset, define_eval, llm_scorer, scorer
from axl_action.providers.mock import MockProvider
from axl_action.providers.registry import register_provider

register_provider("paid", MockProvider(cost=0.004, name="paid"))

eval = define_eval(
    "judged",
    dataset("unused", items=[{"input": 0}]),
    [llm_scorer("judge", "paid:judge", "Grade the answer."), scorer("present", lambda output: 1)],
    concurrency=1,
    scorer_concurrency=1,
)
"""

ECHO_EVAL = """\
from axl_action import dataset, define_eval, scorer

def execute_workflow(text, runtime):
    reply = runtime.chat("mock:echo", [{"role": "user", "content": "say " + text}])
    return {"output": reply.text}

eval = define_eval("echo", dataset("words", items=[{"input": w} for w in ["zebra-marker", "okapi-marker"]]),
                   [scorer("long", lambda output: 1.0 if len(output) > 5 else 0.0)])
"""


def judge_eval(tmp_path: Path) -> Path:
    path = tmp_path / "judge_eval.py"
    path.write_text(JUDGE_EVAL)
    return path


def test_legacy_result_in_object_out(tmp_path: Path) -> None:
    source = LEGACY / "math20-baseline.json"
    out = tmp_path / "nested" / "rescored.json"
    proc = axl("rescore", str(source), str(MATH_EVAL), "--output", str(out))
    assert proc.returncode == 0, proc.stderr
    assert "Eval: math x math-20 (20 items)" in proc.stdout
    assert "  flaky " in proc.stdout and "(16/19 scored, 3 failed)" in proc.stdout
    assert "  Items: 19 completed, 1 failed" in proc.stdout
    assert f"Rescored results saved to {out}" in proc.stdout
    data = json.loads(out.read_text())
    assert isinstance(data, dict)
    assert data["metadata"]["rescored"] is True
    assert data["metadata"]["originalId"] == "3c5d4d40-225e-45d8-b1b9-6fa7e80df986"
    assert data["accounting"]["scope"] == "rescore"
    assert data["accounting"]["source"]["generation"] is None
    assert load_result_file(out).results[0].summary.count == 20


def test_array_in_array_out(tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    proc = axl("rescore", str(LEGACY / "math20-baseline-runs3.json"), str(MATH_EVAL), "--output", str(out))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count("Eval: math x math-20 (20 items)") == 3
    sources = json.loads((LEGACY / "math20-baseline-runs3.json").read_text())
    data = json.loads(out.read_text())
    assert [r["metadata"]["originalId"] for r in data] == [s["id"] for s in sources]
    assert all("runGroupId" not in r["metadata"] for r in data)


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--scorers", "exact"], "Error: --scorers is not supported with rescore"),
        (
            ["--max-item-error-rate", "0.5"],
            "Error: --max-item-error-rate is not supported with rescore; item failures belong to the "
            "source run — gate them with `axl-eval compare`",
        ),
        (["--budget", "1 USD"], 'Error: --budget: Invalid budget "1 USD"'),
        (["--budget", ""], "Error: --budget: Invalid budget"),
        (["--redact-content"], "Error: --redact-content needs --capture-requests"),
        (["--capture-requests"], "Error: --capture-requests needs --output"),
        (["--bogus"], "Error: unknown flag: --bogus"),
    ],
)
def test_refusals_are_one_line_and_write_nothing(tmp_path: Path, flags: list[str], message: str) -> None:
    out = tmp_path / "r.json"
    args = ["rescore", str(LEGACY / "tiny3-baseline.json"), str(MATH_EVAL)]
    if "--capture-requests" not in flags:
        args += ["--output", str(out)]
    proc = axl(*args, *flags)
    assert proc.returncode == 1
    assert proc.stderr.startswith(message), proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    assert "Traceback" not in proc.stderr
    assert not out.exists() and proc.stdout == ""


@pytest.mark.parametrize("paths", [[], ["only.json"], ["a.json", "b.py", "c.py"]])
def test_needs_exactly_two_paths(paths: list[str]) -> None:
    proc = axl("rescore", *paths)
    assert proc.returncode == 1
    assert proc.stderr.startswith("Error: rescore needs a results file and an eval file")
    assert "axl-eval rescore <results.json> <eval-file>" in proc.stderr


def test_bad_inputs_are_clear_errors(tmp_path: Path) -> None:
    proc = axl("rescore", str(tmp_path / "missing.json"), str(MATH_EVAL))
    assert proc.returncode == 1 and "results file not found" in proc.stderr
    proc = axl("rescore", str(LEGACY / "tiny3-baseline.json"), str(tmp_path / "missing_eval.py"))
    assert proc.returncode == 1 and "no such file" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_budget_stop_exits_1_after_writing(tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    source = LEGACY / "math20-baseline.json"
    proc = axl(
        "rescore", str(source), str(judge_eval(tmp_path)), "--output", str(out), "--budget", "$0.01",
        "--concurrency", "1",
    )  # fmt: skip
    assert proc.returncode == 1, proc.stderr
    assert (
        "Budget: STOPPED — $0.012 known spend against a $0.01 limit, $0.002 over, first observed by scorer"
        in (proc.stdout)
    )
    assert (
        f"[axl-eval] BUDGET STOPPED: rescore {source} — known spend $0.012 reached the $0.01 limit"
        in proc.stderr
    )
    assert "0 case(s) never started" in proc.stderr
    data = json.loads(out.read_text())
    budget = data["accounting"]["budget"]
    assert budget["status"] == "closed" and budget["closedBy"] == "scorer"
    outcomes = [i["scoreDetails"]["judge"]["outcome"] for i in data["items"] if "scoreDetails" in i]
    assert outcomes == ["scored"] * 3 + ["budget_skipped"] * 16
    assert all(
        i["scoreDetails"]["present"]["outcome"] == "scored" for i in data["items"] if "scoreDetails" in i
    )
    # The source's $0.043 is history: only the three judge calls count.
    assert data["totalCost"] == pytest.approx(0.012)


def test_open_budget_exits_0(tmp_path: Path) -> None:
    proc = axl("rescore", str(LEGACY / "tiny3-baseline.json"), str(judge_eval(tmp_path)), "--budget", "$5")
    assert proc.returncode == 0, proc.stderr
    assert "  Budget: $0.012 of $5.00 (open)" in proc.stdout
    assert "BUDGET STOPPED" not in proc.stderr


def test_redact_content_keeps_prompt_text_out_of_both_sidecars(tmp_path: Path) -> None:
    echo = tmp_path / "echo_eval.py"
    echo.write_text(ECHO_EVAL)
    plain, redacted = tmp_path / "plain.json", tmp_path / "redacted.json"
    assert axl(str(echo), "--output", str(plain), "--capture-requests").returncode == 0
    proc = axl(str(echo), "--output", str(redacted), "--capture-requests", "--redact-content")
    assert proc.returncode == 0, proc.stderr
    assert "zebra-marker" in (tmp_path / "plain.requests.jsonl").read_text()
    text = (tmp_path / "redacted.requests.jsonl").read_text()
    assert "zebra-marker" not in text and "okapi-marker" not in text and "[REDACTED:" in text
    assert json.loads(redacted.read_text())["diagnostics"]["redaction"] == "applied"
    assert json.loads(plain.read_text())["diagnostics"]["redaction"] == "none"

    judge = judge_eval(tmp_path)
    plain_r, redacted_r = tmp_path / "plain-r.json", tmp_path / "redacted-r.json"
    proc = axl("rescore", str(plain), str(judge), "--output", str(plain_r), "--capture-requests")
    assert proc.returncode == 0, proc.stderr
    assert f"Captured requests saved to {tmp_path / 'plain-r.requests.jsonl'}" in proc.stdout
    plain_records = (tmp_path / "plain-r.requests.jsonl").read_text()
    assert "zebra-marker" in plain_records and "Grade the answer." in plain_records
    proc = axl(
        "rescore",
        str(plain),
        str(judge),
        "--output",
        str(redacted_r),
        "--capture-requests",
        "--redact-content",
    )
    assert proc.returncode == 0, proc.stderr
    text = (tmp_path / "redacted-r.requests.jsonl").read_text()
    records = [json.loads(line) for line in text.splitlines()]
    # The source's two generation records are carried first (same operation ids), then the judges'.
    source_ops = {
        i["diagnostics"]["operations"][0]["operationId"] for i in json.loads(plain.read_text())["items"]
    }
    assert {r["operationId"] for r in records[:2]} == source_ops
    assert [r.get("scorer") for r in records] == [None, None, "judge", "judge"]
    assert all(r["captured"]["redacted"] is True for r in records)
    assert "zebra-marker" not in text and "Grade the answer." not in text
    data = json.loads(redacted_r.read_text())
    assert data["diagnostics"]["redaction"] == "applied" and data["diagnostics"]["records"] == 4
    assert data["diagnostics"]["status"] == "complete"
    refs = [i["scoreDetails"]["judge"]["diagnostics"]["operations"][0]["operationId"] for i in data["items"]]
    assert sorted(refs) == sorted(r["operationId"] for r in records[2:])
    assert {i["diagnostics"]["operations"][0]["operationId"] for i in data["items"]} == source_ops

    # The source's sidecar is gone: nothing is captured and the manifest says why.
    (tmp_path / "plain.requests.jsonl").unlink()
    gone = tmp_path / "gone.json"
    proc = axl("rescore", str(plain), str(judge), "--output", str(gone), "--capture-requests")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(gone.read_text())
    assert data["diagnostics"] == {
        "version": 1, "artifactId": "", "fidelity": "runtime_request", "status": "unavailable",
        "reason": "the source run's captured requests are no longer available", "records": 0, "bytes": 0,
        "redaction": "none",
    }  # fmt: skip
    assert all(
        "diagnostics" not in i and "diagnostics" not in i["scoreDetails"]["judge"] for i in data["items"]
    )
    assert not (tmp_path / "gone.requests.jsonl").exists()
    assert not list(tmp_path.glob(".*part"))


SLOW_SCORER_EVAL = """\
import time
from pathlib import Path
from axl_action import dataset, define_eval, scorer

MARKER = Path(__file__).with_name("started")

def slow(output):
    MARKER.touch()
    time.sleep(0.1)
    return 1

eval = define_eval("slow", dataset("unused", items=[{"input": 0}]), [scorer("slow", slow)])
"""


def test_sigint_writes_the_partial_rescore(tmp_path: Path) -> None:
    path = tmp_path / "slow_eval.py"
    path.write_text(SLOW_SCORER_EVAL)
    out = tmp_path / "partial.json"
    proc = subprocess.Popen(
        [
            sys.executable, "-m", "axl_action.cli.main", "rescore", str(LEGACY / "math20-baseline.json"),
            str(path), "--output", str(out), "--concurrency", "1",
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    deadline = time.monotonic() + 30
    while not (tmp_path / "started").exists():
        assert time.monotonic() < deadline and proc.poll() is None, "the rescore never started"
        time.sleep(0.02)
    time.sleep(0.25)
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    assert "Received SIGINT" in stderr and "Rescored results saved to" in stdout
    data = json.loads(out.read_text())
    outcomes = [i.get("outcome") for i in data["items"]]
    assert len(outcomes) == 20 and "completed" in outcomes and "cancelled" in outcomes
    cancelled = [i for i in data["items"] if i.get("outcome") == "cancelled"]
    assert all(i["error"] == "cancelled" and "cost" not in i for i in cancelled)


# Issue 13: a rescore journals every rescored item; a crash loses none of the judge calls made.
COUNTING_EVAL = """\
import os, signal, time
from axl_action import dataset, define_eval, llm_scorer, scorer
from axl_action.providers.mock import MockProvider
from axl_action.providers.registry import register_provider

register_provider("paid", MockProvider(cost=0.004, name="paid"))

def counted(output, value):
    with open(os.environ["CALLS"], "a") as fh:
        fh.write(f"{value['id'] if isinstance(value, dict) else value}\\n")
    if os.environ.get("CRASH_AFTER") and len(open(os.environ["CALLS"]).read().split()) > int(os.environ["CRASH_AFTER"]):
        os.kill(os.getpid(), signal.SIGKILL)
    time.sleep(0.002)
    return 1.0

eval = define_eval(
    "counted",
    dataset("unused", items=[{"input": 0}]),
    [llm_scorer("judge", "paid:judge", "Grade the answer."), scorer("counted", counted)],
    concurrency=1,
    scorer_concurrency=1,
)
"""


def test_sigkill_mid_rescore_then_resume_scores_no_item_twice(tmp_path: Path) -> None:
    import collections

    path = tmp_path / "counting_eval.py"
    path.write_text(COUNTING_EVAL)
    calls = tmp_path / "calls.log"
    out = tmp_path / "rescored.json"
    env = {k: v for k, v in os.environ.items() if k != "AXL_EVAL_CONCURRENCY"}
    env["CALLS"] = str(calls)
    argv = [
        sys.executable, "-m", "axl_action.cli.main", "rescore", str(LEGACY / "math20-baseline.json"),
        str(path), "--output", str(out), "--concurrency", "1",
    ]  # fmt: skip
    crashed = subprocess.run(
        argv,
        env={**env, "CRASH_AFTER": "8"},
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert crashed.returncode == -signal.SIGKILL, crashed.stderr
    journal = tmp_path / "rescored.json.journal.jsonl"
    lines = [json.loads(line) for line in journal.read_text().splitlines()]
    assert lines[0]["command"] == "rescore" and lines[0]["sourceId"] == "3c5d4d40-225e-45d8-b1b9-6fa7e80df986"
    journaled = [line["index"] for line in lines[1:]]
    assert len(journaled) == 8  # every item scored before the crash, none lost

    resumed = subprocess.run(
        [*argv, "--resume"], env=env, cwd=ROOT, capture_output=True, text=True, timeout=120, check=False
    )
    assert resumed.returncode == 0, resumed.stderr
    scored = collections.Counter(calls.read_text().split())
    assert sum(n > 1 for n in scored.values()) == 1  # only the item the crash cut short
    data = json.loads(out.read_text())
    assert data["metadata"]["rescored"] is True
    assert data["metadata"]["resumed"] == {
        "itemsFromJournal": 8,
        "spendFromJournal": pytest.approx(8 * 0.004),
    }
    assert (
        data["summary"]["coverage"]["items"]
        == load_result_file(out).results[0].summary.coverage.items.to_wire()
    )
    assert data["accounting"]["scope"] == "rescore" and data["accounting"]["source"]["runId"]
    # Every completed source item's judge was paid for exactly once: 8 before, the rest after.
    completed = [i for i in data["items"] if i.get("outcome") == "completed"]
    assert data["accounting"]["operations"]["total"] == len(completed)
    assert not journal.exists()
