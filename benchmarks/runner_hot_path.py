"""The runner's per-item bookkeeping on the workload of the TypeScript CLI's big pair.

20,000 items x 4 deterministic scorers, a zero-latency workflow, concurrency 20
(``benchmarks/evals/big_eval.py``, the eval behind ``../shared/fixtures/axl-eval-0.16.1-big``;
the TypeScript CLI takes 11 µs per item in-process on it, 151 MiB for the whole process).

Printed, each from a fresh process (median of ``--repeat``):

* bare loop: the same workflow and scorer calls in a plain Python loop, no bookkeeping (the
  floor any runner in this language starts from), and the runner's ratio to it;
* in-process: the result's ``duration`` / items, at concurrency 20 and 1, with the dataset's
  pydantic schemas for inputs and annotations as the TypeScript twin has (what a user's run pays
  for), and at concurrency 20 without them (``BIG_SCHEMA=0``);
* whole process: ``axl-eval big_eval.py --output`` from start to exit, against the
  in-process duration plus the import time of the CLI, and its peak RSS.

Run:  python benchmarks/runner_hot_path.py [--items 20000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_bytecode import ensure_bytecode

EVALS = Path(__file__).resolve().parent / "evals"
EVAL_FILE = EVALS / "big_eval.py"
TS_US_PER_ITEM, TS_RSS_MIB = 11, 151


def _bare(count: int) -> float:
    sys.path.insert(0, str(EVALS))
    import big_eval

    items = big_eval.items(count)
    scorers = [s.score for s in big_eval.SCORERS]
    passes = []
    # One pass takes ~20 ms: the median of 15 is steady enough to tell this machine's speed.
    for _ in range(15):
        start = time.perf_counter()
        for item in items:
            value, notes = item["input"], item["annotations"]
            try:
                output = big_eval.workflow(value, None)["output"]
            except ValueError:
                continue
            for fn in scorers:
                try:
                    if fn is big_eval.exact or fn is big_eval.closeness:
                        fn(output, value, notes)
                    elif fn is big_eval.flaky:
                        fn(output, value)
                    else:
                        fn(output)
                except RuntimeError:
                    pass
        passes.append(time.perf_counter() - start)
    return sorted(passes)[len(passes) // 2] / count * 1e6


def _in_process(count: int, concurrency: int) -> float:
    sys.path.insert(0, str(EVALS))
    import big_eval

    from axl_action.evals.runner import execute_run
    from axl_action.runtime.runtime import Runtime

    record = execute_run(big_eval.eval, Runtime(), concurrency=concurrency)
    assert record.view.size == count
    return float(record.wire["duration"]) / count * 1000


def _child(args: list[str], env: dict[str, str], **extra: str) -> float:
    out = subprocess.run(
        [sys.executable, __file__, *args], capture_output=True, text=True, check=True, env={**env, **extra}
    )
    return float(out.stdout.strip().splitlines()[-1])


def _whole(count: int, env: dict[str, str]) -> tuple[float, float, float]:
    """Wall seconds and peak RSS of ``axl-eval --output``, and the run's own duration (s)."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "r.json"
        cmd = [sys.executable, "-m", "axl_action", str(EVAL_FILE), "--output", str(out), "--quiet"]
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        if os.waitstatus_to_exitcode(status) not in (0, 1):
            raise SystemExit("axl-eval run failed")
        duration = json.loads(out.read_text(encoding="utf-8"))["duration"] / 1000
    return wall, usage.ru_maxrss / 1024, duration


def _import_time(env: dict[str, str]) -> float:
    code = "import time; t = time.perf_counter(); import axl_action.cli.run, axl_action.evals.runner, axl_action.schema; print(time.perf_counter() - t)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env)
    return float(out.stdout)


def _median(values: list[float]) -> float:
    return sorted(values)[len(values) // 2]


def main() -> int:
    ensure_bytecode()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        kind, value = args.child
        print(_bare(args.items) if kind == "bare" else _in_process(args.items, int(value)))
        return 0
    env = {**os.environ, "BIG_ITEMS": str(args.items)}
    print(f"load average before: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    n = ["--items", str(args.items)]
    # Interleaved round by round: this machine's speed swings within minutes, and a bare loop
    # measured minutes apart from the runner would not be a same-run reference.
    rounds = [
        (
            _child([*n, "--child", "bare", "0"], env),
            _child([*n, "--child", "run", "20"], env),
            _child([*n, "--child", "run", "1"], env),
            _child([*n, "--child", "run", "20"], env, BIG_SCHEMA="0"),
        )
        for _ in range(args.repeat)
    ]
    bare, c20, c1, plain = (_median([r[k] for r in rounds]) for k in range(4))
    wholes = sorted(_whole(args.items, env) for _ in range(args.repeat))
    wall, rss, duration = wholes[len(wholes) // 2]
    imports = _median([_import_time(env) for _ in range(args.repeat)])
    print(f"{args.items:,} items x 4 deterministic scorers, zero-latency workflow, dataset schemas")
    print(f"  bare Python loop (no bookkeeping):     {bare:6.1f} µs/item")
    print(
        f"  runner in-process, concurrency 20:     {c20:6.1f} µs/item  ({c20 / bare:.1f}x the bare loop; "
        f"TypeScript CLI {TS_US_PER_ITEM} µs -> {c20 / TS_US_PER_ITEM:.1f}x)"
    )
    print(f"  runner in-process, concurrency 1:      {c1:6.1f} µs/item  ({c1 / bare:.1f}x the bare loop)")
    print(
        f"  without the dataset schemas, conc. 20: {plain:6.1f} µs/item  (validation: {c20 - plain:+.1f} µs/item)"
    )
    print(
        f"  whole process with --output: {wall:.2f} s = {wall / (duration + imports):.2f}x "
        f"(in-process {duration:.2f} s + imports {imports:.2f} s); peak RSS {rss:.0f} MiB "
        f"(TypeScript CLI {TS_RSS_MIB} MiB)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
