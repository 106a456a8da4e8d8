"""JSON-over-HTTP transport with retries, admission hook and per-attempt timing.

Requests go out through the lean keep-alive HTTP/1.1 client in ``wire.py`` (one connection
pool per scheme/host/port, sized ``pool_size``), which costs a fraction of the CPU per call of
requests/urllib3; that matters because at the runner's concurrency the client's CPU is the
throughput limit (see ``wire.py``). ``requests`` (already a dependency) remains the path for
what the lean client deliberately does not do: proxies from the environment (``HTTP(S)_PROXY``
/ ``NO_PROXY``, resolved once per host), credentials in the URL, and a caller-supplied
``requests.Session``. Both paths verify TLS against the same CA bundle.

Why an explicit loop instead of ``urllib3.Retry``: the budget rules (spec §8.2) require an
admission check immediately before *every* dispatch attempt, after any backoff wait, and the
timing contract (spec §12.3) needs per-attempt wire time, the sum of backoff waits and the
number of rate-limit retries. ``urllib3.Retry`` can do neither (no pre-attempt hook, no
per-attempt observations), so the loop below owns retries and neither path retries by itself.
"""

from __future__ import annotations

import json
import os
import random
import re
import ssl
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote, urlsplit

import requests
from requests.adapters import HTTPAdapter
from requests.utils import DEFAULT_CA_BUNDLE_PATH, get_environ_proxies

from axl_action.providers.errors import ProviderConfigError, ProviderError
from axl_action.providers.redact import redact_headers, redact_secrets, redact_value
from axl_action.providers.types import CallTiming, WireExchange
from axl_action.providers.wire import (
    DEFAULT_MAX_BODY_BYTES,
    Origin,
    WireBodyTooLarge,
    WireError,
    WireTruncated,
)
from axl_action.retry import Backoff, parse_retry_after

REQUEST_ID_HEADERS = ("x-request-id", "request-id", "x-goog-request-id", "x-amzn-requestid")
"""Response headers that carry a provider request id, in lookup order."""

