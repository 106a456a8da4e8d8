"""The lean HTTP/1.1 client (providers/wire.py) through HttpTransport, against raw loopback
servers that can frame replies in every way HTTP/1.1 allows and misbehave on purpose."""

from __future__ import annotations

import contextlib
import gzip
import json
import socket
import ssl
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from axl_action.providers.errors import ProviderConfigError, ProviderError
from axl_action.providers.openai import OpenAIProvider
from axl_action.providers.transport import HttpTransport, RetryPolicy
from axl_action.providers.types import ChatMessage, ChatRequest
from tests.fakes.llm_servers import OPEN_TRANSPORTS, FakeLLMServer

KEY = "sk-wire-SECRET-0123456789abcdef"
TLS_DIR = Path(__file__).resolve().parents[2] / "fixtures" / "tls"
CERT = TLS_DIR / "loopback-cert.pem"
BODY = json.dumps(
    {
        "model": "m",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "hi"}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 3, "completion_tokens": 1},
    }
).encode()

# A responder gets the connection and the request bytes; it returns False to close the connection.
Responder = Callable[[socket.socket, bytes], bool]


def content_length(conn: socket.socket, _request: bytes) -> bool:
    conn.sendall(b"HTTP/1.1 200 OK\r\ncontent-length: %d\r\nx-request-id: r1\r\n\r\n" % len(BODY) + BODY)
    return True


class RawServer:
    """Accepts connections and answers each request with the next scripted responder (the
    last one repeats); records every request and how many connections were accepted."""

    def __init__(self, *responders: Responder, tls: bool = False) -> None:
        self.responders = list(responders)
        self.requests: list[bytes] = []
        self.connections = 0
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._tls: ssl.SSLContext | None = None
        if tls:
            self._tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            self._tls.load_cert_chain(CERT, TLS_DIR / "loopback-key.pem")
        self.port = self._listener.getsockname()[1]
        self._conns: list[socket.socket] = []
        self._threads = [threading.Thread(target=self._accept, daemon=True)]
        self._threads[0].start()

    def url(self, host: str = "127.0.0.1") -> str:
        return f"{'https' if self._tls else 'http'}://{host}:{self.port}/v1"

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self._listener.accept()
            except OSError:
                return
            self.connections += 1
            self._conns.append(conn)
            worker = threading.Thread(target=self._serve, args=(conn,), daemon=True)
            self._threads.append(worker)
            worker.start()

    def _serve(self, conn: socket.socket) -> None:
        try:
            if self._tls is not None:
                conn = self._tls.wrap_socket(conn, server_side=True)
                self._conns.append(conn)  # the raw socket is detached now: close() needs this one
            buf = b""
            while True:
                while b"\r\n\r\n" not in buf:
                    chunk = conn.recv(65536)
                    if not chunk:
                        return
                    buf += chunk
                head, _, buf = buf.partition(b"\r\n\r\n")
                length = int(head.lower().split(b"content-length: ")[1].split(b"\r\n")[0])
                while len(buf) < length:
                    buf += conn.recv(65536)
                self.requests.append(head + b"\r\n\r\n" + buf[:length])
                buf = buf[length:]
                responder = self.responders.pop(0) if len(self.responders) > 1 else self.responders[0]
                if not responder(conn, self.requests[-1]):
                    return
        except OSError:
            return
        finally:
            conn.close()

    def close(self) -> None:
        # close() alone leaves a thread blocked in accept() or recv() for ever (Linux does not
        # wake it); shutdown() does, so no test leaves threads behind for the next one (a later
        # test forks only while no other thread runs).
        for sock in (self._listener, *self._conns):
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()
        for thread in self._threads:
            thread.join(timeout=5)


@pytest.fixture
def raw() -> Iterator[Callable[..., RawServer]]:
    servers: list[RawServer] = []

    def make(*responders: Responder, tls: bool = False) -> RawServer:
        servers.append(RawServer(*responders, tls=tls))
        return servers[-1]

    yield make
    for server in servers:
        server.close()


def provider(base_url: str, attempts: int = 1, sleeps: list[float] | None = None) -> OpenAIProvider:
    transport = HttpTransport(
        "openai",
        secrets=(KEY,),
        policy=RetryPolicy(max_attempts=attempts, base_delay=0.01),
        sleep=(sleeps.append if sleeps is not None else lambda _s: None),
    )
    OPEN_TRANSPORTS.append(transport)
    return OpenAIProvider(api_key=KEY, base_url=base_url, transport=transport)


def ask(p: OpenAIProvider, timeout: float = 5) -> str:
    return p.chat(ChatRequest(model="m", messages=(ChatMessage("user", "q"),), timeout=timeout)).text


def test_keep_alive_reuses_one_connection_and_frames_the_request(raw: Callable[..., RawServer]) -> None:
    server = raw(content_length)
    p = provider(server.url())
    assert [ask(p) for _ in range(5)] == ["hi"] * 5
    assert server.connections == 1
    head, _, body = server.requests[0].partition(b"\r\n\r\n")
    lines = head.decode().split("\r\n")
    assert lines[0] == "POST /v1/chat/completions HTTP/1.1"
    headers = dict(line.split(": ", 1) for line in lines[1:])
    assert headers["host"] == f"127.0.0.1:{server.port}"
    assert headers["authorization"] == f"Bearer {KEY}"
    assert int(headers["content-length"]) == len(body) and json.loads(body)["model"] == "m"


