"""Hooks on the application's own HTTP clients, so its SDK calls are measured as they are.

The official ``openai``, ``anthropic`` and ``google-genai`` clients send every request through
``httpx2`` (their current releases) or ``httpx`` (older releases, LangChain's and LiteLLM's own
clients); older code uses ``requests``. While a measurement is installed (the runner installs
one around every run; :func:`measure_model_calls` is the same for programmatic use) the
``send`` method of each of those clients that the application has installed is wrapped: a
request recognised as a model call (``providers/measure.py``) is checked for admission before
it leaves and settled from its reply; anything else passes through untouched.

Nothing here imports a client library at module load: each is imported when a measurement is
installed, and only if the application has it. The wrapping is process-wide while installed
(an SDK client may have been made anywhere, at import time included), re-entrant (nested
installs share one set of hooks) and thread-safe; the original methods are restored exactly
when the last measurement ends. Who pays for a call is decided per call from the calling
context (``contextvars``), so concurrent items never mix; a call no item owns is counted as the
run's ``unattributed`` spend.

A request the budget refuses is not sent. Its reply is made up here: HTTP 402 with the
provider's own error body and ``x-should-retry: false``, which the openai and anthropic clients
obey before their status rules, and which google-genai does not retry (402 is not in its retry
statuses), so no SDK retries a refusal. The runner maps an item that failed after a refusal to
the same budget outcome as ``runtime.chat``.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import threading
import zlib
from collections.abc import Callable, Iterator, Mapping
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

import orjson

from axl_action.providers.measure import (
    DENIED_HEADERS,
    DENIED_STATUS,
    Call,
    Exchange,
    Settings,
    SSEDecoder,
    denied_body,
    recognise,
    recognise_path,
    wants_usage_injection,
)
from axl_action.providers.pricing import PricingTable
from axl_action.runtime.scope import Scope

if TYPE_CHECKING:
    from axl_action.cache.calls import ResponseCache

_HTTPX_LIBRARIES = ("httpx2", "httpx")

_lock = threading.Lock()
_installed: list[Settings] = []
_restore: list[tuple[type, str, Any]] = []
# Set while a measured request is inside a hooked client: a client that sends through another
# hooked client (a wrapper over a wrapper) is counted once, by the outermost.
_inside: ContextVar[bool] = ContextVar("axl_measured_request", default=False)


def _current() -> Settings | None:
    return _installed[-1] if _installed else None


@contextlib.contextmanager
def measure_model_calls(
    *,
    pricing: PricingTable | None = None,
    include_usage: bool = True,
    redact_content: bool = False,
    unattributed: Scope[Any] | None = None,
    cache: ResponseCache | None = None,
) -> Iterator[None]:
    """Measure the model calls the application's SDK clients make while the block runs.

    Calls made inside a scope (``runtime.scope.track``, an eval item) are recorded in it,
    priced by ``pricing`` (default: the bundled table) and refused before they are sent when a
    budget of that scope closes. ``include_usage=False`` leaves streamed OpenAI chat requests
    as the app wrote them (without ``stream_options.include_usage`` such a call settles
    ``usage_missing``). ``unattributed``: the scope that records calls no scope owns (default:
    none; they are then measured but recorded nowhere). ``cache``: the response cache the
    calls are answered from and stored in, by its mode (docs/cache.md; default: none).
    """
    settings = Settings(pricing, include_usage, redact_content, unattributed, cache)
    install(settings)
    try:
        yield
    finally:
        uninstall(settings)


def install(settings: Settings) -> None:
    """Start measuring with ``settings`` (hooks are installed by the first measurement)."""
    with _lock:
        if not _installed:
            _hook_all()
        _installed.append(settings)


def uninstall(settings: Settings) -> None:
    """Stop measuring with ``settings``; the last one out restores the original methods."""
    with _lock:
        with contextlib.suppress(ValueError):
            _installed.remove(settings)
        if not _installed:
            for owner, name, original in reversed(_restore):
                setattr(owner, name, original)
            _restore.clear()


def installed() -> bool:
    """True while a measurement is installed."""
    return bool(_installed)


def _optional(name: str) -> Any:
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


def _patch(owner: type, name: str, replacement: Any) -> None:
    _restore.append((owner, name, owner.__dict__[name]))
    setattr(owner, name, replacement)


def prepare() -> None:
    """Import the HTTP client libraries the hooks wrap (those the application has installed)
    now, without hooking them: a runner calls it before its clock starts, so a run's
    ``duration`` does not count the process's one-time imports (httpx2 and httpx take ~20 ms,
    about 1 µs per item of a 20,000-item run). Installing a measurement later only patches."""
    for name in (*_HTTPX_LIBRARIES, "requests"):
        _optional(name)


def _hook_all() -> None:
    for name in _HTTPX_LIBRARIES:
        lib = _optional(name)
        if lib is not None:
            _patch(lib.Client, "send", _httpx_sync(lib, lib.Client.__dict__["send"]))
            _patch(lib.AsyncClient, "send", _httpx_async(lib, lib.AsyncClient.__dict__["send"]))
    requests = _optional("requests")
    if requests is not None:
        _patch(requests.Session, "send", _requests_send(requests, requests.Session.__dict__["send"]))


# ---- shared steps


def _begin(
    method: str, url: object, path: str, headers: Any, body_of: Callable[[], bytes | None]
) -> Exchange | None:
    """The exchange for a request if it is a measured model call, else ``None``."""
    settings = _current()
    if settings is None or _inside.get():
        return None
    api = recognise_path(method, path)
    if api is None:
        return None
    body = body_of()
    if body is None:
        return None
    call = recognise(api, path, body)
    if call is None:
        return None
    injected = False
    if settings.include_usage:
        new = wants_usage_injection(call, body)
        if new is not None:
            body, injected = new, True
    return Exchange(call, settings, url, headers, body, injected)


def _denied_content(call: Call) -> bytes:
    return orjson.dumps(denied_body(call))


class _Tap:
    """Reads a reply's bytes as the application reads them, and settles at the end."""

    __slots__ = ("_buffer", "_decoder", "_decompress", "_ex", "_keep", "_size")

    def __init__(self, ex: Exchange, content_type: str, encoding: str) -> None:
        self._ex = ex
        sse = "text/event-stream" in content_type or (ex.call.stream and "json" not in content_type)
        self._decoder = SSEDecoder(ex.feed_event) if sse else None
        # A streamed reply's bytes are kept only for the cache (a replay serves them again).
        self._keep = sse and ex.keeps_reply
        self._buffer: list[bytes] = []
        self._size = 0
        encoding = encoding.strip().lower()
        self._decompress: Any = None
        if encoding in ("gzip", "deflate"):
            self._decompress = zlib.decompressobj(47 if encoding == "gzip" else zlib.MAX_WBITS)
        elif encoding not in ("", "identity"):
            self._decompress = False  # br, zstd...: not decoded here

    def feed(self, raw: bytes) -> None:
        if self._decompress is False:
            return
        chunk = self._decompress.decompress(raw) if self._decompress else raw
        if self._decoder is not None:
            self._decoder.feed(chunk)
        if self._decoder is None or self._keep:
            self._size += len(chunk)
            if self._size <= 32 * 1024 * 1024:
                self._buffer.append(chunk)

    @contextlib.contextmanager
    def reading(self) -> Iterator[None]:
        """Around the application's read of a streamed reply (every client's stream wrapper):
        an error while reading settles the call as broken off, the end of the stream as whole;
        an abandoned read (``GeneratorExit``) is left to the stream's ``close``."""
        try:
            yield
        except Exception as exc:
            self.finish(complete=False, broken=_broke(exc))
            raise
        self.finish(complete=True)

    def finish(self, *, complete: bool, broken: str | None = None) -> None:
        if self._decompress is False:
            broken = broken or "the reply is compressed with an encoding this measurement does not decode"
        if self._decoder is not None:
            if complete:
                self._decoder.finish()
            # An SDK closes a stream once its terminal event arrived, without reading on to
            # the end: that stream is still whole.
            complete = complete or (broken is None and (self._decoder.done or self._ex.stream_ended))
            whole = self._keep and self._size <= 32 * 1024 * 1024
            self._ex.settle(
                None,
                events=True,
                complete=complete,
                broken=broken or self._decoder.broken,
                raw=b"".join(self._buffer) if whole else None,
            )
        else:
            self._ex.settle(b"".join(self._buffer), events=False, complete=complete, broken=broken)


