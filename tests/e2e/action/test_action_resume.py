"""Re-running a cancelled job resumes from the journal its first attempt stored: no item twice.

The action runs as the container runs it (a process, ``GITHUB_RUN_ATTEMPT`` set), against the
loopback fake GitHub. Attempt 1 is cancelled as the runner cancels a job (SIGINT); it stores
the run journal as an artifact on its way out. Attempt 2 of the same run fetches it and runs
only the items attempt 1 did not settle.
"""

from __future__ import annotations

import collections
import io
import json
import signal
import time
import zipfile
from pathlib import Path

import pytest

from tests.e2e.action.test_action_e2e import Harness, h  # noqa: F401  (the fixture)

pytestmark = pytest.mark.slow

EVAL = """\
import os, time
from axl_action import dataset, define_eval, scorer

def execute_workflow(value, runtime):
    with open(os.environ["CALLS"], "a") as fh:  # the test's ledger of paid calls
        fh.write(f"{value}\\n")
    time.sleep(0.05)
    return {"output": value}

eval = define_eval(
    "resumable",
    dataset("resumable", items=[{"input": n} for n in range(80)]),
    [scorer("even", lambda output: float(output % 2 == 0))],
    concurrency=4,
)
"""


def _calls(path: Path) -> collections.Counter[int]:
    return (
        collections.Counter(int(x) for x in path.read_text().split())
        if path.exists()
        else collections.Counter()
    )


def test_a_rerun_job_resumes_from_the_cancelled_attempts_journal(h: Harness) -> None:  # noqa: F811
    (h.workspace / "evals").mkdir()
    (h.workspace / "evals" / "resumable_eval.py").write_text(EVAL)
    calls = h.tmp / "calls.log"
    run, payload, env = h.push(h.main[-1])
    env = {**env, "CALLS": str(calls)}
    inputs = {"evals": "evals/resumable_eval.py"}

    first = h.start("push", run, payload, env, inputs=inputs)
    deadline = time.monotonic() + 60
    while len(_calls(calls)) < 12:
        if first.proc.poll() is not None:
            raise AssertionError(f"attempt 1 ended early: {first.finish().log}")
        assert time.monotonic() < deadline, "attempt 1 never got going"
        time.sleep(0.02)
    first.proc.send_signal(signal.SIGINT)  # the runner cancelling the job
    cancelled = first.finish(timeout=60)
    assert cancelled.code != 0, cancelled.log
    assert "stored its journal as artifact 'axl-eval-journal'" in cancelled.log
    [artifact] = h.artifacts("axl-eval-journal", run)
    with zipfile.ZipFile(io.BytesIO(artifact.data)) as zf:
        journal = zf.read("results.json.journal.jsonl")
    settled = {
        json.loads(line)["item"]["input"] for line in journal.splitlines() if line.startswith(b'{"segment"')
    }
    assert settled and settled == set(_calls(calls))  # in-flight items finished within the grace period

    second = h.run("push", run, payload, env, inputs=inputs, attempt=2)
    assert second.code == 0, second.log
    assert "resuming from the journal of an earlier attempt" in second.log
    ran = _calls(calls)
    assert sorted(ran) == list(range(80))
    assert max(ran.values()) == 1, "re-running the job paid for an item twice"
    results = json.loads((h.workspace / second.outputs["results-path"]).read_text())
    assert results["metadata"]["resumed"]["itemsFromJournal"] == len(settled)
    assert results["summary"]["coverage"]["items"]["completed"] == 80
    assert not h.artifacts("axl-eval-journal", run), "the consumed journal artifact is deleted"

    # A third attempt has nothing to resume: it runs every item again, as a fresh run does.
    third = h.run("push", run, payload, env, inputs=inputs, attempt=3)
    assert third.code == 0, third.log
    assert "no earlier attempt left a journal" in third.log
    assert set(_calls(calls).values()) == {2}


def test_a_first_attempt_never_looks_for_a_journal(h: Harness) -> None:  # noqa: F811
    run, payload, env = h.push(h.main[-1])
    result = h.run("push", run, payload, env)
    assert result.code == 0, result.log
    assert "journal" not in result.log.lower()
    assert not h.artifacts("axl-eval-journal", run)
