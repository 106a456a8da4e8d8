"""What ``repeats: auto`` spends against ``repeats: 5`` for the same verdicts (issue 23 item 2).

A 500-item suite through the CLI against a loopback OpenAI-compatible server that answers
after 20 ms. 30 % of the items are noisy: the model says "yes" with a probability of its own
(0.2 to 0.8), the others always say the same. The scorer reads the answer (1 for "yes").

1. The baseline (the push): ``--repeats 5``.
2. Each candidate runs twice, ``--repeats 5`` (the reference) and ``--repeats auto --baseline``:
   * *unchanged*: the same model;
   * *slightly*: the noisy items say "yes" 0.1 less often (a true change of -0.03, under the
     threshold of 0.05: the hard case, whose interval sits near the threshold);
   * *regressed*: 0.2 less often (-0.06, over the threshold).

Printed per candidate: the model calls each way (counted by the server), the ratio, each way's
verdict from ``axl-eval compare --json``, and the results' own ``duration``.

Run:  python benchmarks/sequential.py [--items 500] [--delay 0.02] [--seed 1]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.fakes.llm_servers import FakeLLMServer, RecordedRequest, Reply  # noqa: E402

EVAL = """\
import os
from axl_action import dataset, define_eval, scorer

def execute_workflow(value, runtime):
    reply = runtime.chat("openai:gpt-4o-mini", [{"role": "user", "content": f"ticket {value}"}])
    return {"output": reply.text}

eval = define_eval(
    "sequential_suite",
    dataset("sequential_suite", items=[{"input": i} for i in range(int(os.environ["ITEMS"]))]),
    [scorer("yes", lambda output: 1.0 if output == "yes" else 0.0)],
    concurrency=32,
)
"""

THRESHOLD = "0.05"


class Model:
    """The server's answers: item ``i`` says "yes" with probability ``p[i]`` (minus ``shift``
    on the noisy ones)."""

    def __init__(self, items: int, seed: int) -> None:
        rng = random.Random(seed)
        self.noisy = [rng.random() < 0.3 for _ in range(items)]
        self.p = [rng.uniform(0.2, 0.8) if n else float(rng.random() < 0.5) for n in self.noisy]
        self.shift = 0.0
        self.rng = random.Random(seed + 1)
        self.lock = threading.Lock()

    def answer(self, item: int) -> str:
        p = self.p[item] - (self.shift if self.noisy[item] else 0.0)
        with self.lock:
            draw = self.rng.random()
        return "yes" if draw < p else "no"


def _item_of(request: RecordedRequest) -> int:
    content = request.body["messages"][-1]["content"]
    return int(content.rsplit(" ", 1)[1])


def _run(work: Path, env: dict[str, str], out: str, flags: list[str]) -> float:
    done = subprocess.run(
        [sys.executable, "-m", "axl_action", "suite_eval.py", "--quiet", "--output", out, *flags],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"axl-eval run failed ({done.returncode}): {done.stderr[-2000:]}")
    return float(json.loads((work / out).read_text())["duration"]) / 1000


def _verdict(work: Path, env: dict[str, str], candidate: str) -> str:
    flags = ["--threshold", THRESHOLD, "--seed", "1", "--json", "cmp.json"]
    subprocess.run(
        [sys.executable, "-m", "axl_action", "compare", "base.json", candidate, *flags],
        cwd=work,
        env=env,
        capture_output=True,
        check=False,
    )
    return str(json.loads((work / "cmp.json").read_text())["comparison"]["scorers"]["yes"]["verdict"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=500)
    parser.add_argument("--delay", type=float, default=0.02)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    model = Model(args.items, args.seed)

    with tempfile.TemporaryDirectory() as tmp, FakeLLMServer("openai", default_delay=args.delay) as server:
        server.responder = lambda req: Reply(
            body=server.ok(model.answer(_item_of(req))).body, delay=args.delay
        )
        work = Path(tmp)
        (work / "suite_eval.py").write_text(EVAL)
        env = {
            **{k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "AXL_EVAL_"))},
            "OPENAI_API_KEY": "sk-bench-0000000000000000",
            "OPENAI_BASE_URL": server.base_url,
            "ITEMS": str(args.items),
            "PYTHONPATH": str(ROOT),
        }
        start = time.perf_counter()
        _run(work, env, "base.json", ["--repeats", "5"])
        print(
            f"{args.items} items ({sum(model.noisy)} noisy), server delay {args.delay * 1000:.0f} ms, "
            f"concurrency 32; baseline --repeats 5: {len(server.requests):,} calls, "
            f"{time.perf_counter() - start:.1f} s"
        )
        digest = hashlib.sha256((work / "base.json").read_bytes()).hexdigest()[:12]
        print(f"  baseline sha256 {digest}; threshold {THRESHOLD}\n")
        print(f"  {'candidate':10} {'way':16} {'calls':>7} {'duration':>9} {'verdict':>12}")
        for label, shift in (("unchanged", 0.0), ("slightly", 0.1), ("regressed", 0.2)):
            model.shift = shift
            rows = []
            for way, flags in (
                ("--repeats 5", ["--repeats", "5"]),
                (
                    "--repeats auto",
                    ["--repeats", "auto", "--baseline", "base.json", "--threshold", THRESHOLD],
                ),
            ):
                before = len(server.requests)
                out = f"{label}-{way.split()[-1]}.json"
                duration = _run(work, env, out, flags)
                calls = len(server.requests) - before
                rows.append((way, calls, duration, _verdict(work, env, out)))
            for way, calls, duration, verdict in rows:
                print(f"  {label:10} {way:16} {calls:7,} {duration:8.2f}s {verdict:>12}")
            fixed, auto = rows
            same = "same verdict" if fixed[3] == auto[3] else "VERDICTS DIFFER"
            print(
                f"  {'':10} auto / fixed: calls {auto[1] / fixed[1]:.2f}, duration {auto[2] / fixed[2]:.2f} ({same})\n"
            )


if __name__ == "__main__":
    main()
