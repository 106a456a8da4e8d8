"""``scorer(...)``: a deterministic scoring function with an optional ``applies`` predicate.

``score(output, input, annotations, context)`` returns a number in [0, 1] or a mapping
``{"score": n, "metadata"?: {...}, "cost"?: n}``. Functions may declare fewer parameters: the
runner passes only as many positional arguments as the function accepts, so
``lambda output: ...`` and ``def score(output, input, annotations): ...`` both work.
"""

from __future__ import annotations

import inspect
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any


def positional_arity(fn: Callable[..., Any], most: int) -> int:
    """How many positional arguments ``fn`` accepts, capped at ``most``."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return most
    count = 0
    for param in params:
        if param.kind is inspect.Parameter.VAR_POSITIONAL:
            return most
        if param.kind in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD):
            count += 1
    return min(count, most)


@dataclass(frozen=True)
class ScorerContext:
    """The fourth argument of ``score``: the run's runtime and its cancellation flag."""

    runtime: Any
    """The run's :class:`~axl_action.runtime.runtime.Runtime` (judges call ``runtime.chat``)."""
    cancel_event: threading.Event
    """Set once the run was asked to stop (long judges may check it)."""

    def resolve_provider(self, model_uri: str) -> Any:
        """Resolve a ``provider:model`` URI through the runtime (spec §4.1)."""
        resolve = getattr(self.runtime, "resolve_provider", None)
        if resolve is None:
            raise RuntimeError(
                "LLM scorers need a runtime with resolve_provider() (a real Runtime), not a mock"
            )
        return resolve(model_uri)

    @property
    def cancelled(self) -> bool:
        """True once the run was asked to stop."""
        return self.cancel_event.is_set()


@dataclass(frozen=True)
class Scorer:
    """A named scorer (``is_llm`` marks LLM judges for budget skipping and the degraded gate)."""

    name: str
    """Unique name; key of ``scores`` / ``scoreDetails`` / ``summary.scorers``."""
    score: Callable[..., Any]
    """``score(output, input, annotations, context)`` -> number or ``{score, metadata?, cost?}``."""
    description: str = ""
    """Human description (shown nowhere in results; for readers of the eval file)."""
    applies: Callable[..., Any] | None = None
    """``applies(output, input, annotations)``; a falsy result marks the item N/A (skipped)."""
    is_llm: bool = False
    """True for LLM judges (``llm_scorer``)."""
    config: Mapping[str, Any] | None = None
    """Settings that change scores (judge model, prompt, temperature): hashed into
    ``metadata.fingerprint.config`` so compare can tell two judges apart."""
    _score_arity: int = field(default=4, init=False, repr=False, compare=False)
    _applies_arity: int = field(default=3, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_score_arity", positional_arity(self.score, 4))
        if self.applies is not None:
            object.__setattr__(self, "_applies_arity", positional_arity(self.applies, 3))

    def call_score(self, output: Any, input: Any, annotations: Any, context: ScorerContext) -> Any:
        """Call ``score`` with as many of the four arguments as it accepts."""
        # Spelled out per arity: slicing an argument tuple costs two tuples per call, and a
        # run makes one call per item and scorer.
        arity, score = self._score_arity, self.score
        if arity == 4:
            return score(output, input, annotations, context)
        if arity == 3:
            return score(output, input, annotations)
        if arity == 2:
            return score(output, input)
        if arity == 1:
            return score(output)
        return score()

    def call_applies(self, output: Any, input: Any, annotations: Any) -> Any:
        """Call ``applies`` (must exist) with as many of the three arguments as it accepts."""
        assert self.applies is not None
        return self.applies(*(output, input, annotations)[: self._applies_arity])


def scorer(
    name: str,
    score: Callable[..., Any],
    applies: Callable[..., Any] | None = None,
    description: str | None = None,
) -> Scorer:
    """Define a deterministic scorer (``is_llm=False``)."""
    return Scorer(name=name, score=score, description=description or "", applies=applies)
