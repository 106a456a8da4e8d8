"""The axl-eval 0.24 result artifact (runner spec §14), readable for pre-0.24 files too.

Fields that pre-0.24 files lack are optional here; ``EvalResult.is_legacy`` tells the two
apart, and the reader rules for legacy files live in ``outcomes.py`` and ``accounting.py``.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import (
    Field,
    PrivateAttr,
    SerializerFunctionWrapHandler,
    ValidationError,
    field_validator,
    model_serializer,
)

from axl_action.schema.accounting import Accounting, EvalAccounting
from axl_action.schema.base import CompleteWireModel, OrderedWireModel, WireModel
from axl_action.schema.sources import CarriedOver, EvalSources

ItemOutcome = Literal["completed", "failed", "cancelled", "budget_skipped", "budget_interrupted"]
ScorerOutcome = Literal["scored", "failed", "skipped", "cancelled", "budget_skipped", "budget_interrupted"]


class OperationRef(WireModel):
    """A pointer from an item or scorer into the request-capture sidecar."""

    operation_id: str
    """Id of the captured operation (matches ``operationId`` in the JSONL sidecar)."""
    kind: str
    """``chat`` or ``stream``."""
    turn: int | None = None
    """Turn number within a multi-turn operation."""
    attempt: int | None = None
    """Transport attempt number."""
    status: str
    """``recorded``, ``start_only``, ``truncated`` or ``omitted``."""


class ItemDiagnostics(WireModel):
    """Captured operation references of an item or a scorer."""

    operations: list[OperationRef]
    """References in capture order."""


class ScorerDetail(WireModel):
    """One scorer's verdict on one item (runner spec §14.3)."""

    score: float | None = None
    """Rounded score in [0, 1], or null when the scorer did not produce one."""
    metadata: dict[str, Any] | None = None
    """Extra fields the scorer returned (a judge's ``reasoning`` lives here)."""
    duration: float | None = None
    """Milliseconds the scorer ran; absent when it never started."""
    skipped: bool | None = None
    """``true`` when ``applies`` returned false."""
    accounting: Accounting | None = None
    """The scorer scope's record, when it measured any operation."""
    cost: float | None = None
    """Known cost of this scorer on this item."""
    outcome: ScorerOutcome | None = None
    """scored / failed / skipped / cancelled / budget_skipped / budget_interrupted (0.24)."""
    diagnostics: ItemDiagnostics | None = None
    """Captured operation refs of this scorer (capture on)."""


class ItemFailure(WireModel):
    """Structured cause of a failed item (runner spec §11)."""

    name: str
    """Error class name, e.g. ``ProviderError`` or ``RangeError``."""
    provider: str | None = None
    """Provider of a ProviderError."""
    status: float | None = None
    """HTTP status of a ProviderError; 0 means a network-level failure."""
    retryable: bool | None = None
    """Whether the provider said the call could be retried."""
    request_id: str | None = None
    """Provider request id, for support tickets."""


class CallerReport(WireModel):
    """What the workflow claimed about itself (never used as the measurement)."""

    cost: float | None = None
    """Claimed cost in USD."""
    metadata: dict[str, Any] | None = None
    """Reserved metadata keys (models, tokens, ...) the workflow returned."""


class ItemModelTiming(WireModel):
    """Per-model timing sums of one item's generation calls (runner spec §12.2)."""

    calls: int
    """Timed successful calls."""
    queued_ms: float
    """Milliseconds waiting for a concurrency slot."""
    retry_ms: float
    """Milliseconds spent in retry backoff."""
    wire_ms: float
    """Milliseconds on the wire."""
    first_token_ms: float | None = None
    """Sum of time-to-first-token over calls that reported one."""
    first_token_calls: int | None = None
    """Number of calls behind ``firstTokenMs``."""


