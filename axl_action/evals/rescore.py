"""``rescore``: run new scorers over the saved outputs of a result, without re-running the workflow.

Layout of the accounting scopes (spec §17)::

    rescore scope (purpose judging, admission = the rescore budget, capture sink)
    └─ item scope (judging)               one per completed source item, concurrently
       └─ scorer scope (judging)          one per scorer (the shared scoring loop)

Every unit of spend is new judging: the source run's spend is never added, only referenced
through ``accounting.source`` (its id and the original generation record). Source items that
errored are passed through unscored at a measured $0; there is no case-level budget admission,
so after the budget closes LLM scorers are ``budget_skipped`` while deterministic ones still run.
"""

from __future__ import annotations

import copy
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from axl_action.evals.capture_refs import RefCollector
from axl_action.evals.common import (
    attach_scope,
    empty_accounting_wire,
    measure_calls,
    note_unattributed,
    result_wire,
    scoring_env,
)
from axl_action.evals.continuation import Continuation
from axl_action.evals.pool import run_pool
from axl_action.evals.repeats import combine_repeats, in_repeat
from axl_action.evals.rescore_capture import begin_capture, finish_capture
from axl_action.evals.scorer import Scorer
from axl_action.evals.scoring import ScoringEnv, elapsed_ms, score_item
from axl_action.runtime.admission import AdmissionController, parse_budget
from axl_action.runtime.scope import CaptureSink, Scope, side_scope
from axl_action.schema.journal import RunFacts
from axl_action.schema.result import SequentialRecord
from axl_action.schema.view import build_summary, item_columns

if TYPE_CHECKING:
    from axl_action.schema import EvalResult

DEFAULT_CONCURRENCY = 5
"""Items rescored at once, and scorers per item, unless told otherwise."""

# A rescore is not a member of the source's --runs batch, and a --scorers stamp described the
# source's scorer set, not the new one.
_NOT_INHERITED = ("runGroupId", "runIndex", "scorerFiltered", "scorersRun")


@dataclass(frozen=True, slots=True)
class RescoreOptions:
    """How :func:`execute_rescore` runs: one settings object rather than a dozen parameters."""

    concurrency: int = DEFAULT_CONCURRENCY
    """Items rescored at once."""
    scorer_concurrency: int = DEFAULT_CONCURRENCY
    """Scorers run at once on one item."""
    cancel_event: threading.Event | None = None
    """Once set, stops admitting items (in-flight ones finish, scorers included)."""
    abort_event: threading.Event | None = None
    """Once set, also cancels the scorers in flight (without one, ``cancel_event`` does both)."""
    budget: str | None = None
    """Limit on the new judging spend (``"$1"``, ``"0.50"``)."""
    capture: CaptureSink | None = None
    """Receives the judge calls' request records."""
    source_records: Iterable[Mapping[str, Any]] | None = None
    """The source's request records, when it captured requests (see :func:`rescore`)."""
    result_id: str | None = None
    """The new result's id (default: a fresh UUID)."""
    continuation: Continuation | None = None
    """The journal's resume state, as for :func:`~axl_action.evals.runner.execute_run` (its
    ``on_abandoned`` is not called: a rescore's hard stop counts nothing in flight)."""


def rescore(
    result: EvalResult | Mapping[str, Any],
    scorers: Sequence[Scorer],
    runtime: Any = None,
    options: RescoreOptions | None = None,
    **settings: Any,
) -> EvalResult:
    """Re-score the outputs of ``result`` with ``scorers``; returns a new :class:`EvalResult`.

    The spec's ``rescore(result, scorers, runtime, options?)``: ``options`` is a
    :class:`RescoreOptions`, and keyword arguments set its fields one by one
    (``rescore(result, scorers, concurrency=2, budget="$1")``); an unknown one raises
    ``TypeError``.

    ``budget`` (``"$1"``, ``"0.50"``) limits only the new judging spend; an invalid one raises
    :class:`~axl_action.errors.BudgetError` before anything is scored. ``cancel_event`` stops
    starting new items and scorers once set. ``capture`` receives the judge calls' request
    records. When the source captured requests (``diagnostics.artifactId``), ``capture`` first
    receives a bounded copy of ``source_records`` (the source's records) and the items keep their
    ``diagnostics`` refs; ``source_records=None`` then means those records are gone: nothing is
    captured and ``diagnostics`` says ``unavailable``.
    """
    from axl_action.schema import WIRE, EvalResult

    options = replace(options or RescoreOptions(), **settings)
    # WIRE keeps each item's key order: the reference writes a different order per rule.
    return EvalResult.model_validate(execute_rescore(result, scorers, runtime, options), context=WIRE)


