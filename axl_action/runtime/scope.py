"""Accounting scopes: measure the spend, usage and timing of everything a piece of code does.

A *scope* wraps one call (``track(fn, ...)``). Provider adapters open an :class:`Operation`
for every paid call; the operation is recorded exactly once in **every** scope that encloses
the place it was opened (the item, the run...), siblings running concurrently on other threads
are isolated from each other (the current scope lives in a ``contextvars.ContextVar``), and the
innermost scope's *purpose* decides whether its cost is ``generation`` or ``judging``
(spec §5.1, §7.1).

Life cycle of an operation: opened -> settled (usable cost) | unknown (reason) | denied.
``before_dispatch`` is the admission check that transports run before every HTTP attempt.
Operations still open when their innermost scope ends settle unknown ``abandoned``.

Threads: code that starts its own threads must run them under ``contextvars.copy_context()``
for their operations to be attributed; an operation opened outside any scope is detached and
recorded nowhere.
"""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import itertools
import threading
from collections.abc import Callable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, Generic, Literal, NoReturn, Protocol, TypeVar

from axl_action.errors import AxlError
from axl_action.runtime.admission import AdmissionController
from axl_action.schema.accounting import USAGE_KEYS, USAGE_WIRE_KEYS, TokenUsage
from axl_action.schema.numbers import round3, usable_number

if TYPE_CHECKING:
    from axl_action.providers.types import CallTiming

T = TypeVar("T")
_Copy = TypeVar("_Copy")
Purpose = Literal["generation", "judging"]
OperationKind = Literal["chat", "stream", "embedding", "transcription", "tool", "external"]
KINDS: tuple[str, ...] = ("chat", "stream", "embedding", "transcription", "tool", "external")
_SNAKE_TO_CAMEL = dict(zip(USAGE_KEYS, USAGE_WIRE_KEYS, strict=True))
_USAGE_KEYSET = frozenset(USAGE_WIRE_KEYS)
_MODEL_KINDS = frozenset({"chat", "stream"})
_CALL_KINDS = frozenset({"chat", "stream", "embedding", "transcription"})
"""Kinds of operation a scope lists in :attr:`Scope.calls` (the model calls, not tools)."""

# One lock for every ledger: settlements are tiny, and a single lock makes the order in which
# costs are summed (and so the exact doubles) identical in every enclosing scope.
_LOCK = threading.RLock()
_ids = itertools.count(1)


class AdmissionDeniedError(AxlError):
    """A paid operation was refused because a run budget in its scope chain is closed."""

    code = "ADMISSION_DENIED"


class AbortError(Exception):
    """Raised by cooperative code that noticed the run was cancelled (spec §19)."""

    code = "ABORTED"


class CaptureSink(Protocol):
    """Where captured request records go (the providers' capture channel implements it)."""

    def write(self, record: Mapping[str, Any]) -> None:
        """Store one record; must never raise into the caller's request path."""


def is_admission_denial(error: object) -> bool:
    """An admission denial is our class, or anything named and coded like one (spec §8.4)."""
    if isinstance(error, AdmissionDeniedError):
        return True
    if not isinstance(error, BaseException):
        return False
    name = getattr(error, "name", type(error).__name__)
    return getattr(error, "code", None) == "ADMISSION_DENIED" and name == "AdmissionDeniedError"


def is_abort(error: object) -> bool:
    """Only errors named ``AbortError`` count as cancellation (spec §19)."""
    if not isinstance(error, BaseException):
        return False
    return type(error).__name__ == "AbortError" or getattr(error, "name", None) == "AbortError"


