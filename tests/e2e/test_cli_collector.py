"""Commands without eval code run with the cyclic collector off; commands with eval code
collect once at the exit; ``main`` itself leaves the collector as the caller had it (the
tuning is ``axl_action.cli.tuning``'s, for the command only)."""

from __future__ import annotations

import gc
import subprocess
import sys

import pytest

from axl_action.cli import main as cli_main

# Runs console_main in a fresh process with the command's work replaced by a probe of the
# collector, then prints what the probe saw, the exit code, whether the exit froze what was
# left, and how many full collections ran after the command.
PROBE = """
import gc, sys
from axl_action.cli import main as cli
seen, passes = [], []
def command(module, rest):
    seen.append(gc.isenabled())
    # Full passes only: a young-generation pass may run after the command on any allocation.
    gc.callbacks.append(lambda phase, info: phase == "stop" and info["generation"] == 2 and passes.append(info))
    return 0
cli._run_command = command
sys.argv = ["axl-eval", *sys.argv[1:]]
try:
    cli.console_main()
except SystemExit as stop:
    print(seen[0], stop.code, gc.get_freeze_count() > 0, len(passes))
"""


def _probe(*args: str) -> list[str]:
    out = subprocess.run([sys.executable, "-c", PROBE, *args], capture_output=True, text=True, check=True)
    return out.stdout.split()


@pytest.mark.parametrize("command", ["compare", "report", "history", "merge", "recover"])
def test_commands_without_eval_code_run_with_the_collector_off(command: str) -> None:
    assert _probe(command, "a.json") == ["False", "0", "True", "0"]


@pytest.mark.parametrize("args", [["run", "evals/"], ["rescore", "r.json"], ["evals/"]])
def test_commands_that_run_eval_code_keep_the_collector(args: list[str]) -> None:
    assert _probe(*args) == ["True", "0", "True", "1"]


def test_main_leaves_the_collector_as_it_was(capsys: pytest.CaptureFixture[str]) -> None:
    assert gc.isenabled()
    assert cli_main.main(["compare", "--help"]) == 0
    assert gc.isenabled()
    capsys.readouterr()


def test_command_of_names_run_by_default() -> None:
    assert cli_main.command_of(["compare", "b.json", "c.json"]) == ("compare", ["b.json", "c.json"])
    assert cli_main.command_of(["evals/", "--output", "r.json"]) == ("run", ["evals/", "--output", "r.json"])
    assert cli_main.command_of([]) == ("run", [])
