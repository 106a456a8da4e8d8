"""The HTML report at 100,000 items in headless Chromium: what a reader does, with timings.

Prints time to headline, time to interactive, a filter click, a title search, a full-text
search and opening an item's detail (printed, never asserted: CI machines vary), and asserts
the behaviour: the right counts, the right item, the right search hits.
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from report_synth import synthetic_pair
from report_unpack import explorer_data

from axl_action.compare.engine import CompareOptions, compare_results
from axl_action.report import build_report_context, render_report_html
from axl_action.report.explorer import FLAG_FAILED, FLAG_REGRESSED
from axl_action.schema import EvalResult

pytestmark = pytest.mark.browser

N = 100_000
BLOCK = 5_000


def _widen(result: EvalResult, times: int) -> None:
    """``times`` copies of the result's items, each with its own id (so keys stay unique)."""
    items = []
    for _ in range(times):
        for it in result.items:
            i = len(items)
            question = str(it.input["question"]).split(": ", 1)[1]  # type: ignore[index]
            items.append(it.model_copy(update={"input": {"id": f"q{i}", "question": f"Q{i}: {question}"}}))
    result.items = items


@pytest.fixture(scope="module")
def big() -> dict[str, Any]:
    t0 = time.perf_counter()
    base, cand = synthetic_pair(BLOCK, output_chars=200, seed=100)
    _widen(base, N // BLOCK)
    _widen(cand, N // BLOCK)
    cand.items[87_654].output = str(cand.items[87_654].output) + " zebracorn"
    cmp = compare_results(base, cand, CompareOptions(seed=1))
    ctx = build_report_context(cand, base, cmp)
    html = render_report_html(ctx, cand, base, cmp)
    _, rows, _ = explorer_data(html)
    print(f"\n100k pair built and rendered in {time.perf_counter() - t0:.1f} s, {len(html) / 1e6:.1f} MB")
    return {"html": html, "rows": rows}


def test_100k_items_interactive(open_report: Any, big: dict[str, Any]) -> None:
    rows = big["rows"]
    w = open_report(big["html"])
    page = w.page
    start = time.perf_counter()
    page.goto(w.file_url, wait_until="commit")
    page.wait_for_selector("#verdict", state="attached", timeout=60_000)
    headline = time.perf_counter() - start
    page.wait_for_selector("#explorer[data-ready=true]", timeout=60_000)
    interactive = time.perf_counter() - start
    assert page.inner_text(".status").startswith(f"{N:,}".replace(",", "") + " of")
    # Virtualized: a screenful of rows in the DOM, not 100,000.
    assert page.locator("tbody tr.row").count() < 100

    page.click('button.chip[data-chip="failed"]')
    failed_ms = float(page.get_attribute("#explorer", "data-update-ms") or "nan")
    expected_failed = sum(1 for r in rows if r[4] & FLAG_FAILED)
    assert page.inner_text(".status").startswith(f"{expected_failed} of")
    page.click('button.chip[data-chip="failed"]')
    page.click('button.chip[data-chip="regressed"]')
    regressed_ms = float(page.get_attribute("#explorer", "data-update-ms") or "nan")
    assert page.inner_text(".status").startswith(f"{sum(1 for r in rows if r[4] & FLAG_REGRESSED)} of")
    page.click('button.chip[data-chip="regressed"]')

    # Title search (the columns): one item's id.
    page.fill("input.search", "q99999")
    page.wait_for_selector("#explorer[data-search]")
    page.wait_for_function("document.querySelector('.status').textContent.startsWith('1 of')")
    title_ms = float(page.get_attribute("#explorer", "data-update-ms") or "nan")
    assert page.inner_text("tbody tr.row td.num") == "99999"

    # Full-text search: every detail chunk unpacked and searched.
    t = time.perf_counter()
    page.fill("input.search", "zebracorn")
    page.wait_for_selector("#explorer[data-search=done]", timeout=60_000)
    full_text = time.perf_counter() - t
    assert page.inner_text(".status").startswith("1 of")

    # Opening the item: its chunk is unpacked on demand.
    t = time.perf_counter()
    page.click("tbody tr.row")
    page.wait_for_selector('#item-detail[data-item="87654"]', timeout=30_000)
    opened = time.perf_counter() - t
    assert page.inner_text("#item-detail h3") == "Item 87654"
    assert "zebracorn" in page.inner_text("#item-detail")
    # An item in a chunk not unpacked yet, by deep link.
    page.fill("input.search", "")
    t = time.perf_counter()
    page.evaluate("location.hash = '#item=12345'")
    page.wait_for_selector('#item-detail[data-item="12345"]', timeout=30_000)
    cold = time.perf_counter() - t
    assert page.inner_text("#item-detail h3") == "Item 12345"
    assert "Q12345: " in page.inner_text("#item-detail")
    assert w.errors == [] and w.requests == [w.file_url]
    print(
        f"100k: headline {headline:.2f} s, interactive {interactive:.2f} s, filter failed "
        f"{failed_ms:.0f} ms, regressed {regressed_ms:.0f} ms, title search {title_ms:.0f} ms, "
        f"full-text search {full_text:.2f} s, open item (searched chunk) {opened * 1000:.0f} ms, "
        f"open item (cold chunk) {cold * 1000:.0f} ms"
    )
