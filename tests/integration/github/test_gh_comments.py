"""Sticky PR comments against the fake GitHub."""

from __future__ import annotations

from typing import Any

import pytest

from axl_action.github.client import GitHubClient
from axl_action.github.comments import (
    MAX_COMMENT_CHARS,
    CommentMode,
    CommentTooLongError,
    GateVerdict,
    comment_marker,
    compose_comment_body,
    find_sticky_comment,
    resolve_comment_author,
    should_post,
    upsert_sticky_comment,
)
from axl_action.github.errors import GitHubError, GitHubPermissionError
from tests.fakes.github_server import FakeGitHub, FakePull, FakeRepo

HEAD = "a" * 40
NEWER = "b" * 40


def _world(gh: FakeGitHub, **token_kw: Any) -> tuple[FakeRepo, FakePull, GitHubClient]:
    repo = gh.add_repo()
    pull = gh.add_pull(repo, 12, head_sha=HEAD, base_sha="c" * 40)
    token = gh.add_token(**token_kw)
    return repo, pull, GitHubClient(gh.api_url, token, sleep=lambda s: None)


def test_create_then_update_in_place_across_pages(fake_github: FakeGitHub) -> None:
    repo, pull, client = _world(fake_github)
    first = upsert_sticky_comment(client, "octo/evals", 12, "run 1", suite="default", head_sha=HEAD)
    assert first.action == "created"
    # 250 later comments push ours to page 1 of 3; other suites and impostors must not match.
    fake_github.add_comment(
        repo,
        12,
        compose_comment_body("other", suite="nightly", head_sha=HEAD),
        login="github-actions[bot]",
        user_type="Bot",
    )
    fake_github.add_comment(
        repo, 12, compose_comment_body("impostor", suite="default", head_sha=HEAD), login="mallory"
    )
    for i in range(250):
        fake_github.add_comment(repo, 12, f"chatter {i}")
    pull.head_sha = NEWER
    second = upsert_sticky_comment(client, "octo/evals", 12, "run 2", suite="default", head_sha=NEWER)
    assert second.action == "updated" and second.comment_id == first.comment_id
    ours = [c for c in fake_github.comments_on(repo, 12) if c.login == "github-actions[bot]"]
    assert len(ours) == 2  # ours + the other suite: no duplicate
    body = fake_github.comments[first.comment_id or 0].body
    assert body.startswith(comment_marker("default")) and body.endswith("run 2") and NEWER in body
    listed_pages = {
        r.query.get("page", ["1"])[0] for r in fake_github.requests_to("api", "GET", r"/12/comments$")
    }
    assert listed_pages == {"1", "2", "3"}


def test_newest_of_several_matches_is_updated(fake_github: FakeGitHub) -> None:
    repo, _, client = _world(fake_github)
    old = fake_github.add_comment(
        repo,
        12,
        compose_comment_body("a", suite="s", head_sha=HEAD),
        login="github-actions[bot]",
        user_type="Bot",
    )
    new = fake_github.add_comment(
        repo,
        12,
        compose_comment_body("b", suite="s", head_sha=HEAD),
        login="github-actions[bot]",
        user_type="Bot",
    )
    found = find_sticky_comment(client, "octo/evals", 12, suite="s", authors=["github-actions[bot]"])
    assert found is not None and found.id == new.id != old.id
    assert found.head_sha == HEAD


def test_head_moved_on_means_no_write(fake_github: FakeGitHub) -> None:
    _, pull, client = _world(fake_github)
    first = upsert_sticky_comment(client, "octo/evals", 12, "new head result", suite="s", head_sha=HEAD)
    pull.head_sha = NEWER  # a push happened while an older run was still going
    stale = upsert_sticky_comment(client, "octo/evals", 12, "stale result", suite="s", head_sha=HEAD)
    assert stale.action == "skipped" and "moved to bbbbbbb" in stale.reason
    assert stale.comment_id == first.comment_id
    assert fake_github.comments[first.comment_id or 0].body.endswith("new head result")
    assert fake_github.requests_to("api", "PATCH") == []


def test_identical_body_is_not_rewritten(fake_github: FakeGitHub) -> None:
    _, _, client = _world(fake_github)
    upsert_sticky_comment(client, "octo/evals", 12, "same", suite="s", head_sha=HEAD)
    again = upsert_sticky_comment(client, "octo/evals", 12, "same", suite="s", head_sha=HEAD)
    assert again.action == "skipped" and "up to date" in again.reason
    assert len(fake_github.requests_to("api", "POST")) == 1


