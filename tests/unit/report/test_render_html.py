"""The single-file HTML report, checked without a browser: self-contained, CSP, escaping."""

from __future__ import annotations

import json
import random
import re
from html.parser import HTMLParser
from typing import Any

from report_cases import XSS, Case
from report_synth import synthetic_pair
from report_unpack import PACKED_CHUNKS, PACKED_TEXT, explorer_data, unpack_bytes, unpack_payload

from axl_action.report import build_explorer, build_report_context, render_report_html
from axl_action.report.escape import json_for_script
from axl_action.report.explorer import (
    B85_DIGITS,
    CHUNK_ITEMS,
    FLAG_BUDGET,
    FLAG_CHANGED,
    FLAG_FAILED,
    FLAG_REGRESSED,
    INPUT_IS_TITLE,
    INPUT_IS_TITLE_JSON,
    b85,
    pack_bytes,
)
from axl_action.report.html import script_hash


class _Collect(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.scripts: list[tuple[dict[str, str | None], str]] = []
        self._in_script: dict[str, str | None] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        if tag == "script":
            self._in_script = dict(attrs)

    def handle_data(self, data: str) -> None:
        if self._in_script is not None:
            self.scripts.append((self._in_script, data))
            self._in_script = None

    def handle_endtag(self, tag: str) -> None:
        if tag == "script" and self._in_script is not None:
            self.scripts.append((self._in_script, ""))
            self._in_script = None


def _parse(html: str) -> _Collect:
    p = _Collect()
    p.feed(html)
    return p


def test_self_contained_and_csp(small_case: Case) -> None:
    html = render_report_html(
        small_case.ctx, small_case.candidate, small_case.baseline, small_case.comparison
    )
    doc = _parse(html)
    for tag, attrs in doc.tags:
        for name in ("src", "href", "action", "data", "poster"):
            value = attrs.get(name)
            if value is None:
                continue
            if tag == "a" and name == "href":
                continue  # links the reader may click; never fetched by the page
            assert value.startswith(("data:", "#")), (tag, name, value)
        assert tag not in ("iframe", "object", "embed", "base", "form")
    assert not re.search(r"url\(\s*['\"]?(?!#|data:)", html), "CSS must not load anything"
    assert "@import" not in html
    code = [body for attrs, body in doc.scripts if "type" not in attrs]
    assert len(code) == 1
    csp = next(
        a["content"] for t, a in doc.tags if t == "meta" and a.get("http-equiv") == "Content-Security-Policy"
    )
    assert csp is not None
    assert f"script-src {script_hash(code[0])};" in csp
    assert "default-src 'none'" in csp and "connect-src" not in csp
    assert "'unsafe-inline'" not in csp.split("script-src")[1].split(";")[0]


def test_static_sections_without_js(small_case: Case) -> None:
    html = render_report_html(
        small_case.ctx, small_case.candidate, small_case.baseline, small_case.comparison
    )
    for anchor in ('id="verdict"', 'id="gates"', 'id="scores"', 'id="regressions"', "<svg"):
        assert anchor in html
    assert "Item error rate" in html and "refused" in html
    assert html.count('<details class="item"') == min(20, small_case.ctx.regressed_items_total)


def test_json_payload_cannot_break_out(xss_case: Case) -> None:
    html = render_report_html(xss_case.ctx, xss_case.candidate, xss_case.baseline, xss_case.comparison)
    doc = _parse(html)
    data_scripts = [(a, body) for a, body in doc.scripts if a.get("type") == "application/json"]
    assert len(data_scripts) == 1
    for _, body in data_scripts:
        assert "<" not in body and "\u2028" not in body
        json.loads(body)
    # The packed elements hold base85 digits (and "." between chunks) and nothing else.
    packed = {a.get("id"): body for a, body in doc.scripts if a.get("type") == "application/octet-stream"}
    assert set(packed) == {"axl-cols", "axl-details"}
    assert PACKED_TEXT.fullmatch(packed["axl-cols"]) and PACKED_CHUNKS.fullmatch(packed["axl-details"])
    # Every payload string is still there once unpacked, byte for byte.
    meta, rows, details = explorer_data(html)
    assert details[0]["in"]["question"] == XSS
    assert details[0]["co"].startswith(XSS)
    assert XSS[:60] in meta["scorers"]
    assert XSS[:20] in rows[0][1]
    # Nothing from the payload became a tag or an attribute in the static HTML.
    tag_names = {t for t, _ in doc.tags}
    assert "img" not in tag_names and "svg" in tag_names
    assert not any("onerror" in a or "onload" in a for _, a in doc.tags)
    assert not any(str(v).startswith("javascript") for _, a in doc.tags for v in a.values())
    assert sum(1 for t, a in doc.tags if t == "script" and "type" not in a) == 1


def test_json_for_script_escapes() -> None:
    text = json_for_script({"a": "</script><!--\u2028\u2029&>"})
    assert "<" not in text and ">" not in text and "&" not in text
    assert json.loads(text) == {"a": "</script><!--\u2028\u2029&>"}


def test_explorer_rows_and_flags() -> None:
    base, cand = synthetic_pair(60, failed_every=10, budget_every=25, seed=3)
    payload = build_explorer(
        cand, base, ["exact", "judge"], regressions=[(4, "judge"), (4, "exact"), (7, "exact")]
    )
    _, rows, _ = unpack_payload(payload)
    assert len(rows) == 60
    assert rows[4][9] == [0, 1] and rows[4][4] & FLAG_REGRESSED
    assert rows[9][4] & FLAG_FAILED and rows[24][4] & FLAG_BUDGET
    changed = [r for r in rows if r[4] & FLAG_CHANGED]
    assert changed and all(isinstance(r[1], str) and len(r[1]) <= 140 for r in rows)
    assert payload.details_encoding == "deflate-raw+base85"


def test_details_are_packed_in_chunks_and_round_trip() -> None:
    base, cand = synthetic_pair(2 * CHUNK_ITEMS + 17, output_chars=400, seed=5)
    payload = build_explorer(cand, base, ["exact", "judge", "tone", "length"])
    chunks = payload.details_text.split(".")
    assert len(chunks) == 3 and payload.chunk_items == CHUNK_ITEMS
    raws = [unpack_bytes(c).decode("utf-8") for c in chunks]
    assert [len(json.loads(r)) for r in raws] == [CHUNK_ITEMS, CHUNK_ITEMS, 17]
    _, rows, details = unpack_payload(payload)
    assert len(details) == len(rows) == 2 * CHUNK_ITEMS + 17
    assert details[CHUNK_ITEMS + 3]["co"] == cand.items[CHUNK_ITEMS + 3].output
    assert f"Q{len(rows) - 1}:" in rows[-1][1]


def test_no_baseline_report(small_case: Case) -> None:
    ctx = build_report_context(small_case.candidate)
    html = render_report_html(ctx, small_case.candidate)
    assert "no baseline yet" in html.lower()
    meta, rows, _ = explorer_data(html)
    assert meta["hasBaseline"] is False and all(r[3] is None and r[7] is None for r in rows)


def test_explorer_pairs_by_key_and_marks_new_items() -> None:
    base, cand = synthetic_pair(6, failed_every=0, seed=9)
    payload = build_explorer(cand, base, ["exact"], pairs=[5, 4, 3, 2, 1, None])
    _, rows, _ = unpack_payload(payload)
    assert rows[0][7] == [base.items[5].scores["exact"]]
    assert rows[5][7] is None and rows[5][3] is None


def test_text_limit_cuts_every_stored_text_with_a_visible_mark() -> None:
    base, cand = synthetic_pair(4, failed_every=0, seed=2)
    cand.items[0].output = "y" * 1_234
    cand.items[0].input = {"id": "q0", "question": "z" * 5_000}
    detail = (cand.items[0].score_details or {})["judge"]
    assert detail.metadata is not None
    detail.metadata["reasoning"] = "r" * 300
    payload = build_explorer(cand, base, ["exact", "judge"], text_limit=200)
    _, _, details = unpack_payload(payload)
    assert details[0]["co"] == "y" * 200 + "\n… 1,034 more characters"
    # A structured input longer than the limit is stored as its text, cut.
    assert isinstance(details[0]["in"], str) and details[0]["in"].endswith(" more characters")
    assert len(details[0]["in"].split("\n… ")[0]) == 200
    assert details[0]["sc"][1]["cr"] == "r" * 200 + "\n… 100 more characters"
    assert details[1]["in"] == cand.items[1].input  # short: unchanged
    whole = unpack_payload(build_explorer(cand, base, ["exact", "judge"], text_limit=0))[2]
    assert whole[0]["co"] == "y" * 1_234 and whole[0]["in"] == cand.items[0].input


def test_b85_round_trips_every_tail_length_and_never_writes_lt_or_dot() -> None:
    assert len(B85_DIGITS) == 85 == len(set(B85_DIGITS))
    assert not set(B85_DIGITS) & set("<>&\"'`\\-.")
    rng = random.Random(4)
    for n in [*range(0, 13), 1000, 4097]:
        data = bytes(rng.randrange(256) for _ in range(n))
        text = b85(data)
        assert len(text) == n // 4 * 5 + (n % 4 + 1 if n % 4 else 0)
        assert PACKED_TEXT.fullmatch(text)
        assert unpack_bytes(pack_bytes(data)) == data
    # The extremes of a group: all zero and all 0xFF bytes.
    assert b85(b"\0\0\0\0") == B85_DIGITS[0] * 5
    assert unpack_bytes(pack_bytes(b"\xff" * 7)) == b"\xff" * 7


def test_an_input_that_is_its_title_is_stored_once() -> None:
    base, cand = synthetic_pair(6, seed=2)
    inputs: list[Any] = [
        "short question",  # the title itself
        {"id": "q1", "n": 2.5, "tags": ["a", "b"]},  # the title's JSON
        "two  spaces",  # the title collapses whitespace: stored
        "x" * 150,  # the title is cut: stored
        {"id": "q4", "v": float("nan")},  # NaN is not JSON: stored
        None,
    ]
    for item, value in zip(cand.items, inputs, strict=True):
        item.input = value
    payload = build_explorer(cand, base, ["exact"])
    raw = json.loads(unpack_bytes(payload.details_text.split(".")[0]))
    assert [d.get("it") for d in raw] == [INPUT_IS_TITLE, INPUT_IS_TITLE_JSON, None, None, None, None]
    assert "in" not in raw[0] and "in" not in raw[1]
    _, rows, details = unpack_payload(payload)
    assert [d["in"] for d in details[:4]] == inputs[:4]
    assert details[4]["in"]["id"] == "q4" and details[5]["in"] is None
    assert rows[0][1] == "short question" and rows[3][1].endswith("…")
