"""A minimal keep-alive HTTP/1.1 client for provider POSTs: one request, one JSON reply.

Why not ``requests`` or ``urllib3`` here: at the runner's concurrency (64 threads on a 2-core
runner) the client's CPU per call *is* the throughput limit, because every thread competes for
one GIL. Measured against a 20 ms loopback server, 2,000 calls at concurrency 64 from a thread
pool, with nothing but the HTTP call and ``json.loads`` in the loop (ideal 640 ms):
``urllib3.HTTPConnectionPool.urlopen`` took 1.39-1.43 x the ideal (~205 µs CPU per call
single-threaded, ~470 µs under 64 threads), ``http.client`` 1.11 x (~130 µs / ~265 µs), which
leaves no room for the adapter and accounting layers on top, and this module 1.09-1.10 x
(~25-55 µs / ~160 µs). The provider APIs need only a small, well-defined subset of HTTP/1.1
(POST with a ``content-length`` body; replies framed by ``content-length``, chunked encoding
or connection close), so that subset is implemented here over plain sockets, with TLS through
the stdlib ``ssl`` module (certificate and host name verification always on).

Anything outside that subset (proxies from the environment, credentials in the URL, a
caller-supplied ``requests.Session``) goes through ``requests`` instead; see ``transport.py``.
"""

from __future__ import annotations

import select
import socket
import ssl
import time
import zlib
from collections.abc import Callable

MAX_HEAD_BYTES = 64 * 1024
"""Largest response status line + headers accepted (a real API's are a few hundred bytes)."""
DEFAULT_MAX_BODY_BYTES = 32 * 1024 * 1024
"""Largest response body accepted (after decompression). A real completion is a few KiB to a
few MiB; a misbehaving gateway must not be able to stream an unbounded reply into memory."""

_RECV = 65536


class WireError(Exception):
    """The exchange failed below HTTP: no complete response arrived."""

    retryable = True
    """Whether another attempt could succeed."""
    hint: str | None = None
    """How to fix it, when there is something more specific than checking the network."""


class WireTimeout(WireError):
    """Connecting or waiting for the response took longer than the attempt's timeout."""


class WireProtocolError(WireError):
    """The peer sent something that is not a valid HTTP/1.x response."""


class WireBodyTooLarge(WireError):
    """The response body is over the size limit; the reply was dropped unread."""

    retryable = False
    hint = (
        "a provider reply should be far smaller; check the base URL, or raise the limit with "
        "AXL_EVAL_MAX_RESPONSE_BYTES (bytes) if the replies really are this large"
    )

    def __init__(self, limit: int) -> None:
        super().__init__(f"the response body is larger than the {describe_bytes(limit)} limit")


class WireTruncated(WireError):
    """A 2xx status and headers arrived, then the body was cut off (reset, closed, timed out).

    Never retried: the request was fully sent and accepted, so the provider may have billed
    it, and a retry would pay again (a flaky gateway could multiply the spend).
    """

    retryable = False
    hint = "the call may have been billed; its cost is counted as unknown (usage_missing)"

    def __init__(self, status: int, received: int, reason: str) -> None:
        super().__init__(f"the HTTP {status} response was cut off after {received} body bytes ({reason})")
        self.status = status


class WireTLSError(WireError):
    """TLS verification failed (wrong certificate or host); retrying cannot help."""

    retryable = False
    hint = (
        "the endpoint's certificate is not trusted: for a private CA set REQUESTS_CA_BUNDLE "
        "to a PEM bundle that includes it"
    )


