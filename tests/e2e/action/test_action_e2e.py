"""The action end to end, run as the container runs it, against the loopback fake GitHub.

Each run is a subprocess of ``python -m axl_action.action.entrypoint`` with the environment the
runner gives a Docker action: ``INPUT_*`` (dashes kept), ``GITHUB_*``, ``ACTIONS_RUNTIME_TOKEN``
and ``ACTIONS_RESULTS_URL`` pointing at the fake, a temp workspace holding the bundled
``examples/quickstart``, and temp files standing in for ``/github/file_commands``.
"""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from axl_action.action.outputs import OUTPUT_NAMES
from tests.fakes.github_server import FakeGitHub, FakeRepo, FakeRun

ROOT = Path(__file__).resolve().parents[3]
EVENTS = ROOT / "tests" / "fixtures" / "events"
QUICKSTART = ROOT / "examples" / "quickstart"
FAILING = ROOT / "tests" / "fixtures" / "axl-eval-0.16.1" / "math20-candidate.json"

pytestmark = pytest.mark.slow


@dataclass
class ActionRun:
    code: int
    stdout: str
    stderr: str
    outputs: dict[str, str]
    summary: str

    @property
    def log(self) -> str:
        return self.stdout + self.stderr


def _parse_outputs(text: str) -> dict[str, str]:
    out: dict[str, str] = {}
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        m = re.fullmatch(r"([^<=]+)<<(ghadelimiter_[0-9a-f-]+)", lines[i])
        if m:
            name, delim = m.groups()
            j = lines.index(delim, i + 1)
            out[name] = "\n".join(lines[i + 1 : j])
            i = j + 1
        else:
            i += 1
    return out


