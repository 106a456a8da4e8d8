"""Baseline discovery and artifact download against the fake GitHub."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from axl_action.github.artifacts import (
    BaselineQuery,
    FetchedBaseline,
    download_artifact,
    download_baseline,
    fetch_baseline,
    find_baseline,
    list_artifacts,
    list_run_artifacts,
    merge_base,
)
from axl_action.github.baseline_policy import BaselineChoice, NoBaseline
from axl_action.github.client import GitHubClient
from axl_action.github.errors import ArtifactError, ArtifactExpiredError, GitHubPermissionError
from tests.fakes.github_server import FakeGitHub, FakeRepo, make_zip

NAME = "axl-eval-baseline"
T0 = datetime(2026, 11, 1, tzinfo=UTC)
NOW = T0 + timedelta(days=2)


class World:
    """main: m0..m5 (one push run + baseline artifact per commit from m1); PR branches off m3."""

    def __init__(self, gh: FakeGitHub) -> None:
        self.gh = gh
        self.repo = gh.add_repo()
        self.token = gh.add_token()
        self.main = gh.add_chain(6, start=T0)
        self.feature = gh.add_chain(2, parent=self.main[3], start=T0 + timedelta(hours=3, minutes=30))
        self.arts = {}
        for i, sha in enumerate(self.main[1:], start=1):
            run = gh.add_run(self.repo, head_sha=sha, created_at=T0 + timedelta(hours=i, minutes=1))
            self.arts[i] = gh.add_artifact(run, NAME, {"results.json": f'{{"commit": {i}}}'.encode()})
        self.client = GitHubClient(gh.api_url, self.token, sleep=lambda s: None)

    def find(self, **kw: Any) -> BaselineChoice | NoBaseline:
        kw.setdefault("now", NOW)
        return find_baseline(
            self.client, self.repo.full_name, BaselineQuery(artifact_name=NAME, branch="main", **kw)
        )


@pytest.fixture
def world(fake_github: FakeGitHub) -> World:
    return World(fake_github)


def test_prefers_the_run_at_the_merge_base(world: World) -> None:
    mb = merge_base(world.client, "octo/evals", world.main[-1], world.feature[-1])
    assert mb == world.main[3]
    choice = world.find(merge_base_sha=mb, base_sha=world.main[-1])
    assert isinstance(choice, BaselineChoice)
    assert choice.match == "merge-base"
    assert choice.head_sha == world.main[3]
    assert choice.artifact_id == world.arts[3].id
    assert choice.digest == world.arts[3].digest
    assert "merge base" in choice.reason


def test_base_sha_when_merge_base_has_no_run(world: World) -> None:
    del world.gh.artifacts[world.arts[3].id]
    choice = world.find(merge_base_sha=world.main[3], base_sha=world.main[5])
    assert isinstance(choice, BaselineChoice)
    assert (choice.match, choice.head_sha) == ("base-sha", world.main[5])


def test_newest_ancestor_when_neither_has_a_run(world: World) -> None:
    for i in (3, 5):
        del world.gh.artifacts[world.arts[i].id]
    choice = world.find(merge_base_sha=world.main[3], base_sha=world.main[5])
    assert isinstance(choice, BaselineChoice)
    # m4 is newer but not an ancestor of the merge base; m2 is the newest that is.
    assert (choice.match, choice.head_sha, choice.commits_behind) == ("ancestor", world.main[2], 1)


def test_expired_and_foreign_artifacts_are_skipped_with_reasons(world: World) -> None:
    gh = world.gh
    world.arts[3].expired = True
    fork = gh.add_repo("forker", "evals", fork=True)
    fork_run = gh.add_run(world.repo, head_sha=world.feature[-1], event="pull_request", head_repo=fork)
    fork_art = gh.add_artifact(fork_run, NAME, {"results.json": b"{}"}, created_at=T0 + timedelta(days=1))
    pr_run = gh.add_run(world.repo, head_sha=world.feature[-1], head_branch="feature", event="pull_request")
    pr_art = gh.add_artifact(pr_run, NAME, {"results.json": b"{}"}, created_at=T0 + timedelta(days=1))
    failed = gh.add_run(
        world.repo, head_sha=world.main[5], conclusion="failure", created_at=T0 + timedelta(days=1)
    )
    failed_art = gh.add_artifact(failed, NAME, {"results.json": b"{}"})
    choice = world.find(merge_base_sha=world.main[3])
    assert isinstance(choice, BaselineChoice)
    assert choice.match == "ancestor" and choice.head_sha == world.main[2]
    reasons = {s.artifact_id: s.reason for s in choice.skipped}
    assert reasons[world.arts[3].id].startswith("expired")
    assert "fork" in reasons[fork_art.id]
    assert "branch 'feature'" in reasons[pr_art.id]
    assert "successful push runs" in reasons[failed_art.id]


def test_newest_without_a_pr(world: World) -> None:
    choice = world.find(now=T0 + timedelta(hours=6))
    assert isinstance(choice, BaselineChoice)
    assert (choice.match, choice.head_sha) == ("newest", world.main[5])
    assert choice.age_seconds == pytest.approx(54 * 60, abs=1)  # artifact lands 5 min after its run starts


def test_listing_paginates(world: World) -> None:
    # 5 artifacts, per_page 100 → one page; force small pages through the fake's default.
    arts = list_artifacts(world.client, "octo/evals", NAME)
    assert [a.head_sha for a in arts] == list(reversed(world.main[1:]))


def test_listing_across_pages(fake_github: FakeGitHub) -> None:
    repo = fake_github.add_repo()
    token = fake_github.add_token()
    shas = fake_github.add_chain(120)
    for i, sha in enumerate(shas):
        run = fake_github.add_run(repo, head_sha=sha, created_at=T0 + timedelta(minutes=i))
        fake_github.add_artifact(run, NAME, {"r.json": b"{}"})
    client = GitHubClient(fake_github.api_url, token, sleep=lambda s: None)
    choice = find_baseline(client, "octo/evals", BaselineQuery(artifact_name=NAME, branch="main", now=NOW))
    assert isinstance(choice, BaselineChoice) and choice.head_sha == shas[-1]
    assert len(fake_github.requests_to("api", "GET", r"/actions/artifacts$")) == 2
    assert len(fake_github.requests_to("api", "GET", r"/actions/runs$")) == 2


def test_no_baseline_reasons(fake_github: FakeGitHub) -> None:
    repo: FakeRepo = fake_github.add_repo()
    client = GitHubClient(fake_github.api_url, fake_github.add_token(), sleep=lambda s: None)
    none = find_baseline(client, "octo/evals", BaselineQuery(artifact_name=NAME, branch="main", now=NOW))
    assert isinstance(none, NoBaseline) and "no artifact named" in none.reason
    run = fake_github.add_run(repo, head_sha=fake_github.add_commit())
    fake_github.add_artifact(run, NAME, {"r.json": b"{}"}, expired=True)
    none = find_baseline(client, "octo/evals", BaselineQuery(artifact_name=NAME, branch="main", now=NOW))
    assert isinstance(none, NoBaseline) and "expired" in none.reason and len(none.skipped) == 1


def test_download_follows_redirect_without_authorization(world: World) -> None:
    choice = world.find(merge_base_sha=world.main[3])
    assert isinstance(choice, BaselineChoice)
    files = download_baseline(world.client, "octo/evals", choice)
    assert files == {"results.json": b'{"commit": 3}'}
    (blob_get,) = world.gh.requests_to("blob", "GET")
    assert "authorization" not in blob_get.headers
    assert world.token not in str(blob_get.headers)


def test_blob_host_rejects_forwarded_authorization(world: World) -> None:
    """The fake is strict: a client that forwarded the token would fail (as with Azure)."""
    import requests

    resp = requests.get(
        world.client.url(f"/repos/octo/evals/actions/artifacts/{world.arts[1].id}/zip"),
        headers={"Authorization": f"Bearer {world.token}", "User-Agent": "x"},
        allow_redirects=False,
    )
    blob = requests.get(resp.headers["location"], headers={"Authorization": f"Bearer {world.token}"})
    assert blob.status_code == 403 and b"AuthorizationFailure" in blob.content


def test_download_of_expired_artifact_is_410(world: World) -> None:
    world.arts[2].expired = True
    with pytest.raises(ArtifactExpiredError, match="expired"):
        download_artifact(world.client, "octo/evals", world.arts[2].id)


def test_download_digest_mismatch(world: World) -> None:
    with pytest.raises(ArtifactError, match="digest"):
        download_artifact(world.client, "octo/evals", world.arts[1].id, expected_digest="sha256:" + "0" * 64)


def test_download_size_cap(world: World) -> None:
    with pytest.raises(ArtifactError, match="download limit"):
        download_artifact(world.client, "octo/evals", world.arts[1].id, max_bytes=10)


def test_download_retries_blob_5xx_with_a_fresh_url(world: World) -> None:
    world.gh.fail_next(1, 503, server="blob")
    data = download_artifact(world.client, "octo/evals", world.arts[1].id)
    assert data == world.arts[1].data
    assert len(world.gh.requests_to("api", "GET", r"/zip$")) == 2


def test_hostile_baseline_zip_is_refused(world: World) -> None:
    run = world.gh.add_run(world.repo, head_sha=world.main[0], created_at=T0)
    evil = world.gh.add_artifact(run, NAME, make_zip({"../../etc/cron.d/x": b"pwn"}))
    choice = world.find(merge_base_sha=world.main[0])
    assert isinstance(choice, BaselineChoice) and choice.artifact_id == evil.id
    with pytest.raises(ArtifactError, match="zip-slip"):
        download_baseline(world.client, "octo/evals", choice)


def test_missing_actions_read_permission(world: World) -> None:
    world.gh.fail_next(1, 403, path=r"/actions/artifacts$", message="Resource not accessible by integration")
    with pytest.raises(GitHubPermissionError, match="actions: read"):
        world.find()


def test_fetch_falls_back_when_the_chosen_artifact_expires_at_download(world: World) -> None:
    # The listing still says "not expired", but the download answers 410.
    world.gh.fail_next(1, 410, path=rf"/artifacts/{world.arts[3].id}/zip$", message="Artifact has expired")
    query = BaselineQuery(artifact_name=NAME, branch="main", now=NOW, merge_base_sha=world.main[3])
    fetched = fetch_baseline(world.client, "octo/evals", query)
    assert isinstance(fetched, FetchedBaseline)
    assert fetched.choice.head_sha == world.main[2] and fetched.choice.match == "ancestor"
    assert fetched.files == {"results.json": b'{"commit": 2}'}
    assert any(s.artifact_id == world.arts[3].id and "410" in s.reason for s in fetched.choice.skipped)


def test_fetch_without_any_baseline(fake_github: FakeGitHub) -> None:
    fake_github.add_repo()
    client = GitHubClient(fake_github.api_url, fake_github.add_token(), sleep=lambda s: None)
    assert isinstance(
        fetch_baseline(client, "octo/evals", BaselineQuery(artifact_name=NAME, branch="main", now=NOW)),
        NoBaseline,
    )


def test_list_run_artifacts(world: World) -> None:
    run = world.arts[2].run
    assert run is not None
    world.gh.add_artifact(run, "axl-eval-comment", {"comment.md": b"x"})
    arts = list_run_artifacts(world.client, "octo/evals", run.id, name="axl-eval-comment")
    assert [a.name for a in arts] == ["axl-eval-comment"]
    assert {a.name for a in list_run_artifacts(world.client, "octo/evals", run.id)} == {
        NAME,
        "axl-eval-comment",
    }


def test_unknown_workflow_file_says_so(world: World) -> None:
    with pytest.raises(GitHubPermissionError, match=r"workflow file named 'nope\.yml'"):
        world.find(workflow="nope.yml")


def test_baseline_restricted_to_one_workflow_file(world: World) -> None:
    other = world.gh.add_run(world.repo, head_sha=world.main[5], workflow_path=".github/workflows/other.yml")
    world.gh.add_artifact(other, NAME, {"results.json": b"{}"}, created_at=T0 + timedelta(days=2))
    choice = world.find(workflow="evals.yml")
    assert isinstance(choice, BaselineChoice) and choice.run_id != other.id
    assert any(s.run_id == other.id and "evals.yml" in s.reason for s in choice.skipped)
