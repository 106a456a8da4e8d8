"""``axl-eval-action``: the container's entrypoint, and the only code that reads the environment.

It masks secrets first, reads the inputs (a bad one stops the run before anything is spent),
loads the run's context from ``GITHUB_*`` and the event file, builds the GitHub client and the
artifact uploader, and hands everything to :func:`~axl_action.action.orchestrator.run_action`.

Exit codes: 0 success; 1 a gate failed, the evals produced no results, an input was invalid,
the run is not inside GitHub Actions, or the fork relay rejected its artifact or could not comment.
"""

from __future__ import annotations

import os
import signal
import sys
import tempfile
import threading
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from types import FrameType
from typing import Any

from axl_action.action import boundary
from axl_action.action.evalstep import run_evals
from axl_action.action.orchestrator import run_action
from axl_action.action.settings import read_settings, secrets_to_mask
from axl_action.action.setup import run_setup, version_line
from axl_action.action.workspace_files import WorkspaceFiles
from axl_action.cli import tuning
from axl_action.cli.common import GRACE_ENV, leave, tolerant_console
from axl_action.errors import ActionInputError, AxlError
from axl_action.github.actions_cache import ActionsCache
from axl_action.github.artifact_upload import ArtifactUploader
from axl_action.github.client import GitHubClient
from axl_action.github.event import load_context
from axl_action.github.workflow_commands import WorkflowCommands


def main(argv: Sequence[str] | None = None) -> int:
    """Run the action with ``os.environ``; returns the process exit code.

    Called as the process's entry (``argv`` None), it first re-executes itself without the
    tokens in its start-up environment (``action/boundary.py``); a programmatic call (an
    ``argv``) only drops them from ``os.environ``.
    """
    # The runner passes inputs as INPUT_* variables; the only argument is the image smoke test's.
    args = list(sys.argv[1:] if argv is None else argv)
    if args == ["--version"]:
        WorkflowCommands().echo(version_line())
        return 0
    if argv is None:
        boundary.reexec_without_tokens(args)  # returns only when there is nothing to withhold
    args, handed_over = boundary.read_tokens(args)
    boundary.no_dumping()
    tolerant_console()
    env = {**os.environ, **handed_over}
    # The code the action runs (eval files, setup, a command) runs in child processes with an
    # environment without tokens; this process keeps them in ``env`` alone, which only this
    # module hands to the clients.
    for key in list(os.environ):
        if boundary.is_token_name(key):
            del os.environ[key]
    # Compare and the report build millions of small objects and keep them: the collector is
    # off for the action (the eval child tunes its own; cli/tuning.py).
    with tuning.collector_off():
        return run(env)


def scratch_dir(runner_temp: str | None, commands: WorkflowCommands) -> Path:
    """A fresh directory for the run's working files, in ``RUNNER_TEMP`` when it is usable.

    Working files stay out of the workspace (only the two files of the ``*-path`` outputs go
    there, see ``action.workspace_files``). A runner temp directory that is unset, missing,
    not a directory or not writable (a container started without its mount) is not a reason
    to lose the run: the system temp directory is used instead, with a warning.
    """
    problem = "RUNNER_TEMP is not set"
    if runner_temp:
        try:
            return Path(tempfile.mkdtemp(prefix="axl-eval-action-", dir=runner_temp))
        except OSError as err:
            problem = f"RUNNER_TEMP {runner_temp!r} is not usable ({err.strerror or type(err).__name__})"
    fallback = Path(tempfile.mkdtemp(prefix="axl-eval-action-"))
    commands.warning(
        f"{problem}; working files go to {fallback} instead. In a container step the runner mounts its "
        "temp directory at /github/runner_temp; check the job's container setup if this persists.",
        title="Runner temp directory unusable",
    )
    return fallback