class Origin:
    """A pool of idle keep-alive connections to one ``scheme://host:port``, shared by threads.

    Idle connections sit in a list: ``append``/``pop`` are atomic under the GIL, so taking
    and returning one costs no lock. More than ``maxsize`` idle connections are closed.
    """

    __slots__ = ("_idle", "host", "maxsize", "port", "tls")

    def __init__(self, host: str, port: int, *, tls: ssl.SSLContext | None, maxsize: int) -> None:
        self.host = host
        self.port = port
        self.tls = tls
        self.maxsize = maxsize
        self._idle: list[socket.socket] = []

    def _connect(self, deadline: float) -> socket.socket:
        try:
            sock = socket.create_connection(
                (self.host, self.port), timeout=max(deadline - time.monotonic(), 0.001)
            )
        except TimeoutError:
            raise WireTimeout("the request timed out while connecting") from None
        except OSError as exc:
            raise WireError(f"could not connect to {self.host}:{self.port} ({_os_reason(exc)})") from None
        try:
            # Headers and body go out in one write, and the reply is awaited: with Nagle on, a
            # small request could wait for a delayed ACK.
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except OSError as exc:
            sock.close()
            raise WireError(f"could not connect to {self.host}:{self.port} ({_os_reason(exc)})") from None
        try:
            # What is left of the attempt's time, so connecting does not extend it.
            sock.settimeout(max(deadline - time.monotonic(), 0.001))
            if self.tls is None:
                return sock
            return self.tls.wrap_socket(sock, server_hostname=self.host)
        except ssl.SSLCertVerificationError as exc:
            sock.close()
            raise WireTLSError(f"TLS certificate verification failed ({exc.verify_message})") from None
        except TimeoutError:
            sock.close()
            raise WireTimeout("the request timed out during the TLS handshake") from None
        except OSError as exc:
            sock.close()
            raise WireError(f"the TLS handshake failed: {_os_reason(exc)}") from None

    def _take(self, timeout: float, deadline: float) -> socket.socket:
        """An idle connection that the server has not closed, else a new one."""
        idle = self._idle
        while idle:
            try:
                sock = idle.pop()
            except IndexError:  # another thread took the last one
                break
            # An idle keep-alive connection must have nothing to read: readable means the
            # server closed it (EOF) or broke protocol. Checking here keeps a request from
            # being written into a half-closed connection (urllib3 checks the same way).
            try:
                stale = bool(select.select((sock,), (), (), 0)[0])
            except (OSError, ValueError):
                stale = True
            if stale:
                sock.close()
                continue
            sock.settimeout(timeout)
            return sock
        return self._connect(deadline)

    def _give_back(self, sock: socket.socket) -> None:
        if len(self._idle) < self.maxsize:
            self._idle.append(sock)
        else:
            sock.close()

    def close(self) -> None:
        """Close every idle connection."""
        while self._idle:
            try:
                self._idle.pop().close()
            except IndexError:
                break

    def exchange(
        self,
        request: bytes,
        timeout: float,
        clock: Callable[[], float],
        max_body: int = DEFAULT_MAX_BODY_BYTES,
    ) -> tuple[int, dict[str, str], bytes, float]:
        """Send ``request`` (a complete HTTP/1.1 message) and read the reply.

        Returns ``(status, headers, body, first_byte_at)``: header names lower-cased, the body
        de-chunked and decompressed, ``first_byte_at`` the ``clock()`` reading when the first
        response bytes arrived. ``timeout`` bounds the whole attempt (connect, send, receive);
        a body over ``max_body`` bytes raises ``WireBodyTooLarge``, and a 2xx whose body is
        cut off raises ``WireTruncated`` (neither is retryable).
        """
        deadline = time.monotonic() + timeout
        sock = self._take(timeout, deadline)
        reader = _Reader(sock, deadline, max_body)
        try:
            sock.sendall(request)
            first = reader.fill()
            first_byte_at = clock()
            if not first:
                raise WireError("the connection was closed before a response arrived")
            status, headers, body, reusable = _read_response(reader)
        except TimeoutError:
            sock.close()
            raise reader.truncated("timed out") or WireTimeout("the request timed out") from None
        except (WireBodyTooLarge, WireTruncated):
            sock.close()
            raise
        except WireError as exc:
            sock.close()
            raise reader.truncated(str(exc).removeprefix("the ")) or exc from None
        except ssl.SSLError as exc:
            sock.close()
            reason = f"the TLS connection failed ({exc.reason or exc})"
            raise reader.truncated(reason) or WireError(reason) from None
        except OSError as exc:
            sock.close()
            raise reader.truncated(_os_reason(exc)) or WireError(_os_reason(exc)) from None
        except BaseException:
            # Anything else (a parse bug, an interrupt): the socket is in an unknown state.
            sock.close()
            raise
        if reusable:
            self._give_back(sock)
        else:
            sock.close()
        return status, headers, body, first_byte_at


