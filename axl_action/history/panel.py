"""What the reports show of a history: the panel model and how to build it. Pure, no I/O.

:func:`history_panel` turns a :class:`~axl_action.history.analysis.HistoryAnalysis` and this
run's figures into a :class:`HistoryPanel` (numbers stay numbers; text from files stays raw
and is escaped by the template that shows it). :func:`item_history` gives the explorer each
item's recent scores and the scorers it is flaky for.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel, ConfigDict, Field

from axl_action.compare.models import Comparison
from axl_action.history.analysis import (
    HistoryAnalysis,
    band_text,
    change_key,
    noise_sentence,
    regression_headline,
)
from axl_action.history.noise import FLAKY_MIN_CHANGES, MIN_MOVES, SPARK_POINTS, WINDOW
from axl_action.schema import RunView, read_accounting
from axl_action.schema.view import scorer_values

SPARK_CHARS = "▁▂▃▄▅▆▇█"
_SHA = re.compile(r"[0-9a-fA-F]{7,64}")
_RUN_ID = re.compile(r"[0-9]{1,20}")
_REPO_URL = re.compile(r"https?://[^\s()<>\[\]\"'`]+")


class _Model(BaseModel):
    model_config = ConfigDict(use_attribute_docstrings=True, frozen=False)


class PanelRun(_Model):
    """One baseline run on the charts and in the runs table."""

    label: str
    """Short commit (7 characters), else the short result id."""
    commit: str | None = None
    """Full commit SHA, when known."""
    commit_url: str | None = None
    """Link to the commit (only for a hex SHA and an http(s) repository URL)."""
    run_id: str | None = None
    """Workflow run id."""
    run_url: str | None = None
    """Link to the workflow run."""
    date: str
    """``YYYY-MM-DD HH:MM`` (UTC) from the result's timestamp."""
    means: dict[str, float | None] = Field(default_factory=dict)
    """Scorer → mean score."""
    cost: float = 0.0
    """Known cost per run in USD."""
    cost_complete: bool = False
    """Whether every operation was priced."""
    cost_certified: bool | None = None
    """Whether the cost change from the run before is certified."""
    latency_ms: float | None = None
    """Mean item latency."""
    item_error_rate: float = 0.0
    """Failed over attempted items."""
    comparable: bool = True
    """Measured the same dataset and scorers as the newest baseline."""


class PanelScorer(_Model):
    """One scorer's trend, band and flaky items."""

    name: str
    """Scorer name (untrusted)."""
    kind: str | None = None
    """``llm`` or ``deterministic``."""
    band: float | None = None
    """Noise band half-width; None when not measured."""
    moves: int = 0
    """Usable run-to-run moves the band is from."""
    band_text: str = ""
    """``baseline runs vary ±0.050 (last 20)`` or why not measured."""
    sentence: str = ""
    """``Δ −0.083; baseline runs vary ±0.050 (last 20)``."""
    sparkline: str = ""
    """The newest baseline means as Unicode blocks, oldest first."""
    spark_low: float | None = None
    """Lowest mean in the sparkline."""
    spark_high: float | None = None
    """Highest mean in the sparkline."""
    baseline_mean: float | None = None
    """The newest baseline's mean (the band's centre)."""
    candidate_mean: float | None = None
    """This run's mean."""
    delta: float | None = None
    """Candidate minus baseline."""
    threshold: float | None = None
    """Threshold in force for this scorer."""
    auto_threshold: bool = False
    """The threshold was measured from history (``threshold: auto``)."""
    flaky_items: int = 0
    """Items flaky for this scorer."""
    flaky_regressions: int = 0
    """Item-level regressions of this scorer on flaky items."""


