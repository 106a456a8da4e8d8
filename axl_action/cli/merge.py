"""``axl-eval merge <shard.json>... --output <all.json>``: join ``--shard i/n`` results.

Exit codes: 0 merged and written; 1 a bad flag, an unreadable file, or shards that do not
form one complete set (the message names the missing, duplicated or mismatched shard).
"""

from __future__ import annotations

import sys
from typing import TextIO

from axl_action.errors import InputFileError, UsageError

SUMMARY = "Join the results of --shard i/n runs into one result"

HELP = """\
Usage: axl-eval merge <shard.json>... --output <all.json>

Joins the results files of `axl-eval run --shard i/n` jobs (one per shard, any order) into
the results file of the whole dataset, in dataset order, with coverage, scorer stats, timing,
item error rate and accounting recomputed. Files holding several runs (--runs N) are merged
run by run.
"""


def run(argv: list[str], *, out: TextIO | None = None) -> int:
    """Entry point of ``axl-eval merge``; returns the exit code."""
    stdout = out or sys.stdout
    if argv and argv[0] in ("-h", "--help"):
        print(HELP, file=stdout)
        return 0
    output: str | None = None
    files: list[str] = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--output" or arg.startswith("--output="):
            if "=" in arg:
                output = arg.partition("=")[2]
            elif i + 1 < len(argv):
                i += 1
                output = argv[i]
            else:
                raise UsageError("--output requires a value")
        elif arg.startswith("--"):
            raise UsageError(f"Unknown flag: {arg}", hint="run `axl-eval merge --help` for the flags")
        else:
            files.append(arg)
        i += 1
    if not output:
        raise UsageError(
            "merge needs --output <file>", hint="e.g. axl-eval merge shard-*.json --output all.json"
        )
    if not files:
        raise UsageError(
            "merge needs at least one shard results file",
            hint="e.g. axl-eval merge shard-*.json --output all.json",
        )

    from axl_action.compare.merge import merge_files
    from axl_action.schema import load_result_file, write_result_file

    loaded = []
    is_list = False
    for path in files:
        result_file = load_result_file(path)
        is_list = is_list or result_file.is_list
        loaded.append((path, result_file.results))
    merged = merge_files(loaded)
    try:
        target = write_result_file(output, merged if is_list else merged[0])
    except OSError as err:
        raise InputFileError(
            f"cannot write --output file {output}: {err.strerror or err}", hint="pass a writable file path"
        ) from None
    first = merged[0]
    shards = first.metadata.get("merged", {}).get("shards")
    print(f"Merged {shards} shard(s) into {len(first.items)} items: {target}", file=stdout)
    return 0


def help_text() -> str:
    """The full help of this command (also shown by `axl-eval --help`)."""
    return HELP
