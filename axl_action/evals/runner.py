"""``run_eval``: run a dataset through a workflow, score every output, account for everything.

Layout of the accounting scopes (spec §5.2)::

    run scope (admission = the run budget, capture sink)
    └─ item scope (generation)            one per item, concurrently
       ├─ generation scope                execute_workflow(input, runtime)
       └─ scorer scope (judging)          one per scorer

The result is built as ordered wire data (the reference's key order, absent keys omitted) and
validated into :class:`~axl_action.schema.EvalResult` by :func:`run_eval`.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from axl_action.errors import AxlError, ItemErrorRateError
from axl_action.evals.capture_refs import RefCollector
from axl_action.evals.common import (
    attach_scope,
    capture_manifest,
    empty_accounting_wire,
    measure_calls,
    note_unattributed,
    result_wire,
    scoring_env,
)
from axl_action.evals.continuation import Continuation
from axl_action.evals.definition import DEFAULT_ITEM_ERROR_RATE_LIMIT, EvalDefinition
from axl_action.evals.failure import describe_item_failure
from axl_action.evals.jsonsafe import json_safe
from axl_action.evals.log import warn
from axl_action.evals.pool import run_pool
from axl_action.evals.repeats import RepeatSlots, in_repeat
from axl_action.evals.scorer import Scorer
from axl_action.evals.scoring import (
    ScoringEnv,
    drop_traceback,
    elapsed_ms,
    error_message,
    note_closure,
    score_item,
)
from axl_action.evals.sequential import SequentialPlan, SequentialRounds, run_rounds
from axl_action.evals.summary import build_metadata_rollups, model_timing
from axl_action.providers.intercept import prepare as prepare_hooks
from axl_action.redaction import redact, redact_deep
from axl_action.runtime.admission import AdmissionController, parse_budget
from axl_action.runtime.scope import (
    CaptureSink,
    Scope,
    TrackResult,
    is_abort,
    is_admission_denial,
    side_scope,
)
from axl_action.schema.fingerprint import config_fingerprint, dataset_fingerprint, scorer_fingerprint
from axl_action.schema.journal import RunFacts, ShardFacts
from axl_action.schema.numbers import is_error_rate_limit, usable_number
from axl_action.schema.result import SequentialRecord
from axl_action.schema.view import RunView, build_summary, item_columns, prepare_validators, wire_view

ProgressCallback = Callable[[Mapping[str, Any]], None]
RESERVED_METADATA_KEYS = frozenset(
    {"models", "modelCallCounts", "workflows", "workflowCallCounts", "tokens", "agentCalls"}
)


@dataclass
class _RunState:
    """Mutable state shared by the item workers of one run."""

    total: int
    on_progress: ProgressCallback | None
    lock: threading.Lock = field(default_factory=threading.Lock)
    samples: dict[str, list[Any]] = field(default_factory=dict)

    # No lock on the per-item path: with 20 CPU-bound workers, a lock taken per item makes the
    # threads queue behind whichever holder the GIL switched away from (measured: ~40 µs per
    # item at concurrency 20). Per-item figures are read from the items once the run is done.
    def item_done(self, index: int, outcome: str | None) -> None:
        callback = self.on_progress
        if callback is not None:
            callback({"type": "item_done", "itemIndex": index, "totalItems": self.total, "outcome": outcome})

    def run_done(self, settled: int, failures: Any) -> None:
        """The run's last event: how many items it settled, and the summary's failures."""
        if self.on_progress is not None:
            self.on_progress({"type": "run_done", "totalItems": settled, "failures": failures})


def shard_indices(total: int, shard: tuple[int, int] | None) -> list[int]:
    """Dataset indices of shard ``i`` of ``n`` (1-based ``i``): those with ``index % n == i - 1``.

    Index modulo keeps every shard a spread sample of the dataset and lets ``merge`` restore
    dataset order by interleaving; it requires every shard to load the same dataset.
    """
    if shard is None:
        return list(range(total))
    index, count = shard
    if count < 1 or not 1 <= index <= count:
        raise AxlError(f"invalid shard {index}/{count}", hint="use --shard i/n with 1 <= i <= n")
    return [i for i in range(total) if i % count == index - 1]


@dataclass(frozen=True)
class RunRecord:
    """A finished run: the wire data to write, and its view (built once, from the same items)."""

    wire: dict[str, Any]
    """The result as ordered wire data, exactly what ``--output`` writes."""
    view: RunView
    """Header model and item columns, for the console, the gates and the reports."""


def execute_eval(definition: EvalDefinition, runtime: Any = None, **options: Any) -> dict[str, Any]:
    """Run ``definition`` and return the result as ordered wire data (see :func:`execute_run`)."""
    return execute_run(definition, runtime, **options).wire


@dataclass(frozen=True)
class RunPlan:
    """What a run will do, fixed before its first item: the facts of its result and its items.

    :func:`plan_run` builds one; a caller that needs the facts first (the journal checks them
    against the one it resumes) passes it on to :func:`execute_run`, which then computes none
    of it again.
    """

    facts: RunFacts
    """Every part of the result that does not come from the items (journalled as is)."""
    items: Sequence[Mapping[str, Any]]
    """The dataset items this run processes, in result order (after sharding)."""
    sequential: SequentialPlan | None = None
    """``repeats: auto``: the baseline and cap the rounds decide against (not journalled: the
    caller builds it again on a resume; ``evals/sequential.py``)."""
    started: float = 0.0
    """When planning began (``time.perf_counter``): the run's ``duration`` counts from here, so
    loading the dataset is part of it, as in the reference (its clock starts before
    ``getItems``), whether the plan was made by :func:`execute_run` or by its caller."""


def plan_run(
    definition: EvalDefinition, *, shard: tuple[int, int] | None = None, result_id: str | None = None
) -> RunPlan:
    """Load the dataset, choose the shard, and fix the result's facts (fingerprints included).

    Raises for what would make the run fail before its first item: an invalid item error-rate
    limit or budget, a missing workflow, a bad shard.
    """
    # The process's one-time set-up, before the run's clock starts: the result models'
    # validators, and the HTTP libraries the run's measurement hooks.
    prepare_validators()
    prepare_hooks()
    started = time.perf_counter()
    limit = definition.fail_on_item_error_rate
    if limit is None:
        limit = DEFAULT_ITEM_ERROR_RATE_LIMIT
    if not is_error_rate_limit(limit):
        raise ItemErrorRateError(
            f"invalid fail_on_item_error_rate {limit!r}: expected a number in [0, 1]",
            hint="1 disables the item error-rate gate",
        )
    if definition.budget is not None:
        parse_budget(definition.budget)
    dataset_items = definition.dataset.get_items()
    chosen = shard_indices(len(dataset_items), shard)
    scorer_types: dict[str, Any] = {
        s.name: ("llm" if s.is_llm else "deterministic") for s in definition.scorers
    }
    facts = RunFacts(
        result_id=result_id or str(uuid.uuid4()),
        dataset=definition.dataset.name,
        workflow=definition.workflow,
        metadata=redact_deep(json_safe(dict(definition.metadata))),
        scorer_types=scorer_types,
        dropped_annotation_keys=list(getattr(definition.dataset, "dropped_annotation_keys", None) or []),
        fingerprint=_fingerprint(dataset_items, definition.scorers, scorer_types),
        shard=(
            ShardFacts(index=shard[0], count=shard[1], dataset_items=len(dataset_items))
            if shard is not None
            else None
        ),
        items=len(chosen),
        item_error_limit=float(limit),
        scorer_error_limit=_scorer_limit(definition.fail_on_scorer_error_rate),
        budget=definition.budget,
        repeats=definition.repeats,
    )
    return RunPlan(facts=facts, items=[dataset_items[i] for i in chosen], started=started)


@dataclass(frozen=True, slots=True)
class RunOptions:
    """How :func:`execute_run` runs: one settings object rather than a dozen parameters."""

    execute_workflow: Callable[[Any, Any], Any] | None = None
    """Overrides the definition's workflow."""
    concurrency: int | None = None
    """Items in flight (default: the definition's)."""
    on_progress: ProgressCallback | None = None
    """Hears every item event and the run's end."""
    cancel_event: threading.Event | None = None
    """Once set, stops admitting items: those not started become ``cancelled`` stubs."""
    abort_event: threading.Event | None = None
    """Once set, also cancels the scorers of items in flight (without one, ``cancel_event``
    does both)."""
    capture: CaptureSink | None = None
    """Receives the run's request records (``--capture-requests``)."""
    shard: tuple[int, int] | None = None
    """``(i, n)``: run only shard ``i`` of ``n`` (1-based) of the dataset."""
    result_id: str | None = None
    """The result's id (default: a fresh UUID)."""
    plan: RunPlan | None = None
    """A plan from :func:`plan_run` (then ``shard`` and ``result_id`` are the plan's)."""
    continuation: Continuation | None = None
    """The journal's resume state (see :func:`execute_run`)."""


