"""Dispatch `axl-eval [command] ...` to the module that implements the command.

Each command lives in ``axl_action.cli.<module>`` and exposes ``run(argv) -> int`` and a
one-line ``SUMMARY``. Modules are imported lazily so ``axl-eval compare`` never pays for the
runner's imports and vice versa.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

from axl_action.cli import tuning
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
    # The collector and the BLAS threads are tuned for this command only (cli/tuning.py).
    with tuning.tuned(name):
        module = importlib.import_module(f"axl_action.cli.{COMMANDS[name][0]}")
        # The command's stdout, stderr and logging (the eval code's print and logging among
        # them) pass through the one redaction rule, for this command only.
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
    """The process entry point (`axl-eval`, `python -m axl_action`): :func:`main`, then exit,
    with the process tuned for the command (``axl_action.cli.tuning``)."""
    command = command_of(sys.argv[1:])[0]
    tuning.at_entry(command)
    code = main()
    tuning.at_exit(command)
    raise SystemExit(code)


if __name__ == "__main__":
    console_main()
