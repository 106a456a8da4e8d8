"""Loopback fakes of the OpenAI, Anthropic and Gemini HTTP APIs, scriptable per test.

Each ``FakeLLMServer`` listens on 127.0.0.1 on an ephemeral port, speaks its provider's real
wire format (success bodies with usage, error envelopes, request-id headers) and records every
request so tests can assert what was sent (and that the key went only in the right header).

Script replies with ``server.enqueue(reply, ...)``; when the script is empty the server answers
with its flavor's default success reply. Reply builders: ``ok``, ``error``, ``rate_limited``,
``malformed``, ``no_usage``, ``reset``, ``slow``, ``truncated``, ``retry_info``.

``answered`` lists the requests whose whole reply went out (what a provider bills);
``hold_after(n)`` leaves every request after the n-th unanswered, as calls in flight are when
their client dies, until ``drop_held()``.
"""

from __future__ import annotations

import json
import socket
import struct
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal

Flavor = Literal["openai", "anthropic", "google"]


@dataclass
class Reply:
    """One scripted answer."""

    status: int = 200
    body: Any = None
    """A JSON-able value, or ``str``/``bytes`` sent verbatim; ``None`` = flavor default."""
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    """Seconds to wait before answering (to trigger client timeouts)."""
    reset: bool = False
    """Abort the TCP connection (RST) instead of answering."""
    truncate_after: int | None = None
    """Send the status, the headers (with the full ``content-length``) and only this many body
    bytes, then abort the connection (RST)."""
    stall_after: int | None = None
    """Send the status, the headers and only this many body bytes, then stall (as a model
    still generating does) for up to a second and close: for clients that stop reading early."""
    chunked: bool = False
    """Send the body with ``transfer-encoding: chunked`` (64 KiB chunks) instead of a length."""


@dataclass
class RecordedRequest:
    """A request the fake received."""

    method: str
    path: str
    headers: dict[str, str]
    """Header names lower-cased."""
    raw: bytes
    body: Any
    """Parsed JSON body (``None`` when not JSON)."""
    at: float
    """``time.monotonic()`` on arrival."""


