"""action.yml, the Dockerfile and the release workflow stay in step with the code."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from axl_action.action.modes import resolve_mode
from axl_action.action.outputs import OUTPUT_NAMES, ActionOutputs
from axl_action.action.settings import INPUT_NAMES, ActionSettings, read_settings

ROOT = Path(__file__).resolve().parents[3]


def _action() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))
    return data


def test_every_input_is_read_by_the_settings_model_and_vice_versa() -> None:
    declared = list(_action()["inputs"])
    assert declared == list(INPUT_NAMES)


def test_action_yml_defaults_parse_to_the_model_defaults() -> None:
    inputs = _action()["inputs"]
    env = {f"INPUT_{name.upper()}": str(spec.get("default", "")) for name, spec in inputs.items()}
    assert inputs["github-token"]["default"] == "${{ github.token }}"
    env["INPUT_GITHUB-TOKEN"] = ""
    env["INPUT_EVALS"] = "evals/"
    assert read_settings(env) == ActionSettings(evals=("evals/",))
    for name, spec in inputs.items():
        assert spec.get("description", "").strip(), f"input {name} has no description"
        assert spec.get("required") is False, f"input {name}: required: true is not enforced by the runner"


def test_every_output_is_written_and_declared() -> None:
    declared = list(_action()["outputs"])
    assert declared == list(OUTPUT_NAMES)
    assert list(ActionOutputs().as_outputs()) == declared
    for name, spec in _action()["outputs"].items():
        assert spec.get("description", "").strip(), f"output {name} has no description"


def test_output_values_are_runner_friendly() -> None:
    out = ActionOutputs(verdict="pass", cost=0.1234567, cost_delta=-0.0, cost_certified=True, regressions=2)
    values = out.as_outputs()
    assert values["cost"] == "0.123457"
    assert values["cost-delta"] == "0"
    assert values["cost-certified"] == "true"
    assert values["regressions"] == "2"
    assert values["comment-url"] == "" and values["item-error-rate"] == ""
    assert ActionOutputs(cost=float("nan")).as_outputs()["cost"] == ""


def test_docker_action_metadata() -> None:
    action = _action()
    assert action["runs"] == {"using": "docker", "image": "Dockerfile"}
    assert action["branding"]["icon"] and action["branding"]["color"]
    # release.yml rewrites exactly this line to the published image.
    assert "\n  image: Dockerfile\n" in (ROOT / "action.yml").read_text(encoding="utf-8")
    release = (ROOT / ".github/workflows/release.yml").read_text(encoding="utf-8")
    assert "s|^  image: Dockerfile$|  image: docker://$IMAGE_REF|" in release


def test_dockerfile_installs_like_the_readme_quick_start() -> None:
    dockerfile = (ROOT / "Dockerfile").read_text(encoding="utf-8")
    # The install step ends in README's Quick start command, constrained by the lock file.
    assert re.search(
        r"PIP_CONSTRAINT=requirements/action\.lock pip install \.$", dockerfile, flags=re.MULTILINE
    )
    assert re.search(
        r"^ARG BASE_IMAGE=python:3\.11\.\d+-slim-bookworm@sha256:[0-9a-f]{64}$",
        dockerfile,
        flags=re.MULTILINE,
    )
    assert re.search(r"^FROM \$\{BASE_IMAGE\}$", dockerfile, flags=re.MULTILINE)
    assert 'ENTRYPOINT ["/opt/venv/bin/axl-eval-action"]' in dockerfile
    assert not re.search(r"^USER ", dockerfile, flags=re.MULTILINE)
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    quick = readme.split("<!-- quickstart:begin -->", 1)[1].split("<!-- quickstart:end -->", 1)[0]
    commands = [
        line.strip()
        for line in quick.splitlines()
        if line.strip() and not line.lstrip().startswith(("#", "```", "<!--")) and "pip" in line
    ]
    assert commands, "README's Quick start has no install command"
    # The first command may chain more steps with &&; its install step must be the Dockerfile's.
    assert commands[0].split("&&")[0].strip() == "pip install ."


def test_auto_mode_follows_the_event() -> None:
    def mode(event: str, ref: str = "refs/heads/main", **kw: Any) -> str:
        return resolve_mode("auto", event_name=event, ref=ref, baseline_branch="main", **kw).mode

    assert mode("push") == "baseline"
    assert mode("push", "refs/heads/feature") == "run"
    assert mode("push", "refs/tags/v1") == "run"
    assert mode("pull_request", "refs/pull/7/merge") == "compare"
    assert mode("pull_request_target") == "compare"
    assert mode("merge_group", "refs/heads/gh-readonly-queue/main/pr-1") == "compare"
    assert mode("workflow_run") == "comment"
    assert mode("schedule") == "run"
    assert mode("pull_request", sharded=True) == "shard"
    assert (
        resolve_mode("comment", event_name="push", ref="", baseline_branch=None, sharded=True).mode
        == "comment"
    )
    assert (
        resolve_mode("compare", event_name="push", ref="refs/heads/main", baseline_branch="main").mode
        == "compare"
    )
    assert resolve_mode("auto", event_name="push", ref="refs/heads/main", baseline_branch=None).mode == "run"


def test_the_docs_show_the_documented_workflows_verbatim() -> None:
    # The README holds the two jobs everyone needs; the fork relay and the sharded workflow
    # live on their own pages (docs/fork-prs.md, docs/sharding.md).
    pages = {
        p.name: p.read_text(encoding="utf-8") for p in [ROOT / "README.md", *(ROOT / "docs").glob("*.md")]
    }
    where = {
        "axl-eval-baseline.yml": "README.md",
        "axl-eval-pr.yml": "README.md",
        "axl-eval-comment.yml": "fork-prs.md",
        "axl-eval-sharded.yml": "sharding.md",
    }
    assert sorted(p.name for p in (ROOT / "docs" / "workflows").glob("*.yml")) == sorted(where)
    for name, page in where.items():
        text = (ROOT / "docs" / "workflows" / name).read_text(encoding="utf-8").rstrip()
        assert text in pages[page], f"{page}'s copy of {name} is stale"


def test_the_fork_relay_workflow_is_least_privilege_and_runs_no_pr_code() -> None:
    workflow = yaml.safe_load(
        (ROOT / "docs" / "workflows" / "axl-eval-comment.yml").read_text(encoding="utf-8")
    )
    # PyYAML reads the bare key `on` as True.
    trigger = workflow.get("on", workflow.get(True))
    assert trigger == {"workflow_run": {"workflows": ["Evals (pull request)"], "types": ["completed"]}}
    assert workflow["permissions"] == {}
    [job] = workflow["jobs"].values()
    assert job["permissions"] == {"actions": "read", "pull-requests": "write"}
    assert "github.event.workflow_run.event == 'pull_request'" in job["if"]
    [step] = job["steps"]
    assert step["with"]["mode"] == "comment"
    assert "checkout" not in step["uses"] and "run" not in step
    pr = yaml.safe_load((ROOT / "docs" / "workflows" / "axl-eval-pr.yml").read_text(encoding="utf-8"))
    assert pr["name"] == "Evals (pull request)"
