"""``mode: comment``: post the comment a fork PR run stored, from a ``workflow_run`` workflow.

The stored artifact was written by a run of untrusted code (the fork's PR), so nothing in it
is believed without a check: the format and suite must match, the body must carry this
suite's marker and fit GitHub's limit, and the PR it names must exist in this repository with
the head commit the triggering run built. Only then is the body posted through the same
sticky-comment upsert as a normal PR run.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from axl_action.action.outputs import ActionOutputs
from axl_action.action.ports import Commands, Commenter
from axl_action.action.settings import ActionSettings
from axl_action.errors import AxlError
from axl_action.github.artifacts import download_artifact
from axl_action.github.client import GitHubClient
from axl_action.github.errors import ArtifactError
from axl_action.github.safezip import ZipLimits, extract_zip
from axl_action.report import COMMENT_LIMIT, comment_marker

if TYPE_CHECKING:
    from axl_action.action.orchestrator import ActionOutcome, RunContext

META_FILE = "comment.json"
BODY_FILE = "comment.md"
_MAX_ARTIFACT_BYTES = 4 * 1024 * 1024
_HEX = re.compile(r"[0-9a-f]{7,64}")


@dataclass(frozen=True)
class StoredComment:
    """A stored comment that passed every check."""

    pr_number: int
    head_sha: str
    body: str
    """The rendered comment without the hidden marker lines (the upsert adds them back)."""


def parse_stored_comment(files: Mapping[str, bytes], *, suite: str, repository: str) -> StoredComment:
    """Check the files of a stored-comment artifact; raises ArtifactError saying what is wrong."""
    for name in (META_FILE, BODY_FILE):
        if name not in files:
            raise ArtifactError(f"The stored comment was rejected: the artifact holds no {name}")
    try:
        meta = json.loads(files[META_FILE].decode("utf-8"))
        text = files[BODY_FILE].decode("utf-8")
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise ArtifactError("The stored comment was rejected: it is not UTF-8 JSON and Markdown") from None
    if not isinstance(meta, dict):
        raise ArtifactError("The stored comment was rejected: comment.json is not an object")
    head = meta.get("head_sha")
    pr = meta.get("pr_number")
    lines = text.split("\n", 2)
    checks = [
        (meta.get("suite") == suite, f"it is for suite {meta.get('suite')!r}, not {suite!r}"),
        (meta.get("repository") == repository, f"it names repository {meta.get('repository')!r}"),
        (isinstance(pr, int) and not isinstance(pr, bool) and pr > 0, "it has no valid PR number"),
        (isinstance(head, str) and _HEX.fullmatch(head) is not None, "its head SHA is not a commit id"),
        (len(text) <= COMMENT_LIMIT, "its body is over GitHub's limit"),
        (
            len(lines) == 3 and lines[0] == comment_marker(suite),
            "its body does not start with this suite's marker",
        ),
        (
            len(lines) == 3 and lines[1] == f"<!-- axl-eval-action:head-sha {head} -->",
            "its body is for another commit",
        ),
    ]
    for ok, why in checks:
        if not ok:
            raise ArtifactError(f"The stored comment was rejected: {why}")
    assert isinstance(pr, int) and isinstance(head, str)
    body = lines[2]
    if not body.strip():
        raise ArtifactError("The stored comment was rejected: its body is empty")
    return StoredComment(pr_number=pr, head_sha=head, body=body)


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
            for name, value in outputs.as_outputs().items():
                commands.set_output(name, value)
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
            stored = parse_stored_comment(files, suite=settings.suite, repository=ctx.repository)
            _check_pull(github, ctx, stored)
            # The PR run already applied the `comment` input; the relay only delivers.
            result = commenter.upsert(
                pr_number=stored.pr_number,
                body=stored.body,
                head_sha=stored.head_sha,
                comment_mode="always",
                verdict="pass",
                changed=True,
            )
        except AxlError as err:
            commands.error(str(err), title="Stored comment not posted")
            outputs.verdict = "error"
            return finish(1)
    outputs.comment_url = result.url or ""
    print(f"PR #{stored.pr_number} comment: {result.action}{f' ({result.url})' if result.url else ''}.")
    outcome.published.append("PR comment")
    return finish(0)


def _check_pull(github: GitHubClient, ctx: RunContext, stored: StoredComment) -> None:
    """The PR must exist here and be at the commit the triggering run built (no forged numbers)."""
    pull = github.get_json(f"/repos/{ctx.repository}/pulls/{stored.pr_number}")
    head = (pull.get("head") or {}).get("sha")
    expected = (ctx.triggering_head_sha or stored.head_sha).lower()
    if str(head).lower() != expected:
        raise ArtifactError(
            f"The stored comment names PR #{stored.pr_number}, whose head is {str(head)[:7]}, but the "
            f"triggering run built {expected[:7]}; not posting it",
            hint="a newer push to the PR will produce a fresh comment",
        )