class ItemCall(WireModel):
    """One model call an item made (``EvalItem.calls``; an axl-action extension a 0.24 reader
    ignores): ``runtime.chat``, a judge, or the app's own SDK call, one per logical call."""

    operation_id: str
    """The operation's id (``operationId`` of its record in the capture sidecar)."""
    model: str
    """``provider:model``, as priced: the model the reply names, else the request's."""
    kind: str
    """``chat``, ``stream``, ``embedding`` or ``transcription``."""
    purpose: str
    """``generation`` or ``judging``."""
    outcome: Literal["settled", "failed", "unknown", "replayed"]
    """``settled`` at ``cost``; ``failed`` (its last attempt got a 4xx/5xx: free); ``unknown``
    (no usable cost, see ``reason``); ``replayed`` from the response cache (billed $0)."""
    reason: str | None = None
    """Why an ``unknown`` call has no cost (``usage_missing``, ``unpriced_model``, ...)."""
    cost: float | None = None
    """USD the call was settled at."""
    certified_cost: float | None = None
    """A replayed call's cost when it was made (null: it had no price then)."""
    input_tokens: float | None = None
    """Prompt tokens the reply reported."""
    output_tokens: float | None = None
    """Completion tokens the reply reported."""
    wire_ms: float | None = None
    """Milliseconds on the wire over all attempts (timed successful calls)."""
    first_token_ms: float | None = None
    """Milliseconds to the first streamed content."""
    attempts: int | None = None
    """HTTP attempts, retries included."""
    tools: list[str] | None = None
    """Tools the reply asked the app to call, in order."""
    repeat: int | None = None
    """The repeat that made it, on an item run ``repeats: N`` times."""


class ItemRepeat(WireModel):
    """One repeat of an item run ``repeats: N`` times (``EvalItem.repeats``; an axl-action
    extension a 0.24 reader ignores). Each field means what the item's field of that name means."""

    output: Any = None
    """The repeat's output."""
    scores: dict[str, float | None] = Field(default_factory=dict)
    """Its score per scorer."""
    duration: float | None = None
    """Its workflow milliseconds."""
    outcome: ItemOutcome | None = None
    """Its outcome."""
    error: str | None = None
    """Its error, when it did not complete."""
    score_details: dict[str, ScorerDetail] | None = None
    """Its per-scorer details."""
    scorer_errors: list[str] | None = None
    """Messages of its failed scorers."""
    cost: float | None = None
    """Its generation cost."""
    scorer_cost: float | None = None
    """Its judging cost."""


class EvalItem(OrderedWireModel):
    """One dataset item's run (runner spec §14.2)."""

    input: Any = None
    """The dataset item's input."""
    annotations: Any = None
    """The dataset item's annotations (ground truth); absent when it had none."""
    output: Any = None
    """The workflow's output; null unless the item completed."""
    scores: dict[str, float | None] = Field(default_factory=dict)
    """Score per scorer (null when it produced none); empty unless completed."""
    duration: float | None = None
    """Milliseconds of workflow time (scoring excluded); absent on stubs."""
    timing: dict[str, ItemModelTiming] | None = None
    """Per-model timing sums of the generation."""
    traces: list[Any] | None = None
    """Trace events, when trace capture was on."""
    outcome: ItemOutcome | None = None
    """completed / failed / cancelled / budget_skipped / budget_interrupted (0.24)."""
    failure: ItemFailure | None = None
    """Structured cause of a failed item."""
    error: str | None = None
    """Error message of every non-completed item."""
    caller_report: CallerReport | None = None
    """Caller claims of a completed item."""
    metadata: dict[str, Any] | None = None
    """Measured (and safe caller) metadata of a completed item."""
    score_details: dict[str, ScorerDetail] | None = None
    """Per-scorer details of a completed item."""
    scorer_errors: list[str] | None = None
    """Messages of failed scorers, in scorer order."""
    accounting: Accounting | None = None
    """The item scope's record (0.24)."""
    cost: float | None = None
    """Generation cost (= ``accounting.breakdown.generation`` in 0.24)."""
    scorer_cost: float | None = None
    """Judging cost (= ``accounting.breakdown.judging`` in 0.24)."""
    unpriced: bool | None = None
    """``true`` when the item's accounting is not complete."""
    calls: list[ItemCall] | None = None
    """The model calls the item made, generation and judging, in the order they were opened
    (an axl-action extension; the HTML report's item detail lists them)."""
    diagnostics: ItemDiagnostics | None = None
    """Captured operation refs of the generation."""
    repeats: list[ItemRepeat] | None = None
    """Each repeat, in order, when the item ran ``repeats: N`` times (``evals/repeats.py``):
    ``scores`` then hold the mean."""

    @property
    def bucket(self) -> str:
        """Coverage bucket: the outcome, or for legacy items ``failed`` if it has an error."""
        if self.outcome is not None:
            return self.outcome
        return "failed" if self.error else "completed"