class _Ledger:
    """The counters of one scope (all access under ``_LOCK``)."""

    __slots__ = (
        "breakdown",
        "by_kind",
        "calls",
        "denied",
        "known_cost",
        "model_calls",
        "provenance",
        "reasons",
        "replayed",
        "samples",
        "settled",
        "timing",
        "tokens",
        "total",
        "unknown",
        "usage",
    )

    def __init__(self, keep_samples: bool) -> None:
        # An int until a cost is added, like the breakdown's: a record without cost holds the 0
        # its file says (see ``schema.numbers.score_value``).
        self.known_cost: float = 0
        self.reasons: dict[str, int] = {}
        self.usage: dict[str, float] = dict.fromkeys(USAGE_WIRE_KEYS, 0)
        self.total = 0
        self.settled = 0
        self.unknown = 0
        self.denied = 0
        self.by_kind: dict[str, int] = {}
        self.breakdown: dict[str, float] = {"generation": 0, "judging": 0, "external": 0}
        self.provenance: dict[str, float] = {}
        self.model_calls: dict[str, int] = {}
        self.tokens: dict[str, float] = {"input": 0, "output": 0, "reasoning": 0}
        self.timing: dict[str, dict[str, float]] = {}
        self.samples: dict[str, list[CallTiming]] | None = {} if keep_samples else None
        self.calls: list[tuple[int, dict[str, Any]]] = []
        """Every model call that closed in the scope, as ``(opening order, call record)``."""
        self.replayed: dict[str, Any] | None = None
        """Calls served by the response cache: ``{"calls", "cost", "unpriced"}`` (``None``
        while there is none, so a run without the cache writes the 0.24 record unchanged)."""

    def record(self) -> dict[str, Any]:
        """The core ``Accounting`` record in wire form and key order (spec §7.1)."""
        return {
            "version": 1,
            "currency": "USD",
            "knownCost": self.known_cost,
            "completeness": "incomplete" if self.unknown > 0 else "complete",
            "reasons": dict(self.reasons),
            "usage": dict(self.usage),
            "operations": {
                "total": self.total,
                "settled": self.settled,
                "unknown": self.unknown,
                "denied": self.denied,
                "byKind": dict(self.by_kind),
            },
            "breakdown": dict(self.breakdown),
            "provenance": dict(self.provenance),
            **({"replayed": dict(self.replayed)} if self.replayed is not None else {}),
        }

    # The copies the scope hands out (callers hold ``_LOCK``); ``None`` when there is nothing.

    def metadata(self) -> dict[str, Any] | None:
        if not self.model_calls:
            return None
        return {
            "models": list(self.model_calls),
            "modelCallCounts": dict(self.model_calls),
            "tokens": dict(self.tokens),
            "agentCalls": sum(self.model_calls.values()),
        }

    def timing_copy(self) -> dict[str, dict[str, float]] | None:
        return {m: dict(v) for m, v in self.timing.items()} if self.timing else None

    def samples_copy(self) -> dict[str, list[CallTiming]] | None:
        return {m: list(v) for m, v in self.samples.items()} if self.samples else None

    def calls_in_order(self) -> list[dict[str, Any]] | None:
        return [call for _, call in sorted(self.calls, key=_first)] if self.calls else None

    def add_counts(self, counts: _Counts | None) -> None:
        """Add one settlement's usage (:func:`_counted`)."""
        if counts is None:
            return
        pairs, input_tokens, output_tokens, reasoning_tokens = counts
        usage = self.usage
        for wire, value in pairs:
            usage[wire] += value
        tokens = self.tokens
        tokens["input"] += input_tokens
        tokens["output"] += output_tokens
        tokens["reasoning"] += reasoning_tokens

    def add_timing(self, model: str, timing: CallTiming) -> None:
        entry = self.timing.get(model)
        if entry is None:
            entry = self.timing[model] = {"calls": 0, "queuedMs": 0, "retryMs": 0, "wireMs": 0}
        entry["calls"] += 1
        entry["queuedMs"] += timing.queued_ms
        entry["retryMs"] += timing.retry_ms
        entry["wireMs"] += timing.wire_ms
        if timing.first_token_ms is not None:
            entry["firstTokenMs"] = entry.get("firstTokenMs", 0) + timing.first_token_ms
            entry["firstTokenCalls"] = entry.get("firstTokenCalls", 0) + 1
        if self.samples is not None:
            self.samples.setdefault(model, []).append(timing)


_Counts = tuple[tuple[tuple[str, float], ...], float, float, float]
"""A settlement's usage as a ledger adds it: the usable counts by wire name, in the order
reported, then the input, output and reasoning tokens."""


Usage = Mapping[str, float] | TokenUsage
"""What a settlement reports as usage: a wire-shaped mapping (camelCase or snake_case keys, as a
caller declares it) or a provider's :class:`TokenUsage`."""


