"""The History panel in headless Chromium: JavaScript on and off, light and dark, no network."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from history_cases import case_history, commit_of, with_history
from report_cases import make_case

from axl_action.history.analysis import change_key
from axl_action.report import render_report_html

pytestmark = pytest.mark.browser

REPO = Path(__file__).resolve().parents[2]
# --cand in report.css: the candidate's colour, light and dark.
CANDIDATE = {"light": "rgb(9, 105, 218)", "dark": "rgb(68, 147, 248)"}


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    case = make_case(40, failed_every=13)
    flaky = frozenset(sorted({change_key(ch) for ch in case.comparison.regressions})[:3])
    analysis, ctx = with_history(case, case_history(case, rows=12, flaky=flaky))
    html = render_report_html(ctx, case.candidate, case.baseline, case.comparison, history=analysis)
    path = tmp_path_factory.mktemp("history") / "report.html"
    path.write_text(html, encoding="utf-8")
    return path


@pytest.fixture
def page_for(browser: Any, report: Path) -> Iterator[Any]:
    contexts: list[Any] = []

    def _open(*, js: bool, scheme: str, touch: bool = False) -> tuple[Any, list[str], list[str]]:
        ctx = browser.new_context(
            viewport={"width": 1280, "height": 900},
            java_script_enabled=js,
            color_scheme=scheme,
            has_touch=touch,
        )
        contexts.append(ctx)
        page = ctx.new_page()
        requests: list[str] = []
        errors: list[str] = []
        url = report.as_uri()
        page.on("request", lambda r: requests.append(r.url))
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.route("**/*", lambda r: r.continue_() if r.request.url.split("#")[0] == url else r.abort())
        page.goto(url)
        return page, requests, errors

    yield _open
    for ctx in contexts:
        ctx.close()


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_panel_reads_without_javascript(page_for: Any, report: Path, scheme: str) -> None:
    page, requests, errors = page_for(js=False, scheme=scheme)
    panel = page.locator("#history")
    assert panel.is_visible()
    assert page.locator("#history svg.h-chart").count() == 6  # 4 scorers, cost, latency
    assert page.locator("#history-readout").is_hidden()
    # Hover values without a script: every point has an SVG <title>.
    points = page.locator("#history circle[data-tip]")
    assert points.count() == 6 * 13
    assert page.evaluate(
        "[...document.querySelectorAll('#history circle[data-tip]')]"
        ".every(c => c.querySelector('title') && c.querySelector('title').textContent === c.dataset.tip)"
    )
    # The runs table holds every value and links each commit.
    page.click("#history-runs summary")
    rows = page.locator("#history-runs tbody tr")
    assert rows.count() == 12
    assert (
        rows.first.locator("a").first.get_attribute("href")
        == f"https://github.com/acme/app/commit/{commit_of(0)}"
    )
    fill = page.evaluate("getComputedStyle(document.querySelector('#history .h-cand')).fill")
    assert fill == CANDIDATE[scheme]
    band = page.evaluate("getComputedStyle(document.querySelector('#history .h-band')).fill")
    assert band == CANDIDATE[scheme]  # the band is the candidate colour, faded
    assert requests == [report.as_uri()] and errors == []
    _shot(page, f"history-{scheme}-nojs")


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_tap_hover_and_keys_show_values_with_javascript(page_for: Any, report: Path, scheme: str) -> None:
    page, requests, errors = page_for(js=True, scheme=scheme, touch=True)
    page.wait_for_selector("#explorer[data-ready=true]:not([data-busy])")
    readout = page.locator("#history-readout")
    assert readout.is_visible() and "tap" in readout.inner_text()
    cand = page.locator("#history svg.h-chart").first.locator("circle.h-cand")
    cand.tap()
    assert readout.inner_text() == cand.get_attribute("data-tip")
    assert "this PR" in readout.inner_text() and "baseline runs vary ±" in readout.inner_text()
    first = page.locator("#history svg.h-chart").first.locator("circle.h-pt").first
    first.hover()
    assert readout.inner_text() == first.get_attribute("data-tip") + " · commit"
    assert readout.locator("a").get_attribute("href") == f"https://github.com/acme/app/commit/{commit_of(0)}"
    first.focus()
    page.keyboard.press("ArrowRight")
    second = page.locator("#history svg.h-chart").first.locator("circle.h-pt").nth(1)
    assert readout.inner_text().startswith(second.get_attribute("data-tip"))
    assert page.evaluate("document.activeElement.classList.contains('h-on')")
    fill = page.evaluate("getComputedStyle(document.querySelector('#history .h-cand')).fill")
    assert fill == CANDIDATE[scheme]
    assert requests == [report.as_uri()] and errors == []
    _shot(page, f"history-{scheme}-js")


def test_explorer_flaky_filter_and_score_strip(page_for: Any) -> None:
    page, _, errors = page_for(js=True, scheme="light")
    page.wait_for_selector("#explorer[data-ready=true][data-history=loaded]:not([data-busy])")
    chip = page.locator('button.chip[data-chip="flaky"]')
    assert chip.is_visible()
    count = int(chip.locator(".chip-count").inner_text())
    assert count == 3
    chip.click()
    assert page.inner_text(".status").startswith("3 of 40 items")
    assert page.locator("tbody tr.row .flaky-mark").count() >= 3
    page.locator("tbody tr.row").first.click()
    page.wait_for_selector("#item-detail:not([hidden])")
    strips = page.locator("#item-detail .hs-strip")
    assert strips.count() == 4
    bars = strips.first.locator(".hs-bar")
    assert bars.count() == 13  # 12 baseline runs, then this run
    assert "hs-cand" in (bars.last.get_attribute("class") or "")
    assert page.locator("#item-detail").inner_text().count("↻ flaky") >= 1
    assert "#f=flaky" in page.url
    assert errors == []


def _shot(page: Any, name: str) -> None:
    """With UPDATE_GOLDEN=1, keep screenshots of the panel for docs/history.md."""
    if os.environ.get("UPDATE_GOLDEN") and name == "history-light-js":
        page.locator("#history").screenshot(path=str(REPO / "docs" / "history.png"))
