"""What the fake GitHub stores (repositories, commits, runs, artifacts, comments, pulls,
tokens), the faults it injects and the requests it records."""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass, field
from datetime import datetime
from urllib.parse import urlencode


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