def execute_run(
    definition: EvalDefinition,
    runtime: Any = None,
    options: RunOptions | None = None,
    **settings: Any,
) -> RunRecord:
    """Run ``definition``; the result as wire data plus its view (see :func:`run_eval`).

    ``options`` is a :class:`RunOptions`; keyword arguments set its fields one by one
    (``execute_run(definition, concurrency=4)``), and an unknown one raises ``TypeError``.

    Cancellation has two stages. ``cancel_event`` stops *admitting* items: items not started
    when it is set become ``cancelled`` stubs, items in flight finish. ``abort_event`` also
    cancels the scorers of items in flight (not-yet-started scorers become ``cancelled``, and
    LLM judges see it as their abort signal); without one, ``cancel_event`` does both.

    The journal's interface: ``plan`` (from :func:`plan_run`) fixes the result's facts and
    items; ``continuation`` (a :class:`~axl_action.evals.continuation.Continuation`) holds
    the items an earlier attempt settled and their accounting, and the ``on_settled`` /
    ``on_abandoned`` hooks that hear every settled item and a hard stop's count of the items
    left in flight.
    """
    options = replace(options or RunOptions(), **settings)
    plan, capture = options.plan, options.capture
    if plan is None:
        plan = plan_run(definition, shard=options.shard, result_id=options.result_id)
    started = plan.started or time.perf_counter()
    facts = plan.facts
    admission = AdmissionController(parse_budget(facts.budget)) if facts.budget is not None else None
    workflow = options.execute_workflow or definition.execute_workflow
    if workflow is None:
        raise AxlError(
            f"eval {definition.workflow!r} has no execute_workflow",
            hint="pass execute_workflow= to define_eval",
        )
    env, cancel = scoring_env(
        runtime, definition.scorers, options, admission, definition.scorer_concurrency, capture is not None
    )
    runtime, instrumented, tracker = env.runtime, env.instrumented, env.track_scope
    continuation = options.continuation or Continuation()
    state = _RunState(total=len(plan.items), on_progress=options.on_progress)
    items = _Items(plan.items, workflow, env, state, continuation, cancel)
    refs = RefCollector(capture) if capture is not None else None
    continuation.charge(admission)
    pending = items.restore()
    rounds, repeats = _sequential_rounds(plan, env.scorers)
    width = options.concurrency if options.concurrency is not None else definition.concurrency
    stray: list[Scope[Any]] = []

    def run_items() -> None:
        # The application's own SDK calls are measured for the whole run (see
        # providers/intercept.py); those no item owns land in the run's unattributed scope.
        stray.append(side_scope())
        with measure_calls(runtime, stray[0]):
            if rounds is None or repeats > 1:
                count, task = _schedule(items, pending, repeats)
                run_pool(count, width, task)
            else:
                todo = pending if pending is not None else range(len(plan.items))
                _run_sequential(rounds, facts, items, todo, width)

    try:
        run_scope = tracker(run_items, admission=admission, capture=refs)
    except BaseException as stop:
        if not isinstance(stop, Exception):
            items.abandon()
        raise
    if run_scope.status == "rejected":
        assert run_scope.error is not None
        raise run_scope.error
    done = items.settled()
    accounting = _run_accounting(continuation.fold(dict(run_scope.accounting)), stray, admission)
    # Only a run that made measured calls was priced (and then the table is already loaded).
    priced = instrumented and accounting["operations"]["total"] > 0
    if refs is not None:
        refs.attach(done)
    record = assemble_run(
        facts,
        done,
        accounting,
        model_timing=model_timing(state.samples),
        pricing_version=_pricing_version(runtime) if priced else None,
        diagnostics=capture_manifest(capture) if capture is not None else None,
        started=started,
        sequential=rounds.record(done) if rounds is not None else None,
    )
    state.run_done(len(done), record.wire["summary"]["failures"])
    return record


