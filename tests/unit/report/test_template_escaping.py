"""Every value a Markdown template prints goes through an escaping filter or is known safe.

A new ``{{ field }}`` without a filter fails here, before hostile text can reach a comment
(the promptfoo #4550 class of bug).
"""

from __future__ import annotations

import re
from pathlib import Path

TEMPLATES = Path(__file__).resolve().parents[3] / "templates"
SAFE_FILTERS = r"\| *(md|cell|code|codeblock|html_inline|num|signed|usd|signed_usd|pct|signed_pct|ms|count|plural|icon)\b"
# Values that cannot carry untrusted text: literals, enums, integers, validated URLs, macros.
KNOWN_SAFE = {
    "ctx.verdict",
    "g.status",
    "s.n",
    "it.index",
    "ctx.candidate.run_count",
    "ctx.marker",
    "p.run_url",
    "(ctx.scorers | length) - max_rows",
    "parts | join(' · ')",
    "' — ' if not ctx.failing_gates else '; '",
    "ctx.failing_gates | map('md') | join(', ')",
    "ctx.warning_gates | map('md') | join(', ')",
    "c.unpriced_models[:5] | map('code', 80) | join(', ')",
    "[lim.top_items, ctx.top_regressions | length] | min",
    "[25, shown | length] | min",
}


def test_markdown_templates_escape_every_value() -> None:
    unsafe: list[str] = []
    for path in sorted(TEMPLATES.glob("*.md.j2")):
        for expr in re.findall(r"{{-?\s*(.*?)\s*-?}}", path.read_text(encoding="utf-8")):
            enum_lookup = expr.startswith("{") and expr.endswith("[s.verdict]")
            macro = expr.startswith(("m.", "hist."))
            if re.search(SAFE_FILTERS, expr) or macro or expr in KNOWN_SAFE or enum_lookup:
                continue
            unsafe.append(f"{path.name}: {{{{ {expr} }}}}")
    assert unsafe == []


def test_html_template_marks_only_our_own_text_safe() -> None:
    text = (TEMPLATES / "report.html.j2").read_text(encoding="utf-8")
    safe = sorted(set(re.findall(r"{{\s*([^}|]+?)\s*\|\s*safe\s*}}", text)))
    assert safe == [
        "charts.cost",
        "charts.forest",
        "columns_text",
        "css",
        "details_text",
        "js",
        "rows_json",
        "svg",
    ]
