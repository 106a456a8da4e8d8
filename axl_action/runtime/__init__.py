"""Accounting scopes, budget admission and the ``Runtime`` object workflows receive."""

from axl_action.runtime.admission import AdmissionController, parse_budget
from axl_action.runtime.runtime import Runtime, UninstrumentedRuntime
from axl_action.runtime.scope import (
    AbortError,
    AdmissionDeniedError,
    CaptureSink,
    Operation,
    TrackResult,
    current_scope,
    is_abort,
    is_admission_denial,
    open_operation,
    track,
)

__all__ = [
    "AbortError",
    "AdmissionController",
    "AdmissionDeniedError",
    "CaptureSink",
    "Operation",
    "Runtime",
    "TrackResult",
    "UninstrumentedRuntime",
    "current_scope",
    "is_abort",
    "is_admission_denial",
    "open_operation",
    "parse_budget",
    "track",
]
