"""A loopback fake of the parts of GitHub the action talks to.

Three real HTTP servers on 127.0.0.1 (ephemeral ports), sharing one in-memory state:

* ``api``: the REST API (repos, workflow runs, artifacts, issue comments, pulls, compare,
  ``GET /user``). Answers carry GitHub's headers (``x-ratelimit-*``,
  ``x-github-request-id``, ``x-github-api-version-selected``) and error bodies
  (``{"message", "documentation_url", "status"}``). Artifact downloads answer ``302`` to
  the blob host, or ``410`` once the artifact has expired.
* ``blob``: an Azure-Blob-like store at a *different port* (so a different origin). It
  serves downloads and accepts Put Block / Put Block List / Put Blob uploads against
  HMAC-signed, expiring URLs, and **rejects any request that carries Authorization**, as
  Azure does.
* ``results``: the Actions cache Twirp service (``tests/fakes/actions_cache.py``) and the artifacts v4 Twirp service (``CreateArtifact``, ``FinalizeArtifact``,
  ``ListArtifacts``, ``GetSignedArtifactURL``, ``DeleteArtifact``). It verifies the runtime
  JWT, parses requests strictly (proto field names, unknown fields rejected, int64 as
  strings), answers in snake_case (GitHub) or camelCase (act/Gitea), and a finalized upload
  shows up as a REST artifact of the run that owns the backend IDs.

Tests seed state with ``add_*`` methods, inject faults with ``fail_next`` and friends, and
assert on ``requests`` (every request each server saw) and ``exchanges`` (API request plus
the response sent, for OpenAPI validation).

Usage::

    with FakeGitHub() as gh:
        repo = gh.add_repo("octo", "evals")
        token = gh.add_token(login="github-actions[bot]", user_type="Bot", write=True)
        client = GitHubClient(gh.api_url, token)
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import io
import json
import re
import secrets
import threading
import time
import traceback
import uuid
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, quote, unquote, urlencode, urlsplit
from xml.etree import ElementTree

from tests.fakes import github_objects as obj
from tests.fakes.actions_cache import FakeCacheService

DOCS = "https://docs.github.com/rest"
TWIRP_PREFIX = "/twirp/github.actions.results.api.v1.ArtifactService/"
CACHE_PREFIX = "/twirp/github.actions.results.api.v1.CacheService/"
FORBIDDEN_INTEGRATION = "Resource not accessible by integration"


# -- state ------------------------------------------------------------------------------------


@dataclass
class FakeRepo:
    owner: str
    name: str
    id: int
    default_branch: str = "main"
    private: bool = False
    fork: bool = False

    @property
    def full_name(self) -> str:
        return f"{self.owner}/{self.name}"


@dataclass
class FakeCommit:
    sha: str
    parents: list[str]
    date: datetime
    message: str = "commit"


@dataclass
class FakeRun:
    id: int
    repo: FakeRepo
    head_branch: str
    head_sha: str
    event: str
    status: str
    conclusion: str | None
    created_at: datetime
    workflow_path: str
    workflow_id: int
    head_repo_id: int
    run_attempt: int = 1
    run_backend_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    job_backend_id: str = field(default_factory=lambda: str(uuid.uuid4()))


@dataclass
class FakeArtifact:
    id: int
    repo: FakeRepo
    name: str
    data: bytes
    run: FakeRun | None
    created_at: datetime
    expires_at: datetime
    expired: bool = False
    digest: str | None = None
    content_type: str = "application/zip"


@dataclass
class FakeComment:
    id: int
    repo: FakeRepo
    issue_number: int
    body: str
    login: str
    user_type: str
    created_at: datetime
    updated_at: datetime
    minimized_reason: str | None = None  # set to e.g. "outdated" to hide the comment


@dataclass
class FakePull:
    number: int
    repo: FakeRepo
    head_sha: str
    head_ref: str
    base_sha: str
    base_ref: str
    head_repo: FakeRepo
    state: str = "open"
    title: str = "Change things"


@dataclass
class FakeToken:
    login: str
    user_type: str
    write: bool
    installation: bool
    user_id: int


@dataclass
class Fault:
    """A canned response for the next ``count`` matching requests on ``server``."""

    status: int
    headers: dict[str, str]
    body: bytes
    count: int
    server: str = "api"
    method: str | None = None
    path: str | None = None  # a regex searched in the request path

    def matches(self, server: str, method: str, path: str) -> bool:
        return (
            self.count > 0
            and server == self.server
            and (self.method is None or self.method == method)
            and (self.path is None or re.search(self.path, path) is not None)
        )


@dataclass
class RecordedRequest:
    server: str
    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]  # lower-cased names
    body: bytes

    @property
    def url_path_and_query(self) -> str:
        return self.path + ("?" + urlencode(self.query, doseq=True) if self.query else "")


@dataclass
class RecordedExchange:
    request: RecordedRequest
    status: int
    headers: dict[str, str]
    body: bytes


@dataclass
class _Response:
    status: int
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)


def _json(status: int, payload: Any, headers: dict[str, str] | None = None) -> _Response:
    hdrs = {"content-type": "application/json; charset=utf-8"}
    hdrs.update(headers or {})
    return _Response(status, json.dumps(payload).encode(), hdrs)


def _error(status: int, message: str, doc: str = DOCS, **extra: Any) -> _Response:
    return _json(status, {"message": message, "documentation_url": doc, "status": str(status), **extra})


class FakeGitHub:
    """The fake; a context manager that starts and stops the three servers."""

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

    # -- lifecycle --------------------------------------------------------------------------

    def start(self) -> FakeGitHub:
        for name in ("api", "blob", "results"):
            server = ThreadingHTTPServer(("127.0.0.1", 0), _make_handler(self, name))
            server.daemon_threads = True
            thread = threading.Thread(
                target=server.serve_forever, args=(0.02,), name=f"fake-github-{name}", daemon=True
            )
            thread.start()
            self._servers[name] = server
            self._threads.append(thread)
        return self

    def stop(self) -> None:
        for server in self._servers.values():
            server.shutdown()
            server.server_close()
        for thread in self._threads:
            thread.join(timeout=5)
        self._servers.clear()
        self._threads.clear()

    def __enter__(self) -> FakeGitHub:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

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

    # -- seeding ----------------------------------------------------------------------------

    def next_id(self) -> int:
        with self.lock:
            return next(self._ids)

    def add_repo(self, owner: str = "octo", name: str = "evals", **kw: Any) -> FakeRepo:
        repo = FakeRepo(owner, name, self.next_id(), **kw)
        self.repos[repo.full_name] = repo
        return repo

    def add_token(
        self,
        token: str | None = None,
        *,
        login: str = "github-actions[bot]",
        user_type: str = "Bot",
        write: bool = True,
        installation: bool = True,
    ) -> str:
        """Register a token. ``installation`` tokens (GITHUB_TOKEN) get 403 from ``GET /user``;
        ``write=False`` models a fork PR's read-only token."""
        token = token or ("ghs_" + secrets.token_hex(18))
        self.tokens[token] = FakeToken(login, user_type, write, installation, self.next_id())
        return token

    def add_commit(
        self, sha: str | None = None, parents: list[str] | None = None, *, date: datetime | None = None
    ) -> str:
        sha = sha or secrets.token_hex(20)
        self.commits[sha] = FakeCommit(sha, list(parents or []), date or self.now())
        return sha

    def add_chain(self, count: int, parent: str | None = None, *, start: datetime | None = None) -> list[str]:
        """A linear history of ``count`` commits (oldest first), one hour apart."""
        start = start or self.now() - timedelta(hours=count)
        shas: list[str] = []
        for i in range(count):
            parents = [shas[-1]] if shas else ([parent] if parent else [])
            shas.append(self.add_commit(parents=parents, date=start + timedelta(hours=i)))
        return shas

    def add_run(
        self,
        repo: FakeRepo,
        *,
        head_sha: str,
        head_branch: str = "main",
        event: str = "push",
        status: str = "completed",
        conclusion: str | None = "success",
        created_at: datetime | None = None,
        workflow_path: str = ".github/workflows/evals.yml",
        head_repo: FakeRepo | None = None,
    ) -> FakeRun:
        run = FakeRun(
            id=self.next_id(),
            repo=repo,
            head_branch=head_branch,
            head_sha=head_sha,
            event=event,
            status=status,
            conclusion=conclusion if status == "completed" else None,
            created_at=created_at or self.now(),
            workflow_path=workflow_path,
            workflow_id=abs(hash(workflow_path)) % 10**8,
            head_repo_id=(head_repo or repo).id,
        )
        self.runs[run.id] = run
        return run

    def add_artifact(
        self,
        run: FakeRun,
        name: str,
        data: bytes | dict[str, bytes],
        *,
        created_at: datetime | None = None,
        expired: bool = False,
        retention: timedelta = timedelta(days=90),
        digest: bool = True,
    ) -> FakeArtifact:
        """Attach an artifact to ``run``; a dict of files is zipped as upload-artifact does."""
        if isinstance(data, dict):
            data = make_zip(data)
        created = created_at or run.created_at + timedelta(minutes=5)
        art = FakeArtifact(
            id=self.next_id(),
            repo=run.repo,
            name=name,
            data=data,
            run=run,
            created_at=created,
            expires_at=created + retention,
            expired=expired,
            digest="sha256:" + hashlib.sha256(data).hexdigest() if digest else None,
        )
        self.artifacts[art.id] = art
        return art

    def add_pull(
        self,
        repo: FakeRepo,
        number: int,
        *,
        head_sha: str,
        base_sha: str,
        head_ref: str = "feature",
        base_ref: str = "main",
        head_repo: FakeRepo | None = None,
    ) -> FakePull:
        pull = FakePull(number, repo, head_sha, head_ref, base_sha, base_ref, head_repo or repo)
        self.pulls[(repo.full_name, number)] = pull
        return pull

    def add_comment(
        self,
        repo: FakeRepo,
        issue_number: int,
        body: str,
        *,
        login: str = "someone",
        user_type: str = "User",
        created_at: datetime | None = None,
    ) -> FakeComment:
        when = created_at or self.now()
        comment = FakeComment(self.next_id(), repo, issue_number, body, login, user_type, when, when)
        self.comments[comment.id] = comment
        return comment

    def runtime_token(
        self, run: FakeRun, *, scp: str | None = None, exp_in: int = 3600, ac: str | None = None
    ) -> str:
        """An ``ACTIONS_RUNTIME_TOKEN`` for ``run``: an HS256 JWT with the Results scope, and
        with ``ac`` the cache scopes (``tests.fakes.actions_cache.ac_claim``)."""
        claims: dict[str, Any] = {
            "scp": scp
            if scp is not None
            else f"Actions.ExampleScope Actions.Results:{run.run_backend_id}:{run.job_backend_id}",
            "exp": int(time.time()) + exp_in,
            "iss": "fake-github",
        }
        if ac is not None:
            claims["ac"] = ac
        header = _b64url(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
        payload = _b64url(json.dumps(claims).encode())
        sig = hmac.new(self._jwt_key, f"{header}.{payload}".encode(), hashlib.sha256).digest()
        return f"{header}.{payload}.{_b64url(sig)}"

    # -- faults -----------------------------------------------------------------------------

    def fail_next(
        self,
        count: int = 1,
        status: int = 500,
        *,
        server: str = "api",
        method: str | None = None,
        path: str | None = None,
        headers: dict[str, str] | None = None,
        message: str | None = None,
    ) -> Fault:
        body: bytes
        if server == "results":
            body = json.dumps(
                {"code": "internal" if status >= 500 else "unavailable", "msg": message or "boom"}
            ).encode()
        else:
            body = json.dumps(
                {"message": message or "Server Error", "documentation_url": DOCS, "status": str(status)}
            ).encode()
        fault = Fault(
            status,
            {"content-type": "application/json; charset=utf-8", **(headers or {})},
            body,
            count,
            server,
            method,
            path,
        )
        with self.lock:
            self.faults.append(fault)
        return fault

    def rate_limit_next(self, count: int = 1, *, retry_after: int = 1, **kw: Any) -> Fault:
        """429 with ``retry-after`` (what GitHub sends for abuse/secondary limits on some paths)."""
        return self.fail_next(
            count,
            429,
            headers={"retry-after": str(retry_after)},
            message="You have exceeded a secondary rate limit. Please wait a few minutes before you try again.",
            **kw,
        )

    def secondary_rate_limit_next(self, count: int = 1, *, retry_after: int | None = 2, **kw: Any) -> Fault:
        """403 secondary rate limit, with or without ``retry-after``."""
        headers = {"retry-after": str(retry_after)} if retry_after is not None else {}
        return self.fail_next(
            count,
            403,
            headers=headers,
            message="You have exceeded a secondary rate limit. Please wait a few minutes before you try again. "
            "If you reach out to GitHub Support for help, please include the request ID.",
            **kw,
        )

    def primary_rate_limit_next(self, count: int = 1, *, reset_in: int = 5, **kw: Any) -> Fault:
        """403 with ``x-ratelimit-remaining: 0`` and a reset ``reset_in`` seconds from now."""
        return self.fail_next(
            count,
            403,
            headers={
                "x-ratelimit-limit": "1000",
                "x-ratelimit-remaining": "0",
                "x-ratelimit-used": "1000",
                "x-ratelimit-reset": str(int(time.time()) + reset_in),
                "x-ratelimit-resource": "core",
            },
            message="API rate limit exceeded for installation ID 1.",
            **kw,
        )

    def _take_fault(self, server: str, method: str, path: str) -> Fault | None:
        with self.lock:
            for fault in self.faults:
                if fault.matches(server, method, path):
                    fault.count -= 1
                    return fault
        return None

    # -- inspection -------------------------------------------------------------------------

    def requests_to(
        self, server: str, method: str | None = None, path: str | None = None
    ) -> list[RecordedRequest]:
        """Recorded requests on one server, optionally filtered by method and path regex."""
        with self.lock:
            return [
                r
                for r in self.requests
                if r.server == server
                and (method is None or r.method == method)
                and (path is None or re.search(path, r.path))
            ]

    def comments_on(self, repo: FakeRepo, issue_number: int) -> list[FakeComment]:
        with self.lock:
            return sorted(
                (c for c in self.comments.values() if c.repo is repo and c.issue_number == issue_number),
                key=lambda c: c.id,
            )

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

    # -- REST objects -----------------------------------------------------------------------

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

    def _artifact_obj(self, art: FakeArtifact) -> dict[str, Any]:
        url = f"{self.api_url}/repos/{art.repo.full_name}/actions/artifacts/{art.id}"
        run = art.run
        return {
            "id": art.id,
            "node_id": f"MDg6QXJ0aWZhY3Q{art.id}",
            "name": art.name,
            "size_in_bytes": len(art.data),
            "url": url,
            "archive_download_url": url + "/zip",
            "expired": art.expired,
            "created_at": obj.iso(art.created_at),
            "expires_at": obj.iso(art.expires_at),
            "updated_at": obj.iso(art.created_at),
            "digest": art.digest,
            "workflow_run": None
            if run is None
            else {
                "id": run.id,
                "repository_id": run.repo.id,
                "head_repository_id": run.head_repo_id,
                "head_branch": run.head_branch,
                "head_sha": run.head_sha,
            },
        }

    def _run_obj(self, run: FakeRun) -> dict[str, Any]:
        base = f"{self.api_url}/repos/{run.repo.full_name}/actions/runs/{run.id}"
        head_repo = next((r for r in self.repos.values() if r.id == run.head_repo_id), run.repo)
        commit = self.commits.get(run.head_sha)
        return obj.overlay(
            obj.skeleton("workflow-run"),
            id=run.id,
            node_id=f"WFR_{run.id}",
            name="evals",
            head_branch=run.head_branch,
            head_sha=run.head_sha,
            path=run.workflow_path,
            display_title=f"run {run.id}",
            run_number=run.id % 1000,
            run_attempt=run.run_attempt,
            event=run.event,
            status=run.status,
            conclusion=run.conclusion,
            workflow_id=run.workflow_id,
            url=base,
            html_url=f"https://github.com/{run.repo.full_name}/actions/runs/{run.id}",
            pull_requests=[],
            created_at=obj.iso(run.created_at),
            updated_at=obj.iso(run.created_at + timedelta(minutes=3)),
            run_started_at=obj.iso(run.created_at),
            jobs_url=base + "/jobs",
            logs_url=base + "/logs",
            check_suite_url=f"{self.api_url}/repos/{run.repo.full_name}/check-suites/{run.id}",
            artifacts_url=base + "/artifacts",
            cancel_url=base + "/cancel",
            rerun_url=base + "/rerun",
            workflow_url=f"{self.api_url}/repos/{run.repo.full_name}/actions/workflows/{run.workflow_id}",
            head_commit={
                "id": run.head_sha,
                "tree_id": hashlib.sha1(run.head_sha.encode()).hexdigest(),
                "message": commit.message if commit else "commit",
                "timestamp": obj.iso(commit.date if commit else run.created_at),
                "author": {"name": "Octo Cat", "email": "octocat@example.com"},
                "committer": {"name": "Octo Cat", "email": "octocat@example.com"},
            },
            repository=self._repo_obj(run.repo),
            head_repository=self._repo_obj(head_repo),
        )

    def _comment_obj(self, c: FakeComment) -> dict[str, Any]:
        repo_api = f"{self.api_url}/repos/{c.repo.full_name}"
        token = next((t for t in self.tokens.values() if t.login == c.login), None)
        return {
            "id": c.id,
            "node_id": f"IC_{c.id}",
            "url": f"{repo_api}/issues/comments/{c.id}",
            "html_url": f"https://github.com/{c.repo.full_name}/pull/{c.issue_number}#issuecomment-{c.id}",
            "issue_url": f"{repo_api}/issues/{c.issue_number}",
            "body": c.body,
            "user": obj.user(self.api_url, c.login, token.user_id if token else 7, c.user_type),
            "created_at": obj.iso(c.created_at),
            "updated_at": obj.iso(c.updated_at),
            "author_association": "NONE" if c.user_type == "Bot" else "MEMBER",
            "minimized": {"reason": c.minimized_reason} if c.minimized_reason else None,
        }

    def _commit_obj(self, repo: FakeRepo, sha: str) -> dict[str, Any]:
        commit = self.commits[sha]
        api = f"{self.api_url}/repos/{repo.full_name}"
        person = {"name": "Octo Cat", "email": "octocat@example.com", "date": obj.iso(commit.date)}
        return obj.overlay(
            obj.skeleton("commit"),
            sha=sha,
            node_id=f"C_{sha[:12]}",
            url=f"{api}/commits/{sha}",
            html_url=f"https://github.com/{repo.full_name}/commit/{sha}",
            comments_url=f"{api}/commits/{sha}/comments",
            commit={
                "url": f"{api}/git/commits/{sha}",
                "author": person,
                "committer": person,
                "message": commit.message,
                "comment_count": 0,
                "tree": {"sha": hashlib.sha1(sha.encode()).hexdigest(), "url": f"{api}/git/trees/{sha}"},
            },
            author=obj.user(self.api_url, "octocat", 583231),
            committer=obj.user(self.api_url, "web-flow", 19864447),
            parents=[
                {
                    "sha": p,
                    "url": f"{api}/commits/{p}",
                    "html_url": f"https://github.com/{repo.full_name}/commit/{p}",
                }
                for p in commit.parents
            ],
        )

    def _pull_obj(self, pull: FakePull) -> dict[str, Any]:
        repo = pull.repo
        api = f"{self.api_url}/repos/{repo.full_name}"
        owner = obj.user(self.api_url, repo.owner, 1000 + repo.id)
        head_owner = obj.user(self.api_url, pull.head_repo.owner, 1000 + pull.head_repo.id)
        base = obj.skeleton("pull-request")
        return obj.overlay(
            base,
            id=pull.number * 1000 + repo.id,
            node_id=f"PR_{pull.number}",
            number=pull.number,
            state=pull.state,
            title=pull.title,
            body=None,
            url=f"{api}/pulls/{pull.number}",
            html_url=f"https://github.com/{repo.full_name}/pull/{pull.number}",
            issue_url=f"{api}/issues/{pull.number}",
            comments_url=f"{api}/issues/{pull.number}/comments",
            merge_commit_sha=None,
            user=owner,
            head={
                "label": f"{pull.head_repo.owner}:{pull.head_ref}",
                "ref": pull.head_ref,
                "sha": pull.head_sha,
                "user": head_owner,
                "repo": self._repo_obj(pull.head_repo, "repository"),
            },
            base={
                "label": f"{repo.owner}:{pull.base_ref}",
                "ref": pull.base_ref,
                "sha": pull.base_sha,
                "user": owner,
                "repo": self._repo_obj(repo, "repository"),
            },
            mergeable=None,
            merged=False,
        )

    # -- commit graph -----------------------------------------------------------------------

    def _ancestors(self, sha: str) -> list[str]:
        """``sha`` and its ancestors, nearest first (breadth-first)."""
        seen: list[str] = []
        queue = [sha]
        while queue:
            cur = queue.pop(0)
            if cur in seen or cur not in self.commits:
                continue
            seen.append(cur)
            queue.extend(self.commits[cur].parents)
        return seen

    # -- dispatch ---------------------------------------------------------------------------

    def handle(
        self, server: str, method: str, raw_path: str, headers: dict[str, str], body: bytes
    ) -> _Response:
        parts = urlsplit(raw_path)
        path = unquote(parts.path)
        query = parse_qs(parts.query, keep_blank_values=True)
        record = RecordedRequest(server, method, path, query, headers, body)
        with self.lock:
            self.requests.append(record)
        fault = self._take_fault(server, method, path)
        if fault is not None:
            resp = _Response(fault.status, fault.body, dict(fault.headers))
        elif server == "api":
            resp = self._api(method, path, query, headers, body)
        elif server == "blob":
            resp = self._blob(method, path, query, headers, body)
        else:
            resp = self._results(method, path, headers, body)
        if server == "api":
            resp.headers = {**self._api_headers(), **resp.headers}
            with self.lock:
                self.exchanges.append(RecordedExchange(record, resp.status, dict(resp.headers), resp.body))
        return resp

    def _api_headers(self) -> dict[str, str]:
        with self.lock:
            self.ratelimit_remaining = max(0, self.ratelimit_remaining - 1)
            remaining = self.ratelimit_remaining
        return {
            "x-github-api-version-selected": "2022-11-28",
            "x-github-media-type": "github.v3; format=json",
            "x-github-request-id": f"{secrets.token_hex(2).upper()}:{secrets.token_hex(3).upper()}:{secrets.token_hex(4).upper()}",
            "x-ratelimit-limit": "1000",
            "x-ratelimit-remaining": str(remaining),
            "x-ratelimit-used": str(1000 - remaining),
            "x-ratelimit-reset": str(int(time.time()) + 3600),
            "x-ratelimit-resource": "core",
        }

    # -- REST -------------------------------------------------------------------------------

    def _api(
        self, method: str, path: str, query: dict[str, list[str]], headers: dict[str, str], body: bytes
    ) -> _Response:
        if not headers.get("user-agent"):
            return _error(
                403,
                "Request forbidden by administrative rules. Please make sure your request has a User-Agent header",
            )
        auth = headers.get("authorization", "")
        scheme, _, token_value = auth.partition(" ")
        token = self.tokens.get(token_value) if scheme.lower() in ("bearer", "token") else None
        if token is None:
            return _error(401, "Bad credentials")
        for pattern, handler in self._routes():
            m = re.fullmatch(pattern, path)
            if m is None:
                continue
            with self.lock:
                return handler(method, m, query, token, body)
        return _error(404, "Not Found")

    def _routes(self) -> list[tuple[str, Callable[..., _Response]]]:
        r = r"/repos/(?P<owner>[^/]+)/(?P<repo>[^/]+)"
        return [
            (r"/user", self._r_user),
            (r + r"/actions/artifacts", self._r_artifacts),
            (r + r"/actions/artifacts/(?P<id>\d+)", self._r_artifact),
            (r + r"/actions/artifacts/(?P<id>\d+)/(?P<fmt>[^/]+)", self._r_artifact_download),
            (r + r"/actions/runs", self._r_runs),
            (r + r"/actions/workflows/(?P<wf>[^/]+)/runs", self._r_runs),
            (r + r"/actions/runs/(?P<id>\d+)", self._r_run),
            (r + r"/actions/runs/(?P<id>\d+)/artifacts", self._r_run_artifacts),
            (r + r"/issues/(?P<num>\d+)/comments", self._r_issue_comments),
            (r + r"/issues/comments/(?P<id>\d+)", self._r_comment),
            (r + r"/pulls/(?P<num>\d+)", self._r_pull),
            (r + r"/compare/(?P<basehead>.+)", self._r_compare),
            (r, self._r_repo),
        ]

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

    def _r_user(self, method: str, m: re.Match[str], query: Any, token: FakeToken, body: bytes) -> _Response:
        if method != "GET":
            return _error(404, "Not Found")
        if token.installation:
            return _error(
                403,
                FORBIDDEN_INTEGRATION,
                "https://docs.github.com/rest/users/users#get-the-authenticated-user",
            )
        return _json(200, obj.user(self.api_url, token.login, token.user_id, token.user_type))

    def _r_repo(self, method: str, m: re.Match[str], query: Any, token: FakeToken, body: bytes) -> _Response:
        repo = self._repo(m)
        if repo is None or method != "GET":
            return _error(404, "Not Found")
        return _json(200, self._repo_obj(repo, "full-repository"))

    def _r_artifacts(
        self, method: str, m: re.Match[str], query: dict[str, list[str]], token: FakeToken, body: bytes
    ) -> _Response:
        repo = self._repo(m)
        if repo is None or method != "GET":
            return _error(404, "Not Found")
        name = query.get("name", [None])[0]
        arts = [a for a in self.artifacts.values() if a.repo is repo and (name is None or a.name == name)]
        arts.sort(key=lambda a: (a.created_at, a.id), reverse=True)
        chunk, link = self._paginate(arts, query, f"/repos/{repo.full_name}/actions/artifacts")
        return _json(
            200, {"total_count": len(arts), "artifacts": [self._artifact_obj(a) for a in chunk]}, link
        )

    def _r_artifact(
        self, method: str, m: re.Match[str], query: Any, token: FakeToken, body: bytes
    ) -> _Response:
        repo = self._repo(m)
        art = self.artifacts.get(int(m["id"]))
        if repo is None or art is None or art.repo is not repo:
            return _error(404, "Not Found")
        if method == "GET":
            return _json(200, self._artifact_obj(art))
        if method == "DELETE":
            if not token.write:
                return _error(403, FORBIDDEN_INTEGRATION)
            del self.artifacts[art.id]
            return _Response(204)
        return _error(404, "Not Found")

    def _r_artifact_download(
        self, method: str, m: re.Match[str], query: Any, token: FakeToken, body: bytes
    ) -> _Response:
        repo = self._repo(m)
        art = self.artifacts.get(int(m["id"]))
        if method != "GET" or repo is None or art is None or art.repo is not repo or m["fmt"] != "zip":
            return _error(404, "Not Found")
        if art.expired:
            return _error(
                410,
                "Artifact has expired",
                "https://docs.github.com/rest/actions/artifacts#download-an-artifact",
            )
        key = (
            f"artifacts/{art.id}.zip"
            if art.content_type == "application/zip"
            else f"artifacts/{art.id}/{art.name}"
        )
        self.blobs[key] = art.data
        self.blob_types[key] = art.content_type
        return _Response(302, b"", {"location": self.sign_blob_url(key, ttl=60)})

    def _r_runs(
        self, method: str, m: re.Match[str], query: dict[str, list[str]], token: FakeToken, body: bytes
    ) -> _Response:
        repo = self._repo(m)
        if repo is None or method != "GET":
            return _error(404, "Not Found")
        runs = [r for r in self.runs.values() if r.repo is repo]
        wf = m.groupdict().get("wf")
        if wf is not None:
            runs = [r for r in runs if r.workflow_path.rsplit("/", 1)[-1] == wf or str(r.workflow_id) == wf]
            if not runs and not any(r.workflow_path.endswith("/" + wf) for r in self.runs.values()):
                return _error(404, "Not Found")

        def first(key: str) -> str | None:
            return query.get(key, [None])[0]

        if (branch := first("branch")) is not None:
            runs = [r for r in runs if r.head_branch == branch]
        if (event := first("event")) is not None:
            runs = [r for r in runs if r.event == event]
        if (status := first("status")) is not None:
            runs = [r for r in runs if status in (r.status, r.conclusion)]
        if (head_sha := first("head_sha")) is not None:
            runs = [r for r in runs if r.head_sha == head_sha]
        runs.sort(key=lambda r: (r.created_at, r.id), reverse=True)
        path = f"/repos/{repo.full_name}/actions/" + (f"workflows/{wf}/runs" if wf else "runs")
        chunk, link = self._paginate(runs, query, path)
        return _json(
            200, {"total_count": len(runs), "workflow_runs": [self._run_obj(r) for r in chunk]}, link
        )

    def _r_run(self, method: str, m: re.Match[str], query: Any, token: FakeToken, body: bytes) -> _Response:
        repo = self._repo(m)
        run = self.runs.get(int(m["id"]))
        if method != "GET" or repo is None or run is None or run.repo is not repo:
            return _error(404, "Not Found")
        return _json(200, self._run_obj(run))

    def _r_run_artifacts(
        self, method: str, m: re.Match[str], query: dict[str, list[str]], token: FakeToken, body: bytes
    ) -> _Response:
        repo = self._repo(m)
        run = self.runs.get(int(m["id"]))
        if method != "GET" or repo is None or run is None or run.repo is not repo:
            return _error(404, "Not Found")
        name = query.get("name", [None])[0]
        arts = [a for a in self.artifacts.values() if a.run is run and (name is None or a.name == name)]
        arts.sort(key=lambda a: a.id, reverse=query.get("direction", ["desc"])[0] != "asc")
        chunk, link = self._paginate(arts, query, f"/repos/{repo.full_name}/actions/runs/{run.id}/artifacts")
        return _json(
            200, {"total_count": len(arts), "artifacts": [self._artifact_obj(a) for a in chunk]}, link
        )

    def _r_issue_comments(
        self, method: str, m: re.Match[str], query: dict[str, list[str]], token: FakeToken, body: bytes
    ) -> _Response:
        repo = self._repo(m)
        number = int(m["num"])
        if repo is None or (repo.full_name, number) not in self.pulls:
            return _error(404, "Not Found")
        if method == "GET":
            comments = self.comments_on(repo, number)
            chunk, link = self._paginate(comments, query, f"/repos/{repo.full_name}/issues/{number}/comments")
            return _json(200, [self._comment_obj(c) for c in chunk], link)
        if method == "POST":
            if not token.write:
                return _error(
                    403,
                    FORBIDDEN_INTEGRATION,
                    "https://docs.github.com/rest/issues/comments#create-an-issue-comment",
                )
            text, err = _comment_body(body)
            if err is not None:
                return err
            comment = self.add_comment(repo, number, text, login=token.login, user_type=token.user_type)
            payload = self._comment_obj(comment)
            return _json(201, payload, {"location": payload["url"]})
        return _error(404, "Not Found")

    def _r_comment(
        self, method: str, m: re.Match[str], query: Any, token: FakeToken, body: bytes
    ) -> _Response:
        repo = self._repo(m)
        comment = self.comments.get(int(m["id"]))
        if repo is None or comment is None or comment.repo is not repo:
            return _error(404, "Not Found")
        if method == "GET":
            return _json(200, self._comment_obj(comment))
        if not token.write:
            return _error(
                403,
                FORBIDDEN_INTEGRATION,
                "https://docs.github.com/rest/issues/comments#update-an-issue-comment",
            )
        if method == "PATCH":
            text, err = _comment_body(body)
            if err is not None:
                return err
            comment.body = text
            comment.updated_at = self.now()
            return _json(200, self._comment_obj(comment))
        if method == "DELETE":
            del self.comments[comment.id]
            return _Response(204)
        return _error(404, "Not Found")

    def _r_pull(self, method: str, m: re.Match[str], query: Any, token: FakeToken, body: bytes) -> _Response:
        repo = self._repo(m)
        pull = self.pulls.get((f"{m['owner']}/{m['repo']}", int(m["num"])))
        if method != "GET" or repo is None or pull is None:
            return _error(404, "Not Found")
        return _json(200, self._pull_obj(pull))

    def _r_compare(
        self, method: str, m: re.Match[str], query: Any, token: FakeToken, body: bytes
    ) -> _Response:
        repo = self._repo(m)
        if method != "GET" or repo is None or "..." not in m["basehead"]:
            return _error(404, "Not Found")
        base, head = m["basehead"].split("...", 1)
        for sha in (base, head):
            if sha not in self.commits:
                return _error(404, f"No commit found for SHA: {sha}")
        head_anc = self._ancestors(head)
        base_anc = set(self._ancestors(base))
        merge_base = next((s for s in head_anc if s in base_anc), None)
        if merge_base is None:
            return _error(404, f"No common ancestor between {base} and {head}.")
        ahead = [s for s in head_anc if s not in base_anc]
        behind = [s for s in self._ancestors(base) if s not in set(head_anc)]
        if base == head:
            status = "identical"
        elif not behind:
            status = "ahead"
        elif not ahead:
            status = "behind"
        else:
            status = "diverged"
        api = f"{self.api_url}/repos/{repo.full_name}"
        return _json(
            200,
            obj.overlay(
                obj.skeleton("commit-comparison"),
                url=f"{api}/compare/{base}...{head}",
                html_url=f"https://github.com/{repo.full_name}/compare/{base}...{head}",
                permalink_url=f"https://github.com/{repo.full_name}/compare/{base}...{head}",
                diff_url=f"https://github.com/{repo.full_name}/compare/{base}...{head}.diff",
                patch_url=f"https://github.com/{repo.full_name}/compare/{base}...{head}.patch",
                base_commit=self._commit_obj(repo, base),
                merge_base_commit=self._commit_obj(repo, merge_base),
                status=status,
                ahead_by=len(ahead),
                behind_by=len(behind),
                total_commits=len(ahead),
                commits=[self._commit_obj(repo, s) for s in reversed(ahead)],
                files=[],
            ),
        )

    # -- blob store -------------------------------------------------------------------------

    def _blob(
        self, method: str, path: str, query: dict[str, list[str]], headers: dict[str, str], body: bytes
    ) -> _Response:
        if "authorization" in headers:
            # Azure refuses a foreign Authorization header even when the SAS is valid.
            return _xml_error(
                403,
                "AuthorizationFailure",
                "Server failed to authenticate the request. Make sure the value of Authorization header is formed correctly including the signature.",
            )
        if not path.startswith("/blobs/"):
            return _xml_error(404, "ResourceNotFound", "The specified resource does not exist.")
        key = path.removeprefix("/blobs/")
        q = {k: v[0] for k, v in query.items()}
        try:
            expiry = int(q.get("se", "0"))
        except ValueError:
            expiry = 0
        perm = q.get("sp", "")
        if not hmac.compare_digest(q.get("sig", ""), self._sas_sig(key, expiry, perm)):
            return _xml_error(403, "AuthenticationFailed", "Signature did not match.")
        if expiry < time.time():
            return _xml_error(403, "AuthenticationFailed", "Signed expiry time has passed.")
        if method == "GET":
            if "r" not in perm:
                return _xml_error(
                    403,
                    "AuthorizationPermissionMismatch",
                    "This request is not authorized to perform this operation using this permission.",
                )
            with self.lock:
                data = self.blobs.get(key)
            if data is None:
                return _xml_error(404, "BlobNotFound", "The specified blob does not exist.")
            content_type = self.blob_types.get(key, "application/zip")
            return _Response(200, data, {"content-type": content_type, "x-ms-blob-type": "BlockBlob"})
        if method != "PUT" or "w" not in perm:
            return _xml_error(
                403,
                "AuthorizationPermissionMismatch",
                "This request is not authorized to perform this operation using this permission.",
            )
        comp = q.get("comp")
        with self.lock:
            if comp == "block":
                block_id = q.get("blockid", "")
                staged = self.staged_blocks.setdefault(key, {})
                if not block_id or any(len(b) != len(block_id) for b in staged):
                    return _xml_error(
                        400,
                        "InvalidQueryParameterValue",
                        "Value for one of the query parameters specified in the request URI is invalid.",
                    )
                if headers.get("content-length") is None:
                    return _xml_error(411, "MissingContentLengthHeader", "Content-Length header is required.")
                staged[block_id] = body
                return _Response(201)
            if comp == "blocklist":
                try:
                    root = ElementTree.fromstring(body)
                except ElementTree.ParseError:
                    return _xml_error(400, "InvalidXmlDocument", "XML specified is not syntactically valid.")
                staged = self.staged_blocks.get(key, {})
                ids = [el.text or "" for el in root]
                if any(i not in staged for i in ids):
                    return _xml_error(400, "InvalidBlockList", "The specified block list is invalid.")
                self.blobs[key] = b"".join(staged[i] for i in ids)
                self.blob_types[key] = headers.get("x-ms-blob-content-type", "application/octet-stream")
                self.staged_blocks.pop(key, None)
                return _Response(201)
            if comp is None:
                if headers.get("x-ms-blob-type") != "BlockBlob":
                    return _xml_error(
                        400,
                        "MissingRequiredHeader",
                        "An HTTP header that's mandatory for this request is not specified.",
                    )
                self.blobs[key] = body
                return _Response(201)
        return _xml_error(
            400,
            "InvalidQueryParameterValue",
            "Value for one of the query parameters specified in the request URI is invalid.",
        )

    # -- Twirp results service --------------------------------------------------------------

    _TWIRP_FIELDS: dict[str, set[str]] = {
        "CreateArtifact": {
            "workflow_run_backend_id",
            "workflow_job_run_backend_id",
            "name",
            "expires_at",
            "version",
            "mime_type",
        },
        "FinalizeArtifact": {
            "workflow_run_backend_id",
            "workflow_job_run_backend_id",
            "name",
            "size",
            "hash",
        },
        "ListArtifacts": {
            "workflow_run_backend_id",
            "workflow_job_run_backend_id",
            "name_filter",
            "id_filter",
        },
        "GetSignedArtifactURL": {"workflow_run_backend_id", "workflow_job_run_backend_id", "name"},
        "DeleteArtifact": {"workflow_run_backend_id", "workflow_job_run_backend_id", "name"},
    }

    def _out(self, payload: dict[str, Any]) -> dict[str, Any]:
        if self.twirp_casing == "snake":
            return payload

        def camel(k: str) -> str:
            head, *rest = k.split("_")
            return head + "".join(p.title() for p in rest)

        return {
            camel(k): ([self._out(i) for i in v] if isinstance(v, list) else v) for k, v in payload.items()
        }

    def _results(self, method: str, path: str, headers: dict[str, str], body: bytes) -> _Response:
        if method == "POST" and path.startswith(CACHE_PREFIX):
            return self._cache_service(path.removeprefix(CACHE_PREFIX), headers, body)
        if method != "POST" or not path.startswith(TWIRP_PREFIX):
            return _twirp_error(404, "bad_route", f"no handler for path {path!r}")
        rpc = path.removeprefix(TWIRP_PREFIX)
        allowed = self._TWIRP_FIELDS.get(rpc)
        if allowed is None:
            return _twirp_error(404, "bad_route", f"no handler for path {path!r}")
        checked = self._twirp_request(headers, body)
        if isinstance(checked, _Response):
            return checked
        claims, req = checked
        if self.legacy_results_backend:
            allowed = allowed - {"mime_type"}
        unknown = set(req) - allowed
        if unknown:
            return _twirp_error(400, "malformed", f"unknown field {sorted(unknown)[0]!r}")
        scopes = [s.split(":") for s in str(claims.get("scp", "")).split(" ")]
        results = next((s for s in scopes if s[0] == "Actions.Results" and len(s) == 3), None)
        if (
            results is None
            or req.get("workflow_run_backend_id") != results[1]
            or req.get("workflow_job_run_backend_id") != results[2]
        ):
            return _twirp_error(403, "permission_denied", "backend IDs do not match the runtime token")
        run = next((r for r in self.runs.values() if r.run_backend_id == results[1]), None)
        if run is None:
            return _twirp_error(404, "not_found", "workflow run not found")
        with self.lock:
            handler: Callable[[FakeRun, dict[str, Any]], _Response] = getattr(self, f"_t_{rpc}")
            return handler(run, req)

    def _twirp_request(
        self, headers: dict[str, str], body: bytes
    ) -> tuple[dict[str, Any], dict[str, Any]] | _Response:
        """The checks every Twirp call of the results and cache services passes first, in the
        services' order: the runtime token, the content type, a JSON object body."""
        scheme, _, jwt = headers.get("authorization", "").partition(" ")
        claims = self._verify_jwt(jwt) if scheme == "Bearer" else None
        if claims is None:
            return _twirp_error(401, "unauthenticated", "invalid or missing runtime token")
        if not headers.get("content-type", "").startswith("application/json"):
            return _twirp_error(400, "malformed", "unexpected Content-Type")
        try:
            req = json.loads(body)
        except ValueError:
            return _twirp_error(400, "malformed", "the request body is not JSON")
        if not isinstance(req, dict):
            return _twirp_error(400, "malformed", "the request body is not an object")
        return claims, req

    def _cache_service(self, rpc: str, headers: dict[str, str], body: bytes) -> _Response:
        """The Actions cache service (``tests/fakes/actions_cache.py``)."""
        checked = self._twirp_request(headers, body)
        if isinstance(checked, _Response):
            return checked
        claims, req = checked
        with self.lock:
            return self.cache.handle(rpc, claims, req)

    def _run_artifact(self, run: FakeRun, name: str) -> FakeArtifact | None:
        return next((a for a in self.artifacts.values() if a.run is run and a.name == name), None)

    def _t_CreateArtifact(self, run: FakeRun, req: dict[str, Any]) -> _Response:
        name = req.get("name")
        if not isinstance(name, str) or not name or any(c in name for c in '":<>|*?\r\n\\/'):
            return _twirp_error(400, "invalid_argument", "invalid artifact name")
        if req.get("version") not in (4, 7):
            return _twirp_error(400, "invalid_argument", "unsupported artifact version")
        if "expires_at" in req and not isinstance(req["expires_at"], str):
            return _twirp_error(400, "malformed", "expires_at must be an RFC 3339 string")
        if "mime_type" in req and not isinstance(req["mime_type"], str):
            return _twirp_error(400, "malformed", "mime_type must be a plain string")
        if "mime_type" in req and req.get("version") != 7:
            return _twirp_error(400, "invalid_argument", "mime_type is only supported for artifact version 7")
        if self._run_artifact(run, name) is not None or any(
            p["run"] is run and p["name"] == name for p in self.pending_uploads.values()
        ):
            return _twirp_error(
                409,
                "already_exists",
                "Conflict: an artifact with this name already exists on the workflow run",
            )
        key = f"uploads/{run.id}/{uuid.uuid4()}"
        self.pending_uploads[key] = {"run": run, "name": name, "req": req}
        return _json(
            200, self._out({"ok": True, "signed_upload_url": self.sign_blob_url(key, ttl=600, write=True)})
        )

    def _t_FinalizeArtifact(self, run: FakeRun, req: dict[str, Any]) -> _Response:
        name = req.get("name")
        key = next(
            (k for k, p in self.pending_uploads.items() if p["run"] is run and p["name"] == name), None
        )
        if key is None:
            return _twirp_error(404, "not_found", "no pending upload with this name")
        size = req.get("size")
        if not isinstance(size, str) or not size.isdigit():
            return _twirp_error(400, "malformed", "size must be an int64 encoded as a string")
        data = self.blobs.get(key)
        if data is None:
            return _twirp_error(400, "failed_precondition", "blob was not uploaded")
        if int(size) != len(data):
            return _twirp_error(
                400, "invalid_argument", f"size {size} does not match the uploaded {len(data)} bytes"
            )
        digest = "sha256:" + hashlib.sha256(data).hexdigest()
        if "hash" in req and req["hash"] != digest:
            return _twirp_error(400, "invalid_argument", "hash does not match the uploaded bytes")
        pending = self.pending_uploads.pop(key)
        created = self.now()
        expires = created + timedelta(days=90)
        if isinstance(pending["req"].get("expires_at"), str):
            expires = datetime.fromisoformat(pending["req"]["expires_at"].replace("Z", "+00:00"))
        art = FakeArtifact(
            id=self.next_id(),
            repo=run.repo,
            name=name or "",
            data=data,
            run=run,
            created_at=created,
            expires_at=expires,
            digest=digest,
            content_type=pending["req"].get("mime_type", "application/zip"),
        )
        self.artifacts[art.id] = art
        return _json(200, self._out({"ok": True, "artifact_id": str(art.id)}))

    def _t_ListArtifacts(self, run: FakeRun, req: dict[str, Any]) -> _Response:
        arts = [a for a in self.artifacts.values() if a.run is run]
        if "name_filter" in req:
            arts = [a for a in arts if a.name == req["name_filter"]]
        if "id_filter" in req:
            arts = [a for a in arts if str(a.id) == str(req["id_filter"])]
        return _json(
            200,
            self._out(
                {
                    "artifacts": [
                        self._out(
                            {
                                "workflow_run_backend_id": run.run_backend_id,
                                "workflow_job_run_backend_id": run.job_backend_id,
                                "database_id": str(a.id),
                                "name": a.name,
                                "size": str(len(a.data)),
                                "created_at": obj.iso(a.created_at),
                                **({"digest": a.digest} if a.digest else {}),
                            }
                        )
                        for a in arts
                    ]
                }
            ),
        )

    def _t_GetSignedArtifactURL(self, run: FakeRun, req: dict[str, Any]) -> _Response:
        art = self._run_artifact(run, str(req.get("name")))
        if art is None:
            return _twirp_error(404, "not_found", "artifact not found")
        key = f"artifacts/{art.id}.zip"
        self.blobs[key] = art.data
        return _json(200, self._out({"signed_url": self.sign_blob_url(key)}))

    def _t_DeleteArtifact(self, run: FakeRun, req: dict[str, Any]) -> _Response:
        art = self._run_artifact(run, str(req.get("name")))
        if art is None:
            return _twirp_error(404, "not_found", "artifact not found")
        del self.artifacts[art.id]
        return _json(200, self._out({"ok": True, "artifact_id": str(art.id)}))


# -- helpers ----------------------------------------------------------------------------------


def make_zip(files: dict[str, bytes]) -> bytes:
    """Zip ``files`` (deflated), as upload-artifact does."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in files.items():
            zf.writestr(name, data)
    return buf.getvalue()


def _comment_body(body: bytes) -> tuple[str, _Response | None]:
    try:
        payload = json.loads(body)
    except ValueError:
        return "", _error(400, "Problems parsing JSON")
    if not isinstance(payload, dict) or not isinstance(payload.get("body"), str):
        return "", _json(
            422,
            {
                "message": 'Invalid request.\n\n"body" wasn\'t supplied.',
                "documentation_url": "https://docs.github.com/rest/issues/comments",
                "status": "422",
            },
        )
    text: str = payload["body"]
    if len(text) > 65536:
        return "", _json(
            422,
            {
                "message": "Validation Failed",
                "errors": [
                    {
                        "resource": "IssueComment",
                        "code": "custom",
                        "field": "body",
                        "message": "Body is too long (maximum is 65536 characters)",
                    }
                ],
                "documentation_url": "https://docs.github.com/rest/issues/comments#create-an-issue-comment",
                "status": "422",
            },
        )
    return text, None


def _xml_error(status: int, code: str, message: str) -> _Response:
    body = f'<?xml version="1.0" encoding="utf-8"?><Error><Code>{code}</Code><Message>{message}</Message></Error>'
    return _Response(status, body.encode(), {"content-type": "application/xml", "x-ms-error-code": code})


def _twirp_error(status: int, code: str, msg: str) -> _Response:
    return _json(status, {"code": code, "msg": msg})


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _b64url_decode(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _make_handler(fake: FakeGitHub, server_name: str) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _serve(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            body = self.rfile.read(length) if length else b""
            headers = {k.lower(): v for k, v in self.headers.items()}
            try:
                resp = fake.handle(server_name, self.command, self.path, headers, body)
            except Exception as exc:  # a fake bug must surface as a loud 599, not a hang
                traceback.print_exc()
                resp = _Response(
                    599, f"fake github crashed: {exc!r}".encode(), {"content-type": "text/plain"}
                )
            self.send_response(resp.status)
            for key, value in resp.headers.items():
                self.send_header(key, value)
            self.send_header("content-length", str(len(resp.body)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(resp.body)

        do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = _serve

        def log_message(self, format: str, *args: Any) -> None:  # quiet test output
            pass

    return Handler
