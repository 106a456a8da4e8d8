"""Request capture (spec §16): build redacted JSONL records and write the run's sidecar.

Records follow codec v1: ``v``, ``phase``, ``operationId``, ``kind``, ``caseIndex?``,
``scorer?``, ``transportAttempts``, ``provider``, ``model``, ``request?``, ``response?``,
``error?``, ``captured{fidelity, redacted, truncated, omitted, reason?}``, ``bytes?``.
``operationId``, ``kind``, ``caseIndex`` and ``scorer`` are stamped by the accounting
operation (``Operation.capture``); everything else is built here.

Secrets (API keys, credential headers, key-shaped strings, bearer tokens) are redacted in
every record unconditionally. ``redact_content`` additionally replaces prompt and completion
text; ``captured.redacted`` and the manifest's ``redaction`` report that content mode.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import IO, Any, Literal

from axl_action.providers.errors import ProviderError
from axl_action.providers.redact import redact_headers, redact_secrets, redact_value
from axl_action.providers.types import WireExchange

MAX_RECORD_BYTES = 256 * 1024
"""Records larger than this are replaced by a stub marked ``truncated``."""
MAX_RUN_BYTES = 16 * 1024 * 1024
"""Capture stops for the run once this many bytes were written (status ``truncated``)."""
FIDELITY = "runtime_request"

_KEY_ORDER = (
    "v",
    "phase",
    "operationId",
    "kind",
    "caseIndex",
    "scorer",
    "turn",
    "transportAttempts",
    "provider",
    "model",
    "request",
    "response",
    "error",
    "termination",
    "correction",
    "captured",
    "bytes",
)

CaptureStatus = Literal["complete", "truncated", "interrupted", "unavailable"]


def sidecar_path(output: Path) -> Path:
    """``results.json`` -> ``results.requests.jsonl`` (``.json`` removed case-insensitively)."""
    name = output.name
    if name.lower().endswith(".json"):
        name = name[: -len(".json")]
    return output.with_name(f"{name}.requests.jsonl")


def _encoded_size(record: Mapping[str, Any]) -> int:
    return len(json.dumps(record, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))


def _ordered(record: Mapping[str, Any]) -> dict[str, Any]:
    out = {key: record[key] for key in _KEY_ORDER if key in record}
    out.update({k: v for k, v in record.items() if k not in out})
    return out


def enforce_record_limit(record: Mapping[str, Any], max_bytes: int = MAX_RECORD_BYTES) -> dict[str, Any]:
    """``record`` itself, or a stub keeping only identity fields when it is too large."""
    size = _encoded_size(record)
    if size <= max_bytes:
        return dict(record)
    captured = dict(record.get("captured") or {})
    omitted = [k for k in ("request", "response", "error") if k in record]
    captured.update(
        {
            "fidelity": captured.get("fidelity", FIDELITY),
            "truncated": True,
            "omitted": sorted({*captured.get("omitted", []), *omitted}),
            "reason": f"record of {size} bytes exceeded maxRecordBytes ({max_bytes})",
        }
    )
    stub = {k: v for k, v in record.items() if k not in ("request", "response", "error", "captured")}
    stub["captured"] = captured
    stub["bytes"] = size
    return stub


def _request_part(exchange: WireExchange, redact_content: bool) -> dict[str, Any]:
    return {
        "method": exchange.method,
        "url": redact_secrets(exchange.url),
        "headers": redact_headers(exchange.request_headers),
        "body": redact_value(exchange.request_body, content=redact_content),
    }


def _response_part(exchange: WireExchange, redact_content: bool) -> dict[str, Any]:
    return {
        "status": exchange.status,
        "headers": redact_headers(dict(exchange.response_headers)),
        "body": redact_value(exchange.response_body, content=redact_content),
    }


def sink_setting(sink: Any, name: str) -> Any:
    """A setting of the capture sink, looking through one wrapper (``.sink``) if needed."""
    value = getattr(sink, name, None)
    if value is None:
        value = getattr(getattr(sink, "sink", None), name, None)
    return value


def build_record(
    *,
    provider: str,
    model: str,
    exchange: WireExchange | None,
    error: BaseException | None = None,
    redact_content: bool = False,
    max_record_bytes: int = MAX_RECORD_BYTES,
) -> dict[str, Any]:
    """One ``end`` record for a finished call (success when ``error`` is ``None``).

    Without an ``exchange`` (custom providers, the mock) request/response are listed in
    ``captured.omitted``.
    """
    record: dict[str, Any] = {
        "v": 1,
        "phase": "end",
        "transportAttempts": exchange.attempts if exchange is not None else 1,
        "provider": provider,
        "model": model,
    }
    omitted: list[str] = []
    if exchange is not None:
        record["request"] = _request_part(exchange, redact_content)
        if exchange.status is not None or exchange.response_body is not None:
            record["response"] = _response_part(exchange, redact_content)
        else:
            omitted.append("response")
    else:
        omitted.extend(["request", "response"])
    if error is not None:
        record["error"] = describe_error(error)
    record["captured"] = {
        "fidelity": FIDELITY,
        "redacted": redact_content,
        "truncated": False,
        "omitted": omitted,
    }
    return enforce_record_limit(record, max_record_bytes)


def describe_error(error: BaseException) -> dict[str, Any]:
    """The error part of a record: name, message (secrets redacted) and provider fields."""
    out: dict[str, Any] = {
        "name": getattr(error, "name", None) or type(error).__name__,
        "message": redact_secrets(str(error)),
    }
    if isinstance(error, ProviderError):
        out["status"] = error.status
        out["retryable"] = error.retryable
        if error.request_id:
            out["requestId"] = error.request_id
    return out


class CaptureSink:
    """Writes capture records as JSONL to ``path`` with per-record and per-run byte limits.

    Thread-safe; ``write`` never raises (capture must not change results, spec §16). The
    file is created on the first record, so a run without records leaves no sidecar.
    """

    def __init__(
        self,
        path: Path,
        *,
        redact_content: bool = False,
        max_record_bytes: int = MAX_RECORD_BYTES,
        max_run_bytes: int = MAX_RUN_BYTES,
        append: bool = False,
    ) -> None:
        self.path = path
        self.redact_content = redact_content
        """Whether prompt/completion text is redacted (read by the gateway for every record)."""
        self.max_record_bytes = max_record_bytes
        self.max_run_bytes = max_run_bytes
        self.records = 0
        self.bytes = 0
        self.status: CaptureStatus = "complete"
        self.reason: str | None = None
        self._lock = threading.Lock()
        self._file: IO[str] | None = None
        self._closed = False
        self._mode = "w"
        if append:
            self._continue()

    def _continue(self) -> None:
        """Append to the records an earlier process of the same result left in ``path`` (a
        resumed run, ``--resume --capture-requests``): a last line the kill cut short is cut
        off, and the records kept count toward this sink's figures and limits."""
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return
        except OSError as exc:
            self._degrade("unavailable", f"reading {self.path} failed: {exc.strerror or exc}")
            return
        whole = data[: data.rfind(b"\n") + 1]
        if len(whole) != len(data):
            with self.path.open("r+b") as fh:
                fh.truncate(len(whole))
        self.records = whole.count(b"\n")
        self.bytes = len(whole)
        self._mode = "a"

    def write(self, record: Mapping[str, Any]) -> None:
        """Append one record (secrets re-redacted, size-limited, keys in codec order)."""
        try:
            # Re-applied here because records may reach the sink through wrappers (the
            # runner's ref collector) that the gateway cannot see through.
            safe = redact_value(dict(record), content=self.redact_content)
            captured = safe.get("captured")
            if self.redact_content and isinstance(captured, dict):
                captured["redacted"] = True
            line = json.dumps(
                _ordered(enforce_record_limit(safe, self.max_record_bytes)),
                ensure_ascii=False,
                separators=(",", ":"),
                allow_nan=False,
            )
        except (TypeError, ValueError) as exc:
            self._degrade("unavailable", f"a record could not be encoded: {exc}")
            return
        data = line + "\n"
        size = len(data.encode("utf-8"))
        with self._lock:
            if self._closed or self.status != "complete":
                return
            if self.bytes + size > self.max_run_bytes:
                self.status = "truncated"
                self.reason = f"capture stopped at maxRunBytes ({self.max_run_bytes})"
                return
            try:
                if self._file is None:
                    self.path.parent.mkdir(parents=True, exist_ok=True)
                    # Line-buffered: each record is one write(2) as its call ends, so a killed
                    # process leaves the records of the calls it was paid for (a resume appends).
                    self._file = self.path.open(self._mode, encoding="utf-8", buffering=1)
                self._file.write(data)
            except OSError as exc:
                self.status = "unavailable"
                self.reason = f"writing {self.path} failed: {exc.strerror or exc}"
                return
            self.records += 1
            self.bytes += size

    def _degrade(self, status: CaptureStatus, reason: str) -> None:
        with self._lock:
            if self.status == "complete":
                self.status, self.reason = status, reason

    def close(self) -> dict[str, Any]:
        """Flush and close; returns the manifest fields ``{status, reason?, records, bytes,
        redaction}`` for ``EvalResult.diagnostics``."""
        with self._lock:
            self._closed = True
            if self._file is not None:
                try:
                    self._file.close()
                except OSError as exc:
                    self.status, self.reason = "unavailable", f"closing {self.path} failed: {exc}"
                self._file = None
            manifest: dict[str, Any] = {"status": self.status}
            if self.reason:
                manifest["reason"] = self.reason
            manifest.update(
                {
                    "records": self.records,
                    "bytes": self.bytes,
                    "redaction": "applied" if self.redact_content else "none",
                }
            )
            return manifest

    def __enter__(self) -> CaptureSink:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
