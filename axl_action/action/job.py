"""What every mode shares: the frozen :class:`Job`, this run's facts, the record of what was
published, and the outcome handed back to the entrypoint.

Nothing here runs a step. The modes (``action/modes.py``, ``action/relay_mode.py``) create a
:class:`Steps` record each, call the steps with the ``Job`` and build their
:class:`ActionOutcome` from the return values.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from axl_action.action.evalstep import EvalRun
from axl_action.action.mode_choice import ResolvedMode
from axl_action.action.outputs import ActionOutputs
from axl_action.action.ports import CacheService, Clock, Commands, Commenter, OutputFiles, Uploader
from axl_action.action.relay import RelayTarget
from axl_action.action.settings import ActionSettings
from axl_action.errors import AxlError
from axl_action.github.api import GitHubApi
from axl_action.github.event import GitHubContext
from axl_action.schema import ResultFile

T = TypeVar("T")


@dataclass
class ActionOutcome:
    """What the action did, for the entrypoint (exit code) and for tests."""

    exit_code: int
    mode: ResolvedMode
    outputs: ActionOutputs
    gate_failed: bool = False
    published: list[str] = field(default_factory=list)
    """What was published: ``summary``, ``outputs``, ``report-artifact``, ``comment``, ..."""
    problems: list[str] = field(default_factory=list)
    """Publishing steps that failed (each also shown as a warning annotation)."""


def artifact_name(base: str, suite: str) -> str:
    """Per-suite artifact names, so several suites in one repository never collide."""
    return base if suite == "default" else f"{base}-{suite}"


def shard_artifact_name(suite: str, index: int, total: int) -> str:
    """Where a shard leg stores its results for the merge job."""
    return f"axl-eval-shard-{suite}-{index}-of-{total}"


@dataclass(frozen=True)
class RunContext:
    """The facts about this workflow run the orchestrator reads (built from ``GitHubContext``)."""

    event_name: str
    ref: str
    repository: str
    default_branch: str | None
    sha: str | None = None
    pr_number: int | None = None
    pr_head_sha: str | None = None
    pr_base_sha: str | None = None
    is_fork: bool = False
    pr_labels: tuple[str, ...] = ()
    run_id: str | None = None
    run_attempt: str | None = None
    server_url: str = "https://github.com"
    triggering_run_id: int | None = None
    """``workflow_run`` events: the id of the run whose results are relayed."""
    triggering_head_sha: str | None = None
    """``workflow_run`` events: the head commit of that run."""

    @classmethod
    def from_github(cls, ctx: GitHubContext) -> RunContext:
        """The orchestrator's view of ``github.event.GitHubContext``."""
        pr = ctx.pull_request
        trigger = ctx.workflow_run
        return cls(
            event_name=ctx.event_name,
            ref=ctx.ref,
            repository=ctx.repository,
            default_branch=ctx.default_branch,
            sha=ctx.sha,
            pr_number=pr.number if pr else None,
            pr_head_sha=pr.head_sha if pr else None,
            pr_base_sha=pr.base_sha if pr else None,
            is_fork=pr.is_fork if pr else False,
            pr_labels=pr.labels if pr else (),
            run_id=str(ctx.run_id),
            run_attempt=str(ctx.run_attempt),
            server_url=ctx.server_url,
            triggering_run_id=trigger.id if trigger else None,
            triggering_head_sha=trigger.head_sha if trigger else None,
        )

    @property
    def run_url(self) -> str | None:
        if not self.run_id or not self.repository:
            return None
        return f"{self.server_url}/{self.repository}/actions/runs/{self.run_id}"


@dataclass(frozen=True)
class Job:
    """What every mode reads: the inputs, this run's facts and its collaborators. Never changed;
    the relay derives a new one (``dataclasses.replace``) once it knows the PR."""

    settings: ActionSettings
    ctx: RunContext
    mode: ResolvedMode
    commands: Commands
    clock: Clock
    workdir: Path
    scratch: Path
    branch: str | None
    """The baseline branch (input, else the repository's default branch)."""
    github: GitHubApi | None = None
    uploader: Uploader | None = None
    commenter: Commenter | None = None
    files: OutputFiles | None = None
    relayed: RelayTarget | None = None
    """``mode: comment``: the PR whose fork run's results passed every check."""
    cache_service: CacheService | None = None
    """The GitHub Actions cache, where the response cache lives between runs (``cache`` input)."""


def describe(err: Exception) -> str:
    """One line for a failed step: an ``AxlError``'s own message, else the exception's type and text."""
    return str(err) if isinstance(err, AxlError) else f"{type(err).__name__}: {err}"


class Steps:
    """What one mode call published and what failed; created by each mode, never shared."""

    def __init__(self, commands: Commands) -> None:
        self._commands = commands
        self.published: list[str] = []
        self.problems: list[str] = []

    def guard(self, what: str, step: Callable[[], T]) -> T | None:
        """Run one publishing step and return its value; a failure is reported (None) and
        never hides the gate result."""
        try:
            value = step()
        except Exception as err:  # publishing must never mask the verdict
            message = describe(err)
            self.problems.append(f"{what}: {message}")
            self._commands.warning(
                f"Could not publish the {what}: {message}", title="axl-eval: publishing failed"
            )
            return None
        self.published.append(what)
        return value

    def outcome(
        self, job: Job, outputs: ActionOutputs, *, exit_code: int, gate_failed: bool = False
    ) -> ActionOutcome:
        return ActionOutcome(
            exit_code=exit_code,
            mode=job.mode,
            outputs=outputs,
            gate_failed=gate_failed,
            published=list(self.published),
            problems=list(self.problems),
        )

    def finish(self, job: Job, outputs: ActionOutputs, summary: str, *, exit_code: int) -> ActionOutcome:
        """End a mode that publishes no report: the job summary, the step outputs, the outcome."""
        self.guard("job summary", lambda: job.commands.append_summary(summary))
        self.guard("step outputs", lambda: outputs.publish(job.commands))
        return self.outcome(job, outputs, exit_code=exit_code)


@dataclass(frozen=True)
class Produced:
    """The candidate's results, read back, and how the eval run ended."""

    candidate: ResultFile
    evalrun: EvalRun
    results_path: str
    """The ``results-path`` output ("" when the copy could not be written)."""