def _broke(exc: BaseException) -> str:
    return f"the reply broke off while it was read ({type(exc).__name__})"


def _answered(ex: Exchange, reply: Callable[[int, Mapping[str, str], bytes], Any]) -> Any:
    """The response a call gets without going out, made by ``reply(status, headers, body)``:
    a cached reply, or the budget's refusal (``None``: the call is dispatched)."""
    served = ex.cached()
    if served is not None:
        return reply(*served)
    if not ex.dispatch():
        return reply(DENIED_STATUS, DENIED_HEADERS, _denied_content(ex.call))
    return None


class _Sent:
    """Around the client's own send: a hooked client it sends through does not measure the
    call again, and a send that raises (no reply) fails the attempt.

    A class, not ``@contextlib.contextmanager``: it runs on every measured call, and the
    generator machinery costs several Python-level calls more."""

    __slots__ = ("_ex", "_token")

    def __init__(self, ex: Exchange) -> None:
        self._ex = ex

    def __enter__(self) -> None:
        self._token = _inside.set(True)

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: Any) -> None:
        try:
            if kind is not None:
                self._ex.failed(0)
        finally:
            _inside.reset(self._token)


def _succeeded(ex: Exchange, response: Any) -> bool:
    """Record the reply's status (and the headers a cache entry keeps); a reply outside 2xx
    fails the attempt, and its body is not read here."""
    status: int = response.status_code
    ex.headers_received(status, _kept_headers(response.headers) if ex.keeps_reply else None)
    if not 200 <= status < 300:
        ex.failed(status)
        return False
    return True


