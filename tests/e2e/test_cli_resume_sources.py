"""Issue 25, "paying twice": what ``--resume`` continues from, and who may write a journal.

Real processes (``python -m axl_action.cli.main``), real signals and a loopback model server
that counts the calls it answered: the test's ledger of what was paid.

* The results file is a resume source when no journal was left (a finished run, a budget stop,
  a kill between the journal's removal and the exit): its settled items are not paid again.
* The journal is locked by the process writing it: a second process refuses, or waits.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.test_cli_run_journal import (
    COUNTED_EVAL,
    PAID_EVAL,
    SLOW_EVAL,
    _answered_items,
    _axl,
    _calls,
    _env,
    _item_lines,
    _paid_env,
    _start,
    _wait_for,
)
from tests.fakes.llm_servers import FakeLLMServer


@pytest.fixture
def model() -> Iterator[FakeLLMServer]:
    with FakeLLMServer("openai") as server:
        yield server


def _per_call_cost(tmp_path: Path, env: dict[str, str]) -> float:
    one = tmp_path / "one" / "r.json"
    proc = _axl(["paid_eval.py", "--output", str(one), "--quiet"], {**env, "PAID_ITEMS": "1"}, tmp_path)
    assert proc.returncode == 0, proc.stderr
    cost = json.loads(one.read_text())["items"][0]["accounting"]["knownCost"]
    assert cost > 0
    return float(cost)


# ------------------------------------------------------------------- the results file as source


def test_resume_after_a_finished_run_pays_for_nothing(tmp_path: Path, model: FakeLLMServer) -> None:
    (tmp_path / "paid_eval.py").write_text(PAID_EVAL)
    out = tmp_path / "out" / "results.json"
    env = _paid_env(model, PAID_ITEMS="60")
    first = _axl(["paid_eval.py", "--output", str(out), "--quiet"], env, tmp_path)
    assert first.returncode == 0, first.stderr
    assert len(model.answered) == 60
    before = json.loads(out.read_text())

    again = _axl(["paid_eval.py", "--output", str(out), "--quiet", "--resume"], env, tmp_path)
    assert again.returncode == 0, again.stderr
    assert len(model.answered) == 60, "a settled item was paid for again"
    assert f"continuing from the results file {out}" in again.stdout
    after = json.loads(out.read_text())
    assert after["id"] == before["id"]
    assert after["metadata"]["resumed"] == {
        "itemsFromJournal": 60,
        "spendFromJournal": pytest.approx(before["accounting"]["knownCost"]),
        "resultsFile": "results.json",
    }
    assert after["items"] == before["items"]
    assert after["accounting"]["knownCost"] == pytest.approx(before["accounting"]["knownCost"])
    assert not out.with_name("results.json.journal.jsonl").exists()


def test_resume_after_a_budget_stop_runs_only_the_skipped_items(tmp_path: Path, model: FakeLLMServer) -> None:
    (tmp_path / "paid_eval.py").write_text(PAID_EVAL)
    env = _paid_env(model, PAID_ITEMS="120", PAID_CONCURRENCY="1")
    per_call = _per_call_cost(tmp_path, env)
    model.answered.clear()
    out = tmp_path / "results.json"
    budget = f"${per_call * 40.5:.12f}"
    stopped = _axl(["paid_eval.py", "--output", str(out), "--quiet", "--budget", budget], env, tmp_path)
    assert stopped.returncode == 1, stopped.stderr  # the budget stop fails the run
    first = json.loads(out.read_text())
    outcomes = [i["outcome"] for i in first["items"]]
    assert "budget_skipped" in outcomes and outcomes.count("completed") >= 30
    done = {i["input"]["id"] for i in first["items"] if i["outcome"] == "completed"}
    paid_first = _answered_items(model)
    assert done <= set(paid_first)

    resumed = _axl(
        ["paid_eval.py", "--output", str(out), "--quiet", "--resume", "--budget", "$1"], env, tmp_path
    )
    assert resumed.returncode == 0, resumed.stderr
    calls = _answered_items(model)
    again = {i for i, n in calls.items() if n > 1}
    assert not again & done, f"completed items paid for twice: {sorted(again & done)}"
    assert set(calls) == set(range(120))
    new_calls = sum(calls.values()) - sum(paid_first.values())
    assert new_calls == 120 - len(done)
    final = json.loads(out.read_text())
    assert final["id"] == first["id"]
    assert final["summary"]["coverage"]["items"]["completed"] == 120
    # The spend adds up: what the first attempt paid (every answered call) plus the resume's.
    total = sum(calls.values()) * per_call
    assert final["accounting"]["knownCost"] == pytest.approx(total, rel=1e-6)
    assert final["accounting"]["budget"]["knownSpend"] == pytest.approx(total, rel=1e-6)
    assert final["metadata"]["resumed"]["spendFromJournal"] == pytest.approx(
        first["accounting"]["knownCost"], rel=1e-6
    )


def test_the_carried_spend_is_charged_to_the_budget(tmp_path: Path, model: FakeLLMServer) -> None:
    (tmp_path / "paid_eval.py").write_text(PAID_EVAL)
    env = _paid_env(model, PAID_ITEMS="60", PAID_CONCURRENCY="1")
    per_call = _per_call_cost(tmp_path, env)
    model.answered.clear()
    out = tmp_path / "results.json"
    budget = f"${per_call * 20.5:.12f}"
    _axl(["paid_eval.py", "--output", str(out), "--quiet", "--budget", budget], env, tmp_path)
    paid = len(model.answered)
    assert 15 <= paid <= 25
    # The same budget again: it is already spent, so nothing more is admitted.
    again = _axl(
        ["paid_eval.py", "--output", str(out), "--quiet", "--resume", "--budget", budget], env, tmp_path
    )
    assert again.returncode == 1, again.stderr
    assert len(model.answered) <= paid + 1


FLAKY_EVAL = COUNTED_EVAL.replace(
    '    return {"output": value * 3}',
    '    if value % 5 == 0 and os.environ.get("FAIL"):\n        raise RuntimeError("flaky")\n'
    '    return {"output": value * 3}',
)


def test_resume_failed_runs_the_failed_items_again_and_only_them(tmp_path: Path) -> None:
    (tmp_path / "counted_eval.py").write_text(FLAKY_EVAL)
    calls = tmp_path / "calls.log"
    out = tmp_path / "results.json"
    env = _env(CALLS=str(calls), ITEMS="20")
    args = ["counted_eval.py", "--output", str(out), "--quiet", "--max-item-error-rate", "1"]
    first = _axl(args, {**env, "FAIL": "1"}, tmp_path)
    assert first.returncode == 0, first.stderr
    assert [i["outcome"] for i in json.loads(out.read_text())["items"]].count("failed") == 4

    kept = _axl([*args, "--resume"], env, tmp_path)
    assert kept.returncode == 0, kept.stderr
    assert set(_calls(calls).values()) == {1}, "--resume ran a settled item again"

    retried = _axl([*args, "--resume-failed"], env, tmp_path)
    assert retried.returncode == 0, retried.stderr
    assert {i for i, n in _calls(calls).items() if n > 1} == {0, 5, 10, 15}
    assert max(_calls(calls).values()) == 2
    assert {i["outcome"] for i in json.loads(out.read_text())["items"]} == {"completed"}


@pytest.mark.parametrize(
    ("change", "said"),
    [
        ({"ITEMS": "21"}, "the dataset of eval counted_eval.py changed"),
        ({"RUNS": "2"}, "--runs differs"),
    ],
)
def test_a_results_file_of_another_eval_is_refused_in_one_line(
    tmp_path: Path, change: dict[str, str], said: str
) -> None:
    (tmp_path / "counted_eval.py").write_text(COUNTED_EVAL)
    calls = tmp_path / "calls.log"
    out = tmp_path / "results.json"
    env = _env(CALLS=str(calls), ITEMS="20")
    assert _axl(["counted_eval.py", "--output", str(out), "--quiet"], env, tmp_path).returncode == 0
    before = out.read_bytes()
    calls.unlink()
    args = ["counted_eval.py", "--output", str(out), "--quiet", "--resume"]
    if "RUNS" in change:
        args += ["--runs", change.pop("RUNS")]
    refused = _axl(args, {**env, **change}, tmp_path)
    assert refused.returncode == 1
    lines = [line for line in refused.stderr.splitlines() if "cannot resume from" in line]
    assert len(lines) == 1 and said in lines[0] and str(out) in lines[0], refused.stderr
    assert "Traceback" not in refused.stderr and "recover" not in refused.stderr
    assert not calls.exists(), "an item ran before the refusal"
    assert out.read_bytes() == before


def test_a_file_that_is_not_a_results_file_is_refused_in_one_line(tmp_path: Path) -> None:
    (tmp_path / "counted_eval.py").write_text(COUNTED_EVAL)
    out = tmp_path / "results.json"
    out.write_text('{"hello": 1}')
    proc = _axl(
        ["counted_eval.py", "--output", str(out), "--resume"], _env(CALLS=str(tmp_path / "c")), tmp_path
    )
    assert proc.returncode == 1
    assert f"cannot resume from the results file {out}: it is not an axl-eval result" in proc.stderr
    assert "Traceback" not in proc.stderr and not (tmp_path / "c").exists()


# ------------------------------------------------------------------------------ the journal lock


def _signal_and_wait_for_grace(proc: subprocess.Popen[str], journal: Path) -> None:
    proc.send_signal(signal.SIGINT)
    time.sleep(0.3)
    assert proc.poll() is None, "the first run ended before its grace period could be observed"
    assert journal.exists()


def test_a_resume_during_the_grace_period_refuses_and_pays_nothing_twice(tmp_path: Path) -> None:
    (tmp_path / "counted_eval.py").write_text(COUNTED_EVAL)
    calls = tmp_path / "calls.log"
    out = tmp_path / "results.json"
    journal = tmp_path / "results.json.journal.jsonl"
    # Items take 2 s: after the signal, the 4 in flight are still finishing for a while.
    env = _env(CALLS=str(calls), ITEMS="40", CONC="4", ITEM_SLEEP="2")
    args = ["counted_eval.py", "--output", str(out), "--quiet"]
    first = _start(args, env, tmp_path)
    _wait_for(lambda: len(_item_lines(journal)) >= 4, first, "4 settled items")
    _signal_and_wait_for_grace(first, journal)
    started = set(_calls(calls))

    second = _axl([*args, "--resume"], env, tmp_path)
    assert second.returncode == 1, second.stderr
    assert f"a run is still writing this journal: pid {first.pid}" in second.stderr, second.stderr
    assert "Traceback" not in second.stderr
    assert set(_calls(calls)) == started, "the refused resume ran items"
    first.communicate(timeout=60)
    assert first.returncode == 130

    finish = _axl([*args, "--resume"], {**env, "ITEM_SLEEP": "0.001"}, tmp_path)
    assert finish.returncode == 0, finish.stderr
    assert set(_calls(calls).values()) == {1}, "an item was run twice"
    assert len(_calls(calls)) == 40


def test_two_resumes_at_once_never_run_an_item_twice_and_wait_waits(tmp_path: Path) -> None:
    (tmp_path / "counted_eval.py").write_text(COUNTED_EVAL)
    calls = tmp_path / "calls.log"
    out = tmp_path / "results.json"
    journal = tmp_path / "results.json.journal.jsonl"
    env = _env(CALLS=str(calls), ITEMS="60", CONC="4", ITEM_SLEEP="0.05")
    args = ["counted_eval.py", "--output", str(out), "--quiet"]
    crashed = _start(args, env, tmp_path)
    _wait_for(lambda: len(_item_lines(journal)) >= 8, crashed, "8 settled items")
    os.kill(crashed.pid, signal.SIGKILL)  # its lock dies with it: a stale lock is no obstacle
    crashed.communicate(timeout=30)
    settled = {line["item"]["input"] for line in _item_lines(journal)}

    # Slower items now, so that the first resume is surely still running while the others start.
    one = _start([*args, "--resume"], {**env, "ITEM_SLEEP": "0.4"}, tmp_path)
    _wait_for(lambda: len(_item_lines(journal)) > len(settled), one, "the first resume to run items")
    refused = _axl([*args, "--resume"], env, tmp_path)
    assert refused.returncode == 1 and f"pid {one.pid}" in refused.stderr, refused.stderr
    waited = _axl([*args, "--resume", "--wait"], env, tmp_path)  # ends after the first one finished
    one.communicate(timeout=60)  # reads and closes its pipes
    assert one.returncode == 0
    assert waited.returncode == 0, waited.stderr
    assert f"Waiting for pid {one.pid}" in waited.stdout
    counts = _calls(calls)
    assert len(counts) == 60
    twice = {i for i, n in counts.items() if n > 1}
    assert not twice & settled
    assert len(twice) <= 4  # only what the SIGKILL caught in flight
    result: dict[str, Any] = json.loads(out.read_text())
    assert result["summary"]["coverage"]["items"]["completed"] == 60
    assert not journal.exists() and not journal.with_name(journal.name + ".lock").exists()


def test_a_lock_file_left_by_a_dead_process_is_taken_over(tmp_path: Path) -> None:
    (tmp_path / "counted_eval.py").write_text(COUNTED_EVAL)
    out = tmp_path / "results.json"
    lock = tmp_path / "results.json.journal.jsonl.lock"
    dead = subprocess.Popen(["true"])
    dead.wait()
    lock.write_text(f"{dead.pid}\n")  # what a killed holder leaves: its pid, and no lock held
    proc = _axl(
        ["counted_eval.py", "--output", str(out), "--quiet"],
        _env(CALLS=str(tmp_path / "c"), ITEMS="5"),
        tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    assert not lock.exists()


# ------------------------------------------------------------------------------ double SIGTERM


def test_a_double_sigterm_names_the_items_it_abandons_in_flight(tmp_path: Path) -> None:
    (tmp_path / "slow_eval.py").write_text(SLOW_EVAL)
    calls = tmp_path / "calls.log"
    out = tmp_path / "results.json"
    journal = tmp_path / "results.json.journal.jsonl"
    proc = _start(
        ["slow_eval.py", "--output", str(out), "--quiet"], _env(CALLS=str(calls), STUCK="1"), tmp_path
    )
    # Items 3 and 9 take 10 s: once both started and 5 items settled, they are in flight.
    _wait_for(lambda: len(_item_lines(journal)) >= 5 and 9 in _calls(calls), proc, "5 settled items")
    proc.send_signal(signal.SIGTERM)
    time.sleep(0.5)
    proc.send_signal(signal.SIGTERM)
    _, stderr = proc.communicate(timeout=30)
    assert proc.returncode == 143, stderr
    data = json.loads(out.read_text())
    settled = {i["input"] for i in data["items"]}
    abandoned = set(_calls(calls)) - settled
    assert {3, 9} <= abandoned
    line = f"[axl-eval] {len(abandoned)} item(s) were still in flight and are abandoned: the calls they had made may have been billed"
    assert line in stderr, stderr
    recovered = data["metadata"]["recovered"]
    assert recovered["itemsInFlight"] == len(abandoned)
    assert recovered["inFlightMayBeBilled"] is True


# ------------------------------------------------------------------ --resume --capture-requests


def _captured_calls(sidecar: Path) -> list[tuple[int, str]]:
    """(item, operation id) of every model call whose end record reached the sidecar. Not a set
    of operation ids: each process numbers its operations from 1."""
    records = [json.loads(line) for line in sidecar.read_text().splitlines() if line.strip()]
    return [(r["caseIndex"], r["operationId"]) for r in records if r.get("phase") in ("end", None)]


def test_resume_with_capture_keeps_the_interrupted_runs_records(tmp_path: Path, model: FakeLLMServer) -> None:
    (tmp_path / "paid_eval.py").write_text(PAID_EVAL)
    out = tmp_path / "results.json"
    journal = tmp_path / "results.json.journal.jsonl"
    sidecar = tmp_path / "results.requests.jsonl"
    env = _paid_env(model, PAID_ITEMS="120", PAID_CONCURRENCY="4", AXL_EVAL_JOURNAL_FLUSH_MS="600000")
    args = ["paid_eval.py", "--output", str(out), "--quiet", "--capture-requests"]
    model.hold_after(40)
    proc = _start(args, env, tmp_path)
    _wait_for(lambda: len(_item_lines(journal)) >= 40, proc, "40 journaled items")
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=30)
    journaled = {line["index"] for line in _item_lines(journal)}
    assert len(journaled) >= 40
    model.drop_held()
    resumed = _axl([*args, "--resume"], env, tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    # Every call a provider answered, in either process, has its record in the one sidecar.
    captured = _captured_calls(sidecar)
    assert len(captured) == len(model.answered) == 120
    assert journaled <= {index for index, _ in captured}

    # A run that finished, resumed with capture: nothing runs, and nothing captured is lost.
    before = sidecar.read_bytes()
    again = _axl([*args, "--resume"], env, tmp_path)
    assert again.returncode == 0, again.stderr
    assert sidecar.read_bytes() == before


def test_resume_after_a_budget_stop_appends_to_the_capture(tmp_path: Path, model: FakeLLMServer) -> None:
    (tmp_path / "paid_eval.py").write_text(PAID_EVAL)
    env = _paid_env(model, PAID_ITEMS="60", PAID_CONCURRENCY="1")
    per_call = _per_call_cost(tmp_path, env)
    model.answered.clear()
    out = tmp_path / "results.json"
    sidecar = tmp_path / "results.requests.jsonl"
    args = ["paid_eval.py", "--output", str(out), "--quiet", "--capture-requests"]
    _axl([*args, "--budget", f"${per_call * 20.5:.12f}"], env, tmp_path)
    first = _captured_calls(sidecar)
    assert len(first) == len(model.answered) >= 15
    resumed = _axl([*args, "--resume", "--budget", "$1"], env, tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    both = _captured_calls(sidecar)
    assert both[: len(first)] == first and len(both) == len(model.answered)
    # The carried items still point at their records.
    ops = {
        op["operationId"]
        for item in json.loads(out.read_text())["items"]
        for op in (item.get("diagnostics") or {}).get("operations", [])
    }
    assert {op for _, op in first} & ops


TWO_EVALS = """\
from axl_action import dataset, define_eval, scorer

