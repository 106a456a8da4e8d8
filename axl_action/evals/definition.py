"""``define_eval(...)``: one eval = a workflow label, a dataset, scorers and run settings."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from axl_action.evals.dataset import Dataset
from axl_action.evals.repeats import MAX_REPEATS, validate_repeats
from axl_action.evals.scorer import Scorer
from axl_action.schema.numbers import is_error_rate_limit

ExecuteWorkflow = Callable[[Any, Any], Any]
"""``execute_workflow(input, runtime) -> {"output": ..., "cost"?: ..., "metadata"?: ...}``."""

DEFAULT_CONCURRENCY = 5
DEFAULT_ITEM_ERROR_RATE_LIMIT = 0.05


@dataclass
class EvalDefinition:
    """An eval (spec §2.1). Built by :func:`define_eval`; the CLI may override some fields."""

    workflow: str
    """A label for the system under test (``metadata.workflows`` fallback, report titles)."""
    dataset: Dataset
    """The items to run."""
    scorers: list[Scorer]
    """Scorers, in the order of ``scores`` keys, error lists and stats."""
    execute_workflow: ExecuteWorkflow | None = None
    """The workflow callback; else the eval file's module-level ``execute_workflow``."""
    concurrency: int = DEFAULT_CONCURRENCY
    """Items run at once."""
    scorer_concurrency: int = DEFAULT_CONCURRENCY
    """Scorers run at once per item (judge calls in flight <= concurrency x this)."""
    budget: str | None = None
    """Known-spend limit in USD (``"$1"``, ``"0.50"``); ``None`` = no budget."""
    fail_on_scorer_error_rate: float | None = None
    """Opt-in scorer degradation gate (deterministic scorers tolerate no failure)."""
    fail_on_item_error_rate: float | None = None
    """Item error-rate gate; ``None`` means the default 0.05 and ``1`` disables it."""
    metadata: dict[str, Any] = field(default_factory=dict)
    """Copied first into ``result.metadata`` (runner keys win on clashes)."""
    repeats: int = 1
    """Times each item runs inside one run (``--repeats``; ``evals/repeats.py``): the item's
    ``scores`` hold the mean, ``repeats`` each repeat."""
    env: list[str] = field(default_factory=list)
    """Environment variables the eval reads: a change to one re-runs it in a scoped run (only a
    hash of each value is recorded, in ``metadata.sources.env``)."""


def define_eval(
    workflow: str,
    dataset: Dataset,
    scorers: Sequence[Scorer],
    execute_workflow: ExecuteWorkflow | None = None,
    *,
    concurrency: int = DEFAULT_CONCURRENCY,
    scorer_concurrency: int = DEFAULT_CONCURRENCY,
    budget: str | None = None,
    fail_on_scorer_error_rate: float | None = None,
    fail_on_item_error_rate: float | None = None,
    metadata: Mapping[str, Any] | None = None,
    repeats: int = 1,
    env: Sequence[str] = (),
) -> EvalDefinition:
    """Define an eval; validation happens when it is loaded or run (see :func:`validate_definition`)."""
    return EvalDefinition(
        workflow=workflow,
        dataset=dataset,
        scorers=list(scorers),
        execute_workflow=execute_workflow,
        concurrency=concurrency,
        scorer_concurrency=scorer_concurrency,
        budget=budget,
        fail_on_scorer_error_rate=fail_on_scorer_error_rate,
        fail_on_item_error_rate=fail_on_item_error_rate,
        metadata=dict(metadata or {}),
        repeats=repeats,
        env=list(env),
    )


def _shown(value: object) -> str:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return "NaN" if value != value else repr(value)
    if isinstance(value, str):
        return repr(value)
    return type(value).__name__


def validate_definition(defn: object) -> str | None:
    """The tail of ``Error: <file> <tail>`` for an unusable eval, or ``None`` (spec §7.7)."""
    if not isinstance(defn, EvalDefinition):
        got = "null" if defn is None else type(defn).__name__
        return f"does not export a valid eval config — got {got}; build it with define_eval(...)."
    # An empty scorers list is not "missing": it has its own message below (spec §7.7).
    missing = [
        n for n in ("workflow", "dataset", "scorers") if not getattr(defn, n) and getattr(defn, n) != []
    ]
    if missing:
        return f"does not export a valid eval config (missing {', '.join(missing)})."
    if not isinstance(defn.workflow, str):
        return f"exports a non-string workflow (got {type(defn.workflow).__name__}); it is the eval's label."
    dataset = defn.dataset
    if not callable(getattr(dataset, "get_items", None)) or not isinstance(
        getattr(dataset, "name", None), str
    ):
        return (
            f"exports a dataset without a name and a get_items() method (got {type(dataset).__name__}); "
            "use the dataset() factory."
        )
    if not isinstance(defn.scorers, list) or not defn.scorers:
        return "exports an empty scorers list; at least one scorer is required."
    for index, entry in enumerate(defn.scorers):
        if not isinstance(entry, Scorer) or not callable(entry.score):
            return (
                f"exports a scorers list with a non-scorer entry at index {index}; "
                "build each with scorer(...) or llm_scorer(...)."
            )
    names = [s.name for s in defn.scorers]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        return f"exports scorers with duplicate names ({', '.join(duplicates)}); names must be unique."
    for key in ("concurrency", "scorer_concurrency"):
        value = getattr(defn, key)
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            return f"exports an invalid {key} ({_shown(value)}); it must be a positive integer."
    try:
        validate_repeats(defn.repeats, "repeats")
    except ValueError:
        return (
            f"exports an invalid repeats ({_shown(defn.repeats)}); it must be a whole number "
            f"from 1 to {MAX_REPEATS}."
        )
    rate = defn.fail_on_scorer_error_rate
    if rate is not None and not is_error_rate_limit(rate):
        return f"exports an invalid fail_on_scorer_error_rate ({_shown(rate)}); it must be a number between 0 and 1."
    rate = defn.fail_on_item_error_rate
    if rate is not None and not is_error_rate_limit(rate):
        return (
            f"exports an invalid fail_on_item_error_rate ({_shown(rate)}); "
            "it must be a number between 0 and 1 (1 disables the gate)."
        )
    if defn.execute_workflow is not None and not callable(defn.execute_workflow):
        return f"exports execute_workflow but it is {type(defn.execute_workflow).__name__}, not a function."
    return None
