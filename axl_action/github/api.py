"""What the rest of the code needs from a GitHub REST client, as a Protocol.

``github.client.GitHubClient`` is the real one. Everything above it (baseline lookup,
artifact download, sticky comments, the relay checks) is typed against :class:`GitHubApi`,
so a test can hand in a small fake that answers the few calls it cares about.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Protocol

import requests

from axl_action.retry import Retrier


class GitHubApi(Protocol):
    """The REST calls the action makes (see ``github.client.GitHubClient`` for the semantics)."""

    user_agent: str
    """Sent on requests that leave the API host (blob downloads)."""
    timeout: float
    """Per-request timeout in seconds, reused for blob downloads."""
    retrier: Retrier
    """The layer's one retry rule, reused for blob downloads."""

    def request(
        self,
        method: str,
        path_or_url: str,
        *,
        params: Mapping[str, str | int] | None = None,
        json: Any = None,
        headers: Mapping[str, str] | None = None,
        expect_redirect: bool = False,
        permission_hint: str | None = None,
    ) -> requests.Response:
        """One request with retries; raises ``GitHubError`` subclasses."""
        ...

    def get_json(self, path: str, params: Mapping[str, str | int] | None = None, **kw: Any) -> Any:
        """GET and decode the JSON body."""
        ...

    def post_json(self, path: str, body: Any, **kw: Any) -> Any:
        """POST a JSON body and decode the JSON answer."""
        ...

    def patch_json(self, path: str, body: Any, **kw: Any) -> Any:
        """PATCH a JSON body and decode the JSON answer."""
        ...

    def paginate(
        self,
        path: str,
        params: Mapping[str, str | int] | None = None,
        *,
        items_key: str | None = None,
        per_page: int = 100,
        max_items: int | None = None,
        permission_hint: str | None = None,
    ) -> Iterator[Any]:
        """Every item of a paginated list."""
        ...
