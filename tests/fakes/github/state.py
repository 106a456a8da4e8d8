"""The state the fake GitHub's three servers share, their lifecycle and base URLs, and what
every area uses: ids, signed blob URLs, runtime tokens' signatures, pagination, repositories,
the Twirp services' key casing."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import re
import secrets
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from http.server import ThreadingHTTPServer
from typing import Any
from urllib.parse import quote, urlencode

from tests.fakes import github_objects as obj
from tests.fakes.actions_cache import FakeCacheService
from tests.fakes.github.records import (
    FakeArtifact,
    FakeComment,
    FakeCommit,
    FakePull,
    FakeRepo,
    FakeRun,
    FakeToken,
    Fault,
    RecordedExchange,
    RecordedRequest,
)
from tests.fakes.github.wire import _b64url, _b64url_decode


class GitHubState:
    """The fake's state; the areas are mixins over it (``server.FakeGitHub``)."""

    def __init__(self, *, twirp_casing: str = "snake", legacy_results_backend: bool = False) -> None:
        self.twirp_casing = twirp_casing
        """``snake`` (GitHub's results service) or ``camel`` (act/Gitea) response keys."""
        self.legacy_results_backend = legacy_results_backend
        """Mimic act: reject ``mime_type`` in CreateArtifact as an unknown field."""
        self.lock = threading.RLock()
        self.repos: dict[str, FakeRepo] = {}
        self.commits: dict[str, FakeCommit] = {}
        self.runs: dict[int, FakeRun] = {}
        self.artifacts: dict[int, FakeArtifact] = {}
        self.comments: dict[int, FakeComment] = {}
        self.pulls: dict[tuple[str, int], FakePull] = {}
        self.tokens: dict[str, FakeToken] = {}
        self.faults: list[Fault] = []
        self.requests: list[RecordedRequest] = []
        self.exchanges: list[RecordedExchange] = []
        self.blobs: dict[str, bytes] = {}
        self.blob_types: dict[str, str] = {}
        self.staged_blocks: dict[str, dict[str, bytes]] = {}
        self.pending_uploads: dict[str, dict[str, Any]] = {}  # blob key -> create request info
        self.ratelimit_remaining = 1000
        self._ids = iter(range(1001, 10**9))
        self._sas_key = secrets.token_bytes(16)
        self._jwt_key = secrets.token_bytes(16)
        self._servers: dict[str, ThreadingHTTPServer] = {}
        self._threads: list[threading.Thread] = []
        self.now: Callable[[], datetime] = lambda: datetime.now(UTC)
        self.cache = FakeCacheService(self)
        """The Actions cache service (``tests/fakes/actions_cache.py``)."""

    # -- base URLs --------------------------------------------------------------------------

    def _base(self, name: str) -> str:
        host, port = self._servers[name].server_address[:2]
        return f"http://{host!s}:{port}"

    @property
    def api_url(self) -> str:
        return self._base("api")

    @property
    def blob_url(self) -> str:
        return self._base("blob")

    @property
    def results_url(self) -> str:
        return self._base("results") + "/"

    def next_id(self) -> int:
        with self.lock:
            return next(self._ids)

    # -- signing ----------------------------------------------------------------------------

    def sign_blob_url(self, key: str, *, ttl: int = 60, write: bool = False) -> str:
        expiry = int(time.time()) + ttl
        perm = "cw" if write else "r"
        sig = self._sas_sig(key, expiry, perm)
        return f"{self.blob_url}/blobs/{quote(key)}?sv=2023-11-03&se={expiry}&sp={perm}&sig={quote(sig)}"

    def _sas_sig(self, key: str, expiry: int, perm: str) -> str:
        mac = hmac.new(self._sas_key, f"{key}\n{expiry}\n{perm}".encode(), hashlib.sha256).digest()
        return base64.b64encode(mac).decode()

    def _verify_jwt(self, token: str) -> dict[str, Any] | None:
        parts = token.split(".")
        if len(parts) != 3:
            return None
        expected = hmac.new(self._jwt_key, f"{parts[0]}.{parts[1]}".encode(), hashlib.sha256).digest()
        if not hmac.compare_digest(_b64url(expected), parts[2]):
            return None
        claims: dict[str, Any] = json.loads(_b64url_decode(parts[1]))
        if claims.get("exp", 0) < time.time():
            return None
        return claims

    # -- shared by the REST areas -----------------------------------------------------------

    def _repo(self, m: re.Match[str]) -> FakeRepo | None:
        return self.repos.get(f"{m['owner']}/{m['repo']}")

    def _paginate(
        self, items: list[Any], query: dict[str, list[str]], path: str
    ) -> tuple[list[Any], dict[str, str]]:
        per_page = max(1, min(100, int(query.get("per_page", ["30"])[0] or 30)))
        page = max(1, int(query.get("page", ["1"])[0] or 1))
        last = max(1, -(-len(items) // per_page))
        chunk = items[(page - 1) * per_page : page * per_page]
        links = []
        other = {k: v for k, v in query.items() if k not in ("page", "per_page")}

        def link(p: int, rel: str) -> str:
            qs = urlencode({**other, "per_page": [str(per_page)], "page": [str(p)]}, doseq=True)
            return f'<{self.api_url}{path}?{qs}>; rel="{rel}"'

        if page > 1:
            links += [link(page - 1, "prev"), link(1, "first")]
        if page < last:
            links += [link(page + 1, "next"), link(last, "last")]
        return chunk, ({"link": ", ".join(links)} if links else {})

    def _repo_obj(self, repo: FakeRepo, schema: str = "minimal-repository") -> dict[str, Any]:
        return obj.repository(
            self.api_url,
            schema,
            repo_id=repo.id,
            owner=repo.owner,
            name=repo.name,
            default_branch=repo.default_branch,
            private=repo.private,
            fork=repo.fork,
        )

    def _out(self, payload: dict[str, Any]) -> dict[str, Any]:
        if self.twirp_casing == "snake":
            return payload

        def camel(k: str) -> str:
            head, *rest = k.split("_")
            return head + "".join(p.title() for p in rest)

        return {
            camel(k): ([self._out(i) for i in v] if isinstance(v, list) else v) for k, v in payload.items()
        }