def execute_rescore(
    result: EvalResult | Mapping[str, Any],
    scorers: Sequence[Scorer],
    runtime: Any = None,
    options: RescoreOptions | None = None,
) -> dict[str, Any]:
    """:func:`rescore` returning ordered wire data, run as ``options`` say (see
    :class:`RescoreOptions`)."""
    options = options or RescoreOptions()
    concurrency, capture = options.concurrency, options.capture
    started = time.perf_counter()
    result_id = options.result_id or str(uuid.uuid4())
    admission = AdmissionController(parse_budget(options.budget)) if options.budget is not None else None
    source = _source_wire(result)
    continuation = options.continuation or Continuation()
    captured = begin_capture(source, capture, options.source_records)
    capture = captured.sink
    env, cancel = scoring_env(
        runtime, scorers, options, admission, options.scorer_concurrency, capture is not None
    )
    runtime, tracker, scorers = env.runtime, env.track_scope, env.scorers
    refs = RefCollector(capture) if capture is not None else None
    source_items: list[Mapping[str, Any]] = list(source.get("items") or [])
    rescored: list[dict[str, Any] | None] = [None] * len(source_items)
    todo = _restore(continuation, admission, rescored)
    looks = _decided_looks(source)
    on_settled = continuation.on_settled

    def process(k: int) -> None:
        index = todo[k]
        if cancel.is_set():
            rescored[index] = _cancelled(source_items[index])
            return
        item = _rescore_repeated(
            source_items[index],
            lambda original, carry: _rescore_item(index, original, env, carry_refs=carry),
            [s.name for s in scorers],
            carry_refs=captured.carried,
            cancelled=env.cancel_event.is_set,
            looks=looks,
        )
        if on_settled is not None:
            on_settled(index, item)
        rescored[index] = item

    stray: list[Scope[Any]] = []

    def run_items() -> None:
        # A custom scorer's own SDK calls are measured as a run's are (the judges' included).
        stray.append(side_scope("judging"))
        with measure_calls(runtime, stray[0]):
            run_pool(len(todo), concurrency, process, name="axl-eval-rescore")

    run_scope = tracker(
        run_items,
        purpose="judging",
        admission=admission,
        capture=refs,
    )
    if run_scope.status == "rejected":
        finish_capture(captured)
        assert run_scope.error is not None
        raise run_scope.error
    items = [item for item in rescored if item is not None]

    accounting = continuation.fold(dict(run_scope.accounting))
    note_unattributed(accounting, stray)
    if admission is not None:
        accounting["budget"] = admission.snapshot()
    if refs is not None:
        refs.attach(items)
    diagnostics = finish_capture(captured)
    return assemble_rescore(
        result_id,
        rescore_head(source, scorers, len(items)),
        {s.name: ("llm" if s.is_llm else "deterministic") for s in scorers},
        items,
        accounting,
        diagnostics=diagnostics,
        duration=elapsed_ms(started),
    )


def _restore(
    continuation: Continuation, admission: AdmissionController | None, rescored: list[dict[str, Any] | None]
) -> list[int]:
    """Put the items a resumed rescore already finished in place (their spend charged to the
    budget); return the indices left to rescore."""
    restored = continuation.completed
    continuation.charge(admission)
    for index, item in restored.items():
        rescored[index] = item
    return [i for i in range(len(rescored)) if i not in restored]


def rescore_facts(
    source: Mapping[str, Any], scorers: Sequence[Scorer], *, result_id: str, budget: str | None
) -> RunFacts:
    """What the journal records of a rescore before its first item: the new result's id, the
    scorers' identity, the item count and the budget."""
    from axl_action.evals.runner import scorer_identity

    types: dict[str, Any] = {s.name: ("llm" if s.is_llm else "deterministic") for s in scorers}
    dataset = source.get("dataset")
    return RunFacts(
        result_id=result_id,
        dataset=dataset if isinstance(dataset, str) else "",
        workflow="",
        scorer_types=types,
        fingerprint=scorer_identity(scorers, types),
        items=len(source.get("items") or []),
        item_error_limit=1.0,
        budget=budget,
    )


