"""The run journal end to end: real processes killed by PID, real signals, a loopback model.

Issue 13: a crash anywhere after the first item leaves ``<output>.journal.jsonl``; ``--resume``
finishes the run without calling the model again for any item whose answer was journaled; the
resumed result equals an uninterrupted run's apart from timing and the resume metadata.
"""

from __future__ import annotations

import collections
import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from axl_action.evals.journal.base import is_final
from axl_action.evals.journal.reader import read_journal
from axl_action.schema import load_result_file
from tests.fakes.llm_servers import FakeLLMServer

ROOT = Path(__file__).resolve().parents[2]

# A paid workflow: one model call per item, through the runtime (measured and priced).
PAID_EVAL = """\
import os
from axl_action import dataset, define_eval, scorer

COUNT = int(os.environ.get("PAID_ITEMS", "500"))

def execute_workflow(value, runtime):
    response = runtime.chat("openai:gpt-4o-mini", [{"role": "user", "content": f"item {value['id']}"}])
    return {"output": {"id": value["id"], "text": response.text}}

eval = define_eval(
    "paid",
    dataset("paid", items=[{"input": {"id": i}, "annotations": {"odd": i % 2}} for i in range(COUNT)]),
    [scorer("odd", lambda output, value, notes: float(output["id"] % 2 == notes["odd"])),
     scorer("short", lambda output: 1.0 if len(output["text"]) < 10 else 0.5)],
    concurrency=int(os.environ.get("PAID_CONCURRENCY", "8")),
)
"""

# Every workflow call is appended to CALLS (one line, flushed) before it returns: the test's own
# ledger of what ran. CRASH_AT kills the process (SIGKILL) inside that item's workflow.
COUNTED_EVAL = """\
import os, signal, time
from axl_action import dataset, define_eval, scorer

def execute_workflow(value, runtime):
    with open(os.environ["CALLS"], "a") as fh:
        fh.write(f"{value}\\n")
    if os.environ.get("CRASH_AT") == str(value):
        os.kill(os.getpid(), signal.SIGKILL)
    time.sleep(float(os.environ.get("ITEM_SLEEP", "0.002")))
    return {"output": value * 3}

eval = define_eval(
    "counted",
    dataset("counted", items=[{"input": n} for n in range(int(os.environ.get("ITEMS", "60")))]),
    [scorer("div3", lambda output: float(output % 3 == 0))],
    concurrency=int(os.environ.get("CONC", "1")),
)
"""


def _env(**extra: str) -> dict[str, str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "AXL_EVAL_"))}
    return {**base, **extra}


def _axl(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "axl_action.cli.main", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=180,
        check=False,
    )


def _start(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "axl_action.cli.main", *args],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _item_lines(journal: Path) -> list[dict[str, Any]]:
    if not journal.exists():
        return []
    out = []
    for line in journal.read_bytes().split(b"\n"):
        if line.startswith(b'{"segment":'):
            with contextlib.suppress(ValueError):  # a line being written right now
                out.append(json.loads(line))
    return out


def _wait_for(check: Callable[[], bool], proc: subprocess.Popen[str], what: str, timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if proc.poll() is not None:
            _, err = proc.communicate()
            raise AssertionError(f"the run ended (rc {proc.returncode}) before {what}: {err[-2000:]}")
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.01)


def _kill(proc: subprocess.Popen[str]) -> None:
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=30)
    assert proc.returncode == -signal.SIGKILL


def _calls(path: Path) -> collections.Counter[int]:
    if not path.exists():
        return collections.Counter()
    return collections.Counter(int(line) for line in path.read_text().split())


_VOLATILE = {"duration", "timing", "timestamp", "wireMs", "firstTokenMs", "operationId"}


def _comparable(result: dict[str, Any]) -> dict[str, Any]:
    """A result without what legitimately differs between two runs of the same items."""

    def strip(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items() if k not in _VOLATILE}
        if isinstance(value, list):
            return [strip(v) for v in value]
        if isinstance(value, float):
            return round(value, 12)
        return value

    out = strip(result)
    out.pop("id")
    out["metadata"].pop("resumed", None)
    out["summary"].pop("modelTiming", None)
    return out