# ---- httpx / httpx2


def _httpx_request(lib: Any, request: Any, ex: Exchange) -> Any:
    """The request to send: the original, or a copy carrying the rewritten body."""
    if not ex.injected:
        return request
    headers = [(k, v) for k, v in request.headers.raw if k.lower() != b"content-length"]
    return lib.Request(
        request.method, request.url, headers=headers, content=ex.request_body, extensions=request.extensions
    )


def _httpx_exchange(request: Any) -> Exchange | None:
    def body() -> bytes | None:
        try:
            content = request.content
        except Exception:  # a streamed upload (files): not a model call's JSON body
            return None
        return content if isinstance(content, bytes) else None

    url = request.url  # an httpx URL: made text only if the exchange reads it
    return _begin(request.method, url, url.path, request.headers, body)


def _httpx_sync(lib: Any, original: Callable[..., Any]) -> Callable[..., Any]:
    class SyncTap(lib.SyncByteStream):  # type: ignore[misc]
        def __init__(self, inner: Any, tap: _Tap) -> None:
            self._inner, self._tap = inner, tap

        def __iter__(self) -> Iterator[bytes]:
            with self._tap.reading():
                for chunk in self._inner:
                    self._tap.feed(chunk)
                    yield chunk

        def close(self) -> None:
            try:
                self._inner.close()
            finally:
                self._tap.finish(complete=False)  # no-op after a full read

    def send(self: Any, request: Any, *args: Any, **kwargs: Any) -> Any:
        ex = _httpx_exchange(request)
        if ex is None:
            return original(self, request, *args, **kwargs)
        request = _httpx_request(lib, request, ex)
        answered = _httpx_answered(lib, request, ex)
        if answered is not None:
            return answered
        with _Sent(ex):
            response = original(self, request, *args, **kwargs)
        return _httpx_reply(ex, response, kwargs.get("stream", False), SyncTap)

    send.__wrapped__ = original  # type: ignore[attr-defined]
    return send


def _httpx_async(lib: Any, original: Callable[..., Any]) -> Callable[..., Any]:
    class AsyncTap(lib.AsyncByteStream):  # type: ignore[misc]
        def __init__(self, inner: Any, tap: _Tap) -> None:
            self._inner, self._tap = inner, tap

        async def __aiter__(self) -> Any:
            with self._tap.reading():
                async for chunk in self._inner:
                    self._tap.feed(chunk)
                    yield chunk

        async def aclose(self) -> None:
            try:
                await self._inner.aclose()
            finally:
                self._tap.finish(complete=False)

    async def send(self: Any, request: Any, *args: Any, **kwargs: Any) -> Any:
        ex = _httpx_exchange(request)
        if ex is None:
            return await original(self, request, *args, **kwargs)
        request = _httpx_request(lib, request, ex)
        answered = _httpx_answered(lib, request, ex)
        if answered is not None:
            return answered
        with _Sent(ex):
            response = await original(self, request, *args, **kwargs)
        return _httpx_reply(ex, response, kwargs.get("stream", False), AsyncTap)

    send.__wrapped__ = original  # type: ignore[attr-defined]
    return send


