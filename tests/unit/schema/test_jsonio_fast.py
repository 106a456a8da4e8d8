"""The fast indented writer spells every value exactly as the reference walker does."""

from __future__ import annotations

import json
from pathlib import Path
from unittest import mock

from hypothesis import given, settings
from hypothesis import strategies as st

from axl_action.schema import jsonio
from axl_action.schema.jsonio import dumps_js_bytes, walk_js

FIXTURES = Path(__file__).parent.parent.parent / "fixtures"

_ODD_FLOATS = st.sampled_from(
    [
        1.0,
        -0.0,
        0.0,
        1e-7,
        1.5e-6,
        1.2e-5,
        1e-4,
        3e16,
        1e16,
        -1.5e-6,
        1e20,
        1e21,
        -1e21,
        0.1 + 0.2,
        1.7976931348623157e308,
        2.0**63,
        2.5e300,
        5e-324,
        2.0**53,
        123456789012345680000.0,
    ]
)
_TEXT = st.text(alphabet=st.characters(blacklist_categories=["Cs"]), max_size=12) | st.sampled_from(
    ['": 1.0', "1.0", "x\n1e+16", " 1.0,", "\u2028\x7f\x1f", "e-", "1e+", "x e-7"]
)
_SCALARS = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | _ODD_FLOATS | _TEXT
_JSON = st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_TEXT, inner, max_size=4),
    max_leaves=30,
)


@settings(max_examples=400, deadline=None)
@given(
    _JSON,
    st.sampled_from([1, 5, 1 << 18]),
    st.sampled_from([0, 2, 1 << 30]),
    st.sampled_from([1, 40, 1 << 16]),
)
def test_fast_writer_equals_walker(value: object, piece: int, blocked_min: int, block_bytes: int) -> None:
    # Small pieces put a piece boundary after every line or few: the respelling must not
    # depend on where the text is cut. A small minimum writes every list of a dict (or of a
    # dict in a list) in blocks, and small blocks hold one or a few values each.
    with (
        mock.patch.object(jsonio, "_PIECE", piece),
        mock.patch.object(jsonio, "_BLOCKED_MIN", blocked_min),
        mock.patch.object(jsonio, "_BLOCK_BYTES", block_bytes),
        mock.patch.object(jsonio, "_FIRST_BLOCK", 1),
    ):
        assert dumps_js_bytes(value).decode("utf-8") == walk_js(value, 2)


def test_a_long_list_is_written_in_blocks_and_reports_lone_surrogates_by_their_whole_path() -> None:
    items: list[object] = [{"i": i, "score": 1.0, "v": [0.5, 1e-7, -0.0]} for i in range(3000)]
    items[2500] = {"i": 2500, "output": "bad \ud800", "m": {"k": ["\udc00"]}}
    for value, prefix in (
        ({"id": "r", "items": items, "n": 2.0}, ""),
        ([{"items": []}, {"items": items}], "[1]."),
    ):
        reports: list[list[str]] = []
        pieces = list(jsonio.dumps_js_chunks(value, reports.append))
        assert len(pieces) > 10  # blocks of about 64 KiB, not one text
        expected = walk_js(
            json.loads(json.dumps(value).replace("\\ud800", "\\ufffd").replace("\\udc00", "\\ufffd")), 2
        )
        assert b"".join(pieces).decode("utf-8") == expected
        # One report for the whole text, as without blocks.
        assert reports == [[f"{prefix}items[2500].output", f"{prefix}items[2500].m.k[0]"]]


def test_fast_writer_equals_walker_on_a_value_of_many_pieces() -> None:
    odd = [1.0, -0.0, 1e-7, 1.5e-6, 1e16, 1e21, 0.1 + 0.2, 5e-324, "1.0", "x\n1e16"]
    value = {
        "items": [{"i": i, "v": odd[i % len(odd)], "w": [odd[(i * 7) % len(odd)]]} for i in range(40_000)]
    }
    text = dumps_js_bytes(value)
    assert len(text) > 4 * jsonio._PIECE
    assert text.decode("utf-8") == walk_js(value, 2)


def test_fast_writer_round_trips_every_fixture_byte_for_byte() -> None:
    for path in [*(FIXTURES / "axl-eval-0.16.1").glob("*.json"), FIXTURES / "spec-0.24-example.json"]:
        text = path.read_text(encoding="utf-8")
        assert dumps_js_bytes(json.loads(text)).decode("utf-8") == text.rstrip("\n"), path.name


def test_lone_surrogates_become_replacement_characters_and_are_reported() -> None:
    seen: list[list[str]] = []
    out = dumps_js_bytes({"items": [{"output": "x \ud800"}], "ok": "\U0001f600"}, seen.append)
    assert json.loads(out) == {"items": [{"output": "x \ufffd"}], "ok": "\U0001f600"}
    assert seen == [["items[0].output"]]