def _answered_items(server: FakeLLMServer) -> collections.Counter[int]:
    return collections.Counter(int(r.body["messages"][0]["content"].split()[1]) for r in server.answered)


@pytest.fixture
def model() -> Iterator[FakeLLMServer]:
    with FakeLLMServer("openai") as server:
        yield server


def _paid_env(server: FakeLLMServer, **extra: str) -> dict[str, str]:
    return _env(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY="sk-test-journal-0123456789", **extra)


# ----------------------------------------------------------------------------------- SIGKILL


def test_sigkill_after_100_items_then_resume_calls_no_item_twice(
    tmp_path: Path, model: FakeLLMServer
) -> None:
    (tmp_path / "paid_eval.py").write_text(PAID_EVAL)
    out = tmp_path / "out" / "results.json"
    journal = out.with_name("results.json.journal.jsonl")
    # The model answers exactly 100 calls; later ones hang unanswered, as calls in flight do when
    # the machine dies. The background flush is pushed out of reach, so every journal line the
    # test sees was written through at once, as the durability rule promises for paid items.
    model.hold_after(100)
    env = _paid_env(model, AXL_EVAL_JOURNAL_FLUSH_MS="600000")
    proc = _start(["paid_eval.py", "--output", str(out), "--quiet"], env, tmp_path)
    _wait_for(lambda: len(_item_lines(journal)) >= 100, proc, "100 journaled items")
    _kill(proc)
    assert len(model.answered) == 100
    journaled = {line["item"]["output"]["id"] for line in _item_lines(journal)}
    assert journaled == set(_answered_items(model)), "an answered (paid) call was not in the journal"
    assert not out.exists()

    model.drop_held()
    resumed = _axl(["paid_eval.py", "--output", str(out), "--quiet", "--resume"], env, tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    calls = _answered_items(model)
    assert sorted(calls) == list(range(500))
    assert max(calls.values()) == 1, [i for i, n in calls.items() if n > 1]
    assert not journal.exists()  # removed once the results file was in place

    # The same run without any interruption, against the same server.
    fresh = tmp_path / "fresh" / "results.json"
    clean = _axl(["paid_eval.py", "--output", str(fresh), "--quiet"], env, tmp_path)
    assert clean.returncode == 0, clean.stderr
    got, want = json.loads(out.read_text()), json.loads(fresh.read_text())
    per_call = want["items"][0]["accounting"]["knownCost"]
    assert per_call > 0
    assert got["metadata"]["resumed"] == {
        "itemsFromJournal": 100,
        "spendFromJournal": pytest.approx(100 * per_call),
    }
    assert _comparable(got) == _comparable(want)
    assert load_result_file(out).results[0].summary.count == 500


def test_sigkill_at_a_random_moment_repeats_at_most_the_items_in_flight(
    tmp_path: Path, model: FakeLLMServer
) -> None:
    (tmp_path / "paid_eval.py").write_text(PAID_EVAL)
    out = tmp_path / "results.json"
    journal = tmp_path / "results.json.journal.jsonl"
    model.default_delay = 0.004
    env = _paid_env(model, PAID_ITEMS="300", PAID_CONCURRENCY="6")
    proc = _start(["paid_eval.py", "--output", str(out), "--quiet"], env, tmp_path)
    _wait_for(lambda: len(_item_lines(journal)) >= 100, proc, "100 journaled items")
    _kill(proc)
    before = _answered_items(model)
    in_journal = {line["item"]["output"]["id"] for line in _item_lines(journal)}
    assert in_journal <= set(before)

    resumed = _axl(["paid_eval.py", "--output", str(out), "--quiet", "--resume"], env, tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    calls = _answered_items(model)
    assert sorted(calls) == list(range(300))
    twice = {i for i, n in calls.items() if n > 1}
    # Only items in flight at the kill (answered, not yet settled) can be called again.
    assert not twice & in_journal
    assert len(twice) <= 6
    data = json.loads(out.read_text())
    assert data["metadata"]["resumed"]["itemsFromJournal"] == len(in_journal)
    assert data["summary"]["coverage"]["items"]["completed"] == 300


# ------------------------------------------------------------------------------- crash points


def _counted(tmp_path: Path, **extra: str) -> tuple[Path, Path, dict[str, str]]:
    (tmp_path / "counted_eval.py").write_text(COUNTED_EVAL)
    calls = tmp_path / "calls.log"
    return tmp_path / "results.json", calls, _env(CALLS=str(calls), **extra)


def test_crash_after_item_n_then_resume(tmp_path: Path) -> None:
    out, calls, env = _counted(tmp_path)
    crashed = _axl(["counted_eval.py", "--output", str(out), "--quiet"], {**env, "CRASH_AT": "25"}, tmp_path)
    assert crashed.returncode == -signal.SIGKILL
    assert not out.exists()
    journal = read_journal(tmp_path / "results.json.journal.jsonl")
    assert sorted(journal.segments[0].items) == list(range(25))

    resumed = _axl(["counted_eval.py", "--output", str(out), "--quiet", "--resume"], env, tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    ran = _calls(calls)
    assert sorted(ran) == list(range(60))
    assert {i for i, n in ran.items() if n > 1} == {25}  # only the item the crash cut short
    data = json.loads(out.read_text())
    assert data["metadata"]["resumed"]["itemsFromJournal"] == 25
    assert [i["output"] for i in data["items"]] == [n * 3 for n in range(60)]


CRASH_IN_WRITE = """
if os.environ.get("CRASH_IN_WRITE"):
    import axl_action.schema.io as _io

    def _die(*args, **kwargs):
        os.kill(os.getpid(), signal.SIGKILL)

    _io.result_json_chunks = _die
"""

CRASH_AFTER_TEMP = """
if os.environ.get("CRASH_AFTER_TEMP"):
    def _die(*args, **kwargs):
        os.kill(os.getpid(), signal.SIGKILL)

    os.chmod = _die  # write_result_file's step between its temp file's write and its rename
"""

CRASH_IN_FINGERPRINT = """
if os.environ.get("CRASH_IN_FINGERPRINT"):
    import axl_action.evals.runner as _runner

    def _die(*args, **kwargs):
        os.kill(os.getpid(), signal.SIGKILL)

    _runner.dataset_fingerprint = _die
"""


def test_crash_during_the_final_write_then_resume_runs_nothing_again(tmp_path: Path) -> None:
    out, calls, env = _counted(tmp_path)
    (tmp_path / "counted_eval.py").write_text(COUNTED_EVAL + CRASH_IN_WRITE)
    out.write_text('{"previous": true}')
    crashed = _axl(
        ["counted_eval.py", "--output", str(out), "--quiet"], {**env, "CRASH_IN_WRITE": "1"}, tmp_path
    )
    assert crashed.returncode == -signal.SIGKILL
    assert json.loads(out.read_text()) == {"previous": True}  # the atomic write never half-happened
    assert len(read_journal(tmp_path / "results.json.journal.jsonl").segments[0].items) == 60

    resumed = _axl(["counted_eval.py", "--output", str(out), "--quiet", "--resume"], env, tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    assert set(_calls(calls).values()) == {1}  # every item ran exactly once, before the crash
    data = json.loads(out.read_text())
    assert data["metadata"]["resumed"]["itemsFromJournal"] == 60
    assert data["summary"]["count"] == 60


def test_crash_during_the_fingerprint_then_resume(tmp_path: Path) -> None:
    out, calls, env = _counted(tmp_path)
    (tmp_path / "counted_eval.py").write_text(COUNTED_EVAL + CRASH_IN_FINGERPRINT)
    crashed = _axl(
        ["counted_eval.py", "--output", str(out), "--quiet"], {**env, "CRASH_IN_FINGERPRINT": "1"}, tmp_path
    )
    assert crashed.returncode == -signal.SIGKILL
    # The fingerprint is taken before the first item: nothing ran, nothing was paid for.
    assert not calls.exists()

    resumed = _axl(["counted_eval.py", "--output", str(out), "--quiet", "--resume"], env, tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    assert set(_calls(calls).values()) == {1} and len(_calls(calls)) == 60
    assert json.loads(out.read_text())["summary"]["count"] == 60


def test_an_unavailable_fingerprint_still_writes_the_run(tmp_path: Path) -> None:
    """Issue 13 finding 2 (and 3.3): an input whose text cannot be taken (here its str() raises)
    leaves the dataset fingerprint unavailable, with a warning, and the run is written."""
    (tmp_path / "odd_eval.py").write_text(
        "from axl_action import dataset, define_eval, scorer\n"
        "class Odd:\n"
        "    def __str__(self):\n"
        "        raise RuntimeError('no text for you')\n"
        "eval = define_eval('odd', dataset('odd', items=[{'input': {'id': 1, 'odd': Odd()}}]),\n"
        "    [scorer('s', lambda o: 1.0)], execute_workflow=lambda i, r: {'output': 'ok'})\n"
    )
    result = _axl(["odd_eval.py", "--output", "r.json", "--quiet"], _env(), tmp_path)
    assert result.returncode == 0, result.stderr
    assert "the dataset fingerprint is unavailable (no text for you)" in result.stderr
    assert "dataset" not in json.loads((tmp_path / "r.json").read_text())["metadata"]["fingerprint"]


# ------------------------------------------------------------------------------------ signals

SLOW_EVAL = """\
import os, time
from axl_action import dataset, define_eval, scorer

def execute_workflow(value, runtime):
    with open(os.environ["CALLS"], "a") as fh:
        fh.write(f"{value}\\n")
    time.sleep(10 if value in (3, 9) and os.environ.get("STUCK") else 0.2)
    return {"output": value}

def slow_score(output):
    time.sleep(0.3)
    return 1.0

eval = define_eval("slow", dataset("slow", items=[{"input": n} for n in range(40)]),
                   [scorer("slow", slow_score), scorer("fast", lambda output: 1.0)], concurrency=4)
"""


def test_first_signal_lets_items_in_flight_finish_with_their_scores(tmp_path: Path) -> None:
    (tmp_path / "slow_eval.py").write_text(SLOW_EVAL)
    calls = tmp_path / "calls.log"
    out = tmp_path / "results.json"
    env = _env(CALLS=str(calls))
    proc = _start(["slow_eval.py", "--output", str(out), "--quiet"], env, tmp_path)
    _wait_for(lambda: len(_calls(calls)) >= 6, proc, "6 started items")
    proc.send_signal(signal.SIGTERM)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 143, stderr
    assert "no new items start" in stderr
    data = json.loads(out.read_text())
    started = set(_calls(calls))
    completed = [i for i in data["items"] if i["outcome"] == "completed"]
    # Every item that had started finished, and none lost a score to the signal (5 of 40 did).
    assert {i["input"] for i in completed} == started
    for item in completed:
        assert {d["outcome"] for d in item["scoreDetails"].values()} == {"scored"}, item
    assert {i["outcome"] for i in data["items"]} == {"completed", "cancelled"}
    assert "was kept" in stderr

    resumed = _axl(["slow_eval.py", "--output", str(out), "--quiet", "--resume"], env, tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    assert set(_calls(calls).values()) == {1} and len(_calls(calls)) == 40
    assert json.loads(out.read_text())["summary"]["coverage"]["items"]["completed"] == 40


@pytest.mark.parametrize("how", ["second signal", "grace period"])
def test_hard_stop_writes_what_has_settled_and_exits_at_once(tmp_path: Path, how: str) -> None:
    (tmp_path / "slow_eval.py").write_text(SLOW_EVAL)
    calls = tmp_path / "calls.log"
    out = tmp_path / "results.json"
    env = _env(CALLS=str(calls), STUCK="1")
    args = ["slow_eval.py", "--output", str(out), "--quiet"]
    if how == "grace period":
        args += ["--grace-period", "1"]
    proc = _start(args, env, tmp_path)
    journal = tmp_path / "results.json.journal.jsonl"
    _wait_for(lambda: len(_item_lines(journal)) >= 5 and 9 in _calls(calls), proc, "5 settled items")
    proc.send_signal(signal.SIGTERM)
    if how == "second signal":
        time.sleep(0.5)
        proc.send_signal(signal.SIGTERM)
    start = time.monotonic()
    _, stderr = proc.communicate(timeout=30)
    assert time.monotonic() - start < 6, stderr  # did not wait for the 10 s items
    assert proc.returncode == 143, stderr
    assert f"Hard stop ({how}" in stderr or (how == "grace period" and "grace period is over" in stderr)
    data = json.loads(out.read_text())
    recovered = data["metadata"]["recovered"]
    assert recovered["partial"] is True and recovered["itemsPlanned"] == 40
    assert recovered["itemsFromJournal"] == len(data["items"]) >= 5
    assert 3 not in {i["input"] for i in data["items"]}  # stuck in flight: not settled, not invented
    assert load_result_file(out).results[0].summary.count == len(data["items"])
    assert journal.exists()

    env.pop("STUCK")
    resumed = _axl(["slow_eval.py", "--output", str(out), "--quiet", "--resume"], env, tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    again = {i for i, n in _calls(calls).items() if n > 1}
    # An item the hard stop cut off mid-scoring settled with a cancelled scorer: it is in the
    # written result but not final, so the resume runs it again (journal.is_final).
    final = {i["input"] for i in data["items"] if is_final(i)}
    assert again <= {3, 9} | (set(_calls(calls)) - final)
    assert not again & final  # nothing that settled for good ran twice
    assert json.loads(out.read_text())["summary"]["coverage"]["items"]["completed"] == 40


# ------------------------------------------------------------------------- refusals, recover


def test_an_existing_journal_is_never_overwritten_without_resume(tmp_path: Path) -> None:
    out, _, env = _counted(tmp_path)
    _axl(["counted_eval.py", "--output", str(out), "--quiet"], {**env, "CRASH_AT": "10"}, tmp_path)
    journal = tmp_path / "results.json.journal.jsonl"
    before = journal.read_bytes()
    again = _axl(["counted_eval.py", "--output", str(out), "--quiet"], env, tmp_path)
    assert again.returncode == 1
    lines = again.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: ") and "--resume" in lines[0], again.stderr
    assert "10 settled item(s)" in lines[0]
    assert journal.read_bytes() == before


def test_a_journal_of_another_dataset_is_refused_with_one_line(tmp_path: Path) -> None:
    out, _, env = _counted(tmp_path)
    _axl(["counted_eval.py", "--output", str(out), "--quiet"], {**env, "CRASH_AT": "10"}, tmp_path)
    journal = tmp_path / "results.json.journal.jsonl"
    before = journal.read_bytes()
    (tmp_path / "counted_eval.py").write_text(
        COUNTED_EVAL.replace("for n in range(", "for n in range(1, 1 + ")
    )
    refused = _axl(["counted_eval.py", "--output", str(out), "--quiet", "--resume"], env, tmp_path)
    assert refused.returncode == 1
    line = [ln for ln in refused.stderr.splitlines() if "cannot resume" in ln]
    assert len(line) == 1 and "the dataset of eval counted_eval.py changed" in line[0], refused.stderr
    assert "Traceback" not in refused.stderr
    assert journal.read_bytes() == before  # still there, untouched


def test_resume_refuses_another_shard_and_needs_output(tmp_path: Path) -> None:
    out, calls, env = _counted(tmp_path)
    crashed = _axl(
        ["counted_eval.py", "--output", str(out), "--quiet", "--shard", "1/2"],
        {**env, "CRASH_AT": "20"},
        tmp_path,
    )
    assert crashed.returncode == -signal.SIGKILL
    other = _axl(
        ["counted_eval.py", "--output", str(out), "--quiet", "--shard", "2/2", "--resume"], env, tmp_path
    )
    assert other.returncode == 1 and "--shard differs since it was written (1/2 -> 2/2)" in other.stderr
    same = _axl(
        ["counted_eval.py", "--output", str(out), "--quiet", "--shard", "1/2", "--resume"], env, tmp_path
    )
    assert same.returncode == 0, same.stderr
    data = json.loads(out.read_text())
    assert [i["input"] for i in data["items"]] == list(range(0, 60, 2))
    assert data["metadata"]["shard"] == {"index": 1, "count": 2, "datasetItems": 60}
    assert {i for i, n in _calls(calls).items() if n > 1} == {20}
    usage = _axl(["counted_eval.py", "--resume"], env, tmp_path)
    assert usage.returncode == 1 and "--resume needs --output" in usage.stderr


def test_runs_resume_run_by_run_in_one_batch(tmp_path: Path) -> None:
    out, calls, env = _counted(tmp_path, ITEMS="20")
    (tmp_path / "counted_eval.py").write_text(
        COUNTED_EVAL.replace(
            '    if os.environ.get("CRASH_AT") == str(value):',
            '    if os.environ.get("CRASH_AT") and len(open(os.environ["CALLS"]).read().split()) == int(os.environ["CRASH_AT"]):',
        )
    )
    crashed = _axl(
        ["counted_eval.py", "--output", str(out), "--quiet", "--runs", "3"],
        {**env, "CRASH_AT": "30"},
        tmp_path,
    )
    assert crashed.returncode == -signal.SIGKILL
    journal = read_journal(tmp_path / "results.json.journal.jsonl")
    assert [len(r.items) for r in journal.segments] == [20, 9]
    resumed = _axl(
        ["counted_eval.py", "--output", str(out), "--quiet", "--runs", "3", "--resume"], env, tmp_path
    )
    assert resumed.returncode == 0, resumed.stderr
    assert len(calls.read_text().split()) == 61  # 3 runs x 20 items, plus the one cut short
    data = json.loads(out.read_text())
    assert len(data) == 3
    assert len({r["metadata"]["runGroupId"] for r in data}) == 1
    assert [r["metadata"]["runIndex"] for r in data] == [0, 1, 2]
    assert [r["metadata"].get("resumed", {}).get("itemsFromJournal") for r in data] == [20, 9, None]
    assert [r["summary"]["count"] for r in data] == [20, 20, 20]
    assert data[0]["metadata"]["runGroupId"] == journal.segments[0].segment.group.group_id  # type: ignore[union-attr]
    other = _axl(["counted_eval.py", "--output", str(tmp_path / "x.json"), "--runs", "2"], env, tmp_path)
    assert other.returncode == 0, other.stderr


def test_recover_writes_a_valid_partial_result_from_the_journal_alone(tmp_path: Path) -> None:
    out, _, env = _counted(tmp_path)
    _axl(["counted_eval.py", "--output", str(out), "--quiet"], {**env, "CRASH_AT": "30"}, tmp_path)
    journal = tmp_path / "results.json.journal.jsonl"
    (tmp_path / "counted_eval.py").unlink()  # the eval is gone: only the journal is left
    recovered = _axl(["recover", str(journal), "--output", "saved.json"], env, tmp_path)
    assert recovered.returncode == 0, recovered.stderr
    assert "30 of 60 item(s) recovered (partial)" in recovered.stderr
    data = json.loads((tmp_path / "saved.json").read_text())
    assert data["metadata"]["recovered"] == {
        "journal": "results.json.journal.jsonl",
        "itemsFromJournal": 30,
        "itemsPlanned": 60,
        "partial": True,
    }
    assert [i["input"] for i in data["items"]] == list(range(30))
    assert data["summary"]["count"] == 30 and data["summary"]["coverage"]["items"]["completed"] == 30
    assert data["metadata"]["fingerprint"]["datasetItems"] == 60
    assert load_result_file(tmp_path / "saved.json").results[0].summary.count == 30
    assert journal.exists()  # recover never deletes the journal


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "journal not found"),
        (b'{"results": []}\n', "its first line is not a segment line"),
        (b'{"format":"axl-eval-journal/9"}\n', "unknown journal format 'axl-eval-journal/9'"),
        (b"not json at all\n{}\n", "is damaged at line 1"),
    ],
)
def test_recover_refuses_what_is_not_a_journal_with_one_line(
    tmp_path: Path, content: bytes | None, message: str
) -> None:
    path = tmp_path / "j.journal.jsonl"
    if content is not None:
        path.write_bytes(content)
    result = _axl(["recover", str(path), "--output", "x.json"], _env(), tmp_path)
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], result.stderr
    assert not (tmp_path / "x.json").exists()


def test_a_line_cut_short_by_the_crash_is_dropped(tmp_path: Path) -> None:
    out, calls, env = _counted(tmp_path)
    _axl(["counted_eval.py", "--output", str(out), "--quiet"], {**env, "CRASH_AT": "12"}, tmp_path)
    journal = tmp_path / "results.json.journal.jsonl"
    raw = journal.read_bytes()
    journal.write_bytes(raw[: len(raw) - 40])  # the last item line loses its end (and newline)
    resumed = _axl(["counted_eval.py", "--output", str(out), "--quiet", "--resume"], env, tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    assert "dropped the last line, which the crash cut short" in resumed.stderr
    assert {i for i, n in _calls(calls).items() if n > 1} == {11, 12}
    assert json.loads(out.read_text())["metadata"]["resumed"]["itemsFromJournal"] == 11


def test_a_results_file_that_cannot_be_written_keeps_the_journal(tmp_path: Path) -> None:
    out, calls, env = _counted(tmp_path, ITEMS="20")
    # A directory appears where the results file goes once the run has started (the eval file
    # makes it as it loads): the results file cannot be put in place at the end.
    with (tmp_path / "counted_eval.py").open("a") as fh:
        fh.write(f"\nos.makedirs({str(out)!r}, exist_ok=True)\n")
    failed = _axl(["counted_eval.py", "--output", str(out), "--quiet"], env, tmp_path)
    assert failed.returncode == 1 and "cannot write the results" in failed.stderr
    assert len(read_journal(tmp_path / "results.json.journal.jsonl").segments[0].items) == 20
    out.rmdir()
    (tmp_path / "counted_eval.py").write_text(COUNTED_EVAL)
    # The eval's source changed (the line above is gone): refused, unless --force.
    refused = _axl(["counted_eval.py", "--output", str(out), "--quiet", "--resume"], env, tmp_path)
    assert refused.returncode == 1 and "the source of eval counted_eval.py changed" in refused.stderr
    assert "did not run" not in refused.stderr and "was kept" not in refused.stderr
    resumed = _axl(["counted_eval.py", "--output", str(out), "--quiet", "--resume", "--force"], env, tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    assert set(_calls(calls).values()) == {1}
    meta = json.loads(out.read_text())["metadata"]["resumed"]
    assert meta["itemsFromJournal"] == 20
    assert meta["forced"] == ["the source of eval counted_eval.py changed (counted_eval.py changed)"]


@pytest.mark.parametrize("where", ["a directory", "under a file", "empty"])
def test_an_output_that_cannot_be_a_file_is_refused_before_any_item_runs(tmp_path: Path, where: str) -> None:
    out, calls, env = _counted(tmp_path, ITEMS="5")
    if where == "a directory":
        out.mkdir()
        given, message = str(out), f"Error: --output {out} is a directory"
    elif where == "under a file":
        (tmp_path / "plain").write_text("x")
        given, message = (
            str(tmp_path / "plain" / "r.json"),
            f"{tmp_path / 'plain'} is a file, not a directory",
        )
    else:
        given, message = "", "Error: --output needs a file name"
    failed = _axl(["counted_eval.py", "--output", given, "--quiet"], env, tmp_path)
    lines = failed.stderr.strip().splitlines()
    assert failed.returncode == 1 and len(lines) == 1 and message in lines[0], failed.stderr
    assert not calls.exists() or not _calls(calls)
    assert not list(tmp_path.glob("*.journal.jsonl"))


def test_a_journal_that_cannot_be_created_is_one_line_before_any_item_runs(tmp_path: Path) -> None:
    _, calls, env = _counted(tmp_path, ITEMS="5")
    failed = _axl(["counted_eval.py", "--output", "/proc/axl-out.json", "--quiet"], env, tmp_path)
    lines = failed.stderr.strip().splitlines()
    assert failed.returncode == 1 and len(lines) == 1, failed.stderr
    assert lines[0].startswith("Error: cannot write the run journal /proc/axl-out.json.journal.jsonl")
    assert not calls.exists() or not _calls(calls)


def test_a_kill_during_the_final_write_leaves_a_temp_file_the_next_run_removes(tmp_path: Path) -> None:
    """Issue 25 item 6: the ``.results.json.<random>`` a kill between mkstemp and rename left
    is removed by the next run of the same output (and only that output's)."""
    out, _calls, env = _counted(tmp_path)
    (tmp_path / "counted_eval.py").write_text(COUNTED_EVAL + CRASH_AFTER_TEMP)
    other = tmp_path / ".other.json.abcd1234"
    other.write_text("{}")
    crashed = _axl(
        ["counted_eval.py", "--output", str(out), "--quiet"], {**env, "CRASH_AFTER_TEMP": "1"}, tmp_path
    )
    assert crashed.returncode == -signal.SIGKILL, crashed.stderr
    [stale] = tmp_path.glob(".results.json.*")
    resumed = _axl(["counted_eval.py", "--output", str(out), "--quiet", "--resume"], env, tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    assert f"Removed {stale}, a temporary file an interrupted write of {out} left behind." in resumed.stderr
    assert not list(tmp_path.glob(".results.json.*")) and other.exists()
    assert json.loads(out.read_text())["summary"]["count"] == 60


def test_repeats_crash_then_resume_runs_only_the_unsettled_items_repeats(tmp_path: Path) -> None:
    out, calls, env = _counted(tmp_path, ITEMS="20")
    crashed = _axl(
        ["counted_eval.py", "--output", str(out), "--quiet", "--repeats", "3"],
        {**env, "CRASH_AT": "10"},
        tmp_path,
    )
    assert crashed.returncode == -signal.SIGKILL
    other = _axl(
        ["counted_eval.py", "--output", str(out), "--quiet", "--repeats", "2", "--resume"], env, tmp_path
    )
    assert other.returncode == 1 and "--repeats differs since it was written (3 -> 2)" in other.stderr, (
        other.stderr
    )
    assert "Traceback" not in other.stderr
    resumed = _axl(
        ["counted_eval.py", "--output", str(out), "--quiet", "--repeats", "3", "--resume"], env, tmp_path
    )
    assert resumed.returncode == 0, resumed.stderr
    # Items 0-9 settled with their three repeats before the crash: not one of them ran again.
    counts = _calls(calls)
    assert {n: counts[n] for n in range(10)} == dict.fromkeys(range(10), 3)
    assert counts[10] == 4  # the repeat that crashed, then its three repeats again
    assert all(counts[n] == 3 for n in range(11, 20))
    data = json.loads(out.read_text())
    assert data["metadata"]["repeats"] == 3
    assert all(len(item["repeats"]) == 3 for item in data["items"])


def test_repeats_auto_journals_steady_items_in_round_one_and_checks_its_flags(tmp_path: Path) -> None:
    """``--repeats auto``: an item the baseline shows steady will not run again, so it is
    journalled as soon as its first repeat settles, and a crash in round 1 loses none of them."""
    out, calls, env = _counted(tmp_path, ITEMS="20")
    base = tmp_path / "base.json"
    made = _axl(["counted_eval.py", "--output", str(base), "--quiet", "--repeats", "2"], env, tmp_path)
    assert made.returncode == 0, made.stderr
    calls.unlink()
    auto = ["counted_eval.py", "--output", str(out), "--quiet", "--repeats", "auto", "--baseline", str(base)]
    crashed = _axl(auto, {**env, "CRASH_AT": "10"}, tmp_path)
    assert crashed.returncode == -signal.SIGKILL
    journal = read_journal(tmp_path / "results.json.journal.jsonl")
    assert sorted(journal.segments[0].items) == list(range(10))
    other = _axl([*auto, "--max-repeats", "3", "--resume"], env, tmp_path)
    assert other.returncode == 1 and "--max-repeats differs since it was written (none -> 3)" in other.stderr
    resumed = _axl([*auto, "--resume"], env, tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    counts = _calls(calls)
    assert {n: counts[n] for n in range(10)} == dict.fromkeys(range(10), 1)
    assert counts[10] == 2 and all(counts[n] == 1 for n in range(11, 20))
    result = json.loads(out.read_text())
    assert result["metadata"]["sequential"]["decided"] == {"div3": {"look": 1, "verdict": "unchanged"}}