_MAX_ERROR_TEXT = 500


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How often and how patiently to retry a failed attempt."""

    max_attempts: int = 4
    """Total attempts including the first (1 = no retries)."""
    base_delay: float = 0.5
    """Backoff before the first retry, in seconds; doubles per retry."""
    max_delay: float = 20.0
    """Upper bound of one computed backoff wait, in seconds."""
    max_retry_after: float = 60.0
    """Upper bound on a server-requested wait (``retry-after`` or a body's ``RetryInfo``), in
    seconds."""
    retry_statuses: frozenset[int] = field(
        default_factory=lambda: frozenset({408, 409, 429, 500, 502, 503, 504, 529})
    )
    """HTTP statuses worth another attempt (everything else fails immediately)."""

    @property
    def backoff(self) -> Backoff:
        """These settings as the one backoff rule (``axl_action.retry.Backoff``)."""
        return Backoff(attempts=self.max_attempts, base=self.base_delay, cap=self.max_delay)


@dataclass(frozen=True, slots=True)
class HttpResult:
    """A successful (2xx) JSON response and how long it took."""

    status: int
    """HTTP status."""
    headers: Mapping[str, str]
    """Response headers (case-insensitive mapping)."""
    body: Any
    """Parsed JSON body."""
    request_id: str | None
    """Provider request id from the response headers, if any."""
    timing: CallTiming
    """Timing of the whole call across attempts."""
    exchange: WireExchange
    """The final exchange, redacted, for request capture."""


RETRY_INFO_TYPE = "type.googleapis.com/google.rpc.RetryInfo"

_DURATION = re.compile(r"\s*(-?\d+(?:\.\d*)?|-?\.\d+)s\s*")


def parse_retry_info(body: Any) -> float | None:
    """Seconds from a ``google.rpc.RetryInfo`` in an error body (``error.details[]`` entry with
    ``@type`` ``type.googleapis.com/google.rpc.RetryInfo`` and ``retryDelay`` such as ``"2s"``
    or ``"1.5s"``, the protobuf JSON form of a Duration). Gemini's quota 429s carry their wait
    there instead of in a header. ``None`` when absent or unparseable; never negative."""
    error = body.get("error") if isinstance(body, Mapping) else None
    details = error.get("details") if isinstance(error, Mapping) else None
    if not isinstance(details, list):
        return None
    for detail in details:
        if not isinstance(detail, Mapping) or detail.get("@type") != RETRY_INFO_TYPE:
            continue
        raw = detail.get("retryDelay")
        if isinstance(raw, Mapping):  # the (rare) {"seconds", "nanos"} spelling
            seconds, nanos = raw.get("seconds", 0), raw.get("nanos", 0)
            try:
                return max(0.0, float(seconds) + float(nanos) / 1e9)
            except (TypeError, ValueError):
                return None
        match = _DURATION.fullmatch(raw) if isinstance(raw, str) else None
        return max(0.0, float(match.group(1))) if match else None
    return None


def server_delay(headers: Mapping[str, str], body: Any, now: datetime) -> float | None:
    """The wait the server asked for: ``retry-after(-ms)``, else a body's ``RetryInfo``.

    A request of 0 s or less (or a date in the past) counts as no request, so the caller falls
    back to its backoff: ``retry-after: 0`` would otherwise fire every attempt at once.
    """
    for requested in (parse_retry_after(headers, now), parse_retry_info(body)):
        if requested is not None and requested > 0:
            return requested
    return None


def find_request_id(headers: Mapping[str, str], body: Any = None) -> str | None:
    """The provider request id from response headers, else from an error body."""
    for name in REQUEST_ID_HEADERS:
        value = headers.get(name)
        if value:
            return str(value)
    if isinstance(body, Mapping):
        rid = body.get("request_id")
        if isinstance(rid, str) and rid:
            return rid
    return None


def describe_error_body(body: Any) -> str:
    """A short human description of an error body in any of the three wire formats.

    OpenAI ``{"error": {"message", "type", "code"}}``, Anthropic ``{"type": "error", "error":
    {"type", "message"}}``, Google ``{"error": {"code", "message", "status"}}``.
    """
    if isinstance(body, Mapping):
        err = body.get("error")
        if isinstance(err, Mapping):
            message = err.get("message")
            kind = err.get("type") or err.get("status") or err.get("code")
            parts = [str(p) for p in (kind, message) if isinstance(p, str | int) and str(p)]
            if parts:
                return ": ".join(parts)[:_MAX_ERROR_TEXT]
        if isinstance(err, str) and err:
            return err[:_MAX_ERROR_TEXT]
        message = body.get("message")
        if isinstance(message, str) and message:
            return message[:_MAX_ERROR_TEXT]
        return json.dumps(body, ensure_ascii=False)[:_MAX_ERROR_TEXT]
    if isinstance(body, str):
        text = " ".join(body.split())
        return text[:_MAX_ERROR_TEXT] if text else "empty response body"
    return "no response body"


class HttpTransport:
    """POSTs JSON with bounded retries; one instance per provider, shared across threads.

    ``timeout`` (per call) bounds each attempt as a whole: connecting, sending and reading the
    reply (through requests: each connect and each read). ``session`` sends everything through
    that ``requests.Session`` instead of the lean client. ``close()`` closes idle connections.

    ``max_response_bytes`` caps every response body on both paths (default 32 MiB; providers
    built from the environment take ``AXL_EVAL_MAX_RESPONSE_BYTES``). A 2xx whose body is cut
    off, and a body over the cap, fail at once without a retry: the request was accepted and
    may have been billed.

    ``sleep``, ``clock``, ``wall_clock`` and ``rng`` are injectable so tests run instantly and
    deterministically.
    """

    def __init__(
        self,
        provider: str,
        *,
        session: requests.Session | None = None,
        policy: RetryPolicy | None = None,
        pool_size: int = 64,
        max_concurrency: int | None = None,
        secrets: tuple[str, ...] = (),
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.perf_counter,
        wall_clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        rng: Callable[[], float] = random.random,
        max_response_bytes: int = DEFAULT_MAX_BODY_BYTES,
    ) -> None:
        self.provider = provider
        self.policy = policy or RetryPolicy()
        self.max_response_bytes = max_response_bytes
        """Largest response body accepted (decompressed); larger replies fail unread."""
        self._secrets = secrets
        self._sleep = sleep
        self._clock = clock
        self._wall_clock = wall_clock
        self._rng = rng
        self._slots = threading.BoundedSemaphore(max_concurrency) if max_concurrency else None
        self._pool_size = pool_size
        # A caller-supplied session (custom adapters, auth, mounts) is always honoured, so all
        # traffic then goes through requests; otherwise requests is only the fallback for what
        # the lean client in wire.py does not do (proxies, credentials in the URL).
        self._custom_session = session is not None
        if session is None:
            session = requests.Session()
            # Pool sized for the runner's concurrency; retries are ours (max_retries=0).
            adapter = HTTPAdapter(pool_connections=4, pool_maxsize=pool_size, max_retries=0)
            session.mount("http://", adapter)
            session.mount("https://", adapter)
            # trust_env makes requests re-read proxy variables and ~/.netrc on *every* call
            # (a third of the client CPU per call at high concurrency). Proxies are resolved
            # once per host instead (_proxies_for) and the CA bundle variables once here.
            session.trust_env = False
            bundle = os.environ.get("REQUESTS_CA_BUNDLE") or os.environ.get("CURL_CA_BUNDLE")
            if bundle:
                session.verify = bundle
        self.session = session
        self._proxies: dict[str, dict[str, str]] = {}
        self._templates: dict[tuple[str, tuple[tuple[str, str], ...]], requests.PreparedRequest] = {}
        self._routes: dict[tuple[str, tuple[tuple[str, str], ...]], _Route] = {}
        self._origins: dict[tuple[str, str, int], Origin] = {}
        self._origins_lock = threading.Lock()
        self._tls: ssl.SSLContext | None = None

    def close(self) -> None:
        """Close idle connections (the transport stays usable; new ones open on demand)."""
        with self._origins_lock:
            origins = list(self._origins.values())
        for origin in origins:
            origin.close()
        self.session.close()

    def _tls_context(self) -> ssl.SSLContext:
        """Verifying TLS context with the CA bundle requests would use (its certifi bundle, or
        ``REQUESTS_CA_BUNDLE`` / ``CURL_CA_BUNDLE``), so both paths trust the same roots."""
        if self._tls is None:
            bundle = os.environ.get("REQUESTS_CA_BUNDLE") or os.environ.get("CURL_CA_BUNDLE")
            if bundle and os.path.isdir(bundle):
                context = ssl.create_default_context(capath=bundle)
            else:
                context = ssl.create_default_context(cafile=bundle or DEFAULT_CA_BUNDLE_PATH)
            context.set_alpn_protocols(["http/1.1"])
            self._tls = context
        return self._tls

    def _route(self, url: str, headers: Mapping[str, str]) -> _Route:
        """How to send to ``url`` with ``headers``, worked out once per distinct pair: the
        request head bytes, the redacted headers for capture, and the connection pool (or
        ``None``: send through requests)."""
        key = (url, tuple(headers.items()))
        route = self._routes.get(key)
        if route is not None:
            return route
        send_headers = {"content-type": "application/json", "accept": "application/json", **headers}
        parts = urlsplit(url)
        origin: Origin | None = None
        head = b""
        lean = (
            not self._custom_session
            and parts.scheme in ("http", "https")
            and parts.hostname is not None
            and parts.username is None
            and not self._proxies_for(url)
        )
        if lean and parts.hostname is not None:
            port = parts.port or (443 if parts.scheme == "https" else 80)
            origin_key = (parts.scheme, parts.hostname, port)
            with self._origins_lock:
                origin = self._origins.get(origin_key)
                if origin is None:
                    tls = self._tls_context() if parts.scheme == "https" else None
                    origin = Origin(parts.hostname, port, tls=tls, maxsize=self._pool_size)
                    self._origins[origin_key] = origin
            target = quote(parts.path or "/", safe="/:@!$&'()*+,;=-._~%")
            if parts.query:
                target += "?" + quote(parts.query, safe="/:@!$&'()*+,;=-._~%?")
            host = parts.netloc.rpartition("@")[2]
            lines = [f"POST {target} HTTP/1.1", f"host: {host}", "user-agent: axl-eval-action"]
            for name, value in send_headers.items():
                if any(c in f"{name}{value}" for c in "\r\n\0") or ":" in name:
                    # Never echo the value: it is usually the credential.
                    raise ProviderConfigError(
                        f"The {self.provider} request header {name!r} contains a line break or NUL",
                        hint="check the API key / header environment variables for stray newlines",
                    )
                lines.append(f"{name}: {value}")
            head = ("\r\n".join(lines) + "\r\ncontent-length: ").encode("latin-1")
        route = _Route(
            send_headers, redact_headers(send_headers), redact_secrets(url, self._secrets), origin, head
        )
        if len(self._routes) > 256:  # many distinct URLs (e.g. Gemini models): stay bounded
            self._routes.clear()
        self._routes[key] = route
        return route

    def _proxies_for(self, url: str) -> dict[str, str]:
        """Environment proxies for ``url``'s host (honouring NO_PROXY), resolved once."""
        parts = urlsplit(url)
        key = f"{parts.scheme}://{parts.netloc}"
        cached = self._proxies.get(key)
        if cached is None:
            cached = self._proxies[key] = dict(get_environ_proxies(key))
        return cached

    def _prepare(self, url: str, headers: Mapping[str, str], payload: bytes) -> requests.PreparedRequest:
        """A prepared POST, copied from a per-(url, headers) template: preparing from scratch
        (URL parsing, header normalisation) was another ~100 µs of client CPU per call."""
        key = (url, tuple(headers.items()))
        template = self._templates.get(key)
        if template is None:
            if len(self._templates) > 256:  # many distinct URLs (e.g. Gemini models): stay bounded
                self._templates.clear()
            template = self._templates[key] = requests.Request("POST", url, headers=dict(headers)).prepare()
        prepared = template.copy()
        prepared.body = payload
        prepared.headers["Content-Length"] = str(len(payload))
        return prepared

    def _send_via_requests(
        self, url: str, send_headers: Mapping[str, str], payload: bytes, timeout: float, t0: float
    ) -> tuple[int, Mapping[str, str], bytes, float]:
        # Straight to the connection adapter: an API POST needs no cookie jar, redirect
        # handling or per-call settings merge, which were ~25% of client CPU per call.
        prepared = self._prepare(url, send_headers, payload)
        with self.session.get_adapter(url).send(
            prepared,
            stream=True,
            timeout=timeout,
            proxies=self._proxies_for(url),
            verify=self.session.verify if self.session.verify is not None else True,
            cert=self.session.cert,
        ) as resp:
            ttfb_ms = (self._clock() - t0) * 1000.0
            return resp.status_code, resp.headers, self._read_body(resp), ttfb_ms

    def _read_body(self, resp: requests.Response) -> bytes:
        """The (decompressed) body of a streamed response, under the size cap; a 2xx cut off
        mid-body raises ``WireTruncated`` like the lean client does."""
        limit = self.max_response_bytes
        declared = resp.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > limit and not resp.headers.get("content-encoding"):
            raise WireBodyTooLarge(limit)
        parts: list[bytes] = []
        total = 0
        try:
            for part in resp.iter_content(65536):
                total += len(part)
                if total > limit:
                    raise WireBodyTooLarge(limit)
                parts.append(part)
        except requests.RequestException as exc:
            if 200 <= resp.status_code < 300:
                raise WireTruncated(resp.status_code, total, _describe_exception(exc)) from None
            raise
        return b"".join(parts)

    def backoff(self, retry_number: int) -> float:
        """The wait before the ``retry_number``-th retry (1-based): the project's one backoff
        rule (``axl_action.retry``), doubling from ``base_delay``, lengthened by up to 25 %,
        capped at ``max_delay``."""
        return self.policy.backoff.delay(retry_number, self._rng())

    def post_json(
        self,
        url: str,
        *,
        headers: Mapping[str, str],
        body: Mapping[str, Any],
        timeout: float,
        before_dispatch: Callable[[], None] | None = None,
    ) -> HttpResult:
        """POST ``body`` as JSON; return the parsed 2xx response or raise ``ProviderError``.

        ``before_dispatch`` runs immediately before every attempt (after waits); whatever it
        raises (an admission denial) propagates unchanged and no request is sent.
        """
        payload = json.dumps(body, ensure_ascii=False).encode("utf-8")
        route = self._route(url, headers)
        queued_ms = 0.0
        if self._slots is not None:
            t_wait = self._clock()
            self._slots.acquire()
            queued_ms = (self._clock() - t_wait) * 1000.0
        request = route.head + b"%d\r\n\r\n" % len(payload) + payload if route.origin is not None else b""
        call = _Call(url, route, body, payload, request, timeout)
        try:
            return self._attempts(call, _Times(queued_ms=queued_ms), before_dispatch)
        finally:
            if self._slots is not None:
                self._slots.release()

    def _attempts(self, call: _Call, times: _Times, before_dispatch: Callable[[], None] | None) -> HttpResult:
        """Send ``call`` until it succeeds, fails for good or runs out of attempts."""
        attempt = 0
        while True:
            attempt += 1
            if before_dispatch is not None:
                before_dispatch()
            reply = self._attempt(call, times)
            if reply.failure is None:
                return self._accepted(call, reply, attempt, times)
            if not reply.retryable or attempt >= self.policy.max_attempts:
                raise self._failed(call, reply, attempt)
            self._pause(reply, attempt, times)

    def _attempt(self, call: _Call, times: _Times) -> _Reply:
        """One attempt: the reply, or why it failed (its wire and first-byte times noted)."""
        origin = call.route.origin
        t0 = self._clock()
        headers: Mapping[str, str]
        try:
            if origin is not None:
                status, headers, raw, first_byte_at = origin.exchange(
                    call.request, call.timeout, self._clock, self.max_response_bytes
                )
                times.ttfb_ms = (first_byte_at - t0) * 1000.0
            else:
                status, headers, raw, times.ttfb_ms = self._send_via_requests(
                    call.url, call.route.send_headers, call.payload, call.timeout, t0
                )
        except WireError as exc:
            times.wire_ms += (self._clock() - t0) * 1000.0
            return _Reply(
                status=exc.status if isinstance(exc, WireTruncated) else 0,
                failure=f"network error: {exc}",
                retryable=exc.retryable,
                hint=exc.hint,
            )
        except requests.RequestException as exc:
            times.wire_ms += (self._clock() - t0) * 1000.0
            return _Reply(failure=f"network error: {_describe_exception(exc)}", retryable=True)
        times.wire_ms += (self._clock() - t0) * 1000.0
        text = raw.decode("utf-8", errors="replace")
        try:
            parsed: Any = json.loads(text) if text.strip() else None
            parsed_ok = parsed is not None
        except ValueError:
            parsed = text
            parsed_ok = False
        if 200 <= status < 300:
            return _Reply(status=status, headers=headers, body=parsed, text=text, parsed_ok=parsed_ok)
        return _Reply(
            status=status,
            headers=headers,
            body=parsed,
            failure=f"HTTP {status}: {describe_error_body(parsed)}",
            retryable=status in self.policy.retry_statuses,
        )

    def _accepted(self, call: _Call, reply: _Reply, attempt: int, times: _Times) -> HttpResult:
        """The result of a 2xx reply; raises for one whose body is not JSON."""
        exchange = self._exchange(call, reply, attempt, scrub=not reply.parsed_ok)
        if not reply.parsed_ok:
            # A 2xx that is not JSON was still dispatched (and maybe billed); it is not
            # retried so a misbehaving gateway cannot multiply the spend.
            raise ProviderError(
                f"{self.provider} returned HTTP {reply.status} with a body that is not valid JSON: "
                f"{describe_error_body(reply.text)}",
                provider=self.provider,
                status=reply.status,
                retryable=False,
                request_id=find_request_id(reply.headers),
                attempts=attempt,
                hint="check the base URL points at a compatible API",
                secrets=self._secrets,
                exchange=exchange,
            )
        return HttpResult(
            status=reply.status,
            headers=reply.headers,
            body=reply.body,
            request_id=find_request_id(reply.headers, reply.body),
            timing=times.timing(attempt),
            exchange=exchange,
        )

    def _failed(self, call: _Call, reply: _Reply, attempt: int) -> ProviderError:
        """The error of a call whose last attempt failed (for good, or the attempts ran out)."""
        exchange = self._exchange(call, reply, attempt, scrub=True)
        tries = f" after {attempt} attempts" if attempt > 1 else ""
        return ProviderError(
            f"{self.provider} request failed{tries}: {reply.failure}",
            provider=self.provider,
            status=reply.status,
            retryable=reply.retryable,
            request_id=find_request_id(reply.headers, reply.body),
            attempts=attempt,
            hint=reply.hint or _hint_for(reply.status, call.url),
            secrets=self._secrets,
            exchange=exchange,
        )

    def _pause(self, reply: _Reply, attempt: int, times: _Times) -> None:
        """Wait before the next attempt: as long as the server asked (capped), else the backoff."""
        requested = server_delay(reply.headers, reply.body, self._wall_clock()) if reply.status else None
        delay = (
            min(requested, self.policy.max_retry_after) if requested is not None else self.backoff(attempt)
        )
        if reply.status == 429:
            times.rate_limit_retries += 1
        if delay > 0:
            self._sleep(delay)
        times.retry_ms += delay * 1000.0

    def _exchange(self, call: _Call, reply: _Reply, attempts: int, *, scrub: bool) -> WireExchange:
        # Bodies are scrubbed eagerly only on failures (an error body may echo the key and the
        # exchange travels with the exception); on success they are kept raw because capture
        # redacts every record it builds, and scrubbing costs ~50 µs per call on the hot path.
        body = call.body
        return WireExchange(
            method="POST",
            url=call.route.safe_url,
            request_headers=call.route.safe_headers,
            request_body=redact_value(body, extra=self._secrets) if scrub else body,
            status=reply.status or None,
            response_headers=redact_headers(dict(reply.headers)) if scrub else reply.headers,
            response_body=redact_value(reply.body, extra=self._secrets) if scrub else reply.body,
            attempts=attempts,
        )


@dataclass(frozen=True, slots=True)
class _Call:
    """One ``post_json`` call: where it goes and what it sends, the same for every attempt."""

    url: str
    route: _Route
    body: Mapping[str, Any]
    payload: bytes
    """The JSON body."""
    request: bytes
    """The whole request (lean client only; empty when sending through requests)."""
    timeout: float


@dataclass(slots=True)
class _Reply:
    """What one attempt got: a 2xx reply (``failure`` is ``None``), or why it failed."""

    status: int = 0
    """The HTTP status; 0 when no reply came."""
    headers: Mapping[str, str] = field(default_factory=dict)
    body: Any = None
    """The parsed JSON body, the text when it is not JSON, ``None`` when empty or none came."""
    text: str = ""
    parsed_ok: bool = False
    failure: str | None = None
    retryable: bool = False
    hint: str | None = None


@dataclass(slots=True)
class _Times:
    """A call's time so far, over its attempts (milliseconds)."""

    queued_ms: float
    wire_ms: float = 0.0
    retry_ms: float = 0.0
    ttfb_ms: float = 0.0
    rate_limit_retries: int = 0

    def timing(self, attempts: int) -> CallTiming:
        return CallTiming(
            queued_ms=self.queued_ms,
            attempts=attempts,
            retry_ms=self.retry_ms,
            ttfb_ms=self.ttfb_ms,
            wire_ms=self.wire_ms,
            rate_limit_retries=self.rate_limit_retries,
        )


@dataclass(frozen=True, slots=True)
class _Route:
    """Per-(URL, headers) send plan, computed once (see ``HttpTransport._route``)."""

    send_headers: Mapping[str, str]
    safe_headers: Mapping[str, str]
    """``send_headers`` with secret values redacted, for exchanges."""
    safe_url: str
    """The URL with any secret redacted, for exchanges."""
    origin: Origin | None
    """The lean client's connection pool; ``None`` = send through requests."""
    head: bytes
    """Request line and headers up to the ``content-length`` value (lean client only)."""


def _describe_exception(exc: requests.RequestException) -> str:
    if isinstance(exc, requests.Timeout):
        return "the request timed out"
    if isinstance(exc, requests.ConnectionError):
        inner = str(exc.args[0]) if exc.args else ""
        if "reset" in inner.lower() or "aborted" in inner.lower():
            return "the connection was reset"
        return "could not connect or the connection broke"
    return type(exc).__name__


def _hint_for(status: int, url: str) -> str | None:
    if status == 0:
        return f"check network access to {url.split('?')[0]} (or raise the timeout)"
    if status in (401, 403):
        return "check the API key environment variable"
    if status == 404:
        return "check the model name and the base URL"
    if status == 429:
        return "rate limited: lower concurrency or raise your provider quota"
    return None
