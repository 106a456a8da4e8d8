"""The HTML report in real headless Chromium: offline, interactive, and inert to hostile text.

Run with ``pytest -m browser tests/browser``. ``UPDATE_GOLDEN=1`` also refreshes
``docs/comment.png`` (a rendered PR comment for the README) and ``docs/report.png`` (the HTML
report of the bundled example).
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect
from report_cases import XSS, make_case
from report_synth import synthetic_pair

from axl_action.compare.engine import CompareOptions, compare_results
from axl_action.report import build_report_context, render_comment, render_report_html
from axl_action.report.markdown import comment_markdown_to_html

pytestmark = pytest.mark.browser

REPO = Path(__file__).resolve().parents[2]


def _html(case: Any) -> str:
    return render_report_html(case.ctx, case.candidate, case.baseline, case.comparison)


@pytest.fixture(scope="module")
def case() -> Any:
    c = make_case(120, failed_every=23, budget_every=31)
    # Unique words to find by search: one in an output, one in judge reasoning.
    c.candidate.items[7].output = str(c.candidate.items[7].output) + " zebracorn"
    detail = (c.candidate.items[3].score_details or {})["judge"]
    assert detail.metadata is not None
    detail.metadata["reasoning"] = "The unicornjudge says no."
    # JSON outputs whose key order differs and one value changed.
    c.baseline.items[11].output = json.dumps({"total": 10, "currency": "USD", "lines": [1, 2]})
    c.candidate.items[11].output = json.dumps({"currency": "USD", "lines": [1, 2], "total": 12})
    return c


def _visible_count(page: Any) -> int:
    text = page.inner_text(".status")
    return int(text.split(" of ")[0])


def test_offline_zero_requests_no_errors(open_report: Any, case: Any) -> None:
    w = open_report(_html(case))
    page = w.open()
    page.click("tr.row")
    page.wait_for_selector("#item-detail:not([hidden])")
    assert w.requests == [w.file_url], w.requests
    assert w.errors == []
    # Virtualized: only the rows in view are in the DOM; scrolling to the end draws the last.
    in_dom = page.evaluate("document.querySelectorAll('tbody tr.row').length")
    assert 10 <= in_dom < 120
    rendered = "Array.from(document.querySelectorAll('tbody tr.row')).map(r => +r.dataset.item)"
    top = page.evaluate(rendered)
    page.evaluate("document.querySelector('.vscroll').scrollTop = 1e9")
    page.wait_for_timeout(100)
    bottom = page.evaluate(rendered)
    assert len(bottom) < 120 and set(top).isdisjoint(bottom) and len(set(top) | set(bottom)) <= 120


def test_filters_counts_and_search(open_report: Any, case: Any) -> None:
    page = open_report(_html(case)).open()
    total = _visible_count(page)
    assert total == 120
    chip = page.locator('button.chip[data-chip="regressed"]')
    expected = int(chip.locator(".chip-count").inner_text())
    assert expected == case.ctx.regressed_items_total
    chip.click()
    assert chip.get_attribute("aria-pressed") == "true"
    assert _visible_count(page) == expected
    # Counts are live: other chips now count within the regressed set.
    failed_count = int(page.locator('button.chip[data-chip="failed"] .chip-count').inner_text())
    assert failed_count == 0
    chip.click()
    page.fill("input.search", "zebracorn")
    expect(page.locator(".status")).to_have_text(re.compile(r"^1 of"))
    expect(page.locator("tbody tr.row td.num").first).to_have_text("7")
    page.fill("input.search", "unicornjudge")
    expect(page.locator("tbody tr.row td.num").first).to_have_text("3")
    expect(page.locator(".status")).to_have_text(re.compile(r"^1 of"))
    assert page.url.endswith("#q=unicornjudge")


def test_sort_and_deep_link(open_report: Any, case: Any) -> None:
    w = open_report(_html(case))
    page = w.open()
    # Default: worst regression first.
    first = int(page.inner_text("tbody tr.row td.num"))

    def worst(i: int) -> float:
        b, c = case.baseline.items[i].scores, case.candidate.items[i].scores
        deltas = [c[k] - b[k] for k in c if c.get(k) is not None and b.get(k) is not None]
        return min(deltas) if deltas else float("inf")

    assert first == min(range(len(case.candidate.items)), key=lambda i: (worst(i), i))
    page.click("th button.sort >> text=Latency")
    page.click("th button.sort >> text=Latency")  # second click: ascending
    lat = page.evaluate(
        "Array.from(document.querySelectorAll('tbody tr.row')).slice(0, 20).map(r => r.lastChild.textContent)"
    )
    ms = [int(x.rstrip("ms")) for x in lat if x.endswith("ms")]
    assert ms == sorted(ms)
    page.click('button.chip[data-chip="changed"]')
    page.click("tbody tr.row")
    url = page.url
    assert "f=changed" in url and "item=" in url and "sort=latency" in url
    # Opening the link in a fresh page restores filters, sort and the open item.
    w2 = open_report(_html(case), name="again.html")
    page2 = w2.open(url[url.index("#") :])
    assert page2.locator('button.chip[data-chip="changed"]').get_attribute("aria-pressed") == "true"
    item = url.split("item=")[1].split("&")[0]
    assert page2.inner_text("#item-detail h3") == f"Item {item}"
    assert w2.requests == [w2.file_url] and w.errors == [] and w2.errors == []


def test_word_and_json_diff(open_report: Any, case: Any) -> None:
    changed = next(
        i
        for i, (b, c) in enumerate(zip(case.baseline.items, case.candidate.items, strict=True))
        if b.output != c.output and c.outcome == "completed" and i != 11 and i != 7
    )
    page = open_report(_html(case)).open(f"#item={changed}")
    assert page.locator("#item-detail del").count() > 0
    assert page.locator("#item-detail ins").count() > 0
    assert "Word diff" in page.inner_text("#item-detail")
    page.evaluate("location.hash = '#item=11'")
    expect(page.locator("#item-detail h3")).to_have_text("Item 11")
    text = page.inner_text("#item-detail")
    assert "JSON diff" in text
    assert page.locator("#item-detail ins").all_inner_texts() == ["12"]
    assert page.locator("#item-detail del").all_inner_texts() == ["10"]


def test_keyboard(open_report: Any, case: Any) -> None:
    page = open_report(_html(case)).open()
    page.focus("tbody tr.row")
    page.keyboard.press("ArrowDown")
    focused = page.evaluate("document.activeElement.dataset.item")
    page.keyboard.press("Enter")
    assert page.inner_text("#item-detail h3") == f"Item {focused}"
    page.keyboard.press("Escape")
    assert page.locator("#item-detail").is_hidden()
    page.keyboard.press("/")
    assert page.evaluate("document.activeElement.classList.contains('search')")


def test_hostile_text_never_executes(open_report: Any) -> None:
    base, cand = synthetic_pair(
        8,
        scorers=("exact", XSS[:60]),
        texts={"input": XSS, "baseline_output": XSS + " a", "candidate_output": XSS + " b", "reasoning": XSS},
        regress_fraction=0.9,
        failed_every=0,
    )
    cand.metadata["note"] = XSS
    cmp = compare_results(base, cand, CompareOptions(seed=3))
    ctx = build_report_context(cand, base, cmp)
    w = open_report(render_report_html(ctx, cand, base, cmp))
    page = w.open("#item=0&q=" + "script")
    page.wait_for_selector("#item-detail:not([hidden])")
    for i in range(3):
        page.evaluate(f"location.hash = '#item={i}'")
        page.wait_for_timeout(50)
    page.click("details.item summary >> nth=1")
    page.click("#metadata summary")
    assert XSS[:40] in page.inner_text("#metadata")
    assert page.evaluate("typeof window.__pwned") == "undefined"
    assert w.dialogs == [] and w.errors == []
    assert w.requests == [w.file_url]
    assert page.locator("img").count() == 0
    assert XSS[:30] in page.inner_text("#item-detail")


def test_large_compressed_report_loads(open_report: Any) -> None:
    base, cand = synthetic_pair(1500, output_chars=2000, seed=11)
    cmp = compare_results(base, cand, CompareOptions(seed=1))
    ctx = build_report_context(cand, base, cmp)
    html = render_report_html(ctx, cand, base, cmp)
    assert 'data-encoding="deflate-raw+base85"' in html
    w = open_report(html)
    page = w.open()
    assert _visible_count(page) == 1500
    page.fill("input.search", "q1499")
    expect(page.locator(".status")).to_have_text(re.compile(r"^1 of"))
    assert w.errors == [] and w.requests == [w.file_url]


def test_phone_viewport_has_no_page_overflow(open_report: Any, case: Any) -> None:
    page = open_report(_html(case), viewport={"width": 390, "height": 844}).open("#item=5")
    overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
    assert overflow <= 1


def test_comment_screenshot(browser: Any, tmp_path: Path) -> None:
    c = make_case(40, failed_every=13, budget_every=17)
    body = comment_markdown_to_html(render_comment(c.ctx))
    page = browser.new_page(viewport={"width": 900, "height": 800}, device_scale_factor=1)
    page.set_content(
        "<!DOCTYPE html><meta charset=utf-8><style>"
        "body{font:14px/1.5 -apple-system,'Segoe UI',Helvetica,Arial,sans-serif;color:#1f2328;margin:0;padding:16px 20px;"
        "max-width:860px;border:1px solid #d1d9e0;border-radius:6px}"
        "table{border-collapse:collapse;margin:8px 0}th,td{border:1px solid #d1d9e0;padding:4px 10px}"
        "th{background:#f6f8fa}code{background:#eff1f3;padding:1px 4px;border-radius:4px;font-size:12px}"
        "pre{background:#f6f8fa;padding:8px;border-radius:6px;white-space:pre-wrap}h3{margin:4px 0}"
        "sub{color:#59636e}a{color:#0969da}details{margin:4px 0}</style>" + body
    )
    out = REPO / "docs" / "comment.png" if os.environ.get("UPDATE_GOLDEN") else tmp_path / "comment.png"
    out.parent.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(out), full_page=True)
    page.close()
    assert out.stat().st_size > 10_000


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_delta_chart_labels_are_not_clipped(browser: Any, tmp_path: Path, scheme: str) -> None:
    # "−0.150 inconclusiv": the right-hand labels once ran past the SVG's edge.
    c = make_case(120, failed_every=23, budget_every=31)
    for row in c.ctx.scorers:
        row.delta, row.ci_lower, row.ci_upper, row.verdict = -0.15, -0.31, 0.02, "inconclusive"
    path = tmp_path / "report.html"
    path.write_text(_html(c), encoding="utf-8")
    ctx = browser.new_context(viewport={"width": 1280, "height": 900}, color_scheme=scheme)
    page = ctx.new_page()
    page.goto(path.as_uri())
    overflow = page.evaluate(
        """() => Array.from(document.querySelectorAll('svg.chart')).flatMap(svg => {
            const width = svg.viewBox.baseVal.width;
            return Array.from(svg.querySelectorAll('text')).map(t => {
              const b = t.getBBox();
              return {text: t.textContent, left: b.x, right: b.x + b.width, width};
            }).filter(b => b.left < 0 || b.right > b.width + 0.5);
          })"""
    )
    labels = page.evaluate("Array.from(document.querySelectorAll('svg.chart text')).map(t => t.textContent)")
    ctx.close()
    assert any(label.endswith("inconclusive") for label in labels)
    assert overflow == []


def test_unpriced_items_read_unpriced_in_the_explorer(open_report: Any) -> None:
    from test_numbers_shown_right import _unpriced_run

    baseline = _unpriced_run("b0000000-0000-4000-8000-000000000001", "2026-11-30T12:00:00.000Z")
    candidate = _unpriced_run("c0000000-0000-4000-8000-000000000002", "2026-11-30T13:00:00.000Z")
    comparison = compare_results(baseline, candidate, CompareOptions(seed=1))
    ctx = build_report_context(candidate, baseline, comparison)
    page = open_report(render_report_html(ctx, candidate, baseline, comparison)).open()
    cells = page.evaluate(
        "Array.from(document.querySelectorAll('tbody tr.row')).map(r => r.children[r.children.length - 2].textContent)"
    )
    assert cells and set(cells) == {"unpriced"}
    page.click("tbody tr.row")
    page.wait_for_selector("#item-detail:not([hidden])")
    detail = page.inner_text("#item-detail")
    assert "unpriced_model (no price for openai:smollm2-135m)" in detail
    assert "$0.00" not in detail.split("Generation cost")[1].split("\n")[1]


def test_report_screenshot(browser: Any, tmp_path: Path) -> None:
    """The README's report picture: the real HTML report of the bundled example (its Quick start).

    ``UPDATE_GOLDEN=1`` writes ``docs/report.png``; otherwise the picture is taken and checked.
    """
    import subprocess
    import sys

    results = tmp_path / "results.json"
    report = tmp_path / "report.html"
    run = [sys.executable, "-m", "axl_action.cli.main"]
    subprocess.run([*run, "examples/quickstart", "--output", str(results), "--quiet"], cwd=REPO, check=True)
    subprocess.run(
        [
            *run,
            "report",
            str(results),
            "--baseline",
            "examples/quickstart/baseline.json",
            "--html",
            str(report),
        ],
        cwd=REPO,
        check=True,
        capture_output=True,
    )
    page = browser.new_page(viewport={"width": 1200, "height": 900}, device_scale_factor=1)
    page.goto(report.as_uri())
    page.wait_for_selector("#explorer[data-ready=true]:not([data-busy])", timeout=15_000)
    height = page.evaluate("document.getElementById('run').getBoundingClientRect().top")
    out = REPO / "docs" / "report.png" if os.environ.get("UPDATE_GOLDEN") else tmp_path / "report.png"
    # The top of the report: verdict, gates, scores and the Δ chart.
    page.screenshot(
        path=str(out),
        full_page=True,
        clip={"x": 0, "y": 0, "width": 1200, "height": min(1500, int(height) - 8)},
    )
    page.close()
    assert 20_000 < out.stat().st_size < 400_000


@pytest.mark.parametrize("width", [390, 1280])
def test_gate_status_stays_on_one_line(open_report: Any, case: Any, width: int) -> None:
    # "– skipped" once broke after the dash in the Result column (issue 25, item 17).
    page = open_report(_html(case), viewport={"width": width, "height": 844}).open()
    cells = page.evaluate(
        """() => Array.from(document.querySelectorAll('#gates + .table-scroll tbody tr')).map(tr => {
            const td = tr.children[3];
            const range = document.createRange();
            range.selectNodeContents(td);
            return {text: td.textContent, lines: range.getClientRects().length,
                    height: range.getBoundingClientRect().height,
                    line: parseFloat(getComputedStyle(td).lineHeight)};
          })"""
    )
    skipped = [c for c in cells if c["text"].endswith("skipped")]
    assert skipped, cells
    for c in cells:
        assert c["height"] < 1.5 * c["line"], c


def test_item_link_scrolls_to_the_item(open_report: Any, case: Any) -> None:
    # report.html#item=N opened the item but left the page at the top (issue 25, item 17).
    w = open_report(_html(case), viewport={"width": 1280, "height": 700})
    page = w.open("#item=9")
    expect(page.locator("#item-detail h3")).to_have_text("Item 9")

    def detail_in_view() -> bool:
        return bool(
            page.evaluate(
                """() => { const r = document.getElementById('item-detail').getBoundingClientRect();
                           return window.scrollY > 0 && r.top >= 0 && r.top < window.innerHeight; }"""
            )
        )

    assert detail_in_view()
    # Following another item link from the top of the page lands on that item too.
    page.evaluate("window.scrollTo(0, 0)")
    page.evaluate("location.hash = '#item=12'")
    expect(page.locator("#item-detail h3")).to_have_text("Item 12")
    assert detail_in_view()
    assert w.errors == []


def test_an_items_repeats_show_in_its_detail(open_report: Any, tmp_path: Path) -> None:
    """``repeats: N``: the item detail lists every repeat (hostile output kept as text) and each
    scorer's passed/tried, counted by the gate's rule."""
    from axl_action.cli.main import main
    from axl_action.schema import load_result_file

    (tmp_path / "rep_eval.py").write_text(
        "import itertools\n"
        "from axl_action import dataset, define_eval, scorer\n"
        "_n = itertools.count()\n"
        "def execute_workflow(value, runtime):\n"
        "    k = next(_n)\n"
        "    if k == 1:\n"
        "        raise RuntimeError('upstream <b>down</b>')\n"
        "    return {'output': '<img src=x onerror=alert(1)>' if k == 2 else value}\n"
        "eval = define_eval('rep', dataset('rep', items=[{'input': 'a'}]),\n"
        "    [scorer('same', lambda output, value: float(output == value))], concurrency=1, repeats=4)\n"
    )
    out = tmp_path / "rep.json"
    assert main(["run", str(tmp_path / "rep_eval.py"), "--output", str(out), "--quiet"]) == 0
    result = load_result_file(out).results[0]
    assert result.items[0].repeats is not None and len(result.items[0].repeats) == 4
    ctx = build_report_context(result)
    w = open_report(render_report_html(ctx, result))
    page = w.open()
    page.click("tbody tr.row")
    page.wait_for_selector("#item-detail:not([hidden])")
    detail = page.inner_text("#item-detail")
    assert "Repeats (4)" in detail
    assert "Passed (score ≥ 0.5): same 2/4" in detail  # right, failed, wrong, right
    rows = page.evaluate(
        "Array.from(document.querySelectorAll('table.repeats tr')).slice(1).map(r => r.innerText.split('\\t'))"
    )
    assert [r[1] for r in rows] == ["completed", "failed", "completed", "completed"]
    assert "upstream <b>down</b>" in rows[1][3] and "<img" in rows[2][3]
    assert page.evaluate("document.querySelectorAll('#item-detail img').length") == 0
    assert w.errors == []


def test_without_decompression_stream_the_static_report_works(open_report: Any, case: Any) -> None:
    w = open_report(_html(case))
    w.page.add_init_script("delete window.DecompressionStream;")
    w.page.goto(w.file_url)
    w.page.wait_for_selector("#explorer[data-ready=unsupported]", state="attached")
    note = w.page.locator("#explorer-unsupported")
    expect(note).to_be_visible()
    assert "DecompressionStream" in note.inner_text()
    # The headline, gates, scores and charts are static and still there; no script errors.
    expect(w.page.locator("#verdict")).to_be_visible()
    assert w.page.locator("#gates + .table-scroll tbody tr").count() == len(case.ctx.gates)
    assert w.page.locator("svg").count() > 0
    assert w.page.locator("tbody tr.row").count() == 0
    assert w.errors == [] and w.requests == [w.file_url]


def test_hostile_text_through_the_packed_data_and_the_text_limit(open_report: Any) -> None:
    base, cand = synthetic_pair(
        2100,
        scorers=("exact", "judge"),
        texts={"input": XSS, "reasoning": XSS},
        failed_every=0,
        output_chars=60,
    )
    # In the third detail chunk (items 2000+): a hostile output, and one over the text limit.
    cand.items[2050].output = XSS + " tail"
    cand.items[2051].output = XSS * 40
    cmp = compare_results(base, cand, CompareOptions(seed=3))
    ctx = build_report_context(cand, base, cmp)
    html = render_report_html(ctx, cand, base, cmp, text_limit=1000)
    assert XSS[:20] not in html.split('id="axl-cols"', 1)[1]  # only packed from there on
    w = open_report(html)
    page = w.open("#item=2050")
    page.wait_for_selector('#item-detail[data-item="2050"]')
    text = "document.getElementById('item-detail').textContent"
    assert XSS + " tail" in page.evaluate(text) and XSS in page.evaluate(text).split("Input", 1)[1]
    page.evaluate("location.hash = '#item=2051'")
    page.wait_for_selector('#item-detail[data-item="2051"]')
    more = len(XSS) * 40 - 1000
    assert f"… {more:,} more characters" in page.inner_text("#item-detail")
    # Full-text search runs through every packed chunk and finds the hostile text as text.
    page.fill("input.search", "window.__pwned=1")
    page.wait_for_selector("#explorer[data-search=done]")
    assert _visible_count(page) == 2100
    assert page.evaluate("typeof window.__pwned") == "undefined"
    assert page.locator("img").count() == 0 and page.locator("#explorer script").count() == 0
    assert w.dialogs == [] and w.errors == [] and w.requests == [w.file_url]


def test_an_items_model_calls_show_in_its_detail(
    open_report: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 26 item 6: an agent loop's two calls through the real ``openai`` client, run by
    ``axl-eval run``, are listed in the item detail in order, the first naming its (hostile)
    tool as text."""
    from axl_action.cli.main import main
    from axl_action.schema import load_result_file
    from tests.fakes.llm_servers import FakeLLMServer, RecordedRequest, Reply

    hostile = "<img src=x onerror=alert(1)>"

    def answer(request: RecordedRequest) -> Reply:
        messages = (request.body or {}).get("messages") or []
        if any(m.get("role") == "tool" for m in messages):
            return server.ok("sunny")
        tool_call = {"id": "c1", "type": "function", "function": {"name": hostile, "arguments": "{}"}}
        message = {"role": "assistant", "content": None, "tool_calls": [tool_call]}
        return server.ok(extra={"choices": [{"index": 0, "finish_reason": "tool_calls", "message": message}]})

    (tmp_path / "agent_eval.py").write_text(
        "import os, openai\n"
        "from axl_action import dataset, define_eval, scorer\n"
        "client = openai.OpenAI(base_url=os.environ['AGENT_URL'], api_key='sk-test-0123456789')\n"
        "def execute_workflow(value, runtime):\n"
        "    messages = [{'role': 'user', 'content': value}]\n"
        "    first = client.chat.completions.create(model='fake-model', messages=messages)\n"
        "    call = first.choices[0].message.tool_calls[0]\n"
        "    messages += [first.choices[0].message.model_dump(exclude_none=True),\n"
        "                 {'role': 'tool', 'tool_call_id': call.id, 'content': '21C'}]\n"
        "    final = client.chat.completions.create(model='fake-model', messages=messages)\n"
        "    return {'output': final.choices[0].message.content}\n"
        "eval = define_eval('agent', dataset('agent', items=[{'input': 'weather?'}]),\n"
        "    [scorer('sunny', lambda output, value: float(output == 'sunny'))])\n"
    )
    with FakeLLMServer("openai") as server:
        server.responder = answer
        monkeypatch.setenv("AGENT_URL", server.base_url)
        out = tmp_path / "agent.json"
        prices = tmp_path / "prices.json"
        prices.write_text('{"version": 1, "models": {"openai:fake-model": {"input": 1.0, "output": 2.0}}}')
        argv = ["run", str(tmp_path / "agent_eval.py"), "--output", str(out), "--pricing", str(prices)]
        assert main([*argv, "--quiet"]) == 0
    result = load_result_file(out).results[0]
    assert result.items[0].calls is not None and len(result.items[0].calls) == 2
    w = open_report(render_report_html(build_report_context(result), result))
    page = w.open()
    page.click("tbody tr.row")
    page.wait_for_selector("#item-detail:not([hidden])")
    assert "Model calls (2)" in page.inner_text("#item-detail")
    rows = page.evaluate(
        "Array.from(document.querySelectorAll('table.calls tr')).slice(1).map(r => r.innerText.split('\\t'))"
    )
    assert [r[0] for r in rows] == ["1", "2"]
    assert all(r[1] == "openai:fake-model" and r[2] == "generation" and r[7] == "settled" for r in rows)
    assert rows[0][6] == hostile and rows[1][6] == "—"
    assert all(r[4].startswith("$0.0000") for r in rows)  # priced: a few tokens at $1-2 per 1M
    assert page.evaluate("document.querySelectorAll('#item-detail img').length") == 0
    assert w.errors == []
