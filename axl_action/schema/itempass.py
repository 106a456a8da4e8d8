"""The item pass and the one type it fills: a run's items read into columns, once.

Everything that counts or compares reads a run as :class:`ItemColumns` (re-exported by
``schema.view``, where the rules over them live); :func:`item_facts` is the one pass that
builds them from wire-shaped items (camelCase keys, as written), with the legacy rules for
items older than 0.24. The columns are stored as standard-library ``array`` columns and read as
numpy arrays over the same buffers, made on first use, so this module imports neither numpy
nor pydantic: a forked reader runs the pass and pickles the columns back as bytes
(``schema.reading``), with no second type for the child process.
"""

from __future__ import annotations

import re
from array import array
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar, cast, overload

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    F64 = npt.NDArray[np.float64]
    Bools = npt.NDArray[np.bool_]
    Codes = npt.NDArray[np.int8]

ITEM_OUTCOMES: tuple[str, ...] = (
    "completed",
    "failed",
    "cancelled",
    "budget_skipped",
    "budget_interrupted",
)
"""``outcome`` of an item (runner spec §6.1), in code order."""
SCORER_OUTCOMES: tuple[str, ...] = (
    "scored",
    "failed",
    "skipped",
    "cancelled",
    "budget_skipped",
    "budget_interrupted",
)
"""``scoreDetails[name].outcome`` (runner spec §6.2), in code order."""

#: Code of an absent outcome, and of an outcome string this version does not know.
NO_OUTCOME = -1
UNKNOWN_OUTCOME = -2
ITEM_CODE = {name: code for code, name in enumerate(ITEM_OUTCOMES)}
SCORER_CODE = {name: code for code, name in enumerate(SCORER_OUTCOMES)}

#: ``scorerCounts`` buckets (compare spec §0.3).
SCORED, FAILED, SKIPPED = 0, 1, 2
_SAMPLE_OF_OUTCOME = {"scored": SCORED, "failed": FAILED, "skipped": SKIPPED}

_NAN = float("nan")


_A = TypeVar("_A")


class _View(Generic[_A]):
    """A column read as a numpy array: a view over the ``<name>_raw`` buffer of the same
    instance, with ``dtype``, made on first read without a copy and kept in the instance (a
    non-data descriptor, as ``functools.cached_property`` is, so later reads are plain
    attribute reads). numpy is imported only then: the item pass itself never needs it."""

    def __init__(self, dtype: str) -> None:
        self._dtype = dtype
        self._name = self._raw = ""

    def __set_name__(self, owner: type, name: str) -> None:
        self._name, self._raw = name, f"{name}_raw"

    @overload
    def __get__(self, obj: None, owner: type | None = None) -> _View[_A]: ...
    @overload
    def __get__(self, obj: object, owner: type | None = None) -> _A: ...
    def __get__(self, obj: object | None, owner: type | None = None) -> _View[_A] | _A:
        if obj is None:
            return self
        import numpy as np

        view = np.frombuffer(getattr(obj, self._raw), dtype=self._dtype)
        obj.__dict__[self._name] = view
        return cast(_A, view)


@dataclass(frozen=True, eq=False)
class ScorerColumn:
    """One scorer's facts per item, index = item position.

    Stored as standard-library ``array`` columns (what the item pass writes, and what a reading
    child process pickles back as bytes); read as numpy arrays over the same buffers (:class:`_View`).
    """

    score_raw: array[float]
    outcome_raw: array[int]
    sample_raw: array[int]

    score: ClassVar[_View[F64]] = _View("f8")
    """``scores[name]``; NaN where it is null or absent."""
    outcome: ClassVar[_View[Codes]] = _View("i1")
    """``scoreDetails[name].outcome`` as a ``SCORER_OUTCOMES`` index; -1 absent, -2 unknown."""
    sample: ClassVar[_View[Codes]] = _View("i1")
    """``scorerCounts`` bucket (``SCORED``/``FAILED``/``SKIPPED``), -1 for none; errored items -1."""

    @classmethod
    def absent(cls, n: int) -> ScorerColumn:
        """The column of a scorer a run does not have: every score absent, no outcome."""
        return cls(array("d", [_NAN]) * n, array("b", [NO_OUTCOME]) * n, array("b", [NO_OUTCOME]) * n)


