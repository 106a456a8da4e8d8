"""``axl-eval history``, and ``--history`` / ``--threshold auto`` on ``compare`` and ``report``."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from axl_action.cli.main import main

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "unit" / "history"))
from history_synth import Suite, run_wire, timestamp

SUITE = Suite(n=40, kinds={"judge": "levels", "exact": "deterministic"}, seed=8, day_sigma=0.03)


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.fixture
def runs(tmp_path: Path) -> list[Path]:
    paths = []
    for k in range(8):
        path = tmp_path / f"b{k}.json"
        path.write_text(
            json.dumps(run_wire(SUITE, k, run_id=f"b{k}", timestamp=timestamp(k))), encoding="utf-8"
        )
        paths.append(path)
    cand = tmp_path / "cand.json"
    cand.write_text(
        json.dumps(run_wire(SUITE, 50, run_id="cand", timestamp=timestamp(9), shift={"judge": -0.4})),
        encoding="utf-8",
    )
    paths.append(cand)
    return paths


def test_history_builds_the_file_oldest_first_and_prints_the_bands(
    capsys: pytest.CaptureFixture[str], runs: list[Path], tmp_path: Path
) -> None:
    out_file = tmp_path / "history.json"
    shuffled = [str(p) for p in reversed(runs[:8])]  # order comes from the timestamps
    code, out, _ = cli(capsys, "history", *shuffled, "--output", str(out_file), "--suite", "qa")
    assert code == 0
    doc = json.loads(out_file.read_text())
    assert [row["resultId"] for row in doc["rows"]] == [f"b{k}" for k in range(8)]
    assert doc["suite"] == "qa" and doc["limit"] == 50
    assert f"Wrote {out_file}: 8 rows (2026-11-01 to 2026-11-01)" in out
    assert "\n  judge   ±0.0" in out and "\n  exact   ±0.000 (last 7)" in out
    # Append one more with its commit, keep the newest 5, gzipped.
    packed = tmp_path / "history.json.gz"
    code, out, _ = cli(
        capsys, "history", str(runs[0]), "--history", str(out_file), "--output", str(packed),
        "--limit", "5", "--commit", "abc1234", "--run-id", "77",
    )  # fmt: skip
    assert code == 0
    from axl_action.history import load_history

    rows = load_history(packed).entries
    assert len(rows) == 5 and rows[-1].summary.commit == "abc1234" and rows[-1].summary.run_id == "77"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["x.json"], "history needs --output <file>"),
        (["--output", "h.json"], "history needs at least one results file"),
        (["a.json", "b.json", "--output", "h.json", "--commit", "abc"], "--commit and --run-id name one run"),
        (["a.json", "--output", "h.json", "--limit", "0"], "--limit must be a whole number from 1 to 500"),
        (["a.json", "--output", "h.json", "--nope"], "Unknown flag: --nope"),
        (["missing.json", "--output", "h.json"], "results file not found: missing.json"),
    ],
)
def test_history_flag_errors_are_one_line(
    capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    code, _, err = cli(capsys, "history", *args)
    assert code == 1
    assert message in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_compare_with_history_and_threshold_auto(
    capsys: pytest.CaptureFixture[str], runs: list[Path], tmp_path: Path
) -> None:
    hist = tmp_path / "history.json"
    assert cli(capsys, "history", *map(str, runs[:8]), "--output", str(hist))[0] == 0
    baseline, cand = str(runs[7]), str(runs[8])
    report = tmp_path / "cmp.json"
    code, out, err = cli(
        capsys, "compare", baseline, cand, "--threshold", "auto", "--history", str(hist),
        "--seed", "3", "--json", str(report), "--fail-on-regression",
    )  # fmt: skip
    assert code == 1, err  # the judge dropped 0.4: far outside its band
    assert "  History: 8 baseline runs" in out
    assert (
        "\n  judge   Δ -0." in out and "baseline runs vary ±0." in out and "(threshold from history)" in out
    )
    data = json.loads(report.read_text())
    assert data["comparison"]["scorers"]["judge"]["thresholdSource"] == "history"
    assert data["history"]["auto"] is True and data["history"]["scorers"]["judge"]["moves"] == 7
    assert data["comparison"]["scorers"]["judge"]["threshold"] == pytest.approx(
        data["history"]["scorers"]["judge"]["band"]
    )


def test_threshold_auto_with_a_short_history_keeps_the_defaults_and_says_so(
    capsys: pytest.CaptureFixture[str], runs: list[Path], tmp_path: Path
) -> None:
    hist = tmp_path / "history.json"
    assert cli(capsys, "history", *map(str, runs[:3]), "--output", str(hist))[0] == 0
    code, _, err = cli(
        capsys,
        "compare",
        str(runs[2]),
        str(runs[8]),
        "--threshold",
        "auto",
        "--history",
        str(hist),
        "--json",
        str(tmp_path / "c.json"),
    )
    assert code == 0
    assert "[axl-eval] NOTE: threshold: auto needs 5 baseline runs" in err
    assert "'judge' has 2 moves, so it keeps its default threshold 0.05" in err
    source = json.loads((tmp_path / "c.json").read_text())["comparison"]["scorers"]["judge"][
        "thresholdSource"
    ]
    assert source == "llm"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--threshold", "auto"], "--threshold auto needs --history <history.json>"),
        (["--history", "nope.json"], "history file not found: nope.json"),
        (["--threshold", "often"], '--threshold must be a number, name=value pairs or auto, got "often"'),
    ],
)
def test_compare_history_flag_errors(
    capsys: pytest.CaptureFixture[str], runs: list[Path], args: list[str], message: str
) -> None:
    code, _, err = cli(capsys, "compare", str(runs[0]), str(runs[1]), *args)
    assert code == 1 and message in err and "Traceback" not in err


def test_a_corrupt_history_file_is_one_line(
    capsys: pytest.CaptureFixture[str], runs: list[Path], tmp_path: Path
) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "axl-eval-history", "version": 1, "limit": 5, "keys": [], "rows": [{}]}')
    code, _, err = cli(
        capsys, "report", str(runs[8]), "--history", str(bad), "--html", str(tmp_path / "r.html")
    )
    assert code == 1
    assert f"Error: {bad} is not a valid history file: at rows[0].date: Field required" in err


def test_report_with_history_writes_the_panel(
    capsys: pytest.CaptureFixture[str], runs: list[Path], tmp_path: Path
) -> None:
    hist = tmp_path / "history.json"
    assert cli(capsys, "history", *map(str, runs[:8]), "--output", str(hist))[0] == 0
    html, md = tmp_path / "r.html", tmp_path / "c.md"
    code, out, _ = cli(
        capsys, "report", str(runs[8]), "--baseline", str(runs[7]), "--history", str(hist),
        "--html", str(html), "--markdown", str(md), "--repo-url", "https://github.com/acme/app",
    )  # fmt: skip
    assert code == 0 and "Verdict:" in out
    page = html.read_text()
    assert 'id="history"' in page and "8 baseline runs" in page
    assert "<b>History</b> · 8 baseline runs" in md.read_text()
