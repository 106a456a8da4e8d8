"""What a run or a rescore continues from an earlier, interrupted attempt: the journal's side
of :func:`~axl_action.evals.runner.execute_run` and
:func:`~axl_action.evals.rescore.execute_rescore`."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from axl_action.runtime.admission import AdmissionController
from axl_action.schema.accounting import fold_accounting
from axl_action.schema.numbers import usable_number


@dataclass(frozen=True)
class Continuation:
    """The journal's hooks into one run or rescore (the default: a fresh one, no journal)."""

    completed: Mapping[int, dict[str, Any]] = field(default_factory=dict)
    """Items settled by an earlier attempt, by index: neither run nor charged again."""
    prior_accounting: Sequence[Mapping[str, Any]] = ()
    """The accounting records of every item an earlier attempt settled (``completed`` ones and
    interrupted ones run again now): their known spend is charged to the budget before the
    first item is admitted and folded into the result's accounting."""
    on_settled: Callable[[int, dict[str, Any]], None] | None = None
    """``on_settled(index, item)`` hears every item once it is final, on the worker that ran
    it, before the worker takes another."""
    on_abandoned: Callable[[int], None] | None = None
    """``on_abandoned(n)`` hears, when a hard stop (a ``BaseException`` such as the CLI's
    ``HardStop``) leaves the workers running, how many items were in flight then: their calls
    may have been billed. From then on ``on_settled`` is not called again, so what it kept and
    what was counted never overlap (runs only)."""

    def charge(self, admission: AdmissionController | None) -> None:
        """Charge the earlier attempt's known spend to the budget, before the first item."""
        if admission is not None and self.prior_accounting:
            admission.charge(sum(_known_cost(a) for a in self.prior_accounting))

    def fold(self, accounting: dict[str, Any]) -> dict[str, Any]:
        """This attempt's ``accounting`` with the earlier attempt's folded in."""
        if not self.prior_accounting:
            return accounting
        return fold_accounting([accounting, *self.prior_accounting])


def _known_cost(record: Mapping[str, Any]) -> float:
    value: Any = record.get("knownCost")
    return float(value) if usable_number(value) else 0.0
