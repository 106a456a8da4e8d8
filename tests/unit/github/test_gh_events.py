"""Event payload fixtures match GitHub's webhook schemas, and load_context reads them right."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from openapi_schema_validator import OAS30Validator
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT4

from axl_action.errors import InputFileError, UsageError
from axl_action.github.event import GitHubContext, load_context
from tests.fakes import github_objects

EVENTS = Path(__file__).resolve().parents[2] / "fixtures" / "events"
SCHEMAS = {
    "push-main.json": "push",
    "pull_request-opened.json": "pull-request-opened",
    "pull_request-synchronize.json": "pull-request-synchronize",
    "pull_request-fork.json": "pull-request-synchronize",
    "workflow_run-completed.json": "workflow-run-completed",
}


def _validator(webhook: str) -> OAS30Validator:
    spec = github_objects.spec()
    schema = spec["x-webhooks"][webhook]["post"]["requestBody"]["content"]["application/json"]["schema"]
    # The payload schema is a "#/components/..." $ref: resolve it inside a document that
    # carries the components (OpenAPI 3.0 schemas follow draft 4 $ref semantics).
    root = {**schema, "components": spec["components"]}
    registry: Registry[Any] = Registry().with_resource(
        "", Resource.from_contents(root, default_specification=DRAFT4)
    )
    return OAS30Validator(root, registry=registry)


@pytest.mark.parametrize(("fixture", "webhook"), sorted(SCHEMAS.items()))
def test_fixture_matches_the_webhook_schema(fixture: str, webhook: str) -> None:
    payload = json.loads((EVENTS / fixture).read_text(encoding="utf-8"))
    errors = sorted(_validator(webhook).iter_errors(payload), key=str)
    assert errors == [], "\n".join(f"{list(e.absolute_path)}: {e.message}" for e in errors[:5])


def test_schema_validation_can_fail() -> None:
    errors = list(_validator("pull-request-synchronize").iter_errors({"action": "synchronize", "number": 1}))
    assert any("'before' is a required property" in e.message for e in errors)


def _env(fixture: str | None, event: str, **extra: str) -> dict[str, str]:
    env = {
        "GITHUB_EVENT_NAME": event,
        "GITHUB_REPOSITORY": "octo/evals",
        "GITHUB_SHA": "f" * 40,
        "GITHUB_REF": "refs/heads/main",
        "GITHUB_RUN_ID": "11800000999",
        "GITHUB_RUN_ATTEMPT": "2",
        "GITHUB_SERVER_URL": "https://github.com",
        "GITHUB_API_URL": "https://api.github.com",
        "GITHUB_WORKFLOW_REF": "octo/evals/.github/workflows/evals.yml@refs/heads/main",
    }
    if fixture:
        env["GITHUB_EVENT_PATH"] = str(EVENTS / fixture)
    env.update(extra)
    return env


def test_push_to_main() -> None:
    ctx = load_context(_env("push-main.json", "push"))
    assert ctx.default_branch == "main" and ctx.is_default_branch_push
    assert ctx.pull_request is None and ctx.head_sha == "f" * 40
    assert ctx.run_url == "https://github.com/octo/evals/actions/runs/11800000999"
    assert (ctx.run_attempt, ctx.workflow_file, ctx.repository_id) == (2, "evals.yml", 4242)
    assert ctx.artifacts_supported


def test_push_to_other_branch_is_not_a_baseline_push() -> None:
    assert not load_context(
        _env("push-main.json", "push", GITHUB_REF="refs/heads/dev")
    ).is_default_branch_push


def test_pull_request_same_repo() -> None:
    ctx = load_context(_env("pull_request-synchronize.json", "pull_request", GITHUB_REF="refs/pull/7/merge"))
    pr = ctx.pull_request
    assert pr is not None and not pr.is_fork
    assert (pr.number, pr.base_ref, pr.head_ref) == (7, "main", "tune-prompt")
    assert pr.head_sha == "ec26c3e57ca3a959ca5aad62de7213c562f8c821" == ctx.head_sha
    assert pr.base_sha == "6dcb09b5b57875f334f61aebed695e2e4193db5e"
    assert ctx.sha == "f" * 40  # the merge commit stays available but is not the head


def test_pull_request_opened() -> None:
    ctx = load_context(_env("pull_request-opened.json", "pull_request"))
    assert ctx.pull_request is not None and ctx.pull_request.number == 7


def test_fork_pull_request() -> None:
    ctx = load_context(_env("pull_request-fork.json", "pull_request"))
    assert ctx.pull_request is not None and ctx.pull_request.is_fork
    assert ctx.pull_request.head_repo_full_name == "forker/evals"


def test_workflow_run_relay() -> None:
    ctx = load_context(_env("workflow_run-completed.json", "workflow_run"))
    run = ctx.workflow_run
    assert run is not None
    assert (run.id, run.event, run.conclusion) == (11800000123, "pull_request", "success")
    assert run.pull_request_numbers == [] and run.is_fork
    assert ctx.head_sha == run.head_sha == "c5b97d5ae6c19d5c5df71a34c7fbeeda2479ccbc"


def test_ghes_has_no_artifacts() -> None:
    ctx: GitHubContext = load_context(
        _env("push-main.json", "push", GITHUB_SERVER_URL="https://ghe.corp.example")
    )
    assert not ctx.artifacts_supported


def test_missing_env_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="GITHUB_EVENT_NAME, GITHUB_REPOSITORY"):
        load_context({"GITHUB_SHA": "x", "GITHUB_RUN_ID": "1"})


def test_pull_request_without_event_file() -> None:
    with pytest.raises(InputFileError, match="GITHUB_EVENT_PATH is not set"):
        load_context(_env(None, "pull_request"))
    with pytest.raises(InputFileError, match="does not exist"):
        load_context(_env("nope.json", "pull_request"))


def test_push_without_event_file_is_fine() -> None:
    ctx = load_context(_env(None, "push"))
    assert ctx.default_branch is None and not ctx.is_default_branch_push


def test_malformed_event_files(tmp_path: Path) -> None:
    bad = tmp_path / "event.json"
    bad.write_text("{not json", encoding="utf-8")
    with pytest.raises(InputFileError, match="not valid JSON"):
        load_context(_env(None, "pull_request", GITHUB_EVENT_PATH=str(bad)))
    bad.write_text("[]", encoding="utf-8")
    with pytest.raises(InputFileError, match="JSON object"):
        load_context(_env(None, "push", GITHUB_EVENT_PATH=str(bad)))
    # A push payload handed to a pull_request run: say so, do not crash.
    with pytest.raises(InputFileError, match="no pull_request object"):
        load_context(_env("push-main.json", "pull_request"))
    bad.write_text(json.dumps({"pull_request": {"number": "7", "head": {}, "base": {}}}), encoding="utf-8")
    with pytest.raises(InputFileError, match=r"pull_request\.number"):
        load_context(_env(None, "pull_request", GITHUB_EVENT_PATH=str(bad)))


def test_bad_run_id() -> None:
    with pytest.raises(UsageError, match="GITHUB_RUN_ID"):
        load_context(_env("push-main.json", "push", GITHUB_RUN_ID="abc"))


def test_merge_group(tmp_path: Path) -> None:
    event = tmp_path / "event.json"
    group = {
        "head_sha": "1" * 40,
        "head_ref": "refs/heads/gh-readonly-queue/main/pr-7-" + "2" * 40,
        "base_sha": "2" * 40,
        "base_ref": "refs/heads/main",
    }
    event.write_text(json.dumps({"action": "checks_requested", "merge_group": group}), encoding="utf-8")
    ctx = load_context(_env(None, "merge_group", GITHUB_EVENT_PATH=str(event)))
    assert ctx.merge_group is not None and ctx.pull_request is None
    assert (ctx.head_sha, ctx.merge_group.base_sha, ctx.merge_group.base_branch) == (
        "1" * 40,
        "2" * 40,
        "main",
    )
    event.write_text(json.dumps({"merge_group": {"head_sha": "1" * 40}}), encoding="utf-8")
    with pytest.raises(InputFileError, match=r"merge_group\.head_ref"):
        load_context(_env(None, "merge_group", GITHUB_EVENT_PATH=str(event)))
