"""The result of comparing two eval runs, and the verdicts of the gates applied to it.

``Comparison`` mirrors the TypeScript ``EvalComparison`` (``evalCompare`` in ``@axlsdk/eval``
0.24): ``to_wire()`` emits the same camelCase keys in the same order, leaving out the keys TS
leaves ``undefined`` and writing ``null`` only where TS does (``cost.deltaPercent`` for a $0
baseline). Fields marked *extra* are ours; they follow the TS keys in each object.

``GateReport`` is what the console, the report renderer and the Action read to decide the
exit code: an ordered list of named gates, each with a limit, an observed value, a status and
a sentence explaining it.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Literal, get_args, overload

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, SkipValidation
from pydantic.alias_generators import to_camel

Verdict = Literal["regressed", "improved", "unchanged", "inconclusive"]
"""Per-scorer verdict: ``regressed``/``improved`` = significant in the TS sense (CI excludes 0
and |mean difference| >= threshold; with ``--holm`` also Holm-significant); ``unchanged`` = the
whole CI lies inside [-threshold, +threshold]; ``inconclusive`` = anything else (the CI
straddles a threshold, or fewer than two paired samples)."""

ThresholdSource = Literal["global", "override", "llm", "deterministic", "legacy", "history"]
"""Where a scorer's threshold came from (spec §2.4): ``--threshold V``, ``--threshold name=V``,
the LLM default 0.05, the deterministic default 0, or the legacy 0.1 (baseline lacks
``scorerTypes`` for this scorer); ``history``: ``--threshold auto``, the scorer's noise band
measured from the baseline history (``axl_action.history.noise``)."""

GateName = Literal[
    "budget", "item-error-rate", "scorer-error-rate", "regressions", "cost", "compatibility", "pass-rate"
]
"""``pass-rate`` is in a report only when ``--min-pass-rate`` enabled it (last)."""
GateStatus = Literal["pass", "fail", "warn", "refused", "skipped"]
"""``pass``: checked and fine. ``fail``: checked and over the limit (exit 1). ``refused``: the
comparison cannot be trusted enough to judge (exit 1, printed as "Refusing to gate"). ``warn``:
worth reading, never changes the exit code. ``skipped``: not enabled or nothing to check."""


# Per class: (field name, wire name, write None as null, may hold models) in declaration order.
_WIRE_LAYOUT: dict[type[BaseModel], tuple[tuple[str, str, bool, bool], ...]] = {}


def _holds_models(annotation: Any) -> bool:
    """Whether a field's type can contain an OutputModel or an ItemChange (else plain JSON)."""
    if isinstance(annotation, type) and (
        issubclass(annotation, BaseModel) or annotation is ItemChange or annotation is ItemChanges
    ):
        return True
    return any(_holds_models(arg) for arg in get_args(annotation))


class OutputModel(BaseModel):
    """Base: snake_case in Python, camelCase on the wire; ``None`` means absent unless listed."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, frozen=False, defer_build=True)

    # Fields whose None is written as JSON null instead of being left out.
    _nullable_on_wire: ClassVar[frozenset[str]] = frozenset()

    def to_wire(self) -> dict[str, Any]:
        """JSON-ready dict in TS key order (declaration order), None fields omitted."""
        cls = type(self)
        layout = _WIRE_LAYOUT.get(cls)
        if layout is None:
            layout = _WIRE_LAYOUT[cls] = tuple(
                (name, field.alias or name, name in cls._nullable_on_wire, _holds_models(field.annotation))
                for name, field in cls.model_fields.items()
            )
        values = self.__dict__
        out: dict[str, Any] = {}
        for name, alias, keep_none, nested in layout:
            value = values[name]
            if value is None:
                if keep_none:
                    out[alias] = None
                continue
            # Plain JSON data (item inputs, metadata) is passed through without copying.
            out[alias] = _wire(value) if nested else value
        return out


def _wire(value: Any) -> Any:
    if isinstance(value, OutputModel | ItemChange | ItemChanges):
        return value.to_wire()
    if isinstance(value, dict):
        return {k: _wire(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_wire(v) for v in value]
    return value


# ---------------------------------------------------------------- sides


class PartialBatch(OutputModel):
    """A side that came from a ``--runs N`` batch that stopped early (spec §2.13)."""

    completed: int
    """Runs present in the file."""
    attempted: int
    """Runs the batch set out to do (``metadata.batchAttempted``)."""


class SideInfo(OutputModel):
    """Identity of one side of the comparison."""

    id: str
    """``id`` of the side's first run."""
    metadata: dict[str, Any]
    """``metadata`` of the side's first run, passed through untouched."""
    run_count: int
    """Runs compared (the common run count after truncation; same on both sides)."""
    partial: PartialBatch | None = None
    """Present when the file holds fewer runs than its batch attempted."""
    runs_available: int | None = None
    """*extra*: runs in the file before truncation to the common run count."""