def test_chunked_gzip_and_close_delimited_replies_are_read(raw: Callable[..., RawServer]) -> None:
    def chunked(conn: socket.socket, _r: bytes) -> bool:
        zipped = gzip.compress(BODY)
        a, b = zipped[:10], zipped[10:]
        conn.sendall(
            b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n"
            b"content-encoding: gzip\r\n\r\n"
            + b"%x;ext=1\r\n%s\r\n%x\r\n%s\r\n0\r\ntrailer: x\r\n\r\n"
            % (len(a), a, len(b), b)
        )
        return True

    def until_close(conn: socket.socket, _r: bytes) -> bool:
        conn.sendall(b"HTTP/1.1 200 OK\r\n\r\n" + BODY[:7])
        time.sleep(0.02)
        conn.sendall(BODY[7:])
        return False

    server = raw(chunked, until_close, content_length)
    p = provider(server.url())
    assert [ask(p), ask(p), ask(p)] == ["hi"] * 3
    assert server.connections == 2  # the close-delimited reply cannot leave a reusable connection


def test_a_connection_the_server_closed_while_idle_is_not_reused(raw: Callable[..., RawServer]) -> None:
    def then_close(conn: socket.socket, request: bytes) -> bool:
        content_length(conn, request)
        return False  # no "connection: close" header: the client only sees the FIN

    server = raw(then_close)
    p = provider(server.url())  # one attempt: a stale reuse would fail the second call
    assert ask(p) == "hi"
    time.sleep(0.05)
    assert ask(p) == "hi"
    assert server.connections == 2


def test_timeout_bounds_the_whole_attempt_even_when_bytes_trickle(raw: Callable[..., RawServer]) -> None:
    def trickle(conn: socket.socket, _r: bytes) -> bool:
        for byte in b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}":
            conn.sendall(bytes([byte]))
            time.sleep(0.05)
        return False

    server = raw(trickle)
    sleeps: list[float] = []
    p = provider(server.url(), attempts=2, sleeps=sleeps)
    t0 = time.monotonic()
    with pytest.raises(ProviderError, match="timed out") as info:
        ask(p, timeout=0.3)
    elapsed = time.monotonic() - t0
    assert 0.6 <= elapsed < 1.8  # two attempts of 0.3 s each, not 40 bytes x 50 ms (2 s) each
    assert (info.value.status, info.value.retryable, info.value.attempts) == (0, True, 2)
    assert len(server.requests) == 2 and len(sleeps) == 1


def test_garbage_reply_is_a_network_error_naming_the_problem(raw: Callable[..., RawServer]) -> None:
    def garbage(conn: socket.socket, _r: bytes) -> bool:
        conn.sendall(b"SSH-2.0-OpenSSH\r\n\r\n")
        return False

    server = raw(garbage)
    with pytest.raises(ProviderError, match=r"did not answer with HTTP/1\.x") as info:
        ask(provider(server.url()))
    assert info.value.status == 0 and KEY not in str(info.value)


def test_refused_connection_is_retryable_and_names_the_host() -> None:
    with socket.create_server(("127.0.0.1", 0)) as s:
        port = s.getsockname()[1]
    with pytest.raises(ProviderError, match=f"could not connect to 127.0.0.1:{port}") as info:
        ask(provider(f"http://127.0.0.1:{port}/v1", attempts=2))
    assert (info.value.retryable, info.value.attempts) == (True, 2)


def test_https_verifies_the_certificate_and_honours_requests_ca_bundle(
    raw: Callable[..., RawServer], monkeypatch: pytest.MonkeyPatch
) -> None:
    server = raw(content_length, tls=True)
    monkeypatch.delenv("REQUESTS_CA_BUNDLE", raising=False)
    monkeypatch.delenv("CURL_CA_BUNDLE", raising=False)
    with pytest.raises(ProviderError, match="certificate verification failed") as info:
        ask(provider(server.url(), attempts=3))
    assert (info.value.retryable, info.value.attempts) == (False, 1)  # retrying cannot help
    assert info.value.hint is not None and "REQUESTS_CA_BUNDLE" in info.value.hint

    monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(CERT))
    trusted = provider(server.url())
    assert ask(trusted) == "hi" and ask(trusted) == "hi"
    assert len(server.requests) == 2
    # Trusting the CA does not switch off host name checks: the cert names 127.0.0.1 only.
    with pytest.raises(ProviderError, match="certificate verification failed"):
        ask(provider(server.url("localhost")))


def test_header_with_a_line_break_is_refused_without_echoing_it(raw: Callable[..., RawServer]) -> None:
    server = raw(content_length)
    transport = HttpTransport("openai", secrets=(KEY,))
    p = OpenAIProvider(api_key=f"{KEY}\r\nx-evil: 1", base_url=server.url(), transport=transport)
    with pytest.raises(ProviderConfigError) as info:
        ask(p)
    assert KEY not in str(info.value) and server.requests == []


def test_environment_proxy_sends_through_requests(monkeypatch: pytest.MonkeyPatch) -> None:
    with FakeLLMServer("openai") as proxy:
        for name in ("HTTP_PROXY", "http_proxy"):  # the lower-case one wins when both are set
            monkeypatch.setenv(name, f"http://127.0.0.1:{proxy.port}")
        for name in ("NO_PROXY", "no_proxy"):
            monkeypatch.delenv(name, raising=False)
        p = provider("http://api.example.invalid/v1")
        assert ask(p) == "ok"
        (request,) = proxy.requests
        assert request.path == "http://api.example.invalid/v1/chat/completions"  # proxy form

        monkeypatch.setenv("no_proxy", "127.0.0.1")
        with FakeLLMServer("openai") as direct:
            assert ask(provider(direct.base_url)) == "ok"
            assert len(direct.requests) == 1 and len(proxy.requests) == 1
