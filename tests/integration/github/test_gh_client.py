"""GitHubClient against the fake GitHub over real HTTP: headers, retries, pagination, errors."""

from __future__ import annotations

import logging
import time
from typing import Any

import pytest

from axl_action.github.client import GitHubClient
from axl_action.github.errors import GitHubError, GitHubPermissionError, GitHubRateLimitError
from tests.fakes.github_fixtures import SleepRecorder
from tests.fakes.github_server import FakeGitHub


def _client(gh: FakeGitHub, token: str, sleeps: SleepRecorder, **kw: Any) -> GitHubClient:
    return GitHubClient(gh.api_url, token, sleep=sleeps, **kw)


def test_sends_the_github_headers(fake_github: FakeGitHub, sleeps: SleepRecorder) -> None:
    fake_github.add_repo()
    token = fake_github.add_token()
    _client(fake_github, token, sleeps).get_json("/repos/octo/evals")
    req = fake_github.requests_to("api")[-1]
    assert req.headers["accept"] == "application/vnd.github+json"
    assert req.headers["x-github-api-version"] == "2022-11-28"
    assert req.headers["user-agent"].startswith("axl-eval-action/")
    assert req.headers["authorization"] == f"Bearer {token}"


def test_retries_5xx_with_bounded_backoff(fake_github: FakeGitHub, sleeps: SleepRecorder) -> None:
    fake_github.add_repo()
    token = fake_github.add_token()
    fake_github.fail_next(2, 502)
    body = _client(fake_github, token, sleeps, base_delay=1.0).get_json("/repos/octo/evals")
    assert body["full_name"] == "octo/evals"
    assert len(fake_github.requests_to("api")) == 3
    assert len(sleeps.calls) == 2
    first, second = sleeps.calls
    assert 1.0 <= first <= 1.25 and 2.0 <= second <= 2.5


def test_gives_up_after_max_attempts(fake_github: FakeGitHub, sleeps: SleepRecorder) -> None:
    fake_github.add_repo()
    token = fake_github.add_token()
    fake_github.fail_next(10, 500)
    with pytest.raises(GitHubError) as err:
        _client(fake_github, token, sleeps, max_attempts=3).get_json("/repos/octo/evals")
    assert err.value.status == 500
    assert len(fake_github.requests_to("api")) == 3
    assert err.value.request_id  # x-github-request-id is carried for support tickets
    assert "re-run the job later" in str(err.value)


def test_post_is_not_retried_on_5xx(fake_github: FakeGitHub, sleeps: SleepRecorder) -> None:
    repo = fake_github.add_repo()
    fake_github.add_pull(repo, 1, head_sha="a" * 40, base_sha="b" * 40)
    token = fake_github.add_token()
    fake_github.fail_next(1, 502, method="POST")
    with pytest.raises(GitHubError):
        _client(fake_github, token, sleeps).post_json("/repos/octo/evals/issues/1/comments", {"body": "x"})
    # A POST that hit a 5xx may have been applied; repeating it could duplicate a comment.
    assert len(fake_github.requests_to("api", "POST")) == 1


def test_honours_retry_after_on_429(fake_github: FakeGitHub, sleeps: SleepRecorder) -> None:
    fake_github.add_repo()
    token = fake_github.add_token()
    fake_github.rate_limit_next(1, retry_after=7)
    _client(fake_github, token, sleeps).get_json("/repos/octo/evals")
    assert sleeps.calls == [7.0]


@pytest.mark.parametrize(
    ("retry_after", "waited"),
    [
        ("soon", None),  # malformed: no wait asked (was an uncaught ValueError)
        ("Wed, 21 Oct 2015 07:28:00", 0.0),  # an HTTP-date without a zone is UTC, and in the past
        ("-5", 0.0),  # never a negative wait
    ],
)
def test_odd_retry_after_values_follow_the_one_rule(
    fake_github: FakeGitHub, sleeps: SleepRecorder, retry_after: str, waited: float | None
) -> None:
    fake_github.add_repo()
    token = fake_github.add_token()
    fake_github.fail_next(1, 503, headers={"Retry-After": retry_after})
    _client(fake_github, token, sleeps).get_json("/repos/octo/evals")
    assert len(sleeps.calls) == 1
    if waited is not None:
        assert sleeps.calls == [waited]
    else:  # the backoff's own wait
        assert 0 < sleeps.calls[0] < 60


def test_secondary_rate_limit_403_is_retried(fake_github: FakeGitHub, sleeps: SleepRecorder) -> None:
    repo = fake_github.add_repo()
    fake_github.add_pull(repo, 1, head_sha="a" * 40, base_sha="b" * 40)
    token = fake_github.add_token()
    fake_github.secondary_rate_limit_next(1, retry_after=3, method="POST")
    _client(fake_github, token, sleeps).post_json("/repos/octo/evals/issues/1/comments", {"body": "x"})
    assert sleeps.calls == [3.0]
    assert len(fake_github.comments_on(repo, 1)) == 1


