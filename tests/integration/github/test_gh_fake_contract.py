"""Keep the fake GitHub honest: every REST exchange it serves must match GitHub's own
OpenAPI description (the vendored subset), requests and responses alike.

``GET /user`` is the one path the fake serves that the subset does not describe; it is
excluded by name, not silently.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
import requests
from openapi_core.validation.response.exceptions import InvalidData

from tests.fakes.github_contract import validate_exchange, validate_exchanges
from tests.fakes.github_server import FakeGitHub, RecordedExchange, make_zip


def _drive_every_endpoint(gh: FakeGitHub) -> None:
    """Touch every REST route (success and the documented error statuses)."""
    repo = gh.add_repo("octo", "evals")
    fork = gh.add_repo("forker", "evals", fork=True)
    token = gh.add_token()
    main = gh.add_chain(4)
    feature = gh.add_chain(2, parent=main[1])
    run = gh.add_run(repo, head_sha=main[-1])
    gh.add_run(repo, head_sha=feature[-1], head_branch="feature", event="pull_request", head_repo=fork)
    gh.add_artifact(run, "axl-eval-baseline", {"results.json": b"{}"})
    expired = gh.add_artifact(run, "old", make_zip({"a": b"1"}), expired=True, digest=False)
    gh.add_pull(repo, 7, head_sha=feature[-1], base_sha=main[-1], head_repo=fork)
    for i in range(3):
        gh.add_comment(repo, 7, f"hello {i}")
    s = requests.Session()
    s.headers.update({"Authorization": f"Bearer {token}", "Accept": "application/vnd.github+json"})
    api = gh.api_url + "/repos/octo/evals"
    s.get(api)
    s.get(api + "/actions/artifacts", params={"name": "axl-eval-baseline", "per_page": 1})
    s.get(api + "/actions/artifacts", params={"per_page": 1, "page": 2})
    art_id = next(iter(gh.artifacts))
    s.get(f"{api}/actions/artifacts/{art_id}")
    s.get(f"{api}/actions/artifacts/{art_id}/zip", allow_redirects=False)
    s.get(f"{api}/actions/artifacts/{expired.id}/zip", allow_redirects=False)
    s.get(api + "/actions/runs", params={"branch": "main", "event": "push", "status": "success"})
    s.get(api + "/actions/workflows/evals.yml/runs", params={"per_page": 1})
    s.get(f"{api}/actions/runs/{run.id}")
    s.get(f"{api}/actions/runs/{run.id}/artifacts", params={"name": "axl-eval-baseline"})
    s.get(api + "/issues/7/comments", params={"per_page": 2})
    created = s.post(api + "/issues/7/comments", json={"body": "new"}).json()
    s.get(f"{api}/issues/comments/{created['id']}")
    s.patch(f"{api}/issues/comments/{created['id']}", json={"body": "edited"})
    s.post(api + "/issues/7/comments", json={"body": "x" * 70000})  # 422
    s.get(api + "/pulls/7")
    s.get(f"{api}/compare/{main[-1]}...{feature[-1]}")
    s.get(f"{api}/compare/{main[-1]}...{'0' * 40}")  # 404
    s.delete(f"{api}/issues/comments/{created['id']}")
    s.delete(f"{api}/actions/artifacts/{expired.id}")
    gh.fail_next(1, 500, path="/pulls/")
    s.get(api + "/pulls/7")
    gh.fail_next(1, 503, path="/compare/")
    s.get(f"{api}/compare/{main[0]}...{main[-1]}")
    s.get(gh.api_url + "/user")


def test_every_fake_rest_exchange_matches_the_openapi_description() -> None:
    with FakeGitHub() as gh:
        _drive_every_endpoint(gh)
        checked = validate_exchanges(gh.exchanges)
        statuses = {ex.status for ex in gh.exchanges}
    assert checked >= 22
    assert {200, 201, 204, 302, 404, 410, 422, 500, 503} <= statuses


def test_validator_catches_a_broken_response() -> None:
    """The contract test must be able to fail: drop a required field and it does."""
    with FakeGitHub() as gh:
        repo = gh.add_repo()
        token = gh.add_token()
        run = gh.add_run(repo, head_sha=gh.add_commit())
        gh.add_artifact(run, "a", {"f": b"x"})
        requests.get(
            gh.api_url + "/repos/octo/evals/actions/artifacts", headers={"Authorization": f"Bearer {token}"}
        )
        ex = gh.exchanges[-1]
        body: dict[str, Any] = json.loads(ex.body)
        del body["artifacts"][0]["expired"]
        broken = RecordedExchange(ex.request, ex.status, ex.headers, json.dumps(body).encode())
        with pytest.raises(InvalidData, match=r"expired"):
            validate_exchange(broken)


def test_validator_catches_a_broken_request() -> None:
    with FakeGitHub() as gh:
        repo = gh.add_repo()
        gh.add_pull(repo, 1, head_sha="a" * 40, base_sha="b" * 40)
        token = gh.add_token()
        requests.post(
            gh.api_url + "/repos/octo/evals/issues/1/comments",
            json={"bodyx": "typo"},
            headers={"Authorization": f"Bearer {token}"},
        )
        ex = gh.exchanges[-1]
        ok = RecordedExchange(ex.request, 201, ex.headers, b"{}")
        with pytest.raises(Exception, match=r"body"):
            validate_exchange(ok)