class _Reader:
    """Buffered reads from a socket under one deadline and one body-size limit."""

    __slots__ = ("body_from", "buf", "deadline", "max_body", "pos", "received", "sock", "status")

    def __init__(self, sock: socket.socket, deadline: float, max_body: int) -> None:
        self.sock = sock
        self.deadline = deadline
        self.max_body = max_body
        self.buf = b""
        self.pos = 0
        self.received = 0
        """Bytes read from the socket so far."""
        self.status = 0
        """The final response status once its headers were read (0 before)."""
        self.body_from = 0
        """Value of ``received`` where the body starts (set with ``status``)."""

    def start_body(self, status: int) -> None:
        """The head of the final response has been read; what follows is its body."""
        self.status = status
        self.body_from = self.received - (len(self.buf) - self.pos)

    def truncated(self, reason: str) -> WireTruncated | None:
        """The error to raise when reading failed with ``reason``: ``WireTruncated`` once a
        2xx head has arrived, else ``None`` (an ordinary, retryable failure)."""
        if 200 <= self.status < 300:
            return WireTruncated(self.status, self.received - self.body_from, reason)
        return None

    def check_body(self, size: int) -> None:
        """Refuse a body (or a buffer on the way to one) over the limit."""
        if size > self.max_body:
            raise WireBodyTooLarge(self.max_body)

    def fill(self) -> bool:
        """Read more bytes into the buffer; ``False`` at end of stream."""
        if self.buf:
            remaining = self.deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError
            self.sock.settimeout(remaining)
        chunk = self.sock.recv(_RECV)
        if not chunk:
            return False
        self.received += len(chunk)
        self.buf = self.buf[self.pos :] + chunk if self.pos else self.buf + chunk
        self.pos = 0
        # A guard for every framing; the exact checks are in exactly(), rest() and the
        # chunk loop (the slack covers chunk framing and one read past the body).
        if self.status and self.received - self.body_from > self.max_body + 2 * _RECV:
            raise WireBodyTooLarge(self.max_body)
        return True

    def line(self, limit: int) -> bytes:
        """The next CRLF-terminated line (without CRLF)."""
        while True:
            end = self.buf.find(b"\r\n", self.pos)
            if end >= 0:
                out = self.buf[self.pos : end]
                self.pos = end + 2
                return out
            if len(self.buf) - self.pos > limit:
                raise WireProtocolError("a response line is too long")
            if not self.fill():
                raise WireError("the connection closed in the middle of the response")

    def exactly(self, n: int) -> bytes:
        self.check_body(n)
        while len(self.buf) - self.pos < n:
            if not self.fill():
                raise WireError("the connection closed before the whole response body arrived")
        out = self.buf[self.pos : self.pos + n]
        self.pos += n
        return out

    def rest(self) -> bytes:
        """Everything until the peer closes the connection."""
        while self.fill():
            self.check_body(len(self.buf) - self.pos)
        out = self.buf[self.pos :]
        self.pos = len(self.buf)
        return out

    def drained(self) -> bool:
        return self.pos == len(self.buf)


