"""The figures the HTML report shows for a fixed pair, against a golden written before the
item data was packed (``tests/golden/report-figures.json``): the headline, gates, scores, run
figures and every item's row and detail, decoded from the data the page carries.

``UPDATE_GOLDEN=1`` rewrites the golden; review the diff, it is what readers see.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from report_cases import make_case
from report_unpack import report_figures

from axl_action.report import build_report_context, render_report_html

GOLDEN = Path(__file__).resolve().parents[2] / "golden" / "report-figures.json"


def _figures() -> dict[str, Any]:
    case = make_case(60, failed_every=13, budget_every=17, seed=21)
    # One item whose output is a JSON value, one whose output is very long (kept under the cap).
    case.candidate.items[5].output = {"total": 12, "currency": "USD", "lines": [1, 2]}
    paired = render_report_html(case.ctx, case.candidate, case.baseline, case.comparison)
    alone = render_report_html(build_report_context(case.candidate), case.candidate)
    return {"paired": report_figures(paired), "no_baseline": report_figures(alone)}


def test_report_shows_the_golden_figures() -> None:
    got = json.loads(json.dumps(_figures(), ensure_ascii=False))
    if os.environ.get("UPDATE_GOLDEN"):
        GOLDEN.write_text(
            json.dumps(got, ensure_ascii=False, indent=1, sort_keys=True) + "\n", encoding="utf-8"
        )
    want = json.loads(GOLDEN.read_text(encoding="utf-8"))
    assert got["paired"]["header"] == want["paired"]["header"]
    assert got["paired"]["tables"] == want["paired"]["tables"]
    for side in ("paired", "no_baseline"):
        assert len(got[side]["items"]) == len(want[side]["items"]) == 60
        for g, w in zip(got[side]["items"], want[side]["items"], strict=True):
            assert g == w, (side, w["row"]["index"])
        assert got[side] == want[side]


def test_golden_is_not_empty() -> None:
    want = json.loads(GOLDEN.read_text(encoding="utf-8"))
    paired = want["paired"]
    assert "fail" in paired["header"].lower() and paired["tables"][0][0][0] == "Gate"
    assert any(it["row"]["flags"] & 1 for it in paired["items"])  # some regressed
    assert all(it["detail"]["co"] or it["row"]["outcome"] != "completed" for it in paired["items"])
