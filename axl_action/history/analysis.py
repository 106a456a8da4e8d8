"""What a history says about one comparison: bands, the thresholds in force, flaky items. Pure.

:func:`analyse` is computed once per run (the CLI and the action call it after comparing) and
read by the console lines, the ``--json`` payload, the report context and the HTML report.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from axl_action.compare.models import Comparison, ItemChange
from axl_action.formatting import num, plural, signed
from axl_action.history.build import History
from axl_action.history.noise import (
    FLAKY_MIN_CHANGES,
    WINDOW,
    AutoThresholds,
    NoiseBand,
    default_threshold,
    flaky_items,
    noise_bands,
)
from axl_action.schema import item_key


@dataclass(frozen=True, eq=False)
class HistoryAnalysis:
    """The history of the baseline and what it says about this run."""

    history: History
    """The baseline runs, oldest first (the candidate is not among them)."""
    bands: dict[str, NoiseBand]
    """Per-scorer noise band (measured or not)."""
    thresholds: dict[str, float]
    """Per-scorer threshold flakiness was judged with (the comparison's, else the defaults)."""
    flaky: dict[str, frozenset[str]]
    """Scorer → keys of the items flaky for it."""
    auto: AutoThresholds | None = None
    """Set when ``threshold: auto`` chose the thresholds."""
    repository_url: str | None = None
    """``https://github.com/<owner>/<repo>`` for commit and run links, when known."""

    def is_flaky(self, key: str, scorer: str) -> bool:
        """Whether the item with this key is flaky for this scorer."""
        return key in self.flaky.get(scorer, frozenset())


def analyse(
    history: History,
    *,
    scorers: Sequence[str],
    types: Mapping[str, str] | None = None,
    comparison: Comparison | None = None,
    auto: AutoThresholds | None = None,
    repository_url: str | None = None,
) -> HistoryAnalysis:
    """Bands for ``scorers`` and their flaky items, judged with the comparison's thresholds
    (or, without a comparison, the defaults for the scorers' ``types``)."""
    types = types or {}
    thresholds: dict[str, float] = {}
    for name in scorers:
        compared = comparison.scorers.get(name) if comparison is not None else None
        thresholds[name] = compared.threshold if compared is not None else default_threshold(types.get(name))
    return HistoryAnalysis(
        history=history,
        bands=auto.bands if auto is not None else noise_bands(history, scorers),
        thresholds=thresholds,
        flaky=flaky_items(history, thresholds),
        auto=auto,
        repository_url=repository_url,
    )


def change_key(change: ItemChange) -> str:
    """The item key of an item-level change (set in key mode, else from its input)."""
    return change.key if change.key is not None else item_key(change.input)


def flaky_regressions(comparison: Comparison, analysis: HistoryAnalysis) -> int:
    """Item-level regressions on items flaky for that scorer."""
    return sum(1 for ch in comparison.regressions if analysis.is_flaky(change_key(ch), ch.scorer))


def band_text(band: NoiseBand) -> str:
    """``baseline runs vary ±0.050 (last 20)``, or why there is no band."""
    if band.band is None:
        moves = len(band.moves)
        return f"noise not measured yet ({moves} usable baseline move{'s' if moves != 1 else ''})"
    return f"baseline runs vary ±{num(band.band)} (last {len(band.moves)})"


def noise_sentence(delta: float | None, band: NoiseBand) -> str:
    """``Δ −0.083; baseline runs vary ±0.050 (last 20)``."""
    head = f"Δ {signed(delta)}; " if delta is not None else ""
    return head + band_text(band)


def regression_headline(comparison: Comparison, analysis: HistoryAnalysis) -> str | None:
    """``5 regressions, 2 of them on flaky items``, when some regressions are on flaky items."""
    flaky = flaky_regressions(comparison, analysis)
    if not flaky:
        return None
    total = len(comparison.regressions)
    return f"{plural(total, 'regression')}, {flaky} of them on flaky items"


def console_lines(comparison: Comparison, analysis: HistoryAnalysis) -> list[str]:
    """Lines for ``axl-eval compare --history``: each scorer's delta next to its band."""
    lines = [f"  History: {plural(len(analysis.history), 'baseline run')}"]
    width = max([len(n) for n in comparison.scorers] + [6])
    for name, s in comparison.scorers.items():
        band = analysis.bands.get(name)
        if band is None:
            continue
        source = " (threshold from history)" if s.threshold_source == "history" else ""
        lines.append(f"  {name.ljust(width)}  {noise_sentence(s.delta, band)}{source}")
    headline = regression_headline(comparison, analysis)
    if headline:
        lines.append(
            f"  {headline} (score moved beyond the threshold in {FLAKY_MIN_CHANGES}+ of the last "
            f"{WINDOW} baseline runs)"
        )
    return lines


def analysis_wire(analysis: HistoryAnalysis, comparison: Comparison | None) -> dict[str, Any]:
    """The ``history`` object of ``axl-eval compare --json``."""
    scorers: dict[str, Any] = {}
    for name, band in analysis.bands.items():
        scorers[name] = {
            "band": band.band,
            "moves": len(band.moves),
            "threshold": analysis.thresholds.get(name),
            "flakyItems": sorted(analysis.flaky.get(name, frozenset())),
        }
    out: dict[str, Any] = {
        "rows": len(analysis.history),
        "window": WINDOW,
        "flakyMinChanges": FLAKY_MIN_CHANGES,
        "auto": analysis.auto is not None,
        "scorers": scorers,
    }
    if analysis.auto is not None:
        out["notes"] = list(analysis.auto.notes)
    if comparison is not None:
        out["flakyRegressions"] = flaky_regressions(comparison, analysis)
    return out