first = define_eval("first", dataset("first", items=[{"input": n} for n in range(3)]),
                    [scorer("s", lambda output: 1.0)], execute_workflow=lambda v, rt: {"output": v})
second = define_eval("second", dataset("second", items=[{"input": n} for n in range(4)]),
                     [scorer("s", lambda output: 1.0)], execute_workflow=lambda v, rt: {"output": v})
"""


def test_results_no_eval_of_the_command_took_are_kept_beside_it(tmp_path: Path) -> None:
    (tmp_path / "two_eval.py").write_text(TWO_EVALS)
    (tmp_path / "one_eval.py").write_text(TWO_EVALS.split("second =")[0])
    out = tmp_path / "results.json"
    assert _axl(["two_eval.py", "--output", str(out), "--quiet"], _env(), tmp_path).returncode == 0
    before = out.read_bytes()
    assert len(json.loads(before)) == 2
    proc = _axl(["one_eval.py", "--output", str(out), "--quiet", "--resume"], _env(), tmp_path)
    assert proc.returncode == 0, proc.stderr
    kept = tmp_path / "results.json.before-resume"
    assert (
        f"1 result(s) of the earlier results.json matched no eval this command ran; that file was kept as {kept}"
        in proc.stderr
    )
    assert kept.read_bytes() == before
