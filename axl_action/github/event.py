"""What the run is about: the ``GITHUB_*`` environment plus the event payload file.

:func:`load_context` is the only place that reads them. The payload matters because the
environment alone is misleading on pull requests: ``GITHUB_SHA`` is the test merge commit
and ``GITHUB_REF`` is ``refs/pull/<n>/merge``; the PR's head and base commits, and whether
it comes from a fork, are only in ``GITHUB_EVENT_PATH``. For ``pull_request_target`` and
``workflow_run`` the environment describes the default branch, not the PR at all.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from axl_action.errors import InputFileError, UsageError
from axl_action.github.artifact_upload import artifacts_supported

PULL_REQUEST_EVENTS = frozenset({"pull_request", "pull_request_target"})
REQUIRED_ENV = ("GITHUB_EVENT_NAME", "GITHUB_REPOSITORY", "GITHUB_SHA", "GITHUB_RUN_ID")


class PullRequestContext(BaseModel):
    """The pull request a ``pull_request``/``pull_request_target`` run is for."""

    model_config = ConfigDict(frozen=True)

    number: int
    """PR number."""
    head_sha: str
    """The PR's head commit (what was evaluated; not ``GITHUB_SHA``, the merge commit)."""
    head_ref: str
    """Head branch name."""
    base_sha: str
    """Base branch tip when the event fired (not the merge base)."""
    base_ref: str
    """Base branch name (bare, e.g. ``main``)."""
    head_repo_full_name: str | None
    """``owner/name`` of the head repository; None if the fork was deleted."""
    is_fork: bool
    """True when the head lives in another repository: the token is read-only, no secrets."""
    html_url: str | None = None
    """Link to the PR."""
    labels: tuple[str, ...] = ()
    """The PR's label names when the event fired (``axl-eval:full-run`` re-runs every eval)."""


class WorkflowRunTrigger(BaseModel):
    """The run that triggered a ``workflow_run`` relay."""

    model_config = ConfigDict(frozen=True)

    id: int
    """The triggering run's id (download its artifacts)."""
    event: str
    """Its event (``pull_request`` for the fork relay)."""
    head_sha: str
    """The commit it built."""
    head_branch: str | None
    """Its branch."""
    conclusion: str | None
    """``success``, ``failure``, ..."""
    pull_request_numbers: list[int]
    """PRs GitHub associated with it; **empty for fork PRs**, so read the relayed metadata."""
    head_repo_full_name: str | None
    """Repository the built commit came from."""
    is_fork: bool
    """True when that repository is not this one."""
    workflow_path: str | None = None
    """Workflow file of the triggering run."""


class MergeGroupContext(BaseModel):
    """The merge-queue group a ``merge_group`` run tests (no PR number: gate only)."""

    model_config = ConfigDict(frozen=True)

    head_sha: str
    """The group's merge commit (what was evaluated)."""
    head_ref: str
    """Full ref of the group, e.g. ``refs/heads/gh-readonly-queue/main/pr-7-...``."""
    base_sha: str
    """The commit the group is built on: the natural baseline commit."""
    base_ref: str
    """Full ref of the target branch, e.g. ``refs/heads/main`` (not a bare name)."""

    @property
    def base_branch(self) -> str:
        """``base_ref`` without ``refs/heads/``."""
        return self.base_ref.removeprefix("refs/heads/")


class GitHubContext(BaseModel):
    """Everything the orchestrator needs to know about the run."""

    model_config = ConfigDict(frozen=True)

    event_name: str
    """``GITHUB_EVENT_NAME``."""
    repository: str
    """``owner/name``."""
    owner: str
    """Repository owner."""
    repo: str
    """Repository name."""
    repository_id: int | None
    """Numeric repository id (payload or ``GITHUB_REPOSITORY_ID``)."""
    default_branch: str | None
    """Default branch from the payload; None when the payload lacks a repository."""
    sha: str
    """``GITHUB_SHA`` (for PRs: the merge commit)."""
    ref: str
    """``GITHUB_REF``, e.g. ``refs/heads/main`` or ``refs/pull/7/merge``."""
    ref_name: str | None
    """``GITHUB_REF_NAME``."""
    run_id: int
    """``GITHUB_RUN_ID``."""
    run_attempt: int
    """``GITHUB_RUN_ATTEMPT`` (1 unless re-run)."""
    run_url: str
    """Link to this run."""
    server_url: str
    """``GITHUB_SERVER_URL``."""
    api_url: str
    """``GITHUB_API_URL``."""
    workflow_ref: str | None
    """``GITHUB_WORKFLOW_REF``: ``owner/repo/.github/workflows/x.yml@refs/heads/main``."""
    actor: str | None
    """``GITHUB_ACTOR``."""
    pull_request: PullRequestContext | None = None
    """Set for ``pull_request`` and ``pull_request_target``."""
    workflow_run: WorkflowRunTrigger | None = None
    """Set for ``workflow_run``."""
    merge_group: MergeGroupContext | None = None
    """Set for ``merge_group``."""

    @property
    def workflow_file(self) -> str | None:
        """The workflow file name (``evals.yml``), usable as the REST ``workflow_id``."""
        if not self.workflow_ref:
            return None
        path = self.workflow_ref.split("@", 1)[0]
        return path.rsplit("/", 1)[-1] or None

    @property
    def is_pull_request(self) -> bool:
        return self.pull_request is not None

    @property
    def head_sha(self) -> str:
        """The commit that was evaluated: the PR head for PRs, the triggering head for relays."""
        if self.pull_request is not None:
            return self.pull_request.head_sha
        if self.workflow_run is not None:
            return self.workflow_run.head_sha
        if self.merge_group is not None:
            return self.merge_group.head_sha
        return self.sha

    @property
    def is_default_branch_push(self) -> bool:
        """A ``push`` to the default branch: the run that should store the baseline."""
        return (
            self.event_name == "push"
            and self.default_branch is not None
            and self.ref == f"refs/heads/{self.default_branch}"
        )

    @property
    def artifacts_supported(self) -> bool:
        """False on GHES, which has no artifacts v4."""
        return artifacts_supported(self.server_url)


