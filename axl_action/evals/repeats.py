"""Per-item repeats (``repeats: N``): one item run N times inside one run, folded into one item.

Each repeat is an ordinary item run (workflow, scorers, accounting); the pool runs the repeats
of all items concurrently. When an item's last repeat settles, :func:`combine_repeats` folds
them into the one item the result holds:

* ``scores`` keeps the **mean** over the repeats that produced a score (so the 0.24 reader, and
  compare, which pairs items by ``scores``, read the mean), and ``scoreDetails[name].score``
  the same mean;
* every other item field (output, outcome, timing, metadata...) is the **representative**
  repeat's: the first that completed, else the first;
* ``duration`` is the mean over the repeats that ran; ``accounting`` (and ``cost``,
  ``scorerCost``, ``unpriced``) folds every repeat's, since every repeat was paid for;
* ``repeats`` lists each repeat in order with the fields in :data:`REPEAT_FIELDS`: the key the
  0.24 reader ignores, and what the per-item pass rate is counted from
  (``schema.view.pass_counts``).

An item none of whose repeats ran (all cancelled or refused by the budget) is its first
repeat's stub, without ``repeats``, so a resume runs it again like any other stub.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from axl_action.cache.calls import ITEM_REPEAT
from axl_action.evals.common import attach_accounting
from axl_action.schema.accounting import fold_accounting
from axl_action.schema.numbers import score_value

MAX_REPEATS = 1000
"""The largest ``repeats`` accepted: beyond it a typo (``--repeats 10000``) would multiply a
suite's spend before anyone noticed."""

REPEAT_FIELDS: tuple[str, ...] = (
    "output",
    "scores",
    "duration",
    "outcome",
    "error",
    "scoreDetails",
    "scorerErrors",
    "cost",
    "scorerCost",
)
"""The fields of one repeat kept under ``item.repeats[i]``, in this order (an item's own
names and meanings; the accounting is folded into the item's)."""

_RAN = frozenset({"completed", "failed"})
"""Repeat outcomes that ran the workflow (the others are stubs: cancelled, budget)."""


T = TypeVar("T")


def in_repeat(repeat: int, fn: Callable[..., T], *args: Any) -> T:
    """``fn(*args)`` as repeat ``repeat`` of an item: its cached calls are keyed by it."""
    token = ITEM_REPEAT.set(repeat)
    try:
        return fn(*args)
    finally:
        ITEM_REPEAT.reset(token)


class RepeatSlots:
    """The repeats of the items in flight, shared by the workers: :meth:`add` keeps a settled
    repeat and returns the item folded from all of them once the last one has settled."""

    def __init__(self, repeats: int, scorer_names: Sequence[str]) -> None:
        self.repeats = repeats
        self.names = list(scorer_names)
        self._parts: dict[int, list[dict[str, Any] | None]] = {}
        self._lock = threading.Lock()

    def add(self, index: int, repeat: int, part: dict[str, Any]) -> dict[str, Any] | None:
        with self._lock:
            slot = self._parts.setdefault(index, [None] * self.repeats)
            slot[repeat] = part
            if any(p is None for p in slot):
                return None
            del self._parts[index]
        return combine_repeats([p for p in slot if p is not None], self.names)


def validate_repeats(value: object, where: str) -> int:
    """``value`` as a repeat count, or ``ValueError`` saying what is allowed (``where`` names
    the setting: ``--repeats``, ``repeats=`` of ``define_eval``...)."""
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_REPEATS:
        raise ValueError(
            f"{where} must be a whole number from 1 to {MAX_REPEATS} (got {value!r}); 1 runs each item once"
        )
    return value


def repeats_ran(item: Mapping[str, Any]) -> int:
    """How many repeats of ``item`` ran: its ``repeats`` list's length, else 1 when the item
    itself ran (an item run once has no list) and 0 for a stub."""
    runs = item.get("repeats")
    if isinstance(runs, list):
        return len(runs)
    return 1 if item.get("outcome") in _RAN else 0


def repeat_record(item: Mapping[str, Any]) -> dict[str, Any]:
    """One repeat as ``item.repeats[i]`` keeps it."""
    return {key: item[key] for key in REPEAT_FIELDS if key in item}


def combine_repeats(
    runs: Sequence[dict[str, Any]],
    scorer_names: Sequence[str],
    counted: Mapping[str, int] | None = None,
) -> dict[str, Any]:
    """The one item of ``runs`` (the settled repeats of one item, in repeat order).

    ``counted``: for ``repeats: auto`` (``evals/sequential.py``), how many leading repeats a
    scorer's mean is over (the repeats up to the look that decided it); the others use all."""
    ran = [run for run in runs if run.get("outcome") in _RAN]
    if not ran:
        return runs[0]
    representative = next((run for run in ran if run.get("outcome") == "completed"), ran[0])
    item = dict(representative)
    if representative.get("outcome") == "completed":
        limit = counted or {}
        item["scores"] = {name: _mean_score(runs[: limit.get(name)], name) for name in scorer_names}
        details = representative.get("scoreDetails")
        if isinstance(details, Mapping):
            item["scoreDetails"] = _mean_details(runs, details, item["scores"])
    durations = [run["duration"] for run in ran if isinstance(run.get("duration"), int | float)]
    if durations:
        item["duration"] = round(sum(durations) / len(durations))
    # One repeat's record is its own fold (the runner wrote it; folding re-validates it, which
    # was most of a single-repeat item's cost under repeats: auto).
    accounting = (
        dict(runs[0]["accounting"]) if len(runs) == 1 else fold_accounting(r["accounting"] for r in runs)
    )
    accounting.pop("scope", None)
    attach_accounting(item, accounting)
    calls = [{**call, "repeat": r} for r, run in enumerate(runs) for call in run.get("calls") or ()]
    if calls:
        item["calls"] = calls
    else:
        item.pop("calls", None)
    item["repeats"] = [repeat_record(run) for run in runs]
    return item


def _mean_score(runs: Sequence[Mapping[str, Any]], name: str) -> float | None:
    values = [
        score
        for run in runs
        if isinstance(scores := run.get("scores"), Mapping)
        and isinstance(score := scores.get(name), int | float)
        and not isinstance(score, bool)
    ]
    return score_value(sum(values) / len(values)) if values else None


def _mean_details(
    runs: Sequence[Mapping[str, Any]], details: Mapping[str, Any], means: Mapping[str, Any]
) -> dict[str, Any]:
    """The representative's details, each scorer's taken from the first repeat that scored it
    (so a scorer with a mean reads ``scored``) with its score replaced by the mean."""
    out: dict[str, Any] = {}
    for name, detail in details.items():
        mean = means.get(name)
        if mean is not None and (not isinstance(detail, Mapping) or detail.get("score") is None):
            detail = next(
                (
                    found[name]
                    for run in runs
                    if isinstance(found := run.get("scoreDetails"), Mapping)
                    and isinstance(found.get(name), Mapping)
                    and found[name].get("score") is not None
                ),
                detail,
            )
        if isinstance(detail, Mapping) and mean is not None:
            detail = {**detail, "score": mean}
        out[name] = detail
    return out


__all__ = [
    "MAX_REPEATS",
    "REPEAT_FIELDS",
    "RepeatSlots",
    "combine_repeats",
    "in_repeat",
    "repeat_record",
    "repeats_ran",
    "validate_repeats",
]
