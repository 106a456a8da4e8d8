"""Noise bands, ``threshold: auto`` and flaky items, on seeded runs whose noise is known."""

from __future__ import annotations

import itertools
import math
import random
from typing import Any

import numpy as np
import pytest
from history_synth import Suite, run_wire, timestamp
from null_runs import false_alarms

from axl_action.history import (
    FLAKY_MIN_CHANGES,
    History,
    HistoryEntry,
    RowSummary,
    append,
    auto_thresholds,
    flaky_items,
    history_entry,
    noise_band,
    t_quantile,
)
from axl_action.history.model import CostPoint, ScorerPoint
from axl_action.schema.view import wire_view


def entry(
    means: dict[str, float | None], *, k: int = 0, fingerprint: str = "fp", runs: int = 1
) -> HistoryEntry:
    summary = RowSummary(
        run_id=str(k),
        date=timestamp(k),
        result_id=f"r{k}",
        dataset="d",
        fingerprint=fingerprint,
        runs=runs,
        items=0,
        scorers={n: ScorerPoint(mean=m, n=10, scored=10, failed=0) for n, m in means.items()},
        item_error_rate=0.0,
        cost=CostPoint(known=0.0, completeness="complete"),
    )
    return HistoryEntry(summary=summary, keys=None, scores={})


def of(entries: list[HistoryEntry]) -> History:
    return History(entries=tuple(entries))


# ------------------------------------------------------------------------- t quantile


@pytest.mark.parametrize(
    ("df", "table"), [(1, 12.7062), (2, 4.3027), (4, 2.7764), (9, 2.2622), (19, 2.0930), (30, 2.0423)]
)
def test_t_quantile_matches_the_table(df: int, table: float) -> None:
    assert t_quantile(0.95, df) == pytest.approx(table, abs=1e-4)


@pytest.mark.parametrize("df", [3, 7, 20])
def test_t_quantile_integrates_to_its_probability(df: int) -> None:
    t = t_quantile(0.95, df)
    x = np.linspace(-t, t, 200_001)
    density = (
        math.gamma((df + 1) / 2)
        / (math.sqrt(df * math.pi) * math.gamma(df / 2))
        * (1 + x * x / df) ** (-(df + 1) / 2)
    )
    assert float(np.trapezoid(density, x)) == pytest.approx(0.95, abs=1e-6)


# ------------------------------------------------------------------------- noise band


def test_band_is_t_times_the_rms_of_the_newest_moves() -> None:
    means = [0.5, 0.52, 0.49, 0.5, 0.53, 0.51]
    band = noise_band(of([entry({"s": m}, k=k) for k, m in enumerate(means)]), "s")
    moves = [b - a for a, b in itertools.pairwise(means)]
    assert band.moves == pytest.approx(moves)
    rms = math.sqrt(sum(d * d for d in moves) / 5)
    assert band.band == pytest.approx(t_quantile(0.95, 5) * rms)
    assert band.means == means


def test_only_the_newest_twenty_comparable_moves_count() -> None:
    rows = [entry({"s": 0.1 * (k % 2)}, k=k, fingerprint="old") for k in range(5)]
    rows += [entry({"s": 0.5 + 0.01 * (k % 2)}, k=k + 5) for k in range(30)]
    band = noise_band(of(rows), "s")
    assert len(band.moves) == 20 and all(abs(abs(d) - 0.01) < 1e-9 for d in band.moves)
    assert band.band == pytest.approx(t_quantile(0.95, 20) * 0.01)
    assert len(band.means) == 20


def test_rows_that_measured_something_else_break_the_chain() -> None:
    rows = [
        entry({"s": 0.5}, k=0),
        entry({"s": 0.6}, k=1),
        entry({"s": 0.9}, k=2, fingerprint="other"),  # dataset changed for one run
        entry({"s": 0.5}, k=3),
        entry({"s": 0.6}, k=4, runs=3),  # run count changed
        entry({"s": None}, k=5),  # scorer scored nothing
        entry({"s": 0.55}, k=6),
        entry({"s": 0.5}, k=7),
    ]
    band = noise_band(of(rows), "s")
    assert band.moves == pytest.approx([0.1, -0.05])
    assert band.band is None  # 2 moves < 4


