"""One exception hierarchy for everything a user can get wrong.

    AxlError                      base: message + optional hint, exit code 1
    ├── UsageError                bad CLI flag or action input
    ├── InputFileError            a file we were given is missing, unreadable or malformed
    │   └── ResultFileError       a results JSON that is not an axl-eval result
    ├── EvalDefinitionError       an eval file that does not define a usable eval
    ├── DatasetError              a dataset that cannot be loaded or validated
    ├── BudgetError               a budget string that is not a USD amount (INVALID_BUDGET)
    ├── CompareError              two results that cannot be compared
    ├── ProviderError             (providers) an LLM call that failed for good
    └── GitHubError               (github) the GitHub API refused or failed

The CLI and the action catch ``AxlError`` and print ``str(err)`` (what, where, how to fix);
anything else is a bug and keeps its traceback.
"""

from __future__ import annotations


class AxlError(Exception):
    """Base class: a user-facing error with an optional hint on how to fix it."""

    code: str = "AXL_ERROR"

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return f"{self.message} ({self.hint})" if self.hint else self.message


class UsageError(AxlError):
    """A command-line flag or action input has a bad value."""

    code = "USAGE"


class InputFileError(AxlError):
    """A file we were pointed at is missing, unreadable or malformed."""

    code = "INPUT_FILE"


class ResultFileError(InputFileError):
    """A JSON file that is not an axl-eval result (or multi-run list of results)."""

    code = "RESULT_FILE"


class EvalDefinitionError(AxlError):
    """An eval file that does not define a usable eval."""

    code = "EVAL_DEFINITION"


class DatasetError(AxlError):
    """A dataset that cannot be loaded, or an item that fails validation."""

    code = "DATASET"


class BudgetError(AxlError):
    """A budget that is not a non-negative USD amount like $1 or 0.50."""

    code = "INVALID_BUDGET"


class ItemErrorRateError(AxlError):
    """An item error-rate limit outside [0, 1]."""

    code = "INVALID_ITEM_ERROR_RATE"


class CompareError(AxlError):
    """Two results (or run lists) that cannot be compared."""

    code = "COMPARE"


class ActionInputError(UsageError):
    """An input of the GitHub Action (``with:``) that has a value the action cannot use."""

    code = "INVALID_INPUT"

    def __init__(self, input_name: str, allowed: str, *, got: str | None = None) -> None:
        shown = "" if got is None else f' (got "{got}")'
        super().__init__(f"Invalid input {input_name}{shown}: {allowed}")
        self.input_name = input_name
        self.allowed = allowed


class ActionPublishError(AxlError):
    """The action could not publish a result (artifact, comment, summary) it was asked to."""

    code = "PUBLISH"
