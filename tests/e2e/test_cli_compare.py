"""``axl-eval compare`` end to end on the real axl-eval 0.16.1 result files."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from axl_action.cli.main import main

LEGACY = Path(__file__).parent.parent / "fixtures" / "axl-eval-0.16.1"
REPO = Path(__file__).parent.parent.parent


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["compare", *args])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_tiny_table_is_byte_exact(capsys: pytest.CaptureFixture[str]) -> None:
    # Byte-exact with TS except the scorer that scored nothing: "—", not a mean of 0.000.
    code, out, err = run(capsys, str(LEGACY / "tiny3-baseline.json"), str(LEGACY / "tiny3-candidate.json"))
    assert code == 0
    assert out.splitlines()[:9] == [
        "",
        "Compare: baseline (ba35f0c1) -> candidate (36da434d)",
        "",
        "  Scorer  Baseline  Candidate  Delta     Change  CI 95%            Sig",
        "  ------  --------  ---------  --------  ------  ----------------  ---",
        "  a          0.700      0.400    -0.300  -42.9%  [-0.3000, -0.3000]  *",
        "  b          0.800      0.500    -0.300  -37.5%  —                   ",
        "  never          —          —         —       —  —                   ",
        "",
    ]
    assert "  Regressions: 4 | Improvements: 0 | Stable: 0" in out
    assert "Cost:" not in out  # two legacy $0 files: no cost block
    assert (
        '[axl-eval] WARNING: scorer "never" failed on every item on both sides (baseline 3/3, candidate 3/3): '
        "nothing was scored there, so it has no mean to compare." in err
    )
    assert "[axl-eval] (advisory — pass --max-scorer-error-rate <0..1> to fail CI on a thinned sample)" in err


def test_fail_on_regression_with_a_significant_drop(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, _ = run(
        capsys,
        str(LEGACY / "tiny3-baseline.json"),
        str(LEGACY / "tiny3-candidate.json"),
        "--fail-on-regression",
    )
    assert code == 1


def test_scorer_gate_refuses_on_legacy_zero_sample(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(
        capsys,
        str(LEGACY / "tiny3-baseline.json"),
        str(LEGACY / "tiny3-candidate.json"),
        "--max-scorer-error-rate",
        "0.5",
    )
    assert code == 1
    assert (
        '[axl-eval] Refusing to gate: scorer "b" failed 66.7% on baseline (2/3), over the deterministic'
        in err
    )


def test_math20_item_floor_refuses_then_flag_accepts(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    base, cand = str(LEGACY / "math20-baseline.json"), str(LEGACY / "math20-candidate.json")
    code, out, err = run(capsys, base, cand)
    assert code == 1
    assert (
        "WARNING: baseline (3c5d4d40-225e-45d8-b1b9-6fa7e80df986) item error rate 5% (1/20 attempted" in err
    )
    assert "[axl-eval] Refusing to gate: coverage: candidate (8c7cf7bf" in err
    assert "derived from the items of a pre-0.24 artifact" in err
    assert "not certified: baseline run 3c5d4d40-225e-45d8-b1b9-6fa7e80df986 carries no accounting" in out

    target = tmp_path / "cmp" / "comparison.json"
    code, out, err = run(
        capsys, base, cand, "--max-item-error-rate", "1", "--seed", "5", "--json", str(target)
    )
    assert code == 0
    data = json.loads(target.read_text())
    assert data["comparison"]["seed"] == 5
    assert data["comparison"]["cost"]["certified"] is False
    statuses = {g["name"]: g["status"] for g in data["gates"]["gates"]}
    assert statuses == {
        "budget": "skipped",
        "item-error-rate": "warn",
        "scorer-error-rate": "warn",
        "regressions": "skipped",
        "cost": "skipped",
        "compatibility": "skipped",
    }
    again = tmp_path / "again.json"
    run(capsys, base, cand, "--max-item-error-rate", "1", "--seed", "5", "--json", str(again))
    assert json.loads(again.read_text())["comparison"] == data["comparison"]


def test_multi_run_baseline_is_truncated(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    target = tmp_path / "c.json"
    code, _, _ = run(
        capsys,
        str(LEGACY / "math20-baseline-runs3.json"),
        str(LEGACY / "math20-candidate.json"),
        "--max-item-error-rate",
        "1",
        "--json",
        str(target),
    )
    assert code == 0
    comparison = json.loads(target.read_text())["comparison"]
    assert comparison["baseline"]["runCount"] == 1 and comparison["baseline"]["runsAvailable"] == 3


def test_cost_gate_cannot_certify_legacy(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(
        capsys,
        str(LEGACY / "math20-baseline.json"),
        str(LEGACY / "math20-candidate.json"),
        "--max-item-error-rate",
        "1",
        "--max-cost-increase",
        "5%",
    )
    assert code == 0
    assert "[axl-eval] NOTE: Cannot certify the cost change: baseline run" in err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["a.json"], "Error: compare takes two results files (baseline, then candidate), got 1"),
        (
            ["a", "b", "--max-item-error-rate", "1.5"],
            'Error: --max-item-error-rate must be a number in [0, 1], got "1.5"',
        ),
        (["a", "b", "--max-scorer-error-rate"], "Error: --max-scorer-error-rate requires a value in [0, 1]"),
        (["a", "b", "--threshold", "abc=x"], 'Error: --threshold has a value that is not a number: "abc=x"'),
        (["a", "b", "--seed", "x"], 'Error: --seed must be an integer, got "x"'),
        (
            ["a", "b", "--max-cost-increase", "-3"],
            "Error: --max-cost-increase must be a non-negative percentage",
        ),
        (["a", "b", "--nope"], "Error: Unknown flag: --nope"),
        # A flag after a value flag is not its value (it would have written a file named --holm).
        (["a", "b", "--json", "--holm"], "Error: --json requires a value, got the flag --holm"),
        (["a", "b", "--seed", "1", "--seed", "2"], "Error: --seed was given twice (1 and 2)"),
        (["missing.json", "b"], "Error: results file not found: missing.json"),
    ],
)
def test_bad_flags_and_files_give_one_line(
    capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    code, _out, err = run(capsys, *args)
    assert code == 1
    assert err.startswith(message)
    assert len(err.strip().splitlines()) == 1
    assert "Traceback" not in err


def test_different_datasets_and_bad_json(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _, err = run(capsys, str(LEGACY / "tiny3-baseline.json"), str(LEGACY / "math20-candidate.json"))
    assert code == 1
    assert err.startswith('Error: Cannot compare evals from different datasets: "tiny-3" vs "math-20"')
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    code, _, err = run(capsys, str(broken), str(LEGACY / "tiny3-baseline.json"))
    assert code == 1 and "is not valid JSON" in err


def test_subprocess_exit_code_and_no_traceback() -> None:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "axl_action.cli.main",
            "compare",
            str(LEGACY / "empty.json"),
            str(LEGACY / "tiny3-baseline.json"),
        ],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=60,
    )
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr
    assert proc.stderr.startswith("Error: Cannot compare evals from different datasets")


def test_unwritable_json_target_is_one_line(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _, err = run(
        capsys,
        str(LEGACY / "tiny3-baseline.json"),
        str(LEGACY / "tiny3-candidate.json"),
        "--json",
        str(tmp_path),
    )
    assert code == 1
    assert err.strip().splitlines()[-1].startswith(f"Error: cannot write --json file {tmp_path}")


@pytest.mark.parametrize(
    ("baseline", "candidate", "line"),
    [
        # Nothing priced on either side: not "$0.00 -> $0.00 ($0.00, ...)".
        (
            {"cost": 0.0, "completeness": "incomplete", "reasons": {"unpriced_model": 3}},
            {"cost": 0.0, "completeness": "incomplete", "reasons": {"unpriced_model": 3}},
            "  Cost: baseline unpriced -> candidate unpriced",
        ),
        # A lower bound on one side, nothing measured on the other.
        (
            {"cost": 0.0000135, "completeness": "incomplete", "reasons": {"unpriced_model": 1}},
            {"cost": 0.0, "completeness": "incomplete", "reasons": {"usage_missing": 2}},
            "  Cost: baseline ≥ $0.0000135 -> candidate unknown",
        ),
        # Both measured: money and the change, as the TypeScript CLI prints it.
        (
            {"cost": 0.00128},
            {"cost": 0.00175},
            "  Cost: baseline $0.00128 -> candidate $0.00175 (+$0.00047, +36.7%)",
        ),
    ],
)
def test_cost_line_says_what_was_not_measured(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, baseline: dict, candidate: dict, line: str
) -> None:
    from axl_action.schema import write_result_file
    from tests.unit.compare.compare_builders import make_run

    rows = [{"a": 1.0}, {"a": 0.5}]
    paths = []
    for name, extra in (("b", baseline), ("c", candidate)):
        path = tmp_path / f"{name}.json"
        write_result_file(path, make_run(rows, run_id=name * 8, **extra).to_wire())
        paths.append(str(path))
    _, out, _ = run(capsys, *paths)
    cost_lines = [x for x in out.splitlines() if x.startswith("  Cost:")]
    assert cost_lines == [line]


def test_a_device_is_refused_instead_of_read_forever(capsys: pytest.CaptureFixture[str]) -> None:
    # /dev/zero never ends: it is named as a device, in one line, before any byte is read.
    code, _, err = run(capsys, "/dev/zero", str(LEGACY / "tiny3-baseline.json"))
    assert code == 1
    assert err.strip().splitlines() == ["Error: /dev/zero is a device, not a results file (check the path)"]
