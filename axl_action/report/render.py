"""Jinja rendering of the PR comment, the job summary and the HTML report.

Templates live in the repository's top-level ``templates/`` and ship in the wheel as
``axl_action/templates``. Markdown templates run without autoescape and escape every
untrusted value explicitly with the ``md``/``cell``/``code``/``codeblock`` filters; the HTML
template autoescapes. Both run in Jinja's sandbox so a template bug cannot reach Python
internals through a crafted value.

Size limits: a GitHub comment holds at most 65,536 characters and a step summary 1 MiB.
Both renderers trim in steps (fewer items, shorter excerpts, fewer sections), say what
they cut, and keep the first line (the verdict) and the hidden marker in every variant.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

from jinja2 import FileSystemLoader, StrictUndefined, select_autoescape
from jinja2.sandbox import SandboxedEnvironment
from markupsafe import Markup

from axl_action import formatting as fmt
from axl_action.redaction import redact
from axl_action.report.escape import html_inline, md_cell, md_code_block, md_code_span, md_text, truncate
from axl_action.report.markdown import untrusted_markdown_to_html
from axl_action.report.models import ReportContext, ReportLimits

#: GitHub refuses longer comment bodies (``Body is too long (maximum is 65536 characters)``).
COMMENT_LIMIT = 65_536
#: The runner drops a step summary above 1 MiB (file bytes); keep headroom for other steps.
SUMMARY_LIMIT_BYTES = 1_000_000

STATUS_ICONS = {
    "pass": "✅",
    "fail": "❌",
    "warn": "⚠️",
    "refused": "⛔",
    "skipped": "➖",
}


def template_dirs() -> list[Path]:
    """Where templates are found: inside the installed package, else the repository root."""
    here = Path(__file__).resolve()
    candidates = [here.parents[1] / "templates", here.parents[2] / "templates"]
    found = [p for p in candidates if (p / "comment.md.j2").is_file()]
    if not found:
        raise FileNotFoundError("report templates not found in " + " or ".join(str(p) for p in candidates))
    return found


# Plain symbols for the HTML report: emoji fonts are missing on many CI and Linux desktops.
STATUS_SYMBOLS = {"pass": "✓", "fail": "✗", "warn": "!", "refused": "⊘", "skipped": "–"}


def _status_symbol(status: str) -> str:
    return STATUS_SYMBOLS.get(status, "•")


def _status_icon(status: str) -> str:
    return STATUS_ICONS.get(status, "•")


@lru_cache(maxsize=1)
def environment() -> SandboxedEnvironment:
    """The shared sandboxed Jinja environment with the report filters."""
    env = SandboxedEnvironment(
        loader=FileSystemLoader([str(p) for p in template_dirs()]),
        autoescape=select_autoescape(enabled_extensions=("html.j2", "html"), default_for_string=False),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    filters: dict[str, Callable[..., Any]] = {
        "md": md_text,
        "html_inline": html_inline,
        "sym": _status_symbol,
        "cell": md_cell,
        "code": md_code_span,
        "codeblock": md_code_block,
        "truncate_text": truncate,
        "num": fmt.num,
        "signed": fmt.signed,
        "usd": fmt.usd,
        "signed_usd": fmt.signed_usd,
        "pct": fmt.pct,
        "signed_pct": fmt.signed_pct,
        "ms": fmt.ms,
        "count": fmt.count,
        "plural": fmt.plural,
        "icon": _status_icon,
        "untrusted_markdown": lambda text: Markup(untrusted_markdown_to_html(str(text))),
    }
    env.filters.update(filters)
    return env


_FENCE = re.compile(r"^(`{3,}|~{3,})")


def _fence_after(fence: str | None, line: str) -> str | None:
    """The code fence open after ``line``, given ``fence``, the one open before it (or None)."""
    if fence is None:
        m = _FENCE.match(line)
        return m.group(1) if m else None
    return None if line.strip() == fence else fence


def tidy_markdown(text: str) -> str:
    """Collapse runs of blank lines left by template conditionals (never inside code blocks)."""
    out: list[str] = []
    fence: str | None = None
    blank = 0
    for line in text.split("\n"):
        if fence is None and not line.strip():
            blank += 1
            if blank <= 1:
                out.append("")
            continue
        fence = _fence_after(fence, line)
        blank = 0
        out.append(line)
    return "\n".join(out).strip("\n") + "\n"


def render_template(name: str, **values: Any) -> str:
    """Render one template by file name (Markdown output is tidied)."""
    text = environment().get_template(name).render(**values)
    return tidy_markdown(text) if name.endswith(".md.j2") else text


def _headline(max_scorers: int) -> ReportLimits:
    """The last steps of a trimmed report: verdict, gates, links and at most ``max_scorers``
    scorer rows; no items, timing, accounting or history."""
    return ReportLimits(
        top_items=0,
        show_items=False,
        show_timing=False,
        show_accounting=False,
        max_scorers=max_scorers,
        show_history=False,
    )


# Each step keeps less; the note says what went. The last step is verdict, gates and links.
# The history rows (sparklines) are the first thing to go: step 2 is step 1 without them.
COMMENT_STEPS: tuple[ReportLimits, ...] = (
    ReportLimits(top_items=10, excerpt_chars=280),
    ReportLimits(top_items=10, excerpt_chars=280, show_history=False),
    ReportLimits(top_items=5, excerpt_chars=160, max_scorers=40, show_history=False),
    ReportLimits(top_items=3, excerpt_chars=80, max_scorers=25, max_models=8, show_history=False),
    _headline(15).model_copy(update={"max_models": 0}),
    _headline(0).model_copy(update={"max_models": 0}),
)

SUMMARY_STEPS: tuple[ReportLimits, ...] = (
    ReportLimits(top_items=5000, excerpt_chars=600, max_scorers=500, max_models=200),
    ReportLimits(top_items=1000, excerpt_chars=240, max_scorers=200, max_models=50),
    ReportLimits(top_items=200, excerpt_chars=120, max_scorers=100, max_models=20),
    ReportLimits(top_items=25, excerpt_chars=80, max_scorers=50, max_models=10),
    _headline(20),
)


def _trim_note(ctx: ReportContext, limits: ReportLimits, where: str, full: ReportLimits) -> str | None:
    cut: list[str] = []
    n_items = len(ctx.top_regressions)
    if n_items and (not limits.show_items or limits.top_items < n_items):
        shown = min(limits.top_items, n_items) if limits.show_items else 0
        cut.append(f"showing {shown} of {fmt.plural(n_items, 'regressed item')}")
    if limits.show_items and limits.excerpt_chars < full.excerpt_chars and n_items:
        cut.append(f"excerpts cut to {limits.excerpt_chars} characters")
    if len(ctx.scorers) > limits.max_scorers:
        cut.append(f"showing {limits.max_scorers} of {len(ctx.scorers)} scorers")
    if ctx.model_timing and (not limits.show_timing or len(ctx.model_timing) > limits.max_models):
        cut.append("model timing left out" if not limits.show_timing else "some model timing rows left out")
    if ctx.accounting is not None and full.show_accounting and not limits.show_accounting:
        cut.append("accounting details left out")
    if ctx.history is not None and ctx.history.scorers and full.show_history and not limits.show_history:
        cut.append("history sparklines left out")
    if not cut:
        return None
    return f"Trimmed to fit {where}: " + "; ".join(cut) + ". The HTML report has everything."


def _render_fitting(
    template: str,
    ctx: ReportContext,
    steps: Sequence[ReportLimits],
    fits: Callable[[str], bool],
    where: str,
) -> str:
    text = ""
    for limits in steps:
        view = ctx.model_copy(
            update={"limits": limits, "trim_note": _trim_note(ctx, limits, where, steps[0])}
        )
        text = redact(render_template(template, ctx=view))  # secrets out before the size check
        if fits(text):
            return text
    return text


def _hard_cut(text: str, marker: str, limit: int, measure: Callable[[str], int]) -> str:
    # Only reached when even the minimal step is too long (thousands of gates or warnings).
    note = "\n\n… cut to fit the size limit; see the HTML report for the rest.\n\n" + marker + "\n"
    budget = limit - measure(note)
    body = text
    while measure(body) > budget:
        body = body[: max(0, len(body) - max(1, (measure(body) - budget)))]
    # Do not leave half a table row, an open code fence or an open <details> behind.
    cut_at = body.rfind("\n\n")
    body = body[:cut_at] if cut_at > 0 else body
    fence = _open_fence(body)
    if fence:
        body += "\n" + fence
    if body.count("<details") > body.count("</details>"):
        body += "\n\n</details>"
    return body + note


def _open_fence(text: str) -> str | None:
    """The fence of a code block still open at the end of ``text``, if any."""
    fence: str | None = None
    for line in text.split("\n"):
        fence = _fence_after(fence, line)
    return fence


def render_comment(ctx: ReportContext, *, limit: int = COMMENT_LIMIT) -> str:
    """The sticky PR comment, at most ``limit`` characters (code points)."""
    text = _render_fitting("comment.md.j2", ctx, COMMENT_STEPS, lambda t: len(t) <= limit, "a PR comment")
    if len(text) > limit:
        text = _hard_cut(text, ctx.marker, limit, len)
    return text


def _utf8_len(text: str) -> int:
    return len(text.encode("utf-8"))


def render_summary(ctx: ReportContext, *, limit_bytes: int = SUMMARY_LIMIT_BYTES) -> str:
    """The job summary (``$GITHUB_STEP_SUMMARY``), at most ``limit_bytes`` UTF-8 bytes."""
    text = _render_fitting(
        "summary.md.j2",
        ctx,
        SUMMARY_STEPS,
        lambda t: _utf8_len(t) <= limit_bytes,
        "the job summary",
    )
    if _utf8_len(text) > limit_bytes:
        text = _hard_cut(text, "", limit_bytes, _utf8_len)
    return text
