"""Produce the candidate's results file: run eval files, run the user's command, or take files.

This is the default ``run_evals`` the entrypoint hands to the orchestrator. It goes through the
``axl-eval`` commands (``run``, ``merge``) with an argv, the same interface a user has, so the
action and the CLI can never disagree about what a flag means. Eval files run in a child
process (``axl-eval run``) with an environment that holds no token (``action/boundary.py``);
``merge`` runs no user code and is called in this process.
"""

from __future__ import annotations

import contextlib
import glob
import importlib
import io
import os
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any, Literal, TextIO

from axl_action.action.settings import ActionSettings
from axl_action.errors import ActionInputError, AxlError
from axl_action.github.workflow_commands import WorkflowCommands

OUTPUT_ENV = "AXL_EVAL_OUTPUT"


@dataclass(frozen=True)
class EvalRequest:
    """Everything needed to produce one results file."""

    source: Literal["evals", "command", "results"]
    """Where results come from."""
    workdir: Path
    """Directory the evals or the command run in (paths are relative to it)."""
    output: Path
    """Where the results file must end up."""
    evals: tuple[str, ...] = ()
    command: str | None = None
    results: tuple[str, ...] = ()
    flags: tuple[str, ...] = ()
    """Runner flags derived from the inputs (``--runs 3 --budget $1 ...``)."""
    env: Mapping[str, str] = field(default_factory=dict)
    """Environment for a user command."""


@dataclass(frozen=True)
class EvalRun:
    """What came out: the exit code of the runner or command, and the results file if any."""

    exit_code: int
    results_path: Path | None
    message: str | None = None
    """Why there are no results, or what went wrong, in one sentence."""


def runner_flags(settings: ActionSettings) -> tuple[str, ...]:
    """The ``axl-eval run`` flags that the inputs ask for."""
    valued: tuple[tuple[str, object], ...] = (
        ("--runs", settings.runs if settings.runs != 1 else None),
        ("--repeats", settings.repeats),
        ("--max-repeats", settings.max_repeats),
        ("--budget", settings.budget),
        ("--concurrency", settings.concurrency),
        ("--shard", settings.shard),
        ("--pricing", settings.pricing),
        ("--max-item-error-rate", settings.max_item_error_rate),  # str(float) is its repr: exact
    )
    flags = [part for flag, value in valued if value is not None for part in (flag, str(value))]
    if settings.capture_requests:
        flags.append("--capture-requests")
    if not settings.stream_usage:
        flags.append("--no-stream-usage")
    return tuple(flags)


def build_request(
    settings: ActionSettings, *, workdir: Path, output: Path, env: Mapping[str, str]
) -> EvalRequest:
    """The request for ``settings``; raises ActionInputError when there is nothing to run."""
    source = settings.source
    if source == "none":
        raise ActionInputError("evals", "set evals (eval files), command or results to say what to run")
    return EvalRequest(
        source=source,
        workdir=workdir,
        output=output,
        evals=settings.evals,
        command=settings.command,
        results=settings.results,
        flags=runner_flags(settings),
        env=env,
    )


def run_evals(request: EvalRequest) -> EvalRun:
    """Produce ``request.output`` (or point at an existing file); never raises for a failed run."""
    request.output.parent.mkdir(parents=True, exist_ok=True)
    if request.source == "results":
        return _take_results(request)
    if request.source == "command":
        return _run_command(request)
    return _run_eval_files(request)


def _run_eval_files(request: EvalRequest) -> EvalRun:
    argv = [*request.evals, "--output", str(request.output), *request.flags]
    code, errors = run_cli_child("run", argv, request)
    if not request.output.is_file():
        cause = "; ".join(errors) or "see the log"
        return EvalRun(code or 1, None, f"axl-eval run exited {code} without writing a results file: {cause}")
    return EvalRun(code, request.output)


