"""Request capture for a rescore: carry the source run's records forward, then add the judges'.

A rescore's captured requests start with a bounded copy of the source run's records (original
operation ids kept, so the items' carried ``diagnostics`` still resolve), followed by the new
judge calls (spec §17). A source that captured nothing starts empty; a source whose records are
gone gives an ``unavailable`` manifest and nothing is captured.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from axl_action.evals.common import capture_manifest
from axl_action.providers.capture import MAX_RUN_BYTES
from axl_action.runtime.scope import CaptureSink

COPY_SHARE_OF_RUN_BOUND = 0.75
"""Share of the run's byte limit the copied source records may use; the rest is for the judges."""
UNAVAILABLE_REASON = "the source run's captured requests are no longer available"


@dataclass
class RescoreCapture:
    """Where a rescore's judge calls are captured, and what was carried from the source."""

    sink: CaptureSink | None
    """The sink for new records; ``None`` when nothing is captured."""
    carried: bool = False
    """True when the source's records were copied (then item refs are carried too)."""
    copy_truncated: str | None = None
    """Why the copy stopped early, if it did."""
    unavailable: dict[str, Any] | None = None
    """The manifest to report when capture could not start."""


def unavailable_manifest(reason: str) -> dict[str, Any]:
    """The manifest of a capture that has nothing to show (its artifact id is never published)."""
    return {
        "version": 1,
        "artifactId": "",
        "fidelity": "runtime_request",
        "status": "unavailable",
        "reason": reason,
        "records": 0,
        "bytes": 0,
        "redaction": "none",
    }


def _line_bytes(record: Mapping[str, Any]) -> int:
    return len(json.dumps(record, ensure_ascii=False, separators=(",", ":")).encode("utf-8")) + 1


def begin_capture(
    source: Mapping[str, Any],
    sink: CaptureSink | None,
    source_records: Iterable[Mapping[str, Any]] | None,
) -> RescoreCapture:
    """Start the rescore's capture; copies ``source_records`` when the source captured requests.

    ``source_records`` is consulted only when ``source`` has a ``diagnostics.artifactId``;
    ``None`` then means the records are no longer available.
    """
    if sink is None:
        return RescoreCapture(None)
    diagnostics = source.get("diagnostics")
    artifact = diagnostics.get("artifactId") if isinstance(diagnostics, Mapping) else None
    if not artifact:
        return RescoreCapture(sink)
    if source_records is None:
        close = getattr(sink, "close", None)
        if callable(close):
            close()
        return RescoreCapture(None, unavailable=unavailable_manifest(UNAVAILABLE_REASON))
    run_bound = getattr(sink, "max_run_bytes", None) or MAX_RUN_BYTES
    max_bytes = max(1, math.floor(run_bound * COPY_SHARE_OF_RUN_BOUND))
    copied = 0
    state = RescoreCapture(sink, carried=True)
    for record in source_records:
        size = _line_bytes(record)
        if copied + size > max_bytes:
            state.copy_truncated = (
                f"the copied source records stopped at {max_bytes} bytes, the share of the "
                f"{run_bound} byte run limit reserved for them"
            )
            break
        # Straight to the sink, not through the ref collector: these are the source's
        # operations, already referenced by the carried item diagnostics.
        sink.write(record)
        copied += size
    return state


def finish_capture(state: RescoreCapture) -> dict[str, Any] | None:
    """The result's ``diagnostics`` manifest (``None`` when capture was never asked for)."""
    if state.sink is None:
        return state.unavailable
    manifest = capture_manifest(state.sink)
    if state.copy_truncated is None:
        return manifest
    reasons = "; ".join(r for r in (state.copy_truncated, manifest.get("reason")) if r)
    status = "unavailable" if manifest["status"] == "unavailable" else "truncated"
    ordered = {k: manifest[k] for k in ("version", "artifactId", "fidelity")}
    ordered.update({"status": status, "reason": reasons})
    ordered.update({k: v for k, v in manifest.items() if k not in ordered})
    return ordered
