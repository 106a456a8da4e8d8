"""One sticky PR comment per suite, updated in place.

The comment starts with two hidden lines::

    <!-- axl-eval-action:comment suite="<key>" -->
    <!-- axl-eval-action:head-sha <40-hex sha> -->

Ours is the newest comment on the PR that carries the marker for this suite **and** was
written by the token's identity (``github-actions[bot]`` for ``GITHUB_TOKEN``; a PAT or App
token writes as someone else, so the login is configurable). All pages are read: issue
comments come oldest first, so on a busy PR ours is on the last page.

Before writing, the PR is fetched: if its head moved past the commit this run evaluated, a
newer run is on its way and we leave the comment alone (no stale overwrite).

A fork PR's token is read-only: creating or updating raises :class:`GitHubPermissionError`,
which the caller answers by storing the run's *results* (not the rendered text) for a
``workflow_run`` relay that renders and posts the comment itself (``axl_action.action.relay``).
"""

from __future__ import annotations

import logging
import re
import typing
from collections.abc import Collection
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from axl_action.github.api import GitHubApi
from axl_action.github.client import repo_path
from axl_action.github.errors import GitHubError, GitHubPermissionError
from axl_action.suite import HEAD_SHA_RE, MARKER_RE, SUITE_RULE, comment_marker, head_sha_marker, is_suite_key

log = logging.getLogger("axl_action.github")

MAX_COMMENT_CHARS = 65_536
"""GitHub's documented limit ("Body is too long (maximum is 65536 characters)"), in code points."""
GITHUB_ACTIONS_LOGIN = "github-actions[bot]"

CommentMode = Literal["always", "on-change", "on-failure", "off"]
"""The action's ``comment`` input: when the sticky comment is created or updated."""
COMMENT_MODES: tuple[CommentMode, ...] = typing.get_args(CommentMode)
GateVerdict = Literal["pass", "warn", "fail"]

WRITE_HINT = (
    "the token cannot write PR comments: add `pull-requests: write` to the workflow's `permissions:`; "
    "on pull requests from forks the token is read-only, so post the comment artifact from a "
    "`workflow_run` workflow instead"
)


class CommentTooLongError(GitHubError):
    """The rendered comment exceeds GitHub's 65,536-character limit."""

    code = "COMMENT_TOO_LONG"


class PullRequestComment(BaseModel):
    """An issue comment on the PR (the fields we use)."""

    model_config = ConfigDict(frozen=True)

    id: int
    """Comment id."""
    html_url: str
    """Link to the comment."""
    body: str
    """Markdown body."""
    user_login: str
    """Author login (``github-actions[bot]`` for the workflow token)."""
    created_at: datetime
    """Creation time."""
    updated_at: datetime
    """Last edit time."""
    minimized: bool = False
    """Hidden by a maintainer (e.g. as outdated); such a comment is no longer updated."""

    @property
    def suite(self) -> str | None:
        """The suite key in our marker, or None if this is not one of our comments."""
        m = MARKER_RE.search(self.body)
        return m.group(1) if m else None

    @property
    def head_sha(self) -> str | None:
        """The head commit the comment was written for."""
        m = HEAD_SHA_RE.search(self.body)
        return m.group(1).lower() if m else None

    @classmethod
    def from_api(cls, data: dict[str, Any]) -> PullRequestComment:
        return cls(
            id=data["id"],
            html_url=data.get("html_url", ""),
            body=data.get("body") or "",
            user_login=(data.get("user") or {}).get("login", ""),
            created_at=data["created_at"],
            updated_at=data["updated_at"],
            minimized=bool(data.get("minimized")),
        )


class CommentResult(BaseModel):
    """What :func:`upsert_sticky_comment` did."""

    model_config = ConfigDict(frozen=True)

    action: Literal["created", "updated", "skipped"]
    """``skipped`` when nothing was written (head moved on, or identical body)."""
    comment_id: int | None = None
    """The sticky comment's id (existing one when skipped, if any)."""
    url: str | None = None
    """Link to the comment."""
    reason: str
    """Why, in a sentence for the log and the job summary."""


def compose_comment_body(body: str, *, suite: str, head_sha: str) -> str:
    """Prefix the rendered ``body`` with the hidden marker and head-SHA lines.

    Raises :class:`CommentTooLongError` when the result exceeds 65,536 characters: the
    renderer is expected to trim (keeping the table, dropping detail) before calling this.
    """
    if not re.fullmatch(r"[0-9a-fA-F]{7,64}", head_sha):
        raise GitHubError(f"Head SHA {head_sha!r} is not a hex commit id", hint="pass pull_request.head.sha")
    _check_suite(suite)
    text = f"{comment_marker(suite)}\n{head_sha_marker(head_sha)}\n{body}"
    if len(text) > MAX_COMMENT_CHARS:
        raise CommentTooLongError(
            f"The PR comment is {len(text)} characters, over GitHub's limit of {MAX_COMMENT_CHARS}",
            hint="render a shorter comment (fewer item rows) and put the detail in the job summary or report",
        )
    return text


def _check_suite(suite: str) -> None:
    # The action's settings hold the key to this rule already; a caller of this layer that did
    # not would otherwise find no comment, or another suite's.
    if not is_suite_key(suite):
        raise GitHubError(
            f"Suite key {suite!r} cannot be used in the comment marker", hint=f"use {SUITE_RULE}"
        )


