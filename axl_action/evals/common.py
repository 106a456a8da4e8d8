"""Run-level pieces shared by ``run_eval`` and ``rescore``: records, clock, scope tracker, manifest."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from datetime import UTC, datetime
from typing import Any, Protocol

from axl_action.evals.scorer import Scorer
from axl_action.evals.scoring import ScoringEnv
from axl_action.providers.intercept import measure_model_calls, runtime_pricing, warn_unattributed
from axl_action.runtime.admission import AdmissionController
from axl_action.runtime.runtime import Runtime
from axl_action.runtime.scope import Scope, TrackResult, track
from axl_action.schema.accounting import empty_accounting


def empty_accounting_wire() -> dict[str, Any]:
    """``emptyAccounting()`` as a fresh wire dict: all zero, complete, empty maps (spec §7.1)."""
    return empty_accounting().to_wire()


def attach_accounting(item: dict[str, Any], accounting: dict[str, Any]) -> None:
    """Set an item's ``accounting`` and the views derived from it (``cost`` = generation,
    ``scorerCost`` = judging, ``unpriced`` when not complete): the one place they are derived,
    for a run's items, a rescore's and a repeated item's fold."""
    item["accounting"] = accounting
    breakdown = accounting["breakdown"]
    item["cost"] = breakdown["generation"]
    item["scorerCost"] = breakdown["judging"]
    if accounting["completeness"] != "complete":
        item["unpriced"] = True
    else:
        item.pop("unpriced", None)


def attach_scope(item: dict[str, Any], scope: TrackResult[Any]) -> None:
    """Set what an item's scope measured: its accounting (:func:`attach_accounting`) and,
    when it made any, its model calls in order (``calls``), for a run's items and a rescore's."""
    attach_accounting(item, scope.accounting)
    calls = scope.calls
    if calls is not None:
        item["calls"] = calls


def measure_calls(runtime: Any, unattributed: Scope[Any]) -> AbstractContextManager[None]:
    """Measure the application's own SDK calls for a whole run or rescore (see
    ``providers/intercept.py``); those no item owns land in ``unattributed``."""
    return measure_model_calls(
        pricing=runtime_pricing(runtime),
        include_usage=bool(getattr(runtime, "stream_usage", True)),
        redact_content=bool(getattr(runtime, "redact_content", False)),
        unattributed=unattributed,
        cache=getattr(runtime, "cache", None),
    )


def note_unattributed(accounting: dict[str, Any], stray: Sequence[Scope[Any]]) -> None:
    """Set ``accounting.unattributed`` from the scope :func:`measure_calls` filled, when it
    measured anything: calls no item owns (import time, a thread that lost its context) are in
    the totals and budget already, shown apart here and in the console, never dropped."""
    if stray and stray[0].measured:
        accounting["unattributed"] = dict(stray[0].accounting)
        warn_unattributed(accounting["unattributed"])


def uninstrumented_accounting() -> dict[str, Any]:
    """The fixed record of a runtime without a measurement rail (spec §5.1)."""
    record = empty_accounting_wire()
    record["completeness"] = "incomplete"
    record["reasons"] = {"uninstrumented": 1}
    return record


def track_uninstrumented(fn: Callable[..., Any], *args: Any, **_: Any) -> TrackResult[Any]:
    """``track`` for a runtime without a measurement rail: runs ``fn``, reports the fixed record."""
    try:
        value = fn(*args)
    except Exception as exc:
        return TrackResult.finished("rejected", None, exc, uninstrumented_accounting())
    return TrackResult.finished("fulfilled", value, None, uninstrumented_accounting())


class Stops(Protocol):
    """The two stop events of a run's or a rescore's options (``RunOptions``, ``RescoreOptions``)."""

    @property
    def cancel_event(self) -> threading.Event | None: ...
    @property
    def abort_event(self) -> threading.Event | None: ...


def scoring_env(
    runtime: Any,
    scorers: Sequence[Scorer],
    stops: Stops,
    admission: AdmissionController | None,
    scorer_concurrency: int,
    capturing: bool,
) -> tuple[ScoringEnv, threading.Event]:
    """The scoring environment a run and a rescore share, and the event that stops admitting
    items. ``runtime`` defaults to a plain :class:`~axl_action.runtime.runtime.Runtime`; one
    without a measurement rail (``instrumented = False``) is tracked by the fixed record of
    :func:`track_uninstrumented`; the scorers' abort signal is ``abort_event``, else the
    cancel event."""
    runtime = runtime if runtime is not None else Runtime()
    instrumented = bool(getattr(runtime, "instrumented", True))
    cancel = stops.cancel_event or threading.Event()
    env = ScoringEnv(
        runtime=runtime,
        scorers=list(scorers),
        instrumented=instrumented,
        cancel_event=stops.abort_event or cancel,
        admission=admission,
        scorer_concurrency=scorer_concurrency,
        track_scope=track if instrumented else track_uninstrumented,
        capturing=capturing,
    )
    return env, cancel


def iso_now() -> str:
    """``Date.toISOString()``: UTC, millisecond precision, trailing ``Z``."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def result_wire(
    result_id: str,
    dataset: Any,
    metadata: dict[str, Any],
    accounting: dict[str, Any],
    items: list[dict[str, Any]],
    *,
    diagnostics: dict[str, Any] | None,
    duration: int | float,
) -> dict[str, Any]:
    """A result's wire data up to its items, in the reference's key order (``unpriced`` only
    when the accounting is incomplete, ``diagnostics`` only when there are any); the caller
    adds the ``summary`` last."""
    out: dict[str, Any] = {
        "id": result_id,
        "dataset": dataset,
        "metadata": metadata,
        "timestamp": iso_now(),
        "totalCost": accounting["knownCost"],
    }
    if accounting["completeness"] != "complete":
        out["unpriced"] = True
    out["accounting"] = accounting
    if diagnostics is not None:
        out["diagnostics"] = diagnostics
    out["duration"] = duration
    out["items"] = items
    return out


def capture_manifest(sink: Any) -> dict[str, Any]:
    """``EvalResult.diagnostics`` from the sink's ``close()`` figures (spec §16)."""
    manifest: dict[str, Any] = {
        "version": 1,
        "artifactId": str(getattr(sink, "artifact_id", "") or f"art_{uuid.uuid4()}"),
        "fidelity": "runtime_request",
    }
    close = getattr(sink, "close", None)
    figures = close() if callable(close) else None
    if not isinstance(figures, Mapping):
        figures = {"status": "complete", "records": 0, "bytes": 0, "redaction": "none"}
    manifest.update(figures)
    return manifest
