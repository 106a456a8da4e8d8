"""Report scale benchmark: HTML size, render time, the CLI process, the browser, the upload.

    python benchmarks/report_scale.py [--sizes 10000,100000] [--output-chars 2000]
        [--reference-tree /tmp/old-report] [--rounds 3] [--real DIR] [--upload]

For each size: a synthetic baseline/candidate pair (4 scorers, outputs of ``--output-chars``
characters on both sides, 30% of candidate outputs edited, 15% of items regressed) written
as results files, then:

* in-process: loading both files, then (timed as "render") report context, PR comment, job
  summary and HTML, with the HTML's size;
* the whole ``python -m axl_action report c.json --baseline b.json --html r.html`` process
  (median of ``--rounds``), what a user pays. With ``--reference-tree`` (a checkout of an
  older build, e.g. ``git worktree add /tmp/old-report 0e9021e``) the same process of that
  tree runs interleaved with this one's, round by round, as the reference;
* with Chromium at /usr/bin/chromium: time to the headline, to interactive (the table
  filled), a filter-chip click (median/max of 6), a title search, and opening an item's
  detail (its chunk unpacked on demand);
* with ``--upload``: the report uploaded through the artifact service (the test suite's fake,
  in-process over loopback) as a zip at deflate level 6 (upload-artifact's default), level 1
  level 0 (stored, ``compression-level: 0``) and zlib's Huffman-only strategy (what the
  action uploads the report with): bytes sent and seconds, zipping included (best of 3).

``--real DIR`` adds the pair written by the TypeScript CLI (``big-baseline.json`` and
``big-candidate.json`` in DIR, e.g. ../shared/fixtures/axl-eval-0.16.1-big). Each row
prints the issue's targets (issue 24) beside the figures.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests" / "unit" / "report"))

from report_synth import synthetic_pair_data  # noqa: E402

from axl_action.compare.engine import CompareOptions, compare_results  # noqa: E402
from axl_action.compare.gates import GateOptions, evaluate_gates  # noqa: E402
from axl_action.report import (  # noqa: E402
    build_report_context,
    render_comment,
    render_report_html,
    render_summary,
)
from axl_action.report.escape import to_text  # noqa: E402
from axl_action.schema import load_result_file  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
#: Issue 24's targets: (items, HTML MB, render s, interactive s, filter ms).
TARGETS = {10_000: (3.0, 1.5, None, 150.0), 100_000: (20.0, 10.0, 2.0, 150.0)}


def _target(size: int, k: int, unit: str, fmt: str = "{:g}") -> str:
    t = TARGETS.get(size)
    return f" (≤ {fmt.format(t[k])} {unit})" if t is not None and t[k] is not None else ""


def _browser_figures(path: Path, last_id: str) -> dict[str, float]:
    from playwright.sync_api import expect, sync_playwright

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
        page.wait_for_selector("#verdict", state="attached", timeout=120_000)
        headline = time.perf_counter() - start
        page.wait_for_selector("#explorer[data-ready=true]", timeout=120_000)
        interactive = time.perf_counter() - start
        filters = []
        for chip in ("regressed", "changed", "failed", "regressed", "changed", "failed"):
            page.click(f'button.chip[data-chip="{chip}"]')
            filters.append(float(page.get_attribute("#explorer", "data-update-ms") or "nan"))
        # A title search (the columns): the start of the last item's input, one item.
        page.fill("input.search", "q1")
        page.wait_for_selector("#explorer[data-search]", timeout=60_000)
        page.fill("input.search", last_id)
        expect(page.locator(".status")).to_have_text(re.compile(r"^1 of"), timeout=60_000)
        search = float(page.get_attribute("#explorer", "data-update-ms") or "nan")
        page.fill("input.search", "")
        # Opening an item whose chunk is not unpacked yet (deep link), then the first row.
        t = time.perf_counter()
        page.evaluate("location.hash = '#item=7777'")
        page.wait_for_selector('#item-detail[data-item="7777"]', timeout=60_000)
        opened = time.perf_counter() - t
        browser.close()
    return {
        "headline_s": headline,
        "interactive_s": interactive,
        "filter_ms_median": statistics.median(filters),
        "filter_ms_max": max(filters),
        "search_ms": search,
        "detail_ms": opened * 1000,
    }


def _cli(tree: Path, b: Path, c: Path, out: Path) -> float:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    cmd = [sys.executable, "-m", "axl_action", "report", str(c), "--baseline", str(b), "--html", str(out)]
    t0 = time.perf_counter()
    # cwd: `-m` puts the working directory before PYTHONPATH.
    subprocess.run(cmd, env=env, cwd=tree, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t0


def _upload_figures(data: bytes) -> dict[str, tuple[int, float]]:
    from axl_action.github.artifact_upload import ArtifactUploader, zip_files
    from tests.fakes.github_server import FakeGitHub

    out: dict[str, tuple[int, float]] = {}
    with FakeGitHub() as gh:
        repo = gh.add_repo()
        modes = {
            "zip level 6 (upload-artifact's default)": (6, zlib.Z_DEFAULT_STRATEGY),
            "zip level 1": (1, zlib.Z_DEFAULT_STRATEGY),
            "zip level 0 (stored: compression-level 0)": (0, zlib.Z_DEFAULT_STRATEGY),
            "zip Huffman-only (what the action uploads)": (6, zlib.Z_HUFFMAN_ONLY),
        }
        for mode, (level, strategy) in modes.items():
            best = float("inf")
            size = 0
            for _ in range(3):
                run = gh.add_run(repo, head_sha=gh.add_commit(), status="in_progress")
                uploader = ArtifactUploader(gh.results_url, gh.runtime_token(run))
                t0 = time.perf_counter()
                zipped = zip_files({"report.html": data}, level=level, strategy=strategy)
                up = uploader.upload_zip("report", zipped)
                best = min(best, time.perf_counter() - t0)
                size = up.size
            out[mode] = (size, best)
    return out


def _measure(
    label: str, size: int, b: Path, c: Path, opts: argparse.Namespace, browser: bool
) -> dict[str, Any]:
    t0 = time.perf_counter()
    baseline = load_result_file(b).results[0]
    candidate = load_result_file(c).results[0]
    load = time.perf_counter() - t0
    comparison = compare_results(baseline, candidate, CompareOptions(seed=1))
    gates = evaluate_gates(comparison, [baseline], [candidate], GateOptions(fail_on_regression=True))
    c0 = time.process_time()
    t0 = time.perf_counter()
    ctx = build_report_context(candidate, baseline, comparison, gates)
    render_comment(ctx)
    render_summary(ctx)
    t1 = time.perf_counter()
    html = render_report_html(ctx, candidate, baseline, comparison)
    t2 = time.perf_counter()
    f: dict[str, Any] = {
        "label": label,
        "size": size,
        "load_s": load,
        "html_s": t2 - t1,
        "render_s": t2 - t0,
        "cpu_s": time.process_time() - c0,
    }
    data = html.encode("utf-8")
    f["mb"] = len(data) / 1e6
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "r.html"
        cli: list[float] = []
        ref: list[float] = []
        for _ in range(opts.rounds):
            cli.append(_cli(REPO, b, c, out))
            if opts.reference_tree:
                ref.append(_cli(Path(opts.reference_tree), b, c, out))
        f["cli_s"] = statistics.median(cli)
        f["cli_all"] = cli
        f["ref_s"] = statistics.median(ref) if ref else None
        f["ref_all"] = ref
        if opts.reference_tree:
            f["ref_mb"] = out.stat().st_size / 1e6
        path = Path(tmp) / "report.html"
        path.write_bytes(data)
        if browser:
            f.update(_browser_figures(path, last_id=to_text(candidate.items[-1].input)[:18]))
    if opts.upload:
        f["upload"] = _upload_figures(data)
    return f


def _print(f: dict[str, Any], browser: bool) -> None:
    size = f["size"]
    print(f"\n### {f['label']}")
    print(f"- HTML size: **{f['mb']:.2f} MB**{_target(size, 0, 'MB')}", end="")
    print(f"; reference build {f['ref_mb']:.2f} MB" if f.get("ref_mb") else "")
    print(
        f"- in-process render (context, comment, summary, HTML): **{f['render_s']:.2f} s** wall, "
        f"{f['cpu_s']:.2f} s CPU (HTML {f['html_s']:.2f} s){_target(size, 1, 's')}; "
        f"loading the two results files {f['load_s']:.2f} s"
    )
    cli = ", ".join(f"{x:.2f}" for x in f["cli_all"])
    line = f"- whole `axl-eval report` process: **{f['cli_s']:.2f} s** median ({cli})"
    if f["ref_s"] is not None:
        ref = ", ".join(f"{x:.2f}" for x in f["ref_all"])
        line += f"; reference build, interleaved: {f['ref_s']:.2f} s ({ref})"
    print(line)
    if browser:
        print(
            f"- Chromium: headline **{f['headline_s']:.2f} s**, interactive **{f['interactive_s']:.2f} s**"
            f"{_target(size, 2, 's')}, filter click {f['filter_ms_median']:.0f} / {f['filter_ms_max']:.0f} ms "
            f"(median / max){_target(size, 3, 'ms')}, title search {f['search_ms']:.0f} ms, "
            f"item detail open (cold chunk) {f['detail_ms']:.0f} ms"
        )
    for mode, (sent, secs) in f.get("upload", {}).items():
        print(f"- upload, {mode}: {sent / 1e6:.2f} MB, {secs:.2f} s")


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--output-chars", type=int, default=2000)
    parser.add_argument("--no-browser", action="store_true")
    parser.add_argument("--reference-tree", default="", help="an older checkout, run interleaved")
    parser.add_argument("--rounds", type=int, default=3, help="CLI processes per build and size")
    parser.add_argument("--real", default="", help="folder of the TypeScript CLI's big pair")
    parser.add_argument("--upload", action="store_true", help="measure the artifact upload")
    opts = parser.parse_args()
    browser = not opts.no_browser and Path(CHROMIUM).exists()
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"{os.cpu_count()} CPUs, load average {load:.1f} at start")
    cases: list[tuple[str, int, Callable[[Path], tuple[Path, Path]]]] = []
    for size in (int(s) for s in opts.sizes.split(",") if s):

        def write(tmp: Path, size: int = size) -> tuple[Path, Path]:
            b_data, c_data = synthetic_pair_data(size, output_chars=opts.output_chars, seed=size)
            (tmp / "b.json").write_bytes(orjson.dumps(b_data))
            (tmp / "c.json").write_bytes(orjson.dumps(c_data))
            return tmp / "b.json", tmp / "c.json"

        cases.append((f"{size:,} items × {opts.output_chars}-character outputs", size, write))
    if opts.real:
        real = Path(opts.real)
        cases.append(
            (
                f"the TypeScript CLI's pair ({real.name})",
                20_000,
                lambda _tmp: (real / "big-baseline.json", real / "big-candidate.json"),
            )
        )
    for label, size, write in cases:
        with tempfile.TemporaryDirectory() as tmp:
            b, c = write(Path(tmp))
            _print(_measure(label, size, b, c, opts, browser), browser)
            sys.stdout.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