def rescore_head(source: Mapping[str, Any], scorers: Sequence[Scorer], count: int) -> dict[str, Any]:
    """The parts of a rescore's result fixed before any item is rescored (the journal keeps
    them): ``dataset``, ``metadata``, ``accounting.source`` and the source's timing."""
    source_summary = source.get("summary")
    if not isinstance(source_summary, Mapping):
        source_summary = {}
    return {
        "dataset": source.get("dataset"),
        "metadata": _metadata(source, scorers, count),
        "source": {"runId": source.get("id"), "generation": _generation(source)},
        "timing": source_summary.get("timing") or None,
        "modelTiming": copy.deepcopy(source_summary.get("modelTiming")) or None,
    }


def assemble_rescore(
    result_id: str,
    head: Mapping[str, Any],
    scorer_types: Mapping[str, str],
    items: list[dict[str, Any]],
    accounting: dict[str, Any],
    *,
    diagnostics: dict[str, Any] | None = None,
    duration: int | float = 0,
) -> dict[str, Any]:
    """A rescore's result from its head (:func:`rescore_head`), items and accounting (the
    rescore and ``axl-eval recover`` both build it here)."""
    budget = accounting.pop("budget", None)
    accounting.pop("scope", None)
    accounting["scope"] = "rescore"
    accounting["source"] = head.get("source")
    if budget is not None:
        accounting["budget"] = budget
    out = result_wire(
        result_id,
        head.get("dataset"),
        copy.deepcopy(dict(head.get("metadata") or {})),
        accounting,
        items,
        diagnostics=diagnostics,
        duration=duration,
    )
    # count, failures, coverage, scorers and the source's timing (no gates: spec §17). No
    # generation ran, so the source's wall-clock and provider latency are still the only
    # measurements of these outputs; modelTiming cannot be rebuilt from item sums.
    types = dict(scorer_types)
    out["summary"] = build_summary(
        item_columns(items, list(types)),
        types,
        timing=head.get("timing") or None,
        model_timing=head.get("modelTiming") or None,
    )
    return out


def _cancelled(original: Mapping[str, Any]) -> dict[str, Any]:
    # Lower-case "cancelled" and no cost views: the reference's exact shape for this rule.
    item = _head(original)
    item.update(
        {"error": "cancelled", "outcome": "cancelled", "accounting": empty_accounting_wire(), "scores": {}}
    )
    return item


def _source_wire(result: EvalResult | Mapping[str, Any]) -> Mapping[str, Any]:
    to_wire = getattr(result, "to_wire", None)
    if callable(to_wire):
        wire: Mapping[str, Any] = to_wire()
        return wire
    return result  # type: ignore[return-value]


def _head(original: Mapping[str, Any]) -> dict[str, Any]:
    """``input``, ``annotations``, ``output`` as the source had them (absent stays absent)."""
    return {key: original[key] for key in ("input", "annotations", "output") if key in original}


def _rescore_repeated(
    original: Mapping[str, Any],
    rescore_one: Callable[[Mapping[str, Any], bool], dict[str, Any]],
    names: Sequence[str],
    *,
    carry_refs: bool,
    cancelled: Callable[[], bool],
    looks: Mapping[str, int],
) -> dict[str, Any]:
    """An item as :func:`_rescore_item` rescores it; an item run ``repeats: N`` times has each
    repeat's output rescored (with that repeat's cache index, so ``--cache`` finds the judge
    replies the run recorded) and folded again by the runner's rule (``evals/repeats.py``), so
    its ``scores`` stay the mean over its repeats (under ``repeats: auto``, a decided scorer's
    over the repeats up to the look in ``looks`` that decided it, as the run folded it)."""
    runs = original.get("repeats")
    if not isinstance(runs, list) or not runs or cancelled():
        return rescore_one(original, carry_refs)
    parts: list[dict[str, Any]] = []
    for repeat, run in enumerate(runs):
        one = {**_head(original), **{k: run[k] for k in ("output", "error", "outcome") if k in run}}
        parts.append(in_repeat(repeat, rescore_one, one, False))
    item = combine_repeats(parts, names, {name: min(len(parts), look) for name, look in looks.items()})
    for key in ("metadata", "traces"):
        if key in original:
            item[key] = original[key]
    if carry_refs and "diagnostics" in original:
        item["diagnostics"] = copy.deepcopy(original["diagnostics"])
    return item