def _counted(usage: Usage | None) -> _Counts | None:
    """``usage`` checked and named once per settlement, however many scopes enclose the call
    (each ledger then only adds); ``None`` when nothing was reported."""
    if type(usage) is TokenUsage:
        # Read by field, without the wire mapping a provider call would build only to be read
        # here: the same counts, checked by the same rule, in the wire order.
        i, o, r = usage.input_tokens, usage.output_tokens, usage.reasoning_tokens
        c, w, a = usage.cached_tokens, usage.cache_write_tokens, usage.audio_seconds
        counts = (
            ("inputTokens", i),
            ("outputTokens", o),
            ("reasoningTokens", r),
            ("cachedTokens", c),
            ("cacheWriteTokens", w),
            ("audioSeconds", a),
        )
        if (
            usable_number(i)
            and usable_number(o)
            and usable_number(r)
            and usable_number(c)
            and usable_number(w)
            and usable_number(a)
        ):
            return counts, i, o, r
        usage = dict(counts)  # an unusable count: the mapping's rule says what each sum takes
    if not usage:
        return None
    assert not isinstance(usage, TokenUsage)
    pairs = []
    checked: dict[str, float] = {}  # each count as added (0 when unusable), by its own key
    for key, value in usage.items():
        wire = _SNAKE_TO_CAMEL.get(key, key)
        if wire in _USAGE_KEYSET:
            if usable_number(value):
                pairs.append((wire, value))
                checked[key] = value
            else:
                checked[key] = 0
    # Each sum takes the camelCase count when present (even unusable: then 0), else the
    # snake_case one: read from the counts just checked, not checked again.
    return (
        tuple(pairs),
        checked.get("inputTokens", checked.get("input_tokens", 0)),
        checked.get("outputTokens", checked.get("output_tokens", 0)),
        checked.get("reasoningTokens", checked.get("reasoning_tokens", 0)),
    )


class _ReadOnlyRecord(dict[str, Any]):
    """A dict that refuses every change, itself and all the way down.

    Still a ``dict``: orjson, ``json`` and the results writer serialise it as one, and
    ``dict(record)``/``copy.deepcopy`` give an editable plain copy.
    """

    def _refuse(self, *_args: Any, **_kwargs: Any) -> NoReturn:
        raise TypeError(
            "the shared empty accounting record is read-only: edit a copy (copy.deepcopy(record))"
        )

    __setitem__ = __delitem__ = __ior__ = _refuse
    clear = pop = popitem = setdefault = update = _refuse

    def __copy__(self) -> dict[str, Any]:
        return dict(self)

    def __deepcopy__(self, memo: dict[int, Any]) -> dict[str, Any]:
        thawed: dict[str, Any] = _thawed(self)
        return thawed

    def __reduce__(self) -> tuple[Any, ...]:
        return (dict, (_thawed(self),))


def _frozen(value: Any) -> Any:
    return _ReadOnlyRecord({k: _frozen(v) for k, v in value.items()}) if isinstance(value, dict) else value


def _thawed(value: Any) -> Any:
    return {k: _thawed(v) for k, v in value.items()} if isinstance(value, dict) else value


EMPTY_RECORD: dict[str, Any] = _frozen(_Ledger(False).record())
"""The accounting record of every scope that measured nothing: one shared object (most scopes
of a deterministic run measure nothing), so it refuses every change, nested dicts included; an
edit raises ``TypeError`` instead of changing every later scope. The run journal tells it by
identity."""


