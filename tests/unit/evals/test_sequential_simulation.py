"""``repeats: auto`` keeps its error rate: seeded simulations of the rule (docs/gates.md,
"Sequential repeats"), driven through the runner's own pieces (``SequentialRounds``,
``run_rounds``, ``assemble_run``) and judged by ``compare_results``, as the action judges a PR.

Each workload draws a fresh baseline (every item run 5 times) and a fresh candidate. Items are
30 % noisy (a Bernoulli score with p in [0.2, 0.8]) and 70 % deterministic (always 0 or 1).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

from axl_action.compare.engine import CompareOptions, compare_results
from axl_action.evals.repeats import combine_repeats
from axl_action.evals.runner import assemble_run
from axl_action.evals.sequential import SequentialPlan, SequentialRounds, run_rounds
from axl_action.schema.accounting import fold_accounting
from axl_action.schema.journal import RunFacts
from axl_action.schema.view import RunView

pytestmark = pytest.mark.slow

ITEMS = 120
NOISY = 0.3
CAP = 5
ALPHA = 0.05
ZERO = fold_accounting([])


def _facts(n: int) -> RunFacts:
    return RunFacts(
        result_id="sim",
        dataset="sim",
        workflow="wf",
        scorer_types={"judge": "llm"},
        fingerprint={},
        items=n,
        item_error_limit=1.0,
    )


def _part(index: int, score: float) -> dict[str, Any]:
    return {
        "input": {"id": f"q{index}"},
        "output": score,
        "scores": {"judge": score},
        "duration": 1,
        "outcome": "completed",
        "accounting": ZERO,
    }


def _view(facts: RunFacts, items: list[dict[str, Any]], **kw: Any) -> RunView:
    return assemble_run(facts, items, fold_accounting([]), **kw).view


@dataclass(frozen=True)
class Workload:
    shift: float
    """The true change of the scorer's mean (spread over the noisy items)."""
    threshold: float


def _draw(rng: np.random.Generator, w: Workload) -> tuple[np.ndarray, np.ndarray]:
    noisy = rng.random(ITEMS) < NOISY
    p = np.where(noisy, rng.uniform(0.2, 0.8, ITEMS), rng.integers(0, 2, ITEMS).astype(float))
    moved = np.clip(p + np.where(noisy, w.shift / NOISY, 0.0), 0.0, 1.0)
    baseline = (rng.random((ITEMS, CAP)) < p[:, None]).astype(float)
    candidate = (rng.random((ITEMS, CAP)) < moved[:, None]).astype(float)
    return baseline, candidate


def _run(facts: RunFacts, draws: np.ndarray, counts: Sequence[int]) -> list[dict[str, Any]]:
    return [
        combine_repeats([_part(i, float(draws[i, r])) for r in range(counts[i])], ["judge"])
        for i in range(len(counts))
    ]


def simulate(seed: int, w: Workload, *, fixed: bool = False) -> tuple[str, str | None, int]:
    """One workload: the verdict of ``repeats: auto``, the verdict of ``repeats: 5`` (when
    ``fixed``), and the repeats auto ran."""
    rng = np.random.default_rng(seed)
    base_draws, cand_draws = _draw(rng, w)
    facts = _facts(ITEMS)
    baseline = _view(facts, _run(facts, base_draws, [CAP] * ITEMS))
    options = CompareOptions(thresholds=w.threshold, seed=seed)

    plan = SequentialPlan(baseline=[baseline], max_repeats=CAP, thresholds=w.threshold, seed=seed)
    rounds = SequentialRounds(plan, ["judge"])
    settled: dict[int, dict[str, Any]] = {}

    class Hooks:
        def run_round(self, repeat: int, active: Sequence[int]) -> None:
            for index in active:
                rounds.add(index, _part(index, float(cand_draws[index, repeat])))

        def interim_view(self) -> RunView:
            return _view(facts, [rounds.item(i) for i in range(ITEMS)])

        def settle(self, index: int) -> None:
            settled[index] = rounds.item(index)

        def stop(self) -> bool:
            return False

    run_rounds(rounds, range(ITEMS), Hooks())
    record = rounds.record([settled[i] for i in range(ITEMS)])
    auto = _view(facts, [settled[i] for i in range(ITEMS)], sequential=record)
    auto_verdict = compare_results([baseline], auto, options).scorers["judge"].verdict
    fixed_verdict = None
    if fixed:
        every = _view(facts, _run(facts, cand_draws, [CAP] * ITEMS))
        fixed_verdict = compare_results([baseline], every, options).scorers["judge"].verdict
    return auto_verdict, fixed_verdict, record.repeats_run


def _rate(hits: int, n: int) -> tuple[float, float]:
    rate = hits / n
    return rate, 1.96 * math.sqrt(max(rate * (1 - rate), 1e-9) / n)


def test_false_alarms_stay_within_alpha_over_1000_null_workloads() -> None:
    # Threshold 0: a change is called as soon as the interval leaves 0, the hardest case for
    # a rule that looks up to five times.
    w = Workload(shift=0.0, threshold=0.0)
    runs = [simulate(seed, w) for seed in range(1000)]
    alarms = sum(auto in ("regressed", "improved") for auto, _, _ in runs)
    rate, half = _rate(alarms, len(runs))
    print(f"\nnull, threshold 0: false alarms {rate:.3f} ± {half:.3f} (nominal {ALPHA})")
    assert rate - half <= ALPHA
    spent = np.mean([n for _, _, n in runs]) / (ITEMS * CAP)
    assert spent <= 0.5


def test_unchanged_code_is_decided_cheaply_and_never_called_changed() -> None:
    w = Workload(shift=0.0, threshold=0.05)
    runs = [simulate(10_000 + seed, w) for seed in range(300)]
    assert sum(auto in ("regressed", "improved") for auto, _, _ in runs) / len(runs) <= ALPHA
    spent = np.mean([n for _, _, n in runs]) / (ITEMS * CAP)
    print(f"\nnull, threshold 0.05: repeats spent {spent:.2f} of repeats: {CAP}")
    assert spent <= 0.5


def test_a_change_of_the_threshold_is_found_as_often_as_by_fixed_repeats() -> None:
    w = Workload(shift=-0.05, threshold=0.05)
    runs = [simulate(20_000 + seed, w, fixed=True) for seed in range(300)]
    auto_power, auto_half = _rate(sum(a == "regressed" for a, _, _ in runs), len(runs))
    fixed_power, fixed_half = _rate(sum(f == "regressed" for _, f, _ in runs), len(runs))
    spent = np.mean([n for _, _, n in runs]) / (ITEMS * CAP)
    print(
        f"\nchange = threshold: power auto {auto_power:.3f}, fixed {fixed_power:.3f}; "
        f"repeats spent {spent:.2f} of repeats: {CAP}"
    )
    # Equal or better, within the two estimates' sampling error.
    assert auto_power + math.hypot(auto_half, fixed_half) >= fixed_power
    assert spent <= 0.5


def test_a_large_change_is_decided_at_the_first_look() -> None:
    w = Workload(shift=-0.15, threshold=0.05)
    runs = [simulate(30_000 + seed, w) for seed in range(50)]
    assert all(a == "regressed" for a, _, _ in runs)
    assert np.mean([n for _, _, n in runs]) < ITEMS * 1.2
