"""A disk that fills mid-run loses no paid item (issue 25 item 6).

The run's output directory is a 200 KiB tmpfs, mounted in a private mount namespace
(``unshare -rm``: no root needed, nothing visible outside the test). 300 paid items at
concurrency 8 fill it after about a hundred. The journal's first failed write stops admission;
the items in flight finish; the results file cannot be written on the full disk either, so
every item goes to the rescue directory, and the message says where and what to do. Following
it (move the file, delete the journal, ``--resume``) runs only the items that never started:
every item is paid exactly once.
"""

from __future__ import annotations

import collections
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from axl_action.evals.journal.reader import read_journal
from axl_action.evals.journal.writer import JournalWriter
from tests.fakes.llm_servers import FakeLLMServer

PAID_EVAL = """\
from axl_action import dataset, define_eval, scorer

def execute_workflow(value, runtime):
    response = runtime.chat("openai:gpt-4o-mini", [{"role": "user", "content": f"item {value['id']}"}])
    return {"output": {"id": value["id"], "text": response.text}}

eval = define_eval(
    "paid",
    dataset("paid", items=[{"input": {"id": i}} for i in range(300)]),
    [scorer("short", lambda output: 1.0 if len(output["text"]) < 10 else 0.5)],
    concurrency=8,
)
"""

FILL = r"""
set -u
mount -t tmpfs -o size=200k tmpfs "$OUT_DIR" || exit 97
"$PYTHON" -m axl_action.cli.main paid_eval.py --output "$OUT_DIR/r.json" --quiet
rc=$?
cp -a "$OUT_DIR/." "$KEEP_DIR/"
exit $rc
"""


def _can_unshare() -> bool:
    if shutil.which("unshare") is None:
        return False
    probe = subprocess.run(["unshare", "-rm", "true"], capture_output=True, check=False)
    return probe.returncode == 0


@pytest.fixture
def model() -> Iterator[FakeLLMServer]:
    with FakeLLMServer("openai") as server:
        yield server


def _env(model: FakeLLMServer, **extra: str) -> dict[str, str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "AXL_EVAL_"))}
    return {
        **base,
        "OPENAI_BASE_URL": model.base_url,
        "OPENAI_API_KEY": "sk-test-full-disk-0123456789",
        "PYTHON": sys.executable,
        **extra,
    }


def _answered(model: FakeLLMServer) -> collections.Counter[int]:
    return collections.Counter(int(r.body["messages"][0]["content"].split()[1]) for r in model.answered)


@pytest.mark.skipif(not _can_unshare(), reason="needs unshare -rm (a private mount namespace) for a tmpfs")
def test_a_disk_that_fills_mid_run_loses_no_paid_item(tmp_path: Path, model: FakeLLMServer) -> None:
    (tmp_path / "paid_eval.py").write_text(PAID_EVAL)
    out_dir, keep, rescue = tmp_path / "out", tmp_path / "kept", tmp_path / "rescue"
    for folder in (out_dir, keep, rescue):
        folder.mkdir()
    env = _env(model, OUT_DIR=str(out_dir), KEEP_DIR=str(keep), TMPDIR=str(rescue))
    done = subprocess.run(
        ["unshare", "-rm", "sh", "-c", FILL],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    if done.returncode == 97:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    stderr = done.stderr
    assert stderr.count("ERROR: the run journal stopped: writing") == 1, stderr
    assert "No space left on device" in stderr and "No new item starts" in stderr

    # Admission stopped at once: far fewer than 300 calls were made.
    paid = _answered(model)
    assert 50 < len(paid) < 300
    assert max(paid.values()) == 1

    # The results could not go on the full disk: every item went to the rescue directory.
    [rescued] = list(rescue.glob("r.rescued-*.json"))
    assert f"every item was written to {rescued} instead" in stderr
    assert f"move {rescued} to {out_dir / 'r.json'}" in stderr
    result = json.loads(rescued.read_text())
    outcomes = collections.Counter(item["outcome"] for item in result["items"])
    completed = {item["output"]["id"] for item in result["items"] if item["outcome"] == "completed"}
    assert completed == set(paid), "a paid item is missing from the rescued results"
    assert outcomes["completed"] + outcomes["cancelled"] == 300
    assert result["metadata"]["journalStopped"].startswith("writing ")

    # The journal on the full disk kept what it could (its last line may be torn): a subset.
    journal = keep / "r.json.journal.jsonl"
    journaled = set(read_journal(journal).segments[0].final)
    assert journaled < completed

    # The user's next step, as the message says: move the file, delete the journal, --resume.
    target = keep / "r.json"
    rescued.replace(target)
    journal.unlink()
    resumed = subprocess.run(
        [
            sys.executable,
            "-m",
            "axl_action.cli.main",
            "paid_eval.py",
            "--output",
            str(target),
            "--quiet",
            "--resume",
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert resumed.returncode == 0, resumed.stderr
    calls = _answered(model)
    assert sorted(calls) == list(range(300))
    assert max(calls.values()) == 1, "an item was paid twice"
    final = json.loads(target.read_text())
    assert {item["outcome"] for item in final["items"]} == {"completed"}
    assert final["metadata"]["resumed"]["itemsFromJournal"] == len(completed)


def test_the_first_failed_journal_write_calls_on_fail_once(tmp_path: Path) -> None:
    # /dev/full answers every write with ENOSPC: the journal's file is a link to it.
    if not Path("/dev/full").exists():
        pytest.skip("no /dev/full")
    path = tmp_path / "r.json.journal.jsonl"
    path.symlink_to("/dev/full")
    heard: list[str] = []
    writer = JournalWriter(path, on_fail=heard.append)
    try:
        writer._write_now(b'{"line": 1}\n')
        writer._write_now(b'{"line": 2}\n')
    finally:
        writer.close(release=True)
    assert len(heard) == 1 and "No space left on device" in heard[0]
    assert writer.failed == heard[0]
