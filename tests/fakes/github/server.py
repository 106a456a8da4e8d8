"""``FakeGitHub``: the areas together, the dispatch of each server's requests, the REST
router and headers, and the HTTP handler."""

from __future__ import annotations

import re
import secrets
import threading
import time
import traceback
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from tests.fakes.github.actions import ActionsApi
from tests.fakes.github.blob import BlobStore
from tests.fakes.github.issues import IssuesApi
from tests.fakes.github.pulls import PullsApi
from tests.fakes.github.records import RecordedExchange, RecordedRequest
from tests.fakes.github.repos import ReposApi
from tests.fakes.github.results import ResultsService
from tests.fakes.github.seeding import Seeding
from tests.fakes.github.wire import _error, _Response


class FakeGitHub(IssuesApi, PullsApi, ReposApi, ActionsApi, BlobStore, ResultsService, Seeding):
    """The fake; a context manager that starts and stops the three servers."""

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
