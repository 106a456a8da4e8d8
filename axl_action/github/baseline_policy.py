"""The baseline policy: which stored artifact a run compares against, and why.

A pure function of plain values — the artifacts listed under the baseline's name, the
successful push runs on the baseline branch, what is known about the PR's commits, and the
time — so every rule is tested directly (``tests/unit/github/test_gh_baseline_policy.py``)
and ``github.artifacts`` keeps only the I/O. The rule, in order:

1. **Candidates.** Artifacts with the exact name that are not expired (nor excluded, e.g.
   after a 410 on download), come from a run of *this* repository (a fork PR whose branch is
   also called ``main`` produces artifacts with ``head_branch == "main"``;
   ``head_repository_id`` gives it away) on the baseline branch, and whose run is one of the
   newest ``max_runs`` completed, successful ``push`` runs on that branch (of the given
   workflow file, if any). The artifact object has no ``event`` field, so the run list is
   what proves "push" and "success". Everything else is reported in ``skipped`` with the
   reason.
2. **Exact merge base.** The candidate whose run's ``head_sha`` is the PR's merge base
   (from the compare API; ``pull_request.base.sha`` is the base *tip*, not the merge base).
3. **PR base commit.** Else the candidate built from ``pull_request.base.sha``.
4. **Newest ancestor.** Else the newest candidate whose commit is an ancestor of the merge
   base, among the newest ``max_ancestor_checks`` (:func:`ancestry_checks` says which
   commits the caller must look up; :class:`Commits` carries the answers): it lacks only
   changes the PR already contains, so the diff is attributable to the PR and the commits
   between, which ``commits_behind`` counts.
5. **Newest.** Else the newest candidate, flagged as such: the comparison then also contains
   changes that landed on the branch after the PR forked.

Without a PR (a ``push`` or ``workflow_dispatch`` run) the newest candidate wins. Ordering
never relies on the API's list order (undocumented): candidates are sorted by ``created_at``
then id, newest first. Ages are measured against the ``now`` passed in, never the wall clock.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

EXPIRED_LISTED = "expired (past its retention period)"
EXPIRED_ON_DOWNLOAD = "expired (410 Gone on download)"


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


NoBaselineCause = Literal["none", "expired", "too-old", "ineligible"]


class NoBaseline(BaseModel):
    """No eligible baseline artifact exists (first run, all expired, ...)."""

    model_config = ConfigDict(frozen=True)

    found: Literal[False] = False
    """Discriminator against :class:`BaselineChoice`."""
    cause: NoBaselineCause = "none"
    """``none``: no artifact has the name; ``expired``: every one expired (listed as expired or
    410 on download); ``too-old``: the rest came from runs older than the window searched;
    ``ineligible``: forks, other branches, failed or non-push runs."""
    reason: str
    """Why, in words for the PR comment, including what to do."""
    skipped: list[SkippedCandidate] = Field(default_factory=list)
    """Artifacts with the baseline's name that were not eligible."""


@dataclass(frozen=True)
class Commits:
    """What is known about the PR's commits (all None / empty without a PR)."""

    merge_base_sha: str | None = None
    """The PR's merge base (compare API), if known."""
    base_sha: str | None = None
    """``pull_request.base.sha``: the base branch's tip when the PR was last updated."""
    behind: Mapping[str, int] = field(default_factory=dict)
    """For the commits :func:`ancestry_checks` asked about that are ancestors of the target:
    how many commits they are behind it. A commit asked about and absent is not an ancestor."""


@dataclass(frozen=True)
class Window:
    """How far back the search looks (the I/O layer lists this much)."""

    max_runs: int = 300
    """Newest successful push runs considered."""
    max_ancestor_checks: int = 5
    """Newest candidates whose ancestry is looked up."""
    workflow: str | None = None
    """Only runs of this workflow file, when set."""


Candidate = tuple["ArtifactInfo", "WorkflowRunInfo"]


def choose_baseline(
    artifacts: Sequence[ArtifactInfo],
    runs: Sequence[WorkflowRunInfo],
    *,
    name: str,
    branch: str,
    commits: Commits,
    now: datetime,
    window: Window = Window(),
    exclude: Mapping[int, str] | None = None,
) -> BaselineChoice | NoBaseline:
    """Pick the baseline by the rule in the module docstring, or say why there is none.

    ``artifacts`` are those listed under ``name``; ``runs`` the newest successful push runs
    on ``branch`` (at most ``window.max_runs``); ``exclude`` maps artifact ids to a reason they
    must not be chosen (e.g. ``EXPIRED_ON_DOWNLOAD``).
    """
    candidates, skipped = _candidates(
        artifacts, runs, name=name, branch=branch, window=window, exclude=exclude
    )
    if not candidates:
        return _no_baseline(name, branch, artifacts, skipped, window)

    def choose(
        cand: Candidate, match: BaselineMatch, reason: str, behind: int | None = None
    ) -> BaselineChoice:
        art, run = cand
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

    mb, base = commits.merge_base_sha, commits.base_sha
    exact = _exact(candidates, commits)
    if exact is not None:
        cand, match = exact
        if match == "merge-base":
            return choose(cand, match, f"built from the PR's merge base {_short(mb or '')}")
        return choose(cand, match, f"built from the PR's base commit {_short(base or '')}")
    target = mb or base
    if target is None:
        return choose(candidates[0], "newest", f"the newest successful push run on {branch!r}")
    for cand in candidates[: window.max_ancestor_checks]:
        behind = commits.behind.get(cand[1].head_sha)
        if behind is not None:
            return choose(
                cand,
                "ancestor",
                f"no run for the merge base {_short(target)}; the newest baseline {behind} commit(s) before it",
                behind,
            )
    return choose(
        candidates[0],
        "newest",
        f"no baseline at or before the merge base {_short(target)} among the newest "
        f"{window.max_ancestor_checks}; using the newest on {branch!r}, which includes changes the PR "
        "does not have",
    )