def should_post(mode: CommentMode, verdict: GateVerdict, changed: bool, existing: bool) -> bool:
    """Decide whether to create or update the sticky comment.

    Args:
        mode: the action's ``comment`` input.
        verdict: ``fail`` if any gate failed, ``warn`` if one warned, else ``pass``.
        changed: the comparison found something worth telling (a significant score change,
            a gate not passing, new errors, a cost change); the orchestrator decides.
        existing: a sticky comment for this suite already exists on the PR.

    Rules: ``off`` never posts; ``always`` always does. ``on-failure`` posts when the verdict
    is ``fail``; ``on-change`` when ``changed``. Both also post whenever a comment already
    exists, so an earlier "failed" or "changed" comment is brought up to date instead of
    being left stale.
    """
    if mode == "off":
        return False
    if mode == "always" or existing:
        return True
    if mode == "on-failure":
        return verdict == "fail"
    if mode == "on-change":
        return changed
    raise GitHubError(f"Unknown comment mode {mode!r}", hint="use always, on-change, on-failure or off")


def resolve_comment_author(client: GitHubApi, configured: str | None = None) -> str:
    """The login our comments are written as.

    ``configured`` wins (needed for App tokens). Otherwise ``GET /user`` names a PAT's user;
    for ``GITHUB_TOKEN`` that call answers 403, and the author is ``github-actions[bot]``.
    """
    if configured:
        return configured
    try:
        data = client.get_json("/user")
    except GitHubPermissionError:
        return GITHUB_ACTIONS_LOGIN
    login = data.get("login") if isinstance(data, dict) else None
    return login if isinstance(login, str) and login else GITHUB_ACTIONS_LOGIN


def find_sticky_comment(
    client: GitHubApi, repo: str, pr_number: int, *, suite: str, authors: Collection[str]
) -> PullRequestComment | None:
    """The newest non-minimized comment with our marker for ``suite`` written by one of ``authors``."""
    _check_suite(suite)
    wanted = {a.casefold() for a in authors}
    found: PullRequestComment | None = None
    for item in client.paginate(
        f"{repo_path(repo)}/issues/{int(pr_number)}/comments",
        per_page=100,
        permission_hint="the token cannot read PR comments: add `pull-requests: read` (or write) to `permissions:`",
    ):
        comment = PullRequestComment.from_api(item)
        # A comment someone hid stays hidden: like sticky-pull-request-comment, start afresh.
        mine = comment.suite == suite and comment.user_login.casefold() in wanted and not comment.minimized
        if mine and (found is None or comment.id > found.id):
            found = comment
    return found


def current_head_sha(client: GitHubApi, repo: str, pr_number: int) -> str:
    """The PR's head commit right now (``GET /pulls/{n}``)."""
    data = client.get_json(
        f"{repo_path(repo)}/pulls/{int(pr_number)}",
        permission_hint="the token cannot read the pull request: add `pull-requests: read` to `permissions:`",
    )
    sha = (data.get("head") or {}).get("sha") if isinstance(data, dict) else None
    if not isinstance(sha, str):
        raise GitHubError(
            f"GET /pulls/{pr_number} returned no head SHA", hint="is GITHUB_API_URL a GitHub API?"
        )
    return sha.lower()


def upsert_sticky_comment(
    client: GitHubApi,
    repo: str,
    pr_number: int,
    body: str,
    *,
    suite: str,
    head_sha: str,
    author: str | None = None,
) -> CommentResult:
    """Create or update the sticky comment for ``suite`` with the rendered ``body``.

    ``head_sha`` is the PR head commit this run evaluated (``pull_request.head.sha``, not
    ``GITHUB_SHA``, which is the merge commit). If the PR's head has moved on, nothing is
    written. ``author`` is the login to match (see :func:`resolve_comment_author`).

    Raises :class:`GitHubPermissionError` when the token may not write (fork PRs) and
    :class:`CommentTooLongError` when the body is over the limit.
    """
    text = compose_comment_body(body, suite=suite, head_sha=head_sha)
    ours = head_sha.lower()
    current = current_head_sha(client, repo, pr_number)
    login = author or resolve_comment_author(client)
    existing = find_sticky_comment(client, repo, pr_number, suite=suite, authors=[login])
    if current != ours:
        return CommentResult(
            action="skipped",
            comment_id=existing.id if existing else None,
            url=existing.html_url if existing else None,
            reason=f"the PR head moved to {current[:7]} after this run evaluated {ours[:7]}; "
            "the newer run will update the comment",
        )
    if existing is not None and existing.body == text:
        return CommentResult(
            action="skipped",
            comment_id=existing.id,
            url=existing.html_url,
            reason="the comment is already up to date",
        )
    try:
        if existing is None:
            data = client.post_json(f"{repo_path(repo)}/issues/{int(pr_number)}/comments", {"body": text})
            action: Literal["created", "updated"] = "created"
            reason = "no sticky comment for this suite yet"
        else:
            data = client.patch_json(f"{repo_path(repo)}/issues/comments/{existing.id}", {"body": text})
            action = "updated"
            reason = f"updated the sticky comment (was for {existing.head_sha[:7] if existing.head_sha else 'an unknown commit'})"
    except GitHubPermissionError as exc:
        raise GitHubPermissionError(
            exc.message,
            hint=WRITE_HINT,
            status=exc.status,
            documentation_url=exc.documentation_url,
            request_id=exc.request_id,
        ) from None
    comment = PullRequestComment.from_api(data)
    log.info("PR #%d comment %s: %s", pr_number, action, comment.html_url)
    return CommentResult(action=action, comment_id=comment.id, url=comment.html_url, reason=reason)
