"""Provider adapter throughput: 2,000 calls at concurrency 64 against a 20 ms loopback server.

Run from the repository root:  python benchmarks/provider_throughput.py [--calls N] [--concurrency C]

The server runs in a separate process so it does not compete with the client for the GIL.
By default it is a lean asyncio server speaking the OpenAI wire format (usage, request-id
header): the test fake (``--server fake``, a ``ThreadingHTTPServer`` with one thread per
connection) needs more CPU per request than the client under test, and on a 2-core machine
it then competes with the client for the second core. Both servers' CPU per call is printed.
``ideal`` = ceil(calls / concurrency) * delay: what a client with zero overhead would take.
Target: wall / ideal <= 1.15.

Also measures, single-threaded against the in-process mock provider, what the accounting
layer adds per operation (``Runtime.chat`` inside a ``track`` scope vs the bare adapter).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import multiprocessing
import statistics
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from axl_action.providers.mock import MockProvider
from axl_action.providers.openai import OpenAIProvider
from axl_action.providers.transport import HttpTransport
from axl_action.providers.types import ChatMessage, ChatRequest
from axl_action.runtime.runtime import Runtime
from axl_action.runtime.scope import track

KEY = "sk-bench-0000000000000000"


def serve(delay: float, port_out: multiprocessing.Queue[int], stop: multiprocessing.Event) -> None:  # type: ignore[type-arg]
    """The test fake (``ThreadingHTTPServer``) in this process; reports its CPU seconds."""
    from tests.fakes.llm_servers import FakeLLMServer

    with FakeLLMServer("openai", default_delay=delay) as server:
        port_out.put(server.port)
        stop.wait()
    port_out.put(time.process_time())  # type: ignore[arg-type]


_REPLY = json.dumps(
    {
        "id": "chatcmpl-bench",
        "object": "chat.completion",
        "model": "gpt-4o-mini",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 12, "completion_tokens": 5, "total_tokens": 17},
    }
).encode()


class _LeanOpenAI(asyncio.Protocol):
    """Answers each keep-alive HTTP/1.1 POST with an OpenAI chat completion after ``delay``."""

    served = 0

    def __init__(self, delay: float) -> None:
        self.delay = delay
        self.buf = b""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.buf += data
        while (end := self.buf.find(b"\r\n\r\n")) >= 0:
            head = self.buf[:end].lower()
            at = head.find(b"\ncontent-length:")
            length = int(head[at + 16 :].split(b"\r\n", 1)[0]) if at >= 0 else 0
            if len(self.buf) < end + 4 + length:
                return
            self.buf = self.buf[end + 4 + length :]
            _LeanOpenAI.served += 1
            reply = (
                b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nx-request-id: req_%d\r\n"
                b"content-length: %d\r\n\r\n" % (_LeanOpenAI.served, len(_REPLY))
            ) + _REPLY
            asyncio.get_running_loop().call_later(self.delay, self.transport.write, reply)


def serve_lean(delay: float, port_out: multiprocessing.Queue[int], stop: multiprocessing.Event) -> None:  # type: ignore[type-arg]
    """The lean asyncio server in this process; reports its CPU seconds."""

    async def main() -> None:
        loop = asyncio.get_running_loop()
        server = await loop.create_server(lambda: _LeanOpenAI(delay), "127.0.0.1", 0, backlog=1024)
        port_out.put(server.sockets[0].getsockname()[1])
        await loop.run_in_executor(None, stop.wait)
        server.close()

    asyncio.run(main())
    port_out.put(time.process_time())  # type: ignore[arg-type]


def http_run(
    base_url: str, calls: int, concurrency: int, through_gateway: bool
) -> tuple[float, float, list[float]]:
    transport = HttpTransport("openai", secrets=(KEY,), pool_size=concurrency)
    provider = OpenAIProvider(api_key=KEY, base_url=base_url, transport=transport)
    request = ChatRequest(model="gpt-4o-mini", messages=(ChatMessage("user", "ping"),), timeout=10)
    runtime = Runtime(providers={"openai": provider})
    latencies: list[float] = []
    lock = threading.Lock()

    def one(_: int) -> None:
        t0 = time.perf_counter()
        if through_gateway:
            result = track(lambda: runtime.chat("openai:gpt-4o-mini", "ping", timeout=10))
            if result.error is not None:
                raise result.error
        else:
            provider.chat(request)
        with lock:
            latencies.append(time.perf_counter() - t0)

    # Warm the connection pool so connection setup is not part of the measurement.
    with ThreadPoolExecutor(concurrency) as pool:
        list(pool.map(one, range(concurrency)))
    latencies.clear()
    start = time.perf_counter()
    cpu = time.process_time()
    with ThreadPoolExecutor(concurrency) as pool:
        list(pool.map(one, range(calls)))
    return time.perf_counter() - start, time.process_time() - cpu, latencies


def accounting_overhead(n: int) -> tuple[float, float]:
    """Mean µs per call: bare mock adapter vs Runtime.chat in a track scope."""
    provider = MockProvider(usage="auto", cost=0.0)
    request = ChatRequest(model="m", messages=(ChatMessage("user", "ping"),))
    runtime = Runtime(providers={"mock": provider})
    t0 = time.perf_counter()
    for _ in range(n):
        provider.chat(request)
    bare = (time.perf_counter() - t0) / n
    t0 = time.perf_counter()
    for _ in range(n):
        track(lambda: runtime.chat("mock:m", "ping"))
    measured = (time.perf_counter() - t0) / n
    return bare * 1e6, measured * 1e6


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--delay-ms", type=float, default=20.0)
    parser.add_argument("--server", choices=("lean", "fake"), default="lean")
    args = parser.parse_args()

    ctx = multiprocessing.get_context("spawn")
    ports: multiprocessing.Queue[int] = ctx.Queue()  # type: ignore[assignment]
    stop = ctx.Event()
    target = serve_lean if args.server == "lean" else serve
    server = ctx.Process(target=target, args=(args.delay_ms / 1000, ports, stop), daemon=True)
    server.start()
    base_url = f"http://127.0.0.1:{ports.get(timeout=30)}/v1"
    ideal = math.ceil(args.calls / args.concurrency) * args.delay_ms / 1000
    total_calls = 0
    try:
        for label, gateway in (("adapter", False), ("gateway+accounting", True)):
            total_calls += args.calls + args.concurrency
            wall, cpu, lat = http_run(base_url, args.calls, args.concurrency, gateway)
            overhead_ms = (statistics.mean(lat) - args.delay_ms / 1000) * 1000
            print(
                f"{label:>20}: {args.calls} calls @ {args.concurrency}: wall {wall * 1000:.0f} ms, "
                f"ideal {ideal * 1000:.0f} ms, wall/ideal {wall / ideal:.3f}, "
                f"mean latency {statistics.mean(lat) * 1000:.1f} ms (p95 "
                f"{sorted(lat)[int(len(lat) * 0.95)] * 1000:.1f} ms), latency over the server's delay "
                f"{overhead_ms:.2f} ms, client CPU {cpu / args.calls * 1e6:.0f} µs/call"
            )
    finally:
        stop.set()
        server_cpu = ports.get(timeout=10)
        server.join(5)
    print(f"server ({args.server}): CPU {server_cpu / total_calls * 1e6:.0f} µs/call")
    bare_us, measured_us = accounting_overhead(20000)
    print(
        f"accounting overhead (single thread, mock provider): bare {bare_us:.1f} µs/call, "
        f"Runtime.chat in a scope {measured_us:.1f} µs/call, overhead {measured_us - bare_us:.1f} µs/operation"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