@dataclass(frozen=True, eq=False)
class ItemColumns:
    """Per-item facts of one run, index = item position in the run (stored and read as
    :class:`ScorerColumn` is: ``array`` columns, numpy views on first read)."""

    inputs: list[Any]
    """Each item's ``input`` (item keys, pairing, and the quotes of item-level changes)."""
    errors: list[str | None]
    """Each item's ``error`` when truthy, else None."""
    outcome_raw: array[int]
    duration_raw: array[float]
    cost_raw: array[float]
    scorer_cost_raw: array[float]
    unpriced_raw: array[int]
    failures: dict[int, Mapping[str, Any]]
    """The ``failure`` record of each item that has one, by index."""
    scorer_errors: dict[int, list[str]]
    """``scorerErrors`` of each item that has any, by index."""
    scorers: dict[str, ScorerColumn]
    """Columns per scorer, in scorer order."""
    repeats: dict[int, list[Mapping[str, Any]]] = field(default_factory=dict)
    """``repeats`` (``repeats: N``) of each item that has them, by index: each repeat is an
    item of its own shape, read by the same item pass when counted (``pass_counts``)."""

    outcome: ClassVar[_View[Codes]] = _View("i1")
    """``outcome`` as an ``ITEM_OUTCOMES`` index; -1 absent (legacy), -2 unknown."""
    duration: ClassVar[_View[F64]] = _View("f8")
    """Workflow milliseconds; NaN where absent."""
    cost: ClassVar[_View[F64]] = _View("f8")
    """Generation cost; NaN where absent."""
    scorer_cost: ClassVar[_View[F64]] = _View("f8")
    """Judging cost; NaN where absent."""
    unpriced: ClassVar[_View[Bools]] = _View("?")
    """``unpriced: true``."""

    @cached_property
    def errored(self) -> Bools:
        """The item has a truthy ``error`` (it did not run to completion)."""
        import numpy as np

        return np.array([e is not None for e in self.errors], dtype=np.bool_)

    @property
    def size(self) -> int:
        return len(self.errors)

    @cached_property
    def keys(self) -> list[str]:
        """Stable item keys (``id:<id>`` or a hash of the input)."""
        from axl_action.schema.fingerprint import item_key

        return [item_key(i) for i in self.inputs]

    def column(self, name: str) -> ScorerColumn:
        """The scorer's column; all-absent for a scorer this run does not have."""
        found = self.scorers.get(name)
        return found if found is not None else ScorerColumn.absent(self.size)

    def stopped_how(self, index: int) -> str:
        """The item's outcome, or its error for a legacy item (as messages quote it)."""
        code = int(self.outcome_raw[index])
        if code >= 0:
            return ITEM_OUTCOMES[code]
        return str(self.errors[index])


class ItemShapeError(ValueError):
    """An item field the columns read has the wrong type; the message names the JSON path."""


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _check_number(value: Any, where: str) -> None:
    kind = type(value)
    if value is not None and kind is not float and kind is not int:
        raise ItemShapeError(f"{where}: expected a number or null, got {_shown(value)}")


def _check_kind(value: Any, kind: type, where: str, expected: str) -> None:
    if value is not None and not isinstance(value, kind):
        raise ItemShapeError(f"{where}: expected {expected} or null, got {_shown(value)}")


