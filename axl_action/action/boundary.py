"""The line between the action and the code it runs: where the tokens may be, and where not.

On a pull request, the eval files, the setup command and a user command are the pull
request author's code. They run in child processes, and nothing a child can read holds the
GitHub token or the runtime tokens of the artifact and cache services:

* **The child's environment** (:func:`eval_environment`): the job's variables (the user's,
  the provider keys, ``PATH``, ``HOME``, the ``GITHUB_*`` and ``RUNNER_*`` context) without
  the runner's own namespaces (``INPUT_*`` holds the ``github-token`` input, ``ACTIONS_*``
  the runtime tokens, ``STATE_*`` the action's state), without ``GITHUB_TOKEN``/``GH_TOKEN``,
  without the workflow-command files (``GITHUB_ENV``, ``GITHUB_PATH``, ``GITHUB_OUTPUT``,
  ``GITHUB_STATE``, ``GITHUB_STEP_SUMMARY``: writing them would set the environment or the
  outputs of the job's later steps), and without any variable, whatever its name, whose value
  holds a token.
* **The action's own start-up environment.** ``/proc/<pid>/environ`` keeps the environment a
  process was started with, whatever ``os.environ`` says since, and a child may read its
  parent's. So the action re-executes itself before it does anything else
  (:func:`reexec_without_tokens`): the new image starts with an environment without the
  tokens, and reads them from a pipe the old one filled (:func:`read_tokens`).
* **The action's memory.** The action marks itself not dumpable (:func:`no_dumping`): its
  ``/proc/<pid>/mem`` and ``environ`` then need ``CAP_SYS_PTRACE``, which Docker does not
  grant a container by default.

What remains is documented in docs/action.md: the workspace (the PR's own files) and the
job's other variables are the child's, as they would be in a ``run:`` step.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import Mapping, Sequence

TOKEN_NAMES = frozenset(
    {
        "INPUT_GITHUB-TOKEN",
        "INPUT_GITHUB_TOKEN",
        "ACTIONS_RUNTIME_TOKEN",
        "ACTIONS_ID_TOKEN_REQUEST_TOKEN",
        "GITHUB_TOKEN",
        "GH_TOKEN",
    }
)
"""Variables that hold a GitHub or runtime token: never in a child's or the action's own
start-up environment."""

RUNNER_NAMESPACES = ("INPUT_", "ACTIONS_", "STATE_")
"""The runner's own variables for the action: its inputs, the runtime services, its state."""

WORKFLOW_COMMAND_FILES = frozenset(
    {"GITHUB_ENV", "GITHUB_PATH", "GITHUB_OUTPUT", "GITHUB_STATE", "GITHUB_STEP_SUMMARY"}
)
"""Files through which a step changes the job: the action writes its outputs and summary
there itself; the code it runs must not set later steps' environment or outputs."""

SECRETS_FD_FLAG = "--secrets-fd"
"""How the re-executed action learns where its tokens are (a pipe's read end)."""

_MIN_TOKEN = 6  # shorter values are not tokens (and would match ordinary values)


def is_token_name(name: str) -> bool:
    return name.upper() in TOKEN_NAMES


def tokens_of(env: Mapping[str, str]) -> dict[str, str]:
    """The token variables of ``env`` that hold a value."""
    return {k: v for k, v in env.items() if is_token_name(k) and v}


def eval_environment(env: Mapping[str, str]) -> dict[str, str]:
    """The environment of the code the action runs (eval files, setup, a user command)."""
    values = [v for v in tokens_of(env).values() if len(v) >= _MIN_TOKEN]
    return {
        name: value
        for name, value in env.items()
        if not is_token_name(name)
        and not name.upper().startswith(RUNNER_NAMESPACES)
        and name.upper() not in WORKFLOW_COMMAND_FILES
        and not any(token in value for token in values)
    }


def reexec_without_tokens(argv: Sequence[str]) -> None:
    """Replace this process by the action started without the tokens in its environment,
    handing them over through a pipe; returns only when there is nothing to withhold."""
    tokens = tokens_of(os.environ)
    if not tokens:
        return
    clean = {k: v for k, v in os.environ.items() if k not in tokens}
    read_end, write_end = os.pipe()
    # A pipe holds 64 KiB before a writer blocks; a few tokens are far below that, so the
    # whole hand-over is written before the exec and read by the new image.
    with os.fdopen(write_end, "wb") as out:
        out.write(json.dumps(tokens).encode("utf-8"))
    os.set_inheritable(read_end, True)
    sys.stdout.flush()
    sys.stderr.flush()
    command = [sys.executable, "-m", "axl_action.action.entrypoint", *argv, SECRETS_FD_FLAG, str(read_end)]
    os.execve(sys.executable, command, clean)


def read_tokens(argv: Sequence[str]) -> tuple[list[str], dict[str, str]]:
    """``argv`` without the hand-over flag, and the tokens read from its pipe (none without it)."""
    args = list(argv)
    if SECRETS_FD_FLAG not in args:
        return args, {}
    at = args.index(SECRETS_FD_FLAG)
    fd = int(args[at + 1])
    del args[at : at + 2]
    with os.fdopen(fd, "rb") as pipe:
        tokens: dict[str, str] = json.loads(pipe.read() or b"{}")
    return args, tokens


def no_dumping() -> None:
    """Mark this process not dumpable (``prctl(PR_SET_DUMPABLE, 0)``), so a child running as
    the same user cannot read its memory or environment without ``CAP_SYS_PTRACE``. A no-op
    where the call does not exist (not Linux)."""
    if sys.platform != "linux":
        return
    import ctypes

    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        pr_set_dumpable = 4
        libc.prctl(pr_set_dumpable, 0, 0, 0, 0)
