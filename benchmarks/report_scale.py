"""Report scale benchmark: render time, HTML size, and browser time-to-interactive.

    python benchmarks/report_scale.py [--sizes 1000,10000] [--output-chars 2000]

For each size: a synthetic baseline/candidate pair (4 scorers, outputs of ``--output-chars``
characters on both sides, 30% of candidate outputs edited, 15% of items regressed), compared
once (not timed as rendering), then timed: report context, PR comment, job summary, HTML.
With Chromium at /usr/bin/chromium it also opens the file offline and measures time until
the item list is interactive, until the item text is loaded, and a filter-chip click.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests" / "unit" / "report"))

from report_synth import synthetic_pair  # noqa: E402

from axl_action.compare.engine import CompareOptions, compare_results  # noqa: E402
from axl_action.compare.gates import GateOptions, evaluate_gates  # noqa: E402
from axl_action.report import (  # noqa: E402
    build_report_context,
    render_comment,
    render_report_html,
    render_summary,
)

CHROMIUM = "/usr/bin/chromium"


def _browser_figures(path: Path) -> dict[str, float]:
    from playwright.sync_api import sync_playwright

    args = [
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--no-first-run",
    ]
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=args)
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.route("**/*", lambda r: r.continue_() if r.request.url.startswith("file:") else r.abort())
        start = time.perf_counter()
        page.goto(path.as_uri(), wait_until="commit")
        page.wait_for_selector("#explorer[data-ready=true]", timeout=60_000)
        interactive = time.perf_counter() - start
        # Item text is unpacked on demand now: time opening the first row's detail instead.
        t_open = time.perf_counter()
        page.click("tbody tr.row")
        page.wait_for_selector("#item-detail[data-item]", timeout=60_000)
        loaded = time.perf_counter() - t_open
        filters = []
        for chip in ("regressed", "changed", "failed", "regressed", "changed", "failed"):
            filters.append(
                page.evaluate(
                    "(c) => { const t = performance.now();"
                    " document.querySelector(`button.chip[data-chip=${c}]`).click();"
                    " return performance.now() - t; }",
                    chip,
                )
            )
        page.fill("input.search", "zzz")  # warm the search index
        page.wait_for_timeout(400)
        search = page.evaluate(
            "() => { const s = document.querySelector('input.search'); const t = performance.now();"
            " s.value = 'refund policy'; s.dispatchEvent(new Event('input'));"
            " return new Promise(r => setTimeout(() => r(performance.now() - t - 120), 121)); }"
        )
        browser.close()
    return {
        "interactive_s": interactive,
        "details_loaded_s": loaded,
        "filter_ms_median": statistics.median(filters),
        "filter_ms_max": max(filters),
        "search_ms": float(search),
    }


def run(size: int, output_chars: int, browser: bool) -> dict[str, float]:
    baseline, candidate = synthetic_pair(size, output_chars=output_chars, seed=size)
    comparison = compare_results(baseline, candidate, CompareOptions(seed=1))
    gates = evaluate_gates(comparison, [baseline], [candidate], GateOptions(fail_on_regression=True))
    c0 = time.process_time()
    t0 = time.perf_counter()
    ctx = build_report_context(candidate, baseline, comparison, gates)
    t1 = time.perf_counter()
    comment = render_comment(ctx)
    summary = render_summary(ctx)
    t2 = time.perf_counter()
    html = render_report_html(ctx, candidate, baseline, comparison)
    t3 = time.perf_counter()
    cpu = time.process_time() - c0
    figures = {
        "cpu_s": cpu,
        "items": size,
        "context_s": t1 - t0,
        "markdown_s": t2 - t1,
        "html_s": t3 - t2,
        "total_s": t3 - t0,
        "html_mb": len(html.encode("utf-8")) / 1_000_000,
        "comment_chars": len(comment),
        "summary_kb": len(summary.encode("utf-8")) / 1000,
    }
    if browser:
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "report.html"
            path.write_text(html, encoding="utf-8")
            figures.update(_browser_figures(path))
    return figures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000")
    parser.add_argument("--output-chars", type=int, default=2000)
    parser.add_argument("--no-browser", action="store_true")
    opts = parser.parse_args()
    browser = not opts.no_browser and Path(CHROMIUM).exists()
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"{os.cpu_count()} CPUs, load average {load:.1f} at start\n")
    print(
        "| items | context | comment+summary | HTML | total render (wall / CPU) | HTML size | comment chars |"
        + (" interactive | item detail open | filter click (median/max) | search |" if browser else "")
    )
    print("|--:|--:|--:|--:|--:|--:|--:|" + ("--:|--:|--:|--:|" if browser else ""))
    for size in (int(s) for s in opts.sizes.split(",")):
        f = run(size, opts.output_chars, browser)
        row = (
            f"| {size:,} | {f['context_s']:.2f} s | {f['markdown_s']:.2f} s | {f['html_s']:.2f} s | "
            f"{f['total_s']:.2f} s / {f['cpu_s']:.2f} s | {f['html_mb']:.1f} MB | {int(f['comment_chars']):,} |"
        )
        if browser:
            row += (
                f" {f['interactive_s']:.2f} s | {f['details_loaded_s']:.2f} s | "
                f"{f['filter_ms_median']:.0f} / {f['filter_ms_max']:.0f} ms | {f['search_ms']:.0f} ms |"
            )
        print(row, flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