def run(env: Mapping[str, str]) -> int:
    commands = WorkflowCommands.from_env(env)
    for secret in secrets_to_mask(env):
        commands.add_mask(secret)
    try:
        settings = read_settings(env)
    except ActionInputError as err:
        commands.error(str(err), title=f"Invalid input {err.input_name}")
        return 1
    try:
        context = load_context(env)
    except AxlError as err:
        commands.error(str(err), title="Not a GitHub Actions run")
        return 1

    workspace = Path(env.get("GITHUB_WORKSPACE") or os.getcwd()).resolve()
    workdir = (workspace / settings.working_directory).resolve()
    if not workdir.is_dir():
        commands.error(
            f"Invalid input working-directory: {settings.working_directory!r} is not a directory of the "
            "repository (did the job run actions/checkout first?)",
            title="Invalid input working-directory",
        )
        return 1
    scratch = scratch_dir(env.get("RUNNER_TEMP"), commands)

    token = settings.github_token.get_secret_value()
    github = GitHubClient.from_env(env, token) if token else None
    if github is None:
        commands.warning(
            "github-token is empty: no baseline lookup and no PR comment.", title="No GitHub token"
        )

    # One clock for every time the action shows or stamps (baseline age, report, artifact expiry).
    def clock() -> datetime:
        return datetime.now(UTC)

    uploader: ArtifactUploader | None = None
    if context.artifacts_supported:
        try:
            uploader = ArtifactUploader.from_env(env, clock=clock, on_secret=commands.add_mask)
        except AxlError as err:
            commands.warning(str(err), title="Artifacts unavailable")
    else:
        commands.warning(
            "This GitHub server has no artifacts v4 service, so no baseline or report can be stored.",
            title="Artifacts unavailable",
        )

    cache_service: ActionsCache | None = None
    if settings.cache != "off" and context.artifacts_supported:
        try:
            cache_service = ActionsCache.from_env(env, on_secret=commands.add_mask)
        except AxlError as err:
            commands.warning(str(err), title="Response cache unavailable")

    # A cancelled job gets SIGINT, then SIGTERM 7.5 s later, then SIGKILL 2.5 s after that: the
    # items in flight get 5 s (unless the workflow sets AXL_EVAL_GRACE_SECONDS), which leaves
    # time to store the journal before the SIGTERM.
    child_env = {GRACE_ENV: str(ACTION_GRACE_SECONDS), **boundary.eval_environment(env)}
    if (setup_failed := run_setup(settings, workdir=workdir, env=child_env, commands=commands)) is not None:
        return setup_failed
    # Signals that arrive while the action publishes are noted, not obeyed at once; during the
    # eval run they are passed on to its child (action/evalstep.py).
    deferred = _DeferredSignals(commands)
    deferred.install()
    try:
        outcome = run_action(
            settings,
            context,
            github=github,
            uploader=uploader,
            commands=commands,
            clock=clock,
            run_evals=run_evals,
            workdir=workdir,
            scratch=scratch,
            env=child_env,
            files=WorkspaceFiles(workspace, settings.suite),
            cache_service=cache_service,
        )
    except ActionInputError as err:
        commands.error(str(err), title=f"Invalid input {err.input_name}")
        return leave(1)
    except AxlError as err:
        commands.error(str(err), title="axl-eval-action failed")
        return leave(1)
    finally:
        deferred.restore()
    for problem in outcome.problems:
        commands.echo(f"Not published: {problem}", stderr=True)
    # After a hard stop the eval run may have left threads in flight: exit without them.
    return leave(deferred.exit_code or outcome.exit_code)


ACTION_GRACE_SECONDS = 5
"""The action's default grace period (``AXL_EVAL_GRACE_SECONDS``), shorter than the CLI's 30 s."""


class _DeferredSignals:
    """SIGINT/SIGTERM while the action publishes: note it and finish (the runner's SIGKILL
    bounds how long), so the journal and the partial results still get stored."""

    def __init__(self, commands: WorkflowCommands) -> None:
        self._commands = commands
        self.signum: int | None = None
        self._previous: dict[int, Any] = {}

    def _handle(self, signum: int, _frame: FrameType | None) -> None:
        self.signum = signum
        self._commands.echo(
            f"axl-eval-action: received {signal.Signals(signum).name}; finishing what is being stored first.",
            stderr=True,
        )

    def install(self) -> None:
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM):
                self._previous[sig] = signal.signal(sig, self._handle)

    def restore(self) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)

    @property
    def exit_code(self) -> int:
        return 128 + self.signum if self.signum is not None else 0


if __name__ == "__main__":
    raise SystemExit(main())
