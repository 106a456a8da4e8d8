"""``repeats: auto`` in the action: the baseline and thresholds the runner decides against.

A pull request's sequential rounds compare each look with the baseline, so the baseline is
found *before* the evals run (the same search the comparison uses afterwards: it is done
once). The runner gets the downloaded results file as ``--baseline`` and the thresholds the
comparison will use as ``--threshold``: under ``threshold: auto`` the ones measured from the
baseline's history, so a look decides a scorer exactly as the comment will.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from axl_action.action.baseline import BaselineLookup, baseline_results_bytes
from axl_action.action.history_step import BaselineHistory
from axl_action.action.settings import ActionSettings
from axl_action.atomic import write_atomic
from axl_action.history import auto_thresholds


def sequential_flags(
    settings: ActionSettings, lookup: BaselineLookup, history: BaselineHistory, scratch: Path
) -> tuple[str, ...]:
    """The runner's ``--baseline`` / ``--threshold`` flags for ``repeats: auto`` (none without a
    baseline: the runner then runs every item ``max-repeats`` times and says so)."""
    raw = baseline_results_bytes(lookup)
    if raw is None or lookup.results is None:
        return ()
    path = scratch / "sequential" / "baseline.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, raw)
    flags: tuple[str, ...] = ("--baseline", str(path))
    threshold = settings.threshold
    if threshold == "auto":
        ref = lookup.results.results[0]
        measured = auto_thresholds(history.history, ref.scorer_names, ref.scorer_types).values
        return (*flags, "--threshold", threshold_flag(measured)) if measured else flags
    if threshold is None:
        return flags
    return (*flags, "--threshold", threshold_flag(threshold))


def threshold_flag(value: float | Mapping[str, float]) -> str:
    """``--threshold``'s text for one value or per-scorer values (``a=0.05,b=0.1``)."""
    if isinstance(value, Mapping):
        return ",".join(f"{name}={float(v)!r}" for name, v in value.items())
    return repr(float(value))
