"""A small, careful REST client for the GitHub API.

What it does beyond ``requests``:

* sends ``Accept: application/vnd.github+json``, ``X-GitHub-Api-Version: 2022-11-28`` and
  our own ``User-Agent`` (GitHub rejects requests without one);
* works against any API root (``GITHUB_API_URL``: ``https://api.github.com`` or a GHES
  ``https://ghe.example.com/api/v3``) and only ever sends the token to that origin;
* retries 5xx, 429 and rate-limit 403s with bounded backoff that honours ``retry-after``
  and ``x-ratelimit-reset``; gives up at once when GitHub asks for a longer wait than
  ``max_wait`` (a primary limit resetting in 40 minutes is not worth blocking CI for);
* follows ``Link: rel="next"`` pagination;
* turns error responses into :class:`GitHubError` subclasses whose message says what to do.

The token never appears in a message, a log line or ``repr``.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from urllib.parse import SplitResult, quote, urljoin, urlsplit

import requests

from axl_action.github.errors import (
    GitHubError,
    GitHubPermissionError,
    GitHubRateLimitError,
    redact,
)
from axl_action.retry import Backoff, Retrier, Retry, parse_retry_after

log = logging.getLogger("axl_action.github")

API_VERSION = "2022-11-28"
USER_AGENT = "axl-eval-action/0.1 (+https://github.com/axl-eval-action)"
DEFAULT_API_URL = "https://api.github.com"

RETRYABLE_STATUSES = frozenset({500, 502, 503, 504})
# Statuses where GitHub rejected the request before acting on it: safe to repeat even a POST.
_REJECTED_UNPROCESSED = frozenset({429})
_IDEMPOTENT = frozenset({"GET", "HEAD", "OPTIONS", "PUT", "DELETE", "PATCH"})
_READ_ONLY = frozenset({"GET", "HEAD", "OPTIONS"})
# GitHub's advice when a secondary limit comes without headers: "wait at least one minute".
SECONDARY_LIMIT_DEFAULT_WAIT = 60.0

Json = Any


class GitHubClient:
    """Authenticated JSON client for one GitHub API root.

    Args:
        api_url: the API root, e.g. ``https://api.github.com`` or ``https://ghe.corp/api/v3``.
        token: a ``GITHUB_TOKEN``, a PAT or an App token. Sent as ``Authorization: Bearer``,
            and only to ``api_url``'s origin.
        session: a ``requests.Session`` to reuse (tests pass one; connection pooling).
        sleep: called with seconds to wait between attempts (tests pass a recorder).
        clock: returns the current UNIX time; used to turn ``x-ratelimit-reset`` into a wait.
        max_attempts: total attempts per request, the first one included.
        max_wait: the longest single wait; a longer ``retry-after``/reset raises instead.
        base_delay: first backoff step for 5xx and network errors (``axl_action.retry``: doubled
            each attempt, plus up to 25 % jitter, capped at ``max_wait``).
        timeout: per-request timeout in seconds (connect and read).
        min_mutation_interval: seconds between two mutating requests (POST/PATCH/PUT/DELETE);
            GitHub's best practices ask for at least one to avoid secondary rate limits.
        uniform: the jitter's random source, draws in [0, 1) (tests pass a fixed one).
    """

    def __init__(
        self,
        api_url: str,
        token: str,
        *,
        session: requests.Session | None = None,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.time,
        max_attempts: int = 5,
        max_wait: float = 60.0,
        base_delay: float = 1.0,
        timeout: float = 30.0,
        user_agent: str = USER_AGENT,
        min_mutation_interval: float = 1.0,
        uniform: Callable[[], float] | None = None,
    ) -> None:
        if not token:
            raise GitHubError(
                "No GitHub token was given",
                hint="pass `github-token: ${{ github.token }}` (the default) or a PAT to the action",
            )
        if max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")
        parts = http_url(
            api_url,
            "GITHUB_API_URL",
            GitHubError,
            hint="it should look like https://api.github.com or https://ghe.example.com/api/v3",
        )
        self.api_url = api_url.rstrip("/")
        self._origin = (parts.scheme, parts.netloc.lower())
        self._token = token
        self._session = own_session(session)
        self.sleep = sleep
        """Waits between attempts; other helpers (artifact download) reuse it."""
        self._clock = clock
        self.max_attempts = max_attempts
        self.max_wait = max_wait
        self.base_delay = base_delay
        self.timeout = timeout
        self.user_agent = user_agent
        self.min_mutation_interval = min_mutation_interval
        self._last_mutation: float | None = None
        self._warned_deprecation = False
        self.retrier = Retrier(
            Backoff(attempts=max_attempts, base=base_delay, cap=max_wait),
            sleep=sleep,
            uniform=uniform or random.Random().random,
        )
        """The layer's one retry rule (``axl_action.retry``); the artifact download reuses it."""

    @classmethod
    def from_env(cls, environ: Mapping[str, str], token: str, **kwargs: Any) -> GitHubClient:
        """Build a client for ``GITHUB_API_URL`` (default ``https://api.github.com``).

        The token is an argument because the runner does not pass ``GITHUB_TOKEN`` into a
        container action; it comes from the action's ``github-token`` input.
        """
        return cls(environ.get("GITHUB_API_URL") or DEFAULT_API_URL, token, **kwargs)

    def __repr__(self) -> str:
        return f"GitHubClient(api_url={self.api_url!r}, token=***)"

    @property
    def token_fingerprint(self) -> str:
        """A harmless way to tell tokens apart in debug output: ``***`` plus the length."""
        return f"***({len(self._token)} chars)"

    # -- URLs -------------------------------------------------------------------------------

    def url(self, path_or_url: str) -> str:
        """Resolve an API path (``/repos/o/r``) or a same-origin absolute URL."""
        if path_or_url.startswith(("http://", "https://")):
            url = path_or_url
        else:
            url = self.api_url + "/" + path_or_url.lstrip("/")
        self._check_same_origin(url)
        return url

    def _same_origin(self, url: str) -> bool:
        parts = urlsplit(url)
        return (parts.scheme, parts.netloc.lower()) == self._origin

    def _check_same_origin(self, url: str) -> None:
        if not self._same_origin(url):
            # Refusing is what keeps the token from ever reaching another host.
            raise GitHubError(
                f"Refusing to send the GitHub token to {urlsplit(url).netloc!r}, which is not "
                f"the API host {self._origin[1]!r}",
                hint="this is a bug or a misconfigured GITHUB_API_URL",
            )

    # -- requests ---------------------------------------------------------------------------

    def request(
        self,
        method: str,
        path_or_url: str,
        *,
        params: Mapping[str, str | int] | None = None,
        json: Json = None,
        headers: Mapping[str, str] | None = None,
        expect_redirect: bool = False,
        permission_hint: str | None = None,
    ) -> requests.Response:
        """Send one request with retries; return the successful response.

        Same-origin redirects are followed (with the token). A redirect to another host is
        returned as-is when ``expect_redirect`` is true (artifact downloads), otherwise it is
        an error. ``permission_hint`` replaces the generic advice on 401/403/404, e.g.
        "add `actions: read` to the workflow's permissions".
        """
        method = method.upper()
        url = self.url(path_or_url)
        if method not in _READ_ONLY:
            # Spacing applies between distinct mutations; retries wait on their own terms.
            if self._last_mutation is not None:
                wait = self.min_mutation_interval - (self._clock() - self._last_mutation)
                if wait > 0:
                    self.sleep(wait)
            self._last_mutation = self._clock()
        state = _Target(method, url, params, json)

        def attempt(n: int) -> requests.Response:
            return self._attempt(
                state, n, headers=headers, expect_redirect=expect_redirect, hint=permission_hint
            )

        def give_up(retry: Retry, n: int) -> GitHubError:
            return GitHubError(
                f"GitHub API {method} {self._display(url)} failed: {retry.problem}",
                hint=f"gave up after {n} attempt(s); check the network and GITHUB_API_URL",
            )

        return self.retrier.run(attempt, what=f"GitHub {method} {self._display(url)}", give_up=give_up)

    def _attempt(
        self,
        state: _Target,
        attempt: int,
        *,
        headers: Mapping[str, str] | None,
        expect_redirect: bool,
        hint: str | None,
    ) -> requests.Response:
        """One attempt, following same-origin redirects; raises ``Retry`` when it may be repeated.

        ``state`` carries the request across attempts, so a retry after a redirect goes
        straight to where the redirect pointed.
        """
        for _ in range(6):  # the request itself and at most five redirects
            method, url = state.method, state.url
            try:
                resp = self._send(method, url, params=state.params, json=state.json, headers=headers)
            except requests.RequestException as exc:
                problem = redact(type(exc).__name__ + ": " + str(exc), self._token)
                if method in _IDEMPOTENT or isinstance(exc, requests.ConnectTimeout):
                    raise Retry(problem) from None
                raise GitHubError(
                    f"GitHub API {method} {self._display(url)} failed: {problem}",
                    hint=f"gave up after {attempt} attempt(s); check the network and GITHUB_API_URL",
                ) from None
            log.debug("GitHub %s %s -> %s", method, self._display(url), resp.status_code)
            if resp.status_code in (301, 302, 303, 307, 308):
                location = resp.headers.get("location", "")
                target = urljoin(url, location)
                if location and self._same_origin(target):
                    state.url = target
                    state.params = None  # the Location already carries the query
                    if resp.status_code == 303:
                        state.method, state.json = "GET", None
                    continue
                if expect_redirect and location:
                    return resp
                raise self._error(method, url, resp, hint)
            if resp.status_code < 300:
                return resp
            retry = self._retry(method, resp, attempt)
            if retry is None:
                raise self._error(method, url, resp, hint)
            raise retry
        raise GitHubError(
            f"GitHub API {state.method} {self._display(state.url)} redirected more than 5 times",
            hint="check GITHUB_API_URL",
        )

    def _send(
        self,
        method: str,
        url: str,
        *,
        params: Mapping[str, str | int] | None,
        json: Json,
        headers: Mapping[str, str] | None,
    ) -> requests.Response:
        merged = {
            "Accept": "application/vnd.github+json",
            "X-GitHub-Api-Version": API_VERSION,
            "User-Agent": self.user_agent,
            "Authorization": f"Bearer {self._token}",
        }
        if headers:
            merged.update(headers)
        resp = self._session.request(
            method,
            url,
            params=dict(params) if params else None,
            json=json,
            headers=merged,
            timeout=self.timeout,
            allow_redirects=False,
        )
        if not self._warned_deprecation and (resp.headers.get("deprecation") or resp.headers.get("sunset")):
            self._warned_deprecation = True
            log.warning(
                "GitHub reports API version %s as deprecated (sunset %s); this action needs an update",
                API_VERSION,
                resp.headers.get("sunset", "unknown"),
            )
        return resp

    def get_json(self, path: str, params: Mapping[str, str | int] | None = None, **kw: Any) -> Json:
        """GET and decode the JSON body."""
        return _json_body(self.request("GET", path, params=params, **kw))

    def post_json(self, path: str, body: Json, **kw: Any) -> Json:
        """POST a JSON body and decode the JSON answer."""
        return _json_body(self.request("POST", path, json=body, **kw))

    def patch_json(self, path: str, body: Json, **kw: Any) -> Json:
        """PATCH a JSON body and decode the JSON answer."""
        return _json_body(self.request("PATCH", path, json=body, **kw))

    def paginate(
        self,
        path: str,
        params: Mapping[str, str | int] | None = None,
        *,
        items_key: str | None = None,
        per_page: int = 100,
        max_items: int | None = None,
        permission_hint: str | None = None,
    ) -> Iterator[Json]:
        """Yield every item of a paginated list, following ``Link: rel="next"``.

        ``items_key`` names the list inside a wrapper object (``artifacts`` for
        ``{"total_count": n, "artifacts": [...]}``); without it the body must be a list.
        ``max_items`` stops early (listing endpoints can return thousands of entries).
        """
        query: dict[str, str | int] = dict(params or {})
        query.setdefault("per_page", per_page)
        url: str | None = self.url(path)
        first = True
        seen = 0
        while url is not None:
            resp = self.request("GET", url, params=query if first else None, permission_hint=permission_hint)
            first = False
            body = _json_body(resp)
            items = body.get(items_key) if items_key and isinstance(body, dict) else body
            if not isinstance(items, list):
                raise GitHubError(
                    f"GitHub API GET {self._display(url)} returned an unexpected body "
                    f"(expected a list{' under ' + repr(items_key) if items_key else ''})",
                    hint="is GITHUB_API_URL pointing at a GitHub API?",
                    status=resp.status_code,
                )
            for item in items:
                yield item
                seen += 1
                if max_items is not None and seen >= max_items:
                    return
            next_link = resp.links.get("next", {}).get("url")
            url = urljoin(url, next_link) if next_link else None

    # -- retry policy -----------------------------------------------------------------------

    def _retry(self, method: str, resp: requests.Response, attempt: int) -> Retry | None:
        """``Retry`` (with the wait GitHub asked for, if any) for ``resp``, or None when it must
        not be retried."""
        status = resp.status_code
        limited = is_rate_limited(resp)
        if not limited and status not in RETRYABLE_STATUSES:
            return None
        if not limited and method not in _IDEMPOTENT and status not in _REJECTED_UNPROCESSED:
            # A POST that hit a 5xx may have been applied (a comment created); repeating it
            # risks a duplicate, so surface the error instead.
            return None
        requested = self._requested_wait(resp)
        if limited and requested is None and status == 403:
            requested = SECONDARY_LIMIT_DEFAULT_WAIT
        if attempt >= self.max_attempts:
            if limited:
                raise self._rate_limit_error(method, resp, requested, attempt)
            return None
        if requested is not None and requested > self.max_wait:
            raise self._rate_limit_error(method, resp, requested, attempt)
        return Retry(f"answered {status}", wait=requested)

    def _requested_wait(self, resp: requests.Response) -> float | None:
        # One rule for the waits servers ask for, shared with the LLM providers: seconds or an
        # HTTP-date (UTC when it names no zone), never negative; a malformed value asks nothing.
        asked = parse_retry_after(resp.headers, datetime.fromtimestamp(self._clock(), UTC))
        if asked is not None:
            return asked
        if resp.headers.get("x-ratelimit-remaining") == "0":
            reset = resp.headers.get("x-ratelimit-reset")
            if reset and reset.isdigit():
                # +1 s: the reset second itself may still be inside the old window.
                return max(0.0, int(reset) - self._clock() + 1)
        return None

    # -- errors -----------------------------------------------------------------------------

    def _display(self, url: str) -> str:
        """The URL path (no query, no host) for messages: short and free of secrets."""
        return redact(urlsplit(url).path, self._token)

    def _rate_limit_error(
        self, method: str, resp: requests.Response, wait: float | None, attempt: int
    ) -> GitHubRateLimitError:
        message, doc_url = _error_fields(resp)
        resource = resp.headers.get("x-ratelimit-resource", "core")
        if wait is not None and wait > self.max_wait:
            hint = (
                f"GitHub asks to wait {wait:.0f}s, longer than the {self.max_wait:.0f}s this action "
                "waits; re-run the job later, or spread out the workflows sharing this token"
            )
        else:
            hint = f"gave up after {attempt} attempt(s); re-run the job later"
        return GitHubRateLimitError(
            redact(
                f"GitHub API {method} {self._display(resp.url)} is rate limited "
                f"({resp.status_code}, resource {resource!r}): {message}",
                self._token,
            ),
            hint=hint,
            status=resp.status_code,
            documentation_url=doc_url,
            request_id=resp.headers.get("x-github-request-id"),
        )

    def _error(
        self, method: str, url: str, resp: requests.Response, permission_hint: str | None
    ) -> GitHubError:
        status = resp.status_code
        message, doc_url = _error_fields(resp)
        text = redact(
            f"GitHub API {method} {self._display(url)} failed with {status}: {message}", self._token
        )
        request_id = resp.headers.get("x-github-request-id")
        kwargs: dict[str, Any] = {
            "status": status,
            "documentation_url": doc_url,
            "request_id": request_id,
        }
        if status == 401:
            return GitHubPermissionError(
                text,
                hint="the token is invalid or expired; check the action's github-token input",
                **kwargs,
            )
        if status in (403, 404):
            generic = (
                "the token lacks a permission: add the missing scope to the workflow's "
                "`permissions:` block (contents: read, actions: read, pull-requests: write); "
                "on pull requests from forks the token is read-only"
                if status == 403
                else "it does not exist, or the token cannot see it (a private repository needs "
                "`contents: read` / `actions: read` in the workflow's `permissions:`)"
            )
            return GitHubPermissionError(text, hint=permission_hint or generic, **kwargs)
        if status in (301, 302, 303, 307, 308):
            return GitHubError(
                text + " (unexpected redirect to another host)",
                hint="check GITHUB_API_URL",
                **kwargs,
            )
        if status >= 500:
            return GitHubError(text, hint="GitHub is having trouble; re-run the job later", **kwargs)
        return GitHubError(text, hint=None, **kwargs)


