"""Accounting records (runner spec §7): what was spent, how sure we are, and why."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields
from typing import Any, Literal, Protocol

from pydantic import ConfigDict, Field
from pydantic.alias_generators import to_camel

from axl_action.schema.base import CompleteWireModel, WireModel
from axl_action.schema.numbers import usable_number


class Artifact(Protocol):
    """What :func:`read_accounting` reads of a result (a ``RunHeader``): named structurally so
    this module, which ``schema.result`` builds on, does not import it back."""

    @property
    def accounting(self) -> EvalAccounting | None: ...
    @property
    def total_cost(self) -> float | None: ...
    @property
    def metadata(self) -> dict[str, Any]: ...


Completeness = Literal["complete", "incomplete", "unverified"]


@dataclass(frozen=True, slots=True)
class TokenUsage:
    """Token and audio usage: one call's (a provider's reply) or summed over operations (a
    record's ``accounting.usage``). The one declaration of the six counts.

    A plain frozen dataclass, not a pydantic model, because every provider call builds one on
    the hot path (a validated model costs about four times as much); pydantic still reads and
    writes it inside the accounting models, by the wire's camelCase names. The six counts are
    fixed by the runner spec (section 7), so, unlike the models around it, an unknown key inside
    ``usage`` is not kept.

    ``input_tokens`` is the total prompt size *including* ``cached_tokens`` (OpenAI and Gemini
    report it that way; the Anthropic adapter adds its cache reads and writes in so that every
    provider means the same thing).
    """

    __pydantic_config__ = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="ignore")

    input_tokens: float = 0
    """Prompt tokens, including cached reads and cache writes."""
    output_tokens: float = 0
    """Completion tokens, including reasoning tokens."""
    reasoning_tokens: float = 0
    """Hidden reasoning/thinking tokens (a subset of ``output_tokens``)."""
    cached_tokens: float = 0
    """Prompt tokens served from the provider's prompt cache (a subset of ``input_tokens``)."""
    cache_write_tokens: float = 0
    """Prompt tokens written to the provider's prompt cache (a subset of ``input_tokens``)."""
    audio_seconds: float = 0
    """Seconds of audio processed (transcription / audio models)."""

    def to_wire(self) -> dict[str, float]:
        """The camelCase mapping used by result files (``accounting.usage``)."""
        values = (
            self.input_tokens,
            self.output_tokens,
            self.reasoning_tokens,
            self.cached_tokens,
            self.cache_write_tokens,
            self.audio_seconds,
        )
        return dict(zip(USAGE_WIRE_KEYS, values, strict=True))

    def total_tokens(self) -> float:
        """Input plus output tokens."""
        return self.input_tokens + self.output_tokens


Usage = TokenUsage
"""The same class, under the name the schema API has always exported."""

USAGE_KEYS: tuple[str, ...] = tuple(f.name for f in fields(TokenUsage))
"""The usage counts' Python names, in wire order."""
USAGE_WIRE_KEYS: tuple[str, ...] = tuple(to_camel(name) for name in USAGE_KEYS)
"""The same counts by their camelCase wire names."""


class Operations(CompleteWireModel):
    """Operation counters: ``total = settled + unknown``; ``denied`` is separate."""

    total: int = 0
    """Operations opened (minus retracted ones)."""
    settled: int = 0
    """Operations that settled with a usable cost."""
    unknown: int = 0
    """Operations whose cost is unknown (see ``reasons``)."""
    denied: int = 0
    """Operations refused by budget admission (not in ``total``)."""
    by_kind: dict[str, int] = Field(default_factory=dict)
    """Counts per kind: chat, stream, embedding, transcription, tool, external."""


class Breakdown(CompleteWireModel):
    """Known cost split by purpose; sums to ``knownCost``."""

    generation: float = 0
    """Spend of the workflow under test."""
    judging: float = 0
    """Spend of LLM judges (scorers)."""
    external: float = 0
    """Spend of declared external operations."""


class Replayed(WireModel):
    """Calls the response cache answered (docs/cache.md): billed $0, certified at what they
    cost when they were made. Absent from records of runs without the cache (and from every
    0.24 file, whose reader ignores it)."""

    calls: int = 0
    """Calls served from the cache."""
    cost: float = 0
    """What those calls cost when they were made (USD): the certified, not the billed, cost."""
    unpriced: int = 0
    """Replayed calls whose original cost was unknown (not in ``cost``)."""


class Accounting(CompleteWireModel):
    """Core accounting record, version 1 (runner spec §7.1)."""

    version: int = 1
    """Record format version; always 1 (see ``KNOWN_ACCOUNTING_VERSIONS``)."""
    currency: str = "USD"
    """Currency of every amount; always USD."""
    known_cost: float = 0
    """Sum of settled, usable, disjoint charges. Never includes unknown spend."""
    completeness: Completeness = "complete"
    """``complete``: every operation priced; ``incomplete``: some spend unknown (see reasons);
    ``unverified``: produced by readers of pre-0.24 files only."""
    reasons: dict[str, int] = Field(default_factory=dict)
    """Why spend is unknown, with counts: unpriced_model, usage_missing, abandoned, ..."""
    usage: Usage = Field(default_factory=Usage)
    """Summed token usage."""
    operations: Operations = Field(default_factory=Operations)
    """Operation counters."""
    breakdown: Breakdown = Field(default_factory=Breakdown)
    """Known cost by purpose."""
    provenance: dict[str, float] = Field(default_factory=dict)
    """Known cost by where the number came from (provider_reported, price_table_estimate, ...)."""
    replayed: Replayed | None = None
    """Calls answered by the response cache; ``knownCost`` is what was billed, and
    ``knownCost + replayed.cost`` the certified cost (:func:`certified_cost`)."""


class BudgetSnapshot(WireModel):
    """State of the run's budget controller at the end (runner spec §8)."""

    limit: float
    """The configured budget in USD."""
    status: Literal["open", "closed"]
    """``closed`` once known spend reached the limit (>=)."""
    known_spend: float
    """Settled known spend counted against the limit."""
    known_overshoot: float
    """``max(0, knownSpend - limit)``, unrounded."""
    closed_by: Literal["case", "scorer", "operation"] | None = None
    """Who first observed the closure; absent when nobody did or the budget stayed open."""


class CallerReported(WireModel):
    """Roll-up of costs and metadata the workflow claimed (never used as measurement)."""

    cost_items: int
    """Items whose workflow returned a valid ``cost``."""
    cost_total: float
    """Sum of those claimed costs."""
    metadata_items: int
    """Items whose workflow returned reserved metadata keys."""


class AccountingSource(WireModel):
    """Rescore provenance: the run whose outputs were rescored."""

    run_id: str
    """Id of the source result."""
    generation: Accounting | None
    """The original generation run's accounting, or null for a legacy source."""


class EvalAccounting(Accounting):
    """Run- or rescore-level accounting (runner spec §7.2)."""

    scope: Literal["run", "rescore"] | None = None
    """``run`` for runEval, ``rescore`` for rescore."""
    source: AccountingSource | None = None
    """Rescore only: where the outputs came from."""
    budget: BudgetSnapshot | None = None
    """Present iff a budget was configured."""
    caller_reported: CallerReported | None = None
    """Present iff any caller claim was seen (run only)."""


def certified_cost(accounting: Accounting) -> float:
    """What the run's calls cost, replayed ones at their recorded cost: the figure cost gates
    and deltas compare, so a cached run is not "97 % cheaper" than a live one. Equal to
    ``knownCost`` (what was billed) for a run without the cache."""
    replayed = accounting.replayed
    return accounting.known_cost + (
        replayed.cost if replayed is not None and usable_number(replayed.cost) else 0
    )


def empty_accounting() -> Accounting:
    """All zeros, complete, empty maps."""
    return Accounting()


def fold_accounting(records: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """Several accounting records (wire) folded into one (runner spec §7.3), as wire data: a
    run's with an earlier attempt's, a journal's, an item's repeats."""
    return aggregate_accounting(Accounting.model_validate(r) for r in records).to_wire()


def aggregate_accounting(records: Iterable[Accounting | None]) -> Accounting:
    """Conservative fold of several records (runner spec §7.3)."""
    known = 0.0
    usage = dict.fromkeys(USAGE_KEYS, 0.0)
    reasons: dict[str, int] = {}
    by_kind: dict[str, int] = {}
    provenance: dict[str, float] = {}
    counters = {"total": 0, "settled": 0, "unknown": 0, "denied": 0}
    breakdown = {"generation": 0.0, "judging": 0.0, "external": 0.0}
    any_unverified = any_incomplete = False
    replayed: Replayed | None = None
    for rec in records:
        if rec is None:
            continue
        if rec.replayed is not None:
            replayed = replayed or Replayed()
            replayed.calls += rec.replayed.calls
            replayed.cost += rec.replayed.cost if usable_number(rec.replayed.cost) else 0
            replayed.unpriced += rec.replayed.unpriced
        if usable_number(rec.known_cost):
            known += rec.known_cost
        for key in USAGE_KEYS:
            v = getattr(rec.usage, key)
            if isinstance(v, int | float) and math.isfinite(v):
                usage[key] += v
        for reason, n in rec.reasons.items():
            reasons[reason] = reasons.get(reason, 0) + n
        for kind, n in rec.operations.by_kind.items():
            by_kind[kind] = by_kind.get(kind, 0) + n
        for prov, v in rec.provenance.items():
            if isinstance(v, int | float) and math.isfinite(v):
                provenance[prov] = provenance.get(prov, 0.0) + v
        for name in counters:
            counters[name] += getattr(rec.operations, name) or 0
        for name in breakdown:
            v = getattr(rec.breakdown, name)
            if usable_number(v):
                breakdown[name] += v
        any_unverified |= rec.completeness == "unverified"
        any_incomplete |= rec.completeness == "incomplete"
    completeness: Completeness = (
        "unverified" if any_unverified else "incomplete" if any_incomplete else "complete"
    )
    return Accounting(
        known_cost=known,
        completeness=completeness,
        reasons=reasons,
        usage=Usage(**usage),
        operations=Operations(**counters, by_kind=by_kind),
        breakdown=Breakdown(**breakdown),
        provenance=provenance,
        # Passed only when present: an explicit None would be written as "replayed": null.
        **({"replayed": replayed} if replayed is not None else {}),
    )


def read_accounting(result: Artifact) -> EvalAccounting:
    """The accounting of any artifact (runner spec §7.4).

    0.24 files return their record unchanged. Pre-0.24 files get a synthesized ``unverified``
    record whose known cost is the legacy ``totalCost``: never report it as complete.
    """
    if result.accounting is not None:
        return result.accounting
    total = result.total_cost if usable_number(result.total_cost) else 0.0
    rescored = result.metadata.get("rescored") is True
    return EvalAccounting(
        known_cost=total,
        completeness="unverified",
        scope="rescore" if rescored else "run",
    )