def ancestry_checks(
    artifacts: Sequence[ArtifactInfo],
    runs: Sequence[WorkflowRunInfo],
    *,
    name: str,
    branch: str,
    commits: Commits,
    window: Window = Window(),
    exclude: Mapping[int, str] | None = None,
) -> list[str]:
    """The candidate commits whose ancestry :func:`choose_baseline` needs (newest first).

    Empty when no lookup can change the choice: no candidates, an exact match, or no PR.
    """
    candidates, _ = _candidates(artifacts, runs, name=name, branch=branch, window=window, exclude=exclude)
    if not candidates or _exact(candidates, commits) is not None:
        return []
    if (commits.merge_base_sha or commits.base_sha) is None:
        return []
    return [run.head_sha for _, run in candidates[: window.max_ancestor_checks]]


def has_plausible(
    artifacts: Sequence[ArtifactInfo], *, name: str, branch: str, exclude: Mapping[int, str] | None = None
) -> bool:
    """Whether any artifact passes the checks that need no run list (so listing runs can help)."""
    return any(a.name == name and _ineligible(a, branch, exclude or {}) is None for a in artifacts)


def ancestry_target(commits: Commits) -> str | None:
    """The commit that :func:`ancestry_checks`' commits are compared against."""
    return commits.merge_base_sha or commits.base_sha


def _exact(candidates: Sequence[Candidate], commits: Commits) -> tuple[Candidate, BaselineMatch] | None:
    if commits.merge_base_sha:
        for cand in candidates:
            if cand[1].head_sha == commits.merge_base_sha:
                return cand, "merge-base"
    if commits.base_sha and commits.base_sha != commits.merge_base_sha:
        for cand in candidates:
            if cand[1].head_sha == commits.base_sha:
                return cand, "base-sha"
    return None


def _candidates(
    artifacts: Sequence[ArtifactInfo],
    runs: Sequence[WorkflowRunInfo],
    *,
    name: str,
    branch: str,
    window: Window,
    exclude: Mapping[int, str] | None,
) -> tuple[list[Candidate], list[SkippedCandidate]]:
    exclude = exclude or {}
    by_id = {r.id: r for r in runs}
    oldest = min(runs, key=lambda r: (r.created_at, r.id)) if len(runs) >= window.max_runs else None
    skipped: list[SkippedCandidate] = []
    candidates: list[Candidate] = []
    for art in sorted((a for a in artifacts if a.name == name), key=newest_key, reverse=True):
        reason = _ineligible(art, branch, exclude)
        run = by_id.get(art.run_id or -1)
        if reason is None and (run is None or run.event != "push" or run.conclusion != "success"):
            where = f" of {window.workflow}" if window.workflow else ""
            if oldest is not None and art.created_at is not None and art.created_at < oldest.created_at:
                reason = f"too old: its run is older than the newest {window.max_runs} successful push runs{where} on {branch!r}"
            else:
                reason = f"its run is not among the newest {window.max_runs} successful push runs{where} on {branch!r}"
        if reason is not None:
            skipped.append(
                SkippedCandidate(
                    artifact_id=art.id,
                    run_id=art.run_id,
                    head_sha=art.head_sha,
                    created_at=art.created_at,
                    reason=reason,
                )
            )
        elif run is not None:
            candidates.append((art, run))
    return candidates, skipped


def _ineligible(art: ArtifactInfo, branch: str, exclude: Mapping[int, str]) -> str | None:
    if art.id in exclude:
        return exclude[art.id]
    if art.expired:
        return EXPIRED_LISTED
    if art.run_id is None or art.head_sha is None:
        return "no workflow run recorded for it"
    if art.head_repository_id is not None and art.head_repository_id != art.repository_id:
        return "built from a fork, not from this repository"
    if art.head_branch != branch:
        return f"built on branch {art.head_branch!r}, not {branch!r}"
    return None


def _no_baseline(
    name: str, branch: str, artifacts: Sequence[ArtifactInfo], skipped: list[SkippedCandidate], window: Window
) -> NoBaseline:
    mine = [a for a in artifacts if a.name == name]
    if not mine:
        return NoBaseline(
            cause="none",
            reason=(
                f"no artifact named {name!r} exists yet; it appears after the first successful push run "
                f"on {branch!r} with this action"
            ),
            skipped=skipped,
        )
    expired = [s for s in skipped if s.reason.startswith("expired")]
    too_old = [s for s in skipped if s.reason.startswith("too old")]
    if len(expired) == len(skipped):
        return NoBaseline(
            cause="expired",
            reason=(
                f"every artifact named {name!r} has expired; push to {branch!r} (or re-run its workflow) "
                "to create a fresh baseline, and consider a longer retention"
            ),
            skipped=skipped,
        )
    if too_old and len(expired) + len(too_old) == len(skipped):
        return NoBaseline(
            cause="too-old",
            reason=(
                f"every usable artifact named {name!r} is older than the newest {window.max_runs} successful "
                f"push runs on {branch!r}; push to {branch!r} to create a fresh baseline"
            ),
            skipped=skipped,
        )
    return NoBaseline(
        cause="ineligible",
        reason=f"none of the {len(mine)} artifact(s) named {name!r} came from a successful push run on {branch!r}",
        skipped=skipped,
    )


def newest_key(art: ArtifactInfo) -> tuple[datetime, int]:
    """Sort key: upload time, then id (the API's list order is undocumented)."""
    return (art.created_at or datetime.min.replace(tzinfo=UTC), art.id)


def _short(sha: str) -> str:
    return sha[:7]