class HistoryPanel(_Model):
    """The history as every report shows it."""

    runs: list[PanelRun] = Field(default_factory=list)
    """Baseline runs, oldest first."""
    scorers: list[PanelScorer] = Field(default_factory=list)
    """Per-scorer trend rows, in scorer order."""
    candidate_label: str = "this run"
    """How the final point is labelled."""
    candidate_cost: float | None = None
    """This run's known cost per run."""
    candidate_cost_complete: bool = False
    """Whether this run's cost is complete."""
    candidate_latency_ms: float | None = None
    """This run's mean item latency."""
    window: int = WINDOW
    """Moves used for bands and flakiness."""
    min_moves: int = MIN_MOVES
    """Moves needed for a measured band."""
    flaky_k: int = FLAKY_MIN_CHANGES
    """Moves beyond the threshold that make an item flaky."""
    spark_points: int = SPARK_POINTS
    """Means in a sparkline."""
    auto: bool = False
    """``threshold: auto`` was used."""
    notes: list[str] = Field(default_factory=list)
    """Sentences about fallbacks (``threshold: auto`` without enough history)."""
    regressions: int = 0
    """Item-level regressions of this comparison."""
    flaky_regressions: int = 0
    """Of them, on items flaky for that scorer."""
    headline: str | None = None
    """``5 regressions, 2 of them on flaky items``."""
    rows_without_items: int = 0
    """Old rows whose item scores were dropped from the file to keep it small."""


def sparkline(values: Sequence[float]) -> str:
    """Unicode blocks scaled between the lowest and highest value (flat: a middle row)."""
    if not values:
        return ""
    low, high = min(values), max(values)
    if high - low < 1e-12:
        return SPARK_CHARS[3] * len(values)
    top = len(SPARK_CHARS) - 1
    return "".join(SPARK_CHARS[round((v - low) / (high - low) * top)] for v in values)


def _links(
    repository_url: str | None, commit: str | None, run_id: str | None
) -> tuple[str | None, str | None]:
    if not repository_url or not _REPO_URL.fullmatch(repository_url):
        return None, None
    base = repository_url.rstrip("/")
    commit_url = f"{base}/commit/{commit}" if commit and _SHA.fullmatch(commit) else None
    run_url = f"{base}/actions/runs/{run_id}" if run_id and _RUN_ID.fullmatch(run_id) else None
    return commit_url, run_url


def _date(text: str) -> str:
    return text[:16].replace("T", " ") if len(text) >= 16 else text


def _candidate_means(view: RunView) -> dict[str, float | None]:
    out: dict[str, float | None] = {}
    for name in view.header.scorer_names:
        values = scorer_values(view.items, name)
        out[name] = float(values.mean()) if len(values) else None
    return out


