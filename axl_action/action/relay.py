"""``mode: comment``: post the comment a fork PR run stored, from a ``workflow_run`` workflow.

The stored artifact was written by a run of untrusted code (the fork's PR), so nothing in it
is believed without a check: the format and suite must match, the body must carry this
suite's marker and fit GitHub's limit, and the PR it names must exist in this repository with
the head commit the triggering run built. Only then is the body posted through the same
sticky-comment upsert as a normal PR run.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from axl_action.action.outputs import ActionOutputs
from axl_action.action.ports import Commands, Commenter
from axl_action.action.settings import COMMENT_MODES, ActionSettings
from axl_action.errors import AxlError
from axl_action.github.artifacts import download_artifact
from axl_action.github.client import GitHubClient
from axl_action.github.errors import ArtifactError
from axl_action.github.safezip import ZipLimits, extract_zip
from axl_action.report import COMMENT_LIMIT, comment_marker

if TYPE_CHECKING:
    from axl_action.action.orchestrator import ActionOutcome, RunContext

COMMENT_FILE = "comment.json"
COMMENT_FORMAT = 1
_MAX_ARTIFACT_BYTES = 4 * 1024 * 1024


class StoredComment:
    """A validated stored comment."""

    def __init__(self, data: dict[str, Any]) -> None:
        self.pr_number: int = data["pr_number"]
        self.head_sha: str | None = data.get("head_sha")
        self.body: str = data["body"]
        self.marker: str = data["marker"]
        self.comment_mode: str = data["comment_mode"]
        self.failed: bool = bool(data.get("failed"))


def parse_stored_comment(raw: bytes, *, suite: str, repository: str) -> StoredComment:
    """Check a stored ``comment.json``; raises ArtifactError saying what is wrong."""
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise ArtifactError(f"{COMMENT_FILE} is not JSON") from None
    if not isinstance(data, dict) or data.get("format") != COMMENT_FORMAT:
        raise ArtifactError(f"{COMMENT_FILE} is not a format-{COMMENT_FORMAT} stored comment")
    marker = comment_marker(suite)
    checks = [
        (data.get("suite") == suite, f"it is for suite {data.get('suite')!r}, not {suite!r}"),
        (data.get("repository") == repository, f"it names repository {data.get('repository')!r}"),
        (isinstance(data.get("pr_number"), int) and data["pr_number"] > 0, "it has no valid PR number"),
        (isinstance(data.get("body"), str) and data["body"].strip() != "", "it has no comment body"),
        (data.get("marker") == marker, "its marker is not this suite's"),
        (isinstance(data.get("body"), str) and marker in data["body"], "its body lacks this suite's marker"),
        (
            isinstance(data.get("body"), str) and len(data["body"]) <= COMMENT_LIMIT,
            "its body is over GitHub's limit",
        ),
        (data.get("comment_mode") in COMMENT_MODES, "its comment mode is unknown"),
        (data.get("head_sha") is None or isinstance(data.get("head_sha"), str), "its head SHA is not text"),
    ]
    for ok, why in checks:
        if not ok:
            raise ArtifactError(f"The stored comment was rejected: {why}")
    return StoredComment(data)


def relay_comment(
    settings: ActionSettings,
    ctx: RunContext,
    *,
    github: GitHubClient | None,
    commenter: Commenter | None,
    commands: Commands,
) -> ActionOutcome:
    """Find, check and post the stored comment of the run that triggered this one."""
    from axl_action.action.orchestrator import ActionOutcome, comment_artifact_name

    outputs = ActionOutputs(mode="comment", verdict="pass")
    outcome = ActionOutcome(exit_code=0, mode="comment", outputs=outputs)

    def finish(code: int) -> ActionOutcome:
        outcome.exit_code = code
        try:
            commands.set_outputs(outputs.as_outputs())
            outcome.published.append("step outputs")
        except Exception as err:  # the relay's own verdict matters more than its outputs
            outcome.problems.append(f"step outputs: {err}")
        return outcome

    if ctx.triggering_run_id is None:
        commands.error(
            "mode: comment relays a comment stored by a pull request run; it runs on a workflow_run "
            "event (see docs/workflows/axl-eval-comment.yml).",
            title="Invalid input mode",
        )
        outputs.verdict = "error"
        return finish(1)
    if github is None or commenter is None:
        commands.error("mode: comment needs a github-token with pull-requests: write.", title="No token")
        outputs.verdict = "error"
        return finish(1)

    name = comment_artifact_name(settings.suite)
    with commands.group(f"Relay the stored comment of run {ctx.triggering_run_id}"):
        try:
            found = github.get_json(
                f"/repos/{ctx.repository}/actions/runs/{ctx.triggering_run_id}/artifacts",
                {"name": name, "per_page": 100},
            )
            artifacts = [
                a for a in found.get("artifacts", []) if a.get("name") == name and not a.get("expired")
            ]
            if not artifacts:
                print(
                    f"Run {ctx.triggering_run_id} stored no artifact {name!r}: its token could comment itself, "
                    "or it stopped before the comment step. Nothing to relay."
                )
                return finish(0)
            artifact = max(artifacts, key=lambda a: (a.get("created_at") or "", a.get("id") or 0))
            data = download_artifact(
                github,
                ctx.repository,
                int(artifact["id"]),
                expected_digest=artifact.get("digest"),
                max_bytes=_MAX_ARTIFACT_BYTES,
            )
            files = extract_zip(
                data, ZipLimits(max_entries=4, max_total_bytes=_MAX_ARTIFACT_BYTES), source=name
            )
            if COMMENT_FILE not in files:
                raise ArtifactError(f"artifact {name!r} holds no {COMMENT_FILE}")
            stored = parse_stored_comment(
                files[COMMENT_FILE], suite=settings.suite, repository=ctx.repository
            )
            _check_pull(github, ctx, stored)
            result = commenter.upsert(
                pr_number=stored.pr_number,
                body=stored.body,
                marker=stored.marker,
                comment_mode=stored.comment_mode,
                failed=stored.failed,
                head_sha=stored.head_sha,
            )
        except AxlError as err:
            commands.error(str(err), title="Stored comment not posted")
            outputs.verdict = "error"
            return finish(1)
    outputs.verdict = "fail" if stored.failed else "pass"
    outputs.comment_url = result.url or ""
    print(f"PR #{stored.pr_number} comment: {result.action}{f' ({result.url})' if result.url else ''}.")
    outcome.published.append("PR comment")
    return finish(0)


def _check_pull(github: GitHubClient, ctx: RunContext, stored: StoredComment) -> None:
    """The PR must exist here and be at the commit the triggering run built (no forged numbers)."""
    pull = github.get_json(f"/repos/{ctx.repository}/pulls/{stored.pr_number}")
    head = (pull.get("head") or {}).get("sha")
    expected = ctx.triggering_head_sha or stored.head_sha
    if expected and head != expected:
        raise ArtifactError(
            f"The stored comment names PR #{stored.pr_number}, whose head is {str(head)[:7]}, but the "
            f"triggering run built {expected[:7]}; not posting it",
            hint="a newer push to the PR will produce a fresh comment",
        )