def _httpx_answered(lib: Any, request: Any, ex: Exchange) -> Any:
    """:func:`_answered` as an httpx response."""

    def reply(status: int, headers: Mapping[str, str], content: bytes) -> Any:
        return lib.Response(status, headers=headers, content=content, request=request)

    return _answered(ex, reply)


def _httpx_reply(ex: Exchange, response: Any, streamed: bool, tap_class: Any) -> Any:
    if not _succeeded(ex, response):
        return response
    headers = response.headers
    content_type = headers.get("content-type", "")
    if not streamed:
        # httpx read the whole body inside send: .content is already decoded (so the tap is
        # told no encoding, and the header is not looked up).
        tap = _Tap(ex, content_type, "")
        tap.feed(response.content)
        tap.finish(complete=True)
        return response
    tap = _Tap(ex, content_type, headers.get("content-encoding", ""))
    response.stream = tap_class(response.stream, tap)
    return response


# ---- requests


def _requests_send(requests: Any, original: Callable[..., Any]) -> Callable[..., Any]:
    def send(self: Any, request: Any, **kwargs: Any) -> Any:
        def body() -> bytes | None:
            raw = request.body
            if isinstance(raw, str):
                return raw.encode("utf-8")
            return raw if isinstance(raw, bytes) else None

        url = request.url or ""
        ex = _begin(request.method or "", url, request.path_url.split("?", 1)[0], request.headers, body)
        if ex is None:
            return original(self, request, **kwargs)
        if ex.injected:
            request = request.copy()
            request.body = ex.request_body
            request.headers["Content-Length"] = str(len(ex.request_body))
        answered = _answered(ex, functools.partial(_requests_reply, requests, url=url, request=request))
        if answered is not None:
            return answered
        with _Sent(ex):
            response = original(self, request, **kwargs)
        if not _succeeded(ex, response):
            return response
        # requests decodes content-encoding itself: the tap sees decoded bytes.
        tap = _Tap(ex, response.headers.get("content-type", ""), "")
        if not kwargs.get("stream"):
            tap.feed(response.content)
            tap.finish(complete=True)
            return response
        inner_iter = response.iter_content
        inner_close = response.close

        def iter_content(chunk_size: int | None = 1, decode_unicode: bool = False) -> Iterator[Any]:
            with tap.reading():
                for chunk in inner_iter(chunk_size=chunk_size, decode_unicode=False):
                    tap.feed(chunk)
                    yield chunk.decode(response.encoding or "utf-8") if decode_unicode else chunk

        def close() -> None:
            try:
                inner_close()
            finally:
                tap.finish(complete=False)

        response.iter_content = iter_content
        response.close = close
        return response

    send.__wrapped__ = original  # type: ignore[attr-defined]
    return send


def _requests_reply(
    requests: Any, status: int, headers: Mapping[str, str], content: bytes, *, url: str, request: Any
) -> Any:
    """A ``requests.Response`` made here, never sent: a refusal or a reply from the cache."""
    import io

    response = requests.Response()
    response.status_code = status
    response.headers = requests.structures.CaseInsensitiveDict(headers)
    response.raw = io.BytesIO(content)
    response.url = url
    response.request = request
    response.reason = "Payment Required" if status == DENIED_STATUS else ""
    return response


def _kept_headers(headers: Any) -> dict[str, str]:
    """The reply headers a cache entry keeps (``KEPT_RESPONSE_HEADERS``), from any client's
    case-insensitive header mapping."""
    from axl_action.cache.entry import KEPT_RESPONSE_HEADERS

    return {name: headers.get(name, "") for name in KEPT_RESPONSE_HEADERS}


__all__ = ["installed", "measure_model_calls"]


def runtime_pricing(runtime: Any) -> PricingTable | None:
    """The runtime's price table (``Runtime(pricing=...)``), or ``None`` for the bundled one."""
    table = getattr(runtime, "pricing", None)
    return table if isinstance(table, PricingTable) else None


def warn_unattributed(record: Any) -> None:
    """One console line for the run's unattributed spend (calls no item owned)."""
    from axl_action.evals.log import warn
    from axl_action.formatting import plural, usd

    ops = record.get("operations", {})
    calls = int(ops.get("total", 0) + ops.get("denied", 0))
    warn(
        f"{plural(calls, 'model call')} ran outside any item (unattributed, {usd(record.get('knownCost', 0))}): "
        "run them inside the workflow, or propagate the context to your own threads "
        "(axl_action.propagate_context / ContextThreadPoolExecutor)"
    )
