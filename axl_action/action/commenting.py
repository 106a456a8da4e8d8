"""The sticky PR comment as the action uses it: ``comment`` mode first, then the upsert.

:class:`StickyCommenter` is a thin layer over ``github.comments``: it decides with
``should_post`` (which needs to know whether a comment already exists, a read the fork token
can still do) and only then writes, so a read-only token fails at the write and
:func:`publish_comment` stores the results for the relay instead (:func:`store_relay_data`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Unpack

from axl_action.action.gating import Evaluation
from axl_action.action.job import Job
from axl_action.action.ports import CommentRequest
from axl_action.action.relay import RelayManifest, relay_artifact_files, relay_artifact_name
from axl_action.errors import ActionPublishError
from axl_action.github.api import GitHubApi
from axl_action.github.comments import (
    CommentResult,
    GateVerdict,
    find_sticky_comment,
    resolve_comment_author,
    should_post,
    upsert_sticky_comment,
)
from axl_action.github.errors import GitHubPermissionError
from axl_action.report import COMMENT_LIMIT, ReportContext, render_comment
from axl_action.schema import ResultFile


@dataclass
class StickyCommenter:
    """Writes this suite's sticky comment on PRs of ``repo``."""

    client: GitHubApi
    repo: str
    suite: str
    author: str | None = None

    def upsert(self, **request: Unpack[CommentRequest]) -> CommentResult:
        """Post or update as ``comment_mode`` allows; raises GitHubPermissionError on a read-only token."""
        pr_number, comment_mode = request["pr_number"], request["comment_mode"]
        if comment_mode == "off":
            return CommentResult(action="skipped", reason="comment: off")
        login = self.author or resolve_comment_author(self.client)
        self.author = login
        existing = None
        if comment_mode != "always":
            existing = find_sticky_comment(
                self.client, self.repo, pr_number, suite=self.suite, authors=[login]
            )
        if not should_post(comment_mode, request["verdict"], request["changed"], existing is not None):
            why = "no gate failed" if comment_mode == "on-failure" else "nothing changed"
            return CommentResult(action="skipped", reason=f"comment: {comment_mode} and {why}")
        return upsert_sticky_comment(
            self.client,
            self.repo,
            pr_number,
            request["body"],
            suite=self.suite,
            head_sha=request["head_sha"],
            author=login,
        )


@dataclass(frozen=True)
class Commented:
    """What the comment step hands back: the comment's URL and a sentence for the job summary."""

    url: str | None
    note: str | None
    """A sentence for the job summary."""


def publish_comment(
    job: Job, report_ctx: ReportContext, evaluation: Evaluation, candidate: ResultFile, failed: bool
) -> Commented:
    """Post or update the PR's sticky comment; a read-only token stores the results for the relay."""
    pr, head = job.ctx.pr_number, job.ctx.pr_head_sha
    assert pr is not None  # only called for a PR
    if job.commenter is None:
        job.commands.warning(
            "No github-token was given, so no PR comment was written.", title="No PR comment"
        )
        return Commented(None, None)
    if not head:
        raise ActionPublishError("the event payload has no pull_request.head.sha to mark the comment with")
    if job.relayed is not None:
        body = relayed_comment(report_ctx)
    else:
        body = render_comment(report_ctx, limit=COMMENT_LIMIT - MARKER_ROOM)
    verdict: GateVerdict = "fail" if failed else ("warn" if report_ctx.verdict == "warn" else "pass")
    try:
        result = job.commenter.upsert(
            pr_number=pr,
            body=body,
            head_sha=head,
            comment_mode=job.settings.comment,
            verdict=verdict,
            changed=changed(evaluation, verdict),
        )
    except GitHubPermissionError as err:
        if job.relayed is not None:
            raise ActionPublishError(
                f"the relay job's token may not comment on PR #{pr} ({err.message})",
                hint="give the workflow_run job `permissions: pull-requests: write`",
            ) from None
        return Commented(None, store_relay_data(job, candidate, pr, head, err))
    note = f"PR comment {result.action}: {result.reason}."
    job.commands.echo(f"{note}{f' ({result.url})' if result.url else ''}")
    return Commented(result.url, note)


def store_relay_data(job: Job, candidate: ResultFile, pr: int, head: str, err: GitHubPermissionError) -> str:
    """A read-only token (fork PR): hand the results, never rendered text, to the relay."""
    name = relay_artifact_name(job.settings.suite)
    if job.uploader is None:
        raise ActionPublishError(f"the PR comment was refused ({err}) and no artifact service is available")
    manifest = RelayManifest(
        suite=job.settings.suite, repository=job.ctx.repository, pr_number=pr, head_sha=head.lower()
    )
    files = relay_artifact_files(Path(candidate.path).read_bytes(), manifest)
    job.uploader.upload(name, files, overwrite=True)
    job.commands.warning(
        f"The token cannot comment on this PR ({err.status or 403}: read-only, as on fork PRs). The results "
        f"were stored as artifact {name!r}; a workflow_run workflow with `mode: comment` compares them "
        "against its own baseline and posts the comment (see docs/workflows/axl-eval-comment.yml).",
        title="PR results stored for the relay",
    )
    return (
        f"The token cannot comment (fork PR), so the results were stored as artifact {name} for the "
        "workflow_run relay, which compares, gates and comments with the base repository's own settings."
    )


MARKER_ROOM = 256
"""Room for the two hidden lines the sticky-comment upsert puts in front of the body."""
_RELAYED = " · relayed for a fork PR"


def relayed_comment(report_ctx: ReportContext) -> str:
    """The comment for a relayed fork PR: our own rendering, the verdict line saying it was relayed."""
    body = render_comment(report_ctx, limit=COMMENT_LIMIT - MARKER_ROOM - len(_RELAYED))
    first, sep, rest = body.partition("\n")
    if first.startswith("### "):
        return first + _RELAYED + sep + rest
    return f"### Relayed for a fork PR\n\n{body}"


def changed(evaluation: Evaluation, verdict: GateVerdict) -> bool:
    """Worth a comment under ``comment: on-change``: a gate not passing, or any measured change."""
    if verdict != "pass":
        return True
    comparison = evaluation.comparison
    if comparison is None:
        return False
    if comparison.regressions or comparison.improvements:
        return True
    if any(s.verdict in ("regressed", "improved") for s in comparison.scorers.values()):
        return True
    return comparison.cost is not None and comparison.cost.certified and comparison.cost.delta != 0
