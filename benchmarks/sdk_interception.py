"""What measuring the app's own SDK calls costs: the real ``openai`` client, bare vs measured.

Run from the repository root:  python benchmarks/sdk_interception.py [--calls N] [--concurrency C]

The workload is an application's: ``openai.OpenAI().chat.completions.create(...)`` from a pool
of worker threads at concurrency 32 against a loopback server that answers each call after
20 ms (the lean asyncio server of ``provider_throughput.py``, in its own process so it does not
compete with the client for the GIL). Two variants run in the same process, alternating round
by round so that drift hits both:

* **bare**: the SDK as the app calls it, nothing installed (the reference);
* **measured**: the same calls inside ``measure_model_calls()`` (the hooks the runner installs
  around a run), each call in its own item scope (``runtime.scope.track``), as an eval item's
  calls are: recognised, admitted, parsed for usage, priced and recorded in the item.

Printed per variant: the median wall time of the rounds, CPU seconds per call (the whole
process's ``process_time``, client threads included), and the measured variant's overhead
against bare. Targets (issue 26): wall overhead <= 5 % of the 20 ms call, and <= 60 us of CPU
per call.

``--cli`` also times the whole workload as a user runs it: ``axl-eval run`` of an eval whose
workflow makes the same call (one item per call, ``--concurrency C``), timed by the result's
own ``duration``, beside ``ideal`` = ceil(calls / C) x 20 ms.

``--in-memory`` measures the same two variants single-threaded against an in-memory
``httpx2.MockTransport`` (no network, no threads, no server): CPU per call, bare and measured,
alternating round by round, and the function calls (Python-level, and all, C ones included)
the measured call makes beyond the bare one, counted by ``cProfile``. The count does not
depend on the machine's load, which on a shared machine swings the times by more than the
difference being measured.
"""

from __future__ import annotations

import argparse
import json
import math
import multiprocessing
import os
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import openai  # noqa: E402

from axl_action import measure_model_calls  # noqa: E402
from axl_action.runtime.scope import track  # noqa: E402
from benchmarks.provider_throughput import serve_lean  # noqa: E402

KEY = "sk-bench-0000000000000000"
MESSAGES = [{"role": "user", "content": "ping"}]

EVAL = """\
import os

import openai

from axl_action import dataset, define_eval, scorer

client = openai.OpenAI(max_retries=0)


def execute_workflow(value, runtime):
    reply = client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": "ping"}])
    return {"output": reply.choices[0].message.content}


eval = define_eval(
    "sdk",
    dataset("sdk", items=[{"input": i} for i in range(int(os.environ["CALLS"]))]),
    [scorer("ok", lambda output: float(output == "ok"))],
)
"""


def _round(client: openai.OpenAI, calls: int, concurrency: int, measured: bool) -> tuple[float, float]:
    """(wall s, CPU s) of ``calls`` calls at ``concurrency``."""

    def bare(_: int) -> None:
        client.chat.completions.create(model="gpt-4o-mini", messages=MESSAGES)  # type: ignore[arg-type]

    def in_item(_: int) -> None:
        result = track(lambda: client.chat.completions.create(model="gpt-4o-mini", messages=MESSAGES))  # type: ignore[arg-type]
        if result.error is not None:
            raise result.error
        assert result.accounting["operations"]["total"] == 1, "the call was not measured"

    one = in_item if measured else bare
    with ThreadPoolExecutor(concurrency) as pool:
        list(pool.map(bare, range(concurrency)))  # warm: the connection pool is filled first
        start, cpu = time.perf_counter(), time.process_time()
        list(pool.map(one, range(calls)))
        return time.perf_counter() - start, time.process_time() - cpu


def in_process(
    base_url: str, calls: int, concurrency: int, rounds: int
) -> dict[str, list[tuple[float, float]]]:
    client = openai.OpenAI(base_url=base_url, api_key=KEY, max_retries=0)
    out: dict[str, list[tuple[float, float]]] = {"bare": [], "measured": []}
    for _ in range(rounds):
        out["bare"].append(_round(client, calls, concurrency, measured=False))
        with measure_model_calls():
            out["measured"].append(_round(client, calls, concurrency, measured=True))
    return out


def through_cli(base_url: str, calls: int, concurrency: int) -> float:
    """``axl-eval run`` of the SDK eval: the result's own ``duration`` (s)."""
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "sdk_eval.py").write_text(EVAL)
        env = {
            **{k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "AXL_EVAL_"))},
            "OPENAI_BASE_URL": base_url,
            "OPENAI_API_KEY": KEY,
            "CALLS": str(calls),
            "PYTHONPATH": str(ROOT),
        }
        command = [
            sys.executable,
            "-m",
            "axl_action.cli.main",
            "sdk_eval.py",
            "--output",
            "r.json",
            "--quiet",
        ]
        done = subprocess.run(
            [*command, "--concurrency", str(concurrency)], cwd=folder, env=env, capture_output=True, text=True
        )
        if done.returncode != 0:
            raise SystemExit(f"axl-eval run failed: {done.stderr}")
        result = json.loads((folder / "r.json").read_text())
        assert result["accounting"]["operations"]["total"] == calls, "not every SDK call was measured"
        return float(result["duration"]) / 1000


