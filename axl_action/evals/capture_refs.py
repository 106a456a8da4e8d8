"""Collect per-item operation references while forwarding capture records to the real sink.

After the run every captured operation with a ``caseIndex`` becomes a reference
``{operationId, kind, status}`` on its item (or on the scorer detail when the record carries a
``scorer``), so a reader can find an item's raw requests in the sidecar (spec §16).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from axl_action.runtime.scope import CaptureSink


class RefCollector:
    """A :class:`CaptureSink` wrapper that remembers which operation belongs to which item."""

    def __init__(self, sink: CaptureSink) -> None:
        self.sink = sink
        self._lock = threading.Lock()
        self._refs: dict[str, dict[str, Any]] = {}

    def write(self, record: Mapping[str, Any]) -> None:
        """Forward to the sink, then note the operation (never raises)."""
        self.sink.write(record)
        op_id = record.get("operationId")
        case = record.get("caseIndex")
        if not isinstance(op_id, str) or not isinstance(case, int):
            return
        with self._lock:
            ref = self._refs.get(op_id)
            if ref is None:
                ref = self._refs[op_id] = {
                    "caseIndex": case,
                    "scorer": record.get("scorer"),
                    "kind": record.get("kind", "chat"),
                    "ended": False,
                    "truncated": False,
                }
            if record.get("phase") in ("end", None):
                ref["ended"] = True
            captured = record.get("captured")
            if isinstance(captured, Mapping) and captured.get("truncated"):
                ref["truncated"] = True

    def attach(self, items: list[dict[str, Any]]) -> None:
        """Add ``diagnostics.operations`` to the items and scorer details that made calls."""
        with self._lock:
            refs = list(self._refs.items())
        for op_id, ref in refs:
            index = ref["caseIndex"]
            if not 0 <= index < len(items):
                continue
            status = "truncated" if ref["truncated"] else "recorded" if ref["ended"] else "start_only"
            entry = {"operationId": op_id, "kind": ref["kind"], "status": status}
            item = items[index]
            scorer = ref["scorer"]
            if isinstance(scorer, str):
                detail = (item.get("scoreDetails") or {}).get(scorer)
                if detail is not None:
                    detail.setdefault("diagnostics", {"operations": []})["operations"].append(entry)
                continue
            item.setdefault("diagnostics", {"operations": []})["operations"].append(entry)
