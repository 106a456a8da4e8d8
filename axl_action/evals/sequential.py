"""``repeats: auto``: repeat an item only while a scorer's verdict against the baseline is open.

The run goes in rounds. Round 1 runs every item once. After each round the candidate so far is
compared with the baseline by compare's own engine (``compare_results``: the paired bootstrap,
the thresholds, the verdict rule), and each scorer whose verdict is ``regressed``, ``improved``
or ``unchanged`` is *decided* at that look. The next round repeats only the items that can still
move an open scorer, until every scorer is decided, an item reaches ``max-repeats``, the budget
closes or the run is cancelled.

**Why the error rate holds.** Stopping when the data look good breaks a fixed-sample test: five
looks at α = 0.05 each call about 14% of unchanged runs regressed. Here every look, and the
final comparison, uses the level α / K, with K = ``max-repeats`` the most looks a run can take
(Bonferroni error spending: a group-sequential test whose α-spending function spends α/K at
each of K looks; Lan & DeMets, *Biometrika* 70(3), 1983). Whatever look a scorer stops at, the
chance that any of its K possible looks calls a change that is not there is at most
K · α/K = α; the same bound holds for calling it ``unchanged`` when it changed by its threshold
or more. Two rules keep the looks honest:

* a decided scorer's scores are frozen: an item's mean for it is over the repeats up to the
  look that decided it (:attr:`Decision.look`), so the final comparison sees exactly the data
  that look saw, even when the item ran on for another scorer;
* which items run again never depends on the candidate's own scores of that item, only on the
  baseline: an item is repeated for an open scorer when its baseline scores for that scorer
  varied across the baseline's repeats or runs (items the baseline cannot say anything about,
  as with a baseline that ran once, are all repeated). Choosing by the candidate's scores
  would bias the item means: an item re-run because its first score looked odd regresses
  toward its mean only on one side.

The result records the rule in ``metadata.sequential`` (:class:`SequentialRecord`), and
``compare`` reads it back: a comparison whose candidate ran ``repeats: auto`` uses the level
that run spent (its CI column then reads ``CI 99%`` for K = 5).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from axl_action.compare.alignment import align
from axl_action.compare.bootstrap import DEFAULT_ALPHA
from axl_action.compare.engine import CompareOptions, compare_results
from axl_action.compare.models import Verdict
from axl_action.compare.thresholds import Thresholds
from axl_action.errors import AxlError
from axl_action.evals.repeats import combine_repeats, repeats_ran
from axl_action.schema.result import SequentialDecision, SequentialRecord
from axl_action.schema.view import F64, Bools, ItemColumns, RunView

DEFAULT_MAX_REPEATS = 5
"""``max-repeats`` when not given: the cap of ``repeats: auto``."""

_DECIDED: frozenset[Verdict] = frozenset({"regressed", "improved", "unchanged"})


@dataclass(frozen=True)
class SequentialPlan:
    """What ``repeats: auto`` compares with and how much it may spend."""

    baseline: Sequence[RunView]
    """The baseline's runs of this eval (empty: no baseline, so every item runs the cap)."""
    max_repeats: int = DEFAULT_MAX_REPEATS
    """The most times an item runs, and so the most looks (K)."""
    thresholds: Thresholds = None
    """As ``compare --threshold``: the verdicts the looks reach are the comparison's."""
    alpha: float = DEFAULT_ALPHA
    """The error rate spent over all looks."""
    seed: int | None = None
    """Bootstrap seed of the looks (look ``k`` uses ``seed + k``)."""

    @property
    def look_alpha(self) -> float:
        """The level of every look, and of the final comparison: α / K."""
        return self.alpha / self.max_repeats


