"""What the orchestrator needs from the outside world, as narrow protocols.

The entrypoint passes the real objects (``github.workflow_commands``, ``github.artifact_upload``,
...); tests pass recording fakes. Keeping the surface this small is what lets the orchestrator
stay free of environment variables, files under ``/github`` and network calls.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from typing import Protocol, TypedDict, Unpack

from axl_action.action.evalstep import EvalRequest, EvalRun
from axl_action.github.actions_cache import RestoredCache
from axl_action.github.artifact_upload import UploadedArtifact
from axl_action.github.comments import CommentMode, CommentResult, GateVerdict


class Commands(Protocol):
    """Workflow commands and environment files of the current step (``github.workflow_commands``)."""

    def group(self, title: str) -> AbstractContextManager[object]:
        """A collapsible ``::group::`` section of the log."""
        ...

    def stop_commands(self) -> AbstractContextManager[object]:
        """While open, the runner ignores ``::`` commands in the log (untrusted output)."""
        ...

    def echo(self, message: str) -> None:
        """A plain line in the log (no workflow command)."""
        ...

    def error(self, message: str, *, title: str | None = None) -> None:
        """An ``::error`` annotation."""
        ...

    def warning(self, message: str, *, title: str | None = None) -> None:
        """A ``::warning`` annotation."""
        ...

    def notice(self, message: str, *, title: str | None = None) -> None:
        """A ``::notice`` annotation."""
        ...

    def set_output(self, name: str, value: str) -> None:
        """Write one step output (``$GITHUB_OUTPUT``)."""
        ...

    def append_summary(self, markdown: str) -> None:
        """Append to the job summary (``$GITHUB_STEP_SUMMARY``)."""
        ...


class Uploader(Protocol):
    """Uploads an artifact of the current run (``github.artifact_upload.ArtifactUploader``)."""

    def upload(
        self,
        name: str,
        files: Mapping[str, bytes],
        *,
        retention_days: int | None = None,
        overwrite: bool = False,
        strategy: int = zlib.Z_DEFAULT_STRATEGY,
    ) -> UploadedArtifact:
        """Upload ``files`` (archive path → content) as artifact ``name``, zipped with zlib's
        deflate ``strategy``."""
        ...


class CacheService(Protocol):
    """The GitHub Actions cache (``github.actions_cache.ActionsCache``): where the response
    cache lives between workflow runs."""

    def restore(
        self, key: str, restore_keys: Sequence[str], version: str, *, limit: int
    ) -> RestoredCache | None:
        """The entry of ``key``, else the newest under a restore prefix; ``None`` on a miss."""
        ...

    def save(self, key: str, version: str, data: bytes) -> int | None:
        """Store ``data`` under ``key`` in this job's scope; ``None`` when already saved."""
        ...


class OutputFiles(Protocol):
    """Keeps a file where a later step of the job can open it (``action.workspace_files``)."""

    def keep(self, name: str, data: bytes) -> str:
        """Write ``name``; return the path to put in a step output."""
        ...


RunEvals = Callable[[EvalRequest], EvalRun]
Clock = Callable[[], datetime]


class CommentRequest(TypedDict):
    """The keyword arguments of :meth:`Commenter.upsert`, written once for the port and the
    commenter that implements it (``action.commenting.StickyCommenter``)."""

    pr_number: int
    body: str
    head_sha: str
    comment_mode: CommentMode
    verdict: GateVerdict
    changed: bool
    """The comparison found something worth telling (``github.comments.should_post``)."""


class Commenter(Protocol):
    """Keeps the one sticky PR comment of a suite (``action.commenting.StickyCommenter``)."""

    def upsert(self, **request: Unpack[CommentRequest]) -> CommentResult:
        """Create or update the comment as ``comment_mode`` allows; a read-only token raises
        ``GitHubPermissionError``."""
        ...
