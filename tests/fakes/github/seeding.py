"""Seeding the fake GitHub (``add_*``, runtime tokens), injecting faults (``fail_next`` and
the rate limits) and inspecting what it received."""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import secrets
import time
from datetime import datetime, timedelta
from typing import Any

from tests.fakes.github.records import (
    FakeArtifact,
    FakeComment,
    FakeCommit,
    FakePull,
    FakeRepo,
    FakeRun,
    FakeToken,
    Fault,
    RecordedRequest,
)
from tests.fakes.github.state import GitHubState
from tests.fakes.github.wire import DOCS, _b64url, make_zip


class Seeding(GitHubState):
    """``add_*``, faults and inspection."""

    # -- seeding ----------------------------------------------------------------------------

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