@dataclass
class SequentialRounds:
    """The state of one ``repeats: auto`` run between rounds: each item's repeats so far, which
    scorers are decided and at which look. The runner feeds it; the rule lives here."""

    plan: SequentialPlan
    scorer_names: Sequence[str]
    parts: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    decisions: dict[str, SequentialDecision] = field(default_factory=dict)
    looks: int = 0
    note: str | None = None
    """Why the rounds could not compare with the baseline, when they could not."""
    _eligible: dict[str, Bools] | None = None
    _folded: dict[int, tuple[Any, dict[str, Any]]] = field(default_factory=dict)
    settled: set[int] = field(default_factory=set)
    """Items already settled (journalled) before the rounds end."""

    def add(self, index: int, part: dict[str, Any]) -> None:
        """Keep one repeat of item ``index`` (called once per item per round, rounds in order)."""
        self.parts.setdefault(index, []).append(part)

    def item(self, index: int) -> dict[str, Any]:
        """Item ``index`` folded from its repeats so far, each decided scorer's mean frozen at
        the look that decided it. Folded again only when that changes: every look reads every
        item, and only the items that ran again did."""
        runs = self.parts[index]
        if len(runs) == 1:
            # An item that ran once is that run, as without repeats (no ``repeats`` list: the
            # pass rate counts the item itself as its one try).
            return runs[0]
        counted = {name: min(len(runs), d.look) for name, d in self.decisions.items()}
        key = (len(runs), tuple(counted.items()))
        kept = self._folded.get(index)
        if kept is not None and kept[0] == key:
            return kept[1]
        item = combine_repeats(runs, self.scorer_names, counted)
        self._folded[index] = (key, item)
        return item

    @property
    def open_names(self) -> list[str]:
        return [name for name in self.scorer_names if name not in self.decisions]

    def look(self, interim: RunView) -> None:
        """Compare the candidate so far with the baseline and decide the scorers it settles."""
        self.looks += 1
        if not self.plan.baseline or self.note is not None:
            return
        options = CompareOptions(
            thresholds=self.plan.thresholds,
            seed=None if self.plan.seed is None else self.plan.seed + self.looks,
            alpha=self.plan.look_alpha,
        )
        try:
            comparison = compare_results(list(self.plan.baseline), interim, options)
        except AxlError as err:
            self.note = f"the baseline cannot be compared with this run ({err}), so every item runs the cap"
            return
        for name in self.open_names:
            scorer = comparison.scorers.get(name)
            if scorer is not None and scorer.verdict in _DECIDED:
                self.decisions[name] = SequentialDecision(look=self.looks, verdict=scorer.verdict)

    def next_round(self, candidates: Sequence[int], interim: RunView) -> list[int]:
        """Which of ``candidates`` (the items that ran every round so far) run again."""
        open_names = self.open_names
        if not open_names or self.looks >= self.plan.max_repeats:
            return []
        eligible = self._eligible_items(interim.items)
        if eligible is None:
            return list(candidates)
        mask = np.zeros(interim.size, dtype=np.bool_)
        for name in open_names:
            column = eligible.get(name)
            mask |= column if column is not None else True
        return [index for index in candidates if mask[index]]

    def prepare(self, planned: ItemColumns) -> None:
        """Read which items the baseline shows noisy, from the columns of the items to run
        (their inputs are all the pairing reads), before round 1 starts."""
        self._eligible_items(planned)

    def final_after_first(self, index: int) -> bool:
        """Whether item ``index`` can never run again: the baseline shows it steady for every
        scorer. (False when the baseline cannot tell.)"""
        eligible = self._eligible
        return eligible is not None and not any(bool(column[index]) for column in eligible.values())

    def _eligible_items(self, items: ItemColumns) -> dict[str, Bools] | None:
        if self._eligible is None and self.plan.baseline and self.note is None:
            self._eligible = varied_in_baseline(self.plan.baseline, items, self.scorer_names)
        return self._eligible

    def record(self, items: Sequence[Mapping[str, Any]]) -> SequentialRecord:
        """``metadata.sequential`` of the finished run whose items are ``items``."""
        counts = [repeats_ran(item) for item in items]
        extra = {"note": self.note} if self.note is not None else {}
        return SequentialRecord(
            method="bonferroni-looks",
            max_repeats=self.plan.max_repeats,
            alpha=self.plan.alpha,
            look_alpha=self.plan.look_alpha,
            looks=self.looks,
            mean_repeats=round(sum(counts) / len(counts), 3) if counts else 0.0,
            repeats_run=sum(counts),
            decided={name: self.decisions[name] for name in self.scorer_names if name in self.decisions},
            open=self.open_names,
            baseline=bool(self.plan.baseline) and self.note is None,
            **extra,
        )


