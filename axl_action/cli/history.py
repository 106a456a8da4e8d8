"""``axl-eval history <results.json>... --output history.json``: build a history from local runs.

The same file a baseline artifact carries (one row per results file, oldest first by the
result's timestamp), to seed the action's history or to use ``--threshold auto``,
``--history`` and the report's History panel outside GitHub. Exit 0 when the file was
written; 1 for a bad flag or an unreadable file, with one line saying which.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, TextIO

from axl_action import values
from axl_action.cli.flags import flag_value, scan
from axl_action.errors import UsageError

if TYPE_CHECKING:
    from axl_action.cli.flags import GateFlags
    from axl_action.history import AutoThresholds, History
    from axl_action.schema import RunHeader

SUMMARY = "Build a history.json of baseline runs from results files"

USAGE_LINE = (
    "Usage: axl-eval history <results.json>... --output <history.json> [--history <file>] "
    "[--limit <n>] [--suite <key>] [--commit <sha>] [--run-id <id>]"
)

HELP = f"""\
{USAGE_LINE}

Builds the history file a baseline artifact carries, from local results files: one row per
file (a file holding a --runs N list is one row), oldest first by each result's timestamp.
Use it to seed the action's history, or with `axl-eval compare/report --history` and
`--threshold auto` outside GitHub.

  --output <file>     where to write it (gzipped when the name ends in .gz)
  --history <file>    append to this history instead of starting a new one (may be --output)
  --limit <n>         rows kept, the newest win (default 50, at most 500)
  --suite <key>       suite recorded in the file; the action refuses another suite's history
  --commit <sha>      the commit of the newest row (one results file only)
  --run-id <id>       the workflow run id of the newest row (one results file only)

Prints each scorer's noise band: how much its mean moves between runs that measured the same
dataset and scorers (see docs/history.md).
"""

_VALUE_FLAGS = ("--output", "--history", "--limit", "--suite", "--commit", "--run-id")
_BOOL_FLAGS: tuple[str, ...] = ()


def _limit(raw: str) -> int:
    from axl_action.history import MAX_ROWS

    return flag_value(
        functools.partial(values.whole_number, low=1, high=MAX_ROWS),
        raw,
        f'--limit must be a whole number from 1 to {MAX_ROWS}, got "{raw}"',
    )


def run(argv: list[str], *, out: TextIO | None = None) -> int:
    """Entry point of ``axl-eval history``; returns the exit code."""
    stdout = out or sys.stdout
    if argv and argv[0] in ("-h", "--help"):
        print(HELP, file=stdout)
        return 0
    scanned = scan(argv, _VALUE_FLAGS, _BOOL_FLAGS, "history")
    values = scanned.values
    for name, value in values.items():
        if not value.strip():
            raise UsageError(f"{name} requires a non-empty value", hint=USAGE_LINE)
    output = values.get("--output")
    if not output:
        raise UsageError(
            "history needs --output <file>", hint="e.g. axl-eval history runs/*.json --output history.json"
        )
    files = scanned.positionals
    if not files:
        raise UsageError("history needs at least one results file", hint=USAGE_LINE)
    if len(files) > 1 and ("--commit" in values or "--run-id" in values):
        raise UsageError(
            "--commit and --run-id name one run, but several results files were given",
            hint="build the history one file at a time with --history <file> to record each commit",
        )
    limit = _limit(values["--limit"]) if "--limit" in values else None

    from axl_action.history import (
        History,
        append,
        history_entry,
        load_history,
        write_history,
    )
    from axl_action.schema import load_run_views

    suite = values.get("--suite")
    history: History = History(suite=suite)
    if "--history" in values:
        history = load_history(values["--history"], suite=suite)
        if suite is not None:
            history = History(entries=history.entries, limit=history.limit, suite=suite)
    if limit is not None:
        history = History(entries=history.entries[-limit:], limit=limit, suite=history.suite)
    loaded = [(path, load_run_views(path).runs) for path in files]
    # Oldest first by timestamp; the file order breaks ties.
    order = sorted(range(len(loaded)), key=lambda i: (loaded[i][1][0].header.timestamp, i))
    previous = None
    for i in order:
        runs = loaded[i][1]
        entry = history_entry(
            runs, commit=values.get("--commit"), run_id=values.get("--run-id"), previous=previous
        )
        history = append(history, entry)
        previous = runs
    written = write_history(output, history)
    entries = history.entries
    names = list(entries[-1].summary.scorers)
    print(
        f"Wrote {output}: {len(entries)} row{'s' if len(entries) != 1 else ''} "
        f"({entries[0].summary.date[:10]} to {entries[-1].summary.date[:10]}), "
        f"{len(written.data):,} bytes.",
        file=stdout,
    )
    if written.dropped:
        print(
            f"The item scores of the oldest {written.dropped} rows were left out to keep the file small; "
            "their summaries are kept.",
            file=stdout,
        )
    print(_bands_text(history, names), file=stdout)
    return 0


def _bands_text(history: History, names: Sequence[str]) -> str:
    from axl_action.formatting import num
    from axl_action.history import MIN_MOVES, noise_bands

    lines = ["Noise bands (95% of run-to-run moves of unchanged code fall inside):"]
    width = max([len(n) for n in names] + [6])
    for name, band in noise_bands(history, names).items():
        moves = len(band.moves)
        if band.band is None:
            text = f"not measured: {moves} usable move{'s' if moves != 1 else ''}, {MIN_MOVES} needed"
        else:
            text = f"±{num(band.band)} (last {moves})"
        lines.append(f"  {name.ljust(width)}  {text}")
    return "\n".join(lines)


def history_for(gates: GateFlags, header: RunHeader) -> tuple[History | None, AutoThresholds | None]:
    """The ``--history`` file of ``compare``/``report`` and, for ``--threshold auto``, the
    thresholds measured from it for the scorers of the baseline ``header``."""
    if gates.history is None:
        return None, None
    from axl_action.history import auto_thresholds, load_history
    from axl_action.values import AUTO

    history = load_history(gates.history)
    auto = None
    if gates.thresholds == AUTO:
        auto = auto_thresholds(history, header.scorer_names, header.scorer_types)
    return history, auto


def help_text() -> str:
    """The full help of this command (also shown by `axl-eval --help`)."""
    return HELP