def _decided_looks(source: Mapping[str, Any]) -> dict[str, int]:
    """Scorer -> the look that decided it, for a ``repeats: auto`` result (else empty)."""
    metadata = source.get("metadata")
    raw = metadata.get("sequential") if isinstance(metadata, Mapping) else None
    if not isinstance(raw, Mapping):
        return {}
    record = SequentialRecord.model_validate(raw)
    return {name: decision.look for name, decision in record.decided.items()}


def _rescore_item(
    index: int,
    original: Mapping[str, Any],
    env: ScoringEnv,
    *,
    carry_refs: bool,
) -> dict[str, Any]:
    """The three per-item rules of spec §17, first match wins."""
    item = _head(original)
    if env.cancel_event.is_set():
        # Lower-case "cancelled" and no cost views: the reference's exact shape for this rule.
        item.update(
            {
                "error": "cancelled",
                "outcome": "cancelled",
                "accounting": empty_accounting_wire(),
                "scores": {},
            }
        )
        return item
    if original.get("error"):
        item["error"] = original["error"]
        if original.get("outcome"):
            item["outcome"] = original["outcome"]
        if original.get("failure"):
            item["failure"] = original["failure"]
        # Both compat views as a measured $0, so no reader falls back to the legacy fields
        # and reports the source run's spend as this rescore's.
        item.update({"accounting": empty_accounting_wire(), "cost": 0, "scorerCost": 0, "scores": {}})
        return item

    for key in ("metadata", "traces"):
        if key in original:
            item[key] = original[key]
    item["outcome"] = "completed"
    if carry_refs and "diagnostics" in original:
        # Verbatim, original operation ids included: the copied records still carry them.
        item["diagnostics"] = copy.deepcopy(original["diagnostics"])
    item["scores"] = {}
    item["scoreDetails"] = {}
    output = original.get("output")
    input_ = original.get("input")
    annotations = original.get("annotations")
    scope = env.track_scope(
        lambda: score_item(item, output, input_, annotations, env),
        purpose="judging",
        capture_correlation={"caseIndex": index} if env.capturing else None,
    )
    if scope.status == "rejected":
        # score_item handles every scorer failure itself: this is a bug, not an item outcome.
        assert scope.error is not None
        raise scope.error
    attach_scope(item, scope)
    return item


def _generation(source: Mapping[str, Any]) -> Any:
    """The original generation run's accounting: carried through rescores of rescores, the
    source's own record otherwise, ``None`` for a legacy source (never synthesized)."""
    accounting = source.get("accounting")
    if not isinstance(accounting, Mapping):
        return None
    if accounting.get("scope") == "rescore":
        provenance = accounting.get("source")
        return copy.deepcopy(provenance.get("generation")) if isinstance(provenance, Mapping) else None
    return copy.deepcopy(dict(accounting))


def _metadata(source: Mapping[str, Any], scorers: Sequence[Scorer], count: int) -> dict[str, Any]:
    inherited = source.get("metadata")
    rest = copy.deepcopy(dict(inherited)) if isinstance(inherited, Mapping) else {}
    for key in _NOT_INHERITED:
        rest.pop(key, None)
    # An existing key keeps its position (as the reference's object spread does).
    metadata = {
        **rest,
        "rescored": True,
        "originalId": source.get("id"),
        "scorerTypes": {s.name: ("llm" if s.is_llm else "deterministic") for s in scorers},
    }
    workflow = source.get("workflow")
    if not isinstance(metadata.get("workflows"), list) and isinstance(workflow, str) and workflow:
        # Pre-0.14 files named the workflow at the top level only.
        metadata["workflows"] = [workflow]
        metadata["workflowCounts"] = {workflow: count}
    return metadata