class Stats(WireModel):
    """Five-number summary, each rounded to 3 decimals."""

    mean: float
    """Arithmetic mean."""
    min: float
    """Smallest value."""
    max: float
    """Largest value."""
    p50: float
    """``sorted[floor(n/2)]``."""
    p95: float
    """``sorted[floor(n*0.95)]``."""


class ScorerStats(Stats):
    """Per-scorer summary: stats over scored items plus outcome counts."""

    scored: int | None = None
    """Items with a valid score (absent before 0.18)."""
    failed: int | None = None
    """Items where the scorer failed."""
    skipped: int | None = None
    """Items where ``applies`` returned false."""


class ItemCoverage(CompleteWireModel):
    """Items per outcome; always all five keys."""

    completed: int = 0
    """Items whose workflow returned."""
    failed: int = 0
    """Items whose workflow raised."""
    cancelled: int = 0
    """Items cancelled by a signal."""
    budget_skipped: int = Field(0, alias="budget_skipped")
    """Items never started because the budget had closed."""
    budget_interrupted: int = Field(0, alias="budget_interrupted")
    """Items stopped mid-flight by the budget."""


class ScorerCoverage(CompleteWireModel):
    """Scorer details per outcome; always all six keys."""

    scored: int = 0
    """Valid scores."""
    failed: int = 0
    """Scorer failures."""
    skipped: int = 0
    """``applies`` returned false."""
    cancelled: int = 0
    """Cancelled before or while scoring."""
    budget_skipped: int = Field(0, alias="budget_skipped")
    """LLM scorers not started because the budget had closed."""
    budget_interrupted: int = Field(0, alias="budget_interrupted")
    """Scorers whose paid operation was refused."""


class Coverage(WireModel):
    """What ran and what did not (runner spec §6.3)."""

    items: ItemCoverage
    """Item outcome counts."""
    scorers: dict[str, ScorerCoverage]
    """Scorer outcome counts, one entry per configured scorer."""


class ItemErrorRate(WireModel):
    """The item error-rate gate's figures (runner spec §10.1)."""

    failed: int
    """Failed items."""
    attempted: int
    """Items attempted: count minus cancelled and budget-stopped."""
    rate: float
    """failed / attempted (0 when nothing was attempted), unrounded."""
    limit: float
    """The configured limit."""
    exceeded: bool
    """``attempted > 0 and rate > limit``."""


class DegradedScorer(WireModel):
    """A scorer whose error rate exceeded its tolerance (runner spec §10.2)."""

    scorer: str
    """Scorer name."""
    rate: float
    """failed / (scored + failed)."""
    limit: float
    """Tolerance: 0 for deterministic scorers, the configured rate for LLM scorers."""
    type: Literal["llm", "deterministic"]
    """Scorer type."""
    scored: int
    """Scored count."""
    failed: int
    """Failed count."""


class ModelTimingStats(WireModel):
    """Per-call timing distribution of one model (runner spec §12.3)."""

    calls: int
    """Number of timed successful calls."""
    wire_ms: Stats | float | None = None
    """Wire-time distribution (a number in some early 0.2x files)."""
    queued_ms: Stats | float | None = None
    """Queue-time distribution."""
    retry_ms: Stats | None = None
    """Retry-backoff distribution."""
    rate_limit_retries: int | None = None
    """Rate-limit retries summed over calls (always present in 0.24)."""
    first_token_ms: Stats | None = None
    """Time-to-first-token distribution over calls that reported one."""
    first_token_calls: int | None = None
    """Calls behind ``firstTokenMs``."""


