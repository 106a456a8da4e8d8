"""``axl-eval recover <journal> --output <file>``: a results file from a run journal alone.

For a run that can no longer be resumed (the eval changed, the machine is gone): every item the
journal holds becomes an item of a valid results file, marked ``metadata.recovered`` with
``partial: true`` when items the run planned are missing. Items that never settled are not
invented; the summary, coverage and gates are computed over the items present.

Exit codes: 0 written; 1 a bad flag, a journal that cannot be read, or one with no items.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from axl_action.cli.common import ArgParser, write_results
from axl_action.errors import InputFileError, UsageError

SUMMARY = "Write a results file from the journal of an interrupted run"


def build_parser() -> argparse.ArgumentParser:
    """The recover command's flags."""
    parser = ArgParser(
        prog="axl-eval recover",
        description=(
            "Write a valid results file from a run journal (<output>.journal.jsonl) alone, marked "
            "metadata.recovered (partial when items are missing). To finish the run instead, rerun "
            "its command with --resume."
        ),
        usage="%(prog)s <journal> --output FILE",
        allow_abbrev=False,
    )
    parser.add_argument("journal", nargs="?", metavar="JOURNAL", help="the .journal.jsonl file")
    parser.add_argument("--output", metavar="FILE", help="write the recovered results JSON here (atomically)")
    return parser


def run(argv: list[str]) -> int:
    """Entry point of ``axl-eval recover``; returns the exit code."""
    args = build_parser().parse_intermixed_args(argv)
    if not args.journal:
        raise UsageError(
            "recover needs a journal file", hint="axl-eval recover <output>.journal.jsonl --output FILE"
        )
    if not args.output:
        raise UsageError("recover needs --output <file>", hint="where to write the recovered results")

    from axl_action.evals.journal.reader import read_journal
    from axl_action.evals.journal.recovery import recover_results

    journal = read_journal(args.journal)
    results = [r for r in recover_results(journal) if r["items"]]
    if not results:
        raise InputFileError(
            f"{args.journal} holds no settled item, so there is nothing to recover",
            hint="the run stopped before its first item settled; run it again",
        )
    output = Path(args.output)
    if output.resolve() == Path(args.journal).resolve():
        raise UsageError("--output must not be the journal itself", hint="pass the results file to write")
    write_results(output, results, as_list=len(results) != 1, what="recovered results")
    for result in results:
        recovered = result["metadata"]["recovered"]
        state = "partial" if recovered["partial"] else "complete"
        print(
            f"[axl-eval] {result['dataset']}: {recovered['itemsFromJournal']} of {recovered['itemsPlanned']} "
            f"item(s) recovered ({state}).",
            file=sys.stderr,
        )
    return 0


def help_text() -> str:
    """The full help of this command (also shown by `axl-eval --help`)."""
    return build_parser().format_help()
