"""Errors raised by the GitHub layer.

    AxlError
    └── GitHubError                 the GitHub API (or the artifact service) refused or failed
        ├── GitHubPermissionError   401/403/404 that more permissions (or a non-fork run) would fix
        ├── GitHubRateLimitError    still rate limited after the bounded retries
        └── ArtifactError           an artifact that cannot be found, downloaded, unpacked or uploaded
            └── ArtifactExpiredError  410 Gone: the artifact outlived its retention period

Messages never contain the token: the client builds them from the response body, the
request method and the URL path only, and runs them through ``redact`` as a last guard.
"""

from __future__ import annotations

from axl_action.errors import AxlError


class GitHubError(AxlError):
    """The GitHub API (or the artifacts service) refused a request or kept failing."""

    code = "GITHUB"

    def __init__(
        self,
        message: str,
        *,
        hint: str | None = None,
        status: int | None = None,
        documentation_url: str | None = None,
        request_id: str | None = None,
    ) -> None:
        super().__init__(message, hint=hint)
        self.status = status
        """HTTP status of the failing response; None for network errors."""
        self.documentation_url = documentation_url
        """The ``documentation_url`` GitHub put in the error body, if any."""
        self.request_id = request_id
        """The ``x-github-request-id`` header: quote it when contacting GitHub support."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}(status={self.status!r}, message={self.message!r})"


class GitHubPermissionError(GitHubError):
    """401, 403 (not a rate limit) or 404: the token may not do this.

    Callers react to it: a fork PR's read-only token cannot comment, so the orchestrator
    stores the comment as an artifact for a ``workflow_run`` relay instead.
    """

    code = "GITHUB_PERMISSION"


class GitHubRateLimitError(GitHubError):
    """Still rate limited after the bounded retries, or the reset is too far away to wait for."""

    code = "GITHUB_RATE_LIMIT"


class ArtifactError(GitHubError):
    """An artifact that cannot be listed, downloaded, unpacked or uploaded."""

    code = "ARTIFACT"


class ArtifactExpiredError(ArtifactError):
    """The artifact has expired (410 Gone, or ``expired: true`` in the listing)."""

    code = "ARTIFACT_EXPIRED"


class CacheServiceError(GitHubError):
    """The GitHub Actions cache service (Twirp ``CacheService``) or its blob storage failed."""

    code = "CACHE_SERVICE"


def redact(text: str, *secrets: str | None) -> str:
    """``text`` by the one redaction rule (:mod:`axl_action.redaction`), with ``secrets``
    registered first: every derived form of a token (URL-encoded, base64, runs of it) is
    hidden, not only the raw value."""
    from axl_action.redaction import SECRETS

    SECRETS.add_all([s for s in secrets if s])
    return SECRETS.redact(text)