class Scope(Generic[T]):
    """One accounting scope: created by :func:`track`, which returns it finished.

    While ``fn`` runs it is the context's current scope and collects what operations report;
    afterwards it carries the outcome of ``fn`` (``status``, ``value``, ``error``) and what it
    measured. One object per scope: a run opens several per item (the item, its workflow,
    every scorer), so a second result object per scope would be a measurable share of the
    runner's per-item cost.
    """

    __slots__ = (
        "_accounting",
        "_open",
        "_reach",
        "admission",
        "capture",
        "correlation",
        "error",
        "keep_samples",
        "ledger",
        "parent",
        "purpose",
        "status",
        "value",
    )

    def __init__(
        self,
        parent: Scope[Any] | None,
        purpose: Purpose,
        admission: AdmissionController | None,
        capture: CaptureSink | None,
        correlation: Mapping[str, Any],
        keep_samples: bool,
    ) -> None:
        self.parent = parent
        self.purpose: Purpose = purpose
        self.admission = admission
        self.capture = capture
        # Shared with the parent when unchanged: treated as immutable.
        self.correlation = correlation
        self.keep_samples = keep_samples
        self.ledger: _Ledger | None = None
        """What operations reported to this scope; ``None`` while none has (most scopes:
        deterministic scorers, workflows that make no call), which a caller can test before
        reading the figures below. Created by the first operation: a ledger is a dozen dicts."""
        self._open: set[Operation] | None = None
        self._reach: tuple[tuple[Scope[Any], ...], tuple[AdmissionController, ...]] | None = None
        """The scopes above this one and the admission controllers of the whole chain, once
        computed (a scope's parent and admission never change). Never this scope itself: a
        scope holding itself would be a reference cycle, left to the collector."""
        self.status: Literal["fulfilled", "rejected"] = "fulfilled"
        """``fulfilled`` when ``fn`` returned, ``rejected`` when it raised."""
        self.value: T | None = None
        """The return value of ``fn`` (``None`` when rejected)."""
        self.error: BaseException | None = None
        """The exception ``fn`` raised (``None`` when fulfilled)."""
        self._accounting: dict[str, Any] | None = None

    @classmethod
    def finished(
        cls,
        status: Literal["fulfilled", "rejected"],
        value: T | None,
        error: BaseException | None,
        accounting: dict[str, Any],
    ) -> Scope[T]:
        """A scope that ran outside the measurement rail, reporting a fixed record."""
        scope: Scope[T] = cls(None, "generation", None, None, _NO_CORRELATION, False)
        scope.status, scope.value, scope.error, scope._accounting = status, value, error, accounting
        return scope

    def open_ledger(self) -> _Ledger:
        """The scope's ledger, created on first use (callers hold ``_LOCK``)."""
        ledger = self.ledger
        if ledger is None:
            ledger = self.ledger = _Ledger(self.keep_samples)
        return ledger

    def chain(self) -> tuple[Scope[Any], ...]:
        """This scope and every scope above it, innermost first."""
        return self.reach()[0]

    def reach(self) -> tuple[tuple[Scope[Any], ...], tuple[AdmissionController, ...]]:
        """:meth:`chain`, and the admission controllers along it (each once): what every
        operation opened here is recorded in and admitted by. The part above this scope is
        computed by its first operation and kept (an item's calls share it; two threads
        computing it at once get equal values)."""
        reach = self._reach
        if reach is None:
            out: list[Scope[Any]] = []
            node = self.parent
            while node is not None:
                out.append(node)
                node = node.parent
            above = tuple(out)
            reach = self._reach = (above, _controllers((self, *above)))
        above, controllers = reach
        return (self, *above), controllers

    def opened(self, op: Operation) -> None:
        """``op`` was opened in this scope (callers hold ``_LOCK``)."""
        if self._open is None:
            self._open = set()
        self._open.add(op)

    def closed(self, op: Operation) -> None:
        """``op`` settled, was retracted or was abandoned (callers hold ``_LOCK``)."""
        if self._open is not None:
            self._open.discard(op)

    def abandon_open(self) -> None:
        """Settle operations still open as unknown ``abandoned`` (the scope's ``fn`` returned)."""
        if self._open:
            with _LOCK:
                for op in list(self._open):
                    op._abandon_locked()

    # ---- what the scope measured (read after it finished)

    @property
    def accounting(self) -> dict[str, Any]:
        """The scope's core ``Accounting`` record (wire form, spec §7.1); copy it to change it.

        Built on first access: most scopes (deterministic scorers) measure nothing and nobody
        reads their record.
        """
        if self._accounting is None:
            if self.ledger is None:
                # Shared by every scope that measured nothing (most items of a deterministic
                # run): callers copy before they change a record, never edit one in place.
                self._accounting = EMPTY_RECORD
            else:
                with _LOCK:
                    self._accounting = self.ledger.record()
        return self._accounting

    def _read(self, field: str, copy: Callable[[_Ledger], _Copy | None]) -> _Copy | None:
        """``copy`` of the ledger, taken under the one lock (workers may still be settling into
        it); ``None`` when the scope measured nothing or the ledger's ``field`` is empty. The
        emptiness test takes no lock: the runner reads these for every item, most of which
        measured nothing, and a lock every item takes forms a convoy under concurrency."""
        ledger = self.ledger
        if ledger is None or not getattr(ledger, field):
            return None
        with _LOCK:
            return copy(ledger)

    @property
    def timing(self) -> dict[str, dict[str, float]] | None:
        """Per-model timing sums of the successful timed calls (spec §12.2); ``None`` if none."""
        return self._read("timing", _Ledger.timing_copy)

    @property
    def samples(self) -> dict[str, list[CallTiming]] | None:
        """Per-model raw ``CallTiming`` samples, only with ``capture_timing_samples``."""
        return self._read("samples", _Ledger.samples_copy)

    @property
    def metadata(self) -> dict[str, Any] | None:
        """Measured ``models``/``modelCallCounts``/``tokens``/``agentCalls``; ``None`` without model calls."""
        return self._read("model_calls", _Ledger.metadata)

    @property
    def calls(self) -> list[dict[str, Any]] | None:
        """The model calls made in the scope, in the order they were opened (``EvalItem.calls``:
        model, kind, purpose, outcome, cost, tokens, latency, tool names); ``None`` if none."""
        return self._read("calls", _Ledger.calls_in_order)

    @property
    def measured(self) -> bool:
        """True when the scope saw at least one operation or one denied operation."""
        ledger = self.ledger
        if ledger is None:
            return False
        return ledger.total > 0 or ledger.denied > 0 or ledger.settled > 0 or ledger.unknown > 0


