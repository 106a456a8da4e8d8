"""Read the figures a reader sees back out of an HTML report, without a browser.

``report_figures(html)`` returns the static figures (the verdict header, every table's cells,
the run figures) and, per item, the explorer's row and detail decoded from the data the page
carries, keyed by name. The golden test compares these with ``tests/golden/report-figures.json``,
written from the report as it was before the item data was packed.
"""

from __future__ import annotations

import base64
import json
import re
import zlib
from html.parser import HTMLParser
from typing import Any

from axl_action.report.explorer import B85_DIGITS, INPUT_IS_TITLE

#: What the packed elements may hold: base85 digits, and ``.`` between detail chunks.
PACKED_TEXT = re.compile(f"[{re.escape(B85_DIGITS)}]*")
PACKED_CHUNKS = re.compile(f"[{re.escape(B85_DIGITS)}]*(?:\\.[{re.escape(B85_DIGITS)}]+)*")
#: The same digits in the alphabet of ``base64.b85decode`` (RFC 1924), which decodes them.
_TO_RFC1924 = str.maketrans(
    B85_DIGITS, "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz!#$%&()*+-;<=>?@^_`{|}~"
)

ROW_FIELDS = (
    "index",
    "title",
    "outcome",
    "baseline_outcome",
    "flags",
    "cost",
    "latency",
    "baseline_scores",
    "candidate_scores",
    "regressed",
    "cost_text",
    "flaky",
)


class _Figures(HTMLParser):
    """Texts of the verdict header, the run figures and every static table; the data scripts."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.header: list[str] = []
        self.figures: list[str] = []
        self.tables: list[list[list[str]]] = []
        self.scripts: dict[str, tuple[dict[str, str | None], str]] = {}
        self._where: list[str] = []
        self._cell: list[str] | None = None
        self._script: dict[str, str | None] | None = None
        self._script_text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "script":
            self._script = a
            self._script_text = []
            return
        if tag == "header" and a.get("id") == "verdict":
            self._where.append("header")
        elif tag == "ul" and "figures" in (a.get("class") or ""):
            self._where.append("figures")
        elif tag == "table":
            self.tables.append([])
        elif tag == "tr" and self.tables:
            self.tables[-1].append([])
        elif tag in ("td", "th") and self.tables:
            self._cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag == "script" and self._script is not None:
            sid = self._script.get("id")
            if sid:
                self.scripts[sid] = (self._script, "".join(self._script_text))
            self._script = None
        elif (tag, self._where[-1:]) in (("header", ["header"]), ("ul", ["figures"])):
            self._where.pop()
        elif tag in ("td", "th") and self._cell is not None and self.tables and self.tables[-1]:
            self.tables[-1][-1].append(" ".join("".join(self._cell).split()))
            self._cell = None

    def handle_data(self, data: str) -> None:
        if self._script is not None:
            self._script_text.append(data)
            return
        if self._cell is not None:
            self._cell.append(data)
        if self._where[-1:] == ["header"]:
            self.header.append(data)
        elif self._where[-1:] == ["figures"]:
            self.figures.append(data)


def unpack_bytes(text: str) -> bytes:
    """The bytes of one packed text (``deflate-raw+base85``), as the page unpacks them."""
    return zlib.decompress(base64.b85decode(text.translate(_TO_RFC1924)), -15)


def _inflate(text: str) -> str:
    return unpack_bytes(text).decode("utf-8")


def explorer_data(html: str) -> tuple[dict[str, Any], list[list[Any]], list[dict[str, Any]]]:
    """(meta, rows, details) of the item explorer, unpacked as the page unpacks them: the
    columns of ``axl-cols`` back into one row per item (the layout of ``ROW_FIELDS``) and every
    chunk of ``axl-details``."""
    p = _Figures()
    p.feed(html)
    _, meta_text = p.scripts["axl-rows"]
    meta = json.loads(meta_text)
    assert meta["v"] == 2
    cols_attrs, cols_text = p.scripts["axl-cols"]
    assert cols_attrs.get("type") == "application/octet-stream"
    assert cols_attrs.get("data-encoding") == "deflate-raw+base85"
    attrs, details_text = p.scripts["axl-details"]
    assert attrs.get("type") == "application/octet-stream"
    assert int(attrs.get("data-chunk-items") or 0) == meta["chunkItems"]
    rows, details = _unpack(meta, cols_text, details_text)
    return meta, rows, details


def unpack_payload(payload: Any) -> tuple[dict[str, Any], list[list[Any]], list[dict[str, Any]]]:
    """(meta, rows, details) of an ``ExplorerPayload``, as :func:`explorer_data` gives them."""
    meta = json.loads(payload.rows_json)
    rows, details = _unpack(meta, payload.columns_text, payload.details_text)
    return meta, rows, details


def _unpack(
    meta: dict[str, Any], cols_text: str, details_text: str
) -> tuple[list[list[Any]], list[dict[str, Any]]]:
    assert PACKED_TEXT.fullmatch(cols_text.strip()) and PACKED_CHUNKS.fullmatch(details_text.strip())
    cols = json.loads(_inflate(cols_text.strip()))
    n = meta["items"]
    rows: list[list[Any]] = []
    for i in range(n):
        paired = cols["bout"][i] is not None
        rows.append(
            [
                i,
                cols["title"][i],
                cols["out"][i],
                cols["bout"][i],
                cols["flags"][i],
                cols["cost"][i],
                cols["lat"][i],
                [col[i] for col in cols["b"]] if paired else None,
                [col[i] for col in cols["c"]],
                cols["rs"][i],
                cols["ct"][i],
                cols["fk"][i] if "fk" in cols else 0,
            ]
        )
    chunk = meta["chunkItems"]
    parts = [json.loads(_inflate(part)) for part in details_text.strip().split(".") if part]
    assert all(len(c) == chunk for c in parts[:-1])
    details = [d for part in parts for d in part]
    assert len(details) == n
    for row, d in zip(rows, details, strict=True):
        # The input stored once, as the title (see explorer.INPUT_IS_TITLE).
        if "it" in d:
            d["in"] = row[1] if d.pop("it") == INPUT_IS_TITLE else json.loads(row[1])
    return rows, details


def report_figures(html: str) -> dict[str, Any]:
    """The figures a reader sees: static header, tables and run figures, and every item."""
    p = _Figures()
    p.feed(html)
    meta, rows, details = explorer_data(html)
    items = []
    for row, detail in zip(rows, details, strict=True):
        fields = dict(zip(ROW_FIELDS, row, strict=False))
        fields.setdefault("flaky", 0)
        items.append({"row": fields, "detail": detail})
    return {
        "header": " ".join(" ".join(p.header).split()),
        "figures": re.sub(r"\s+", " ", " ".join(p.figures)).strip(),
        # The explorer's table is built by the page's script; static tables only here.
        "tables": [t for t in p.tables if t],
        "scorers": meta["scorers"],
        "has_baseline": meta["hasBaseline"],
        "items": items,
    }
