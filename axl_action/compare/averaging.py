"""The one per-item averaging rule over repeated runs, shared by compare and the history.

An item's score for a scorer, over the runs of one side, is the mean of its non-null scores,
summed in run order like the reference. An item that errored in *any* of those runs has no
average at all: its scores from the other runs describe a different workload (the failed
run scored nothing, or scored an error path), so compare does not count it as a regression
or an improvement, and the history does not read it as a flaky item.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from axl_action.schema.view import F64, RunView

Bools = npt.NDArray[np.bool_]


def errored_in_any(runs: Sequence[RunView], index: npt.NDArray[np.intp]) -> Bools:
    """Where the item at ``index`` errored in at least one of ``runs``."""
    skip = np.zeros(len(index), dtype=np.bool_)
    for run in runs:
        skip |= run.items.errored[index]
    return skip


def item_average(runs: Sequence[RunView], name: str, index: npt.NDArray[np.intp]) -> tuple[F64, Bools]:
    """Each item's mean score for ``name`` over ``runs`` (items picked by ``index`` in every
    run), and where that mean exists: some run scored the item and no run errored on it."""
    total = np.zeros(len(index))
    count = np.zeros(len(index))
    for run in runs:
        score = run.items.column(name).score[index]
        ok = ~np.isnan(score)
        total += np.where(ok, score, 0.0)
        count += ok
    with np.errstate(invalid="ignore", divide="ignore"):
        average: F64 = total / count
    return average, (count > 0) & ~errored_in_any(runs, index)
