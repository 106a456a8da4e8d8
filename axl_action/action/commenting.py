"""The sticky PR comment as the action uses it: ``comment`` mode first, then the upsert.

A thin layer over ``github.comments``: it decides with ``should_post`` (which needs to know
whether a comment already exists, a read the fork token can still do) and only then writes,
so a read-only token fails at the write and the caller can store the comment for the relay.
"""

from __future__ import annotations

from dataclasses import dataclass

from axl_action.github.api import GitHubApi
from axl_action.github.comments import (
    CommentMode,
    CommentResult,
    GateVerdict,
    find_sticky_comment,
    resolve_comment_author,
    should_post,
    upsert_sticky_comment,
)


@dataclass
class StickyCommenter:
    """Writes this suite's sticky comment on PRs of ``repo``."""

    client: GitHubApi
    repo: str
    suite: str
    author: str | None = None

    def upsert(
        self,
        *,
        pr_number: int,
        body: str,
        head_sha: str,
        comment_mode: CommentMode,
        verdict: GateVerdict,
        changed: bool,
    ) -> CommentResult:
        """Post or update as ``comment_mode`` allows; raises GitHubPermissionError on a read-only token."""
        if comment_mode == "off":
            return CommentResult(action="skipped", reason="comment: off")
        login = self.author or resolve_comment_author(self.client)
        self.author = login
        existing = None
        if comment_mode != "always":
            existing = find_sticky_comment(
                self.client, self.repo, pr_number, suite=self.suite, authors=[login]
            )
        if not should_post(comment_mode, verdict, changed, existing is not None):
            why = "no gate failed" if comment_mode == "on-failure" else "nothing changed"
            return CommentResult(action="skipped", reason=f"comment: {comment_mode} and {why}")
        return upsert_sticky_comment(
            self.client, self.repo, pr_number, body, suite=self.suite, head_sha=head_sha, author=login
        )
