"""``axl-eval report``: files written, flags validated, errors explained."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from report_synth import synthetic_pair

from axl_action.cli import report as cli
from axl_action.cli.main import main
from axl_action.errors import UsageError
from axl_action.schema import write_result_file


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    tmp = tmp_path_factory.mktemp("results")
    base, cand = synthetic_pair(30, failed_every=0)
    return write_result_file(tmp / "baseline.json", base), write_result_file(tmp / "candidate.json", cand)


def test_writes_all_three_and_prints_paths(files: tuple[Path, Path], tmp_path: Path) -> None:
    base, cand = files
    out = io.StringIO()
    code = cli.run(
        [
            str(cand),
            "--baseline",
            str(base),
            "--html",
            str(tmp_path / "r" / "report.html"),
            "--markdown",
            str(tmp_path / "comment.md"),
            "--summary",
            str(tmp_path / "summary.md"),
            "--suite",
            "qa",
            "--fail-on-regression",
            "--seed",
            "3",
            "--run-url",
            "https://github.com/a/b/actions/runs/1",
        ],
        out=out,
    )
    assert code == 0
    text = out.getvalue()
    assert text.startswith("Verdict: fail (failed: Regressions)")
    for name in ("report.html", "comment.md", "summary.md"):
        assert name in text
    comment = (tmp_path / "comment.md").read_text(encoding="utf-8")
    assert comment.rstrip().endswith('<!-- axl-eval-action:comment suite="qa" -->')
    assert "[Workflow run](https://github.com/a/b/actions/runs/1)" in comment
    assert (tmp_path / "r" / "report.html").read_text(encoding="utf-8").startswith("<!DOCTYPE html>")


def test_default_output_is_html_next_to_candidate(files: tuple[Path, Path]) -> None:
    _, cand = files
    out = io.StringIO()
    assert cli.run([str(cand)], out=out) == 0
    target = cand.with_name("candidate.report.html")
    assert target.exists() and f"HTML report: {target}" in out.getvalue()
    assert "Verdict: pass" in out.getvalue()


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        ([], "report takes one candidate results file, got 0"),
        (["a.json", "b.json"], "got 2"),
        (["a.json", "--html"], "--html requires a value"),
        (["a.json", "--nope"], "Unknown flag: --nope"),
        (["a.json", "--max-item-error-rate", "2"], "must be a number in [0, 1]"),
        (["a.json", "--threshold", "x=abc"], "--threshold has a value that is not a number"),
        (["a.json", "--seed", "1.5"], "--seed must be an integer"),
    ],
)
def test_usage_errors(argv: list[str], message: str) -> None:
    with pytest.raises(UsageError) as err:
        cli.parse_args(argv)
    assert message in str(err.value)


def test_missing_file_is_a_clean_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", str(tmp_path / "missing.json")]) == 1
    assert capsys.readouterr().err.startswith("Error: ")


def test_help(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.run(["--help"]) == 0
    assert "--baseline" in capsys.readouterr().out


def test_quickstart_baseline_renders(tmp_path: Path) -> None:
    """A real runner artifact (the committed quickstart baseline) against itself."""
    baseline = Path(__file__).resolve().parents[3] / "examples" / "quickstart" / "baseline.json"
    out = io.StringIO()
    html, md = tmp_path / "r.html", tmp_path / "c.md"
    code = cli.run(
        [str(baseline), "--baseline", str(baseline), "--html", str(html), "--markdown", str(md)], out=out
    )
    assert code == 0
    comment = md.read_text(encoding="utf-8")
    assert "Top regressions" not in comment
    assert "| Compatibility |" in comment
    assert html.stat().st_size > 20_000


def test_report_text_limit_cuts_the_report_not_the_results(tmp_path: Path) -> None:
    from report_unpack import explorer_data

    from axl_action.schema import load_result_file

    base, cand = synthetic_pair(3, failed_every=0, output_chars=40)
    long_text = "x" * 12_395
    cand.items[1].output = long_text
    cand_path = write_result_file(tmp_path / "candidate.json", cand)
    base_path = write_result_file(tmp_path / "baseline.json", base)
    html = tmp_path / "report.html"
    argv = [str(cand_path), "--baseline", str(base_path), "--html", str(html)]
    assert cli.run([*argv, "--report-text-limit", "50"], out=io.StringIO()) == 0
    _, _, details = explorer_data(html.read_text(encoding="utf-8"))
    assert details[1]["co"] == "x" * 50 + "\n… 12,345 more characters"
    assert details[0]["co"] == cand.items[0].output  # shorter than the limit: whole
    assert load_result_file(cand_path).results[0].items[1].output == long_text
    assert cli.run([*argv, "--report-text-limit", "0"], out=io.StringIO()) == 0
    assert explorer_data(html.read_text(encoding="utf-8"))[2][1]["co"] == long_text
    assert cli.run(argv, out=io.StringIO()) == 0  # default 20,000: whole here
    assert explorer_data(html.read_text(encoding="utf-8"))[2][1]["co"] == long_text
    with pytest.raises(UsageError, match="--report-text-limit must be a whole number"):
        cli.parse_args([str(cand_path), "--report-text-limit", "-3"])