def varied_in_baseline(
    baseline: Sequence[RunView], items: ItemColumns, names: Sequence[str]
) -> dict[str, Bools] | None:
    """Per scorer, which candidate items pair with a baseline item whose scores for it varied
    (across the baseline's repeats of the item, or across its runs). ``None`` when the baseline
    cannot tell (one run without repeats): then every item may be noisy. Candidate items with
    no baseline partner are marked noisy: nothing is known of them."""
    if len(baseline) == 1 and not baseline[0].items.repeats:
        return None
    # compare's own pairing, which reads only the candidate's items (so its header is moot).
    candidate = RunView(header=baseline[0].header, items=items)
    alignment = align(list(baseline), [candidate])
    b_index, c_index = alignment.pairs(baseline[0].size, candidate.size)
    size = baseline[0].size
    low = {name: np.full(size, np.inf) for name in names}
    high = {name: np.full(size, -np.inf) for name in names}
    for run in baseline:
        _extend_range(run, names, size, low, high)
    out: dict[str, Bools] = {}
    for name in names:
        varied = np.ones(candidate.size, dtype=np.bool_)
        varied[c_index] = high[name][b_index] > low[name][b_index]
        out[name] = varied
    return out


def _extend_range(
    run: RunView, names: Sequence[str], size: int, low: dict[str, F64], high: dict[str, F64]
) -> None:
    """Widen each item's [low, high] score range by ``run``: its repeats' scores where it has
    repeats (its own ``scores`` are their mean), else its score."""
    n = min(size, run.size)
    plain = np.ones(n, dtype=np.bool_)
    for index in run.items.repeats:
        if index < n:
            plain[index] = False
    for name in names:
        score = run.items.column(name).score[:n]
        ok = plain & ~np.isnan(score)
        low[name][:n] = np.where(ok, np.minimum(low[name][:n], score), low[name][:n])
        high[name][:n] = np.where(ok, np.maximum(high[name][:n], score), high[name][:n])
    for index, tries in run.items.repeats.items():
        if index >= n:
            continue
        for attempt in tries:
            scores = attempt.get("scores")
            if not isinstance(scores, Mapping):
                continue
            for name in names:
                value = scores.get(name)
                if isinstance(value, int | float) and not isinstance(value, bool):
                    if value < low[name][index]:
                        low[name][index] = value
                    if value > high[name][index]:
                        high[name][index] = value


class RoundHooks(Protocol):
    """What :func:`run_rounds` needs from the run that drives it (the runner's ``_Rounds``;
    the simulations' own)."""

    def run_round(self, repeat: int, active: Sequence[int]) -> None:
        """Run repeat ``repeat`` of the items ``active``, adding each to the rounds."""

    def interim_view(self) -> RunView:
        """The candidate so far, as a look compares it."""

    def settle(self, index: int) -> None:
        """Item ``index`` will run no more."""

    def stop(self) -> bool:
        """Whether the run may not start another round (cancelled, budget closed)."""


def run_rounds(rounds: SequentialRounds, todo: Sequence[int], hooks: RoundHooks) -> None:
    """Drive the rounds over the items ``todo``: run, look, choose, settle, until no item is
    left to run again."""
    active = list(todo)
    repeat = 0
    while active:
        hooks.run_round(repeat, active)
        repeat += 1
        view = hooks.interim_view()
        rounds.look(view)
        following = [] if hooks.stop() else rounds.next_round(active, view)
        keep = set(following)
        for index in active:
            if index not in keep and index not in rounds.settled:
                hooks.settle(index)
        active = following