# ---------------------------------------------------------------- scorers


class ConfidenceInterval(OutputModel):
    """Paired bootstrap percentile CI of the mean score difference (candidate - baseline)."""

    lower: float
    """Lower bound, 4 decimals."""
    upper: float | None
    """Upper bound, 4 decimals (None only with a single resample, as in TS)."""

    _nullable_on_wire: ClassVar[frozenset[str]] = frozenset({"upper"})


class ScorerComparison(OutputModel):
    """Per-scorer block. TS keys first (spec §2.6-2.8), then our extras."""

    baseline_mean: float
    """Mean over baseline runs of each run's summary mean, 3 decimals."""
    candidate_mean: float
    """Same for the candidate."""
    delta: float
    """round3(candidate mean - baseline mean) of the unrounded means."""
    delta_percent: float
    """Delta as % of the baseline mean (3 decimals); 0 when the baseline mean is <= 0."""
    baseline_scored: int
    """Baseline items with a score, summed over runs."""
    baseline_failed: int
    """Baseline items whose scorer failed (threw / invalid score)."""
    candidate_scored: int
    """Candidate items with a score."""
    candidate_failed: int
    """Candidate items whose scorer failed."""
    baseline_skipped: int
    """Baseline items the scorer did not apply to (N/A)."""
    candidate_skipped: int
    """Candidate items the scorer did not apply to (N/A)."""
    n: int
    """Paired differences (items scored on both sides, neither side errored), pooled over runs."""
    ci: ConfidenceInterval | None = None
    """Bootstrap CI; present iff n >= 2."""
    p_regression: float | None = None
    """Share of resample means < 0 (4 decimals); present iff n >= 2."""
    p_improvement: float | None = None
    """Share of resample means > 0 (4 decimals); present iff n >= 2."""
    significant: bool | None = None
    """TS rule: CI excludes 0 and |bootstrap mean| >= threshold; present iff n >= 2."""
    # ---- extras
    threshold: float
    """*extra*: the threshold used for this scorer (spec §2.4). NaN when the flag was garbage."""
    threshold_source: ThresholdSource
    """*extra*: where the threshold came from."""
    scorer_type: Literal["llm", "deterministic", "unknown"]
    """*extra*: the baseline's ``metadata.scorerTypes`` entry (``unknown`` when absent)."""
    mean_difference: float | None = None
    """*extra*: mean of the paired differences (4 decimals), the CI's centre; iff n >= 2."""
    verdict: Verdict
    """*extra*: regressed / improved / unchanged / inconclusive (see ``Verdict``)."""
    mde: float | None = None
    """*extra*: minimum detectable effect at this n: (z(1-alpha/2) + z(0.8)) * sd(diffs) / sqrt(n),
    i.e. the smallest true mean difference a two-sided paired test at this alpha would detect
    with 80% power (normal approximation, sample sd with n-1). Rounded to 4 decimals; iff n >= 2."""
    p_value: float | None = None
    """*extra*: two-sided bootstrap p-value, 2 * (min(#means <= 0, #means >= 0) + 1) / (R + 1),
    capped at 1 (the +1 keeps it from claiming p = 0 from finitely many resamples); iff n >= 2."""
    holm_p_value: float | None = None
    """*extra*: Holm-adjusted p-value across the scorers that have a CI; only with ``--holm``."""
    holm_significant: bool | None = None
    """*extra*: ``significant`` and Holm rejects at alpha; only with ``--holm``."""

    @property
    def from_zero(self) -> bool:
        """The baseline mean is 0 and the score moved: no percentage of 0 exists, so the wire's
        ``deltaPercent`` 0 is shown as "new (from 0)" (or no percent), never as "+0.0%"."""
        return self.baseline_mean <= 0 and self.delta != 0 and self.delta_percent == 0


# ---------------------------------------------------------------- items, timing, cost