class EvalSummary(WireModel):
    """Run summary (runner spec §14.4)."""

    count: int
    """Number of dataset items."""
    failures: int
    """Items with an error (failed, cancelled and budget-stopped alike)."""
    coverage: Coverage | None = None
    """Outcome counts (0.24); derive from items for legacy files."""
    scorers: dict[str, ScorerStats]
    """Per-scorer stats, in scorer order."""
    timing: Stats | None = None
    """Item duration stats over error-free items."""
    model_timing: dict[str, ModelTimingStats] | None = None
    """Per-model call timing."""
    degraded: list[DegradedScorer] | None = None
    """Scorers over their error tolerance (gate configured and tripped)."""
    item_error_rate: ItemErrorRate | None = None
    """Item error-rate figures, present when at least one item failed."""


class DiagnosticManifest(WireModel):
    """Request-capture manifest (runner spec §16)."""

    version: int = 1
    """Manifest version."""
    artifact_id: str
    """Id of the capture artifact; empty when unavailable."""
    fidelity: str = "runtime_request"
    """What was captured."""
    status: Literal["complete", "truncated", "interrupted", "unavailable"]
    """Capture status."""
    reason: str | None = None
    """Why the capture is not complete."""
    records: int
    """Records captured."""
    bytes: int
    """Bytes captured."""
    redaction: Literal["applied", "none"]
    """Whether secrets/content redaction was applied."""
    expires_at: str | None = None
    """When the artifact expires."""


class SequentialDecision(WireModel):
    """When ``repeats: auto`` decided a scorer (``metadata.sequential.decided[name]``)."""

    look: int = Field(ge=1)
    """The look (= round) that decided it: its item means are over that many repeats at most."""
    verdict: Literal["regressed", "improved", "unchanged"]
    """The verdict that look reached."""


class SequentialRecord(WireModel):
    """``metadata.sequential``: how a ``repeats: auto`` run spent its repeats (an axl-action
    extension a 0.24 reader ignores; ``evals/sequential.py`` has the rule)."""

    method: Literal["bonferroni-looks"] = "bonferroni-looks"
    """The error-spending rule: every look at ``lookAlpha`` = ``alpha`` / ``maxRepeats``."""
    max_repeats: int = Field(ge=1)
    """The cap on an item's repeats, and so on the looks."""
    alpha: float = Field(gt=0, lt=1)
    """The error rate spent over all looks."""
    look_alpha: float = Field(gt=0, lt=1)
    """The level of each look; ``compare`` uses it for this run's intervals."""
    looks: int = Field(ge=0)
    """Looks (rounds) taken."""
    mean_repeats: float = Field(ge=0)
    """Repeats per item on average."""
    repeats_run: int = Field(ge=0)
    """Repeats run in all (the calls ``repeats: maxRepeats`` would make: items x maxRepeats)."""
    decided: dict[str, SequentialDecision] = Field(default_factory=dict)
    """The scorers decided, by name."""
    open: list[str] = Field(default_factory=list)
    """The scorers still open when the rounds stopped (cap, budget, cancel)."""
    baseline: bool = True
    """Whether there was a baseline to compare with (without one every item runs the cap)."""
    note: str | None = None
    """Why the rounds ran without comparing, when they did."""


_EXTENSIONS: dict[str, type[WireModel]] = {
    "sequential": SequentialRecord,
    "sources": EvalSources,
    "carriedOver": CarriedOver,
}
"""Our own ``metadata`` keys, each checked by its model where the file is read."""


