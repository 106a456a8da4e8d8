"""Provider adapter throughput: 2,000 calls at concurrency 64 against a 20 ms loopback server.

Run from the repository root:  python benchmarks/provider_throughput.py [--calls N] [--concurrency C]

The fake OpenAI server runs in a separate process so its threads do not compete with the
client for the GIL. ``ideal`` = ceil(calls / concurrency) * delay: what a client with zero
overhead would take. Target: wall / ideal <= 1.15.

Also measures, single-threaded against the in-process mock provider, what the accounting
layer adds per operation (``Runtime.chat`` inside a ``track`` scope vs the bare adapter).
"""

from __future__ import annotations

import argparse
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
    from tests.fakes.llm_servers import FakeLLMServer

    with FakeLLMServer("openai", default_delay=delay) as server:
        port_out.put(server.port)
        stop.wait()


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
    args = parser.parse_args()

    ctx = multiprocessing.get_context("spawn")
    ports: multiprocessing.Queue[int] = ctx.Queue()  # type: ignore[assignment]
    stop = ctx.Event()
    server = ctx.Process(target=serve, args=(args.delay_ms / 1000, ports, stop), daemon=True)
    server.start()
    base_url = f"http://127.0.0.1:{ports.get(timeout=30)}/v1"
    ideal = math.ceil(args.calls / args.concurrency) * args.delay_ms / 1000
    try:
        for label, gateway in (("adapter", False), ("gateway+accounting", True)):
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
        server.join(5)
    bare_us, measured_us = accounting_overhead(20000)
    print(
        f"accounting overhead (single thread, mock provider): bare {bare_us:.1f} µs/call, "
        f"Runtime.chat in a scope {measured_us:.1f} µs/call, overhead {measured_us - bare_us:.1f} µs/operation"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