@dataclass(frozen=True, slots=True)
class ItemChange:
    """One (item, scorer) pair whose averaged score moved by more than the threshold.

    A plain frozen dataclass, not a model: a large comparison builds hundreds of thousands of
    them from values the engine has already typed, and validating each would dominate its
    run time. ``Comparison`` holds them without revalidating (``SkipValidation``).
    """

    item_index: int
    """Index of the item in the baseline's first run."""
    input: Any
    """The baseline item's input."""
    scorer: str
    """Scorer name."""
    baseline_score: float
    """Baseline score averaged over runs, 3 decimals."""
    candidate_score: float
    """Candidate score averaged over runs, 3 decimals."""
    delta: float
    """round3(candidate - baseline)."""
    candidate_index: int | None = None
    """*extra*: index of the matched candidate item when items were matched by key and it differs."""
    key: str | None = None
    """*extra*: the item key used for matching (only when matching by key)."""

    def to_wire(self) -> dict[str, Any]:
        """The TS keys in TS order, then the extras when set."""
        out: dict[str, Any] = {
            "itemIndex": self.item_index,
            "input": self.input,
            "scorer": self.scorer,
            "baselineScore": self.baseline_score,
            "candidateScore": self.candidate_score,
            "delta": self.delta,
        }
        if self.candidate_index is not None:
            out["candidateIndex"] = self.candidate_index
        if self.key is not None:
            out["key"] = self.key
        return out


class ItemChanges(Sequence[ItemChange]):
    """Item-level changes held as columns; an :class:`ItemChange` is built only when read.

    A comparison of noisy 100,000-item runs has hundreds of thousands of changes, and most
    readers want only their number (the console, the gates) or the first few (the report);
    building every record up front cost more than the bootstrap. Indexing and iteration give
    ``ItemChange`` records; :meth:`to_wire` writes them all for ``--json``.
    """

    __slots__ = (
        "_baseline_score",
        "_candidate_index",
        "_candidate_score",
        "_delta",
        "_index",
        "_inputs",
        "_key_at",
        "_keys",
        "_names",
        "_scorer",
    )

    def __init__(
        self,
        *,
        item_index: npt.NDArray[np.intp],
        scorer: npt.NDArray[np.intp],
        names: Sequence[str],
        baseline_score: npt.NDArray[np.float64],
        candidate_score: npt.NDArray[np.float64],
        delta: npt.NDArray[np.float64],
        inputs: Sequence[Any],
        candidate_index: npt.NDArray[np.intp] | None = None,
        key_at: npt.NDArray[np.intp] | None = None,
        keys: Sequence[str] | None = None,
    ) -> None:
        """``item_index``: baseline item per change; ``scorer``: index into ``names``;
        ``inputs``: the baseline's item inputs (by item index); ``candidate_index``: the
        matched candidate item per change, -1 where it is the same index (matching by key
        only); ``key_at`` with ``keys``: each change's item key (matching by key only)."""
        self._index = item_index
        self._scorer = scorer
        self._names = tuple(names)
        self._baseline_score = baseline_score
        self._candidate_score = candidate_score
        self._delta = delta
        self._inputs = inputs
        self._candidate_index = candidate_index
        self._key_at = key_at
        self._keys = keys

    @classmethod
    def none(cls) -> ItemChanges:
        """No changes."""
        empty = np.empty(0, dtype=np.intp)
        zeros = np.empty(0, dtype=np.float64)
        return cls(
            item_index=empty,
            scorer=empty,
            names=(),
            baseline_score=zeros,
            candidate_score=zeros,
            delta=zeros,
            inputs=(),
        )

    def __len__(self) -> int:
        return len(self._index)

    @overload
    def __getitem__(self, at: int) -> ItemChange: ...

    @overload
    def __getitem__(self, at: slice) -> list[ItemChange]: ...

    def __getitem__(self, at: int | slice) -> ItemChange | list[ItemChange]:
        if isinstance(at, slice):
            return list(self._records(*at.indices(len(self))))
        if at < 0:
            at += len(self)
        if not 0 <= at < len(self):
            raise IndexError("item change index out of range")
        return next(self._records(at, at + 1, 1))

    def __iter__(self) -> Iterator[ItemChange]:
        return self._records(0, len(self), 1)

    def _records(self, start: int, stop: int, step: int) -> Iterator[ItemChange]:
        part = slice(start, stop, step)
        inputs, names, keys = self._inputs, self._names, self._keys
        index = self._index[part].tolist()
        count = len(index)
        other = self._candidate_index[part].tolist() if self._candidate_index is not None else [-1] * count
        key_at = self._key_at[part].tolist() if self._key_at is not None and keys is not None else None
        for n, (i, k, b, c, d, ci) in enumerate(
            zip(
                index,
                self._scorer[part].tolist(),
                self._baseline_score[part].tolist(),
                self._candidate_score[part].tolist(),
                self._delta[part].tolist(),
                other,
                strict=True,
            )
        ):
            yield ItemChange(
                i,
                inputs[i],
                names[k],
                b,
                c,
                d,
                ci if ci >= 0 else None,
                keys[key_at[n]] if key_at is not None and keys is not None else None,
            )

    def to_wire(self) -> list[dict[str, Any]]:
        """Every change as its JSON object, in order."""
        return [change.to_wire() for change in self]

    def __eq__(self, other: object) -> bool:
        if isinstance(other, ItemChanges | list | tuple):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"ItemChanges({len(self)} changes)"