@dataclass
class _Items:
    """One run's items: running one (:func:`_process_item`), settling it (the journal's hook
    and the result slot), and a hard stop's count of those in flight."""

    raw: Sequence[Mapping[str, Any]]
    workflow: Callable[[Any, Any], Any]
    env: ScoringEnv
    state: _RunState
    continuation: Continuation
    cancel: threading.Event
    results: list[dict[str, Any] | None] = field(init=False)
    """One slot per item: ``None`` (not taken), :data:`_IN_FLIGHT`, :data:`_SETTLING`, or the
    final item."""
    # An item finishing while a hard stop is being written is either settled before the count
    # or abandoned, never both (held by the journal yet called lost). No lock: a settle marks
    # its slot _SETTLING, then checks ``abandoned``; the hard stop sets ``abandoned``, waits
    # for the slots marked before it to end, then counts. A lock taken by every settle (with
    # the journal's work under it) queued twenty workers on it and doubled a run's time.
    abandoned: bool = field(init=False, default=False)
    """Set once a hard stop began counting the items in flight."""

    def __post_init__(self) -> None:
        self.results = [None] * len(self.raw)

    def restore(self) -> list[int] | None:
        """Put the earlier attempt's items in their slots; the indices still to run (``None``:
        all of them)."""
        restored = self.continuation.completed
        for index, item in restored.items():
            self.results[index] = item
            self.state.item_done(index, item.get("outcome"))
        return [i for i in range(len(self.raw)) if i not in restored] if restored else None

    def run(self, index: int) -> dict[str, Any]:
        """Run item ``index`` (its slot marked in flight first: what a hard stop counts)."""
        self.results[index] = _IN_FLIGHT  # one list store
        return _process_item(index, self.raw[index], self.workflow, self.env, self.state)

    def run_repeat(self, index: int, repeat: int) -> dict[str, Any]:
        """Run repeat ``repeat`` of item ``index`` (the caller marks its slot in flight)."""
        return in_repeat(repeat, _process_item, index, self.raw[index], self.workflow, self.env, self.state)

    def process(self, index: int) -> None:
        """Run item ``index`` and settle it, or stub it once the run stops admitting items."""
        if self.cancel.is_set():
            item = _cancelled_stub(self.raw[index])
            self.results[index] = item
            if self.state.on_progress is not None:
                self.state.item_done(index, item.get("outcome"))
            return
        self.settle(index, self.run(index))

    def settle(self, index: int, item: dict[str, Any]) -> None:
        results = self.results
        # Marked before the check: a hard stop that sets ``abandoned`` after this check waits
        # for the slot to leave _SETTLING (each step is one store or load under the GIL).
        results[index] = _SETTLING
        if self.abandoned:
            results[index] = _IN_FLIGHT  # counted as abandoned in flight: nothing may hold it
            return
        try:
            on_settled = self.continuation.on_settled
            if on_settled is not None:
                on_settled(index, item)
        except BaseException:
            results[index] = _IN_FLIGHT
            raise
        results[index] = item
        if self.state.on_progress is not None:
            self.state.item_done(index, item.get("outcome"))

    def abandon(self) -> None:
        """A hard stop left the workers running: tell the journal how many items were in flight."""
        self.abandoned = True
        results = self.results
        # The settles past their check run no eval code (the journal's append, a store): they
        # end soon. One that marks its slot after this wait sees ``abandoned`` and puts the
        # slot back in flight, so a slot still _SETTLING in the count is in flight.
        while any(r is _SETTLING for r in results):
            time.sleep(0.001)
        on_abandoned = self.continuation.on_abandoned
        if on_abandoned is not None:
            on_abandoned(sum(1 for r in results if r is _IN_FLIGHT or r is _SETTLING))

    def settled(self) -> list[dict[str, Any]]:
        """The items of the finished run, in result order."""
        return [r for r in self.results if r is not None]


