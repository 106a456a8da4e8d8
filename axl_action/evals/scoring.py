"""The scoring loop shared by runs and rescoring (spec §4.2).

Scores one item's output with every scorer: pre-seeds the keys (so their order follows the
scorer list whatever order scorers finish in), runs each scorer in its own *judging* scope,
and classifies the result as scored / failed / skipped / cancelled / budget_skipped /
budget_interrupted with the reference's exact ``scorerErrors`` messages.
"""

from __future__ import annotations

import functools
import math
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from axl_action.evals.jsonsafe import json_safe
from axl_action.evals.pool import pool_size, run_pool
from axl_action.evals.scorer import Scorer, ScorerContext
from axl_action.redaction import redact
from axl_action.runtime.admission import AdmissionController, ClosedBy
from axl_action.runtime.scope import TrackResult, is_abort, is_admission_denial
from axl_action.schema.jsonio import describe_input
from axl_action.schema.numbers import js_string, score_value, usable_number

_MISSING = object()


def error_message(error: BaseException) -> str:
    """The message of a thrown value (``message`` of an ``AxlError``, else ``str``, else its type),
    redacted: it lands in ``item.error`` / ``scorerErrors``, and a workflow's own exception may
    quote a key."""
    message = getattr(error, "message", None)
    if not isinstance(message, str):
        message = str(error)
    return redact(message) or type(error).__name__


def drop_traceback(error: BaseException) -> None:
    """Forget the traceback of an exception a scope caught, once it has become an item's or a
    scorer's text.

    A traceback's frames link to every caller's frame, and one of those holds the scope that
    holds the exception: a reference cycle, which kept each failure's frames, and through the
    workers' frames the run's items, alive until a full collection (90 ms at the exit of a
    20,000-item run with 670 failures). Without it they are freed as soon as they are unused.
    """
    error.__traceback__ = None


def elapsed_ms(start: float) -> int:
    """Whole milliseconds since ``start`` (a ``time.perf_counter`` reading)."""
    return round((time.perf_counter() - start) * 1000)


@dataclass
class ScoringEnv:
    """What the scoring loop needs from the run."""

    runtime: Any
    """The run's runtime (handed to scorers through the context)."""
    scorers: Sequence[Scorer]
    """The run's scorers, in order."""
    instrumented: bool
    """False for a runtime without a measurement rail (spec §5.1)."""
    cancel_event: threading.Event
    """Set when the run is cancelled."""
    admission: AdmissionController | None
    """The run budget, if any."""
    scorer_concurrency: Any
    """Per-item scorer fan-out."""
    track_scope: Callable[..., TrackResult[Any]]
    """``track`` or the uninstrumented stand-in."""
    capturing: bool = False
    """Stamp ``{scorer}`` capture correlation on judge scopes."""

    @functools.cached_property
    def context(self) -> ScorerContext:
        """The ``context`` argument every scorer of the run receives (built once)."""
        return ScorerContext(runtime=self.runtime, cancel_event=self.cancel_event)

    @functools.cached_property
    def sequential(self) -> bool:
        """Score an item's scorers one after the other (no LLM judge, or no fan-out asked).

        Deterministic scorers are CPU-bound Python: a thread pool would only add overhead.
        """
        return not any(s.is_llm for s in self.scorers) or (
            pool_size(self.scorer_concurrency, len(self.scorers)) <= 1
        )


def note_closure(admission: AdmissionController | None, observer: ClosedBy) -> None:
    """Record who first saw the budget closed (spec §8.3)."""
    if admission is not None and admission.closed:
        admission.note_closure(observer)


def score_item(item: dict[str, Any], output: Any, input_: Any, annotations: Any, env: ScoringEnv) -> None:
    """Fill ``scores``, ``scoreDetails`` and ``scorerErrors`` of ``item`` in place."""
    context = env.context
    scorers = env.scorers
    if env.sequential:  # in order, so the keys follow the scorer list without pre-seeding
        scores: dict[str, Any] = {}
        details: dict[str, dict[str, Any]] = {}
        collected: list[str] = []
        for s in scorers:
            detail, error, score = _score_one(s, output, input_, annotations, context, env)
            scores[s.name] = score
            details[s.name] = detail
            if error is not None:
                collected.append(error)
    else:
        scores = {}
        details = {}
        for s in scorers:  # pre-seeded: the keys follow the scorer list whatever finishes first
            scores[s.name] = None
            details[s.name] = {"score": None, "outcome": "cancelled"}
        errors: list[str | None] = [None] * len(scorers)

        def run_one(index: int) -> None:
            s = scorers[index]
            detail, error, score = _score_one(s, output, input_, annotations, context, env)
            details[s.name] = detail
            scores[s.name] = score
            errors[index] = error

        run_pool(len(scorers), env.scorer_concurrency, run_one, name="axl-eval-scorer")
        collected = [e for e in errors if e is not None]
    item["scores"] = scores
    item["scoreDetails"] = details
    if collected:
        item["scorerErrors"] = collected


def _with_cost(
    detail: dict[str, Any], result: TrackResult[Any], env: ScoringEnv, caller_cost: Any
) -> dict[str, Any]:
    """Add a judge's cost: measured (its scope's record), else an uninstrumented caller's own."""
    if result.measured:
        detail["accounting"] = result.accounting
        detail["cost"] = result.accounting["knownCost"]
    elif caller_cost is not None and not env.instrumented and usable_number(caller_cost):
        detail["cost"] = caller_cost
    return detail


