"""PR comment and job summary: golden files, size limits, and untrusted text kept inert.

Regenerate the golden files after an intended change with:

    UPDATE_GOLDEN=1 pytest tests/unit/report
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from markdown_it import MarkdownIt
from report_cases import RUN_INFO, XSS, Case, make_case

from axl_action.report import (
    COMMENT_LIMIT,
    RunInfo,
    build_report_context,
    comment_marker,
    render_comment,
    render_summary,
)
from axl_action.report.markdown import comment_markdown_to_html
from axl_action.report.render import tidy_markdown

GOLDEN = Path(__file__).resolve().parents[2] / "golden"


def check_golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if os.environ.get("UPDATE_GOLDEN"):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    assert path.exists(), f"{path} missing: run UPDATE_GOLDEN=1 pytest tests/unit/report"
    assert text == path.read_text(encoding="utf-8"), f"{name} changed: review, then UPDATE_GOLDEN=1"


def test_comment_golden(small_case: Case) -> None:
    check_golden("comment.md", render_comment(small_case.ctx))


def test_summary_golden(small_case: Case) -> None:
    check_golden("summary.md", render_summary(small_case.ctx))


def test_comment_no_baseline_golden(small_case: Case) -> None:
    ctx = build_report_context(small_case.candidate, run_info=RunInfo(suite="qa/main"))
    text = render_comment(ctx)
    check_golden("comment-no-baseline.md", text)
    assert "No baseline yet" in text
    assert "Item error rate" in text and "skipped: no baseline yet" in text


def test_comment_structure(small_case: Case) -> None:
    text = render_comment(small_case.ctx)
    first = text.splitlines()[0]
    assert first.startswith("### ❌ axl-eval fail")
    assert "Regressions" in first
    assert text.rstrip().endswith(comment_marker("qa/main"))
    assert text.count("<!-- axl-eval-action") == 1
    for gate in ("Budget", "Item error rate", "Scorer error rate", "Regressions", "Cost"):
        assert f"| {gate} |" in text
    assert "| Scorer | Baseline | Candidate | Δ | 95% CI |" in text
    assert "not certified" in text
    assert "[Full HTML report](https://github.com/acme/app/actions/runs/123/artifacts/456)" in text
    assert "`0123456789ab` on `main`" in text
    assert "<details><summary>Item " in text
    assert "rate-limited" in text.lower() or "Rate-limited" in text


def test_comment_marker_is_well_formed() -> None:
    assert comment_marker("qa/main") == '<!-- axl-eval-action:comment suite="qa/main" -->'
    evil = comment_marker('x" --><script>alert(1)</script><!-- "')
    assert evil.count("-->") == 1 and evil.endswith("-->")
    assert '"' not in evil[len('<!-- axl-eval-action:comment suite="') : -len('" -->')]


def test_comment_5000_regressions_fits_and_keeps_verdict() -> None:
    case = make_case(5000, regress_fraction=0.95, output_chars=2000, failed_every=0)
    text = render_comment(case.ctx)
    assert len(text) <= COMMENT_LIMIT
    assert text.splitlines()[0].startswith("### ❌ axl-eval fail")
    assert "| Regressions |" in text and "| Item error rate |" in text
    assert text.rstrip().endswith(comment_marker("qa/main"))
    assert case.ctx.regressed_items_total > 4000
    n = case.ctx.regressed_items_total
    summary = render_summary(case.ctx)
    assert len(summary.encode("utf-8")) <= 1_000_000
    assert f"#### Regressed items ({n:,} of {n:,})" in summary
    small = render_summary(case.ctx, limit_bytes=200_000)
    assert len(small.encode("utf-8")) <= 200_000
    assert "Trimmed to fit the job summary" in small
    assert small.splitlines()[0] == text.splitlines()[0]


def test_comment_trims_in_steps_and_says_so(small_case: Case) -> None:
    full = render_comment(small_case.ctx)
    limit = len(full) - 200
    text = render_comment(small_case.ctx, limit=limit)
    assert len(text) <= limit
    assert "Trimmed to fit a PR comment" in text
    assert text.rstrip().endswith(comment_marker("qa/main"))


@pytest.mark.parametrize("limit", [2500, 3000, 3500, 4000, 5000, 6000])
def test_hard_cut_never_leaves_a_code_block_open(small_case: Case, limit: int) -> None:
    text = render_comment(small_case.ctx, limit=limit)
    assert len(text) <= limit
    fences = [line for line in text.splitlines() if line.startswith("```")]
    assert len(fences) % 2 == 0
    html = GFM.render(text)
    assert "axl-eval-action:comment" not in html.replace("<!-- axl-eval-action:comment", "")


def test_summary_hard_cut_has_no_marker(small_case: Case) -> None:
    text = render_summary(small_case.ctx, limit_bytes=1200)
    assert len(text.encode("utf-8")) <= 1200
    assert "<!-- axl-eval-action" not in text
    assert "cut to fit the size limit" in text


def test_comment_hard_cut_keeps_marker(small_case: Case) -> None:
    text = render_comment(small_case.ctx, limit=1500)
    assert len(text) <= 1500
    assert text.splitlines()[0].startswith("### ❌")
    assert text.rstrip().endswith(comment_marker("qa/main"))


# GitHub's renderer: CommonMark + GFM tables, raw HTML allowed then sanitised. We render with
# HTML on (the worst case) and check nothing from the payload became markup.
GFM = MarkdownIt("gfm-like", {"html": True, "linkify": False})


@pytest.mark.parametrize("render", [render_comment, render_summary])
def test_untrusted_text_stays_inert_in_markdown(xss_case: Case, render: object) -> None:
    text = render(xss_case.ctx)  # type: ignore[operator]
    html = GFM.render(text)
    lowered = html.lower()
    assert "<script" not in lowered
    assert "<img" not in lowered and "<svg" not in lowered
    assert "onerror=" not in lowered.replace("onerror=&quot;", "") or "<img" not in lowered
    assert 'href="javascript' not in lowered
    hrefs = re.findall(r'href="([^"]+)"', html)
    assert set(hrefs) <= {
        RUN_INFO.run_url,
        RUN_INFO.report_url,
        RUN_INFO.baseline_run_url,
    }, hrefs
    # Exactly one marker, ours, at the end of the comment; the forged one is broken.
    assert text.count("<!-- axl-eval-action") == (1 if render is render_comment else 0)
    if render is render_comment:
        assert text.rstrip().endswith("-->")
    # Outside code (where GitHub links nothing) mentions, references and URLs are broken.
    prose = re.sub(r"(?ms)^(`{3,})text\n.*?^\1$", "", text)
    prose = re.sub(r"(`+).*?\1", "", prose)
    assert XSS[:20] in text or "&lt;script&gt;" in text
    assert "@octocat" not in prose
    assert not re.search(r"(?<![\w\u200d])#123", prose)
    assert "GH-45" not in prose
    assert "https://evil.example" not in prose


def test_table_cells_cannot_break_tables(xss_case: Case) -> None:
    text = render_comment(xss_case.ctx)
    tables: list[list[str]] = [[]]
    for line in text.splitlines():
        if line.startswith("|"):
            tables[-1].append(line)
        elif tables[-1]:
            tables.append([])
    tables = [t for t in tables if t]
    assert len(tables) >= 2
    for table in tables:
        widths = {len(re.split(r"(?<!\\)\|", line)) for line in table}
        assert len(widths) == 1, table


def test_comment_renders_to_html_preview(small_case: Case) -> None:
    html = comment_markdown_to_html(render_comment(small_case.ctx))
    assert "<table>" in html and "<details>" in html


def test_tidy_keeps_blank_lines_inside_code() -> None:
    text = "a\n\n\n\nb\n```text\nx\n\n\n\ny\n```\n\n\nc"
    assert tidy_markdown(text) == "a\n\nb\n```text\nx\n\n\n\ny\n```\n\nc\n"


def test_xss_constant_is_exercised(xss_case: Case) -> None:
    assert XSS[:20] in xss_case.candidate.items[0].input["question"]