_REPLY = json.dumps(
    {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1,
        "model": "gpt-4o-mini",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 12, "completion_tokens": 5, "total_tokens": 17},
    }
).encode()


def in_memory(calls: int, rounds: int) -> None:
    """Single-threaded, in-memory: CPU us per call bare and measured, and the calls the
    measured one adds (see the module docstring)."""
    import contextlib
    import cProfile
    import pstats

    import httpx2

    def answer(_request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, headers={"content-type": "application/json"}, content=_REPLY)

    client = openai.OpenAI(
        base_url="http://in-memory/v1",
        api_key=KEY,
        max_retries=0,
        http_client=httpx2.Client(transport=httpx2.MockTransport(answer)),
    )

    def bare() -> None:
        client.chat.completions.create(model="gpt-4o-mini", messages=MESSAGES)  # type: ignore[arg-type]

    def measured() -> None:
        result = track(bare)
        if result.error is not None:
            raise result.error
        assert result.accounting["operations"]["total"] == 1, "the call was not measured"

    variants = {"bare": (bare, contextlib.nullcontext), "measured": (measured, measure_model_calls)}
    cpu: dict[str, list[float]] = {name: [] for name in variants}
    counts: dict[str, tuple[int, int]] = {}
    for name, (fn, installed) in variants.items():  # warm, then count one pass
        with installed():
            for _ in range(200):
                fn()
            profile = cProfile.Profile()
            profile.enable()
            for _ in range(200):
                fn()
            profile.disable()
        stats = pstats.Stats(profile).stats  # type: ignore[attr-defined]
        everything = sum(row[1] for row in stats.values())
        python = sum(row[1] for key, row in stats.items() if key[0] != "~")
        counts[name] = (python, everything)
    for _ in range(rounds):
        for name, (fn, installed) in variants.items():
            with installed():
                start = time.process_time()
                for _ in range(calls):
                    fn()
                cpu[name].append((time.process_time() - start) / calls * 1e6)
    diffs = [m - b for b, m in zip(cpu["bare"], cpu["measured"], strict=True)]
    print(f"openai {openai.__version__}, in memory, single thread: {calls} calls x {rounds} rounds")
    for name in variants:
        print(f"  {name:<9} CPU {statistics.median(cpu[name]):.0f} us/call")
    python = (counts["measured"][0] - counts["bare"][0]) / 200
    everything = (counts["measured"][1] - counts["bare"][1]) / 200
    print(
        f"  overhead: CPU {statistics.median(diffs):+.0f} us/call (median of the rounds' differences; "
        f"range {min(diffs):+.0f} to {max(diffs):+.0f}); {python:.0f} Python-level calls, "
        f"{everything:.0f} calls in all, beyond the bare call"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--delay-ms", type=float, default=20.0)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--cli", action="store_true", help="also time the workload through axl-eval run")
    parser.add_argument(
        "--in-memory",
        action="store_true",
        help="instead: single-threaded against an in-memory transport, with the calls the measurement adds",
    )
    args = parser.parse_args()
    if args.in_memory:
        in_memory(args.calls, args.rounds)
        return 0

    ctx = multiprocessing.get_context("spawn")
    ports: multiprocessing.Queue[int] = ctx.Queue()  # type: ignore[assignment]
    stop = ctx.Event()
    server = ctx.Process(target=serve_lean, args=(args.delay_ms / 1000, ports, stop), daemon=True)
    server.start()
    base_url = f"http://127.0.0.1:{ports.get(timeout=30)}/v1"
    ideal = math.ceil(args.calls / args.concurrency) * args.delay_ms / 1000
    try:
        runs = in_process(base_url, args.calls, args.concurrency, args.rounds)
        cli = through_cli(base_url, args.calls, args.concurrency) if args.cli else None
    finally:
        stop.set()
        server.join(timeout=10)

    print(
        f"openai {openai.__version__}: {args.calls} calls x {args.rounds} rounds at concurrency "
        f"{args.concurrency}, {args.delay_ms:g} ms server (ideal {ideal:.2f} s a round)"
    )
    wall = {name: statistics.median(w for w, _ in rounds) for name, rounds in runs.items()}
    cpu = {name: statistics.median(c for _, c in rounds) / args.calls * 1e6 for name, rounds in runs.items()}
    for name in ("bare", "measured"):
        print(
            f"  {name:<9} wall {wall[name]:.3f} s (x{wall[name] / ideal:.3f} ideal)   CPU {cpu[name]:.0f} us/call"
        )
    per_call_ms = (wall["measured"] - wall["bare"]) / math.ceil(args.calls / args.concurrency) * 1000
    print(
        f"  overhead: wall {100 * (wall['measured'] / wall['bare'] - 1):+.1f} % "
        f"({per_call_ms:+.2f} ms on a {args.delay_ms:g} ms call; target <= 5 %), "
        f"CPU {cpu['measured'] - cpu['bare']:+.0f} us/call (target <= 60 us)"
    )
    if cli is not None:
        print(
            f"  axl-eval run (result duration): {cli:.3f} s (x{cli / ideal:.3f} ideal, x{cli / wall['bare']:.3f} bare)"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
