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

The fake lives in ``tests/fakes/github/``, one module per area (its ``__init__`` lists them);
this module is the one place tests import it from.
"""

from __future__ import annotations

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
from tests.fakes.github.server import FakeGitHub
from tests.fakes.github.wire import make_zip

__all__ = [
    "FakeArtifact",
    "FakeComment",
    "FakeCommit",
    "FakeGitHub",
    "FakePull",
    "FakeRepo",
    "FakeRun",
    "FakeToken",
    "Fault",
    "RecordedExchange",
    "RecordedRequest",
    "make_zip",
]