# The one exception to the complexity limits (pyproject.toml): this loop reads every field of
# every item of a file once (100,000 items in a large compare), so its checks stay inline; a
# helper call per item and field group would add about 0.2-0.4 µs to the 2 µs an item costs.
def item_facts(items: Sequence[Any], names: Sequence[str]) -> ItemColumns:  # noqa: C901, PLR0912, PLR0915
    """Read wire-shaped items (camelCase keys, as written) into per-item facts, once.

    The same pass checks the type of every field it reads (a file's items arrive as plain
    parsed JSON) and raises :class:`ItemShapeError` naming the first bad one; fields it does
    not read (outputs, annotations, traces) are neither checked nor copied.
    """
    n = len(items)
    inputs: list[Any] = [None] * n
    errors: list[str | None] = [None] * n
    outcome = [NO_OUTCOME] * n
    # Numbers start as NaN, which an absent or null value stays.
    duration: list[float] = [_NAN] * n
    cost: list[float] = [_NAN] * n
    scorer_cost: list[float] = [_NAN] * n
    unpriced = [False] * n
    failures: dict[int, Mapping[str, Any]] = {}
    scorer_errors: dict[int, list[str]] = {}
    repeats: dict[int, list[Mapping[str, Any]]] = {}
    per_scorer: list[tuple[str, list[Any], list[int], list[int]]] = [
        (name, [_NAN] * n, [NO_OUTCOME] * n, [NO_OUTCOME] * n) for name in names
    ]
    number_types = (float, int)
    item_code, scorer_code, sample_of = ITEM_CODE, SCORER_CODE, _SAMPLE_OF_CODE
    for i, item in enumerate(items):
        if type(item) is not dict and not isinstance(item, Mapping):
            raise ItemShapeError(f"items[{i}]: expected an object, got {_shown(item)}")
        get = item.get
        inputs[i] = get("input")
        error = get("error")
        if error:
            if type(error) is not str:
                raise ItemShapeError(f"items[{i}].error: expected text or null, got {_shown(error)}")
            errors[i] = error
        raw_outcome = get("outcome")
        if raw_outcome is not None:
            code = item_code.get(raw_outcome) if type(raw_outcome) is str else None
            if code is None:
                raise ItemShapeError(
                    f"items[{i}].outcome: expected one of {', '.join(ITEM_OUTCOMES)}, got {_shown(raw_outcome)}"
                )
            outcome[i] = code
        d, c, sc = get("duration"), get("cost"), get("scorerCost")
        if (
            (d is not None and type(d) not in number_types)
            or (c is not None and type(c) not in number_types)
            or (sc is not None and type(sc) not in number_types)
        ):
            _check_number(d, f"items[{i}].duration")
            _check_number(c, f"items[{i}].cost")
            _check_number(sc, f"items[{i}].scorerCost")
        if d is not None:
            duration[i] = d
        if c is not None:
            cost[i] = c
        if sc is not None:
            scorer_cost[i] = sc
        if get("unpriced") is True:
            unpriced[i] = True
        failure = get("failure")
        if failure:
            _check_kind(failure, Mapping, f"items[{i}].failure", "an object")
            failures[i] = failure
        messages = get("scorerErrors")
        if messages:
            _check_kind(messages, list, f"items[{i}].scorerErrors", "a list")
            scorer_errors[i] = messages
        runs = get("repeats")
        if runs is not None:
            repeats[i] = _repeat_list(runs, i)
        scores = get("scores") or _EMPTY
        details = get("scoreDetails") or _EMPTY
        if type(scores) is not dict or type(details) is not dict:
            _check_kind(scores, Mapping, f"items[{i}].scores", "an object")
            _check_kind(details, Mapping, f"items[{i}].scoreDetails", "an object")
        for name, score_col, outcome_col, sample_col in per_scorer:
            score = scores.get(name)
            if score is not None:
                if type(score) not in number_types or not 0 <= score <= 1:
                    # No runner writes a score outside [0, 1]: the scorer failed instead.
                    raise ItemShapeError(
                        f"items[{i}].scores.{name}: expected a number in [0, 1] or null, got {_shown(score)}"
                    )
                score_col[i] = score
            detail = details.get(name)
            if detail is not None:
                if type(detail) is not dict:
                    _check_kind(detail, Mapping, f"items[{i}].scoreDetails.{name}", "an object")
                explicit = detail.get("outcome")
                if explicit is not None:
                    code = scorer_code.get(explicit) if type(explicit) is str else None
                    if code is None:
                        raise ItemShapeError(
                            f"items[{i}].scoreDetails.{name}.outcome: expected one of "
                            f"{', '.join(SCORER_OUTCOMES)}, got {_shown(explicit)}"
                        )
                    outcome_col[i] = code
                    if not error:
                        sample_col[i] = sample_of[code]
                    continue
            if not error:
                # §0.3's first rule is decided here: it is every scored legacy item's case.
                sample_col[i] = SCORED if score is not None else _unscored_bucket(detail)
    if repeats:
        _check_repeats(repeats, names)
    return ItemColumns(
        inputs=inputs,
        errors=errors,
        outcome_raw=array("b", outcome),
        duration_raw=_floats(duration, "duration"),
        cost_raw=_floats(cost, "cost"),
        scorer_cost_raw=_floats(scorer_cost, "scorerCost"),
        unpriced_raw=array("b", unpriced),
        failures=failures,
        scorer_errors=scorer_errors,
        repeats=repeats,
        scorers={
            name: ScorerColumn(_floats(s, f"scores.{name}"), array("b", o), array("b", b))
            for name, s, o, b in per_scorer
        },
    )


