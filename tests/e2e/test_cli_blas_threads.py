"""Commands that run no eval code load numpy with one OpenBLAS thread (its idle workers spin)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

PROBE = """
import contextlib, io, os, sys
from axl_action.cli.main import main
with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):
    main([sys.argv[1], "--help"])
print(os.environ.get("OPENBLAS_NUM_THREADS"))
"""


def _threads_after(command: str, preset: str | None) -> str:
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    if preset is not None:
        env["OPENBLAS_NUM_THREADS"] = preset
    out = subprocess.run(
        [sys.executable, "-c", PROBE, command], capture_output=True, text=True, check=True, env=env
    )
    return out.stdout.strip().splitlines()[-1]


@pytest.mark.parametrize("command", ["compare", "report", "history", "merge", "recover"])
def test_commands_without_eval_code_ask_for_one_blas_thread(command: str) -> None:
    assert _threads_after(command, None) == "1"
    assert _threads_after(command, "4") == "4"  # the user's choice stands


@pytest.mark.parametrize("command", ["run", "rescore"])
def test_commands_that_run_eval_code_leave_blas_alone(command: str) -> None:
    assert _threads_after(command, None) == "None"
