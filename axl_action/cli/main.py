"""Dispatch `axl-eval [command] ...` to the module that implements the command.

Each command lives in ``axl_action.cli.<module>`` and exposes ``run(argv) -> int`` and a
one-line ``SUMMARY``. Modules are imported lazily so ``axl-eval compare`` never pays for the
runner's imports and vice versa.
"""

from __future__ import annotations

import gc
import importlib
import os
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

from axl_action.cli.common import HardStop, leave, tolerant_console
from axl_action.errors import AxlError
from axl_action.redaction import redact, redacted_std_streams, register_env_secrets

# command name -> (module, one-line summary shown by --help)
COMMANDS: dict[str, tuple[str, str]] = {
    "run": ("run", "Run eval files and write results (the default command)"),
    "compare": ("compare", "Compare a baseline and a candidate result and apply the gates"),
    "rescore": ("rescore", "Re-run scorers on the saved outputs of a results file"),
    "merge": ("merge", "Join the results of --shard i/n runs into one result"),
    "recover": ("recover", "Write a results file from the journal of an interrupted run"),
    "report": ("report", "Render the PR comment, job summary and HTML report for a result"),
    "history": ("history", "Build a history.json of baseline runs from results files"),
}

# Commands that load eval files: their code may use numpy's BLAS as it likes.
RUNS_EVAL_CODE = frozenset({"run", "rescore"})


def one_blas_thread() -> None:
    """Ask for a single OpenBLAS thread before numpy loads, unless the user chose a number.

    Our numpy work is element-wise arithmetic, gathers and sorts, never BLAS. Yet loading
    numpy starts an OpenBLAS worker per core, and each spins for about 0.1 s of CPU waiting
    for work that never comes: on a two-core runner `compare` lost that to its forked readers.
    Only commands that run no eval code do this (see ``RUNS_EVAL_CODE``).
    """
    if "numpy" not in sys.modules:
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


USAGE = """\
Usage: axl-eval <eval paths...> [flags]          run evals (same as `axl-eval run`)
       axl-eval <command> [args...] [flags]

Commands:
{commands}

Every command and its flags follow; `axl-eval <command> --help` shows one command.
"""


def _usage(full: bool = False) -> str:
    width = max(len(n) for n in COMMANDS)
    lines = [f"  {name.ljust(width)}  {summary}" for name, (_, summary) in COMMANDS.items()]
    text = USAGE.format(commands="\n".join(lines))
    if not full:
        return text
    sections = [text]
    for name, (module_name, _) in COMMANDS.items():
        module = importlib.import_module(f"axl_action.cli.{module_name}")
        sections.append(f"── axl-eval {name} " + "─" * (60 - len(name)) + "\n" + module.help_text().rstrip())
    return "\n\n".join(sections)


def command_of(args: Sequence[str]) -> tuple[str, list[str]]:
    """The command an argument list names (``run`` when the first is not a command), and the
    arguments it gets."""
    if args and args[0] in COMMANDS:
        return args[0], list(args[1:])
    return "run", list(args)


def _mistyped_command(first: str) -> str | None:
    """The command ``first`` looks like a typo of, when it names no path either (``compre``):
    read as an eval path it would only say that no such file exists."""
    if first.startswith("-") or any(ch in first for ch in "/.*?[") or os.path.exists(first):
        return None
    import difflib

    close = difflib.get_close_matches(first, COMMANDS, n=1, cutoff=0.75)
    return close[0] if close else None


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help", "help"):
        print(_usage(full=bool(args)))
        return 0 if args else 1
    if args[0] in ("-V", "--version"):
        from importlib.metadata import version

        print(version("axl-eval-action"))
        return 0
    # Credential-named variables (OPENAI_API_KEY, GITHUB_TOKEN, ...) are redacted from every
    # output from the start, before any provider has read them.
    register_env_secrets()
    tolerant_console()
    name, rest = command_of(args)
    if name == "run" and args[0] not in COMMANDS:
        mistyped = _mistyped_command(args[0])
        if mistyped is not None:
            print(
                f'Error: unknown command "{args[0]}" (did you mean `axl-eval {mistyped}`?)', file=sys.stderr
            )
            return 1
    if name not in RUNS_EVAL_CODE:
        one_blas_thread()
    module = importlib.import_module(f"axl_action.cli.{COMMANDS[name][0]}")
    # The command's stdout, stderr and logging (the eval code's print and logging among them)
    # pass through the one redaction rule, for this command only.
    with redacted_std_streams():
        return _run_command(module, rest)


def _run_command(module: Any, rest: list[str]) -> int:
    try:
        code: int = module.run(rest)
    except AxlError as err:
        print(f"Error: {redact(str(err))}", file=sys.stderr)
        return leave(1)
    except HardStop as stop:  # a signal after the command had stopped handling them
        return leave(stop.exit_code)
    except KeyboardInterrupt:
        print("Interrupted.", file=sys.stderr)
        return 130
    # After a hard stop, items abandoned in flight may never return: exit without them.
    return leave(code)


def console_main() -> NoReturn:
    """The process entry point (`axl-eval`, `python -m axl_action`): :func:`main`, then exit.

    After the command everything left is frozen out of the collector: interpreter shutdown
    otherwise runs its own collections over every object the command left alive, which took
    40-70 ms after a 20,000-item compare.

    Commands that run eval code (``RUNS_EVAL_CODE``) collect their garbage once first, since
    an eval's cycles may hold objects whose finalisers must run. The others run with the
    collector off from here to the exit and skip that pass: what they build (imports, parsed
    files, comparisons) is kept or freed by reference counting. The collector's passes found
    nothing to free there: 80 passes and 20-27 ms of a 20,000-item compare while it ran, and
    20-25 ms at its exit for 691 objects left from building classes at import, none with a
    finaliser (as for ``report``, ``history`` and ``merge``). Paused here and not in
    :func:`main`, which callers in the same process (tests, scripts) expect to leave the
    collector as it was.
    """
    runs_eval_code = command_of(sys.argv[1:])[0] in RUNS_EVAL_CODE
    if not runs_eval_code:
        gc.disable()
    code = main()
    if runs_eval_code:
        gc.collect()
    gc.freeze()
    raise SystemExit(code)


if __name__ == "__main__":
    console_main()