def test_band_covers_95_percent_of_the_next_move() -> None:
    rng = random.Random(11)
    inside = 0
    trials = 2000
    for _ in range(trials):
        sigma = rng.uniform(0.005, 0.05)
        means = [0.7 + rng.gauss(0, sigma) for _ in range(21)]
        band = noise_band(of([entry({"s": m}, k=k) for k, m in enumerate(means)]), "s").band
        assert band is not None
        nxt = 0.7 + rng.gauss(0, sigma)
        inside += abs(nxt - means[-1]) <= band
    assert 0.93 <= inside / trials <= 0.97, inside / trials


def test_band_of_a_binary_judge_matches_its_known_noise() -> None:
    # 21 runs of a pass/fail judge over 200 items: a move has sd sqrt(2 * sum p(1-p)) / n.
    suite = Suite(n=200, kinds={"judge": "binary"}, seed=3)
    p = np.array(suite.quality["judge"])
    expected = 1.96 * math.sqrt(2 * float(np.sum(p * (1 - p)))) / 200
    bands = []
    for seed in range(6):
        h = History()
        for k in range(21):
            v = wire_view(run_wire(suite, seed * 100 + k, run_id=f"r{k}", timestamp=timestamp(k)))
            h = append(h, history_entry([v], run_id=str(k)))
        band = noise_band(h, "judge").band
        assert band is not None
        bands.append(band)
    assert float(np.mean(bands)) == pytest.approx(expected, rel=0.2)


# ------------------------------------------------------------------------ threshold: auto


def test_auto_falls_back_to_the_defaults_with_fewer_than_five_rows() -> None:
    rows = [entry({"j": 0.5 + 0.01 * k, "d": 1.0}, k=k) for k in range(4)]
    auto = auto_thresholds(of(rows), ["j", "d", "legacy"], {"j": "llm", "d": "deterministic"})
    assert auto.values == {}
    assert len(auto.notes) == 3
    assert "'j' has 3 moves, so it keeps its default threshold 0.05" in auto.notes[0]
    assert "'d' has 3 moves, so it keeps its default threshold 0." in auto.notes[1]
    assert "keeps its default threshold 0.1" in auto.notes[2]
    five = auto_thresholds(of([*rows, entry({"j": 0.52, "d": 1.0}, k=4)]), ["j", "d"], {"j": "llm"})
    assert set(five.values) == {"j", "d"} and five.values["d"] == 0.0 and five.notes == []
    assert auto_thresholds(None, ["j"], {"j": "llm"}).values == {}


@pytest.mark.slow
def test_auto_threshold_false_alarms_over_1000_seeded_null_runs() -> None:
    """Documented bound (docs/history.md): at most 4% of null comparisons called regressed.

    Each null run: 21 baselines of a 30-item pass/fail judge whose strictness also drifts from
    run to run (sd 0.05, invisible to the item-level bootstrap), and a candidate drawn the same
    way. Expected rate 2.5%; benchmarks/history_scale.py prints the figures.
    """
    tally = false_alarms(1000, n=30, day_sigma=0.05, kinds={"judge": "binary"})
    assert tally.comparisons == 1000 and tally.auto_measured == 1000
    assert tally.rate(tally.auto_regressed) <= 0.04
    assert tally.auto_regressed <= tally.default_regressed


# --------------------------------------------------------------------------- flaky items