def test_fork_token_raises_permission_error_with_relay_hint(fake_github: FakeGitHub) -> None:
    _, _, client = _world(fake_github, write=False)
    with pytest.raises(GitHubPermissionError) as err:
        upsert_sticky_comment(client, "octo/evals", 12, "x", suite="s", head_sha=HEAD)
    assert err.value.status == 403
    assert "workflow_run" in str(err.value) and "pull-requests: write" in str(err.value)


def test_author_resolution(fake_github: FakeGitHub) -> None:
    _, _, bot = _world(fake_github)
    assert resolve_comment_author(bot) == "github-actions[bot]"  # GET /user is 403 for GITHUB_TOKEN
    pat = GitHubClient(
        fake_github.api_url, fake_github.add_token(login="octocat", user_type="User", installation=False)
    )
    assert resolve_comment_author(pat) == "octocat"
    assert resolve_comment_author(pat, "my-app[bot]") == "my-app[bot]"


def test_pat_comments_are_found_by_their_login(fake_github: FakeGitHub) -> None:
    repo, _, _ = _world(fake_github)
    token = fake_github.add_token(login="octocat", user_type="User", installation=False)
    pat = GitHubClient(fake_github.api_url, token, sleep=lambda s: None)
    a = upsert_sticky_comment(pat, "octo/evals", 12, "1", suite="s", head_sha=HEAD)
    b = upsert_sticky_comment(pat, "octo/evals", 12, "2", suite="s", head_sha=HEAD)
    assert (a.action, b.action, a.comment_id) == ("created", "updated", b.comment_id)
    assert len(fake_github.comments_on(repo, 12)) == 1


def test_too_long_body() -> None:
    with pytest.raises(CommentTooLongError, match="over GitHub's limit of 65536"):
        compose_comment_body("x" * MAX_COMMENT_CHARS, suite="s", head_sha=HEAD)
    fits = compose_comment_body("x" * (MAX_COMMENT_CHARS - 200), suite="s", head_sha=HEAD)
    assert len(fits) <= MAX_COMMENT_CHARS


@pytest.mark.parametrize("suite", ["", 'a"b', "a-->b", "x" * 65, "a\nb", "a b", "qa/main"])
def test_suite_keys_the_action_would_refuse_are_refused_here_too(suite: str) -> None:
    with pytest.raises(GitHubError, match=r"Suite key .* 1-64 letters"):
        compose_comment_body("body", suite=suite, head_sha=HEAD)


@pytest.mark.parametrize("suite", ['x" --><script>alert(1)</script><!-- "', "a-->b", "a\nb"])
def test_any_name_yields_one_well_formed_marker(suite: str) -> None:
    marker = comment_marker(suite)
    assert marker.count("-->") == 1 and marker.endswith("-->") and "\n" not in marker


@pytest.mark.parametrize(
    ("mode", "verdict", "changed", "existing", "expected"),
    [
        ("off", "fail", True, True, False),
        ("always", "pass", False, False, True),
        ("on-failure", "fail", False, False, True),
        ("on-failure", "warn", True, False, False),
        ("on-failure", "pass", False, True, True),  # keep an old failure comment current
        ("on-change", "pass", True, False, True),
        ("on-change", "fail", False, False, False),
        ("on-change", "pass", False, True, True),
    ],
)
def test_should_post(
    mode: CommentMode, verdict: GateVerdict, changed: bool, existing: bool, expected: bool
) -> None:
    assert should_post(mode, verdict, changed, existing) is expected


def test_minimized_comment_is_left_alone(fake_github: FakeGitHub) -> None:
    _, _, client = _world(fake_github)
    first = upsert_sticky_comment(client, "octo/evals", 12, "1", suite="s", head_sha=HEAD)
    fake_github.comments[first.comment_id or 0].minimized_reason = "outdated"
    second = upsert_sticky_comment(client, "octo/evals", 12, "2", suite="s", head_sha=HEAD)
    assert second.action == "created" and second.comment_id != first.comment_id
    assert fake_github.comments[first.comment_id or 0].body.endswith("\n1")