@dataclass
class _Target:
    """Where one request goes; a redirect moves it, so a retry goes straight to the new place."""

    method: str
    url: str
    params: Mapping[str, str | int] | None
    json: Json


def http_url(url: str, name: str, error: type[GitHubError], *, hint: str) -> SplitResult:
    """``url`` split into its parts when it is an http(s) URL with a host; otherwise one
    ``error`` naming it as the variable ``name`` it came from."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise error(f"{name} {url!r} is not an http(s) URL", hint=hint)
    return parts


def own_session(session: requests.Session | None) -> requests.Session:
    """``session`` (or a new one) that sends only the headers we set."""
    session = session or requests.Session()
    # A session may carry .netrc credentials; we send our own header (or none, to a blob
    # host) and never want both.
    session.trust_env = False
    return session


def repo_path(repo: str) -> str:
    """``/repos/{owner}/{name}`` for an ``owner/name`` slug, each part URL-quoted."""
    owner, sep, name = repo.partition("/")
    if not sep or not owner or not name or "/" in name:
        raise GitHubError(
            f"{repo!r} is not an owner/name repository slug", hint="pass GITHUB_REPOSITORY (e.g. octo/evals)"
        )
    return f"/repos/{quote(owner, safe='')}/{quote(name, safe='')}"


def is_rate_limited(resp: requests.Response) -> bool:
    """True for 429, and for a 403 that GitHub marks as a primary or secondary rate limit."""
    if resp.status_code == 429:
        return True
    if resp.status_code != 403:
        return False
    if resp.headers.get("retry-after") or resp.headers.get("x-ratelimit-remaining") == "0":
        return True
    message, _ = _error_fields(resp)
    return "rate limit" in message.lower()


def _error_fields(resp: requests.Response) -> tuple[str, str | None]:
    """``(message, documentation_url)`` from a GitHub error body, tolerant of non-JSON bodies."""
    try:
        body = resp.json()
    except ValueError:
        text = resp.text.strip()
        return (text[:300] or resp.reason or "no error message"), None
    if not isinstance(body, dict):
        return str(body)[:300], None
    message = str(body.get("message") or resp.reason or "no error message")
    errors = body.get("errors")
    if isinstance(errors, list) and errors:
        details = []
        for err in errors[:5]:
            if isinstance(err, dict):
                details.append(str(err.get("message") or err.get("code") or err))
            else:
                details.append(str(err))
        message += " (" + "; ".join(details) + ")"
    doc = body.get("documentation_url")
    return message, doc if isinstance(doc, str) else None


def _json_body(resp: requests.Response) -> Json:
    if resp.status_code == 204 or not resp.content:
        return None
    try:
        return resp.json()
    except ValueError:
        raise GitHubError(
            f"GitHub API {resp.request.method} {urlsplit(resp.url).path} returned a non-JSON body "
            f"(content-type {resp.headers.get('content-type')!r})",
            hint="is GITHUB_API_URL pointing at a GitHub API?",
            status=resp.status_code,
        ) from None
