"""History in the reports: noise bands next to the deltas, sparkline rows (the first thing the
comment trims), flaky regressions marked and listed last, and the HTML History panel."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest
from history_cases import REPO, case_history, commit_of, with_history
from markdown_it import MarkdownIt
from report_cases import RUN_INFO, XSS, Case, make_case
from report_unpack import explorer_data, unpack_bytes

from axl_action.history.analysis import analyse, change_key
from axl_action.history.panel import sparkline
from axl_action.report import build_report_context, render_comment, render_report_html, render_summary
from axl_action.report.explorer import FLAG_FLAKY, STRIP_NONE
from axl_action.report.html import script_hash

TEMPLATES = Path(__file__).resolve().parents[3] / "templates"


@pytest.fixture(scope="module")
def case() -> Case:
    return make_case(40, failed_every=13)


def regressed_keys(case: Case) -> list[str]:
    return sorted({change_key(ch) for ch in case.comparison.regressions})


def test_sparkline_scales_between_the_lowest_and_highest() -> None:
    assert sparkline([0.1, 0.2, 0.3]) == "▁▅█"
    assert sparkline([0.5, 0.5]) == "▄▄"
    assert sparkline([]) == ""


def test_context_gets_bands_panel_and_flaky_marks(case: Case) -> None:
    flaky = frozenset(regressed_keys(case)[:2])
    analysis, ctx = with_history(case, case_history(case, flaky=flaky))
    assert ctx.history is not None
    panel = ctx.history
    assert len(panel.runs) == 8 and panel.runs[-1].commit_url == f"{REPO}/commit/{commit_of(7)}"
    assert panel.runs[-1].run_url == f"{REPO}/actions/runs/107"
    for row in ctx.scorers:
        assert row.noise_band == pytest.approx(analysis.bands[row.name].band)
        assert row.noise_moves == 7
    flaky_regs = sum(1 for ch in case.comparison.regressions if change_key(ch) in flaky)
    assert flaky_regs > 0
    assert panel.flaky_regressions == flaky_regs
    assert (
        panel.headline
        == f"{len(case.comparison.regressions)} regressions, {flaky_regs} of them on flaky items"
    )
    top = ctx.top_regressions
    marks = [it.flaky for it in top]
    assert marks == sorted(marks), "items whose regressions are all on flaky scores come last"
    assert any(marks)
    assert all(ch.flaky for it in top if it.flaky for ch in it.changes if ch.regressed)


def test_comment_shows_the_band_next_to_each_delta_and_one_row_per_scorer(case: Case) -> None:
    _, ctx = with_history(case, case_history(case, flaky=frozenset(regressed_keys(case)[:1])))
    text = render_comment(ctx)
    assert re.search(r"\| exact \| [0-9.]+ \| [0-9.]+ \| [-+]?[0-9.]+ <sub>±0\.\d{3}</sub> \|", text), text
    rows = [line for line in text.splitlines() if "baseline runs vary ±" in line]
    assert len(rows) == 4
    assert all(
        re.search(
            r"\| [▁▂▃▄▅▆▇█]{8} \d\.\d{3}–\d\.\d{3} \| Δ [-+]?\d\.\d{3}; baseline runs vary ±\d\.\d{3} \(last 7\)",
            r,
        )
        for r in rows
    ), rows
    assert "of them on flaky items** 🔁" in text
    assert "🔁" in text.split("#### Top regressions", 1)[1]
    summary = render_summary(ctx)
    assert "baseline runs vary ±" in summary and "🔁" in summary


def test_sparkline_rows_are_the_first_thing_the_comment_trims(case: Case) -> None:
    _, ctx = with_history(case, case_history(case))
    full = render_comment(ctx)
    history_block = full.split("<details open><summary><b>History</b>", 1)[1].split("</details>", 1)[0]
    limit = len(full) - 40
    trimmed = render_comment(ctx, limit=limit)
    assert len(trimmed) <= limit
    assert "<b>History</b>" not in trimmed and "history sparklines left out" in trimmed
    # Nothing else went: the same regressed items with the same excerpts, the bands in the table.
    assert trimmed.count("<details><summary>Item ") == full.count("<details><summary>Item ") > 5
    assert "<sub>±" in trimmed
    assert len(history_block) > 40
    without = build_report_context(case.candidate, case.baseline, case.comparison, case.gates, RUN_INFO)
    assert render_comment(without) == render_comment(without, limit=len(render_comment(without)))


def test_history_text_is_escaped_in_markdown_and_html() -> None:
    hostile = make_case(12, scorers=("exact", XSS[:60]), regress_fraction=0.9)
    history = case_history(hostile, rows=6)
    header = hostile.baseline
    analysis = analyse(
        history, scorers=header.scorer_names, types=header.scorer_types, comparison=hostile.comparison
    )
    ctx = build_report_context(
        hostile.candidate, hostile.baseline, hostile.comparison, hostile.gates, RUN_INFO, history=analysis
    )
    text = render_comment(ctx)
    rendered = MarkdownIt("gfm-like", {"html": True, "linkify": False}).render(text).lower()
    assert "<script" not in rendered and "<svg" not in rendered and "<img" not in rendered
    html = render_report_html(ctx, hostile.candidate, hostile.baseline, hostile.comparison, history=analysis)
    panel = html.split('<section id="history"', 1)[1].split("</section>", 1)[0]
    tags: list[tuple[str, list[tuple[str, str | None]]]] = []

    class Tags(HTMLParser):
        def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
            tags.append((tag, attrs))

    Tags().feed(panel)
    assert tags and not {t for t, _ in tags} & {"script", "img", "iframe", "object"}
    assert not [
        a for _, attrs in tags for a, v in attrs if a.startswith("on") or (v or "").startswith("javascript")
    ]
    assert "&lt;script&gt;" in panel


def test_history_template_marks_only_the_charts_safe() -> None:
    text = (TEMPLATES / "_history.html.j2").read_text(encoding="utf-8")
    assert sorted(set(re.findall(r"{{\s*([^}|]+?)\s*\|\s*safe\s*}}", text))) == ["svg"]


def test_html_report_has_the_panel_and_the_explorer_history(case: Case) -> None:
    flaky = frozenset(regressed_keys(case)[:3])
    analysis, ctx = with_history(case, case_history(case, flaky=flaky))
    html = render_report_html(ctx, case.candidate, case.baseline, case.comparison, history=analysis)
    assert 'id="history"' in html and html.count('class="chart h-chart"') == 4 + 2  # scorers, cost, latency
    assert html.count('class="h-cand"') + html.count('class="h-cand h-hollow"') == 6
    assert 'class="h-band"' in html and "data-tip=" in html
    assert f'href="{REPO}/commit/{commit_of(0)}"' in html
    # One inline script (report + history), allowed by its hash.
    [script] = re.findall(r"<script>(.*?)</script>", html, flags=re.S)
    assert "history-readout" in script
    assert f"script-src {script_hash(script)};" in html.replace("&#39;", "'")
    rows_doc, rows, _ = explorer_data(html)
    assert rows_doc["history"]["labels"] == [commit_of(k)[:7] for k in range(8)]
    flagged = {r[0] for r in rows if r[4] & FLAG_FLAKY}
    keys = [f"id:{it.input['id']}" for it in case.candidate.items]  # type: ignore[index]
    assert flagged == {i for i, k in enumerate(keys) if k in flaky}
    assert any(r[11] for r in rows) and all(r[11] == 0 or r[0] in flagged for r in rows)  # flaky ids
    blob = html.split('id="axl-history" data-encoding="deflate-raw+base85 int32">', 1)[1].split(
        "</script>", 1
    )[0]
    cube = np.frombuffer(unpack_bytes(blob), dtype="<i4").reshape(40, 4, 8)
    assert rows_doc["history"]["scorers"] == 4 and rows_doc["history"]["points"] == 8
    details = [
        {"hs": [[None if v == STRIP_NONE else v / 1000 for v in s] for s in item.tolist()]} for item in cube
    ]
    steady = next(
        i
        for i, k in enumerate(keys)
        if k not in flaky and case.baseline.items[i].scores.get("exact") is not None
    )
    strip = details[steady]["hs"]
    assert rows_doc["scorers"][0] == "exact"
    assert len(strip) == 4 and all(len(s) == 8 for s in strip)
    assert strip[0] == [case.baseline.items[steady].scores["exact"]] * 8
    wobbly = keys.index(sorted(flaky)[0])
    assert details[wobbly]["hs"][0] == [0.0, 1.0] * 4


def test_reports_without_history_are_unchanged(case: Case) -> None:
    html = render_report_html(case.ctx, case.candidate, case.baseline, case.comparison)
    assert 'id="history"' not in html and "history-readout" not in html
    rows_doc, rows, _ = explorer_data(html)
    assert (
        "history" not in rows_doc and all(r[11] == 0 for r in rows) and len(rows) == len(case.candidate.items)
    )
    assert "History" not in render_comment(case.ctx)


def test_panel_without_a_baseline_draws_this_run_last(case: Case) -> None:
    history = case_history(case, rows=3)
    analysis = analyse(history, scorers=case.candidate.scorer_names, types=case.candidate.scorer_types)
    ctx = build_report_context(case.candidate, None, None, None, RUN_INFO, history=analysis)
    assert ctx.history is not None and ctx.history.candidate_label == "this run"
    assert all(s.band is None and "not measured yet" in s.band_text for s in ctx.history.scorers)
    means = [s.candidate_mean for s in ctx.history.scorers]
    assert all(m is not None for m in means)
    assert np.isfinite(np.array(means, dtype=float)).all()