def test_secondary_limit_without_headers_waits_a_minute(
    fake_github: FakeGitHub, sleeps: SleepRecorder
) -> None:
    fake_github.add_repo()
    token = fake_github.add_token()
    fake_github.secondary_rate_limit_next(1, retry_after=None)
    _client(fake_github, token, sleeps, max_wait=90).get_json("/repos/octo/evals")
    assert sleeps.calls == [60.0]


def test_primary_limit_waits_until_reset(fake_github: FakeGitHub, sleeps: SleepRecorder) -> None:
    fake_github.add_repo()
    token = fake_github.add_token()
    fake_github.primary_rate_limit_next(1, reset_in=5)
    now = time.time()
    _client(fake_github, token, sleeps, clock=lambda: now).get_json("/repos/octo/evals")
    (wait,) = sleeps.calls
    assert 4.0 <= wait <= 7.0


def test_reset_too_far_away_raises_at_once(fake_github: FakeGitHub, sleeps: SleepRecorder) -> None:
    fake_github.add_repo()
    token = fake_github.add_token()
    fake_github.primary_rate_limit_next(1, reset_in=2400)
    with pytest.raises(GitHubRateLimitError) as err:
        _client(fake_github, token, sleeps, max_wait=60).get_json("/repos/octo/evals")
    assert sleeps.calls == []
    assert "longer than the 60s" in str(err.value)


def test_permission_403_is_not_retried_and_says_what_to_do(
    fake_github: FakeGitHub, sleeps: SleepRecorder
) -> None:
    repo = fake_github.add_repo()
    fake_github.add_pull(repo, 3, head_sha="a" * 40, base_sha="b" * 40)
    token = fake_github.add_token(write=False)
    with pytest.raises(GitHubPermissionError) as err:
        _client(fake_github, token, sleeps).post_json("/repos/octo/evals/issues/3/comments", {"body": "x"})
    assert err.value.status == 403
    assert "Resource not accessible by integration" in str(err.value)
    assert "permissions:" in str(err.value)
    assert err.value.documentation_url and err.value.documentation_url.startswith("https://docs.github.com")
    assert sleeps.calls == []


def test_bad_credentials_401(fake_github: FakeGitHub, sleeps: SleepRecorder) -> None:
    fake_github.add_repo()
    with pytest.raises(GitHubPermissionError, match="github-token input"):
        _client(fake_github, "ghp_not_a_real_token", sleeps).get_json("/repos/octo/evals")


def test_pagination_follows_link_headers(fake_github: FakeGitHub, sleeps: SleepRecorder) -> None:
    repo = fake_github.add_repo()
    fake_github.add_pull(repo, 5, head_sha="a" * 40, base_sha="b" * 40)
    token = fake_github.add_token()
    for i in range(7):
        fake_github.add_comment(repo, 5, f"c{i}")
    bodies = [
        c["body"]
        for c in _client(fake_github, token, sleeps).paginate(
            "/repos/octo/evals/issues/5/comments", per_page=3
        )
    ]
    assert bodies == [f"c{i}" for i in range(7)]
    pages = fake_github.requests_to("api", "GET", r"/comments$")
    assert [r.query.get("page", ["1"])[0] for r in pages] == ["1", "2", "3"]


def test_pagination_max_items_stops_early(fake_github: FakeGitHub, sleeps: SleepRecorder) -> None:
    repo = fake_github.add_repo()
    fake_github.add_pull(repo, 5, head_sha="a" * 40, base_sha="b" * 40)
    token = fake_github.add_token()
    for i in range(10):
        fake_github.add_comment(repo, 5, f"c{i}")
    items = list(
        _client(fake_github, token, sleeps).paginate(
            "/repos/octo/evals/issues/5/comments", per_page=2, max_items=3
        )
    )
    assert len(items) == 3
    assert len(fake_github.requests_to("api")) == 2


def test_token_never_in_errors_logs_or_repr(
    fake_github: FakeGitHub,
    sleeps: SleepRecorder,
    caplog: pytest.LogCaptureFixture,
    capsys: pytest.CaptureFixture[str],
) -> None:
    repo = fake_github.add_repo()
    fake_github.add_pull(repo, 1, head_sha="a" * 40, base_sha="b" * 40)
    token = fake_github.add_token(write=False)
    client = _client(fake_github, token, sleeps, max_attempts=2)
    caplog.set_level(logging.DEBUG)
    fake_github.fail_next(1, 503)
    client.get_json("/repos/octo/evals")
    messages = [repr(client), client.token_fingerprint]
    for call in (
        lambda: client.post_json("/repos/octo/evals/issues/1/comments", {"body": token}),
        lambda: client.get_json("/repos/octo/nope"),
        lambda: client.get_json("https://evil.example.com/steal"),
    ):
        with pytest.raises(GitHubError) as err:
            call()
        messages += [str(err.value), repr(err.value)]
    out = capsys.readouterr()
    messages += [caplog.text, out.out, out.err]
    for text in messages:
        assert token not in text


def test_refuses_to_send_token_to_another_host(fake_github: FakeGitHub, sleeps: SleepRecorder) -> None:
    token = fake_github.add_token()
    with pytest.raises(GitHubError, match="Refusing to send the GitHub token"):
        _client(fake_github, token, sleeps).get_json(fake_github.blob_url + "/blobs/x")
    assert fake_github.requests_to("blob") == []


