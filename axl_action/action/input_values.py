"""What each input of the action accepts: one parser per input, from the trimmed text of its
``INPUT_*`` variable to the value ``ActionSettings`` holds (``action/settings.py`` reads them).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, SecretStr

from axl_action import values
from axl_action.cache.calls import CACHE_MODES
from axl_action.errors import BudgetError
from axl_action.github.comments import COMMENT_MODES
from axl_action.runtime.admission import parse_budget
from axl_action.suite import SUITE_RULE, is_suite_key

Mode = Literal["auto", "baseline", "compare", "comment"]

MODES: tuple[Mode, ...] = ("auto", "baseline", "compare", "comment")

# Characters the artifact service rejects in a name (actions/toolkit path-and-artifact-name-validation).
_BAD_ARTIFACT_CHARS = frozenset('":<>|*?\\/\r\n')
_TRUE = frozenset({"true", "True", "TRUE"})
_FALSE = frozenset({"false", "False", "FALSE"})


class Shard(BaseModel):
    """One slice of a sharded suite: ``index`` of ``total`` (both 1-based, as in ``--shard 2/4``)."""

    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)

    index: int
    """Which slice this job runs, from 1 to ``total``."""

    total: int
    """How many slices the suite is split into."""

    def __str__(self) -> str:
        return f"{self.index}/{self.total}"


# Each parser raises ValueError(<what is allowed>); read_settings adds the input name and the value.


def _list(text: str) -> tuple[str, ...]:
    parts = re.split(r"[\n,]", text)
    return tuple(p.strip() for p in parts if p.strip())


def _bool(text: str) -> bool:
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise ValueError("must be true or false")


def _positive_int(text: str) -> int:
    return values.whole_number(text, low=1)


def _repeats(text: str) -> int | Literal["auto"]:
    from axl_action.evals.repeats import MAX_REPEATS

    return values.repeats(text, high=MAX_REPEATS)


def _max_repeats(text: str) -> int:
    from axl_action.evals.repeats import MAX_REPEATS

    return values.whole_number(text, high=MAX_REPEATS)


def _rate(text: str) -> float:
    try:
        return values.rate(text)
    except ValueError as err:
        raise ValueError(f"{err} (1 turns the gate off)") from None


def _budget(text: str) -> str:
    try:
        parse_budget(text)
    except BudgetError:
        raise ValueError("must be a USD amount like $1 or 0.50") from None
    return text


def _shard(text: str) -> Shard:
    index, total = values.shard(text)
    return Shard(index=index, total=total)


def _history_limit(text: str) -> int:
    from axl_action.history import MAX_ROWS

    try:
        return values.whole_number(text, low=0, high=MAX_ROWS)
    except ValueError:
        raise ValueError(f"must be a whole number from 0 (no history) to {MAX_ROWS}") from None


def _text_limit(text: str) -> int:
    try:
        return values.whole_number(text, low=0)
    except ValueError:
        raise ValueError("must be a whole number of characters, 0 for no limit") from None


def _cost_limit(text: str) -> float:
    try:
        return values.percentage(text)
    except ValueError:
        raise ValueError("must be a percentage like 20% (of the baseline's cost)") from None


def _choice(choices: Iterable[str]) -> Callable[[str], str]:
    options = tuple(choices)

    def parse(text: str) -> str:
        if text not in options:
            raise ValueError("must be one of " + ", ".join(options))
        return text

    return parse


def _artifact_name(text: str) -> str:
    if len(text) > 200 or any(c in _BAD_ARTIFACT_CHARS for c in text):
        raise ValueError('must be at most 200 characters, without " : < > | * ? \\ / or line breaks')
    return text


def _suite(text: str) -> str:
    if not is_suite_key(text):
        raise ValueError(f"must be {SUITE_RULE}")
    return text


def _text(text: str) -> str:
    return text


def _branch(text: str) -> str:
    if text.startswith("refs/heads/"):
        text = text[len("refs/heads/") :]
    if not text or any(c.isspace() for c in text) or ".." in text:
        raise ValueError("must be a branch name like main")
    return text


def _path(text: str) -> str:
    if "\0" in text:
        raise ValueError("must be a path")
    return text


PARSERS: dict[str, Callable[[str], Any]] = {
    "evals": _list,
    "command": _text,
    "results": _list,
    "setup": _text,
    "github-token": SecretStr,
    "mode": _choice(MODES),
    "baseline-artifact": _artifact_name,
    "baseline-branch": _branch,
    "budget": _budget,
    "runs": _positive_int,
    "repeats": _repeats,
    "max-repeats": _max_repeats,
    "concurrency": _positive_int,
    "shard": _shard,
    "threshold": values.threshold,
    "history-limit": _history_limit,
    "fail-on-regression": _bool,
    "max-item-error-rate": _rate,
    "max-scorer-error-rate": _rate,
    "min-pass-rate": values.pass_rates,
    "pass-score": values.rate,
    "max-cost-increase": _cost_limit,
    "pricing": _path,
    "comment": _choice(COMMENT_MODES),
    "suite": _suite,
    "report-artifact": _artifact_name,
    "report-text-limit": _text_limit,
    "working-directory": _path,
    "capture-requests": _bool,
    "stream-usage": _bool,
    "force-run": _bool,
    "cache": _choice(CACHE_MODES),
}
"""Input name → its parser; each raises ValueError(<what is allowed>)."""
