"""Carrying a source run's captured requests into a rescore (spec §17, rescore capture)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from axl_action.evals.rescore import RescoreOptions, execute_rescore
from axl_action.evals.rescore_capture import begin_capture, finish_capture
from axl_action.evals.scorer import scorer
from axl_action.providers.capture import CaptureSink


def captured_source(records: int = 3) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    items = []
    source_records = []
    for i in range(records):
        op = f"op-{i}"
        items.append(
            {
                "input": i,
                "output": f"out {i}",
                "outcome": "completed",
                "scores": {},
                "diagnostics": {"operations": [{"operationId": op, "kind": "chat", "status": "recorded"}]},
            }
        )
        source_records.append(
            {"v": 1, "phase": "end", "operationId": op, "kind": "chat", "caseIndex": i, "payload": "x" * 200}
        )
    source = {
        "id": "src",
        "dataset": "d",
        "metadata": {},
        "timestamp": "2026-01-01T00:00:00.000Z",
        "totalCost": 0,
        "diagnostics": {
            "version": 1,
            "artifactId": "art_src",
            "fidelity": "runtime_request",
            "status": "complete",
            "records": records,
            "bytes": 1,
            "redaction": "none",
        },
        "duration": 1,
        "items": items,
        "summary": {"count": records, "failures": 0, "scorers": {}},
    }
    return source, source_records


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_copied_records_keep_their_ids_and_items_keep_their_refs(tmp_path: Path) -> None:
    source, records = captured_source()
    sink = CaptureSink(tmp_path / "r.jsonl")
    out = execute_rescore(
        source, [scorer("s", lambda o: 1)], options=RescoreOptions(capture=sink, source_records=records)
    )
    assert [r["operationId"] for r in lines(tmp_path / "r.jsonl")] == ["op-0", "op-1", "op-2"]
    assert [i["diagnostics"] for i in out["items"]] == [i["diagnostics"] for i in source["items"]]
    assert out["diagnostics"]["status"] == "complete" and out["diagnostics"]["records"] == 3
    # Key order of a scored item with carried refs: diagnostics right after outcome.
    assert list(out["items"][0])[:5] == ["input", "output", "outcome", "diagnostics", "scores"]


def test_copy_is_bounded_to_three_quarters_of_the_run_limit(tmp_path: Path) -> None:
    source, records = captured_source(5)
    size = len(json.dumps(records[0], separators=(",", ":"))) + 1
    run_limit = 4 * size  # the copy may use 3 records' worth
    sink = CaptureSink(tmp_path / "r.jsonl", max_run_bytes=run_limit)
    out = execute_rescore(
        source, [scorer("s", lambda o: 1)], options=RescoreOptions(capture=sink, source_records=records)
    )
    bound = int(run_limit * 0.75)
    assert [r["operationId"] for r in lines(tmp_path / "r.jsonl")] == ["op-0", "op-1", "op-2"]
    manifest = out["diagnostics"]
    assert list(manifest)[:5] == ["version", "artifactId", "fidelity", "status", "reason"]
    assert manifest["status"] == "truncated"
    assert manifest["reason"] == (
        f"the copied source records stopped at {bound} bytes, the share of the {run_limit} byte run limit "
        "reserved for them"
    )


def test_source_without_artifact_starts_a_fresh_capture(tmp_path: Path) -> None:
    source, records = captured_source()
    del source["diagnostics"]
    sink = CaptureSink(tmp_path / "r.jsonl")
    state = begin_capture(source, sink, records)
    assert state.sink is sink and not state.carried
    out = execute_rescore(
        source, [scorer("s", lambda o: 1)], options=RescoreOptions(capture=CaptureSink(tmp_path / "b.jsonl"))
    )
    assert all("diagnostics" not in i for i in out["items"])
    assert out["diagnostics"]["records"] == 0 and not (tmp_path / "b.jsonl").exists()


def test_gone_source_records_mean_no_capture(tmp_path: Path) -> None:
    source, _ = captured_source()
    state = begin_capture(source, CaptureSink(tmp_path / "r.jsonl"), None)
    assert state.sink is None
    manifest = finish_capture(state)
    assert manifest is not None and manifest["status"] == "unavailable" and manifest["artifactId"] == ""


def test_no_capture_requested_means_no_manifest() -> None:
    source, records = captured_source()
    out = execute_rescore(source, [scorer("s", lambda o: 1)], options=RescoreOptions(source_records=records))
    assert "diagnostics" not in out
    assert all("diagnostics" not in i for i in out["items"])