def run_cli_child(command: str, argv: list[str], request: EvalRequest) -> tuple[int, list[str]]:
    """Run ``axl-eval <command> argv`` in a child process: the user's code runs there, with
    ``request.env`` (no token, see ``action/boundary.py``), never in the action's process.

    Its output reaches the log through this process, redacted by the one rule and fenced by
    ``::stop-commands::`` (a pull request's code printing ``::add-mask::`` or ``::error::``
    is text, not a workflow command). SIGINT and SIGTERM are passed on to it, once each: the
    child runs in a session of its own, so a signal sent to the whole group is not doubled
    (a second signal is a hard stop). Returns the exit code and the ``Error...`` lines.
    """
    from axl_action.redaction import redact

    errors = _ErrorLines(sys.stdout)
    with WorkflowCommands(sys.stdout).stop_commands():
        try:
            proc = subprocess.Popen(
                [sys.executable, "-m", "axl_action.cli.main", command, *argv],
                cwd=request.workdir,
                env=dict(request.env),
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        except OSError as err:
            raise AxlError(f"cannot start axl-eval {command}: {err}") from None
        previous = _forward_signals(proc)
        try:
            assert proc.stdout is not None
            for raw in proc.stdout:
                errors.write(redact(raw.decode("utf-8", errors="replace")))
            errors.flush()
            code = proc.wait()
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
            sys.stdout.flush()
    return code, errors.lines


def _forward_signals(proc: subprocess.Popen[bytes]) -> dict[int, Any]:
    """Pass SIGINT and SIGTERM on to ``proc`` while it runs; the previous handlers."""
    if threading.current_thread() is not threading.main_thread():
        return {}

    def forward(signum: int, _frame: FrameType | None) -> None:
        with contextlib.suppress(ProcessLookupError):
            proc.send_signal(signum)

    return {sig: signal.signal(sig, forward) for sig in (signal.SIGINT, signal.SIGTERM)}


class _ErrorLines(io.TextIOBase):
    """Passes stderr through unchanged and keeps its ``Error...`` lines: the runner reports each
    user error (a missing eval file, one that fails to import) as one such line, and that line
    belongs in the annotation, not only in the log."""

    def __init__(self, target: TextIO, keep: int = 3) -> None:
        self._target = target
        self._keep = keep
        self._partial = ""
        self.lines: list[str] = []

    def write(self, text: str) -> int:
        self._target.write(text)
        self._partial += text
        *done, self._partial = self._partial.split("\n")
        for line in done:
            if line.startswith("Error") and len(self.lines) < self._keep:
                self.lines.append(line.removeprefix("Error: ").strip())
        return len(text)

    def flush(self) -> None:
        self._target.flush()


def _run_command(request: EvalRequest) -> EvalRun:
    assert request.command is not None
    env = {**request.env, OUTPUT_ENV: str(request.output)}
    shell = shutil.which("bash") or "/bin/sh"
    # The command's output goes straight to the log, like a `run:` step's.
    proc = subprocess.run([shell, "-c", request.command], cwd=request.workdir, env=env, check=False)
    if not request.output.is_file():
        return EvalRun(
            proc.returncode or 1,
            None,
            f"the command exited {proc.returncode} without writing a results file to ${OUTPUT_ENV} "
            f'({request.output}); pass --output "${OUTPUT_ENV}" to it',
        )
    return EvalRun(proc.returncode, request.output)


def _take_results(request: EvalRequest) -> EvalRun:
    files: list[str] = []
    for pattern in request.results:
        path = pattern if os.path.isabs(pattern) else str(request.workdir / pattern)
        matched = (
            sorted(glob.glob(path)) if glob.has_magic(path) else ([path] if os.path.exists(path) else [])
        )
        if not matched:
            return EvalRun(1, None, f"results: nothing matches {pattern!r} in {request.workdir}")
        files += [m for m in matched if m not in files]
    if len(files) == 1:
        return EvalRun(0, Path(files[0]))
    try:
        code = _cli("merge", [*files, "--output", str(request.output)])
    except AxlError as err:
        return EvalRun(1, None, f"could not merge {len(files)} results files: {err}")
    if not request.output.is_file():
        return EvalRun(code or 1, None, f"axl-eval merge exited {code} without writing a results file")
    return EvalRun(code, request.output)


def _cli(command: str, argv: list[str]) -> int:
    """Call ``axl-eval <command> argv`` in this process (imported lazily, like the dispatcher)."""
    from axl_action.cli import tuning
    from axl_action.redaction import redacted_std_streams

    module = importlib.import_module(f"axl_action.cli.{command}")
    # As at the CLI's entry: the collector tuned for the command, and the eval code's print
    # and logging reach the step log redacted.
    with tuning.tuned(command), redacted_std_streams():
        code: int = module.run(argv)
    return code
