"""What may be cached (the one rule), what an entry keeps, and the verified file format."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest
from pydantic import ValidationError

from axl_action.cache import CacheEntry, NotCacheable, SettledReply, cache_key, request_record, settle_reply
from axl_action.cache.entry import DamagedEntry, decode_entry, encode_entry
from axl_action.redaction import SECRETS
from tests.unit.cache.cache_helpers import chat_request, reply

OK: dict[str, Any] = {
    "status": 200,
    "body": {"choices": []},
    "usage": {"inputTokens": 3, "outputTokens": 1},
    "model": "gpt-4o-mini",
    "complete": True,
}


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"status": 500}, "error"),
        ({"status": 429}, "error"),
        ({"status": 302}, "error"),
        ({"complete": False}, "cut_off"),
        ({"refused": True}, "refused"),
        ({"finish_reason": "content_filter"}, "refused"),
        ({"finish_reason": "refusal"}, "refused"),
        ({"finish_reason": "SAFETY"}, "refused"),
        ({"usage": None}, "no_usage"),
        ({"usage": {}}, "no_usage"),
        ({"usage": {"inputTokens": -1}}, "no_usage"),
        ({"usage": {"inputTokens": float("nan")}}, "no_usage"),
    ],
)
def test_errors_cut_off_refused_and_usage_less_replies_are_not_cacheable(
    change: dict[str, Any], reason: str
) -> None:
    with pytest.raises(NotCacheable) as info:
        settle_reply(**{**OK, **change})
    assert info.value.reason == reason


def test_a_reply_cut_off_by_max_tokens_is_cacheable() -> None:
    assert settle_reply(**OK, finish_reason="length").finish_reason == "length"


def test_a_hand_built_reply_cannot_break_the_rules() -> None:
    with pytest.raises(ValidationError):
        SettledReply(status=500, usage={"inputTokens": 1}, model="m")
    with pytest.raises(ValidationError):
        SettledReply(status=200, usage={}, model="m")
    with pytest.raises(ValidationError):
        SettledReply(status=200, usage={"inputTokens": 1}, model="m", finish_reason="content_filter")


def test_only_the_headers_that_matter_are_kept_and_everything_is_redacted() -> None:
    secret = "sk-live-0123456789abcdefghij"
    SECRETS.add(secret)
    settled = settle_reply(
        **{**OK, "body": {"echo": f"your key is {secret}"}},
        headers={
            "Content-Type": "application/json",
            "X-Request-Id": "r1",
            "Set-Cookie": "s=1",
            "openai-organization": "o",
        },
    )
    assert settled.headers == {"content-type": "application/json", "x-request-id": "r1"}
    assert secret not in json.dumps(settled.model_dump())


def test_a_body_that_is_not_json_keeps_its_bytes() -> None:
    settled = settle_reply(**{**OK, "body": b"\x00raw\xffbytes"})
    entry = CacheEntry(key="a" * 64, request={}, reply=settled, made_at=datetime.now(UTC))
    assert entry.body_bytes() == b"\x00raw\xffbytes" and settled.body is None


def _entry() -> CacheEntry:
    request = chat_request()
    return CacheEntry(
        key=cache_key(request),
        request=request_record(request),
        reply=reply(),
        made_at=datetime(2026, 1, 2, tzinfo=UTC),
    )


def test_an_entry_file_round_trips() -> None:
    entry = _entry()
    assert decode_entry(encode_entry(entry), entry.key) == entry


def test_an_entry_keeps_the_certified_cost_and_when_it_was_made() -> None:
    entry = decode_entry(encode_entry(_entry()), _entry().key)
    assert entry.reply.cost is not None and entry.reply.cost.provenance == "price_table_estimate"
    assert entry.reply.cost.price_table == "bundled asOf 2025-10-01"
    assert entry.made_at == datetime(2026, 1, 2, tzinfo=UTC)
    assert entry.reply.usage == {"inputTokens": 12.0, "outputTokens": 5.0}


def _flip(data: bytes, at: int) -> bytes:
    return data[:at] + bytes([data[at] ^ 0x01]) + data[at + 1 :]


@pytest.mark.parametrize(
    ("damage", "why"),
    [
        (lambda d: _flip(d, len(d) - 10), "checksum"),
        (lambda d: _flip(d, 10), "checksum"),
        (lambda d: d[: len(d) // 2], "checksum"),
        (lambda d: b"", "bad header"),
        (lambda d: b"garbage\n" + d, "bad header"),
    ],
)
def test_a_damaged_file_is_detected(damage: Any, why: str) -> None:
    entry = _entry()
    with pytest.raises(DamagedEntry, match=why):
        decode_entry(damage(encode_entry(entry)), entry.key)


def test_a_file_holding_another_keys_entry_is_detected() -> None:
    entry = _entry()
    with pytest.raises(DamagedEntry, match="another key"):
        decode_entry(encode_entry(entry), "b" * 64)


def test_a_well_checksummed_file_of_an_unknown_layout_is_detected() -> None:
    import hashlib

    payload = json.dumps({"format": 2, "key": "a" * 64}).encode()
    data = b"AXLC1 " + hashlib.sha256(payload).hexdigest().encode() + b"\n" + payload
    with pytest.raises(DamagedEntry, match="not a valid entry"):
        decode_entry(data, "a" * 64)
