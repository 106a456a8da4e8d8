"""The action's image end to end through ``docker run``, as a GitHub runner runs a Docker action.

The image is the one ``.ci/setup-docker.sh`` builds (``AXL_ACTION_IMAGE``, default
``axl-eval-action:ci``). Each run gets what ``ContainerActionHandler`` gives a container: the
workspace at /github/workspace as the working directory, RUNNER_TEMP at /github/runner_temp,
/github/home, /github/workflow/event.json, /github/file_commands, ``GITHUB_*``/``INPUT_*`` env
and ``ACTIONS_RUNTIME_TOKEN``/``ACTIONS_RESULTS_URL``. ``--network host`` lets the container
reach the loopback fake GitHub (this machine's daemon has no bridge).

Without a daemon or the image these tests skip, unless ``AXL_REQUIRE_DOCKER`` is set (``.ci/run``
sets it), in which case they fail.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.action.test_action_e2e import ActionRun, Harness, _parse_outputs, _unzip
from tests.fakes.github_server import FakeGitHub, FakeRun

ROOT = Path(__file__).resolve().parents[2]
SAMPLE_REPO = ROOT / "tests" / "fixtures" / "sample-repo"
IMAGE = os.environ.get("AXL_ACTION_IMAGE", "axl-eval-action:ci")
DOCKER = "/usr/bin/docker" if Path("/usr/bin/docker").exists() else (shutil.which("docker") or "docker")

pytestmark = pytest.mark.slow


def _image_problem() -> str | None:
    try:
        proc = subprocess.run(
            [DOCKER, "image", "inspect", IMAGE], capture_output=True, text=True, timeout=30, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as err:
        return f"docker is not usable ({err})"
    if proc.returncode != 0:
        return f"image {IMAGE} is not available ({proc.stderr.strip()[:200]})"
    return None


@pytest.fixture(scope="module", autouse=True)
def _require_image() -> None:
    problem = _image_problem()
    if problem is None:
        return
    hint = "build it with: bash .ci/setup-docker.sh"
    if os.environ.get("AXL_REQUIRE_DOCKER"):
        pytest.fail(f"AXL_REQUIRE_DOCKER is set but {problem}; {hint}", pytrace=False)
    pytest.skip(f"{problem}; {hint}")


class ContainerHarness(Harness):
    """The e2e harness, with each run a ``docker run`` of the image instead of a subprocess."""

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
    ) -> ActionRun:
        del runner_temp  # always the runner's mount here
        self.count += 1
        host = self.tmp / f"runner_{self.count}"
        temp, home, workflow, files = (host / d for d in ("temp", "home", "workflow", "file_commands"))
        for d in (temp, home, workflow, files):
            d.mkdir(parents=True)
        (workflow / "event.json").write_text(json.dumps(payload), encoding="utf-8")
        (files / "set_output").touch()
        (files / "step_summary").touch()
        all_inputs = {
            "evals": "examples/quickstart",
            "github-token": token or self.write_token,
            **(inputs or {}),
        }
        container_env = {
            "HOME": "/github/home",
            "GITHUB_ACTIONS": "true",
            "CI": "true",
            "GITHUB_EVENT_NAME": event_name,
            "GITHUB_EVENT_PATH": "/github/workflow/event.json",
            "GITHUB_REPOSITORY": self.repo.full_name,
            "GITHUB_REPOSITORY_ID": str(self.repo.id),
            "GITHUB_RUN_ID": str(run.id),
            "GITHUB_RUN_ATTEMPT": "1",
            "GITHUB_API_URL": self.gh.api_url,
            "GITHUB_SERVER_URL": "https://github.com",
            "GITHUB_WORKFLOW_REF": f"{self.repo.full_name}/{run.workflow_path}@refs/heads/main",
            "GITHUB_WORKSPACE": "/github/workspace",
            "GITHUB_OUTPUT": "/github/file_commands/set_output",
            "GITHUB_STEP_SUMMARY": "/github/file_commands/step_summary",
            "RUNNER_TEMP": "/github/runner_temp",
            "ACTIONS_RUNTIME_TOKEN": self.gh.runtime_token(run),
            "ACTIONS_RESULTS_URL": self.gh.results_url,
            "QUICKSTART_VARIANT": variant,
            **self.extra_env,
            **env,
            **{f"INPUT_{k.upper()}": v for k, v in all_inputs.items()},
        }
        cmd = [DOCKER, "run", "--rm", "--network", "host", "--workdir", "/github/workspace"]
        for key, value in container_env.items():
            cmd += ["-e", f"{key}={value}"]
        mounts = {
            temp: "/github/runner_temp",
            home: "/github/home",
            workflow: "/github/workflow",
            files: "/github/file_commands",
            self.workspace: "/github/workspace",
            **self.extra_mounts,
        }
        for src, dst in mounts.items():
            cmd += ["-v", f"{src}:{dst}"]
        proc = subprocess.run([*cmd, IMAGE], capture_output=True, text=True, timeout=300, check=False)
        return ActionRun(
            proc.returncode,
            proc.stdout,
            proc.stderr,
            _parse_outputs((files / "set_output").read_text(encoding="utf-8")),
            (files / "step_summary").read_text(encoding="utf-8"),
        )

    extra_env: dict[str, str] = {}
    extra_mounts: dict[Path, str] = {}


@pytest.fixture
def h(tmp_path: Path) -> Iterator[ContainerHarness]:
    with FakeGitHub() as gh:
        yield ContainerHarness(gh, tmp_path)


def test_version_smoke() -> None:
    proc = subprocess.run(
        [DOCKER, "run", "--rm", IMAGE, "--version"], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("axl-eval-action 0."), proc.stdout


def test_push_stores_the_baseline_and_pr_compares_with_one_comment(h: ContainerHarness) -> None:
    baseline_run = h.store_baseline()
    [baseline] = h.artifacts("axl-eval-baseline", baseline_run)
    assert len(json.loads(_unzip(baseline.data)["results.json"])["items"]) == 30
    run, payload, env, head = h.pull_request(7)
    result = h.run("pull_request", run, payload, env)
    assert result.outputs["mode"] == "compare", result.log
    assert result.outputs["baseline-run-id"] == str(baseline_run.id)
    [comment] = h.gh.comments_on(h.repo, 7)
    assert f"head-sha {head}" in comment.body
    assert h.artifacts("axl-eval-report", run)
    # The path outputs point into the mounted workspace, so a later host step can open them.
    assert (h.workspace / result.outputs["results-path"]).is_file()
    assert "Runner temp directory unusable" not in result.stdout


def test_a_regression_publishes_everything_then_exits_1(h: ContainerHarness) -> None:
    run, payload, env, _ = h.pull_request(5)
    result = h.run("pull_request", run, payload, env, inputs={"evals": "", "results": "failing.json"})
    assert result.code == 1, result.log
    assert result.outputs["verdict"] == "fail" and "::error title=Gate failed" in result.stdout
    assert len(h.gh.comments_on(h.repo, 5)) == 1 and h.artifacts("axl-eval-report", run)
    assert (h.workspace / result.outputs["report-path"]).is_file()


def test_fork_pr_stores_data_and_the_relay_comments(h: ContainerHarness) -> None:
    h.store_baseline()
    fork = h.gh.add_repo("stranger", "evals", fork=True)
    run, payload, env, head = h.pull_request(9, fork=fork)
    pr = h.run("pull_request", run, payload, env, token=h.gh.add_token(write=False))
    assert pr.code == 0, pr.log
    assert h.gh.comments_on(h.repo, 9) == [] and h.artifacts("axl-eval-relay", run)
    relay_run, relay_payload, relay_env = h.workflow_run(run, fork)
    relay = h.run(
        "workflow_run", relay_run, relay_payload, relay_env, inputs={"mode": "comment", "evals": ""}
    )
    assert relay.code == 0, relay.log
    [comment] = h.gh.comments_on(h.repo, 9)
    assert "Relayed for a fork PR" in comment.body and f"head-sha {head}" in comment.body


def _sample_repo(h: ContainerHarness) -> None:
    shutil.rmtree(h.workspace)
    shutil.copytree(SAMPLE_REPO, h.workspace)
    # pip in the container reaches the package index through the same TLS-inspecting proxy as
    # the host, so it gets the host's CA bundle, as docs/container.md tells users to do.
    ca = Path(os.environ.get("PIP_CERT") or "/etc/ssl/certs/ca-certificates.crt")
    if ca.is_file():
        h.extra_mounts = {ca: "/github/home/extra-ca.crt"}
        h.extra_env = {"PIP_CERT": "/github/home/extra-ca.crt"}


def test_setup_installs_the_repositorys_own_package_before_the_evals(h: ContainerHarness) -> None:
    _sample_repo(h)
    run, payload, env = h.push(h.main[-1])
    result = h.run("push", run, payload, env, inputs={"evals": "evals", "setup": "pip install ./pkg"})
    assert result.code == 0, result.log
    assert "::group::Setup: pip install ./pkg" in result.stdout
    assert result.stdout.index("::group::Setup") < result.stdout.index("::group::Run the evals")
    [baseline] = h.artifacts("axl-eval-baseline", run)
    stored = json.loads(_unzip(baseline.data)["results.json"])
    assert [item["scores"]["category"] for item in stored["items"]] == [1, 1]


def test_a_failing_setup_is_one_error_and_no_eval_runs(h: ContainerHarness) -> None:
    _sample_repo(h)
    run, payload, env = h.push(h.main[-1])
    result = h.run(
        "push", run, payload, env, inputs={"evals": "evals", "setup": "echo $GITHUB_TOKEN-x; exit 3"}
    )
    assert result.code == 1, result.log
    assert (
        "::error title=axl-eval%3A setup failed::The setup command 'echo $GITHUB_TOKEN-x; exit 3' exited 3"
        in result.stdout
    )
    assert "Run the evals" not in result.stdout and not h.artifacts("axl-eval-baseline")
    # The command ran without the GitHub token in its environment (the mask line is the only copy).
    assert "\n-x\n" in result.stdout
    assert result.log.count(h.write_token) == 1