def _score_one(
    s: Scorer,
    output: Any,
    input_: Any,
    annotations: Any,
    context: ScorerContext,
    env: ScoringEnv,
) -> tuple[dict[str, Any], str | None, float | None]:
    """One scorer -> (detail, scorerErrors entry or None, rounded score or None)."""
    if env.cancel_event.is_set():
        return {"score": None, "outcome": "cancelled"}, None, None
    admission = env.admission
    if s.is_llm and admission is not None and admission.closed:
        return {"score": None, "outcome": "budget_skipped"}, None, None
    start = time.perf_counter()
    if s.applies is not None:
        try:
            applies = s.call_applies(output, input_, annotations)
        except Exception as exc:
            return (
                {"score": None, "duration": elapsed_ms(start), "outcome": "failed"},
                f'Scorer "{s.name}" threw: {error_message(exc)}',
                None,
            )
        if not applies:
            return {"score": None, "skipped": True, "outcome": "skipped"}, None, None

    result = env.track_scope(
        s.call_score,
        output,
        input_,
        annotations,
        context,
        purpose="judging",
        capture_correlation={"scorer": s.name} if env.capturing else None,
    )
    duration = elapsed_ms(start)

    if result.status == "rejected":
        error = result.error
        assert error is not None
        drop_traceback(error)
        if is_abort(error):
            detail = _with_cost({"score": None, "duration": duration}, result, env, None)
            detail["outcome"] = "cancelled"
            return detail, None, None
        if is_admission_denial(error):
            note_closure(admission, "operation")
            detail = _with_cost({"score": None, "duration": duration}, result, env, None)
            detail["outcome"] = "budget_interrupted"
            return detail, None, None
        detail = _with_cost({"score": None, "duration": duration}, result, env, getattr(error, "cost", None))
        detail["outcome"] = "failed"
        note_closure(admission, "scorer")
        return detail, f'Scorer "{s.name}" threw: {error_message(error)}', None

    value: Any = result.value
    kind = type(value)
    # A plain number (bool excluded: its type is not int) in range: the common case, decided
    # here without a call. NaN fails both comparisons, so only finite numbers pass.
    if (kind is float or kind is int) and 0 <= value <= 1:
        rounded = score_value(value)
        detail = {"score": rounded, "duration": duration}
        if (result.ledger is not None and result.measured) or not env.instrumented:
            _with_cost(detail, result, env, None)
        detail["outcome"] = "scored"
        if admission is not None:
            note_closure(admission, "scorer")
        return detail, None, rounded
    try:
        detail, message, score = _classify(s, result, input_, duration, env)
    except Exception as exc:
        detail = {"score": None, "duration": duration}
        if result.measured:
            detail["accounting"] = result.accounting
        detail["outcome"] = "failed"
        message, score = f'Scorer "{s.name}" threw: {error_message(exc)}', None
    if admission is not None:
        note_closure(admission, "scorer")
    return detail, message, score


def _invalid_score(name: str, value: Any, raw_score: Any, input_: Any) -> str:
    """Why a score is unusable, and how to fix it when the cause is a common slip."""
    where = f"for input {describe_input(input_)}"
    found = value if raw_score is _MISSING else raw_score
    if isinstance(found, bool):
        # Python's True is an int; JavaScript's true is not a number, so the reference says
        # "undefined" here. Saying what came back is what lets the author fix it.
        return f'Scorer "{name}" returned a bool ({found}); return a number, e.g. float(...), {where}'
    # Anything else keeps the reference's text (runner spec §4.2: a string or an object
    # without a numeric score reads "out-of-range score undefined").
    shown = "undefined" if raw_score is _MISSING else js_string(raw_score)
    return f'Scorer "{name}" returned out-of-range score {shown} {where}'


def _classify(
    s: Scorer, result: TrackResult[Any], input_: Any, duration: int, env: ScoringEnv
) -> tuple[dict[str, Any], str | None, float | None]:
    """A fulfilled scorer's value other than a plain number in [0, 1] (which ``_score_one``
    decides itself) -> detail: ``{score, metadata?, cost?}`` with a score in range is scored,
    anything else failed."""
    value: Any = result.value
    if value is None:
        raise TypeError("score() returned None")
    raw_score: Any
    metadata: Any = None
    caller_cost: Any = None
    if isinstance(value, int | float) and not isinstance(value, bool):
        raw_score = value
    elif isinstance(value, dict):
        raw_score = value.get("score", _MISSING)
        metadata = value.get("metadata")
        caller_cost = value.get("cost")
    else:
        raw_score = getattr(value, "score", _MISSING)
        metadata = getattr(value, "metadata", None)
        caller_cost = getattr(value, "cost", None)
    detail: dict[str, Any] = {"score": None}
    if metadata:
        detail["metadata"] = json_safe(metadata)
    detail["duration"] = duration
    valid = (
        isinstance(raw_score, int | float)
        and not isinstance(raw_score, bool)
        and math.isfinite(raw_score)
        and 0 <= raw_score <= 1
    )
    if not valid:
        _with_cost(detail, result, env, caller_cost)
        detail["outcome"] = "failed"
        return detail, _invalid_score(s.name, value, raw_score, input_), None
    rounded = score_value(raw_score)
    detail["score"] = rounded
    _with_cost(detail, result, env, caller_cost)
    detail["outcome"] = "scored"
    return detail, None, rounded
