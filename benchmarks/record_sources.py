"""Cost of recording ``metadata.sources`` (scoped runs) through ``axl-eval run``.

Runs the quickstart eval through the CLI, alternating the candidate (recording, the default)
with the reference (``--no-record-sources``) in the same run, and prints the median of the
result's own ``duration`` and of the whole process wall time, and the candidate's overhead.

    python benchmarks/record_sources.py --rounds 7
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EVAL = ROOT / "examples" / "quickstart" / "triage_eval.py"


def _once(out: Path, record: bool) -> tuple[float, float]:
    cmd = [sys.executable, "-m", "axl_action", "run", str(EVAL), "--output", str(out), "--quiet"]
    if not record:
        cmd.append("--no-record-sources")
    started = time.perf_counter()
    subprocess.run(cmd, check=True, cwd=ROOT, env=os.environ.copy(), capture_output=True)
    wall = time.perf_counter() - started
    duration_ms = float(json.loads(out.read_text())["duration"])
    return duration_ms, wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    runs: dict[bool, list[tuple[float, float]]] = {True: [], False: []}
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.rounds):
            order = (False, True) if i % 2 == 0 else (True, False)
            for record in order:
                runs[record].append(_once(Path(tmp) / f"r{i}{record}.json", record))
    for label, index in (("result duration (ms)", 0), ("whole process (s)", 1)):
        ref = statistics.median(r[index] for r in runs[False])
        cand = statistics.median(r[index] for r in runs[True])
        print(f"{label}: reference {ref:.3f}, recording {cand:.3f}, overhead {100 * (cand / ref - 1):+.2f} %")


if __name__ == "__main__":
    main()
