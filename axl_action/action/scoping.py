"""Scoped runs: which evals a pull request must re-run, and which it carries from the baseline.

Pure: the baseline's recorded sources, the current file digests and the current inputs stamp go
in, a plan comes out. ``scope_step`` is the edge that reads the files, and the report says
which results were carried (``report.context``). Safe by default: anything
not known for certain (no record, an unreadable file, a changed stamp) means the eval re-runs.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from axl_action.schema.sources import EvalSources, sha256_text

FULL_RUN_LABEL = "axl-eval:full-run"
"""The pull-request label that re-runs every eval."""

ScopeReason = Literal[
    "forced",
    "label",
    "no-baseline-stamp",
    "stamp-changed",
    "no-record",
    "record-unknown",
    "file-changed",
    "env-changed",
    "pricing-changed",
    "unchanged",
]


class ScopeStamp(BaseModel):
    """``scope.json`` beside the baseline results: what, besides files, the results depend on."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    inputs: str
    """Digest of the action inputs that affect results."""
    pricing: str | None = None
    """Digest of the pricing file, when there is one."""

    @classmethod
    def of(cls, inputs: Mapping[str, str], pricing: str | None) -> ScopeStamp:
        """The stamp of ``inputs`` (name -> raw value; order does not matter) and a pricing digest."""
        canonical = "\n".join(f"{name}={inputs[name]}" for name in sorted(inputs))
        return cls(inputs=sha256_text(canonical), pricing=pricing)


class EvalDecision(BaseModel):
    """One eval's fate in a scoped run."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    eval: str
    run: bool
    reason: ScopeReason
    detail: str | None = None


class ScopePlan(BaseModel):
    """The decisions, one an eval, in the order the evals were given."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    decisions: list[EvalDecision] = Field(default_factory=list)

    @property
    def to_run(self) -> list[str]:
        return [d.eval for d in self.decisions if d.run]

    @property
    def carried(self) -> list[str]:
        """The evals not re-run (unchanged): their baseline results are carried over."""
        return [d.eval for d in self.decisions if not d.run]


def _decide(
    name: str,
    record: EvalSources | None,
    current_files: Mapping[str, str | None],
    current_env: Mapping[str, str | None],
) -> EvalDecision:
    if record is None:
        return EvalDecision(eval=name, run=True, reason="no-record")
    if record.unknown:
        return EvalDecision(eval=name, run=True, reason="record-unknown", detail=record.reason)
    for path, digest in sorted(record.files().items()):
        now = current_files.get(path)
        if now is None or now != digest:
            return EvalDecision(eval=name, run=True, reason="file-changed", detail=path)
    for var, value_digest in sorted(record.env.items()):
        if current_env.get(var) != value_digest:
            return EvalDecision(eval=name, run=True, reason="env-changed", detail=var)
    return EvalDecision(eval=name, run=False, reason="unchanged")


def plan_scope(
    evals: list[str],
    baseline_sources: Mapping[str, EvalSources | None],
    current_files: Mapping[str, str | None],
    current_env: Mapping[str, str | None],
    *,
    baseline_stamp: ScopeStamp | None,
    current_stamp: ScopeStamp,
    force: bool = False,
    labels: tuple[str, ...] = (),
) -> ScopePlan:
    """Which of ``evals`` run, and which are carried from the baseline.

    ``current_files`` maps every path any baseline record names to its digest now (None: gone
    or unreadable); ``current_env`` the declared env vars to the digest of their value now.
    """
    override: tuple[ScopeReason, str | None] | None = None
    if force:
        override = ("forced", None)
    elif FULL_RUN_LABEL in labels:
        override = ("label", FULL_RUN_LABEL)
    elif baseline_stamp is None:
        override = ("no-baseline-stamp", None)
    elif baseline_stamp.inputs != current_stamp.inputs:
        override = ("stamp-changed", "action inputs")
    elif baseline_stamp.pricing != current_stamp.pricing:
        override = ("pricing-changed", None)
    if override is not None:
        reason, detail = override
        return ScopePlan(
            decisions=[EvalDecision(eval=n, run=True, reason=reason, detail=detail) for n in evals]
        )
    return ScopePlan(
        decisions=[_decide(n, baseline_sources.get(n), current_files, current_env) for n in evals]
    )
