"""axl-eval-action: run, compare and gate LLM evaluations (axl-eval 0.24 compatible).

The eval-file API lives here: ``dataset``, ``scorer``, ``llm_scorer``, ``define_eval`` and
``run_eval``. Names are resolved lazily so that ``import axl_action`` stays cheap for the
commands that never run an eval.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from axl_action.lazy import lazy_attribute

if TYPE_CHECKING:
    from axl_action.evals.dataset import Dataset, dataset
    from axl_action.evals.definition import EvalDefinition, define_eval
    from axl_action.evals.runner import run_eval
    from axl_action.evals.scorer import Scorer, scorer
    from axl_action.providers.intercept import measure_model_calls
    from axl_action.runtime.runtime import Runtime
    from axl_action.runtime.scope import ContextThreadPoolExecutor, propagate_context

_EXPORTS: dict[str, str] = {
    "Dataset": "axl_action.evals.dataset",
    "dataset": "axl_action.evals.dataset",
    "Scorer": "axl_action.evals.scorer",
    "scorer": "axl_action.evals.scorer",
    "llm_scorer": "axl_action.evals.llm_scorer",
    "EvalDefinition": "axl_action.evals.definition",
    "define_eval": "axl_action.evals.definition",
    "run_eval": "axl_action.evals.runner",
    "Runtime": "axl_action.runtime.runtime",
    "measure_model_calls": "axl_action.providers.intercept",
    "propagate_context": "axl_action.runtime.scope",
    "ContextThreadPoolExecutor": "axl_action.runtime.scope",
}

__all__ = [
    "ContextThreadPoolExecutor",
    "Dataset",
    "EvalDefinition",
    "Runtime",
    "Scorer",
    "dataset",
    "define_eval",
    "llm_scorer",
    "measure_model_calls",
    "propagate_context",
    "run_eval",
    "scorer",
]


def __getattr__(name: str) -> Any:
    return lazy_attribute(__name__, _EXPORTS, name)
