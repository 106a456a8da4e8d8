"""Find, download and unpack the baseline artifact through the REST API.

The baseline is the results file that a ``push`` run on the baseline branch (usually the
default branch) uploaded as a workflow artifact. Choosing it — the rule, in order:

1. **Candidates.** Artifacts with the exact name that are not expired, come from a run of
   *this* repository (a fork PR whose branch is also called ``main`` produces artifacts with
   ``head_branch == "main"``; ``head_repository_id`` gives it away) on the baseline branch, and
   whose run is one of the newest ``max_runs`` completed, successful ``push`` runs on that
   branch (of the given workflow file, if any). The artifact object has no ``event`` field,
   so the run list is what proves "push" and "success". Everything else is reported in
   ``skipped`` with the reason.
2. **Exact merge base.** The candidate whose run's ``head_sha`` is the PR's merge base
   (from the compare API; ``pull_request.base.sha`` is the base *tip*, not the merge base).
3. **PR base commit.** Else the candidate built from ``pull_request.base.sha``.
4. **Newest ancestor.** Else the newest candidate whose commit is an ancestor of the merge
   base (checked with the compare API, newest first, at most ``max_ancestor_checks``): it
   lacks only changes the PR already contains, so the diff is attributable to the PR and the
   commits between, which ``commits_behind`` counts.
5. **Newest.** Else the newest candidate, flagged as such: the comparison then also contains
   changes that landed on the branch after the PR forked.

Without a PR (a ``push`` or ``workflow_dispatch`` run) the newest candidate wins.
Ordering never relies on the API's list order (undocumented): candidates are sorted by
``created_at`` then id, newest first.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any, Literal
from urllib.parse import quote, urlsplit

import requests
from pydantic import BaseModel, ConfigDict, Field

from axl_action.github.client import GitHubClient, repo_path
from axl_action.github.errors import (
    ArtifactError,
    ArtifactExpiredError,
    GitHubError,
)
from axl_action.github.safezip import ZipLimits, extract_zip

log = logging.getLogger("axl_action.github")

ACTIONS_READ_HINT = (
    "add `actions: read` to the workflow's `permissions:` block so the token can read artifacts "
    "and workflow runs"
)
DEFAULT_MAX_DOWNLOAD_BYTES = 256 * 1024 * 1024


class ArtifactInfo(BaseModel):
    """One artifact as the REST API lists it (the fields the action uses)."""

    model_config = ConfigDict(frozen=True)

    id: int
    """REST artifact id (the same number the upload's FinalizeArtifact returns)."""
    name: str
    """Artifact name."""
    size_in_bytes: int
    """Size of the stored zip."""
    expired: bool
    """True once the retention period is over; downloading then answers 410."""
    created_at: datetime | None
    """When the upload finished."""
    expires_at: datetime | None
    """When it expires (or expired)."""
    digest: str | None = None
    """``sha256:<hex>`` of the zip for v4+ uploads; used to verify the download."""
    run_id: int | None = None
    """The workflow run that uploaded it (``workflow_run.id``)."""
    head_sha: str | None = None
    """The commit that run built."""
    head_branch: str | None = None
    """The branch of that run (a fork's branch may share the name!)."""
    repository_id: int | None = None
    """The repository the run belongs to."""
    head_repository_id: int | None = None
    """The repository the built commit came from; differs from ``repository_id`` for forks."""

    @classmethod
    def from_api(cls, data: dict[str, Any]) -> ArtifactInfo:
        run = data.get("workflow_run") or {}
        return cls(
            id=data["id"],
            name=data["name"],
            size_in_bytes=data.get("size_in_bytes", 0),
            expired=bool(data.get("expired")),
            created_at=data.get("created_at"),
            expires_at=data.get("expires_at"),
            digest=data.get("digest"),
            run_id=run.get("id"),
            head_sha=run.get("head_sha"),
            head_branch=run.get("head_branch"),
            repository_id=run.get("repository_id"),
            head_repository_id=run.get("head_repository_id"),
        )


class WorkflowRunInfo(BaseModel):
    """One workflow run (the fields the action uses)."""

    model_config = ConfigDict(frozen=True)

    id: int
    """Run id (``GITHUB_RUN_ID`` of that run)."""
    head_sha: str
    """Commit the run built."""
    head_branch: str | None
    """Branch of the run."""
    event: str
    """Triggering event (``push``, ``pull_request``, ...)."""
    status: str | None
    """``completed``, ``in_progress``, ..."""
    conclusion: str | None
    """``success``, ``failure``, ... once completed."""
    created_at: datetime
    """When the run was created."""
    path: str | None = None
    """Workflow file path, e.g. ``.github/workflows/evals.yml``."""
    html_url: str | None = None
    """Link to the run in the GitHub UI."""

    @classmethod
    def from_api(cls, data: dict[str, Any]) -> WorkflowRunInfo:
        return cls(
            id=data["id"],
            head_sha=data["head_sha"],
            head_branch=data.get("head_branch"),
            event=data.get("event", ""),
            status=data.get("status"),
            conclusion=data.get("conclusion"),
            created_at=data["created_at"],
            path=data.get("path"),
            html_url=data.get("html_url"),
        )


class SkippedCandidate(BaseModel):
    """An artifact with the baseline's name that was not eligible, and why."""

    model_config = ConfigDict(frozen=True)

    artifact_id: int
    """The artifact's id."""
    run_id: int | None
    """Its run, if known."""
    head_sha: str | None
    """Its commit, if known."""
    created_at: datetime | None
    """When it was uploaded."""
    reason: str
    """Why it was skipped, in words for the PR comment."""


BaselineMatch = Literal["merge-base", "base-sha", "ancestor", "newest"]


class BaselineChoice(BaseModel):
    """The artifact chosen as the baseline, and the evidence for the choice."""

    model_config = ConfigDict(frozen=True)

    found: Literal[True] = True
    """Discriminator against :class:`NoBaseline`."""
    artifact_id: int
    """REST id of the chosen artifact."""
    artifact_name: str
    """Its name."""
    size_in_bytes: int
    """Size of its zip."""
    digest: str | None
    """``sha256:<hex>`` of the zip, when GitHub has one."""
    run_id: int
    """The push run that produced it."""
    run_url: str | None
    """Link to that run."""
    head_sha: str
    """The baseline commit."""
    created_at: datetime
    """When the artifact was uploaded."""
    age_seconds: float
    """How old it was when chosen."""
    match: BaselineMatch
    """Which rule picked it (see the module docstring)."""
    commits_behind: int | None = None
    """For ``ancestor``: commits between the baseline commit and the merge base."""
    reason: str
    """One sentence for humans: why this artifact."""
    skipped: list[SkippedCandidate] = Field(default_factory=list)
    """Artifacts with the same name that were not eligible."""


class NoBaseline(BaseModel):
    """No eligible baseline artifact exists (first run, all expired, ...)."""

    model_config = ConfigDict(frozen=True)

    found: Literal[False] = False
    """Discriminator against :class:`BaselineChoice`."""
    reason: str
    """Why, in words for the PR comment, including what to do."""
    skipped: list[SkippedCandidate] = Field(default_factory=list)
    """Artifacts with the baseline's name that were not eligible."""


def list_artifacts(
    client: GitHubClient, repo: str, name: str, *, max_items: int = 1000
) -> list[ArtifactInfo]:
    """Every artifact called ``name`` in ``repo`` (all pages, up to ``max_items``), newest first."""
    items = client.paginate(
        repo_path(repo) + "/actions/artifacts",
        {"name": name},
        items_key="artifacts",
        max_items=max_items,
        permission_hint=ACTIONS_READ_HINT,
    )
    arts = [ArtifactInfo.from_api(a) for a in items if a.get("name") == name]
    return sorted(arts, key=_newest_key, reverse=True)


def list_run_artifacts(
    client: GitHubClient, repo: str, run_id: int, *, name: str | None = None, max_items: int = 1000
) -> list[ArtifactInfo]:
    """Artifacts of one workflow run (optionally only ``name``), all pages, newest first."""
    params: dict[str, str | int] = {"name": name} if name else {}
    items = client.paginate(
        f"{repo_path(repo)}/actions/runs/{int(run_id)}/artifacts",
        params,
        items_key="artifacts",
        max_items=max_items,
        permission_hint=ACTIONS_READ_HINT,
    )
    arts = [ArtifactInfo.from_api(a) for a in items if name is None or a.get("name") == name]
    return sorted(arts, key=_newest_key, reverse=True)


def list_workflow_runs(
    client: GitHubClient,
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


def compare_commits(client: GitHubClient, repo: str, base: str, head: str) -> dict[str, Any] | None:
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


def merge_base(client: GitHubClient, repo: str, base: str, head: str) -> str | None:
    """The merge-base commit of ``base`` and ``head``, or None if GitHub does not know one."""
    data = compare_commits(client, repo, base, head)
    commit = (data or {}).get("merge_base_commit") or {}
    sha = commit.get("sha")
    return sha if isinstance(sha, str) else None


def find_baseline(
    client: GitHubClient,
    repo: str,
    *,
    artifact_name: str,
    branch: str,
    workflow: str | None = None,
    merge_base_sha: str | None = None,
    base_sha: str | None = None,
    now: datetime | None = None,
    max_runs: int = 300,
    max_ancestor_checks: int = 5,
    exclude: Mapping[int, str] | None = None,
) -> BaselineChoice | NoBaseline:
    """Pick the baseline artifact by the rule in the module docstring.

    ``exclude`` maps artifact ids to a reason they must not be chosen (e.g. a download that
    answered 410); they are reported in ``skipped``.
    """
    now = now or datetime.now(UTC)
    artifacts = list_artifacts(client, repo, artifact_name)
    skipped: list[SkippedCandidate] = []
    exclude = exclude or {}

    def skip(art: ArtifactInfo, reason: str) -> None:
        skipped.append(
            SkippedCandidate(
                artifact_id=art.id,
                run_id=art.run_id,
                head_sha=art.head_sha,
                created_at=art.created_at,
                reason=reason,
            )
        )

    plausible: list[ArtifactInfo] = []
    for art in artifacts:
        if art.id in exclude:
            skip(art, exclude[art.id])
        elif art.expired:
            skip(art, "expired (past its retention period)")
        elif art.run_id is None or art.head_sha is None:
            skip(art, "no workflow run recorded for it")
        elif art.head_repository_id is not None and art.head_repository_id != art.repository_id:
            skip(art, "built from a fork, not from this repository")
        elif art.head_branch != branch:
            skip(art, f"built on branch {art.head_branch!r}, not {branch!r}")
        else:
            plausible.append(art)

    if not plausible:
        return NoBaseline(reason=_none_reason(artifact_name, branch, artifacts, skipped), skipped=skipped)

    runs = {
        r.id: r
        for r in list_workflow_runs(
            client, repo, workflow=workflow, branch=branch, event="push", status="success", max_items=max_runs
        )
    }
    candidates: list[tuple[ArtifactInfo, WorkflowRunInfo]] = []
    for art in plausible:
        run = runs.get(art.run_id or -1)
        if run is None or run.event != "push" or run.conclusion != "success":
            where = f" of {workflow}" if workflow else ""
            skip(art, f"its run is not among the newest {max_runs} successful push runs{where} on {branch!r}")
        else:
            candidates.append((art, run))
    if not candidates:
        return NoBaseline(reason=_none_reason(artifact_name, branch, artifacts, skipped), skipped=skipped)

    def choose(
        art: ArtifactInfo, run: WorkflowRunInfo, match: BaselineMatch, reason: str, behind: int | None = None
    ) -> BaselineChoice:
        created = art.created_at or run.created_at
        return BaselineChoice(
            artifact_id=art.id,
            artifact_name=art.name,
            size_in_bytes=art.size_in_bytes,
            digest=art.digest,
            run_id=run.id,
            run_url=run.html_url,
            head_sha=run.head_sha,
            created_at=created,
            age_seconds=max(0.0, (now - created).total_seconds()),
            match=match,
            commits_behind=behind,
            reason=reason,
            skipped=skipped,
        )

    newest_art, newest_run = candidates[0]
    if merge_base_sha:
        for art, run in candidates:
            if run.head_sha == merge_base_sha:
                return choose(
                    art, run, "merge-base", f"built from the PR's merge base {_short(merge_base_sha)}"
                )
    if base_sha and base_sha != merge_base_sha:
        for art, run in candidates:
            if run.head_sha == base_sha:
                return choose(art, run, "base-sha", f"built from the PR's base commit {_short(base_sha)}")
    target = merge_base_sha or base_sha
    if target is None:
        return choose(newest_art, newest_run, "newest", f"the newest successful push run on {branch!r}")
    for art, run in candidates[:max_ancestor_checks]:
        data = compare_commits(client, repo, run.head_sha, target)
        if data and data.get("status") in ("ahead", "identical"):
            behind = int(data.get("ahead_by") or 0)
            return choose(
                art,
                run,
                "ancestor",
                f"no run for the merge base {_short(target)}; the newest baseline {behind} commit(s) before it",
                behind,
            )
    return choose(
        newest_art,
        newest_run,
        "newest",
        f"no baseline at or before the merge base {_short(target)} among the newest {max_ancestor_checks}; "
        f"using the newest on {branch!r}, which includes changes the PR does not have",
    )


def _none_reason(
    name: str, branch: str, artifacts: list[ArtifactInfo], skipped: list[SkippedCandidate]
) -> str:
    if not artifacts:
        return (
            f"no artifact named {name!r} exists yet; it appears after the first successful push run "
            f"on {branch!r} with this action"
        )
    if skipped and all(s.reason.startswith("expired") for s in skipped):
        return (
            f"every artifact named {name!r} has expired; push to {branch!r} (or re-run its workflow) "
            "to create a fresh baseline, and consider a longer retention"
        )
    return f"none of the {len(artifacts)} artifact(s) named {name!r} came from a successful push run on {branch!r}"


def _newest_key(art: ArtifactInfo) -> tuple[datetime, int]:
    return (art.created_at or datetime.min.replace(tzinfo=UTC), art.id)


def _short(sha: str) -> str:
    return sha[:7]


# -- download ---------------------------------------------------------------------------------


def download_artifact(
    client: GitHubClient,
    repo: str,
    artifact_id: int,
    *,
    expected_digest: str | None = None,
    blob_session: requests.Session | None = None,
    max_bytes: int = DEFAULT_MAX_DOWNLOAD_BYTES,
    attempts: int = 3,
    sleep: Callable[[float], None] | None = None,
) -> bytes:
    """Download an artifact's zip: the API answers 302 to a signed blob URL, which is fetched
    with a fresh request that carries **no** Authorization header (the blob host rejects it,
    and the token must never leave the API host).

    Raises :class:`ArtifactExpiredError` on 410, :class:`ArtifactError` when the download
    is larger than ``max_bytes`` or its SHA-256 does not match ``expected_digest``.
    """
    path = f"{repo_path(repo)}/actions/artifacts/{int(artifact_id)}/zip"
    session = blob_session or requests.Session()
    session.trust_env = False  # no .netrc credentials on the blob request either
    sleeper = sleep or client.sleep
    last_error: Exception | None = None
    for attempt in range(1, attempts + 1):
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
            data = resp.content
        else:
            # The signed URL expires after a minute, so each attempt asks for a new one.
            location = resp.headers["location"]
            try:
                data = _fetch_blob(session, location, max_bytes, client.user_agent, client.timeout)
            except _RetryableBlobError as exc:
                last_error = exc
                if attempt < attempts:
                    log.warning("Artifact %s download failed (%s); retrying", artifact_id, exc)
                    sleeper(min(30.0, 2.0**attempt))
                    continue
                raise ArtifactError(
                    f"Downloading artifact {artifact_id} failed after {attempts} attempts: {exc}",
                    hint="the artifact storage is having trouble; re-run the job later",
                ) from None
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
    raise ArtifactError(f"Downloading artifact {artifact_id} failed: {last_error}")  # pragma: no cover


class _RetryableBlobError(Exception):
    pass


def _fetch_blob(
    session: requests.Session, url: str, max_bytes: int, user_agent: str, timeout: float
) -> bytes:
    host = urlsplit(url).netloc  # messages show the host only: the query is a credential
    try:
        with session.get(
            url, headers={"User-Agent": user_agent}, stream=True, timeout=timeout, allow_redirects=True
        ) as resp:
            if resp.status_code >= 500 or resp.status_code == 429:
                raise _RetryableBlobError(f"blob host {host} answered {resp.status_code}")
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
        raise _RetryableBlobError(f"{type(exc).__name__} talking to {host}") from None


def _download_too_big(artifact_id: int | None, max_bytes: int) -> ArtifactError:
    which = f"Artifact {artifact_id}" if artifact_id is not None else "The artifact"
    return ArtifactError(
        f"{which} is larger than the {max_bytes}-byte download limit",
        hint="a baseline should hold result files only; check what was uploaded under this name",
    )


def download_baseline(
    client: GitHubClient,
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
    client: GitHubClient,
    repo: str,
    *,
    artifact_name: str,
    branch: str,
    workflow: str | None = None,
    merge_base_sha: str | None = None,
    base_sha: str | None = None,
    limits: ZipLimits | None = None,
    blob_session: requests.Session | None = None,
    max_expired_retries: int = 3,
) -> FetchedBaseline | NoBaseline:
    """Choose the baseline (:func:`find_baseline`), download and unpack it.

    An artifact can expire between listing and download: a 410 marks it skipped and the
    choice is made again without it (at most ``max_expired_retries`` times).
    """
    exclude: dict[int, str] = {}
    while True:
        choice = find_baseline(
            client,
            repo,
            artifact_name=artifact_name,
            branch=branch,
            workflow=workflow,
            merge_base_sha=merge_base_sha,
            base_sha=base_sha,
            exclude=exclude,
        )
        if isinstance(choice, NoBaseline):
            return choice
        try:
            files = download_baseline(client, repo, choice, limits=limits, blob_session=blob_session)
        except ArtifactExpiredError:
            if len(exclude) >= max_expired_retries:
                raise
            log.warning("Baseline artifact %d expired before download; choosing again", choice.artifact_id)
            exclude[choice.artifact_id] = "expired (410 Gone on download)"
            continue
        return FetchedBaseline(choice=choice, files=files)
