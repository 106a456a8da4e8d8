"""False alarms over seeded null runs: the candidate is drawn exactly like the baselines.

One *null run*: a suite with known noise, ``rows`` baseline runs of it (the history, built
with the real ``history_entry``), then a candidate from the same distribution, compared with
the newest baseline by the real compare engine twice: with today's default thresholds and
with ``threshold: auto``. Nothing changed, so every ``regressed`` verdict is a false alarm.
Shared by ``test_history_noise.py`` (a bound) and ``benchmarks/history_scale.py`` (the figure).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from history_synth import Suite, run_wire, timestamp

from axl_action.compare.engine import CompareOptions, compare_results
from axl_action.compare.thresholds import MeasuredThresholds
from axl_action.history import History, append, auto_thresholds, history_entry
from axl_action.schema.view import RunView, wire_view


@dataclass
class NullTally:
    """Per-scorer comparisons and false alarms."""

    comparisons: int = 0
    default_regressed: int = 0
    default_flagged: int = 0
    auto_regressed: int = 0
    auto_flagged: int = 0
    auto_measured: int = 0
    by_scorer: dict[str, list[int]] = field(default_factory=dict)

    def rate(self, count: int) -> float:
        return count / self.comparisons if self.comparisons else 0.0


def _view(wire: dict[str, object]) -> RunView:
    return wire_view(wire)


def null_trial(
    trial: int, *, n: int, rows: int, day_sigma: float, kinds: dict[str, str], tally: NullTally
) -> None:
    """One null run (seeded by ``trial``), added to ``tally``."""
    suite = Suite(n=n, kinds=dict(kinds), seed=10_000 + trial, day_sigma=day_sigma)
    history = History()
    views: list[RunView] = []
    for k in range(rows):
        view = _view(run_wire(suite, trial * 1000 + k, run_id=f"b{k}", timestamp=timestamp(k)))
        history = append(history, history_entry([view], run_id=str(k)))
        views.append(view)
    baseline = views[-1]
    candidate = _view(run_wire(suite, trial * 1000 + 999, run_id="cand", timestamp=timestamp(rows)))
    names = baseline.header.scorer_names
    auto = auto_thresholds(history, names, baseline.header.scorer_types)
    default = compare_results(baseline, candidate, CompareOptions(seed=trial))
    measured = compare_results(
        baseline, candidate, CompareOptions(seed=trial, thresholds=MeasuredThresholds(auto.values))
    )
    for name in names:
        if kinds[name] == "deterministic":
            continue  # no noise at all: never a false alarm under either rule
        tally.comparisons += 1
        d, a = default.scorers[name].verdict, measured.scorers[name].verdict
        tally.default_regressed += d == "regressed"
        tally.default_flagged += d in ("regressed", "improved")
        tally.auto_regressed += a == "regressed"
        tally.auto_flagged += a in ("regressed", "improved")
        tally.auto_measured += name in auto.values
        counts = tally.by_scorer.setdefault(name, [0, 0, 0])
        counts[0] += 1
        counts[1] += d == "regressed"
        counts[2] += a == "regressed"


def false_alarms(
    trials: int,
    *,
    n: int = 120,
    rows: int = 21,
    day_sigma: float = 0.04,
    kinds: dict[str, str] | None = None,
) -> NullTally:
    """Run ``trials`` null runs and return the tally."""
    tally = NullTally()
    for trial in range(trials):
        null_trial(
            trial,
            n=n,
            rows=rows,
            day_sigma=day_sigma,
            kinds=kinds or {"judge": "binary", "tone": "levels"},
            tally=tally,
        )
    return tally
