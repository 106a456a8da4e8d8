"""An eval is the same eval by its resolved file and its code (issue 25 item 4): real CLI
processes killed with SIGKILL mid-run, then resumed.

* the same eval named by another path (an absolute path, another working directory) resumes,
  and no settled item runs again;
* a change to the eval file or to a module it imports is refused in one line naming the file;
  ``--resume --force`` keeps the items and the result records what it accepted;
* a changed judge is accepted by ``--force`` the same way; ``--force`` alone is refused.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from axl_action.evals.journal.reader import read_journal

EVAL = """\
import os, signal, time
from axl_action import dataset, define_eval, scorer
import helpers

def execute_workflow(value, runtime):
    with open(os.environ["CALLS"], "a") as fh:
        fh.write(f"{value}\\n")
    if os.environ.get("CRASH_AT") == str(value):
        os.kill(os.getpid(), signal.SIGKILL)
    time.sleep(0.002)  # over 1 ms: journaled at once, as a paid item is
    return {"output": helpers.triple(value)}

eval = define_eval(
    "counted",
    dataset("counted", items=[{"input": n} for n in range(12)]),
    [scorer("div3", lambda output: float(output % 3 == 0))],
    concurrency=1,
)
"""

HELPERS = "def triple(n):\n    return n * 3\n"


def _axl(args: list[str], cwd: Path, calls: Path, **extra: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "AXL_EVAL_"))}
    return subprocess.run(
        [sys.executable, "-m", "axl_action.cli.main", *args],
        cwd=cwd,
        env={**env, "CALLS": str(calls), **extra},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _counts(calls: Path) -> Counter[int]:
    return Counter(int(line) for line in calls.read_text().split())


@pytest.fixture
def crashed(tmp_path: Path) -> tuple[Path, Path]:
    """An eval folder with a helper module, and a run of it killed at item 7 (items 0-6 journaled)."""
    project = tmp_path / "project"
    (project / "evals").mkdir(parents=True)
    (project / "evals" / "counted_eval.py").write_text(EVAL)
    (project / "evals" / "helpers.py").write_text(HELPERS)
    calls = tmp_path / "calls.txt"
    done = _axl(["evals/counted_eval.py", "--output", "out/r.json", "--quiet"], project, calls, CRASH_AT="7")
    assert done.returncode == -signal.SIGKILL, done.stderr
    journal = read_journal(project / "out" / "r.json.journal.jsonl")
    assert sorted(journal.segments[0].final) == list(range(7))
    sources = journal.segments[0].segment.sources
    assert sources is not None and set(sources) == {"counted_eval.py", "helpers.py"}
    return project, calls


@pytest.mark.parametrize("spelling", ["absolute path", "another directory"])
def test_the_same_eval_by_another_path_resumes_without_running_settled_items(
    crashed: tuple[Path, Path], spelling: str
) -> None:
    project, calls = crashed
    if spelling == "absolute path":
        cwd, args = project, [str(project / "evals" / "counted_eval.py"), "--output", "out/r.json"]
    else:
        cwd, args = project / "evals", ["counted_eval.py", "--output", "../out/r.json"]
    resumed = _axl([*args, "--quiet", "--resume"], cwd, calls)
    assert resumed.returncode == 0, resumed.stderr
    counts = _counts(calls)
    assert {i for i, n in counts.items() if n > 1} == {7}  # only the item in flight at the kill
    assert set(counts) == set(range(12))
    result = json.loads((project / "out" / "r.json").read_text())
    assert result["metadata"]["resumed"]["itemsFromJournal"] == 7
    assert "forced" not in result["metadata"]["resumed"]
    assert not (project / "out" / "r.json.journal.jsonl").exists()


def test_a_changed_module_the_eval_imports_is_refused_naming_it_and_force_keeps_the_items(
    crashed: tuple[Path, Path],
) -> None:
    project, calls = crashed
    journal = project / "out" / "r.json.journal.jsonl"
    before = journal.read_bytes()
    (project / "evals" / "helpers.py").write_text("def triple(n):\n    return n + n + n\n")
    args = ["evals/counted_eval.py", "--output", "out/r.json", "--quiet", "--resume"]
    refused = _axl(args, project, calls)
    assert refused.returncode == 1
    lines = [line for line in refused.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, refused.stderr
    assert "the source of eval evals/counted_eval.py changed (helpers.py changed)" in lines[0]
    assert "--force" in lines[0] and "Traceback" not in refused.stderr
    assert journal.read_bytes() == before
    assert max(_counts(calls).values()) == 1  # nothing ran

    forced = _axl([*args, "--force"], project, calls)
    assert forced.returncode == 0, forced.stderr
    assert "WARNING: --force: the source of eval evals/counted_eval.py changed (helpers.py changed)" in (
        forced.stderr
    )
    assert {i for i, n in _counts(calls).items() if n > 1} == {7}
    resumed = json.loads((project / "out" / "r.json").read_text())["metadata"]["resumed"]
    assert resumed["forced"] == ["the source of eval evals/counted_eval.py changed (helpers.py changed)"]


def test_an_edited_eval_file_is_refused_and_a_new_import_is_named(crashed: tuple[Path, Path]) -> None:
    project, calls = crashed
    (project / "evals" / "extra.py").write_text("VALUE = 1\n")
    (project / "evals" / "counted_eval.py").write_text("import extra\n" + EVAL)
    refused = _axl(["evals/counted_eval.py", "--output", "out/r.json", "--quiet", "--resume"], project, calls)
    assert refused.returncode == 1
    assert "(counted_eval.py changed, extra.py added)" in refused.stderr, refused.stderr


def test_force_without_resume_is_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "evals").mkdir()
    (tmp_path / "evals" / "counted_eval.py").write_text(EVAL)
    (tmp_path / "evals" / "helpers.py").write_text(HELPERS)
    calls = tmp_path / "calls.txt"
    done = _axl(["evals/counted_eval.py", "--output", "r.json", "--force"], tmp_path, calls)
    assert done.returncode == 1
    assert "--force needs --resume" in done.stderr and "Traceback" not in done.stderr
    assert not calls.exists()