#: What :func:`track` returns: the finished scope.
TrackResult = Scope


_NO_CORRELATION: Mapping[str, Any] = {}
_current: ContextVar[Scope[Any] | None] = ContextVar("axl_accounting_scope", default=None)


def _first(pair: tuple[int, dict[str, Any]]) -> int:
    return pair[0]


def current_scope() -> Scope[Any] | None:
    """The innermost scope of the calling context, if any."""
    return _current.get()


def _controllers(chain: tuple[Scope[Any], ...]) -> tuple[AdmissionController, ...]:
    seen: dict[int, AdmissionController] = {}
    for scope in chain:
        if scope.admission is not None:
            seen.setdefault(id(scope.admission), scope.admission)
    return tuple(seen.values())


class Operation:
    """One measured operation (a provider call, a tool call, a declared external operation)."""

    __slots__ = (
        "_call",
        "_chain",
        "_controllers",
        "_dispatched",
        "_home",
        "_ledgers",
        "_seq",
        "_state",
        "_timing",
        "id",
        "kind",
        "model",
        "on_abandon",
        "purpose",
        "tools",
    )

    def __init__(self, kind: str, model: str | None, home: Scope[Any] | None) -> None:
        self._seq = next(_ids)
        self.id = f"op_{self._seq}"
        self.kind = kind
        self.model = model
        self._home = home
        self._chain: tuple[Scope[Any], ...]
        self._controllers: tuple[AdmissionController, ...]
        self._chain, self._controllers = home.reach() if home is not None else ((), ())
        self._ledgers: tuple[_Ledger, ...] = ()
        """The ledgers of :attr:`_chain`, made by :func:`open_operation` (under ``_LOCK``) and
        kept: a scope's ledger, once made, is never replaced."""
        self.purpose: Purpose = home.purpose if home is not None else "generation"
        self._state = "open"
        self._dispatched = False
        self.on_abandon: Literal["free", "usage_missing"] | None = None
        """How the operation settles if it is still open when abandoned: ``None`` unknown
        ``abandoned``; ``free`` a known 0 (its last attempt got a 4xx/5xx, which is not
        billed, and no retry followed); ``usage_missing`` (its last attempt got no reply)."""
        self.tools: tuple[str, ...] = ()
        """Names of the tools the reply asked to call (set by the measurement before it settles)."""
        self._call: dict[str, Any] | None = None
        self._timing: CallTiming | None = None

    @property
    def home(self) -> Scope[Any] | None:
        """The scope the operation was opened in (``None``: detached)."""
        return self._home

    def abandon(self) -> None:
        """Settle an operation nobody will settle any more, as ``on_abandon`` says."""
        with _LOCK:
            if self._state == "open":
                self._abandon_locked()

    def _abandon_locked(self) -> None:
        if self.on_abandon == "free":
            self._settle_locked(0, None, "provider_reported", "failed")
        else:
            self._unknown_locked(self.on_abandon or "abandoned", None)

    @property
    def state(self) -> str:
        """``open``, ``settled``, ``unknown`` or ``retracted``."""
        return self._state

    def _bucket(self) -> str:
        return "external" if self.kind == "external" else self.purpose

    def _close(self, state: str, outcome: dict[str, Any]) -> None:
        """Close the operation (callers hold ``_LOCK``); a model call is listed, with
        ``outcome`` (what it settled at), in every enclosing scope's :attr:`Scope.calls`."""
        self._state = state
        if self._home is not None:
            self._home.closed(self)
        model = self.model
        if model is None:
            return
        if self.kind in _MODEL_KINDS:
            for ledger in self._ledgers:
                calls = ledger.model_calls
                calls[model] = calls.get(model, 0) + 1
        if self.kind in _CALL_KINDS and self._ledgers:
            call: dict[str, Any] = {
                "operationId": self.id,
                "model": model,
                "kind": self.kind,
                "purpose": self.purpose,
            }
            call.update(outcome)
            if self.tools:
                call["tools"] = list(self.tools)
            if self._timing is not None:  # timed before it settled
                _time_call(call, self._timing)
            self._call = call
            entry = (self._seq, call)
            for ledger in self._ledgers:
                ledger.calls.append(entry)

    def before_dispatch(self) -> None:
        """Admission check before every HTTP attempt (spec §7.1, §8.2).

        Refused before any attempt left the process -> the operation is retracted (``total``
        -1, ``denied`` +1). Refused on a retry -> it settles unknown ``usage_missing``. Either
        way :class:`AdmissionDeniedError` is raised.
        """
        with _LOCK:
            if self._state != "open":
                return
            if not any(c.closed for c in self._controllers):
                self._dispatched = True
                return
            if self._dispatched:
                self._unknown_locked("usage_missing", None)
            else:
                for ledger in self._ledgers:
                    ledger.total -= 1
                    ledger.denied += 1
                    left = ledger.by_kind.get(self.kind, 0) - 1
                    if left > 0:
                        ledger.by_kind[self.kind] = left
                    else:
                        ledger.by_kind.pop(self.kind, None)
                self._state = "retracted"
                if self._home is not None:
                    self._home.closed(self)
        raise AdmissionDeniedError(
            f"{self.kind} operation refused: the run budget is closed",
            hint="raise --budget or the eval's budget to admit more spend",
        )

    def settle(
        self,
        cost: float | None,
        usage: Usage | None,
        provenance: str,
        *,
        timing: tuple[str, CallTiming] | None = None,
    ) -> None:
        """Record the final cost (USD) and usage; an unusable cost settles unknown instead.

        A usable cost is finite and >= 0 (an explicit 0 is known free). Without a usable cost
        the reason is ``unpriced_model`` when usage was reported, else ``usage_missing``.
        ``timing``: the call's ``(model URI, timing)``, recorded as :meth:`record_timing` does,
        under the same lock (a measured call settles and is timed in one step).
        """
        counts = _counted(usage)
        with _LOCK:
            if self._state != "open":
                return
            if timing is not None:
                self._timed_locked(*timing)
            if cost is None or not usable_number(cost):
                if isinstance(usage, TokenUsage) or usage is None:
                    reported = counts is not None and any(value > 0 for _, value in counts[0])
                else:  # any positive count, of a usage key or not
                    reported = any(usable_number(v) and v > 0 for v in usage.values())
                self._unknown_locked("unpriced_model" if reported else "usage_missing", counts)
                return
            self._settle_locked(cost, counts, provenance)

    def _settle_locked(
        self, cost: float, counts: _Counts | None, provenance: str, outcome: str = "settled"
    ) -> None:
        bucket = self._bucket()
        for ledger in self._ledgers:
            ledger.add_counts(counts)
            ledger.settled += 1
            ledger.known_cost += cost
            ledger.breakdown[bucket] += cost
            ledger.provenance[provenance] = ledger.provenance.get(provenance, 0) + cost
        for controller in self._controllers:
            controller.charge(cost)
        self._close("settled", {"outcome": outcome, "cost": cost, **_tokens(counts)})

    def replay(self, certified: float | None) -> None:
        """Settle a call the response cache answered: billed $0 (nothing was sent, so the
        budget is not charged), with what the call cost when it was made (``certified``, or
        ``None`` for a model that had no price then) kept apart under ``replayed``."""
        with _LOCK:
            if self._state != "open":
                return
            for ledger in self._ledgers:
                ledger.settled += 1
                replayed = ledger.replayed
                if replayed is None:
                    replayed = ledger.replayed = {"calls": 0, "cost": 0, "unpriced": 0}
                replayed["calls"] += 1
                if certified is not None and usable_number(certified):
                    replayed["cost"] += certified
                else:
                    replayed["unpriced"] += 1
            self._close("settled", {"outcome": "replayed", "certifiedCost": certified})

    def unknown(
        self, reason: str, usage: Usage | None = None, *, timing: tuple[str, CallTiming] | None = None
    ) -> None:
        """Settle without a usable cost (``usage_missing``, ``unpriced_model``, ...);
        ``timing`` as for :meth:`settle`."""
        counts = _counted(usage)
        with _LOCK:
            if self._state == "open":
                if timing is not None:
                    self._timed_locked(*timing)
                self._unknown_locked(reason, counts)

    def _unknown_locked(self, reason: str, counts: _Counts | None) -> None:
        for ledger in self._ledgers:
            ledger.add_counts(counts)
            ledger.unknown += 1
            ledger.reasons[reason] = ledger.reasons.get(reason, 0) + 1
        self._close("unknown", {"outcome": "unknown", "reason": reason, **_tokens(counts)})

    def record_timing(self, model_uri: str, timing: CallTiming) -> None:
        """Add one *successful* timed call (failed calls must not be recorded, spec §12.3)."""
        with _LOCK:
            self._timed_locked(model_uri, timing)

    def _timed_locked(self, model_uri: str, timing: CallTiming) -> None:
        for ledger in self._ledgers:
            ledger.add_timing(model_uri, timing)
        self._timing = timing
        if self._call is not None:
            _time_call(self._call, timing)

    def capture(self, record: Mapping[str, Any]) -> None:
        """Send a request record to the run's capture sink, stamped with correlation ids."""
        home = self._home
        if home is None:
            return
        sink = home.capture
        if sink is None:
            return
        stamped: dict[str, Any] = {"operationId": self.id, "kind": self.kind}
        stamped.update(home.correlation)
        stamped.update(record)
        try:
            sink.write(stamped)
        except Exception:  # capture must never change results (spec §16)
            return


