"""``axl-eval compare --json`` on every fixture pair, against golden files.

The goldens were written before the compare engine moved onto the run view; they pin the
whole comparison (scorers, bootstrap, item changes, cost, gates) for every pair of fixtures
that share a dataset, under several flag sets. Regenerate with ``UPDATE_GOLDEN=1`` only when a
change of output is intended, and say why in the commit.
"""

from __future__ import annotations

import itertools
import json
import os
from pathlib import Path

import pytest

from axl_action.cli.main import main

ROOT = Path(__file__).parent.parent
GOLDEN = ROOT / "golden" / "compare"
FIXTURES = sorted(
    [
        *(ROOT / "fixtures" / "axl-eval-0.16.1").glob("*.json"),
        ROOT / "fixtures" / "spec-0.24-example.json",
        ROOT.parent / "examples" / "quickstart" / "baseline.json",
    ]
)
FLAG_SETS = {
    "default": [],
    "gated": ["--max-scorer-error-rate", "0.1", "--fail-on-regression", "--max-cost-increase", "5"],
    "holm": ["--holm", "--threshold", "0.02"],
}


def _dataset(path: Path) -> str:
    data = json.loads(path.read_text(encoding="utf-8"))
    return str((data[0] if isinstance(data, list) else data)["dataset"])


PAIRS = [(b, c) for b, c in itertools.product(FIXTURES, FIXTURES) if _dataset(b) == _dataset(c)]


def _case_id(b: Path, c: Path, flags: str) -> str:
    return f"{b.stem}__{c.stem}__{flags}"


@pytest.mark.parametrize("flags", sorted(FLAG_SETS))
@pytest.mark.parametrize(("baseline", "candidate"), PAIRS, ids=[f"{b.stem}-{c.stem}" for b, c in PAIRS])
def test_compare_json_matches_golden(
    baseline: Path, candidate: Path, flags: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "cmp.json"
    code = main(
        ["compare", str(baseline), str(candidate), "--seed", "7", "--json", str(out), *FLAG_SETS[flags]]
    )
    capsys.readouterr()
    got = {"exitCode": code, "json": json.loads(out.read_text(encoding="utf-8"))}
    golden = GOLDEN / f"{_case_id(baseline, candidate, flags)}.json"
    if os.environ.get("UPDATE_GOLDEN"):
        golden.write_text(json.dumps(got, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    assert got == json.loads(golden.read_text(encoding="utf-8"))
