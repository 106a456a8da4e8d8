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

import json
import os
import stat
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pydantic import ValidationError


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


def json_location(loc: Iterable[int | str]) -> str:
    """A place inside a JSON document as messages name it (``items[3].input``); an empty
    location is ``(top level)``."""
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(top level)"


def validation_problem(err: ValidationError, *, prefix: str = "") -> str:
    """The first problem of a pydantic validation as a message tail: ``at <location>: <what>,
    got <value> (and N more problems)``; ``prefix`` is the location of the validated value."""
    first = err.errors()[0]
    loc = json_location([*([prefix] if prefix else []), *first["loc"]])
    more = err.error_count() - 1
    tail = f" (and {more} more problem{'s' if more != 1 else ''})" if more else ""
    got = first.get("input")
    shown = "" if isinstance(got, dict | list) else f", got {json.dumps(got, default=str)[:80]}"
    return f"at {loc}: {first['msg']}{shown}{tail}"


def read_input_bytes(
    path: str | os.PathLike[str],
    what: str,
    error: type[InputFileError] = InputFileError,
    *,
    missing_hint: str | None = "check the path",
    directory_hint: str | None = "pass the JSON file itself",
) -> bytes:
    """The bytes of a file the user pointed us at; a missing file, a directory or an unreadable
    file is one ``error`` naming it as ``what`` (``results file``, ``journal``...)."""
    source = str(path)
    try:
        # A device (/dev/zero, /dev/urandom) would be read forever; pipes and files are fine.
        if stat.S_ISCHR(os.stat(path).st_mode):
            raise error(f"{source} is a device, not a {what}", hint=missing_hint)
        return Path(path).read_bytes()
    except FileNotFoundError:
        raise error(f"{what} not found: {source}", hint=missing_hint) from None
    except IsADirectoryError:
        raise error(f"{source} is a directory, not a {what}", hint=directory_hint) from None
    except OSError as err:
        raise error(f"cannot read {source}: {err.strerror or err}") from None
