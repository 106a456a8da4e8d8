"""Run budgets: parse a USD amount and decide, under a lock, whether new spend is admitted.

The controller is a *threshold*, not a reservation (spec §8.2): it closes once known spend
reaches the limit, refuses every operation that would open afterwards, and still counts the
charges of operations it admitted earlier that settle after the crossing.
"""

from __future__ import annotations

import math
import re
import threading
from typing import Any, Literal

from axl_action.errors import BudgetError
from axl_action.schema.numbers import usable_number

ClosedBy = Literal["case", "scorer", "operation"]

_BUDGET_RE = re.compile(r"\$?([0-9]+(?:\.[0-9]+)?)")
_BUDGET_HINT = "expected a non-negative USD amount like $1 or 0.50"


def parse_budget(text: object) -> float:
    """Parse ``"$1"``, ``"0.50"``, ``"12.345"``...; anything else raises :class:`BudgetError`.

    Only a string of an optional ``$``, digits and an optional fraction is accepted: no sign,
    whitespace, exponent, thousands separator or lone dot (spec §8.1).
    """
    if not isinstance(text, str):
        raise BudgetError(f"Invalid budget {_describe(text)}: {_BUDGET_HINT}")
    match = _BUDGET_RE.fullmatch(text)
    if match is None:
        raise BudgetError(f'Invalid budget "{text}": {_BUDGET_HINT}')
    return float(match.group(1))


def _describe(value: object) -> str:
    if value is None:
        return "null"
    return f"{value!r} ({type(value).__name__})"


class AdmissionController:
    """A run budget: closed once the known spend reaches ``limit`` (spec §8.2).

    Thread-safe. ``known_spend`` grows only through :meth:`charge`, which the accounting layer
    calls once per settled operation with a usable cost; unknown spend never consumes budget.
    """

    def __init__(self, limit: float) -> None:
        if not usable_number(limit):
            raise BudgetError(f"Invalid budget limit {limit!r}: {_BUDGET_HINT}")
        self.limit = float(limit)
        self._spend = 0.0
        self._lock = threading.Lock()
        self._closed_by: ClosedBy | None = None

    @property
    def closed(self) -> bool:
        """True once known spend is at or over the limit (``$0`` is closed from the start)."""
        return self._spend >= self.limit

    @property
    def known_spend(self) -> float:
        """Sum of the settled, usable charges seen so far (in settlement order)."""
        return self._spend

    @property
    def closed_by(self) -> ClosedBy | None:
        """Who first observed the closed budget (set once), or ``None``."""
        return self._closed_by

    def charge(self, amount: float) -> None:
        """Add one settled charge; non-finite or negative amounts are ignored."""
        if not math.isfinite(amount) or amount < 0:
            return
        with self._lock:
            self._spend += amount

    def note_closure(self, observer: ClosedBy) -> None:
        """Record ``observer`` as the first to see the budget closed (no-op while open)."""
        with self._lock:
            if self._closed_by is None and self._spend >= self.limit:
                self._closed_by = observer

    def snapshot(self) -> dict[str, Any]:
        """``{limit, status, knownSpend, knownOvershoot, closedBy?}`` in wire order (spec §7.2)."""
        with self._lock:
            spend = self._spend
            out: dict[str, Any] = {
                "limit": self.limit,
                "status": "closed" if spend >= self.limit else "open",
                "knownSpend": spend,
                "knownOvershoot": max(0.0, spend - self.limit),
            }
            if self._closed_by is not None:
                out["closedBy"] = self._closed_by
            return out
