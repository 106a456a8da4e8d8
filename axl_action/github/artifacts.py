"""The baseline's I/O through the REST API: list artifacts and runs, compare commits, download
and unpack.

Which artifact is the baseline is decided by ``github.baseline_policy`` (pure, over the
values listed here); :func:`find_baseline` only gathers those values and asks it, and
:func:`fetch_baseline` downloads the choice, choosing again when it expired in between.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from urllib.parse import quote, urlsplit

import requests
from pydantic import BaseModel, ConfigDict

from axl_action.github.api import GitHubApi
from axl_action.github.baseline_policy import (
    EXPIRED_ON_DOWNLOAD,
    ArtifactInfo,
    BaselineChoice,
    Commits,
    NoBaseline,
    Window,
    WorkflowRunInfo,
    ancestry_checks,
    ancestry_target,
    choose_baseline,
    has_plausible,
    newest_key,
)
from axl_action.github.client import own_session, repo_path
from axl_action.github.errors import (
    ArtifactError,
    ArtifactExpiredError,
    GitHubError,
)
from axl_action.github.safezip import ZipLimits, extract_zip
from axl_action.retry import Retry

log = logging.getLogger("axl_action.github")

ACTIONS_READ_HINT = (
    "add `actions: read` to the workflow's `permissions:` block so the token can read artifacts "
    "and workflow runs"
)
DEFAULT_MAX_DOWNLOAD_BYTES = 256 * 1024 * 1024


def list_artifacts(client: GitHubApi, repo: str, name: str, *, max_items: int = 1000) -> list[ArtifactInfo]:
    """Every artifact called ``name`` in ``repo`` (all pages, up to ``max_items``), newest first."""
    return _artifacts(client, repo_path(repo) + "/actions/artifacts", {"name": name}, name, max_items)


def list_run_artifacts(
    client: GitHubApi, repo: str, run_id: int, *, name: str | None = None, max_items: int = 1000
) -> list[ArtifactInfo]:
    """Artifacts of one workflow run (optionally only ``name``), all pages, newest first."""
    path = f"{repo_path(repo)}/actions/runs/{int(run_id)}/artifacts"
    return _artifacts(client, path, {"name": name} if name else {}, name, max_items)


def _artifacts(
    client: GitHubApi, path: str, params: dict[str, str | int], name: str | None, max_items: int
) -> list[ArtifactInfo]:
    """The artifacts listed at ``path`` (only those called ``name`` unless it is None), newest first."""
    items = client.paginate(
        path, params, items_key="artifacts", max_items=max_items, permission_hint=ACTIONS_READ_HINT
    )
    arts = [ArtifactInfo.from_api(a) for a in items if name is None or a.get("name") == name]
    return sorted(arts, key=newest_key, reverse=True)


def list_workflow_runs(
    client: GitHubApi,
    repo: str,
    *,
    workflow: str | None = None,
    branch: str | None = None,
    event: str | None = None,
    status: str | None = None,
    max_items: int = 300,
) -> list[WorkflowRunInfo]:
    """Workflow runs of ``repo`` (or of one workflow file), filtered server-side, newest first.

    ``status`` accepts a status or a conclusion (``success``), as the API does.
    """
    path = repo_path(repo) + "/actions/"
    path += f"workflows/{quote(workflow, safe='')}/runs" if workflow else "runs"
    params: dict[str, str | int] = {}
    for key, value in (("branch", branch), ("event", event), ("status", status)):
        if value:
            params[key] = value
    hint = ACTIONS_READ_HINT
    if workflow:
        hint = f"is there a workflow file named {workflow!r} in {repo}? If so, {ACTIONS_READ_HINT}"
    items = client.paginate(
        path, params, items_key="workflow_runs", max_items=max_items, permission_hint=hint
    )
    runs = [WorkflowRunInfo.from_api(r) for r in items]
    return sorted(runs, key=lambda r: (r.created_at, r.id), reverse=True)


def compare_commits(client: GitHubApi, repo: str, base: str, head: str) -> dict[str, Any] | None:
    """``GET /compare/{base}...{head}``; None when GitHub cannot compare them (404)."""
    try:
        data = client.get_json(
            f"{repo_path(repo)}/compare/{quote(base, safe='')}...{quote(head, safe='')}",
            {"per_page": 1},
        )
    except GitHubError as exc:
        if exc.status == 404:
            return None
        raise
    return data if isinstance(data, dict) else None


def merge_base(client: GitHubApi, repo: str, base: str, head: str) -> str | None:
    """The merge-base commit of ``base`` and ``head``, or None if GitHub does not know one."""
    data = compare_commits(client, repo, base, head)
    commit = (data or {}).get("merge_base_commit") or {}
    sha = commit.get("sha")
    return sha if isinstance(sha, str) else None


@dataclass(frozen=True, kw_only=True)
class BaselineQuery:
    """Which baseline to look for (:func:`find_baseline`, :func:`fetch_baseline`), and how far."""

    artifact_name: str
    branch: str
    """The baseline branch (a PR's base branch)."""
    now: datetime
    """What counts as expired is judged against this time."""
    workflow: str | None = None
    """Only runs of this workflow file."""
    merge_base_sha: str | None = None
    base_sha: str | None = None
    """The PR's merge base and base commit: a baseline on their ancestry is preferred."""
    max_runs: int = 300
    max_ancestor_checks: int = 5
    max_expired_retries: int = 3
    """:func:`fetch_baseline` chooses again at most this many times when a download expired."""


def find_baseline(
    client: GitHubApi, repo: str, query: BaselineQuery, *, exclude: Mapping[int, str] | None = None
) -> BaselineChoice | NoBaseline:
    """Gather what ``github.baseline_policy.choose_baseline`` needs, and let it choose.

    Lists the artifacts, then (only if one could qualify) the successful push runs, then
    looks up the ancestry of the few commits the policy asks about.
    """
    artifacts = list_artifacts(client, repo, query.artifact_name)
    window = Window(
        max_runs=query.max_runs, max_ancestor_checks=query.max_ancestor_checks, workflow=query.workflow
    )
    runs: list[WorkflowRunInfo] = []
    if has_plausible(artifacts, name=query.artifact_name, branch=query.branch, exclude=exclude):
        runs = list_workflow_runs(
            client,
            repo,
            workflow=query.workflow,
            branch=query.branch,
            event="push",
            status="success",
            max_items=query.max_runs,
        )
    commits = Commits(merge_base_sha=query.merge_base_sha, base_sha=query.base_sha)
    target = ancestry_target(commits)
    behind: dict[str, int] = {}
    checks = ancestry_checks(
        artifacts,
        runs,
        name=query.artifact_name,
        branch=query.branch,
        commits=commits,
        window=window,
        exclude=exclude,
    )
    for sha in checks:
        data = compare_commits(client, repo, sha, target) if target else None
        if data and data.get("status") in ("ahead", "identical"):
            behind[sha] = int(data.get("ahead_by") or 0)
            break  # newest first: the first ancestor is the one chosen
    commits = Commits(merge_base_sha=query.merge_base_sha, base_sha=query.base_sha, behind=behind)
    return choose_baseline(
        artifacts,
        runs,
        name=query.artifact_name,
        branch=query.branch,
        commits=commits,
        now=query.now,
        window=window,
        exclude=exclude,
    )


# -- download ---------------------------------------------------------------------------------


def download_artifact(
    client: GitHubApi,
    repo: str,
    artifact_id: int,
    *,
    expected_digest: str | None = None,
    blob_session: requests.Session | None = None,
    max_bytes: int = DEFAULT_MAX_DOWNLOAD_BYTES,
    attempts: int = 3,
) -> bytes:
    """Download an artifact's zip: the API answers 302 to a signed blob URL, which is fetched
    with a fresh request that carries **no** Authorization header (the blob host rejects it,
    and the token must never leave the API host).

    Raises :class:`ArtifactExpiredError` on 410, :class:`ArtifactError` when the download
    is larger than ``max_bytes`` or its SHA-256 does not match ``expected_digest``. A failed
    blob fetch is retried (``attempts`` in all) by the client's retrier (``axl_action.retry``).
    """
    path = f"{repo_path(repo)}/actions/artifacts/{int(artifact_id)}/zip"
    session = own_session(blob_session)

    def attempt(_: int) -> bytes:
        try:
            resp = client.request("GET", path, expect_redirect=True, permission_hint=ACTIONS_READ_HINT)
        except GitHubError as exc:
            if exc.status == 410:
                raise ArtifactExpiredError(
                    f"Artifact {artifact_id} has expired (410 Gone)",
                    hint="push to the baseline branch to create a fresh baseline",
                    status=410,
                    request_id=exc.request_id,
                ) from None
            raise
        if resp.status_code < 300:  # GHES may serve the bytes without a redirect
            return resp.content
        # The signed URL expires after a minute, so each attempt asks the API for a new one.
        return _fetch_blob(session, resp.headers["location"], max_bytes, client.user_agent, client.timeout)

    def give_up(retry: Retry, n: int) -> ArtifactError:
        return ArtifactError(
            f"Downloading artifact {artifact_id} failed after {n} attempts: {retry.problem}",
            hint="the artifact storage is having trouble; re-run the job later",
        )

    data = client.retrier.run(
        attempt, what=f"Artifact {artifact_id} download", give_up=give_up, attempts=attempts
    )
    if len(data) > max_bytes:
        raise _download_too_big(artifact_id, max_bytes)
    if expected_digest:
        actual = "sha256:" + hashlib.sha256(data).hexdigest()
        if actual.lower() != expected_digest.lower():
            raise ArtifactError(
                f"Artifact {artifact_id} does not match its recorded digest "
                f"(expected {expected_digest}, got {actual})",
                hint="the download was corrupted or tampered with; re-run the job",
            )
    return data


def _fetch_blob(
    session: requests.Session, url: str, max_bytes: int, user_agent: str, timeout: float
) -> bytes:
    host = urlsplit(url).netloc  # messages show the host only: the query is a credential
    try:
        with session.get(
            url, headers={"User-Agent": user_agent}, stream=True, timeout=timeout, allow_redirects=True
        ) as resp:
            if resp.status_code >= 500 or resp.status_code == 429:
                raise Retry(f"blob host {host} answered {resp.status_code}")
            if resp.status_code != 200:
                raise ArtifactError(
                    f"The artifact storage host {host} refused the download with {resp.status_code}",
                    hint="the signed URL may have expired; re-run the job",
                    status=resp.status_code,
                )
            declared = resp.headers.get("content-length")
            if declared and declared.isdigit() and int(declared) > max_bytes:
                raise _download_too_big(None, max_bytes)
            buf = bytearray()
            for chunk in resp.iter_content(64 * 1024):
                buf += chunk
                if len(buf) > max_bytes:
                    raise _download_too_big(None, max_bytes)
            return bytes(buf)
    except requests.RequestException as exc:
        raise Retry(f"{type(exc).__name__} talking to {host}") from None


def _download_too_big(artifact_id: int | None, max_bytes: int) -> ArtifactError:
    which = f"Artifact {artifact_id}" if artifact_id is not None else "The artifact"
    return ArtifactError(
        f"{which} is larger than the {max_bytes}-byte download limit",
        hint="a baseline should hold result files only; check what was uploaded under this name",
    )


def download_baseline(
    client: GitHubApi,
    repo: str,
    choice: BaselineChoice,
    *,
    limits: ZipLimits | None = None,
    blob_session: requests.Session | None = None,
) -> dict[str, bytes]:
    """Download the chosen baseline, verify its digest, and unpack it safely."""
    data = download_artifact(
        client,
        repo,
        choice.artifact_id,
        expected_digest=choice.digest,
        blob_session=blob_session,
        max_bytes=(limits or ZipLimits()).max_total_bytes,
    )
    return extract_zip(data, limits, source=f"artifact {choice.artifact_name!r} (id {choice.artifact_id})")


class FetchedBaseline(BaseModel):
    """A chosen baseline together with its unpacked files."""

    model_config = ConfigDict(frozen=True)

    choice: BaselineChoice
    """Which artifact, and why."""
    files: dict[str, bytes]
    """Its files by path inside the zip."""


def fetch_baseline(
    client: GitHubApi,
    repo: str,
    query: BaselineQuery,
    *,
    limits: ZipLimits | None = None,
    blob_session: requests.Session | None = None,
) -> FetchedBaseline | NoBaseline:
    """Choose the baseline (:func:`find_baseline`), download and unpack it.

    An artifact can expire between listing and download: a 410 marks it skipped and the
    choice is made again without it (at most ``query.max_expired_retries`` times).
    """
    exclude: dict[int, str] = {}
    while True:
        choice = find_baseline(client, repo, query, exclude=exclude)
        if isinstance(choice, NoBaseline):
            return choice
        try:
            files = download_baseline(client, repo, choice, limits=limits, blob_session=blob_session)
        except ArtifactExpiredError:
            if len(exclude) >= query.max_expired_retries:
                raise
            log.warning("Baseline artifact %d expired before download; choosing again", choice.artifact_id)
            exclude[choice.artifact_id] = EXPIRED_ON_DOWNLOAD
            continue
        return FetchedBaseline(choice=choice, files=files)