def test_ghes_style_api_prefix(sleeps: SleepRecorder) -> None:
    """GHES serves the API under /api/v3; paths must be appended, not replace the prefix."""
    with FakeGitHub() as gh:
        client = GitHubClient(gh.api_url + "/api/v3", "t", sleep=sleeps)
        assert client.url("/repos/o/r") == gh.api_url + "/api/v3/repos/o/r"
        assert client.url("repos/o/r") == gh.api_url + "/api/v3/repos/o/r"


def test_from_env_uses_github_api_url(sleeps: SleepRecorder) -> None:
    client = GitHubClient.from_env({"GITHUB_API_URL": "https://ghe.example.com/api/v3/"}, "tok")
    assert client.api_url == "https://ghe.example.com/api/v3"
    assert GitHubClient.from_env({}, "tok").api_url == "https://api.github.com"


def test_missing_token_is_a_clear_error() -> None:
    with pytest.raises(GitHubError, match="No GitHub token"):
        GitHubClient("https://api.github.com", "")


def test_network_errors_are_retried_then_reported(sleeps: SleepRecorder) -> None:
    import socket

    with socket.socket() as sock:  # a port nothing listens on once closed
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    client = GitHubClient(f"http://127.0.0.1:{port}", "tok", sleep=sleeps, max_attempts=3, timeout=2)
    with pytest.raises(GitHubError, match="gave up after 3 attempt") as err:
        client.get_json("/repos/octo/evals")
    assert err.value.status is None and len(sleeps.calls) == 2


def test_same_origin_redirect_is_followed_with_the_token(
    fake_github: FakeGitHub, sleeps: SleepRecorder
) -> None:
    """A renamed repository answers 301 to its new name; the client follows it."""
    fake_github.add_repo("octo", "evals-renamed")
    token = fake_github.add_token()
    fake_github.fail_next(
        1,
        301,
        path=r"^/repos/octo/old-name$",
        headers={"location": fake_github.api_url + "/repos/octo/evals-renamed"},
    )
    body = _client(fake_github, token, sleeps).get_json("/repos/octo/old-name")
    assert body["full_name"] == "octo/evals-renamed"
    follow = fake_github.requests_to("api")[-1]
    assert follow.path == "/repos/octo/evals-renamed" and follow.headers["authorization"] == f"Bearer {token}"
    assert sleeps.calls == []


def test_unexpected_cross_origin_redirect_is_an_error(sleeps: SleepRecorder) -> None:
    # Not something GitHub documents for this path, so outside the contract-checked fixture.
    with FakeGitHub() as gh:
        token = gh.add_token()
        gh.fail_next(1, 302, headers={"location": gh.blob_url + "/elsewhere"})
        with pytest.raises(GitHubError, match="unexpected redirect"):
            _client(gh, token, sleeps).get_json("/repos/octo/evals")
        assert gh.requests_to("blob") == []


def test_mutations_are_spaced_by_a_second(fake_github: FakeGitHub, sleeps: SleepRecorder) -> None:
    repo = fake_github.add_repo()
    fake_github.add_pull(repo, 1, head_sha="a" * 40, base_sha="b" * 40)
    token = fake_github.add_token()
    now = [1000.0]
    client = _client(fake_github, token, sleeps, clock=lambda: now[0])
    created = client.post_json("/repos/octo/evals/issues/1/comments", {"body": "1"})
    client.get_json("/repos/octo/evals")  # reads are never delayed
    now[0] += 0.25
    client.patch_json(f"/repos/octo/evals/issues/comments/{created['id']}", {"body": "2"})
    assert sleeps.calls == [0.75]


def test_deprecation_header_is_logged_once(
    fake_github: FakeGitHub, sleeps: SleepRecorder, caplog: pytest.LogCaptureFixture
) -> None:
    fake_github.add_repo()
    token = fake_github.add_token()
    fake_github.fail_next(2, 500, headers={"deprecation": "true", "sunset": "Fri, 10 Mar 2028 00:00:00 GMT"})
    _client(fake_github, token, sleeps).get_json("/repos/octo/evals")
    assert caplog.text.count("deprecated (sunset Fri, 10 Mar 2028") == 1


def test_github_errors_hide_every_form_of_the_token() -> None:
    # The client's redaction is the one rule: a token echoed back base64-encoded (as a Basic
    # auth header or a JSON body may carry it) or URL-encoded is hidden too, not only the raw value.
    import base64
    from urllib.parse import quote

    from axl_action.github.errors import redact

    token = "ghs_" + "A1b2C3d4E5f6G7h8I9j0" * 2
    forms = [
        token,
        quote(f"x={token}&y", safe=""),
        base64.b64encode(token.encode()).decode(),
        base64.b64encode(f"x-access-token:{token}".encode()).decode(),
    ]
    text = redact(" | ".join(forms), token)
    for form in forms:
        assert form not in text
    assert token[4:16] not in text