def _time_call(call: dict[str, Any], timing: CallTiming) -> None:
    """A call record's latency (``EvalItem.calls``): wire and first-token ms, and attempts."""
    call["wireMs"] = round3(timing.wire_ms)
    if timing.first_token_ms is not None:
        call["firstTokenMs"] = round3(timing.first_token_ms)
    call["attempts"] = timing.attempts


def _tokens(counts: _Counts | None) -> dict[str, float]:
    """A call record's token counts (``EvalItem.calls``): input and output, when reported."""
    if counts is None:
        return {}
    return {"inputTokens": counts[1], "outputTokens": counts[2]}


def open_operation(
    kind: str, *, model: str | None = None, home: Scope[Any] | None = None, dispatched: bool = False
) -> Operation:
    """Open an operation in the current scope chain (or ``home``'s, for a call no scope of the
    calling context owns); refused while any budget there is closed.

    ``dispatched``: the caller sends the first attempt at once, so this admission check is
    that attempt's :meth:`Operation.before_dispatch` too (one check under one lock, not two
    back to back)."""
    if kind not in KINDS:
        raise ValueError(f"unknown operation kind {kind!r}; expected one of {', '.join(KINDS)}")
    if home is None:
        home = _current.get()
    op = Operation(kind, model, home)
    with _LOCK:
        ledgers = op._ledgers = tuple([scope.open_ledger() for scope in op._chain])
        if any(c.closed for c in op._controllers):
            for ledger in ledgers:
                ledger.denied += 1
            op._state = "retracted"
            raise AdmissionDeniedError(
                f"{kind} operation refused: the run budget is closed",
                hint="raise --budget or the eval's budget to admit more spend",
            )
        for ledger in ledgers:
            ledger.total += 1
            ledger.by_kind[kind] = ledger.by_kind.get(kind, 0) + 1
        if home is not None:
            home.opened(op)
        op._dispatched = dispatched
    return op


