"""Escaping of untrusted text for Markdown, HTML blocks and inline JSON."""

from __future__ import annotations

import json
import re

from hypothesis import given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from axl_action.report.escape import (
    html_inline,
    json_for_script,
    md_cell,
    md_code_block,
    md_code_span,
    md_text,
)
from axl_action.report.markdown import untrusted_markdown_to_html
from axl_action.suite import MARKER_PREFIX

GFM = MarkdownIt("gfm-like", {"html": True, "linkify": False})
HOSTILE = st.lists(
    st.sampled_from(
        [*list("<>&|`*_[]()!#@~\\-+=.:/\"' \n\tabcxyz019"), "<!--", "-->", "javascript:", "@u", "#1"]
    ),
    max_size=40,
).map("".join)


def test_md_text_escapes_markup_and_references() -> None:
    out = md_text("**bold** [x](javascript:alert(1)) <b>hi</b> @alice #42 GH-7 www.x.io http://x.io")
    assert "**" not in out.replace("\\*", "")
    assert "<b>" not in out and "&lt;b&gt;" in out
    assert "@alice" not in out and "@\u200dalice" in out
    assert "#42" not in out and "GH-7" not in out
    assert "http://" not in out and "www.x" not in out
    assert "\n" not in md_text("a\n\n# heading\n- item")


def test_md_text_line_start_markers() -> None:
    assert md_text("1. one") == "1\\. one"
    assert md_text("- dash") == "\\- dash"
    assert md_text("6.7%") == "6.7%"


def test_limits_truncate_with_ellipsis() -> None:
    assert md_text("abcdefghij", 5) == "abcd…"
    assert md_cell("", 5) == " "


def test_code_block_fence_outlasts_content() -> None:
    block = md_code_block("a\n````\nb " + MARKER_PREFIX)
    fence = block.splitlines()[0].removesuffix("text")
    assert len(fence) == 5
    assert block.endswith("\n" + fence)
    assert MARKER_PREFIX not in block


def test_code_span_handles_backticks_and_pipes() -> None:
    assert md_code_span("a`b|c") == "``a`b\\|c``"
    assert md_code_span("`x`") == "`` `x` ``"


def test_html_inline_uses_entities_only() -> None:
    out = html_inline('<img src=x onerror="a()"> *x* @bob')
    assert "<" not in out and "\\" not in out and "@\u200dbob" in out


@settings(max_examples=300, deadline=None)
@given(HOSTILE)
def test_cell_never_breaks_a_table_or_becomes_markup(text: str) -> None:
    cell = md_cell(text)
    assert "\n" not in cell
    assert not re.search(r"(?<!\\)\|", cell)
    assert MARKER_PREFIX not in cell and "<!--" not in cell
    html = GFM.render(f"| h |\n|---|\n| {cell} |\n")
    assert html.count("<td>") == 1
    for tag in ("<a ", "<img", "<script", "<strong", "<em", "<code", "<del"):
        assert tag not in html


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=60))
def test_json_for_script_round_trips(text: str) -> None:
    encoded = json_for_script({"t": text})
    assert "<" not in encoded and "\u2028" not in encoded and "\u2029" not in encoded
    assert json.loads(encoded) == {"t": text}


def test_json_for_script_maps_nan_to_null() -> None:
    assert json.loads(json_for_script({"x": float("nan")})) == {"x": None}


def test_untrusted_markdown_has_no_raw_html_or_bad_links() -> None:
    html = untrusted_markdown_to_html(
        "<script>x</script> [a](javascript:alert(1)) [b](data:text/html,x) ![i](https://e/x.png) [ok](https://ok.example)"
    )
    assert "<script" not in html and "<img" not in html
    assert 'href="javascript' not in html and 'href="data' not in html
    assert 'href="https://ok.example" rel="noopener noreferrer nofollow"' in html
