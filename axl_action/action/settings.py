"""The action's inputs, read once from ``INPUT_*`` variables and checked before anything is spent.

The runner exports every input declared in ``action.yml`` as ``INPUT_<NAME>`` with the name
upper-cased and dashes kept (``INPUT_BASELINE-ARTIFACT``); people who ``docker run`` the image by
hand tend to write underscores instead, so both spellings are read (the dashed one wins). Every
declared input arrives, unset ones as an empty string, so an empty value means "use the default".

A bad value raises :class:`~axl_action.errors.ActionInputError` naming the input and what it
accepts; the entrypoint turns that into one ``::error title=Invalid input <name>::`` annotation.
What each input accepts is ``action/input_values.py``'s (one parser per input).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, SecretStr

from axl_action.action.input_values import MODES, PARSERS, Mode, Shard
from axl_action.cache.calls import CacheMode
from axl_action.errors import ActionInputError
from axl_action.github.comments import COMMENT_MODES, CommentMode
from axl_action.redaction import NOT_SECRET_ENV, SECRET_ENV_NAME

# Environment variables whose values are credentials: masked in the log before anything runs.
# Which variables are credentials is the redaction rule's (one list for masks and redaction).
_SECRET_ENV_RE = SECRET_ENV_NAME
_NOT_SECRET_ENV = NOT_SECRET_ENV
_MIN_MASK_LENGTH = 4  # masking "1" or "on" would star out half the log


class ActionSettings(BaseModel):
    """Every input of the action, parsed and validated."""

    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)

    evals: tuple[str, ...] = ()
    """Eval files, directories or globs to run (relative to ``working-directory``)."""

    command: str | None = None
    """A shell command that writes an axl-eval results file to ``$AXL_EVAL_OUTPUT``, run instead of ``evals``."""

    results: tuple[str, ...] = ()
    """Existing results files (or globs) to use instead of running anything; several are merged."""

    setup: str | None = None
    """A shell command run in ``working-directory`` before the evals, e.g. ``pip install -r requirements.txt``."""

    github_token: SecretStr = SecretStr("")
    """Token for the GitHub API: baseline lookup, comments, artifacts. Empty disables GitHub calls."""

    mode: Mode = "auto"
    """``auto`` picks from the event: push to the default branch → baseline, pull_request → compare, workflow_run → comment."""

    baseline_artifact: str = "axl-eval-baseline"
    """Name of the artifact that stores (and is searched for as) the baseline results."""

    baseline_branch: str | None = None
    """Branch whose pushes produce baselines; None means the repository's default branch."""

    budget: str | None = None
    """Spend limit per run in USD (``$1``, ``0.50``), passed to the runner as ``--budget``."""

    runs: int = 1
    """How many times to run each eval (``--runs``)."""

    repeats: int | Literal["auto"] | None = None
    """How many times each item runs inside a run (``--repeats``); None keeps each eval's own;
    ``auto`` repeats only where a scorer's verdict against the baseline is open."""

    max_repeats: int | None = None
    """The cap of ``repeats: auto`` (``--max-repeats``; None: 5)."""

    concurrency: int | None = None
    """Items run at the same time (``--concurrency``); None keeps the eval's own setting."""

    shard: Shard | None = None
    """Run only this slice of the items (``--shard i/n``) and publish it for a merge job."""

    threshold: float | dict[str, float] | Literal["auto"] | None = None
    """Regression threshold: one number for every scorer or ``name=value`` pairs; None uses the
    defaults per scorer type; ``auto`` measures each scorer's from the baseline history."""

    history_limit: int = 50
    """Baseline runs kept in the history stored with each baseline; 0 stores none."""

    fail_on_regression: bool = True
    """Fail the step when a scorer regresses significantly."""

    max_item_error_rate: float | None = None
    """Largest share of items that may error before the gate refuses (default 0.05 in the gate)."""

    max_scorer_error_rate: float | None = None
    """Largest share of scorer calls that may fail before the gate refuses; None leaves the gate off."""

    min_pass_rate: float | dict[str, float] | None = None
    """Smallest pass rate per scorer (one rate, or ``name=rate`` pairs); None leaves the gate off."""

    pass_score: float | None = None
    """The score at or above which a try passes; None means 0.5."""

    max_cost_increase: float | None = None
    """Largest allowed certified cost increase over the baseline, in percent; None leaves the gate off."""

    pricing: str | None = None
    """Path of a pricing JSON file that overrides the built-in price table (``--pricing``)."""

    comment: CommentMode = "always"
    """When to write the sticky PR comment."""

    suite: str = "default"
    """Name of this suite; separates the sticky comments and artifacts of several suites in one PR."""

    report_artifact: str = "axl-eval-report"
    """Name of the artifact holding the HTML report."""

    report_text_limit: int = 20_000
    """Longest output or input stored in the HTML report, in characters (``--report-text-limit``);
    the rest is cut with a visible mark. 0: no limit. results.json keeps the whole text."""

    working_directory: str = "."
    """Directory (relative to the workspace) in which evals and the command run."""

    capture_requests: bool = False
    """Record the exact LLM requests (``--capture-requests``) next to the results file."""

    stream_usage: bool = True
    """Add ``stream_options.include_usage`` to the app's OpenAI streaming requests so their
    tokens are measured (false: ``--no-stream-usage``; such calls settle ``usage_missing``)."""

    force_run: bool = False
    """Re-run every eval on a pull request, even those the scoped run would carry over from the
    baseline because none of their recorded files changed (``action/scope_step.py``)."""

    cache: CacheMode = "off"
    """The response cache (``--cache``, docs/cache.md), kept between runs in the GitHub Actions
    cache: ``off``, ``read``, ``write``, ``on`` or ``replay``."""

    @property
    def source(self) -> Literal["evals", "command", "results", "none"]:
        """Where results come from."""
        if self.results:
            return "results"
        if self.command:
            return "command"
        if self.evals:
            return "evals"
        return "none"