def _repeat_list(runs: Any, i: int) -> list[Mapping[str, Any]]:
    """``items[i].repeats``, if it is a list of objects (each is checked by :func:`_check_repeats`)."""
    if type(runs) is not list or not all(isinstance(run, Mapping) for run in runs):
        raise ItemShapeError(f"items[{i}].repeats: expected a list of objects, got {_shown(runs)}")
    return runs


_ITEM_PATH = re.compile(r"items\[(\d+)\]")


def _check_repeats(repeats: Mapping[int, list[Mapping[str, Any]]], names: Sequence[str]) -> None:
    """Every repeat checked as an item by the same rules, in one pass over all of them (one
    call per item cost more than the item pass itself); a problem names its path,
    ``items[3].repeats[1].scores.s``."""
    where = [(i, r) for i, runs in repeats.items() for r in range(len(runs))]
    try:
        item_facts([run for runs in repeats.values() for run in runs], names)
    except ItemShapeError as err:
        message = str(err)
        found = _ITEM_PATH.search(message)
        if found is None:
            raise
        i, r = where[int(found.group(1))]
        raise ItemShapeError(
            message[: found.start()] + f"items[{i}].repeats[{r}]" + message[found.end() :]
        ) from None


def _floats(values: list[float], field: str) -> array[float]:
    """The column as doubles; an integer too large for one (JSON allows any) is refused with
    its path, as the type checks refuse other numbers."""
    try:
        return array("d", values)
    except OverflowError:
        for i, value in enumerate(values):
            try:
                float(value)
            except OverflowError:
                raise ItemShapeError(
                    f"items[{i}].{field}: expected a number or null, got {_shown(value)} "
                    "(too large for a number)"
                ) from None
        raise


_EMPTY: dict[str, Any] = {}
#: The ``scorerCounts`` bucket of each explicit scorer outcome (an explicit outcome is authoritative).
_SAMPLE_OF_CODE = [_SAMPLE_OF_OUTCOME.get(name, NO_OUTCOME) for name in SCORER_OUTCOMES]


def _unscored_bucket(detail: Mapping[str, Any] | None) -> int:
    """``scorerCounts`` for an item without an error, without an explicit outcome (§0.3) and
    with a null ``scores[name]``.

    The pre-0.24 heuristic: a non-null ``scores[name]`` is scored (also without any
    ``scoreDetails``; the item pass decides that case itself), then ``skipped: true`` is
    skipped, then a ``duration`` means the scorer ran and failed.
    """
    if detail is None:
        return NO_OUTCOME
    if detail.get("skipped") is True:
        return SKIPPED
    if detail.get("duration") is not None:
        return FAILED
    return NO_OUTCOME