class RunHeader(CompleteWireModel):
    """Everything of one eval run except its items: what a run view carries beside its columns.

    :class:`EvalResult` is a ``RunHeader`` plus ``items``; a run read for comparison keeps only
    this header and the columns of its items (:class:`~axl_action.schema.view.RunView`).
    """

    id: str
    """Random UUID of the run."""
    dataset: str
    """Dataset name."""
    metadata: dict[str, Any] = Field(default_factory=dict)
    """Config metadata plus roll-ups: scorerTypes, models, workflows, fingerprint, ..."""
    timestamp: str
    """ISO-8601 UTC time the result was built."""
    total_cost: float = 0
    """= ``accounting.knownCost`` in 0.24; the legacy sum in older files."""
    unpriced: bool | None = None
    """``true`` when the accounting is not complete."""
    accounting: EvalAccounting | None = None
    """Run accounting (0.24); absent in legacy files."""
    diagnostics: DiagnosticManifest | None = None
    """Request-capture manifest, when capture was on."""
    duration: float = 0
    """Whole-run milliseconds, scoring included."""
    summary: EvalSummary
    """Run summary."""

    @field_validator("metadata")
    @classmethod
    def _known_extensions(cls, value: dict[str, Any]) -> dict[str, Any]:
        # Our own extension keys are checked where the file is read, with the reader's path.
        for key, model in _EXTENSIONS.items():
            raw = value.get(key)
            if raw is None:
                continue
            try:
                model.model_validate(raw)
            except ValidationError as err:
                first = err.errors()[0]
                where = ".".join(str(part) for part in (key, *first["loc"]))
                raise ValueError(f"{where}: {first['msg']}") from None
        return value

    @property
    def sequential(self) -> SequentialRecord | None:
        """``metadata.sequential`` of a ``repeats: auto`` run (None for any other run)."""
        raw = self.metadata.get("sequential")
        return SequentialRecord.model_validate(raw) if raw is not None else None

    @property
    def sources(self) -> EvalSources | None:
        """``metadata.sources``: the local files the eval used (None when not recorded)."""
        raw = self.metadata.get("sources")
        return EvalSources.model_validate(raw) if raw is not None else None

    @property
    def carried_over(self) -> CarriedOver | None:
        """``metadata.carriedOver`` of a result a scoped run copied from its baseline."""
        raw = self.metadata.get("carriedOver")
        return CarriedOver.model_validate(raw) if raw is not None else None

    @property
    def is_legacy(self) -> bool:
        """True for pre-0.24 files (no accounting record)."""
        return self.accounting is None

    @property
    def scorer_names(self) -> list[str]:
        """Configured scorers, in order."""
        return list(self.summary.scorers)

    @property
    def scorer_types(self) -> dict[str, str]:
        """``metadata.scorerTypes`` (empty when the file has none)."""
        types = self.metadata.get("scorerTypes")
        return dict(types) if isinstance(types, dict) else {}


class ColumnCache:
    """The item columns read from the same JSON a result was validated from, and the item
    list they describe (see ``EvalResult``). A cache, not part of the result's value: it
    compares equal to any other cache and to none, so it never changes whether two results
    are equal."""

    __slots__ = ("columns", "items")

    def __init__(self, items: list[Any], columns: Any) -> None:
        self.items = items
        self.columns = columns

    def __eq__(self, other: object) -> bool:
        return other is None or isinstance(other, ColumnCache)

    __hash__ = None  # type: ignore[assignment]


class EvalResult(RunHeader):
    """One eval run: the top-level object of a results file (runner spec §14.1)."""

    items: list[EvalItem]
    """Items in dataset order."""

    # Set by the file reader: dumping 10,000 item models again just to count them took longer
    # than reading the file. A copy given other items (``model_copy(update=...)``) holds
    # another list and is counted from its models. Not part of the wire format.
    _columns: ColumnCache | None = PrivateAttr(default=None)

    @model_serializer(mode="wrap")
    def _items_before_summary(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # The wire order is ``..., duration, items, summary``; inheritance declares items last.
        data: dict[str, Any] = handler(self)
        if "summary" not in data or "items" not in data:
            return data
        ordered: dict[str, Any] = {}
        for key, value in data.items():
            if key != "summary":
                ordered[key] = value
            if key == "items":
                ordered["summary"] = data["summary"]
        return ordered