def input_name(field: str) -> str:
    """The action.yml name of a settings field (``baseline_artifact`` → ``baseline-artifact``)."""
    return field.replace("_", "-")


INPUT_NAMES: tuple[str, ...] = tuple(input_name(f) for f in ActionSettings.model_fields)
"""Every input the action declares, in action.yml order."""

SECRET_INPUTS: frozenset[str] = frozenset({"github-token"})


def raw_input(env: Mapping[str, str], name: str) -> str:
    """The trimmed value of input ``name`` ('' when unset); the runner's dashed spelling wins."""
    upper = name.upper()
    for key in (f"INPUT_{upper}", f"INPUT_{upper.replace('-', '_')}", f"INPUT_{upper.replace(' ', '_')}"):
        value = env.get(key)
        if value is not None and value.strip():
            return value.strip()
    return ""


def secrets_to_mask(env: Mapping[str, str]) -> list[str]:
    """Values to register with ``::add-mask::``: secret inputs and credential-like env variables.

    Multi-line values are masked line by line, because the runner matches a mask per line.
    """
    values: list[str] = [raw_input(env, name) for name in sorted(SECRET_INPUTS)]
    for key, value in env.items():
        if key in _NOT_SECRET_ENV or key.startswith("INPUT_"):
            continue
        if _SECRET_ENV_RE.search(key):
            values.append(value)
    out: list[str] = []
    for value in values:
        for line in value.splitlines():
            line = line.strip()
            if len(line) >= _MIN_MASK_LENGTH and line not in out:
                out.append(line)
    return out


def read_settings(env: Mapping[str, str]) -> ActionSettings:
    """Parse every ``INPUT_*`` variable of ``env``; the first bad one raises ActionInputError."""
    values: dict[str, Any] = {}
    for name in INPUT_NAMES:
        raw = raw_input(env, name)
        if not raw:
            continue
        try:
            values[name.replace("-", "_")] = PARSERS[name](raw)
        except ValueError as err:
            shown = None if name in SECRET_INPUTS else _clip(raw)
            raise ActionInputError(name, str(err), got=shown) from None
    _check_sources(values)
    if values.get("report_artifact") and values.get("report_artifact") == values.get("baseline_artifact"):
        raise ActionInputError("report-artifact", "must differ from baseline-artifact")
    return ActionSettings(**values)


def _check_sources(values: Mapping[str, Any]) -> None:
    given = [name for name in ("evals", "command", "results") if values.get(name)]
    if len(given) > 1:
        raise ActionInputError(
            given[1], f"set only one of evals, command or results (got {' and '.join(given)})"
        )
    mode = values.get("mode", "auto")
    if not given and mode not in ("auto", "comment"):
        raise ActionInputError("evals", "set evals (eval files), command or results to say what to run")
    if values.get("shard") and "results" in given:
        raise ActionInputError("shard", "only works with evals; a results file is already complete")
    if values.get("max_repeats") is not None and values.get("repeats") != "auto":
        raise ActionInputError(
            "max-repeats", "only works with repeats: auto; set repeats to auto or remove it"
        )
    if values.get("repeats") == "auto" and given and given[0] != "evals":
        raise ActionInputError(
            "repeats", "auto only works with evals: the action runs them against the baseline it found"
        )


def _clip(text: str, limit: int = 80) -> str:
    flat = text.replace("\r", " ").replace("\n", " ")
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def field_docs() -> dict[str, str]:
    """Input name → the field's docstring (what action.yml's descriptions are checked against)."""
    return {input_name(k): (f.description or "") for k, f in ActionSettings.model_fields.items()}


__all__ = [
    "COMMENT_MODES",
    "INPUT_NAMES",
    "MODES",
    "SECRET_INPUTS",
    "ActionSettings",
    "CommentMode",
    "Mode",
    "Shard",
    "field_docs",
    "input_name",
    "raw_input",
    "read_settings",
    "secrets_to_mask",
]
