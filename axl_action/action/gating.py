"""Compare the candidate with the baseline (when there is one) under the action's inputs.

The gates themselves belong to ``axl_action.compare``; the inputs map to their options by the
same rule as the CLI's flags (``cli/flags.py``: ``gate_options_of``, ``thresholds_of``). This
module turns "these two results cannot be compared" into a note instead of a crash,
because a PR that legitimately changes the dataset or the scorers must still get a report.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from axl_action.action.settings import ActionSettings
from axl_action.cli.flags import gate_options_of, thresholds_of
from axl_action.compare.engine import CompareOptions, compare_results
from axl_action.compare.gates import evaluate_gates
from axl_action.compare.models import Comparison, GateReport
from axl_action.errors import AxlError
from axl_action.schema import ResultFile


@dataclass
class Evaluation:
    """The comparison and gates for this run (both None without a usable baseline)."""

    comparison: Comparison | None = None
    gates: GateReport | None = None
    notes: list[str] = field(default_factory=list)
    """Why the baseline could not be compared, and similar."""


def evaluate(
    candidate: ResultFile,
    baseline: ResultFile | None,
    settings: ActionSettings,
    *,
    measured: Mapping[str, float] | None = None,
) -> Evaluation:
    """Compare and gate; without a baseline the report shows the candidate's own gates.

    ``measured``: under ``threshold: auto``, the thresholds measured from the baseline history
    (scorers it leaves out keep their defaults).
    """
    if baseline is None:
        return Evaluation()
    options = CompareOptions(thresholds=thresholds_of(settings.threshold, measured))
    try:
        comparison = compare_results(baseline.results, candidate.results, options)
    except AxlError as err:
        return Evaluation(notes=[f"the baseline cannot be compared with this run: {err}"])
    return Evaluation(comparison=comparison, gates=gate_report(comparison, baseline, candidate, settings))


def gate_report(
    comparison: Comparison, baseline: ResultFile, candidate: ResultFile, settings: ActionSettings
) -> GateReport:
    """The compare package's gates with the limits from the inputs (the CLI's own rule)."""
    return evaluate_gates(comparison, baseline.results, candidate.results, gate_options_of(settings))