def history_panel(
    analysis: HistoryAnalysis,
    candidate: Sequence[RunView],
    comparison: Comparison | None = None,
    *,
    candidate_label: str = "this run",
) -> HistoryPanel:
    """The panel for ``analysis`` with ``candidate`` (its runs) as the final point."""
    entries = analysis.history.entries
    newest = entries[-1].summary.fingerprint if entries else None
    runs: list[PanelRun] = []
    for e in entries:
        s = e.summary
        commit_url, run_url = _links(analysis.repository_url, s.commit, s.run_id)
        runs.append(
            PanelRun(
                label=s.commit[:7] if s.commit else s.result_id[:8],
                commit=s.commit,
                commit_url=commit_url,
                run_id=s.run_id,
                run_url=run_url,
                date=_date(s.date),
                means={name: point.mean for name, point in s.scorers.items()},
                cost=s.cost.known,
                cost_complete=s.cost.completeness == "complete",
                cost_certified=s.cost.certified,
                latency_ms=s.latency_ms,
                item_error_rate=s.item_error_rate,
                comparable=s.fingerprint == newest,
            )
        )
    first = candidate[0]
    means = _candidate_means(first) if len(candidate) == 1 else {}
    if len(candidate) > 1:
        for name in first.header.scorer_names:
            per_run = [float(v.mean()) for run in candidate if len(v := scorer_values(run.items, name))]
            means[name] = sum(per_run) / len(per_run) if per_run else None
    flaky_by_scorer: dict[str, int] = {}
    if comparison is not None:
        for ch in comparison.regressions:
            if analysis.is_flaky(change_key(ch), ch.scorer):
                flaky_by_scorer[ch.scorer] = flaky_by_scorer.get(ch.scorer, 0) + 1
    types = first.header.scorer_types
    scorers: list[PanelScorer] = []
    for name, band in analysis.bands.items():
        compared = comparison.scorers.get(name) if comparison is not None else None
        base_mean = next(
            (
                m
                for e in reversed(entries)
                if (p := e.summary.scorers.get(name)) is not None and (m := p.mean) is not None
            ),
            None,
        )
        cand_mean = means.get(name)
        delta = (
            compared.delta
            if compared is not None
            else (cand_mean - base_mean if cand_mean is not None and base_mean is not None else None)
        )
        scorers.append(
            PanelScorer(
                name=name,
                kind=types.get(name),
                band=band.band,
                moves=len(band.moves),
                band_text=band_text(band),
                sentence=noise_sentence(delta, band),
                sparkline=sparkline(band.means),
                spark_low=min(band.means) if band.means else None,
                spark_high=max(band.means) if band.means else None,
                baseline_mean=base_mean,
                candidate_mean=cand_mean,
                delta=delta,
                threshold=analysis.thresholds.get(name),
                auto_threshold=compared is not None and compared.threshold_source == "history",
                flaky_items=len(analysis.flaky.get(name, ())),
                flaky_regressions=flaky_by_scorer.get(name, 0),
            )
        )
    accounts = [read_accounting(run.header) for run in candidate]
    timings = [run.header.summary.timing.mean for run in candidate if run.header.summary.timing is not None]
    return HistoryPanel(
        runs=runs,
        scorers=scorers,
        candidate_label=candidate_label,
        candidate_cost=sum(a.known_cost for a in accounts) / len(accounts),
        candidate_cost_complete=all(a.completeness == "complete" for a in accounts),
        candidate_latency_ms=sum(timings) / len(timings) if timings else None,
        auto=analysis.auto is not None,
        notes=list(analysis.auto.notes) if analysis.auto is not None else [],
        regressions=len(comparison.regressions) if comparison is not None else 0,
        flaky_regressions=sum(flaky_by_scorer.values()),
        headline=regression_headline(comparison, analysis) if comparison is not None else None,
        rows_without_items=sum(1 for e in entries if e.keys is None),
    )


def item_history(
    analysis: HistoryAnalysis, keys: Sequence[str], scorers: Sequence[str], *, points: int = SPARK_POINTS
) -> tuple[list[str], npt.NDArray[np.float64], list[list[int]]]:
    """Per candidate item (``keys``): its scores in the newest ``points`` baseline runs that
    kept item scores, shape (items, scorers, runs) with NaN for none, oldest run first; the
    labels of those runs; and the scorer indices each item is flaky for."""
    entries = [e for e in analysis.history.entries if e.keys is not None][-points:]
    labels = [e.summary.commit[:7] if e.summary.commit else e.summary.result_id[:8] for e in entries]
    n = len(keys)
    cube = np.full((n, len(scorers), len(entries)), np.nan)
    key_list = list(keys)
    position: dict[str, int] | None = None
    previous: list[str] | None = None
    at: npt.NDArray[np.intp] = np.arange(n, dtype=np.intp)
    for r, e in enumerate(entries):
        row_keys = e.keys or []
        if row_keys is not previous and row_keys != previous:
            if row_keys == key_list:
                at = np.arange(n, dtype=np.intp)
            else:
                if position is None:
                    position = {key: i for i, key in enumerate(key_list)}
                at = np.fromiter((position.get(k, -1) for k in row_keys), dtype=np.intp, count=len(row_keys))
            previous = row_keys
        ok = at >= 0
        for s, name in enumerate(scorers):
            values = e.scores.get(name)
            if values is not None and len(values) == len(at):
                cube[at[ok], s, r] = values[ok]
    flaky_sets = [analysis.flaky.get(name, frozenset()) for name in scorers]
    flaky = [[s for s, found in enumerate(flaky_sets) if key in found] for key in key_list]
    return labels, cube, flaky
