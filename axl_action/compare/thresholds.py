"""Per-scorer thresholds: ``--threshold`` parsing and the auto-calibrated defaults (spec §2.4, §7.5)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from axl_action.compare.models import ThresholdSource

DEFAULT_LLM_THRESHOLD = 0.05
DEFAULT_DETERMINISTIC_THRESHOLD = 0.0
LEGACY_THRESHOLD = 0.1

Thresholds = float | Mapping[str, float] | None
"""A global number, a per-scorer map, or None (auto-calibrate every scorer)."""


class MeasuredThresholds(dict[str, float]):
    """Per-scorer thresholds measured from the baseline history (``threshold: auto``).

    A scorer it names gets that value with the source ``history``; the others keep their
    defaults (``llm``/``deterministic``/``legacy``), as for too short a history.
    """


@dataclass(frozen=True)
class ResolvedThreshold:
    """A scorer's threshold and where it came from."""

    value: float
    source: ThresholdSource


def scorer_types(metadata: Mapping[str, Any]) -> dict[str, Any]:
    """``metadata.scorerTypes`` when it is an object, else {}."""
    types = metadata.get("scorerTypes")
    return dict(types) if isinstance(types, Mapping) else {}


def resolve_threshold(
    name: str, thresholds: Thresholds, baseline_metadata: Mapping[str, Any]
) -> ResolvedThreshold:
    """Spec §2.4, first match wins: global number, per-scorer override (or one measured from
    history), then the baseline's
    ``scorerTypes`` (llm 0.05, anything else 0), else the legacy 0.1. The candidate's
    metadata is never consulted."""
    if isinstance(thresholds, int | float) and not isinstance(thresholds, bool):
        return ResolvedThreshold(float(thresholds), "global")
    if isinstance(thresholds, MeasuredThresholds) and thresholds.get(name) is not None:
        return ResolvedThreshold(float(thresholds[name]), "history")
    if isinstance(thresholds, Mapping) and thresholds.get(name) is not None:
        return ResolvedThreshold(float(thresholds[name]), "override")
    types = baseline_metadata.get("scorerTypes")
    if isinstance(types, Mapping) and name in types:
        if types[name] == "llm":
            return ResolvedThreshold(DEFAULT_LLM_THRESHOLD, "llm")
        return ResolvedThreshold(DEFAULT_DETERMINISTIC_THRESHOLD, "deterministic")
    return ResolvedThreshold(LEGACY_THRESHOLD, "legacy")