class TimingComparison(OutputModel):
    """Mean workflow time per item (ms), averaged over runs that have timing."""

    baseline_mean: float
    """Baseline mean (ms, 3 decimals)."""
    candidate_mean: float
    """Candidate mean (ms, 3 decimals)."""
    delta: float
    """Candidate - baseline (ms, 3 decimals)."""
    delta_percent: float
    """Delta as % of the baseline (0 when the baseline is 0)."""


class CostComparison(OutputModel):
    """Known spend per run (USD), averaged over the compared runs, with its certification."""

    baseline_total: float
    """Baseline known cost per run, 3 decimals."""
    candidate_total: float
    """Candidate known cost per run, 3 decimals."""
    delta: float
    """Candidate - baseline, 3 decimals."""
    delta_percent: float | None
    """Delta as % of the baseline; null for a $0 baseline (never 0 or Infinity)."""
    certified: bool
    """True when both sides measured complete spend over the same work (spec §2.11)."""
    reason: str | None = None
    """Why the delta is not certified; present exactly when ``certified`` is false."""

    _nullable_on_wire: ClassVar[frozenset[str]] = frozenset({"delta_percent"})
    # The per-run averages before the spec's 3-decimal rounding (display only, never on the wire).
    _exact: tuple[float, float] | None = PrivateAttr(default=None)

    def with_exact(self, baseline: float, candidate: float) -> CostComparison:
        """Keep the unrounded per-run averages for display; returns ``self``."""
        self._exact = (baseline, candidate)
        return self

    @property
    def baseline_exact(self) -> float:
        """Baseline known cost per run, unrounded (the rounded total when not known)."""
        return self._exact[0] if self._exact is not None else self.baseline_total

    @property
    def candidate_exact(self) -> float:
        """Candidate known cost per run, unrounded."""
        return self._exact[1] if self._exact is not None else self.candidate_total

    @property
    def delta_exact(self) -> float:
        """Candidate - baseline, unrounded: its sign is the direction of the change.

        ``delta`` is rounded to 3 decimals and so reads 0 for any change under $0.0005.
        """
        return self.candidate_exact - self.baseline_exact if self._exact is not None else self.delta


# ---------------------------------------------------------------- compatibility


class FingerprintCheck(OutputModel):
    """One component of ``metadata.fingerprint`` compared across sides."""

    status: Literal["same", "changed", "unknown"]
    """``unknown`` when either side lacks the value (TS or legacy result)."""
    baseline: Any = None
    """Baseline value (hash, count or version), if any."""
    candidate: Any = None
    """Candidate value, if any."""


class ScorerSetCheck(OutputModel):
    """Scorer names/types/definitions compared across sides."""

    status: Literal["same", "changed", "unknown"]
    """``changed`` when names, types or the scorer-definition hash differ."""
    added: list[str] = Field(default_factory=list)
    """Scorers only the candidate has."""
    removed: list[str] = Field(default_factory=list)
    """Scorers only the baseline has."""
    type_changed: dict[str, list[str]] = Field(default_factory=dict)
    """name -> [baseline type, candidate type] where the type differs."""
    definitions_changed: bool = False
    """Same names and types, but the scorer-definition hash differs (prompt/code changed)."""


class ItemAlignment(OutputModel):
    """How items were paired across sides."""

    mode: Literal["position", "key"]
    """``key``: matched by ``item_key`` (unique on both sides, and order or membership differ);
    ``position``: matched by index like the TS reference."""
    matched: int
    """Item pairs compared (first run of each side)."""
    added: list[str] = Field(default_factory=list)
    """Keys only in the candidate (key mode)."""
    removed: list[str] = Field(default_factory=list)
    """Keys only in the baseline (key mode)."""
    reordered: bool = False
    """The common items appear in a different order (key mode)."""
    reason: str | None = None
    """Why position matching was used although inputs differ (e.g. duplicate keys)."""


