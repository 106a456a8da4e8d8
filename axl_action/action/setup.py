"""The ``setup`` input: the user's own install step, run in the container before any eval.

An eval imports the user's application and its SDKs, which are not in the action's image, so
``setup`` holds a shell command (``pip install -r requirements.txt``, ``pip install ./pkg``)
that runs in ``working-directory`` with the same environment the evals get: provider keys yes,
the GitHub token and the artifact-service token no (the entrypoint has already withheld them).
Its output streams to the log inside a ``::group::``, as a ``run:`` step's would. A failure is
one ``::error::`` naming the command and its exit code, and no eval runs after it.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Mapping
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from axl_action.action.settings import ActionSettings
from axl_action.github.workflow_commands import WorkflowCommands

# The relay (mode comment) and a results-only run execute nothing of the repository's, so they
# need no install step; running one there would only widen what a relay job executes.
_SOURCES_THAT_RUN_CODE = frozenset({"evals", "command"})


def run_setup(
    settings: ActionSettings, *, workdir: Path, env: Mapping[str, str], commands: WorkflowCommands
) -> int | None:
    """Run ``settings.setup``; None when it succeeded or there was nothing to run, else the exit code."""
    command = settings.setup
    if not command or settings.source not in _SOURCES_THAT_RUN_CODE:
        return None
    shell = shutil.which("bash") or "/bin/sh"
    with commands.group(f"Setup: {_one_line(command)}"):
        # Our own buffered lines must reach the log before the child's, which go straight to it.
        sys.stdout.flush()
        sys.stderr.flush()
        try:
            code = subprocess.run([shell, "-c", command], cwd=workdir, env=dict(env), check=False).returncode
        except OSError as err:
            code = 127
            commands.echo(f"cannot start {shell}: {err}", stderr=True)
    if code == 0:
        return None
    commands.error(
        f"The setup command {_one_line(command)!r} exited {code} in {workdir}, so no eval ran. Its "
        "output is in the 'Setup' log group above; fix the command or the files it installs.",
        title="axl-eval: setup failed",
    )
    return 1


def version_line() -> str:
    """What ``axl-eval-action --version`` prints: the installed package's version."""
    try:
        installed = version("axl-eval-action")
    except PackageNotFoundError:  # running from a source tree that was never installed
        installed = "unknown"
    return f"axl-eval-action {installed}"


def _one_line(command: str, limit: int = 120) -> str:
    flat = " ".join(command.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


__all__ = ["run_setup", "version_line"]
