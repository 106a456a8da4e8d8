"""A judge is named by its model and prompt (issue 25 item 4): a resume after either changed is
refused, and compare tells two runs graded by different judges apart. Real CLI processes, a
loopback OpenAI-compatible judge."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fakes.llm_servers import FakeLLMServer

JUDGED_EVAL = """\
import os, signal
from axl_action import dataset, define_eval, llm_scorer

def execute_workflow(value, runtime):
    if os.environ.get("CRASH_AT") == str(value):
        os.kill(os.getpid(), signal.SIGKILL)
    return {"output": f"answer {value}"}

eval = define_eval(
    "judged",
    dataset("judged", items=[{"input": i} for i in range(8)]),
    [llm_scorer("helpful", os.environ.get("JUDGE", "openai:gpt-4o-mini"), os.environ["JUDGE_PROMPT"])],
    execute_workflow,
    concurrency=1,
)
"""


@pytest.fixture
def judge() -> Iterator[FakeLLMServer]:
    with FakeLLMServer("openai") as server:
        server.enqueue(*[server.ok('{"score": 0.5, "reasoning": "ok"}') for _ in range(64)])
        yield server


def _run(tmp: Path, server: FakeLLMServer, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "AXL_EVAL_"))}
    full = {
        **base,
        "OPENAI_API_KEY": "sk-test-judge-0123456789",
        "OPENAI_BASE_URL": server.base_url,
        "JUDGE_PROMPT": "Rate how helpful the answer is.",
        **env,
    }
    return subprocess.run(
        [sys.executable, "-m", "axl_action.cli.main", *args],
        cwd=tmp,
        env=full,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.mark.parametrize(
    "changed",
    [{"JUDGE_PROMPT": "Rate how correct the answer is."}, {"JUDGE": "openai:gpt-4o"}],
    ids=["judge prompt", "judge model"],
)
def test_a_resume_after_the_judge_changed_is_refused_in_one_line(
    tmp_path: Path, judge: FakeLLMServer, changed: dict[str, str]
) -> None:
    (tmp_path / "judged_eval.py").write_text(JUDGED_EVAL)
    crashed = _run(tmp_path, judge, "judged_eval.py", "--output", "r.json", "--quiet", CRASH_AT="5")
    assert crashed.returncode == -signal.SIGKILL
    journal = tmp_path / "r.json.journal.jsonl"
    before = journal.read_bytes()
    refused = _run(tmp_path, judge, "judged_eval.py", "--output", "r.json", "--quiet", "--resume", **changed)
    assert refused.returncode == 1
    lines = [ln for ln in refused.stderr.splitlines() if "cannot resume" in ln]
    assert len(lines) == 1 and "the scorer configuration (judge models or prompts)" in lines[0], (
        refused.stderr
    )
    assert "Traceback" not in refused.stderr
    assert journal.read_bytes() == before
    # The unchanged judge resumes.
    resumed = _run(tmp_path, judge, "judged_eval.py", "--output", "r.json", "--quiet", "--resume")
    assert resumed.returncode == 0, resumed.stderr


def test_compare_tells_two_judges_apart(tmp_path: Path, judge: FakeLLMServer) -> None:
    (tmp_path / "judged_eval.py").write_text(JUDGED_EVAL)
    assert _run(tmp_path, judge, "judged_eval.py", "--output", "a.json", "--quiet").returncode == 0
    assert _run(tmp_path, judge, "judged_eval.py", "--output", "same.json", "--quiet").returncode == 0
    other = _run(
        tmp_path, judge, "judged_eval.py", "--output", "b.json", "--quiet", JUDGE_PROMPT="Rate it strictly."
    )
    assert other.returncode == 0, other.stderr

    def compatibility(candidate: str) -> dict[str, object]:
        done = _run(tmp_path, judge, "compare", "a.json", candidate, "--json", "c.json")
        assert done.returncode == 0, done.stderr
        block: dict[str, object] = json.loads((tmp_path / "c.json").read_text())["comparison"][
            "compatibility"
        ]
        return block

    assert compatibility("same.json")["status"] == "compatible"
    changed = compatibility("b.json")
    assert changed["status"] == "changed"
    assert any("eval configuration changed" in m for m in changed["messages"])  # type: ignore[attr-defined]


def test_force_keeps_the_items_graded_by_the_old_judge_and_says_so(
    tmp_path: Path, judge: FakeLLMServer
) -> None:
    (tmp_path / "judged_eval.py").write_text(JUDGED_EVAL)
    crashed = _run(tmp_path, judge, "judged_eval.py", "--output", "r.json", "--quiet", CRASH_AT="5")
    assert crashed.returncode == -signal.SIGKILL
    forced = _run(
        tmp_path,
        judge,
        "judged_eval.py",
        *("--output", "r.json", "--quiet", "--resume", "--force"),
        JUDGE_PROMPT="Rate how correct the answer is.",
    )
    assert forced.returncode == 0, forced.stderr
    assert "WARNING: --force: the scorer configuration (judge models or prompts)" in forced.stderr
    resumed = json.loads((tmp_path / "r.json").read_text())["metadata"]["resumed"]
    assert resumed["itemsFromJournal"] == 5
    assert resumed["forced"] == [
        "the scorer configuration (judge models or prompts) of eval judged_eval.py changed"
    ]
