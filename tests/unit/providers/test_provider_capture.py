"""Capture sink limits and sidecar naming."""

from __future__ import annotations

import json
from pathlib import Path

from axl_action.providers.capture import CaptureSink, build_record, enforce_record_limit, sidecar_path
from axl_action.providers.types import WireExchange


def test_sidecar_name_drops_json_case_insensitively() -> None:
    assert sidecar_path(Path("out/results.json")) == Path("out/results.requests.jsonl")
    assert sidecar_path(Path("R.JSON")) == Path("R.requests.jsonl")
    assert sidecar_path(Path("out")) == Path("out.requests.jsonl")


def _big_exchange(size: int) -> WireExchange:
    return WireExchange(
        method="POST",
        url="http://h/v1",
        request_headers={},
        request_body={"messages": [{"role": "user", "content": "x" * size}]},
        status=200,
        response_body={"ok": True},
        attempts=1,
    )


def test_oversized_record_becomes_a_truncated_stub() -> None:
    record = build_record(provider="openai", model="m", exchange=_big_exchange(300 * 1024))
    assert "request" not in record and "response" not in record
    assert record["captured"]["truncated"] is True
    assert record["captured"]["omitted"] == ["request", "response"]
    assert record["bytes"] > 256 * 1024
    small = build_record(provider="openai", model="m", exchange=_big_exchange(10))
    assert enforce_record_limit(small) == small


def test_run_byte_limit_stops_capture(tmp_path: Path) -> None:
    sink = CaptureSink(tmp_path / "r.requests.jsonl", max_run_bytes=2000)
    for i in range(50):
        sink.write(
            {
                "v": 1,
                "phase": "end",
                "operationId": f"op_{i}",
                "provider": "p",
                "model": "m",
                "pad": "y" * 100,
            }
        )
    manifest = sink.close()
    assert manifest["status"] == "truncated" and "maxRunBytes" in manifest["reason"]
    lines = (tmp_path / "r.requests.jsonl").read_text().splitlines()
    assert len(lines) == manifest["records"] < 50
    assert manifest["bytes"] == (tmp_path / "r.requests.jsonl").stat().st_size <= 2000
    sink.write({"v": 1})  # after close: ignored, never raises


def test_no_records_no_file_and_sink_rescrubs_secrets(tmp_path: Path) -> None:
    empty = CaptureSink(tmp_path / "a.requests.jsonl")
    assert empty.close() == {"status": "complete", "records": 0, "bytes": 0, "redaction": "none"}
    assert not (tmp_path / "a.requests.jsonl").exists()
    sink = CaptureSink(tmp_path / "b.requests.jsonl", redact_content=True)
    fake_key = "sk-" + "abcdefghijklmnopqrstuv"  # built at run time: not a committed secret
    sink.write({"v": 1, "note": f"key {fake_key}", "headers": {"x-api-key": "zzz"}})
    assert sink.close()["redaction"] == "applied"
    line = json.loads((tmp_path / "b.requests.jsonl").read_text())
    assert "sk-abc" not in json.dumps(line) and line["headers"]["x-api-key"] == "[REDACTED]"


def test_unencodable_record_degrades_the_manifest(tmp_path: Path) -> None:
    sink = CaptureSink(tmp_path / "c.requests.jsonl")
    sink.write({"v": 1, "bad": float("nan")})
    assert sink.close()["status"] == "unavailable"