class FakeLLMServer:
    """A scriptable loopback server for one provider flavor."""

    def __init__(self, flavor: Flavor, *, default_delay: float = 0.0, request_id_prefix: str = "req") -> None:
        self.flavor = flavor
        self.default_delay = default_delay
        self.requests: list[RecordedRequest] = []
        self.answered: list[RecordedRequest] = []
        """Requests whose whole reply was written (what a real provider would bill)."""
        self._hold_after: int | None = None
        self._held = threading.Event()
        self._script: deque[Reply] = deque()
        self._lock = threading.Lock()
        self._counter = 0
        self._prefix = request_id_prefix
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.responder: Callable[[RecordedRequest], Reply] | None = None
        """Answers a request when the script is empty (a reply that depends on the request:
        the usage of a prompt, a tool call for a tool-calling turn)."""

    # --- lifecycle -----------------------------------------------------------------------

    def start(self) -> FakeLLMServer:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # Headers and body go out in separate writes; with Nagle on, the body would wait
            # for the client's delayed ACK (~40 ms per call), which real servers never do.
            disable_nagle_algorithm = True

            def log_message(self, format: str, *args: Any) -> None:
                return

            def do_POST(self) -> None:
                fake._handle(self)

        class Server(ThreadingHTTPServer):
            daemon_threads = True
            block_on_close = False
            request_queue_size = 256

            def handle_error(self, request: Any, client_address: Any) -> None:
                return  # resets and client timeouts are expected here

        self._server = Server(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> FakeLLMServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        assert self._server is not None
        return int(self._server.server_address[1])

    @property
    def base_url(self) -> str:
        """What to put in ``<PROVIDER>_BASE_URL``."""
        root = f"http://127.0.0.1:{self.port}"
        return f"{root}/v1" if self.flavor == "openai" else root

    # --- scripting -----------------------------------------------------------------------

    def hold_after(self, count: int | None) -> None:
        """Answer only the first ``count`` requests to arrive; later ones wait, unanswered, until
        :meth:`drop_held` (``None``: answer everything again)."""
        with self._lock:
            self._hold_after = count

    def drop_held(self) -> None:
        """Close the held requests without an answer (their client is gone), answer new ones."""
        with self._lock:
            self._hold_after = None
        self._held.set()

    def enqueue(self, *replies: Reply) -> None:
        with self._lock:
            self._script.extend(replies)

    def ok(
        self,
        text: str = "ok",
        *,
        usage: dict[str, Any] | None = None,
        model: str | None = None,
        headers: dict[str, str] | None = None,
        extra: dict[str, Any] | None = None,
    ) -> Reply:
        """A success body; ``usage`` replaces the flavor's usage object (wire keys)."""
        body = self._success_body(text, usage, model or "fake-model")
        if extra:
            body.update(extra)
        return Reply(200, body, dict(headers or {}))

    def no_usage(self, text: str = "ok") -> Reply:
        body = self._success_body(text, None, "fake-model")
        body.pop({"openai": "usage", "anthropic": "usage", "google": "usageMetadata"}[self.flavor])
        return Reply(200, body)

    def error(
        self, status: int, message: str = "something went wrong", *, headers: dict[str, str] | None = None
    ) -> Reply:
        """An error in the flavor's real envelope."""
        if self.flavor == "openai":
            kind = (
                "rate_limit_error"
                if status == 429
                else ("server_error" if status >= 500 else "invalid_request_error")
            )
            body: Any = {"error": {"message": message, "type": kind, "param": None, "code": kind}}
        elif self.flavor == "anthropic":
            kind = {429: "rate_limit_error", 529: "overloaded_error", 401: "authentication_error"}.get(
                status, "api_error" if status >= 500 else "invalid_request_error"
            )
            body = {"type": "error", "error": {"type": kind, "message": message}}
        else:
            state = {
                429: "RESOURCE_EXHAUSTED",
                503: "UNAVAILABLE",
                500: "INTERNAL",
                400: "INVALID_ARGUMENT",
            }.get(status, "UNKNOWN")
            body = {"error": {"code": status, "message": message, "status": state}}
        return Reply(status, body, dict(headers or {}))

    def rate_limited(self, retry_after: float | None = None, *, http_date_in: float | None = None) -> Reply:
        """A 429 with ``retry-after`` in seconds, or as an HTTP-date ``http_date_in`` s ahead."""
        headers: dict[str, str] = {}
        if retry_after is not None:
            headers["retry-after"] = f"{retry_after:g}"
        if http_date_in is not None:
            headers["retry-after"] = format_datetime(
                datetime.now(UTC) + timedelta(seconds=http_date_in), usegmt=True
            )
        return self.error(429, "Rate limit reached", headers=headers)

    @staticmethod
    def malformed(text: str = '{"choices": [ this is not json') -> Reply:
        return Reply(200, text, {"content-type": "application/json"})

    @staticmethod
    def reset() -> Reply:
        return Reply(reset=True)

    def truncated(self, keep: int = 40) -> Reply:
        """A 200 success whose body is cut off after ``keep`` bytes by a connection reset."""
        reply = self.ok("this answer never arrives whole " * 4)
        reply.truncate_after = keep
        return reply

    def retry_info(self, delay: str, *, headers: dict[str, str] | None = None) -> Reply:
        """Gemini's quota 429: the wait is in ``error.details[]`` as a ``google.rpc.RetryInfo``."""
        reply = self.error(429, "Quota exceeded for metric generate_content_requests", headers=headers)
        reply.body["error"]["details"] = [
            {"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": []},
            {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": delay},
        ]
        return reply

    def slow(self, seconds: float) -> Reply:
        reply = self.ok()
        reply.delay = seconds
        return reply

    def streamed(
        self,
        text: str = "streamed answer",
        *,
        usage: dict[str, Any] | None = None,
        model: str = "fake-model",
        include_usage: bool = True,
    ) -> Reply:
        """A server-sent-events reply in the flavor's documented event order.

        OpenAI: ``chat.completion.chunk`` events, then (only when the request asked for
        ``include_usage``: pass it) a last chunk with empty ``choices`` and the usage, then
        ``[DONE]``. Anthropic: ``message_start`` (input usage) ``content_block_start`` ``ping``
        ``content_block_delta``… ``content_block_stop`` ``message_delta`` (cumulative output
        usage) ``message_stop``. Gemini (``alt=sse``): GenerateContentResponse chunks, each
        with the running ``usageMetadata``, the last with ``finishReason``.
        """
        words = [w + " " for w in text.split(" ")]
        words[-1] = words[-1].rstrip()
        events: list[tuple[str | None, Any]] = []
        if self.flavor == "openai":
            u = usage or {
                "prompt_tokens": 12,
                "completion_tokens": len(words),
                "total_tokens": 12 + len(words),
            }
            base = {"id": "chatcmpl-fake", "object": "chat.completion.chunk", "model": model}
            events.append(
                (None, {**base, "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]})
            )
            for word in words:
                events.append((None, {**base, "choices": [{"index": 0, "delta": {"content": word}}]}))
            events.append((None, {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}))
            if include_usage:
                events.append((None, {**base, "choices": [], "usage": u}))
            events.append((None, "[DONE]"))
        elif self.flavor == "anthropic":
            u = usage or {"input_tokens": 12, "output_tokens": len(words)}
            start_usage = {"input_tokens": u.get("input_tokens", 0), "output_tokens": 1}
            events.append(
                (
                    "message_start",
                    {
                        "type": "message_start",
                        "message": {
                            "id": "msg_fake",
                            "type": "message",
                            "role": "assistant",
                            "model": model,
                            "content": [],
                            "stop_reason": None,
                            "stop_sequence": None,
                            "usage": start_usage,
                        },
                    },
                )
            )
            events.append(
                (
                    "content_block_start",
                    {
                        "type": "content_block_start",
                        "index": 0,
                        "content_block": {"type": "text", "text": ""},
                    },
                )
            )
            events.append(("ping", {"type": "ping"}))
            for word in words:
                events.append(
                    (
                        "content_block_delta",
                        {
                            "type": "content_block_delta",
                            "index": 0,
                            "delta": {"type": "text_delta", "text": word},
                        },
                    )
                )
            events.append(("content_block_stop", {"type": "content_block_stop", "index": 0}))
            delta_usage = {k: v for k, v in u.items() if k != "input_tokens"}
            events.append(
                (
                    "message_delta",
                    {
                        "type": "message_delta",
                        "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                        "usage": delta_usage,
                    },
                )
            )
            events.append(("message_stop", {"type": "message_stop"}))
        else:
            u = usage or {
                "promptTokenCount": 12,
                "candidatesTokenCount": len(words),
                "totalTokenCount": 12 + len(words),
            }
            for index, word in enumerate(words):
                last = index == len(words) - 1
                candidate: dict[str, Any] = {
                    "content": {"role": "model", "parts": [{"text": word}]},
                    "index": 0,
                }
                if last:
                    candidate["finishReason"] = "STOP"
                running = dict(u) if last else {"promptTokenCount": u.get("promptTokenCount", 0)}
                events.append(
                    (
                        None,
                        {
                            "candidates": [candidate],
                            "usageMetadata": running,
                            "modelVersion": model,
                            "responseId": "r",
                        },
                    )
                )
        out = bytearray()
        for name, data in events:
            if name is not None:
                out += f"event: {name}\n".encode()
            out += b"data: " + (data if isinstance(data, str) else json.dumps(data)).encode() + b"\n\n"
        return Reply(200, bytes(out), {"content-type": "text/event-stream"})

    # --- wire formats --------------------------------------------------------------------

    def _success_body(self, text: str, usage: dict[str, Any] | None, model: str) -> dict[str, Any]:
        if self.flavor == "openai":
            return {
                "id": "chatcmpl-fake",
                "object": "chat.completion",
                "model": model,
                "choices": [
                    {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
                ],
                "usage": usage
                if usage is not None
                else {
                    "prompt_tokens": 12,
                    "completion_tokens": 5,
                    "total_tokens": 17,
                    "prompt_tokens_details": {"cached_tokens": 0},
                    "completion_tokens_details": {"reasoning_tokens": 0},
                },
            }
        if self.flavor == "anthropic":
            return {
                "id": "msg_fake",
                "type": "message",
                "role": "assistant",
                "model": model,
                "content": [{"type": "text", "text": text}],
                "stop_reason": "end_turn",
                "stop_sequence": None,
                "usage": usage
                if usage is not None
                else {
                    "input_tokens": 12,
                    "output_tokens": 5,
                    "cache_read_input_tokens": 0,
                    "cache_creation_input_tokens": 0,
                },
            }
        return {
            "candidates": [
                {"content": {"role": "model", "parts": [{"text": text}]}, "finishReason": "STOP", "index": 0}
            ],
            "usageMetadata": usage
            if usage is not None
            else {"promptTokenCount": 12, "candidatesTokenCount": 5, "totalTokenCount": 17},
            "modelVersion": model,
            "responseId": "resp-fake",
        }

    def _request_id_header(self) -> str:
        return {"openai": "x-request-id", "anthropic": "request-id", "google": "x-goog-request-id"}[
            self.flavor
        ]

    # --- request handling ----------------------------------------------------------------

    def _handle(self, handler: BaseHTTPRequestHandler) -> None:
        length = int(handler.headers.get("content-length") or 0)
        raw = handler.rfile.read(length) if length else b""
        try:
            parsed: Any = json.loads(raw) if raw else None
        except ValueError:
            parsed = None
        with self._lock:
            self._counter += 1
            number = self._counter
            self.requests.append(
                RecordedRequest(
                    handler.command,
                    handler.path,
                    {k.lower(): v for k, v in handler.headers.items()},
                    raw,
                    parsed,
                    time.monotonic(),
                )
            )
            if self._script:
                reply = self._script.popleft()
            elif self.responder is not None:
                reply = self.responder(self.requests[-1])
            else:
                reply = Reply(delay=self.default_delay)
            hold = self._hold_after is not None and number > self._hold_after
        if hold:
            self._held.wait()
            handler.close_connection = True
            return
        if reply.delay:
            time.sleep(reply.delay)
        if reply.reset:
            handler.close_connection = True
            sock = handler.connection
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            sock.close()
            return
        body = reply.body if reply.body is not None else self._success_body("ok", None, "fake-model")
        if isinstance(body, bytes):
            data = body
        elif isinstance(body, str):
            data = body.encode("utf-8")
        else:
            data = json.dumps(body).encode("utf-8")
        try:
            handler.send_response(reply.status)
            handler.send_header("content-type", reply.headers.get("content-type", "application/json"))
            if reply.chunked:
                handler.send_header("transfer-encoding", "chunked")
            else:
                handler.send_header("content-length", str(len(data)))
            handler.send_header(self._request_id_header(), f"{self._prefix}_{number}")
            for name, value in reply.headers.items():
                if name.lower() != "content-type":
                    handler.send_header(name, value)
            handler.end_headers()
            if reply.truncate_after is not None:
                handler.wfile.write(data[: reply.truncate_after])
                handler.wfile.flush()
                time.sleep(0.05)  # let the partial body reach the client before the RST
                handler.close_connection = True
                sock = handler.connection
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                sock.close()
                return
            if reply.stall_after is not None:
                handler.wfile.write(data[: reply.stall_after])
                handler.wfile.flush()
                time.sleep(1.0)
                handler.close_connection = True
                return
            if reply.chunked:
                for at in range(0, len(data), 65536):
                    part = data[at : at + 65536]
                    handler.wfile.write(b"%x\r\n%s\r\n" % (len(part), part))
                handler.wfile.write(b"0\r\n\r\n")
            else:
                handler.wfile.write(data)
            handler.wfile.flush()
        except OSError:
            handler.close_connection = True  # the client gave up (timeout test)
            return
        if reply.truncate_after is None and not reply.reset:
            with self._lock:
                self.answered.append(self.requests[number - 1])


OPEN_TRANSPORTS: list[Any] = []
"""Transports a provider test opened against these servers; the autouse fixture of
``tests/integration/providers/conftest.py`` closes them after each test, so their idle
keep-alive sockets are not left for the garbage collector (a ResourceWarning)."""


def close_open_transports() -> None:
    """Close and forget every transport in :data:`OPEN_TRANSPORTS`."""
    while OPEN_TRANSPORTS:
        OPEN_TRANSPORTS.pop().close()
