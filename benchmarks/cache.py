"""What the response cache costs and saves (issue 22), measured the way a user pays for it.

1. **Lookup** with N entries on disk (default 100,000): the time of ``store.get`` for a hit
   and for a miss, per call, with the key computed from the canonical request as the gateway
   does (``cache_key`` of a realistic chat request). Reference in the same run: reading the
   same entry file with ``open().read()`` alone, so the figure shows what the cache adds to the
   filesystem's own cost.
2. **A suite through the CLI**: ``axl-eval run`` on an eval of K items (default 10,000), one
   ``runtime.chat`` per item against a loopback OpenAI-compatible server that answers after 20
   ms, three ways in fresh processes: live (``--cache off``), recording (``--cache on``,
   cold) and fully cached (``--cache on``, warm). Timed by the result's own ``duration`` and
   by the whole process. The live run is the reference. Once for each ``--concurrency``
   (default ``5,32``: 5 is the CLI's own default, which a suite that sets none runs at; 32 is
   a suite tuned for throughput, where live calls overlap most and the cache gains least).

3. **The action's restore and save** of a store of M entries (default 10,000) through the fake
   GitHub's Actions cache service on loopback: pack + upload (save), download + unpack with
   every entry verified (restore). Reference: copying the same entry files with
   ``shutil.copytree``.

Run:  python benchmarks/cache.py [--entries 100000] [--items 10000] [--delay 0.02]
                                 [--concurrency 5,32] [--action-entries 10000] [--dir DIR]
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

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from axl_action.cache import DirectoryStore, cache_key, request_record, settle_reply  # noqa: E402
from axl_action.cache.key import CacheRequest  # noqa: E402
from tests.fakes.llm_servers import FakeLLMServer  # noqa: E402

EVAL = """\
import os
from axl_action import dataset, define_eval, scorer

def execute_workflow(value, runtime):
    response = runtime.chat("openai:gpt-4o-mini", [{"role": "user", "content": f"ticket {value}"}], temperature=0)
    return {"output": response.text}

