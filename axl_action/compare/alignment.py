"""Pairing items across the two sides: by position (the reference) or by item key.

The reference pairs item ``i`` with item ``i``. That is right when both sides ran the same
dataset in the same order, and silently wrong when the dataset was reordered, grew or shrank:
every shifted item then shows up as a fake regression or improvement. When every item key is
unique on both sides we can do better and pair by key, and report exactly which items were
added, removed or moved. With duplicate keys (a dataset listing the same input twice) there
is no unambiguous pairing, so we fall back to positions and say why.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from axl_action.schema import RunView

Indices = npt.NDArray[np.intp]

# Cap on keys listed in added/removed (the counts are always exact).
MAX_LISTED_KEYS = 50


@dataclass(frozen=True)
class Alignment:
    """How items pair up. In key mode ``baseline_index[j]`` pairs with ``candidate_index[j]``."""

    mode: str  # "position" | "key"
    baseline_index: Indices = field(default_factory=lambda: np.empty(0, dtype=np.intp))
    candidate_index: Indices = field(default_factory=lambda: np.empty(0, dtype=np.intp))
    keys: list[str] = field(default_factory=list)
    added: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    added_count: int = 0
    removed_count: int = 0
    reordered: bool = False
    reason: str | None = None

    def pairs(self, b_len: int, c_len: int) -> tuple[Indices, Indices]:
        """Index pairs for one run pair of the given lengths."""
        if self.mode == "key":
            return self.baseline_index, self.candidate_index
        n = min(b_len, c_len)
        idx = np.arange(n, dtype=np.intp)
        return idx, idx


def _first_duplicate(keys: Sequence[str]) -> str | None:
    seen: set[str] = set()
    for k in keys:
        if k in seen:
            return k
        seen.add(k)
    return None


def align(baseline_runs: Sequence[RunView], candidate_runs: Sequence[RunView]) -> Alignment:
    """Decide how to pair items, from the first run of each side (later runs must agree)."""
    b_ref, c_ref = baseline_runs[0].items, candidate_runs[0].items
    if b_ref.inputs == c_ref.inputs:
        return Alignment(mode="position")
    b_keys, c_keys = b_ref.keys, c_ref.keys
    if b_keys == c_keys:
        return Alignment(mode="position")
    for side, keys in (("baseline", b_keys), ("candidate", c_keys)):
        dup = _first_duplicate(keys)
        if dup is not None:
            return Alignment(
                mode="position",
                reason=f"the {side} lists item {dup} more than once, so items were matched by position",
            )
    for side, runs, ref_keys in (("baseline", baseline_runs, b_keys), ("candidate", candidate_runs, c_keys)):
        for r, run in enumerate(runs[1:], start=2):
            if run.items.keys != ref_keys:
                return Alignment(
                    mode="position",
                    reason=f"{side} run {r} lists its items differently from run 1, so items were matched by position",
                )
    c_pos = {k: i for i, k in enumerate(c_keys)}
    b_set = set(b_keys)
    pairs = [(i, c_pos[k], k) for i, k in enumerate(b_keys) if k in c_pos]
    removed = [k for k in b_keys if k not in c_pos]
    added = [k for k in c_keys if k not in b_set]
    c_order = [c for _, c, _ in pairs]
    return Alignment(
        mode="key",
        baseline_index=np.array([b for b, _, _ in pairs], dtype=np.intp),
        candidate_index=np.array(c_order, dtype=np.intp),
        keys=[k for _, _, k in pairs],
        added=added[:MAX_LISTED_KEYS],
        removed=removed[:MAX_LISTED_KEYS],
        added_count=len(added),
        removed_count=len(removed),
        reordered=any(a > b for a, b in itertools.pairwise(c_order)),
    )
