"""``axl-eval run --repeats auto`` end to end (issue 23 item 2; docs/gates.md, "Sequential
repeats"): a baseline with repeats, a candidate that repeats only what it must, and the
comparison that reads the level the rounds spent."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from axl_action.cli.main import main

# Items 0-5 answer at random (seeded by SEED, else the run id), the others always the same;
# calls.txt beside the file gets a line per call (tests/e2e/action reads it too).
NOISY_EVAL = """\
import os, random, threading
from pathlib import Path
from axl_action import dataset, define_eval, scorer

_lock = threading.Lock()
_rng = random.Random(os.environ.get("SEED") or os.environ.get("GITHUB_RUN_ID", "1"))

def execute_workflow(value, runtime):
    with _lock:
        draw = _rng.random()
        with open(Path(__file__).with_name("calls.txt"), "a") as fh:
            fh.write(f"{value}\\n")
    score = (1.0 if draw < 0.5 else 0.0) if value < 6 else float(value % 2)
    return {"output": score}

eval = define_eval(
    "noisy",
    dataset("noisy", items=[{"input": k} for k in range(30)]),
    [scorer("judge", lambda output: output)],
    concurrency=4,
)
"""


@pytest.fixture
def noisy(tmp_path: Path) -> Path:
    (tmp_path / "noisy_eval.py").write_text(NOISY_EVAL)
    return tmp_path


def calls_of(folder: Path) -> dict[int, int]:
    """Calls per item since the last look (the ledger is emptied)."""
    path = folder / "calls.txt"
    counts: dict[int, int] = {}
    for line in path.read_text().split():
        counts[int(line)] = counts.get(int(line), 0) + 1
    path.unlink()
    return counts


def _auto(noisy: Path, baseline: Path, *flags: str) -> int:
    return main(
        ["run", str(noisy / "noisy_eval.py"), "--repeats", "auto", "--baseline", str(baseline), *flags]
    )


def test_run_repeats_only_noisy_items_and_compare_reads_the_spent_level(
    noisy: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    base, cand = noisy / "base.json", noisy / "cand.json"
    assert (
        main(["run", str(noisy / "noisy_eval.py"), "--repeats", "5", "--output", str(base), "--quiet"]) == 0
    )
    calls_of(noisy)
    monkeypatch.setenv("SEED", "2")
    code = _auto(noisy, base, "--threshold", "0", "--max-repeats", "4", "--output", str(cand), "--quiet")
    err = capsys.readouterr().err
    assert code == 0, err
    calls = calls_of(noisy)
    # Threshold 0 never calls a scorer unchanged, so the baseline's noisy items run to the cap
    # and its steady items once.
    assert {k for k, n in calls.items() if n == 4} <= set(range(6))
    assert all(calls[k] == 1 for k in range(6, 30))
    data = json.loads(cand.read_text())
    record = data["metadata"]["sequential"]
    assert record["maxRepeats"] == 4 and record["lookAlpha"] == pytest.approx(0.0125)
    assert record["repeatsRun"] == sum(calls.values())
    mean = f"{record['meanRepeats']:.1f}"
    assert f"repeats auto: {mean} repeats per item on average (cap 4)" in err or (
        f"repeats auto: decided after {mean} repeats per item on average (cap 4)" in err
    )
    assert main(["compare", str(base), str(cand), "--threshold", "0"]) == 0
    out = capsys.readouterr().out
    assert "CI 98.75%" in out


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--max-repeats", "3"], "--max-repeats needs --repeats auto"),
        (["--baseline", "x.json"], "--baseline needs --repeats auto"),
        (["--threshold", "0.1"], "--threshold needs --repeats auto"),
        (["--repeats", "auto", "--threshold", "auto"], "--threshold auto is not available to run"),
        (["--repeats", "often"], "must be a whole number from 1 to 1000 or auto"),
        (["--repeats", "auto", "--max-repeats", "0"], "--max-repeats: must be a whole number from 1 to 1000"),
    ],
)
def test_bad_sequential_flags_are_one_line(
    noisy: Path, capsys: pytest.CaptureFixture[str], flags: list[str], message: str
) -> None:
    code = main(["run", str(noisy / "noisy_eval.py"), *flags])
    err = capsys.readouterr().err
    assert code != 0 and message in err, err
    assert "Traceback" not in err and not (noisy / "calls.txt").exists()


def test_a_baseline_without_the_eval_s_dataset_runs_the_cap_and_says_why(
    noisy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    other = noisy / "other.json"
    assert main(["run", str(noisy / "noisy_eval.py"), "--output", str(other), "--quiet"]) == 0
    data = json.loads(other.read_text())
    data["dataset"] = "something-else"
    other.write_text(json.dumps(data))
    capsys.readouterr()
    calls_of(noisy)
    code = _auto(noisy, other, "--max-repeats", "2")
    err = capsys.readouterr().err
    assert code == 0, err
    assert f"{other} has no run of dataset 'noisy'" in err and "every item runs 2 times" in err
    assert set(calls_of(noisy).values()) == {2}