eval = define_eval(
    "cached_suite",
    dataset("cached_suite", items=[{"input": i} for i in range(int(os.environ["ITEMS"]))]),
    [scorer("answered", lambda output: 1.0 if output else 0.0)],
)
"""


def _request(i: int) -> CacheRequest:
    return CacheRequest(
        provider="openai",
        endpoint="/chat/completions",
        base_url="https://api.openai.com/v1",
        model="gpt-4o-mini",
        body={
            "model": "gpt-4o-mini",
            "messages": [
                {"role": "system", "content": "You triage support tickets into one of five queues."},
                {"role": "user", "content": f"Ticket {i}: my invoice shows the wrong amount."},
            ],
            "temperature": 0,
            "max_tokens": 200,
        },
    )


def lookup(entries: int, root: Path, samples: int = 2000) -> None:
    reply = settle_reply(
        status=200,
        body={"text": "billing", "requestId": "req_1"},
        usage={"inputTokens": 40, "outputTokens": 2},
        model="gpt-4o-mini-2024-07-18",
        complete=True,
        finish_reason="stop",
    )
    store = DirectoryStore(root / "lookup", max_bytes=10 * 1024**3)
    have, _ = store.usage()
    if have < entries:
        start = time.perf_counter()
        for i in range(entries):
            request = _request(i)
            store.put(cache_key(request), request_record(request), reply)
        print(
            f"filled {entries:,} entries in {time.perf_counter() - start:.1f} s ({store.usage()[0] / 1e6:.0f} MB)"
        )
    step = max(1, entries // samples)
    hit_ids = list(range(0, entries, step))[:samples]

    start = time.perf_counter()
    for i in hit_ids:
        assert store.get(cache_key(_request(i))) is not None
    hit = (time.perf_counter() - start) / len(hit_ids)

    start = time.perf_counter()
    for i in hit_ids:
        assert store.get(cache_key(_request(entries + i))) is None
    miss = (time.perf_counter() - start) / len(hit_ids)

    start = time.perf_counter()
    for i in hit_ids:
        with open(store.path_of(cache_key(_request(i))), "rb") as fh:
            fh.read()
    raw = (time.perf_counter() - start) / len(hit_ids)

    start = time.perf_counter()
    for i in hit_ids:
        cache_key(_request(i))
    keying = (time.perf_counter() - start) / len(hit_ids)
    print(f"\nLookup with {entries:,} entries on disk ({len(hit_ids):,} samples):")
    print(f"  hit  (key + read + verify + parse): {hit * 1e6:7.1f} us per call")
    print(f"  miss (key + stat):                  {miss * 1e6:7.1f} us per call")
    print(f"  of which the key alone:             {keying * 1e6:7.1f} us")
    print(f"  reference: open().read() of the entry file: {raw * 1e6:7.1f} us  (hit = {hit / raw:.1f}x)")


def _cli(args: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float, dict[str, object]]:
    start = time.perf_counter()
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "axl_action.cli.main",
            "suite_eval.py",
            "--quiet",
            "--output",
            "r.json",
            *args,
        ],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"axl-eval failed ({done.returncode}): {done.stderr[-2000:]}")
    result = json.loads((cwd / "r.json").read_text())
    return wall, result["duration"] / 1000, result["accounting"]


def suite(items: int, delay: float, concurrency: int, root: Path) -> None:
    work = root / f"suite-{concurrency}"
    work.mkdir(parents=True, exist_ok=True)
    (work / "suite_eval.py").write_text(EVAL)
    with FakeLLMServer("openai", default_delay=delay) as server:
        env = {
            **{k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "AXL_EVAL_"))},
            "OPENAI_API_KEY": "sk-bench-0000000000000000",
            "OPENAI_BASE_URL": server.base_url,
            "ITEMS": str(items),
            "PYTHONPATH": str(ROOT),
        }
        cache_dir = work / "c"
        rows = []
        for label, args in (
            ("live (--cache off)", []),
            ("recording (--cache on, cold)", ["--cache", "on", "--cache-dir", str(cache_dir)]),
            ("fully cached (--cache on, warm)", ["--cache", "on", "--cache-dir", str(cache_dir)]),
        ):
            before = len(server.requests)
            wall, duration, accounting = _cli([*args, "--concurrency", str(concurrency)], work, env)
            calls = len(server.requests) - before
            replayed = accounting.get("replayed") or {}
            rows.append((label, wall, duration, calls, replayed))
    live_duration = rows[0][2]
    print(
        f"\nA {items:,}-call suite through the CLI (server answers after {delay * 1000:.0f} ms, "
        f"--concurrency {concurrency}; ideal live {items * delay / concurrency:.2f} s):"
    )
    print(f"  {'':34} {'process':>9} {'duration':>9} {'vs live':>8} {'calls':>7} {'replayed':>9}")
    for label, wall, duration, calls, replayed in rows:
        print(
            f"  {label:34} {wall:8.2f}s {duration:8.2f}s {live_duration / duration:7.1f}x {calls:7,} "
            f"{replayed.get('calls', 0):9,}"  # type: ignore[union-attr]
        )


def action_roundtrip(entries: int, root: Path) -> None:
    import shutil

    from axl_action.cache.archive import pack, unpack
    from axl_action.github.actions_cache import ActionsCache
    from tests.fakes.actions_cache import ac_claim, pull_request_scopes, push_scopes
    from tests.fakes.github_server import FakeGitHub

    reply = settle_reply(
        status=200,
        body={"text": "billing", "requestId": "req_1"},
        usage={"inputTokens": 40, "outputTokens": 2},
        model="gpt-4o-mini-2024-07-18",
        complete=True,
        finish_reason="stop",
    )
    source = DirectoryStore(root / "action-src")
    for i in range(entries):
        request = _request(i)
        source.put(cache_key(request), request_record(request), reply)
    with FakeGitHub() as gh:
        repo = gh.add_repo()

        def client(scopes: tuple[tuple[str, int], ...]) -> ActionsCache:
            run = gh.add_run(repo, head_sha=gh.add_commit(), status="in_progress")
            return ActionsCache(gh.results_url, gh.runtime_token(run, ac=ac_claim(*scopes)))

        start = time.perf_counter()
        data, count = pack(source, max_bytes=1 << 30)
        client(push_scopes()).save("axl-eval-cache-bench-1", "v1", data)
        save = time.perf_counter() - start
        start = time.perf_counter()
        found = client(pull_request_scopes(1)).restore(
            "axl-eval-cache-bench-2", ["axl-eval-cache-bench-"], "v1", limit=1 << 31
        )
        assert found is not None
        done = unpack(DirectoryStore(root / "action-dst"), found.data)
        restore = time.perf_counter() - start
    start = time.perf_counter()
    shutil.copytree(root / "action-src" / "entries", root / "action-copy")
    copy = time.perf_counter() - start
    print(
        f"\nThe action's save and restore of {count:,} entries ({len(data) / 1e6:.1f} MB archive), loopback service:"
    )
    print(f"  save (pack + upload):               {save:6.2f} s")
    print(f"  restore (download + verify + write): {restore:6.2f} s  ({done.restored:,} restored)")
    print(f"  together:                           {save + restore:6.2f} s")
    print(f"  reference: copytree of the entry files: {copy:6.2f} s")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--entries", type=int, default=100_000)
    parser.add_argument("--items", type=int, default=10_000)
    parser.add_argument("--delay", type=float, default=0.02)
    parser.add_argument(
        "--dir", type=Path, default=None, help="where to keep the stores (default: a temp dir)"
    )
    parser.add_argument(
        "--concurrency",
        default="5,32",
        help="comma-separated concurrencies of the suite (default 5,32; 5 is the CLI's default)",
    )
    parser.add_argument("--action-entries", type=int, default=10_000)
    parser.add_argument("--skip-lookup", action="store_true")
    parser.add_argument("--skip-suite", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        root = Path(tmp)
        if not args.skip_lookup:
            lookup(args.entries, root)
        if not args.skip_suite:
            for concurrency in (int(c) for c in args.concurrency.split(",")):
                suite(args.items, args.delay, concurrency, root)
        action_roundtrip(args.action_entries, root)
    print(
        f"\n(python {sys.version.split()[0]}, {os.cpu_count()} CPUs; shared machine: figures vary by ~20 %)"
    )


if __name__ == "__main__":
    main()
