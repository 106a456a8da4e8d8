"""``axl-eval merge`` end to end: shards of the quick-start eval join into the full run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from axl_action.cli.main import main

REPO = Path(__file__).parent.parent.parent
EVAL = REPO / "examples" / "quickstart" / "triage_eval.py"


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("shards")
    for i in (1, 2, 3):
        assert main(["run", str(EVAL), "--shard", f"{i}/3", "--output", str(out / f"s{i}.json")]) in (0, 1)
    assert main(["run", str(EVAL), "--output", str(out / "full.json")]) in (0, 1)
    return out


def test_merged_shards_equal_the_full_run(runs: Path, capsys: pytest.CaptureFixture[str]) -> None:
    merged_path = runs / "merged" / "all.json"
    code = main(
        [
            "merge",
            str(runs / "s3.json"),
            str(runs / "s1.json"),
            str(runs / "s2.json"),
            "--output",
            str(merged_path),
        ]
    )
    assert code == 0
    assert f"Merged 3 shard(s) into 30 items: {merged_path}" in capsys.readouterr().out
    merged = json.loads(merged_path.read_text())
    full = json.loads((runs / "full.json").read_text())
    assert [i["input"] for i in merged["items"]] == [i["input"] for i in full["items"]]
    assert [i["scores"] for i in merged["items"]] == [i["scores"] for i in full["items"]]
    for key in ("count", "failures", "coverage", "itemErrorRate"):
        assert merged["summary"].get(key) == full["summary"].get(key)
    assert merged["summary"]["scorers"] == full["summary"]["scorers"]
    assert merged["metadata"]["fingerprint"] == full["metadata"]["fingerprint"]

    target = runs / "cmp.json"
    code = main(["compare", str(runs / "full.json"), str(merged_path), "--seed", "1", "--json", str(target)])
    capsys.readouterr()
    comparison = json.loads(target.read_text())["comparison"]
    assert code == 0
    assert comparison["regressions"] == [] and comparison["improvements"] == []
    assert comparison["compatibility"]["status"] == "compatible"


def test_merge_errors_are_one_line(runs: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = str(runs / "x.json")
    assert main(["merge", str(runs / "s1.json"), str(runs / "s3.json"), "--output", out]) == 1
    assert capsys.readouterr().err.startswith("Error: missing shard(s) 2/3 (")
    assert main(["merge", str(runs / "s1.json"), str(runs / "s1.json"), "--output", out]) == 1
    err = capsys.readouterr().err
    assert err.startswith("Error: shard 1/3 is given more than once")
    assert main(["merge", str(runs / "full.json"), "--output", out]) == 1
    assert "has no shard stamp (metadata.shard)" in capsys.readouterr().err
    assert main(["merge", str(runs / "s1.json")]) == 1
    assert capsys.readouterr().err.startswith("Error: merge needs --output <file>")
    assert not Path(out).exists()


def test_quickstart_baseline_against_a_fresh_candidate(
    runs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = runs / "quick.json"
    code = main(
        [
            "compare",
            str(REPO / "examples" / "quickstart" / "baseline.json"),
            str(runs / "full.json"),
            "--seed",
            "4",
            "--json",
            str(target),
        ]
    )
    out = capsys.readouterr()
    assert code == 0
    data = json.loads(target.read_text())
    comparison = data["comparison"]
    assert comparison["regressions"] and comparison["improvements"]
    assert comparison["scorers"]["order_id"]["verdict"] == "improved"
    assert comparison["cost"]["certified"] is False  # the baseline crashed on an item the candidate ran
    assert "not certified: case coverage differs at item 20" in out.out
    gates = {g["name"]: g["status"] for g in data["gates"]["gates"]}
    assert gates["item-error-rate"] == "warn"


def test_unwritable_output_is_one_line(runs: Path, capsys: pytest.CaptureFixture[str]) -> None:
    shards = [str(runs / f"s{i}.json") for i in (1, 2, 3)]
    assert main(["merge", *shards, "--output", str(runs)]) == 1
    assert capsys.readouterr().err.startswith(f"Error: cannot write --output file {runs}")
