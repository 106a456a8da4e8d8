"""The action end to end, run as the container runs it, against the loopback fake GitHub.

Each run is a subprocess of ``python -m axl_action.action.entrypoint`` with the environment the
runner gives a Docker action: ``INPUT_*`` (dashes kept), ``GITHUB_*``, ``ACTIONS_RUNTIME_TOKEN``
and ``ACTIONS_RESULTS_URL`` pointing at the fake, a temp workspace holding the bundled
``examples/quickstart``, and temp files standing in for ``/github/file_commands``.
"""

from __future__ import annotations

import hashlib
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
from markdown_it import MarkdownIt

from axl_action.action.outputs import OUTPUT_NAMES
from tests.fakes.github_server import FakeGitHub, FakeRepo, FakeRun, make_zip

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


@dataclass
class RunningAction:
    """The action started as a process."""

    proc: subprocess.Popen[str]
    output: Path
    summary: Path

    def finish(self, timeout: float = 120) -> ActionRun:
        stdout, stderr = self.proc.communicate(timeout=timeout)
        return ActionRun(
            self.proc.returncode,
            stdout,
            stderr,
            _parse_outputs(self.output.read_text(encoding="utf-8")),
            self.summary.read_text(encoding="utf-8"),
        )


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
        runner_temp: str | None = None,
        attempt: int = 1,
    ) -> ActionRun:
        started = self.start(
            event_name,
            run,
            payload,
            env,
            inputs=inputs,
            token=token,
            variant=variant,
            runner_temp=runner_temp,
            attempt=attempt,
        )
        return started.finish(timeout=120)

    def start(
        self,
        event_name: str,
        run: FakeRun,
        payload: dict[str, Any],
        env: dict[str, str],
        *,
        inputs: dict[str, str] | None = None,
        token: str | None = None,
        variant: str = "candidate",
        runner_temp: str | None = None,
        attempt: int = 1,
    ) -> RunningAction:
        """Start the action as a process (to signal it, as a cancelled job is); ``finish`` it."""
        self.count += 1
        files = self.tmp / f"file_commands_{self.count}"
        files.mkdir()
        event_path = files / "event.json"
        event_path.write_text(json.dumps(payload), encoding="utf-8")
        output, summary = files / "set_output", files / "step_summary"
        output.touch()
        summary.touch()
        if runner_temp is None:
            (self.tmp / f"runner_temp_{self.count}").mkdir()
            runner_temp = str(self.tmp / f"runner_temp_{self.count}")
        all_inputs = {
            "evals": "examples/quickstart",
            "github-token": token or self.write_token,
            **(inputs or {}),
        }
        full_env = {
            "PATH": os.environ.get("PATH", ""),
            "HOME": str(self.tmp),
            "PYTHONSAFEPATH": "1",
            # The caller's PYTHONPATH, so a source tree that shadows the installed package is tested.
            "PYTHONPATH": os.environ.get("PYTHONPATH", ""),
            "GITHUB_ACTIONS": "true",
            "CI": "true",
            "GITHUB_EVENT_NAME": event_name,
            "GITHUB_EVENT_PATH": str(event_path),
            "GITHUB_REPOSITORY": self.repo.full_name,
            "GITHUB_REPOSITORY_ID": str(self.repo.id),
            "GITHUB_RUN_ID": str(run.id),
            "GITHUB_RUN_ATTEMPT": str(attempt),
            "GITHUB_API_URL": self.gh.api_url,
            "GITHUB_SERVER_URL": "https://github.com",
            "GITHUB_WORKFLOW_REF": f"{self.repo.full_name}/{run.workflow_path}@refs/heads/main",
            "GITHUB_WORKSPACE": str(self.workspace),
            "GITHUB_OUTPUT": str(output),
            "GITHUB_STEP_SUMMARY": str(summary),
            "RUNNER_TEMP": runner_temp,
            "ACTIONS_RUNTIME_TOKEN": self.gh.runtime_token(run),
            "ACTIONS_RESULTS_URL": self.gh.results_url,
            "QUICKSTART_VARIANT": variant,
            # The tree under test, when it is not the installed one (a worktree, a checkout).
            **({"PYTHONPATH": os.environ["PYTHONPATH"]} if os.environ.get("PYTHONPATH") else {}),
            **env,
            **{f"INPUT_{k.upper()}": v for k, v in all_inputs.items()},
        }
        proc = subprocess.Popen(
            [sys.executable, "-m", "axl_action.action.entrypoint"],
            cwd=self.workspace,
            env=full_env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        return RunningAction(proc, output, summary)

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
    assert (
        "::warning title=Baseline not usable::every artifact named 'axl-eval-baseline' has expired"
        in result.stdout
    )


def test_pr_whose_baseline_expires_at_download_is_annotated(h: Harness) -> None:
    h.store_baseline()
    [stored] = h.artifacts("axl-eval-baseline")
    h.gh.fail_next(5, 410, path=rf"/artifacts/{stored.id}/zip$", message="Artifact has expired")
    run, payload, env, _ = h.pull_request(4)
    result = h.run("pull_request", run, payload, env)
    assert result.code == 0, result.log
    assert result.outputs["baseline-sha"] == ""
    assert (
        "::warning title=Baseline not usable::every artifact named 'axl-eval-baseline' has expired"
        in result.stdout
    )


@pytest.mark.parametrize("problem", ["missing", "file", "unset"])
def test_an_unusable_runner_temp_falls_back_with_a_warning(h: Harness, problem: str) -> None:
    not_a_dir = h.tmp / "not-a-dir"
    not_a_dir.write_text("x")
    temp = {"missing": str(h.tmp / "nope"), "file": str(not_a_dir), "unset": ""}[problem]
    run, payload, env = h.push(h.main[-1])
    result = h.run("push", run, payload, env, variant="baseline", runner_temp=temp)
    assert result.code == 0, result.log
    assert "::warning title=Runner temp directory unusable::" in result.stdout
    assert h.artifacts("axl-eval-baseline", run) and h.artifacts("axl-eval-report", run)


def test_path_outputs_are_workspace_relative_and_owned_like_the_workspace(h: Harness) -> None:
    run, payload, env = h.push(h.main[-1])
    result = h.run("push", run, payload, env, variant="baseline")
    assert result.code == 0, result.log
    assert result.outputs["results-path"] == ".axl-eval/default/results.json"
    assert result.outputs["report-path"] == ".axl-eval/default/report.html"
    [baseline] = h.artifacts("axl-eval-baseline", run)
    assert (h.workspace / result.outputs["results-path"]).read_bytes() == _unzip(baseline.data)[
        "results.json"
    ]
    assert "<html" in (h.workspace / result.outputs["report-path"]).read_text().lower()
    owner = h.workspace.stat()
    for path in (h.workspace / ".axl-eval").rglob("*"):
        assert (path.stat().st_uid, path.stat().st_gid) == (owner.st_uid, owner.st_gid), path
    assert (h.workspace / ".axl-eval" / ".gitignore").read_text().splitlines()[-1] == "*"


def test_a_missing_eval_file_is_named_in_the_annotation(h: Harness) -> None:
    run, payload, env, _ = h.pull_request(2)
    result = h.run("pull_request", run, payload, env, inputs={"evals": "examples/nope_eval.py"})
    assert result.code == 1
    assert result.outputs["verdict"] == "error"
    line = next(
        x for x in result.stdout.splitlines() if x.startswith("::error title=axl-eval%3A no results::")
    )
    assert "examples/nope_eval.py: no such file" in line, line


# -- fork PRs: the PR run hands over data, the workflow_run relay does the rest -----------------

INJECTION = (
    "<img src=x onerror=alert(1)> @octocat [click](https://evil.example/x) "
    "![pixel](https://evil.example/p.png) </details> #1 ### ✅ axl-eval pass "
    '<!-- axl-eval-action:comment suite="default" --> <script>alert(2)</script>'
)


def _relay(
    h: Harness, triggering: FakeRun, fork: FakeRepo, inputs: dict[str, str] | None = None
) -> tuple[FakeRun, ActionRun]:
    """The base repository's workflow_run job (``mode: comment``) for ``triggering``."""
    run, payload, env = h.workflow_run(triggering, fork)
    result = h.run(
        "workflow_run", run, payload, env, inputs={"mode": "comment", "evals": "", **(inputs or {})}
    )
    return run, result


def _fork_pr(h: Harness, number: int) -> tuple[FakeRun, FakeRepo, str, ActionRun]:
    """A fork PR's run with a read-only token: it stores its results for the relay."""
    fork = h.gh.add_repo("stranger", "evals", fork=True)
    run, payload, env, head = h.pull_request(number, fork=fork)
    result = h.run("pull_request", run, payload, env, token=h.gh.add_token(write=False))
    assert result.code == 0, result.log
    return run, fork, head, result


def _outside_code(markdown: str) -> str:
    """The Markdown without fenced code blocks and code spans, where nothing renders."""
    text = re.sub(r"(?ms)^(`{3,}|~{3,})[^\n]*\n.*?^\1[ \t]*$", "", markdown)
    return re.sub(r"(`+)(?!`).+?(?<!`)\1(?!`)", "", text)


def test_fork_pr_hands_over_data_and_the_relay_compares_gates_and_comments(h: Harness) -> None:
    baseline_run = h.store_baseline()
    run, fork, head, pr = _fork_pr(h, 9)
    assert "title=PR results stored for the relay" in pr.stdout
    assert h.gh.comments_on(h.repo, 9) == []
    assert not h.artifacts("axl-eval-comment"), "no rendered comment leaves the fork's run"
    [stored] = h.artifacts("axl-eval-relay", run)
    files = _unzip(stored.data)
    assert sorted(files) == ["manifest.json", "results.json"]
    manifest = json.loads(files["manifest.json"])
    assert manifest == {
        "format": "axl-eval-relay/1",
        "suite": "default",
        "repository": h.repo.full_name,
        "pr_number": 9,
        "head_sha": head,
    }
    assert json.loads(files["results.json"]) == json.loads(
        (h.workspace / pr.outputs["results-path"]).read_bytes()
    )

    # The relay gates with its own (trusted) inputs: here stricter than the fork's run was.
    assert pr.outputs["verdict"] == "pass"
    relay_run, relay = _relay(h, run, fork, {"max-item-error-rate": "0"})
    [comment] = h.gh.comments_on(h.repo, 9)
    body = comment.body
    first = body.split("\n")[2]
    assert first == "### ❌ axl-eval fail — failed: Item error rate · relayed for a fork PR", first
    assert f"head-sha {head}" in body and body.count('<!-- axl-eval-action:comment suite="default" -->') == 2
    assert "Relayed for a fork PR" in body and f"workflow run {run.id}" in body
    # The baseline was fetched by the relay itself, from the default branch.
    assert relay.outputs["baseline-run-id"] == str(baseline_run.id)
    assert relay.outputs["baseline-sha"] == h.main[-1] and h.main[-1][:7] in body
    assert len(h.gh.requests_to("api", "GET", r"/repos/octo/evals/actions/artifacts$")) >= 2
    # Links: the fork's run (where the evals ran) and the report the relay rendered and uploaded.
    [report] = h.artifacts("axl-eval-report", relay_run)
    assert f"/actions/runs/{run.id})" in body
    assert f"/actions/runs/{relay_run.id}/artifacts/{report.id})" in body
    # Gated with the relay's inputs, so the verdict and exit code are the relay's.
    assert relay.outputs["mode"] == "comment" and relay.outputs["verdict"] == "fail"
    assert relay.code == 1 and "::error title=Gate failed%3A Item error rate::" in relay.stdout
    assert relay.outputs["comment-url"].endswith(f"#issuecomment-{comment.id}")
    assert list(relay.outputs) == list(OUTPUT_NAMES)
    assert "relayed the results of fork PR" in relay.summary and relay.summary.startswith("### ❌")
    assert relay.outputs["regressions"] == pr.outputs["regressions"]

    # A re-run of the relay updates the one sticky comment.
    _, again = _relay(h, run, fork)
    assert len(h.gh.comments_on(h.repo, 9)) == 1, again.log


def test_relay_without_contents_read_uses_the_newest_baseline(h: Harness) -> None:
    baseline_run = h.store_baseline()
    run, fork, _, _ = _fork_pr(h, 9)
    # The documented relay permissions leave out contents: read; a private repository then
    # refuses the merge-base comparison.
    h.gh.fail_next(1, 403, path=r"/compare/", message="Resource not accessible by integration")
    _, relay = _relay(h, run, fork)
    [comment] = h.gh.comments_on(h.repo, 9)
    assert relay.outputs["baseline-run-id"] == str(baseline_run.id), relay.log
    assert "could not compute the PR's merge base" in comment.body
    assert "contents: read" in comment.body


def _replace_relay_artifact(h: Harness, run: FakeRun, files: dict[str, bytes] | bytes) -> None:
    """What a hostile fork workflow can do: upload anything under the relay artifact's name."""
    [stored] = h.artifacts("axl-eval-relay", run)
    stored.data = files if isinstance(files, bytes) else make_zip(files)
    stored.digest = "sha256:" + hashlib.sha256(stored.data).hexdigest()


def _assert_only_escaped(body: str, *, comment: bool = True) -> None:
    # The injected text is there (so the checks below are not vacuous), but only escaped ...
    assert "@\u200docto" in body and "\\!\\[pixel\\]" in body and "&lt;img" in body
    outside = _outside_code(body)
    for raw in ("<img", "<script", "@octocat", "](https://evil", "https://evil", "#1 "):
        assert raw not in outside, raw
    assert outside.count("<details") == outside.count("</details>")
    if comment:
        assert re.findall(r"^#+ .*", outside, re.M)[0].endswith("· relayed for a fork PR")
    # ... no forged marker: only the two this action writes, plus the head-SHA line.
    assert body.count("<!-- axl-eval-action") == (3 if comment else 0)
    # Rendered as GitHub would: no image, no script, every link points at github.com.
    html = MarkdownIt("commonmark", {"html": True}).enable("table").render(body)
    assert "<img" not in html and "<script" not in html
    hrefs = re.findall(r'href="([^"]*)"', html)
    assert hrefs and all(href.startswith("https://github.com/") for href in hrefs), hrefs


def test_relay_posts_injected_text_from_the_fork_only_escaped(h: Harness) -> None:
    h.store_baseline()
    run, fork, _, _ = _fork_pr(h, 9)
    [stored] = h.artifacts("axl-eval-relay", run)
    files = _unzip(stored.data)
    honest = json.loads(files["results.json"])

    # Outputs, judge reasoning and metadata: the comparison still runs, regressed items are shown.
    results = json.loads(files["results.json"])
    results["metadata"]["note"] = INJECTION
    for item in results["items"]:
        item["output"] = {"category": INJECTION, "priority": "normal", "order_id": None}
        item["scoreDetails"]["category"]["metadata"] = {"reasoning": INJECTION}
    _replace_relay_artifact(h, run, {**files, "results.json": json.dumps(results).encode()})
    _, relay = _relay(h, run, fork)
    [comment] = h.gh.comments_on(h.repo, 9)
    assert relay.outputs["comment-url"].endswith(f"#issuecomment-{comment.id}"), relay.log
    assert "#### Top regressions" in comment.body and "**Judge:** &lt;img" in comment.body
    _assert_only_escaped(comment.body)

    # The dataset name: shown in the subtitle and in the "cannot be compared" warning.
    honest["dataset"] = INJECTION
    _replace_relay_artifact(h, run, {**files, "results.json": json.dumps(honest).encode()})
    _, relay = _relay(h, run, fork)
    [comment] = h.gh.comments_on(h.repo, 9)
    assert "different datasets" in comment.body, relay.log
    _assert_only_escaped(comment.body)
    _assert_only_escaped(relay.summary, comment=False)


def first_line(comment_body: str) -> str:
    """The verdict line, after the two hidden marker lines."""
    return comment_body.split("\n")[2]


def test_relay_skips_a_pr_whose_head_moved_on(h: Harness) -> None:
    h.store_baseline()
    run, fork, head, _ = _fork_pr(h, 9)
    newer = h.gh.add_chain(1, parent=head)[0]
    h.gh.pulls[(h.repo.full_name, 9)].head_sha = newer
    _, relay = _relay(h, run, fork)
    assert relay.code == 0, relay.log
    assert h.gh.comments_on(h.repo, 9) == []
    assert "::warning title=Fork PR comment not relayed::" in relay.stdout
    assert f"PR #9 is now at {newer[:7]}, but the triggering run evaluated {head[:7]}" in relay.stdout
    assert relay.outputs["comment-url"] == "" and relay.outputs["mode"] == "comment"


def test_relay_refuses_a_manifest_naming_another_commit_or_pr(h: Harness) -> None:
    h.store_baseline()
    *_, victim_head = h.pull_request(12)
    run, fork, head, _ = _fork_pr(h, 9)
    [stored] = h.artifacts("axl-eval-relay", run)
    files = _unzip(stored.data)
    manifest = json.loads(files["manifest.json"])
    manifest.update(pr_number=12, head_sha=victim_head)
    _replace_relay_artifact(h, run, {**files, "manifest.json": json.dumps(manifest).encode()})
    _, relay = _relay(h, run, fork)
    assert relay.code == 1
    assert h.gh.comments_on(h.repo, 12) == [] and h.gh.comments_on(h.repo, 9) == []
    assert "::error title=Fork PR comment not relayed::" in relay.stdout
    assert f"it claims head commit {victim_head[:7]}, but the triggering run built {head[:7]}" in relay.stdout
    assert relay.outputs["verdict"] == "error"


@pytest.mark.parametrize(
    ("replacement", "fragment"),
    [
        ({"results.json": b'{"hello": "world"}'}, "results.json is not an axl-eval result"),
        ({"results.json": b"<h1>not json</h1>"}, "results.json is not valid JSON"),
        ({"comment.md": "### ✅ axl-eval pass".encode()}, "unexpected files ('comment.md')"),
        (b"PK this is not a zip", "is not a valid zip archive"),
    ],
)
def test_relay_rejects_an_artifact_that_is_not_a_results_file(
    h: Harness, replacement: dict[str, bytes] | bytes, fragment: str
) -> None:
    run, fork, _, _ = _fork_pr(h, 9)
    [stored] = h.artifacts("axl-eval-relay", run)
    files = replacement if isinstance(replacement, bytes) else {**_unzip(stored.data), **replacement}
    _replace_relay_artifact(h, run, files)
    _, relay = _relay(h, run, fork)
    assert relay.code == 1
    assert h.gh.comments_on(h.repo, 9) == []
    assert "::error title=Fork PR comment not relayed::" in relay.stdout
    assert fragment in relay.stdout.replace("%0A", "\n")
    assert relay.outputs["verdict"] == "error" and fragment.split(" (")[0] in relay.summary.replace("\\", "")


def test_failing_gate_publishes_everything_then_exits_1(h: Harness) -> None:
    run, payload, env, _ = h.pull_request(5)
    result = h.run("pull_request", run, payload, env, inputs={"evals": "", "results": "failing.json"})
    assert result.code == 1, result.log
    assert result.outputs["verdict"] == "fail"
    assert "::error title=Gate failed" in result.stdout
    assert result.summary.strip() and len(h.gh.comments_on(h.repo, 5)) == 1
    assert h.artifacts("axl-eval-report", run)
    assert result.outputs["report-path"] == ".axl-eval/default/report.html"
    assert (h.workspace / result.outputs["report-path"]).is_file()


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
    assert json.loads((h.workspace / result.outputs["results-path"]).read_text())["dataset"]

    broken = h.run("pull_request", run, payload, env, inputs={"evals": "", "command": "echo no results here"})
    assert broken.code == 1
    assert broken.outputs["verdict"] == "error"
    assert "without writing a results file" in broken.summary