def load_context(environ: Mapping[str, str]) -> GitHubContext:
    """Build the context from the environment and the event file it points to.

    Raises :class:`UsageError` when the run is not inside GitHub Actions (required variables
    missing) and :class:`InputFileError` when the event file is missing or malformed for an
    event that needs it.
    """
    missing = [name for name in REQUIRED_ENV if not environ.get(name)]
    if missing:
        raise UsageError(
            f"Missing GitHub Actions environment variable(s): {', '.join(missing)}",
            hint="run this inside a GitHub Actions job, or set them when testing locally",
        )
    event_name = environ["GITHUB_EVENT_NAME"]
    repository = environ["GITHUB_REPOSITORY"]
    owner, sep, repo = repository.partition("/")
    if not sep or not owner or not repo:
        raise UsageError(f"GITHUB_REPOSITORY {repository!r} is not owner/name")
    run_id = _int_env(environ, "GITHUB_RUN_ID")
    server_url = (environ.get("GITHUB_SERVER_URL") or "https://github.com").rstrip("/")
    payload = _load_payload(environ.get("GITHUB_EVENT_PATH"), event_name)
    repo_obj = _dict(payload.get("repository"))
    repo_id = repo_obj.get("id") if isinstance(repo_obj.get("id"), int) else None
    if repo_id is None and (rid := environ.get("GITHUB_REPOSITORY_ID", "")).isdigit():
        repo_id = int(rid)
    default_branch = _str(repo_obj, "default_branch")

    pull_request = None
    workflow_run = None
    merge_group = None
    where = environ.get("GITHUB_EVENT_PATH", "")
    if event_name in PULL_REQUEST_EVENTS:
        pull_request = _pull_request(payload, where, repo_id, repository)
    elif event_name == "workflow_run":
        workflow_run = _workflow_run(payload, where, repo_id, repository)
    elif event_name == "merge_group":
        merge_group = _merge_group(payload, where)

    return GitHubContext(
        event_name=event_name,
        repository=repository,
        owner=owner,
        repo=repo,
        repository_id=repo_id,
        default_branch=default_branch,
        sha=environ["GITHUB_SHA"],
        ref=environ.get("GITHUB_REF", ""),
        ref_name=environ.get("GITHUB_REF_NAME") or None,
        run_id=run_id,
        run_attempt=_int_env(environ, "GITHUB_RUN_ATTEMPT", default=1),
        run_url=f"{server_url}/{repository}/actions/runs/{run_id}",
        server_url=server_url,
        api_url=(environ.get("GITHUB_API_URL") or "https://api.github.com").rstrip("/"),
        workflow_ref=environ.get("GITHUB_WORKFLOW_REF") or None,
        actor=environ.get("GITHUB_ACTOR") or None,
        pull_request=pull_request,
        workflow_run=workflow_run,
        merge_group=merge_group,
    )


def _int_env(environ: Mapping[str, str], name: str, *, default: int | None = None) -> int:
    raw = environ.get(name, "")
    if not raw and default is not None:
        return default
    if not raw.isdigit():
        raise UsageError(f"{name} must be a positive integer, got {raw!r}")
    return int(raw)