def propagate_context(fn: Callable[..., T]) -> Callable[..., T]:
    """``fn`` bound to a copy of the calling context, to run on a thread the app starts itself.

    Model calls are attributed to the item whose context they run in; a new thread starts
    with an empty context (``threading.Thread``, ``ThreadPoolExecutor.submit``), so calls made
    there are the run's ``unattributed`` spend unless the thread runs in a copy of the item's
    context: ``Thread(target=propagate_context(work))``.
    """
    context = contextvars.copy_context()

    def run(*args: Any, **kwargs: Any) -> T:
        return context.run(fn, *args, **kwargs)

    return run


class ContextThreadPoolExecutor(ThreadPoolExecutor):
    """A ``ThreadPoolExecutor`` whose tasks run in a copy of the submitter's context, so the
    model calls they make are attributed to the item that submitted them."""

    def submit(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> Any:
        return super().submit(contextvars.copy_context().run, fn, *args, **kwargs)


def side_scope(purpose: Purpose = "generation") -> Scope[Any]:
    """A child of the current scope that no context runs in: operations opened with it as
    ``home`` are recorded in it and in every scope above it (budgets included). The runner
    keeps the run's ``unattributed`` calls (made where no item owns them) in one."""
    parent = _current.get()
    return Scope(
        parent,
        purpose,
        None,
        parent.capture if parent is not None else None,
        parent.correlation if parent is not None else _NO_CORRELATION,
        False,
    )


_PLAIN = (dict, list, str, int, float, bool, type(None), tuple)


class _SharedLoop:
    """The one event loop on which the scopes' awaitables run, on a daemon thread of its own,
    started by the first awaitable and kept for the life of the process.

    Why one loop and not ``asyncio.run`` per item: an async client made once at import time
    (``client = AsyncOpenAI()``, the common case) binds its connection pool to the loop it first
    ran on; a second loop finds connections of a closed one. With one loop every item, every
    ``--runs`` repeat and every eval of the process shares the client. The number of items in
    flight stays bounded by the runner's worker threads: each waits for its own coroutine.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    def _started(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None:
                loop = asyncio.new_event_loop()
                thread = threading.Thread(target=self._serve, args=(loop,), name="axl-eval-loop", daemon=True)
                thread.start()
                self._loop, self._thread = loop, thread
            return self._loop

    @staticmethod
    def _serve(loop: asyncio.AbstractEventLoop) -> None:
        asyncio.set_event_loop(loop)
        while True:
            try:
                loop.run_forever()
                return
            except BaseException:  # an item's SystemExit or KeyboardInterrupt: its future holds it
                continue

    def on_loop_thread(self) -> bool:
        return self._thread is not None and threading.current_thread() is self._thread

    def run(self, awaitable: Any, context: contextvars.Context) -> Any:
        """Run ``awaitable`` to completion on the loop, in ``context``; block until it is done."""
        loop = self._started()
        done: Future[Any] = Future()

        async def wait() -> Any:
            return await awaitable

        def settle(task: asyncio.Task[Any]) -> None:
            if task.cancelled():
                done.cancel()
            elif (error := task.exception()) is not None:
                done.set_exception(error)
            else:
                done.set_result(task.result())

        def start() -> None:
            loop.create_task(wait(), context=context).add_done_callback(settle)

        loop.call_soon_threadsafe(start)
        return done.result()


_shared_loop = _SharedLoop()


def _awaited(awaitable: Any) -> Any:
    """The result of an awaitable a scope's ``fn`` returned, driven on the shared event loop
    in a copy of this context (so the scope applies to its calls)."""
    context = contextvars.copy_context()
    if not _shared_loop.on_loop_thread():
        return _shared_loop.run(awaitable, context)

    # A coroutine on the shared loop tracked an awaitable and waits for it: the loop cannot
    # run it while it waits, so it gets a private loop on a helper thread.
    async def wait() -> Any:
        return await awaitable

    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="axl-eval-async") as helper:
        return helper.submit(context.run, asyncio.run, wait()).result()


def track(
    fn: Callable[..., T],
    *args: Any,
    purpose: Purpose | None = None,
    admission: AdmissionController | None = None,
    capture: CaptureSink | None = None,
    capture_correlation: Mapping[str, Any] | None = None,
    capture_timing_samples: bool = False,
) -> Scope[T]:
    """Run ``fn(*args)`` inside a new scope nested in the current one; never raises ``Exception``.

    ``purpose`` defaults to the parent's (root: generation). ``capture`` declares the capture
    sink (inherited downwards); ``capture_correlation`` is merged over the parent's. A ``fn``
    returning an awaitable is driven to completion on a private event loop.
    """
    parent = _current.get()
    if parent is None:
        correlation: Mapping[str, Any] = capture_correlation or _NO_CORRELATION
    elif capture_correlation:
        correlation = {**parent.correlation, **capture_correlation}
    else:
        correlation = parent.correlation
    scope: Scope[T] = Scope(
        parent,
        purpose or (parent.purpose if parent is not None else "generation"),
        admission,
        capture if capture is not None else (parent.capture if parent is not None else None),
        correlation,
        capture_timing_samples,
    )
    token = _current.set(scope)
    # The call and the checks after it are written out here rather than in helpers: a run
    # opens six scopes per item, and each function call is a measurable share of their cost.
    try:
        value = fn(*args)
        if not isinstance(value, _PLAIN) and inspect.isawaitable(value):
            value = _awaited(value)
        scope.value = value
    except Exception as exc:
        scope.status, scope.error = "rejected", exc
    finally:
        _current.reset(token)
        if scope._open:
            scope.abandon_open()
    return scope
