"""Noise measured from history: per-scorer bands, ``threshold: auto``, and flaky items. Pure.

**Usable moves.** A *move* is the change of a scorer's mean from one baseline run to the next.
A move is usable when both rows measured the same thing as the newest row that has the
scorer (the baseline being compared): the same :func:`~axl_action.history.build.measure_fingerprint`
(dataset, scorer set and judge configuration) and the same run count. The newest
:data:`WINDOW` usable moves are used ("last 20").

**Noise band.** With ``m`` usable moves ``d_1..d_m``, ``s = sqrt(mean(d_i²))`` (a move of
unchanged code has mean 0, so no mean is subtracted) and the band is ``t(0.975, m) · s``:
the half-width of a 95% prediction interval for the next move, which is exact when moves
are independent and normal. A pull request's delta against the baseline is one more move,
so "Δ −0.083; baseline runs vary ±0.050" says whether the delta is beyond what re-running
unchanged code gives 19 times out of 20. A real change inside the window widens the band
(the estimate is conservative, never narrower); it leaves the band once it leaves the
window.

**``threshold: auto``.** Each scorer's threshold is its band. A scorer is called regressed
only when the bootstrap CI excludes 0 *and* the mean difference reaches the threshold, so
at most 2.5% of comparisons of unchanged code are called regressed (5% regressed or
improved), whatever part of the noise the item-level bootstrap does not see (a judge that
is stricter on some days, shared API drift). With fewer than :data:`MIN_MOVES` usable moves
(5 usable rows) a scorer keeps the default threshold, and a note says so.

**Flaky items.** Over the same usable pairs of rows (the newest :data:`WINDOW`), an item is
flaky for a scorer when its score moved by more than the scorer's threshold (the same test
the compare engine uses for an item-level regression, on three-decimal scores) at least
:data:`FLAKY_MIN_CHANGES` (k = 3) times. A code change and its revert move an item twice;
a third move is more than one change explains.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from axl_action.compare.significance import normal_quantile
from axl_action.compare.thresholds import (
    DEFAULT_DETERMINISTIC_THRESHOLD,
    DEFAULT_LLM_THRESHOLD,
    LEGACY_THRESHOLD,
)
from axl_action.history.build import History, HistoryEntry
from axl_action.schema.numbers import round3

WINDOW = 20
"""Newest usable moves used for bands and flakiness."""
MIN_MOVES = 4
"""Fewest usable moves (5 usable rows) for a measured band to set a threshold."""
CONFIDENCE = 0.95
"""Coverage of the noise band (two-sided)."""
FLAKY_MIN_CHANGES = 3
"""k: an item is flaky for a scorer once its score moved more than the threshold this often."""
SPARK_POINTS = 20
"""Baseline means shown in a sparkline."""


def _t_cdf_two_sided(t: float, df: int) -> float:
    """P(|T| <= t) for Student's t with an integer number of degrees of freedom (A&S 26.7.3-4)."""
    theta = math.atan(t / math.sqrt(df))
    s, c = math.sin(theta), math.cos(theta)
    if df % 2 == 1:
        total = 0.0
        if df > 1:
            term = c
            total = term
            for k in range(3, df - 1, 2):
                term *= c * c * (k - 1) / k
                total += term
        return 2 / math.pi * (theta + s * total)
    term = 1.0
    total = 1.0
    for k in range(2, df - 1, 2):
        term *= c * c * (k - 1) / k
        total += term
    return s * total


def t_quantile(p: float, df: int) -> float:
    """The two-sided Student-t critical value: ``P(|T| <= t) = p`` for integer ``df >= 1``."""
    if not 0 < p < 1 or df < 1:
        raise ValueError("t_quantile needs 0 < p < 1 and df >= 1")
    low, high = 0.0, max(10.0, 2 * normal_quantile(0.5 + p / 2))
    while _t_cdf_two_sided(high, df) < p:
        high *= 2
    for _ in range(100):
        mid = (low + high) / 2
        if _t_cdf_two_sided(mid, df) < p:
            low = mid
        else:
            high = mid
    return (low + high) / 2


@dataclass(frozen=True)
class NoiseBand:
    """How much one scorer's mean moves between baseline runs that measured the same thing."""

    scorer: str
    moves: list[float]
    """The usable moves used, oldest first (at most :data:`WINDOW`)."""
    band: float | None
    """Half-width of the 95% band; None with fewer than :data:`MIN_MOVES` moves."""
    means: list[float] = field(default_factory=list)
    """The newest :data:`SPARK_POINTS` baseline means of the scorer, oldest first."""

    @property
    def measured(self) -> bool:
        return self.band is not None


def _pairs(history: History, name: str) -> list[tuple[int, int]]:
    """Usable consecutive row pairs ``(i - 1, i)`` for a scorer, oldest first (all of them)."""
    entries = history.entries
    newest = next((e for e in reversed(entries) if _mean(e, name) is not None), None)
    if newest is None:
        return []
    target = (newest.summary.fingerprint, newest.summary.runs)
    out: list[tuple[int, int]] = []
    for i in range(1, len(entries)):
        a, b = entries[i - 1], entries[i]
        if (a.summary.fingerprint, a.summary.runs) != target or (
            b.summary.fingerprint,
            b.summary.runs,
        ) != target:
            continue
        if _mean(a, name) is None or _mean(b, name) is None:
            continue
        out.append((i - 1, i))
    return out


def _mean(entry: HistoryEntry, name: str) -> float | None:
    point = entry.summary.scorers.get(name)
    return point.mean if point is not None else None


