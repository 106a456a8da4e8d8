"""Wall time of whole action runs, as the container runs them, against the loopback fake GitHub.

    python benchmarks/action_e2e.py [repeats]

Times three runs of ``python -m axl_action.action.entrypoint`` on the bundled quickstart
(30 items): a push that stores the baseline, a PR run that finds it, compares, comments and
uploads the report, and a second PR run that updates the sticky comment. Each figure is the
median of ``repeats`` (default 5) and includes interpreter start-up and imports.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "e2e" / "action"))

from test_action_e2e import Harness  # noqa: E402

from tests.fakes.github_server import FakeGitHub  # noqa: E402


def main() -> None:
    repeats = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    times: dict[str, list[float]] = {
        "push (baseline)": [],
        "PR (compare + comment)": [],
        "PR again (update)": [],
    }
    for _ in range(repeats):
        with FakeGitHub() as gh, tempfile.TemporaryDirectory() as tmp:
            h = Harness(gh, Path(tmp))
            run, payload, env = h.push(h.main[-1])
            t0 = time.perf_counter()
            assert h.run("push", run, payload, env, variant="baseline").code == 0
            times["push (baseline)"].append(time.perf_counter() - t0)
            pr_run, pr_payload, pr_env, _ = h.pull_request(7)
            for label in ("PR (compare + comment)", "PR again (update)"):
                t0 = time.perf_counter()
                h.run("pull_request", pr_run, pr_payload, pr_env)
                times[label].append(time.perf_counter() - t0)
            api_calls = len(gh.requests_to("api"))
    for label, values in times.items():
        print(
            f"{label:24s} median {statistics.median(values):.2f} s  (min {min(values):.2f}, max {max(values):.2f})"
        )
    print(f"REST calls in the last repetition (3 runs): {api_calls}")


if __name__ == "__main__":
    main()