def _item_history(
    scores: dict[str, list[list[float | None]]], fingerprints: list[str] | None = None
) -> History:
    """Rows of item scores: scores[scorer][row] lists one score per key k0, k1, ..."""
    names = list(scores)
    rows = len(scores[names[0]])
    entries = []
    for r in range(rows):
        e = entry({n: 0.5 for n in names}, k=r, fingerprint=(fingerprints or ["fp"] * rows)[r])
        width = len(scores[names[0]][r])
        entries.append(
            HistoryEntry(
                summary=e.summary,
                keys=[f"k{i}" for i in range(width)],
                scores={n: np.array(scores[n][r], dtype=np.float64) for n in names},
            )
        )
    return of(entries)


def test_an_item_is_flaky_once_it_moved_beyond_the_threshold_k_times() -> None:
    assert FLAKY_MIN_CHANGES == 3
    col: dict[str, list[float | None]] = {
        "k0": [1, 0, 1, 0, 1, 1],  # 4 moves: flaky
        "k1": [1, 0, 1, 1, 1, 1],  # 2 moves (a change and its revert): not flaky
        "k2": [1, 0.5, 1, 0.5, 1, 1],  # 4 moves of 0.5
        "k3": [0.8, 0.82, 0.8, 0.82, 0.8, 0.82],  # 5 moves of 0.02: below a 0.05 threshold
        "k4": [1, None, 0, None, 1, 0],  # only 1 pair with both scores (1 move)
    }
    rows = [[col[f"k{i}"][r] for i in range(5)] for r in range(6)]
    h = _item_history({"judge": rows})
    assert flaky_items(h, {"judge": 0.05})["judge"] == {"k0", "k2"}
    assert flaky_items(h, {"judge": 0.0})["judge"] == {"k0", "k2", "k3"}
    assert flaky_items(h, {"judge": 0.5})["judge"] == {"k0"}  # strict: a move of exactly 0.5 is not beyond
    assert flaky_items(h, {"judge": 0.05}, k=5)["judge"] == set()


def test_flaky_items_ignore_pairs_that_measured_something_else() -> None:
    rows: list[list[float | None]] = [[1], [0], [1], [0], [1]]
    assert flaky_items(_item_history({"s": rows}), {"s": 0.0})["s"] == {"k0"}
    fps = ["a", "a", "b", "b", "b"]  # the newest row's fingerprint b: only 2 usable pairs
    assert flaky_items(_item_history({"s": rows}, fps), {"s": 0.0})["s"] == set()


def test_seeded_coin_flip_items_are_found_and_stable_ones_are_not() -> None:
    suite = Suite(
        n=60, kinds={"judge": "levels", "exact": "deterministic"}, seed=9, flaky=frozenset({4, 17, 33})
    )
    h = History()
    for k in range(21):
        h = append(
            h,
            history_entry(
                [wire_view(run_wire(suite, k, run_id=f"r{k}", timestamp=timestamp(k)))], run_id=str(k)
            ),
        )
    found: Any = flaky_items(h, {"judge": 0.3, "exact": 0.0})
    assert {"id:item-00004", "id:item-00017", "id:item-00033"} <= found["judge"]
    assert len(found["judge"]) <= 8  # a 0.12-sd judge rarely moves two levels, three times
    assert found["exact"] == set()


def test_an_item_that_errored_in_one_run_has_no_average_as_in_compare() -> None:
    # Two runs of one sha; item 3 errored in the second. Compare leaves such an item out of the
    # item-level changes, so the history must not average it from the run that scored it (one
    # failed run would otherwise read as a move and make the item look flaky).
    from axl_action.compare.averaging import item_average

    suite = Suite(n=6, kinds={"judge": "levels"}, seed=3)
    runs = [
        wire_view(run_wire(suite, 1, run_id="a", timestamp=timestamp(1))),
        wire_view(run_wire(suite, 1, run_id="b", timestamp=timestamp(1), failed_items=[3])),
    ]
    scores = history_entry(runs, run_id="1").scores["judge"]
    assert math.isnan(scores[3])
    assert not np.isnan(np.delete(scores, 3)).any()
    _, usable = item_average(runs, "judge", np.arange(6, dtype=np.intp))
    assert list(usable) == [True, True, True, False, True, True]
