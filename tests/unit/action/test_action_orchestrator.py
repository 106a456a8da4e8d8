"""run_action with recording fakes: what gets published, in which order, and the exit code."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import zlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from axl_action.action.baseline import age_text, locate_baseline
from axl_action.action.evalstep import EvalRequest, EvalRun
from axl_action.action.orchestrator import ActionOutcome, RunContext, run_action
from axl_action.action.relay import (
    MANIFEST_FILE,
    RESULTS_FILE,
    RelayManifest,
    StaleRelayError,
    read_relay_artifact,
    relay_artifact_files,
    verify_target,
)
from axl_action.action.settings import ActionSettings, read_settings
from axl_action.github.artifact_upload import UploadedArtifact
from axl_action.github.client import GitHubClient
from axl_action.github.errors import ArtifactError, GitHubPermissionError
from axl_action.report import comment_marker
from axl_action.schema import parse_result_text

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
BASE = FIXTURES / "axl-eval-0.16.1" / "math20-baseline.json"
BAD = FIXTURES / "axl-eval-0.16.1" / "math20-candidate.json"  # 2 of 20 items errored: over 5%
GOOD = FIXTURES / "axl-eval-0.16.1" / "tiny3-candidate.json"
NOW = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)


@dataclass
class FakeCommands:
    events: list[tuple[str, Any]] = field(default_factory=list)

    @contextlib.contextmanager
    def group(self, title: str) -> Iterator[None]:
        self.events.append(("group", title))
        yield

    @contextlib.contextmanager
    def stop_commands(self) -> Iterator[None]:
        yield

    def echo(self, message: str) -> None:
        self.events.append(("echo", message))

    def error(self, message: str, *, title: str | None = None) -> None:
        self.events.append(("error", (title, message)))

    def warning(self, message: str, *, title: str | None = None) -> None:
        self.events.append(("warning", (title, message)))

    def notice(self, message: str, *, title: str | None = None) -> None:
        self.events.append(("notice", (title, message)))

    def set_output(self, name: str, value: str) -> None:
        if self.events and self.events[-1][0] == "outputs":
            self.events[-1][1][name] = value
        else:
            self.events.append(("outputs", {name: value}))

    def append_summary(self, markdown: str) -> None:
        self.events.append(("summary", markdown))

    def of(self, kind: str) -> list[Any]:
        return [v for k, v in self.events if k == kind]


@dataclass
class FakeUploader:
    uploads: dict[str, dict[str, bytes]] = field(default_factory=dict)
    strategies: dict[str, int] = field(default_factory=dict)
    fail: bool = False

    def upload(
        self,
        name: str,
        files: Mapping[str, bytes],
        *,
        retention_days: int | None = None,
        overwrite: bool = False,
        strategy: int = zlib.Z_DEFAULT_STRATEGY,
    ) -> UploadedArtifact:
        if self.fail:
            raise ArtifactError("the artifact service answered 503")
        self.uploads[name] = dict(files)
        self.strategies[name] = strategy
        return UploadedArtifact(id=len(self.uploads), name=name, size=1, digest="sha256:0")


@dataclass
class Posted:
    url: str | None
    action: str
    reason: str = "no comment yet"


@dataclass
class FakeCommenter:
    calls: list[dict[str, Any]] = field(default_factory=list)
    forbidden: bool = False

    def upsert(self, **kw: Any) -> Posted:
        self.calls.append(kw)
        if self.forbidden:
            raise GitHubPermissionError("Resource not accessible by integration", status=403)
        return Posted("https://github.test/o/r/pull/7#issuecomment-1", "created")


def _evals_from(path: Path | None, code: int = 0) -> Any:
    def run(request: EvalRequest) -> EvalRun:
        if path is None:
            return EvalRun(1, None, "Error: examples/missing.py does not exist")
        request.output.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(path, request.output)
        return EvalRun(code, request.output)

    return run


def _ctx(event: str = "pull_request", ref: str = "refs/pull/7/merge", **kw: Any) -> RunContext:
    pr = {"pr_number": 7, "pr_head_sha": "a" * 40, "pr_base_sha": "b" * 40} if event == "pull_request" else {}
    return RunContext(
        event_name=event, ref=ref, repository="o/r", default_branch="main", run_id="99", **{**pr, **kw}
    )


def _run(
    tmp_path: Path,
    settings: ActionSettings,
    ctx: RunContext,
    evals: Any,
    *,
    uploader: FakeUploader | None = None,
    commenter: FakeCommenter | None = None,
) -> tuple[ActionOutcome, FakeCommands]:
    cmds = FakeCommands()
    outcome = run_action(
        settings,
        ctx,
        github=None,
        uploader=uploader,
        commands=cmds,
        clock=lambda: NOW,
        run_evals=evals,
        workdir=tmp_path,
        scratch=tmp_path / "scratch",
        commenter=commenter,
    )
    return outcome, cmds


def test_push_to_default_branch_stores_the_baseline(tmp_path: Path) -> None:
    up = FakeUploader()
    outcome, cmds = _run(
        tmp_path,
        read_settings({"INPUT_EVALS": "e/"}),
        _ctx("push", "refs/heads/main"),
        _evals_from(BASE),
        uploader=up,
    )
    assert outcome.mode == "baseline" and outcome.exit_code == 0
    assert up.uploads["axl-eval-baseline"]["results.json"] == BASE.read_bytes()
    assert "axl-eval-report" in up.uploads
    assert b"<html" in up.uploads["axl-eval-report"]["report.html"].lower()
    # Packed already: zipped Huffman-only; everything else as upload-artifact zips.
    assert up.strategies["axl-eval-report"] == zlib.Z_HUFFMAN_ONLY
    assert {s for n, s in up.strategies.items() if n != "axl-eval-report"} <= {zlib.Z_DEFAULT_STRATEGY}
    outputs = cmds.of("outputs")[0]
    assert outputs["verdict"] == "pass" and outputs["mode"] == "baseline"
    assert outputs["results-path"].endswith("results.json") and outputs["report-path"].endswith("report.html")
    assert len(cmds.of("summary")) == 1


def test_pr_without_token_still_reports_and_self_gates(tmp_path: Path) -> None:
    cm = FakeCommenter()
    outcome, cmds = _run(
        tmp_path, read_settings({"INPUT_EVALS": "e/"}), _ctx(), _evals_from(GOOD), commenter=cm
    )
    assert outcome.mode == "compare" and outcome.exit_code == 0
    summary = cmds.of("summary")[0]
    assert "no github-token was given" in summary
    assert cm.calls and comment_marker("default") in cm.calls[0]["body"]
    assert cm.calls[0]["comment_mode"] == "always" and cm.calls[0]["head_sha"] == "a" * 40
    assert cmds.of("outputs")[0]["comment-url"].startswith("https://github.test/")
    assert cmds.of("outputs")[0]["baseline-sha"] == ""
    assert not outcome.problems and "PR comment created: no comment yet." in summary


def test_fork_pr_403_stores_the_results_not_the_comment(tmp_path: Path) -> None:
    up, cm = FakeUploader(), FakeCommenter(forbidden=True)
    outcome, cmds = _run(
        tmp_path, read_settings({"INPUT_EVALS": "e/"}), _ctx(), _evals_from(GOOD), uploader=up, commenter=cm
    )
    assert outcome.exit_code == 0 and not outcome.problems
    assert "axl-eval-comment" not in up.uploads
    files = up.uploads["axl-eval-relay"]
    assert sorted(files) == [MANIFEST_FILE, RESULTS_FILE]
    assert files[RESULTS_FILE] == GOOD.read_bytes(), "the results exactly as the runner wrote them"
    relayed = read_relay_artifact(files, save_to=tmp_path / "relayed.json")
    assert relayed.manifest == RelayManifest(
        suite="default", repository="o/r", pr_number=7, head_sha="a" * 40
    )
    assert relayed.candidate.path == str(tmp_path / "relayed.json")
    assert not any(b"axl-eval" in v and b"###" in v for v in files.values()), "no rendered Markdown"
    assert any(t == "PR results stored for the relay" for t, _ in cmds.of("warning"))
    assert "axl-eval-relay" in cmds.of("summary")[0]


def test_comment_mode_outside_workflow_run_is_an_error(tmp_path: Path) -> None:
    outcome, cmds = _run(
        tmp_path, read_settings({"INPUT_MODE": "comment"}), _ctx("push", "refs/heads/main"), _evals_from(None)
    )
    assert outcome.mode == "comment" and outcome.exit_code == 1
    assert cmds.of("error")[0][0] == "Invalid input mode"
    assert cmds.of("outputs")[0]["verdict"] == "error"


def test_failing_gate_publishes_everything_then_exits_1(tmp_path: Path) -> None:
    up, cm = FakeUploader(), FakeCommenter()
    settings = read_settings({"INPUT_EVALS": "e/"})
    outcome, cmds = _run(tmp_path, settings, _ctx(), _evals_from(BAD), uploader=up, commenter=cm)
    assert outcome.exit_code == 1 and outcome.gate_failed
    assert cm.calls and "axl-eval-report" in up.uploads
    kinds = [k for k, _ in cmds.events]
    assert "summary" in kinds and kinds[-1] == "outputs"
    assert cmds.of("outputs")[0]["verdict"] == "fail"
    assert any(title and title.startswith("Gate failed") for title, _ in cmds.of("error"))


def test_a_failing_publish_step_never_hides_the_verdict(tmp_path: Path) -> None:
    up = FakeUploader(fail=True)
    outcome, cmds = _run(
        tmp_path,
        read_settings({"INPUT_EVALS": "e/"}),
        _ctx("push", "refs/heads/main"),
        _evals_from(BASE),
        uploader=up,
    )
    assert outcome.exit_code == 0
    assert [p.split(":")[0] for p in outcome.problems] == ["report artifact", "baseline artifact"]
    assert "job summary" in outcome.published and "step outputs" in outcome.published
    assert sum(1 for t, _ in cmds.of("warning") if t == "axl-eval: publishing failed") == 2


def test_no_results_is_an_error_with_a_summary(tmp_path: Path) -> None:
    outcome, cmds = _run(tmp_path, read_settings({"INPUT_EVALS": "e/"}), _ctx(), _evals_from(None))
    assert outcome.exit_code == 1
    assert cmds.of("outputs")[0]["verdict"] == "error"
    assert "does not exist" in cmds.of("summary")[0]
    assert cmds.of("error")[0][0] == "axl-eval: no results"


def test_shard_leg_uploads_its_slice_only(tmp_path: Path) -> None:
    up = FakeUploader()
    settings = read_settings({"INPUT_EVALS": "e/", "INPUT_SHARD": "2/3", "INPUT_SUITE": "big"})
    outcome, cmds = _run(tmp_path, settings, _ctx(), _evals_from(GOOD), uploader=up)
    assert outcome.mode == "shard" and outcome.exit_code == 0
    assert list(up.uploads) == ["axl-eval-shard-big-2-of-3"]
    assert list(up.uploads["axl-eval-shard-big-2-of-3"]) == ["shard-2-of-3.json"]
    assert "merge job" in cmds.of("summary")[0]


HEAD = "c" * 40


def _relay_files(manifest: dict[str, Any] | None = None, results: bytes | None = None) -> dict[str, bytes]:
    files = relay_artifact_files(
        GOOD.read_bytes(), RelayManifest(suite="default", repository="o/r", pr_number=3, head_sha=HEAD)
    )
    if manifest is not None:
        data = json.loads(files[MANIFEST_FILE])
        data.update(manifest)
        files[MANIFEST_FILE] = json.dumps(data).encode()
    if results is not None:
        files[RESULTS_FILE] = results
    return files


@pytest.mark.parametrize(
    ("manifest", "results", "why"),
    [
        ({"format": "axl-eval-relay/9"}, None, r"manifest\.json at format"),
        ({"pr_number": -1}, None, "pr_number"),
        ({"pr_number": True}, None, "pr_number"),
        ({"pr_number": "3"}, None, "pr_number"),
        ({"head_sha": "not-a-sha"}, None, "head_sha"),
        ({"head_sha": "C" * 40}, None, "head_sha"),
        ({"body": "## posted verbatim?"}, None, "body"),
        (None, b'{"not": "a result"}', r"results\.json is not an axl-eval result"),
        (None, b"[" * 100_000, "not a JSON document|not valid JSON"),
        (None, b"\xff\xfe", "not UTF-8"),
    ],
)
def test_relay_artifacts_are_checked_against_the_schemas(
    tmp_path: Path, manifest: dict[str, Any] | None, results: bytes | None, why: str
) -> None:
    with pytest.raises(ArtifactError, match=why):
        read_relay_artifact(_relay_files(manifest, results), save_to=tmp_path / "r.json")
    assert not (tmp_path / "r.json").exists(), "nothing rejected is kept"
    ok = read_relay_artifact(_relay_files(), save_to=tmp_path / "r.json")
    assert (ok.manifest.pr_number, ok.manifest.head_sha) == (3, HEAD)
    assert ok.candidate.results == parse_result_text(GOOD.read_text()).results


def test_relay_artifacts_hold_exactly_the_two_files(tmp_path: Path) -> None:
    files = _relay_files()
    with pytest.raises(ArtifactError, match="unexpected files"):
        read_relay_artifact({**files, "comment.md": b"# hi"}, save_to=tmp_path / "r.json")
    with pytest.raises(ArtifactError, match=r"holds no results\.json"):
        read_relay_artifact({MANIFEST_FILE: files[MANIFEST_FILE]}, save_to=tmp_path / "r.json")


@dataclass
class PullsOnly:
    """Answers GET /pulls/{n} like the API; records what was asked."""

    pulls: dict[int, dict[str, Any]]
    asked: list[str] = field(default_factory=list)

    def get_json(self, path: str, params: Any = None, **kw: Any) -> Any:
        self.asked.append(path)
        number = int(path.rsplit("/", 1)[1])
        if number not in self.pulls:
            raise GitHubPermissionError("Not Found", status=404)
        return self.pulls[number]


@pytest.mark.parametrize(
    ("change", "trigger", "error", "why"),
    [
        ({"repository": "evil/r"}, HEAD, ArtifactError, "names repository 'evil/r'"),
        ({"suite": "other"}, HEAD, ArtifactError, "for suite 'other'"),
        ({}, None, ArtifactError, "names no head commit"),
        (
            {"head_sha": "d" * 40},
            HEAD,
            ArtifactError,
            "claims head commit ddddddd, but the triggering run built ccccccc",
        ),
        ({"pr_number": 4}, HEAD, ArtifactError, "PR #4, which does not exist"),
        ({"pr_number": 5}, HEAD, StaleRelayError, "PR #5 is now at eeeeeee"),
    ],
)
def test_relay_manifest_is_checked_against_the_event_and_the_pr(
    change: dict[str, Any], trigger: str | None, error: type[Exception], why: str
) -> None:
    pulls = {
        3: {"head": {"sha": HEAD}, "base": {"sha": "b" * 40}},
        5: {"head": {"sha": "e" * 40}, "base": {"sha": "b" * 40}},
    }
    base = {"suite": "default", "repository": "o/r", "pr_number": 3, "head_sha": HEAD}
    github: Any = PullsOnly(pulls)
    with pytest.raises(error, match=why):
        verify_target(
            github,
            RelayManifest(**{**base, **change}),
            repository="o/r",
            suite="default",
            triggering_head_sha=trigger,
        )
    ok = verify_target(
        github, RelayManifest(**base), repository="O/R", suite="default", triggering_head_sha=HEAD.upper()
    )
    assert (ok.pr_number, ok.head_sha, ok.base_sha) == (3, HEAD, "b" * 40)


def test_shard_leg_defers_gates_but_fails_when_its_slice_cannot_be_uploaded(tmp_path: Path) -> None:
    settings = read_settings({"INPUT_EVALS": "e/", "INPUT_SHARD": "1/2"})
    outcome, cmds = _run(tmp_path, settings, _ctx(), _evals_from(BAD, code=1), uploader=FakeUploader())
    assert outcome.exit_code == 0
    assert cmds.of("notice")[0][0] == "Shard gates deferred to the merge job"
    outcome, _ = _run(tmp_path, settings, _ctx(), _evals_from(BAD), uploader=None)
    assert outcome.exit_code == 1 and outcome.problems[0].startswith("shard artifact")


def test_merge_group_compares_without_a_comment(tmp_path: Path) -> None:
    cm = FakeCommenter()
    ctx = _ctx("merge_group", "refs/heads/gh-readonly-queue/main/pr-7-abc")
    outcome, cmds = _run(tmp_path, read_settings({"INPUT_EVALS": "e/"}), ctx, _evals_from(GOOD), commenter=cm)
    assert outcome.mode == "compare" and outcome.exit_code == 0
    assert cm.calls == [] and cmds.of("summary")


def test_eval_code_never_sees_the_tokens(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from axl_action.action import entrypoint

    seen: dict[str, str] = {}

    def fake_run(env: Mapping[str, str]) -> int:
        seen.update(os.environ)
        assert env["INPUT_GITHUB-TOKEN"] == "ghs_secret" and env["ACTIONS_RUNTIME_TOKEN"] == "jwt"
        return 0

    monkeypatch.setenv("INPUT_GITHUB-TOKEN", "ghs_secret")
    monkeypatch.setenv("ACTIONS_RUNTIME_TOKEN", "jwt")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-kept")
    monkeypatch.setattr(entrypoint, "run", fake_run)
    # With an argv, as a programmatic caller: the tokens leave os.environ, and no re-exec
    # (tests/e2e/action/test_action_tokens.py runs the process entry).
    assert entrypoint.main([]) == 0
    assert "INPUT_GITHUB-TOKEN" not in seen and "ACTIONS_RUNTIME_TOKEN" not in seen
    assert seen["OPENAI_API_KEY"] == "sk-kept"


def test_the_injected_clock_dates_the_baseline(tmp_path: Path) -> None:
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
    from tests.fakes.github_server import FakeGitHub, make_zip

    with FakeGitHub() as gh:
        repo = gh.add_repo("o", "r")
        [tip] = gh.add_chain(1, start=NOW - timedelta(days=30))
        run = gh.add_run(repo, head_sha=tip, event="push", created_at=NOW - timedelta(days=30))
        gh.add_artifact(
            run,
            "axl-eval-baseline",
            make_zip({"results.json": GOOD.read_bytes()}),
            created_at=NOW - timedelta(days=30),
        )
        client = GitHubClient(gh.api_url, gh.add_token(), sleep=lambda s: None)
        # Ages are measured against the clock passed in (weeks behind the wall clock here).
        for days in (3, 10):
            now = NOW - timedelta(days=30 - days)
            lookup = locate_baseline(
                client, "o/r", artifact_name="axl-eval-baseline", branch="main", pull=None, now=now
            )
            assert lookup.choice is not None and lookup.results is not None, lookup.reason
            assert lookup.choice.age_seconds == days * 86400
            assert age_text(lookup.choice.age_seconds) == f"{days} days"


def test_run_mode_reports_but_never_stores_a_baseline(tmp_path: Path) -> None:
    up = FakeUploader()
    outcome, _ = _run(
        tmp_path,
        read_settings({"INPUT_EVALS": "e/"}),
        _ctx("push", "refs/heads/feature"),
        _evals_from(GOOD),
        uploader=up,
    )
    assert outcome.mode == "run" and outcome.exit_code == 0
    assert list(up.uploads) == ["axl-eval-report"]
    assert outcome.published == ["results file", "report artifact", "job summary", "step outputs"]


def test_path_outputs_come_from_the_output_files(tmp_path: Path) -> None:
    from axl_action.action.workspace_files import WorkspaceFiles

    workspace = tmp_path / "ws"
    workspace.mkdir()
    cmds = FakeCommands()
    run_action(
        read_settings({"INPUT_EVALS": "e/", "INPUT_SUITE": "nightly"}),
        _ctx("push", "refs/heads/main"),
        github=None,
        uploader=FakeUploader(),
        commands=cmds,
        clock=lambda: NOW,
        run_evals=_evals_from(BASE),
        workdir=tmp_path,
        scratch=tmp_path / "scratch",
        files=WorkspaceFiles(workspace, "nightly"),
    )
    outputs = cmds.of("outputs")[0]
    assert outputs["results-path"] == ".axl-eval/nightly/results.json"
    assert outputs["report-path"] == ".axl-eval/nightly/report.html"
    assert (workspace / outputs["results-path"]).read_bytes() == BASE.read_bytes()
    assert "<html" in (workspace / outputs["report-path"]).read_text().lower()


def test_log_lines_go_through_the_commands_port(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    outcome, cmds = _run(
        tmp_path,
        read_settings({"INPUT_EVALS": "e/"}),
        _ctx("push", "refs/heads/main"),
        _evals_from(BASE),
        uploader=FakeUploader(),
    )
    assert outcome.exit_code == 0
    assert cmds.of("echo") == [
        "axl-eval-action: mode baseline: a push to main stores a new baseline.",
        "Stored the baseline as artifact 'axl-eval-baseline' (id 2) with a history of 1 baseline runs.",
    ]
    assert capsys.readouterr().out == "", "nothing reaches stdout past the port"