def noise_band(history: History, name: str, *, window: int = WINDOW) -> NoiseBand:
    """The scorer's band from the newest ``window`` usable moves (see the module docstring)."""
    pairs = _pairs(history, name)[-window:]
    moves: list[float] = []
    for i, j in pairs:
        a, b = _mean(history.entries[i], name), _mean(history.entries[j], name)
        assert a is not None and b is not None
        moves.append(b - a)
    band: float | None = None
    if len(moves) >= MIN_MOVES:
        spread = math.sqrt(math.fsum(d * d for d in moves) / len(moves))
        band = t_quantile(CONFIDENCE, len(moves)) * spread
    means = [m for e in history.entries if (m := _mean(e, name)) is not None][-SPARK_POINTS:]
    return NoiseBand(scorer=name, moves=moves, band=band, means=means)


def noise_bands(history: History, names: Sequence[str]) -> dict[str, NoiseBand]:
    """:func:`noise_band` for each scorer."""
    return {name: noise_band(history, name) for name in names}


# ------------------------------------------------------------------------ threshold: auto


@dataclass(frozen=True)
class AutoThresholds:
    """``threshold: auto``: the measured thresholds and, for the others, why they fell back."""

    values: dict[str, float]
    """Scorer → threshold, for the scorers with a measured band."""
    bands: dict[str, NoiseBand]
    """Every scorer's band."""
    notes: list[str]
    """One sentence per scorer that kept its default, saying so."""


def default_threshold(kind: str | None) -> float:
    """Today's default for a scorer type (compare spec §2.4): 0.05 LLM, 0 deterministic, 0.1 unknown."""
    if kind == "llm":
        return DEFAULT_LLM_THRESHOLD
    if kind is None:
        return LEGACY_THRESHOLD
    return DEFAULT_DETERMINISTIC_THRESHOLD


def auto_thresholds(
    history: History | None, names: Sequence[str], types: Mapping[str, str] | None = None
) -> AutoThresholds:
    """Per-scorer thresholds from the history's noise bands (see the module docstring)."""
    types = types or {}
    values: dict[str, float] = {}
    bands: dict[str, NoiseBand] = {}
    notes: list[str] = []
    for name in names:
        band = noise_band(history, name) if history is not None else NoiseBand(name, [], None)
        bands[name] = band
        if band.band is not None:
            values[name] = band.band
            continue
        fallback = default_threshold(types.get(name))
        moves = len(band.moves)
        notes.append(
            f"threshold: auto needs {MIN_MOVES + 1} baseline runs that measured the same dataset and "
            f"scorers ({MIN_MOVES} run-to-run moves); {name!r} has {moves} move{'' if moves == 1 else 's'}, "
            f"so it keeps its default threshold {fallback:g}."
        )
    return AutoThresholds(values=values, bands=bands, notes=notes)


# ------------------------------------------------------------------------------- flaky items


_Layout = tuple[dict[str, int], dict[int, npt.NDArray[np.intp]], set[str]]


def _layout(history: History, rows: Sequence[int]) -> _Layout:
    """Columns for the keys of ``rows``: key → column, each row's column indices, and the keys
    that appear twice in a row. Rows with the same key list share one index array."""
    column: dict[str, int] = {}
    index: dict[int, npt.NDArray[np.intp]] = {}
    dupes: set[str] = set()
    previous: list[str] | None = None
    last = -1
    for r in rows:
        keys = history.entries[r].keys or []
        if previous is not None and (keys is previous or keys == previous):
            index[r] = index[last]
            last = r
            continue
        if len(set(keys)) != len(keys):
            seen: set[str] = set()
            for key in keys:
                if key in seen:
                    dupes.add(key)
                seen.add(key)
        for key in keys:
            if key not in column:
                column[key] = len(column)
        index[r] = np.fromiter((column[key] for key in keys), dtype=np.intp, count=len(keys))
        previous, last = keys, r
    return column, index, dupes


def flaky_items(
    history: History,
    thresholds: Mapping[str, float],
    *,
    window: int = WINDOW,
    k: int = FLAKY_MIN_CHANGES,
) -> dict[str, frozenset[str]]:
    """Scorer → keys of the items flaky for it (see the module docstring).

    ``thresholds``: the scorer thresholds of the comparison at hand (an item "moved" when its
    three-decimal change is beyond it). Only pairs of rows that both kept their item scores
    count; items whose key appears twice in a row are left out (they cannot be told apart).
    """
    out: dict[str, frozenset[str]] = {}
    layouts: dict[tuple[int, ...], _Layout] = {}  # scorers measured on the same rows share one
    for name, threshold in thresholds.items():
        pairs = [
            (i, j)
            for i, j in _pairs(history, name)
            if history.entries[i].keys is not None and history.entries[j].keys is not None
        ][-window:]
        if len(pairs) < k:
            out[name] = frozenset()
            continue
        rows = tuple(sorted({r for pair in pairs for r in pair}))
        layout = layouts.get(rows)
        if layout is None:
            layout = layouts[rows] = _layout(history, rows)
        column, index, dupes = layout
        at = {r: n for n, r in enumerate(rows)}
        matrix = np.full((len(rows), len(column)), np.nan)
        for r in rows:
            values = history.entries[r].scores.get(name)
            if values is not None and len(values) == len(index[r]):
                matrix[at[r], index[r]] = values
        moves = np.zeros(len(column), dtype=np.int64)
        limit = threshold if math.isfinite(threshold) else math.inf
        for i, j in pairs:
            with np.errstate(invalid="ignore"):
                d = round3(matrix[at[j]] - matrix[at[i]])
                moves += np.abs(d) > limit
        keys = list(column)
        out[name] = frozenset(keys[c] for c in np.flatnonzero(moves >= k).tolist() if keys[c] not in dupes)
    return out