def _load_payload(path: str | None, event_name: str) -> dict[str, Any]:
    needs_payload = event_name in PULL_REQUEST_EVENTS or event_name in ("workflow_run", "merge_group")
    if not path:
        if needs_payload:
            raise InputFileError(
                f"GITHUB_EVENT_PATH is not set, but a {event_name} run needs the event payload",
                hint="the runner always sets it; when testing locally, point it at a saved event JSON",
            )
        return {}
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except FileNotFoundError:
        if needs_payload:
            raise InputFileError(
                f"Event file {path} (GITHUB_EVENT_PATH) does not exist",
                hint="the runner writes it before the step starts; check the path when testing locally",
            ) from None
        return {}
    except (OSError, UnicodeDecodeError) as exc:
        raise InputFileError(f"Event file {path} cannot be read: {exc}") from None
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise InputFileError(
            f"Event file {path} is not valid JSON ({exc})",
            hint="it should be the webhook payload of the event",
        ) from None
    if not isinstance(data, dict):
        raise InputFileError(
            f"Event file {path} does not hold a JSON object", hint="it should be a webhook payload"
        )
    return data


def _dict(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _str(obj: dict[str, Any], key: str) -> str | None:
    value = obj.get(key)
    return value if isinstance(value, str) else None


def _payload_error(where: str, what: str) -> InputFileError:
    return InputFileError(
        f"Event file {where} has no {what}",
        hint="is GITHUB_EVENT_NAME consistent with the payload in GITHUB_EVENT_PATH?",
    )


def _object(payload: dict[str, Any], key: str, where: str) -> dict[str, Any]:
    value = payload.get(key)
    if not isinstance(value, dict):
        raise _payload_error(where, f"{key} object")
    return value


def _require(obj: dict[str, Any], key: str, kind: type, where: str, label: str) -> Any:
    value = obj.get(key)
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is int):
        raise _payload_error(where, f"valid {label}")
    return value


def _pull_request(
    payload: dict[str, Any], where: str, repo_id: int | None, repository: str
) -> PullRequestContext:
    pr = _object(payload, "pull_request", where)
    head = _dict(pr.get("head"))
    base = _dict(pr.get("base"))
    head_repo = _dict(head.get("repo"))
    base_repo = _dict(base.get("repo"))
    head_name = _str(head_repo, "full_name")
    base_id = base_repo.get("id", repo_id)
    # A deleted fork has head.repo == null; treat it as a fork (read-only token either way).
    is_fork = (
        not head_repo
        or (head_repo.get("id") is not None and base_id is not None and head_repo.get("id") != base_id)
        or (head_name is not None and head_name != base_repo.get("full_name", repository))
        or bool(head_repo.get("fork"))
    )
    return PullRequestContext(
        number=_require(pr, "number", int, where, "pull_request.number"),
        head_sha=_require(head, "sha", str, where, "pull_request.head.sha"),
        head_ref=_require(head, "ref", str, where, "pull_request.head.ref"),
        base_sha=_require(base, "sha", str, where, "pull_request.base.sha"),
        base_ref=_require(base, "ref", str, where, "pull_request.base.ref"),
        head_repo_full_name=head_name,
        is_fork=is_fork,
        html_url=_str(pr, "html_url"),
        labels=_label_names(pr.get("labels")),
    )


def _label_names(raw: Any) -> tuple[str, ...]:
    """``pull_request.labels[].name``; anything not shaped as a label is skipped, not fatal."""
    if not isinstance(raw, list):
        return ()
    return tuple(str(e["name"]) for e in raw if isinstance(e, dict) and isinstance(e.get("name"), str))


def _workflow_run(
    payload: dict[str, Any], where: str, repo_id: int | None, repository: str
) -> WorkflowRunTrigger:
    run = _object(payload, "workflow_run", where)
    head_repo = _dict(run.get("head_repository"))
    head_name = _str(head_repo, "full_name")
    numbers = [
        p["number"]
        for p in run.get("pull_requests") or []
        if isinstance(p, dict) and isinstance(p.get("number"), int)
    ]
    return WorkflowRunTrigger(
        id=_require(run, "id", int, where, "workflow_run.id"),
        event=_require(run, "event", str, where, "workflow_run.event"),
        head_sha=_require(run, "head_sha", str, where, "workflow_run.head_sha"),
        head_branch=_str(run, "head_branch"),
        conclusion=_str(run, "conclusion"),
        pull_request_numbers=numbers,
        head_repo_full_name=head_name,
        is_fork=(head_repo.get("id") is not None and repo_id is not None and head_repo.get("id") != repo_id)
        or (head_name is not None and head_name != repository),
        workflow_path=_str(run, "path"),
    )


def _merge_group(payload: dict[str, Any], where: str) -> MergeGroupContext:
    group = _object(payload, "merge_group", where)
    return MergeGroupContext(
        head_sha=_require(group, "head_sha", str, where, "merge_group.head_sha"),
        head_ref=_require(group, "head_ref", str, where, "merge_group.head_ref"),
        base_sha=_require(group, "base_sha", str, where, "merge_group.base_sha"),
        base_ref=_require(group, "base_ref", str, where, "merge_group.base_ref"),
    )
