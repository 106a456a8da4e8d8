"""``repeats: auto`` in the action, end to end: the push stores a baseline that ran every item
``max-repeats`` times (nothing to decide against), the pull request finds it before running,
repeats only the items it shows noisy, and the comment says how many repeats it took."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.action.test_action_e2e import Harness, _unzip
from tests.e2e.test_cli_repeats_auto import NOISY_EVAL, calls_of
from tests.fakes.github_server import FakeGitHub

pytestmark = pytest.mark.slow


@pytest.fixture
def h(tmp_path: Path) -> Iterator[Harness]:
    with FakeGitHub() as gh:
        harness = Harness(gh, tmp_path)
        (harness.workspace / "noisy_eval.py").write_text(NOISY_EVAL)
        yield harness


def test_pr_repeats_only_what_the_baseline_shows_noisy_and_says_so(h: Harness) -> None:
    inputs = {"evals": "noisy_eval.py", "repeats": "auto", "max-repeats": "4", "threshold": "0"}
    run, payload, env = h.push(h.main[-1])
    pushed = h.run("push", run, payload, env, inputs=inputs)
    assert pushed.code == 0, pushed.log
    # No baseline to decide against: every item ran the cap, so the next PR knows which vary.
    assert set(calls_of(h.workspace).values()) == {4}
    [stored] = h.artifacts("axl-eval-baseline", run)
    base = json.loads(_unzip(stored.data)["results.json"])
    assert base["metadata"]["sequential"]["baseline"] is False
    noisy = {
        i for i, item in enumerate(base["items"]) if len({r["scores"]["judge"] for r in item["repeats"]}) > 1
    }

    pr_run, pr_payload, pr_env, _head = h.pull_request(9)
    # Nothing changed, so a scoped run would carry the baseline: force the rounds to run.
    first = h.run("pull_request", pr_run, pr_payload, pr_env, inputs={**inputs, "force-run": "true"})
    assert first.outputs["mode"] == "compare", first.log
    assert "Find the baseline" in first.stdout.split("Run the evals")[0], "found before the run"
    calls = calls_of(h.workspace)
    assert {k for k, n in calls.items() if n > 1} <= noisy
    assert all(calls[k] == 1 for k in range(30) if k not in noisy)
    [comment] = h.gh.comments_on(h.repo, 9)
    mean = sum(calls.values()) / 30
    assert f"{mean:.1f} repeats per item on average (cap 4)" in comment.body, comment.body
    assert "| 98.75% CI |" in comment.body


def test_max_repeats_without_auto_is_refused_before_anything_runs(h: Harness) -> None:
    run, payload, env = h.push(h.main[-1])
    result = h.run("push", run, payload, env, inputs={"evals": "noisy_eval.py", "max-repeats": "3"})
    assert result.code == 1
    assert "max-repeats" in result.log and "only works with repeats: auto" in result.log
    assert not (h.workspace / "calls.txt").exists()
