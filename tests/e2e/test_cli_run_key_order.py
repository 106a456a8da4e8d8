"""The results file keeps the reference's per-outcome key order (runner spec §14.2)."""

from __future__ import annotations

import json
from pathlib import Path

from axl_action.cli.main import main

EXAMPLE = Path(__file__).parents[2] / "examples" / "quickstart"


def test_budget_stub_items_are_written_in_the_reference_order(tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    assert main([str(EXAMPLE), "--output", str(out), "--budget", "$0", "--quiet"]) == 1
    item = json.loads(out.read_text(encoding="utf-8"))["items"][0]
    assert list(item) == [
        "input",
        "annotations",
        "output",
        "error",
        "outcome",
        "accounting",
        "cost",
        "scorerCost",
        "scores",
    ]


def test_completed_items_are_written_in_the_reference_order(tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    assert main([str(EXAMPLE), "--output", str(out), "--quiet"]) == 0
    item = json.loads(out.read_text(encoding="utf-8"))["items"][0]
    keys = list(item)
    assert keys[:4] == ["input", "annotations", "output", "scores"]
    assert keys.index("outcome") < keys.index("scoreDetails") < keys.index("accounting")
    assert keys[-2:] == ["cost", "scorerCost"] or keys[-3:-1] == ["cost", "scorerCost"]