def _sequential_rounds(plan: RunPlan, scorers: Sequence[Scorer]) -> tuple[SequentialRounds | None, int]:
    """``repeats: auto``'s rounds (``None`` for a fixed count) and the repeats each item runs."""
    sequential = plan.sequential
    if sequential is None:
        return None, plan.facts.repeats
    rounds = SequentialRounds(sequential, [s.name for s in scorers])
    if not sequential.baseline:
        # Nothing to decide against: every item runs the cap, item by item as a fixed count
        # does, so each is journalled as soon as its last repeat settles.
        return rounds, sequential.max_repeats
    return rounds, plan.facts.repeats


def _schedule(items: _Items, pending: list[int] | None, repeats: int) -> tuple[int, Callable[[int], None]]:
    """The pool's task count and task for a fixed number of repeats (``pending``: the indices
    to run, ``None`` for all)."""
    if repeats > 1:
        todo: Sequence[int] = pending if pending is not None else range(len(items.raw))
        # Item-major (task k is repeat k % repeats of item todo[k // repeats]), so an item's
        # repeats run side by side and it settles as soon as its last one does.
        slots = RepeatSlots(repeats, [s.name for s in items.env.scorers])

        def repeated(k: int) -> None:
            index, repeat = todo[k // repeats], k % repeats
            if items.results[index] is None:
                items.results[index] = _IN_FLIGHT
            item = slots.add(index, repeat, items.run_repeat(index, repeat))
            if item is not None:
                items.settle(index, item)

        return len(todo) * repeats, repeated
    if pending is None:
        return len(items.raw), items.process
    return len(pending), lambda k: items.process(pending[k])


def _run_sequential(
    rounds: SequentialRounds,
    facts: RunFacts,
    items: _Items,
    todo: Sequence[int],
    width: int,
) -> None:
    """``repeats: auto`` with a baseline: the items run round by round until each is decided."""
    # Pairing with the baseline reads only the inputs.
    rounds.prepare(item_columns([{"input": r["input"]} for r in items.raw], list(facts.scorer_types)))
    run_rounds(rounds, todo, _Rounds(rounds, facts, items, width))


@dataclass(frozen=True)
class _Rounds:
    """The run's side of ``repeats: auto`` (:class:`~axl_action.evals.sequential.RoundHooks`):
    it runs a round's items on the pool, builds what a look compares and settles items."""

    rounds: SequentialRounds
    facts: RunFacts
    items: _Items
    width: int

    def run_round(self, repeat: int, active: Sequence[int]) -> None:
        rounds, items = self.rounds, self.items

        def one(k: int) -> None:
            index = active[k]
            if items.cancel.is_set():
                # The run stops admitting items: the rest of the round become cancelled stubs.
                rounds.add(index, _cancelled_stub(items.raw[index]))
                return
            items.results[index] = _IN_FLIGHT
            rounds.add(index, items.run_repeat(index, repeat))
            if repeat == 0 and rounds.final_after_first(index):
                # The baseline shows it steady for every scorer: it will not run again, so it
                # is journalled now rather than after the look.
                rounds.settled.add(index)
                items.settle(index, rounds.item(index))

        run_pool(len(active), self.width, one)

    def interim_view(self) -> RunView:
        # What a look compares: the items so far. Its accounting is left empty (the looks read
        # scores; folding every item's spend each look cost more than the comparison).
        restored = self.items.continuation.completed
        so_far = [restored[i] if i in restored else self.rounds.item(i) for i in range(len(self.items.raw))]
        return assemble_run(self.facts, so_far, empty_accounting_wire()).view

    def settle(self, index: int) -> None:
        self.items.settle(index, self.rounds.item(index))

    def stop(self) -> bool:
        """No further round may start (cancelled, or the budget closed)."""
        admission = self.items.env.admission
        return self.items.cancel.is_set() or (admission is not None and admission.closed)


def _run_accounting(
    accounting: dict[str, Any], stray: Sequence[Scope[Any]], admission: AdmissionController | None
) -> dict[str, Any]:
    """The run-level accounting record: ``scope``, ``unattributed`` and ``budget`` set."""
    accounting["scope"] = "run"
    note_unattributed(accounting, stray)
    if admission is not None:
        accounting["budget"] = admission.snapshot()
    return accounting


def assemble_run(
    facts: RunFacts,
    items: list[dict[str, Any]],
    accounting: dict[str, Any],
    *,
    model_timing: Mapping[str, Any] | None = None,
    pricing_version: str | None = None,
    diagnostics: dict[str, Any] | None = None,
    duration: int | float = 0,
    started: float | None = None,
    sequential: SequentialRecord | None = None,
) -> RunRecord:
    """A run's result from its facts, its items and its run-level accounting (``scope``,
    ``budget`` already set): the metadata roll-ups, ``callerReported``, the summary and the
    gates are computed here. The runner and ``axl-eval recover`` both build results with it.

    ``started`` (a ``time.perf_counter`` reading): the run's ``duration`` is measured from it
    once the summary is built, as the reference measures it (the whole run, summary
    included); otherwise ``duration`` is taken as given (a recovered run's)."""
    caller = _caller_totals(items)
    if caller is not None:
        accounting["callerReported"] = caller
    metadata: dict[str, Any] = dict(facts.metadata)
    metadata["scorerTypes"] = dict(facts.scorer_types)
    metadata.update(build_metadata_rollups(items, facts.workflow))
    if facts.dropped_annotation_keys:
        metadata["droppedAnnotationKeys"] = list(facts.dropped_annotation_keys)
    metadata["fingerprint"] = dict(facts.fingerprint)
    if pricing_version:
        metadata["fingerprint"]["pricingVersion"] = pricing_version
    if facts.shard is not None:
        metadata["shard"] = facts.shard.to_wire()
    if facts.repeats > 1:
        metadata["repeats"] = facts.repeats
    if sequential is not None:
        metadata["sequential"] = sequential.to_wire()

    scorer_types = dict(facts.scorer_types)
    columns = item_columns(items, list(scorer_types))
    summary = build_summary(
        columns,
        scorer_types,
        model_timing=model_timing,
        item_error_limit=facts.item_error_limit,
        scorer_error_limit=facts.scorer_error_limit,
    )
    result = result_wire(
        facts.result_id,
        facts.dataset,
        metadata,
        accounting,
        items,
        diagnostics=diagnostics,
        duration=elapsed_ms(started) if started is not None else duration,
    )
    result["summary"] = summary
    return RunRecord(wire=result, view=wire_view(result, columns))


def _scorer_limit(value: Any) -> float | None:
    if value is None:
        return None
    if not is_error_rate_limit(value):
        warn(f"[axl-eval] ignoring invalid fail_on_scorer_error_rate {value!r}, expected [0,1]")
        return None
    return float(value)


def _fingerprint(
    dataset_items: Sequence[Mapping[str, Any]], scorers: Sequence[Scorer], scorer_types: dict[str, str]
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    try:
        out["dataset"] = dataset_fingerprint((i["input"], i.get("annotations")) for i in dataset_items)
    except Exception as err:
        # A circular or otherwise unserializable input (or one whose str() raises): the run is
        # still written, and compare treats a missing dataset fingerprint as unknown (never as
        # a change).
        warn(
            f"[axl-eval] WARNING: the dataset fingerprint is unavailable ({_describe_error(err)}); "
            "compare cannot tell whether the dataset changed"
        )
    out["datasetItems"] = len(dataset_items)
    out.update(scorer_identity(scorers, scorer_types))
    return out


def scorer_identity(scorers: Sequence[Scorer], scorer_types: Mapping[str, str]) -> dict[str, Any]:
    """The scorer half of ``metadata.fingerprint``: ``scorers``, ``scorerSet``, ``config``."""
    out: dict[str, Any] = {"scorers": scorer_fingerprint(scorer_types), "scorerSet": dict(scorer_types)}
    judge_config = [
        [s.name, dict(s.config) if s.config else getattr(s, "model", None)]
        for s in scorers
        if s.is_llm or s.config
    ]
    if judge_config:
        try:
            out["config"] = config_fingerprint(judge_config)
        except Exception as err:
            warn(
                f"[axl-eval] WARNING: the scorer configuration fingerprint is unavailable "
                f"({_describe_error(err)}); compare cannot tell whether a judge changed"
            )
    return out


def _describe_error(err: BaseException) -> str:
    return redact(str(err)) or type(err).__name__


def _pricing_version(runtime: Any) -> str | None:
    """The ``as_of`` date of the price table this runtime prices calls with."""
    table = getattr(runtime, "pricing", None)
    if table is None:
        from axl_action.providers.gateway import default_pricing

        table = default_pricing()
    version = getattr(table, "as_of", None)
    return version if isinstance(version, str) and version else None


def _stub(raw: Mapping[str, Any], outcome: str, error: str) -> dict[str, Any]:
    item: dict[str, Any] = {"input": json_safe(raw["input"])}
    if "annotations" in raw:
        item["annotations"] = json_safe(raw["annotations"])
    item.update(
        {
            "output": None,
            "error": error,
            "outcome": outcome,
            "accounting": empty_accounting_wire(),
            "cost": 0,
            "scorerCost": 0,
            "scores": {},
        }
    )
    return item


_IN_FLIGHT: dict[str, Any] = {}
"""Marks an item a worker has taken and not yet settled (compared by identity)."""
_SETTLING: dict[str, Any] = {}
"""Marks an item whose settle is checking ``abandoned`` or under way (compared by identity)."""


def _cancelled_stub(raw: Mapping[str, Any]) -> dict[str, Any]:
    return _stub(raw, "cancelled", "Cancelled")


def _process_item(
    index: int,
    raw: Mapping[str, Any],
    workflow: Callable[[Any, Any], Any],
    env: ScoringEnv,
    state: _RunState,
) -> dict[str, Any]:
    """Spec §5.3 for one item."""
    admission = env.admission
    if env.cancel_event.is_set():
        return _stub(raw, "cancelled", "Cancelled")
    if admission is not None and admission.closed:
        note_closure(admission, "case")
        return _stub(raw, "budget_skipped", "Budget exceeded")

    input_ = raw["input"]
    annotations = raw.get("annotations")
    # The item is built in wire order as it goes (keys set again keep their place), so it
    # needs no reordering: input, annotations, output, scores, duration, timing, outcome, ...
    item: dict[str, Any] = {"input": json_safe(input_)}
    if "annotations" in raw:
        item["annotations"] = json_safe(annotations)
    item["output"] = None
    item["scores"] = {}
    start = time.perf_counter()

    def body() -> None:
        generation = env.track_scope(
            workflow,
            input_,
            env.runtime,
            purpose="generation",
            capture_timing_samples=True,
        )
        item["duration"] = elapsed_ms(start)
        measured = generation.ledger is not None  # the workflow reported an operation
        if measured:
            _note_timing(item, generation, state)
        if generation.status == "rejected":
            _generation_failed(item, generation, admission)
            return
        value = _workflow_result(generation.value)
        output = value["output"]
        item["output"] = redact_deep(json_safe(output))  # a workflow may put a key in its output
        item["outcome"] = "completed"
        _note_claims(item, value, generation.metadata if measured else None)
        if admission is not None:
            note_closure(admission, "case")
        score_item(item, output, input_, annotations, env)

    scope = env.track_scope(
        body,
        purpose="generation",
        # Always set: it names the item in capture records and in measurement warnings.
        capture_correlation={"caseIndex": index},
    )
    if scope.status == "rejected":
        # A broken workflow contract (not a mapping, no output): an ordinary item failure.
        error = scope.error
        assert error is not None
        drop_traceback(error)
        item.setdefault("duration", elapsed_ms(start))
        item["outcome"] = "failed"
        item["scores"] = {}
        item.pop("scoreDetails", None)
        item["error"] = error_message(error)
        item = _ordered_item(item)  # the body stopped anywhere: put the keys back in order
    attach_scope(item, scope)
    return item


def _note_timing(item: dict[str, Any], generation: TrackResult[Any], state: _RunState) -> None:
    """A measured generation's ``timing``, and its model latency samples for the run's summary."""
    if generation.timing:
        item["timing"] = generation.timing
    if generation.samples:
        with state.lock:
            for model, samples in generation.samples.items():
                state.samples.setdefault(model, []).extend(samples)


def _generation_failed(
    item: dict[str, Any], generation: TrackResult[Any], admission: AdmissionController | None
) -> None:
    """The outcome of an item whose workflow raised: budget-interrupted, cancelled or failed."""
    error = generation.error
    assert error is not None
    drop_traceback(error)
    if is_admission_denial(error) or (generation.ledger is not None and generation.ledger.denied > 0):
        # The second test: an SDK call the budget refused, whose made-up 402 reply the SDK
        # raised as its own error type.
        note_closure(admission, "operation")
        item["outcome"] = "budget_interrupted"
        item["error"] = "Budget interrupted"
    elif is_abort(error):
        item["outcome"] = "cancelled"
        item["error"] = "Cancelled"
    else:
        item["outcome"] = "failed"
        failure = describe_item_failure(error)
        if failure is not None:
            item["failure"] = failure
        item["error"] = error_message(error)
        note_closure(admission, "case")


def _workflow_result(value: Any) -> Mapping[str, Any]:
    """What ``execute_workflow`` returned, checked: a mapping with an ``output`` key."""
    if type(value) is not dict and not isinstance(value, Mapping):
        raise TypeError(
            f"execute_workflow must return a mapping with an output key, got {type(value).__name__}"
        )
    if "output" not in value:
        raise TypeError('execute_workflow returned a mapping without an "output" key')
    return value


def _note_claims(item: dict[str, Any], value: Mapping[str, Any], found: dict[str, Any] | None) -> None:
    """The workflow's own claims (``callerReport``) and its metadata, merged over the measured
    metadata ``found``."""
    report = _caller_report(value)
    if report:
        item["callerReport"] = report
    safe = _safe_metadata(value)
    if found is not None or safe:
        item["metadata"] = {**(found or {}), **json_safe(safe)}


_ITEM_ORDER = (
    "input",
    "annotations",
    "output",
    "scores",
    "duration",
    "timing",
    "traces",
    "outcome",
    "failure",
    "error",
    "callerReport",
    "metadata",
    "scoreDetails",
    "scorerErrors",
    "accounting",
    "cost",
    "scorerCost",
    "unpriced",
    "calls",
    "diagnostics",
    "repeats",
)


def _ordered_item(item: dict[str, Any]) -> dict[str, Any]:
    return {key: item[key] for key in _ITEM_ORDER if key in item}


def _caller_totals(items: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
    """``accounting.callerReported``: the callback's own claims summed in item order (spec §9)."""
    cost_items = metadata_items = 0
    cost_total = 0.0
    for item in items:
        report = item.get("callerReport")
        if report is None:
            continue
        if "cost" in report:
            cost_items += 1
            cost_total += report["cost"]
        if "metadata" in report:
            metadata_items += 1
    if not cost_items and not metadata_items:
        return None
    return {"costItems": cost_items, "costTotal": cost_total, "metadataItems": metadata_items}


def _caller_report(value: Mapping[str, Any]) -> dict[str, Any]:
    """Record the callback's own cost / reserved metadata claims (spec §9); never measurement."""
    report: dict[str, Any] = {}
    if "cost" in value:
        cost = value["cost"]
        if usable_number(cost):
            report["cost"] = cost
        else:
            warn(
                f"[axl-eval] ignoring invalid cost {cost!r} returned by execute_workflow "
                "(measured spend is unaffected)"
            )
    metadata = value.get("metadata", None) if "metadata" in value else None
    if "metadata" in value and type(metadata) is dict:
        reserved = {k: v for k, v in metadata.items() if k in RESERVED_METADATA_KEYS}
        if reserved:
            report["metadata"] = json_safe(reserved)
    elif "metadata" in value:
        warn(
            f"[axl-eval] ignoring execute_workflow metadata of type {type(metadata).__name__} "
            "(expected a plain dict)"
        )
    return report


def _safe_metadata(value: Mapping[str, Any]) -> dict[str, Any]:
    metadata = value.get("metadata")
    if type(metadata) is not dict:
        return {}
    return {k: v for k, v in metadata.items() if k not in RESERVED_METADATA_KEYS}


def run_eval(
    definition: EvalDefinition,
    runtime: Any = None,
    *,
    concurrency: int | None = None,
    on_progress: ProgressCallback | None = None,
    cancel_event: threading.Event | None = None,
    capture: CaptureSink | None = None,
    scorers_filter: Sequence[str] | None = None,
    shard: tuple[int, int] | None = None,
) -> Any:
    """Run an eval and return its :class:`~axl_action.schema.EvalResult`.

    ``runtime`` defaults to a fresh :class:`Runtime`. ``concurrency`` overrides the
    definition's. ``cancel_event`` stops starting new items and scorers once set (items not
    started become ``cancelled``). ``scorers_filter`` keeps only the named scorers (eval-file
    order) and stamps ``metadata.scorerFiltered`` / ``scorersRun``. ``shard=(i, n)`` runs the
    items with ``index % n == i - 1`` and stamps ``metadata.shard``.
    """
    from axl_action.schema import WIRE, EvalResult

    definition = apply_scorer_filter(definition, scorers_filter)
    wire = execute_eval(
        definition,
        runtime,
        concurrency=concurrency,
        on_progress=on_progress,
        cancel_event=cancel_event,
        capture=capture,
        shard=shard,
    )
    if scorers_filter is not None:
        stamp_scorer_filter(wire, definition)
    # WIRE keeps the per-outcome key order each item was built in.
    return EvalResult.model_validate(wire, context=WIRE)


def apply_scorer_filter(definition: EvalDefinition, names: Sequence[str] | None) -> EvalDefinition:
    """Keep only the named scorers, in eval-file order; unknown names raise ``UsageError``."""
    if names is None:
        return definition
    from dataclasses import replace

    from axl_action.errors import UsageError

    available = [s.name for s in definition.scorers]
    unknown = [n for n in names if n not in available]
    if unknown:
        raise UsageError(
            f"--scorers: unknown scorer(s): {', '.join(unknown)}. Available: {', '.join(available)}"
        )
    kept = [s for s in definition.scorers if s.name in names]
    if not kept:
        raise UsageError("--scorers matched no scorers.")
    return replace(definition, scorers=kept)


def stamp_scorer_filter(result: dict[str, Any], definition: EvalDefinition) -> None:
    """``metadata.scorerFiltered`` + ``scorersRun`` for a ``--scorers`` subset run.

    Stamps the wire data, which is what gets written; nothing the console reads changes.
    """
    result["metadata"]["scorerFiltered"] = True
    result["metadata"]["scorersRun"] = [s.name for s in definition.scorers]
