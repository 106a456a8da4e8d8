"""The one home of number formatting (``axl_action.schema.numbers``) against node itself.

``tests/fixtures/js-numbers/corpus.json`` was written once by node (``generate.mjs`` beside it):
for ~1,200 doubles, most of them inexact decimal ties (0.0015, 1.005, x.xx5), what ``toFixed``,
``String()``, ``Number()``, ``Math.round``, round3 and the reference's ``formatPercent`` give.
When ``node`` is on PATH the corpus is also regenerated live and must equal the file.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from axl_action.formatting import num, pct, signed
from axl_action.schema.numbers import format_percent, js_number, js_round, round3, to_fixed

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "js-numbers"
CORPUS: dict[str, Any] = json.loads((FIXTURE / "corpus.json").read_text(encoding="utf-8"))


def _value(text: str) -> float:
    return -0.0 if text == "-0" else float(text)


def test_the_corpus_holds_the_ties_the_formatters_once_got_wrong() -> None:
    rows = {row["x"]: row for row in CORPUS["rows"]}
    assert rows["0.0015"]["percent"] == "0.1%"  # repr-based rounding said 0.2%
    assert rows["0.125"]["fixed"][2] == "0.13"  # Python's format says 0.12
    assert rows["1.005"]["fixed"][2] == "1.00"
    assert len(rows) > 1000


@pytest.mark.parametrize("chunk", range(4))
def test_every_formatter_agrees_with_node(chunk: int) -> None:
    digits: list[int] = CORPUS["digits"]
    wrong: list[tuple[str, str, str, str]] = []
    for row in CORPUS["rows"][chunk::4]:
        x = _value(row["x"])

        def check(what: str, got: str, want: str, row: dict[str, Any] = row) -> None:
            if got != want:
                wrong.append((row["x"], what, got, want))

        check("String", js_number(x), row["string"])
        check("Number", js_number(float(row["string"])), row["number"])
        for d, want in zip(digits, row["fixed"], strict=True):
            check(f"toFixed({d})", to_fixed(x, d), want)
            # The display formatters are toFixed too (num) and signed's magnitude.
            check(f"num({d})", num(x, d), want)
            if float(want) != 0:
                check(f"signed({d})", signed(x, d), ("+" if x > 0 else "") + want)
        check("Math.round", js_number(float(js_round(x))), row["round"])  # a double in JS
        check("round3", js_number(round3(x)), row["round3"])
        check("formatPercent", format_percent(x), row["percent"])
        check("pct", pct(x), row["percent"])
    assert wrong == [], wrong[:10]


def test_round3_on_arrays_is_the_same_rule() -> None:
    np = pytest.importorskip("numpy")
    xs = [_value(row["x"]) for row in CORPUS["rows"]]
    out = round3(np.array(xs))
    assert [js_number(float(v)) for v in out] == [row["round3"] for row in CORPUS["rows"]]


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not on PATH")
def test_the_committed_corpus_is_what_node_prints_now() -> None:
    live = subprocess.run(
        ["node", str(FIXTURE / "generate.mjs")], capture_output=True, text=True, check=True, timeout=60
    ).stdout
    fresh = json.loads(live)
    assert fresh["rows"] == CORPUS["rows"]