class Compatibility(OutputModel):
    """Is the candidate measuring the same thing as the baseline? (*extra* block)"""

    status: Literal["compatible", "changed", "unknown"]
    """``changed`` if any check changed or items were added/removed/reordered; ``unknown`` if
    no fingerprint is available on a side and nothing observable changed."""
    dataset: FingerprintCheck
    """Dataset content hash."""
    dataset_items: FingerprintCheck
    """Dataset item count."""
    scorers: ScorerSetCheck
    """Scorer set."""
    config: FingerprintCheck
    """Eval configuration hash."""
    pricing_version: FingerprintCheck
    """Pricing table version used for cost accounting."""
    items: ItemAlignment
    """Item pairing."""
    messages: list[str] = Field(default_factory=list)
    """One human sentence per difference, in the order above."""


# ---------------------------------------------------------------- the comparison


class Comparison(OutputModel):
    """Everything ``compare_results`` computes (pure; gates are applied separately)."""

    baseline: SideInfo
    """Baseline identity."""
    candidate: SideInfo
    """Candidate identity."""
    scorers: dict[str, ScorerComparison]
    """Per-scorer blocks keyed by name, ascending."""
    timing: TimingComparison | None = None
    """Absent unless both sides have timing."""
    cost: CostComparison | None = None
    """Absent when neither side has spend nor accounting (spec §2.11)."""
    regressions: SkipValidation[Sequence[ItemChange]]
    """Item-level drops beyond the threshold, by item index then scorer (``ItemChanges`` when
    built by ``compare_results``)."""
    improvements: SkipValidation[Sequence[ItemChange]]
    """Item-level gains beyond the threshold."""
    summary: str
    """One-line summary (spec §2.12)."""
    # ---- extras
    seed: int
    """*extra*: bootstrap seed used (random unless given; pass it back with --seed to replay)."""
    resamples: int
    """*extra*: bootstrap resamples."""
    alpha: float
    """*extra*: two-sided CI level is 1 - alpha."""
    holm: bool
    """*extra*: whether Holm correction was applied to the verdicts."""
    stable: int
    """*extra*: the CLI's Stable count, max(0, items in baseline run 1 - regressions - improvements)."""
    compatibility: Compatibility
    """*extra*: fingerprint and item-alignment checks."""


# ---------------------------------------------------------------- gates


class ItemErrorRate(OutputModel):
    """Item error rate of one run of one side (spec §4.2)."""

    side: Literal["baseline", "candidate"]
    """Which side."""
    run_index: int
    """0-based run index."""
    run_id: str
    """The run's id."""
    legacy: bool
    """Derived from items (pre-0.24 artifact without coverage)."""
    failed: int
    """Items that failed in the workflow."""
    attempted: int
    """Items attempted (count minus cancelled and budget-stopped)."""
    rate: float
    """failed / attempted (0 when nothing was attempted), unrounded."""
    limit: float
    """The limit applied."""
    exceeded: bool
    """rate > limit and attempted > 0."""


class Gate(OutputModel):
    """One gate's verdict."""

    name: GateName
    """Gate name."""
    status: GateStatus
    """Outcome (see ``GateStatus``)."""
    limit: float | None = None
    """The configured limit (rate in [0, 1], or % for cost), if any."""
    observed: float | None = None
    """The value judged against the limit (worst rate, cost delta %, ...), if any."""
    message: str
    """One sentence: what was checked, what was found, how to change it."""
    details: list[str] = Field(default_factory=list)
    """Further lines (per-run warnings, per-scorer notes) in print order."""


class GateReport(OutputModel):
    """All gates, in the order they are evaluated and printed."""

    gates: list[Gate]
    """Budget, item-error-rate, scorer-error-rate, regressions, cost, compatibility."""
    item_rates: list[ItemErrorRate] = Field(default_factory=list)
    """Per-run item error rates behind the item-error-rate gate."""

    @property
    def failed(self) -> bool:
        """True when any gate failed or refused (the compare exit code is then 1)."""
        return any(g.status in ("fail", "refused") for g in self.gates)

    def gate(self, name: GateName) -> Gate:
        """The gate with this name."""
        for g in self.gates:
            if g.name == name:
                return g
        raise KeyError(name)