def _read_response(reader: _Reader) -> tuple[int, dict[str, str], bytes, bool]:
    while True:
        end = reader.buf.find(b"\r\n\r\n", reader.pos)
        while end < 0:
            if len(reader.buf) - reader.pos > MAX_HEAD_BYTES:
                raise WireProtocolError("the response headers are larger than 64 KiB")
            if not reader.fill():
                raise WireError("the connection closed in the middle of the response headers")
            end = reader.buf.find(b"\r\n\r\n", reader.pos)
        lines = reader.buf[reader.pos : end].decode("latin-1").split("\r\n")
        reader.pos = end + 4
        version, _, rest = lines[0].partition(" ")
        code = rest[:3]
        if not version.startswith("HTTP/1.") or len(code) != 3 or not code.isdigit():
            raise WireProtocolError("the server did not answer with HTTP/1.x")
        status = int(code)
        if 100 <= status < 200:
            continue  # interim reply (e.g. 100 Continue); the real one follows
        break
    reader.start_body(status)
    headers: dict[str, str] = {}
    for line in lines[1:]:
        name, sep, value = line.partition(":")
        if not sep:
            raise WireProtocolError("a response header line has no colon")
        name = name.strip().lower()
        value = value.strip()
        previous = headers.get(name)
        headers[name] = value if previous is None else f"{previous}, {value}"
    connection = headers.get("connection", "").lower()
    reusable = "close" not in connection and (version != "HTTP/1.0" or "keep-alive" in connection)
    if "chunked" in headers.get("transfer-encoding", "").lower():
        body = _read_chunked(reader)
    elif status in (204, 304):
        body = b""
    elif "content-length" in headers:
        try:
            length = int(headers["content-length"].split(",")[0])
        except ValueError:
            raise WireProtocolError("the content-length header is not a number") from None
        if length < 0:
            raise WireProtocolError("the content-length header is negative")
        body = reader.exactly(length)
    else:
        body = reader.rest()
        reusable = False
    reusable = reusable and reader.drained()
    encoding = headers.get("content-encoding", "").lower()
    if encoding in ("gzip", "x-gzip", "deflate"):
        body = decompress(body, encoding, reader.max_body)
    return status, headers, body, reusable


def decompress(body: bytes, encoding: str, limit: int) -> bytes:
    """Inflate a gzip/deflate body, refusing more than ``limit`` bytes of output (a small
    compressed reply can inflate to gigabytes)."""
    inflater = zlib.decompressobj(47 if encoding != "deflate" else zlib.MAX_WBITS)
    try:
        out = inflater.decompress(body, limit + 1)
    except zlib.error:
        raise WireProtocolError(f"the {encoding} response body could not be decompressed") from None
    if len(out) > limit:
        raise WireBodyTooLarge(limit)
    return out


def describe_bytes(n: int) -> str:
    """``32 MiB``, ``512 KiB`` or ``1000 bytes``: the size named the way it was configured."""
    for unit, size in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size and n % size == 0:
            return f"{n // size} {unit}"
    return f"{n} bytes"


def _read_chunked(reader: _Reader) -> bytes:
    parts: list[bytes] = []
    total = 0
    while True:
        size_line = reader.line(1024)
        try:
            size = int(size_line.split(b";")[0].strip(), 16)
        except ValueError:
            raise WireProtocolError("a chunk size in the response is not a hex number") from None
        if size == 0:
            while reader.line(MAX_HEAD_BYTES):  # trailers, up to the blank line
                pass
            return b"".join(parts)
        total += size
        reader.check_body(total)
        parts.append(reader.exactly(size))
        if reader.exactly(2) != b"\r\n":
            raise WireProtocolError("a chunk in the response is not followed by CRLF")


def _os_reason(exc: OSError) -> str:
    if isinstance(exc, ConnectionResetError | ConnectionAbortedError | BrokenPipeError):
        return "the connection was reset"
    if isinstance(exc, ConnectionRefusedError):
        return "connection refused"
    return f"the connection broke: {exc.strerror or type(exc).__name__}"