class Harness:
    """One fake repository with a history, and a way to run the action on events in it."""

    def __init__(self, gh: FakeGitHub, tmp: Path) -> None:
        self.gh = gh
        self.tmp = tmp
        self.repo: FakeRepo = gh.add_repo("octo", "evals")
        self.main = gh.add_chain(3)
        self.write_token = gh.add_token()
        self.workspace = tmp / "workspace"
        shutil.copytree(QUICKSTART, self.workspace / "examples" / "quickstart")
        shutil.copy(FAILING, self.workspace / "failing.json")
        self.count = 0

    def _repo_fields(self, obj: dict[str, Any], repo: FakeRepo | None = None) -> dict[str, Any]:
        """Point a payload's repository object at a repository of the fake."""
        r = repo or self.repo
        obj.update(id=r.id, name=r.name, full_name=r.full_name, fork=r.fork, default_branch=r.default_branch)
        obj.setdefault("owner", {})["login"] = r.owner
        return obj

    @staticmethod
    def _event(name: str) -> dict[str, Any]:
        payload: dict[str, Any] = json.loads((EVENTS / f"{name}.json").read_text(encoding="utf-8"))
        return payload

    # -- events (the recorded payloads, re-pointed at the fake's ids and commits) -----------

    def push(self, sha: str) -> tuple[FakeRun, dict[str, Any], dict[str, str]]:
        run = self.gh.add_run(self.repo, head_sha=sha, event="push")
        payload = self._event("push-main")
        payload.update(ref="refs/heads/main", after=sha)
        self._repo_fields(payload["repository"])
        return run, payload, {"GITHUB_REF": "refs/heads/main", "GITHUB_SHA": sha}

    def pull_request(
        self, number: int, *, fork: FakeRepo | None = None, base: str | None = None
    ) -> tuple[FakeRun, dict[str, Any], dict[str, str], str]:
        base_sha = base or self.main[-1]
        head = self.gh.add_chain(1, parent=base_sha)[0]
        head_repo = fork or self.repo
        self.gh.add_pull(self.repo, number, head_sha=head, base_sha=base_sha, head_repo=head_repo)
        run = self.gh.add_run(
            self.repo, head_sha=head, head_branch="feature", event="pull_request", head_repo=head_repo
        )
        payload = self._event("pull_request-fork" if fork else "pull_request-synchronize")
        payload.update(number=number, after=head)
        pr = payload["pull_request"]
        pr["number"] = number
        pr["head"].update(sha=head, ref="feature")
        pr["base"].update(sha=base_sha, ref="main")
        self._repo_fields(pr["head"]["repo"], head_repo)
        self._repo_fields(pr["base"]["repo"])
        self._repo_fields(payload["repository"])
        env = {
            "GITHUB_REF": f"refs/pull/{number}/merge",
            "GITHUB_SHA": "f" * 40,
            "GITHUB_HEAD_REF": "feature",
        }
        return run, payload, env, head

    def workflow_run(
        self, triggering: FakeRun, fork: FakeRepo
    ) -> tuple[FakeRun, dict[str, Any], dict[str, str]]:
        run = self.gh.add_run(self.repo, head_sha=self.main[-1], event="workflow_run")
        payload = self._event("workflow_run-completed")
        wr = payload["workflow_run"]
        wr.update(id=triggering.id, event="pull_request", head_sha=triggering.head_sha, pull_requests=[])
        self._repo_fields(wr["head_repository"], fork)
        if isinstance(wr.get("repository"), dict):
            self._repo_fields(wr["repository"])
        self._repo_fields(payload["repository"])
        return run, payload, {"GITHUB_REF": "refs/heads/main", "GITHUB_SHA": self.main[-1]}

    # -- running --------------------------------------------------------------------------

    def run(
        self,
        event_name: str,
        run: FakeRun,
        payload: dict[str, Any],
        env: dict[str, str],
        *,
        inputs: dict[str, str] | None = None,
        token: str | None = None,
        variant: str = "candidate",
    ) -> ActionRun:
        self.count += 1
        files = self.tmp / f"file_commands_{self.count}"
        files.mkdir()
        event_path = files / "event.json"
        event_path.write_text(json.dumps(payload), encoding="utf-8")
        output, summary = files / "set_output", files / "step_summary"
        output.touch()
        summary.touch()
        runner_temp = self.tmp / f"runner_temp_{self.count}"
        runner_temp.mkdir()
        all_inputs = {
            "evals": "examples/quickstart",
            "github-token": token or self.write_token,
            **(inputs or {}),
        }
        full_env = {
            "PATH": os.environ.get("PATH", ""),
            "HOME": str(self.tmp),
            "PYTHONSAFEPATH": "1",
            "GITHUB_ACTIONS": "true",
            "CI": "true",
            "GITHUB_EVENT_NAME": event_name,
            "GITHUB_EVENT_PATH": str(event_path),
            "GITHUB_REPOSITORY": self.repo.full_name,
            "GITHUB_REPOSITORY_ID": str(self.repo.id),
            "GITHUB_RUN_ID": str(run.id),
            "GITHUB_RUN_ATTEMPT": "1",
            "GITHUB_API_URL": self.gh.api_url,
            "GITHUB_SERVER_URL": "https://github.com",
            "GITHUB_WORKFLOW_REF": f"{self.repo.full_name}/{run.workflow_path}@refs/heads/main",
            "GITHUB_WORKSPACE": str(self.workspace),
            "GITHUB_OUTPUT": str(output),
            "GITHUB_STEP_SUMMARY": str(summary),
            "RUNNER_TEMP": str(runner_temp),
            "ACTIONS_RUNTIME_TOKEN": self.gh.runtime_token(run),
            "ACTIONS_RESULTS_URL": self.gh.results_url,
            "QUICKSTART_VARIANT": variant,
            **env,
            **{f"INPUT_{k.upper()}": v for k, v in all_inputs.items()},
        }
        proc = subprocess.run(
            [sys.executable, "-m", "axl_action.action.entrypoint"],
            cwd=self.workspace,
            env=full_env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        return ActionRun(
            proc.returncode,
            proc.stdout,
            proc.stderr,
            _parse_outputs(output.read_text(encoding="utf-8")),
            summary.read_text(encoding="utf-8"),
        )

    def artifacts(self, name: str, run: FakeRun | None = None) -> list[Any]:
        return [a for a in self.gh.artifacts.values() if a.name == name and (run is None or a.run is run)]

    def store_baseline(self) -> FakeRun:
        run, payload, env = self.push(self.main[-1])
        result = self.run("push", run, payload, env, variant="baseline")
        assert result.code == 0, result.log
        return run


@pytest.fixture
def h(tmp_path: Path) -> Iterator[Harness]:
    with FakeGitHub() as gh:
        yield Harness(gh, tmp_path)


def _unzip(data: bytes) -> dict[str, bytes]:
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        return {n: zf.read(n) for n in zf.namelist()}


def test_push_to_default_branch_uploads_the_baseline(h: Harness) -> None:
    run, payload, env = h.push(h.main[-1])
    result = h.run("push", run, payload, env, variant="baseline")
    assert result.code == 0, result.log
    assert result.outputs["mode"] == "baseline" and result.outputs["verdict"] == "pass"
    [baseline] = h.artifacts("axl-eval-baseline", run)
    stored = json.loads(_unzip(baseline.data)["results.json"])
    assert stored["dataset"] and len(stored["items"]) == 30
    assert h.artifacts("axl-eval-report", run), "the HTML report is uploaded too"
    assert result.summary.strip(), "a job summary is written"
    # Every output declared in action.yml is written, and nothing else.
    assert list(result.outputs) == list(OUTPUT_NAMES)
    assert "::group::Run the evals" in result.stdout and "::endgroup::" in result.stdout
    # The token is masked before anything else is printed.
    assert result.stdout.startswith(f"::add-mask::{h.write_token}")


def test_pr_compares_with_the_baseline_and_keeps_one_sticky_comment(h: Harness) -> None:
    baseline_run = h.store_baseline()
    run, payload, env, head = h.pull_request(7)
    first = h.run("pull_request", run, payload, env)
    assert first.outputs["mode"] == "compare", first.log
    assert first.outputs["baseline-sha"] == h.main[-1]
    assert first.outputs["baseline-run-id"] == str(baseline_run.id)
    comments = h.gh.comments_on(h.repo, 7)
    assert len(comments) == 1
    body = comments[0].body
    assert f"head-sha {head}" in body and 'suite="default"' in body
    assert h.main[-1][:7] in body, "the comment names the baseline commit"
    [report] = h.artifacts("axl-eval-report", run)
    assert f"https://github.com/{h.repo.full_name}/actions/runs/{run.id}/artifacts/{report.id}" in body
    assert (
        first.outputs["comment-url"]
        == f"https://github.com/{h.repo.full_name}/pull/7#issuecomment-{comments[0].id}"
    )
    assert first.outputs["regressions"].isdigit()

    # A second run of the same PR updates the comment instead of adding one.
    second = h.run("pull_request", run, payload, env, inputs={"max-item-error-rate": "1"})
    assert len(h.gh.comments_on(h.repo, 7)) == 1, second.log
    assert h.gh.requests_to("api", "PATCH", r"/issues/comments/\d+") or "already up to date" in second.log


def test_pr_without_a_baseline_reports_and_self_gates(h: Harness) -> None:
    run, payload, env, _ = h.pull_request(3)
    result = h.run("pull_request", run, payload, env)
    assert result.code == 0, result.log
    assert result.outputs["baseline-sha"] == "" and result.outputs["verdict"] == "pass"
    assert "no artifact named 'axl-eval-baseline' exists yet" in result.summary
    assert len(h.gh.comments_on(h.repo, 3)) == 1


def test_pr_whose_baseline_expired(h: Harness) -> None:
    old = h.gh.add_run(h.repo, head_sha=h.main[-1], event="push")
    h.gh.add_artifact(old, "axl-eval-baseline", {"results.json": b"{}"}, expired=True)
    run, payload, env, _ = h.pull_request(4)
    result = h.run("pull_request", run, payload, env)
    assert result.code == 0, result.log
    assert "has expired" in result.summary
    assert result.outputs["baseline-sha"] == ""


def test_fork_pr_stores_the_comment_and_the_relay_posts_it(h: Harness) -> None:
    h.store_baseline()
    fork = h.gh.add_repo("stranger", "evals", fork=True)
    read_only = h.gh.add_token(write=False)
    run, payload, env, head = h.pull_request(9, fork=fork)
    result = h.run("pull_request", run, payload, env, token=read_only)
    assert result.code == 0, result.log
    assert "title=PR comment stored for the relay" in result.stdout
    assert h.gh.comments_on(h.repo, 9) == []
    [stored] = h.artifacts("axl-eval-comment", run)
    assert json.loads(_unzip(stored.data)["comment.json"])["pr_number"] == 9

    relay_run, relay_payload, relay_env = h.workflow_run(run, fork)
    relay = h.run(
        "workflow_run", relay_run, relay_payload, relay_env, inputs={"mode": "comment", "evals": ""}
    )
    assert relay.code == 0, relay.log
    [comment] = h.gh.comments_on(h.repo, 9)
    assert f"head-sha {head}" in comment.body
    assert relay.outputs["comment-url"].endswith(f"#issuecomment-{comment.id}")
    assert list(relay.outputs) == list(OUTPUT_NAMES)


def test_failing_gate_publishes_everything_then_exits_1(h: Harness) -> None:
    run, payload, env, _ = h.pull_request(5)
    result = h.run("pull_request", run, payload, env, inputs={"evals": "", "results": "failing.json"})
    assert result.code == 1, result.log
    assert result.outputs["verdict"] == "fail"
    assert "::error title=Gate failed" in result.stdout
    assert result.summary.strip() and len(h.gh.comments_on(h.repo, 5)) == 1
    assert h.artifacts("axl-eval-report", run)
    assert result.outputs["report-path"] and Path(result.outputs["report-path"]).is_file()


def test_github_5xx_and_rate_limits_are_retried(h: Harness) -> None:
    h.store_baseline()
    run, payload, env, _ = h.pull_request(6)
    h.gh.fail_next(2, 502, path=r"/actions/artifacts$")
    h.gh.rate_limit_next(1, retry_after=1, method="POST", path=r"/issues/6/comments$")
    result = h.run("pull_request", run, payload, env)
    assert result.code == 0, result.log
    assert result.outputs["baseline-sha"] == h.main[-1]
    assert len(h.gh.comments_on(h.repo, 6)) == 1
    assert len(h.gh.requests_to("api", "GET", r"/actions/artifacts$")) >= 3


@pytest.mark.parametrize(
    ("files", "fragment"),
    [
        (b"this is not a zip file", "was rejected"),
        ({"../../escape.json": b"{}"}, "was rejected"),
        ({"results.json": b'{"not": "a result"}'}, "was rejected"),
    ],
)
def test_corrupt_or_hostile_baseline_artifacts_are_rejected(
    h: Harness, files: bytes | dict[str, bytes], fragment: str
) -> None:
    old = h.gh.add_run(h.repo, head_sha=h.main[-1], event="push")
    h.gh.add_artifact(old, "axl-eval-baseline", files)
    run, payload, env, _ = h.pull_request(8)
    result = h.run("pull_request", run, payload, env)
    assert result.code == 0, result.log
    assert fragment in result.summary
    assert "title=Baseline not usable" in result.stdout
    assert result.outputs["baseline-sha"] == ""


def test_bad_input_fails_before_running_anything(h: Harness) -> None:
    run, payload, env, _ = h.pull_request(2)
    result = h.run("pull_request", run, payload, env, inputs={"max-item-error-rate": "5%"})
    assert result.code == 1
    assert "::error title=Invalid input max-item-error-rate::" in result.stdout
    assert "Run the evals" not in result.stdout
    assert h.gh.requests_to("api") == []


def test_sharded_suite_legs_then_merge_job_stores_one_baseline(h: Harness) -> None:
    legs = []
    for index in (1, 2):
        run, payload, env = h.push(h.main[-1])
        result = h.run("push", run, payload, env, inputs={"shard": f"{index}/2"}, variant="baseline")
        assert result.code == 0, result.log
        assert result.outputs["mode"] == "shard"
        [artifact] = h.artifacts(f"axl-eval-shard-default-{index}-of-2", run)
        legs.append(artifact)
    assert not h.artifacts("axl-eval-baseline"), "legs store slices, never the baseline"

    # What actions/download-artifact (pattern + merge-multiple) leaves in the merge job's workspace.
    shards = h.workspace / "shards"
    shards.mkdir()
    for artifact in legs:
        for name, data in _unzip(artifact.data).items():
            (shards / name).write_bytes(data)
    run, payload, env = h.push(h.main[-1])
    merged = h.run("push", run, payload, env, inputs={"evals": "", "results": "shards/*.json"})
    assert merged.code == 0, merged.log
    [baseline] = h.artifacts("axl-eval-baseline", run)
    assert len(json.loads(_unzip(baseline.data)["results.json"])["items"]) == 30


def test_command_input_runs_any_command_that_writes_results(h: Harness) -> None:
    run, payload, env, _ = h.pull_request(11)
    command = (
        f'"{sys.executable}" -m axl_action.cli.main examples/quickstart --output "$AXL_EVAL_OUTPUT" --quiet'
    )
    result = h.run("pull_request", run, payload, env, inputs={"evals": "", "command": command})
    assert result.code == 0, result.log
    assert json.loads(Path(result.outputs["results-path"]).read_text())["dataset"]

    broken = h.run("pull_request", run, payload, env, inputs={"evals": "", "command": "echo no results here"})
    assert broken.code == 1
    assert broken.outputs["verdict"] == "error"
    assert "without writing a results file" in broken.summary
