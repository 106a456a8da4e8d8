"""``axl-eval <paths...> [flags]``: run eval files, print the results, write the results file.

Exit codes: 0 all evals ran and passed their gates; 1 a file failed to load or run, a gate
fired (budget stop, total wipeout, item error rate, degraded scorer), a bad flag, a journal
that cannot be resumed, or no result; 130 / 143 the run was interrupted by SIGINT / SIGTERM
(the partial results file is still written, atomically, and the journal is kept for
``--resume``).

With ``--output FILE`` every settled item is also appended to ``FILE.journal.jsonl`` as it
settles (``evals/journal.py``); ``--resume`` continues an interrupted run from it.
"""

from __future__ import annotations

import argparse
import functools
import os
import sys
import uuid
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from axl_action import values
from axl_action.cli.commands import (
    add_cache_flags,
    add_capture_flags,
    cache_from_flags,
    check_capture_flags,
    closing_notes,
    write_on_hard_stop,
)
from axl_action.cli.common import (
    ArgParser,
    HardStop,
    Interrupt,
    abandoned_note,
    add_wait_flag,
    budget_arg,
    check_force_flag,
    close_providers,
    env_int,
    grace_seconds,
    journal_stop_note,
    make_runtime,
    output_file,
    positive_int,
    sidecar_sink,
    write_results,
)
from axl_action.errors import AxlError, UsageError

if TYPE_CHECKING:
    from axl_action.evals.journal import JournalSession
    from axl_action.schema import RunView

SUMMARY = "Run eval files and write results (the default command)"


def _error_rate(raw: str) -> float:
    from axl_action.cli.flags import error_rate

    # Raises UsageError (not an argparse error): the message is the reference's exact line.
    return error_rate("--max-item-error-rate", raw)


def _shard(raw: str) -> tuple[int, int]:
    try:
        return values.shard(raw)
    except values.OutOfRange:
        raise argparse.ArgumentTypeError(f'expected i/n with 1 <= i <= n, got "{raw}"') from None
    except ValueError:
        raise argparse.ArgumentTypeError(f'expected i/n like 1/4, got "{raw}"') from None


def _repeats(raw: str) -> int:
    from axl_action.evals.repeats import MAX_REPEATS

    try:
        return values.whole_number(raw, low=1, high=MAX_REPEATS)
    except ValueError as err:
        raise argparse.ArgumentTypeError(f'{err} (got "{raw}"); 1 runs each item once') from None


def _scorer_names(raw: str) -> list[str]:
    names: dict[str, None] = {}
    for part in raw.split(","):
        if part.strip():
            names.setdefault(part.strip(), None)
    if not names:
        raise argparse.ArgumentTypeError(f'expected scorer names like a,b, got "{raw}"')
    return list(names)


def build_parser() -> argparse.ArgumentParser:
    """The run command's flags."""
    parser = ArgParser(
        prog="axl-eval [run]",
        description="Run eval files (*_eval.py, *.eval.py, or directories of them) and write results.",
        allow_abbrev=False,
    )
    parser.add_argument("paths", nargs="*", help="eval files, directories or glob patterns")
    parser.add_argument(
        "--output",
        metavar="FILE",
        help="write the results JSON here (atomically); settled items also go to <output>.journal.jsonl "
        "as they settle, until the file is in place",
    )
    parser.add_argument("--runs", type=positive_int, default=1, metavar="N", help="run each eval N times")
    parser.add_argument(
        "--repeats",
        type=_repeats,
        metavar="N",
        help="run each item N times inside each run: its scores are the mean, item.repeats each "
        "repeat (overrides the eval's repeats; docs/run-model.md)",
    )
    parser.add_argument(
        "--concurrency",
        type=positive_int,
        metavar="N",
        help="items in flight (default: $AXL_EVAL_CONCURRENCY, else the eval's, else 5)",
    )
    parser.add_argument(
        "--scorers", type=_scorer_names, metavar="a,b", help="run only these scorers (one file)"
    )
    parser.add_argument(
        "--max-item-error-rate",
        type=_error_rate,
        metavar="R",
        help="item error-rate gate in [0, 1] (default 0.05; 1 disables)",
    )
    parser.add_argument(
        "--budget", type=budget_arg, metavar="$X", help='stop admitting spend at this USD amount, e.g. "$1"'
    )
    parser.add_argument(
        "--shard", type=_shard, metavar="i/n", help="run only shard i of n (1-based) of each dataset"
    )
    add_capture_flags(parser, calls="provider")
    parser.add_argument("--pricing", metavar="FILE", help="price table overrides (JSON)")
    parser.add_argument(
        "--resume",
        action="store_true",
        help="continue the interrupted run recorded in <output>.journal.jsonl: its settled items are "
        "neither run nor paid for again; without a journal, the results file <output> is continued "
        "instead (only its budget-skipped, interrupted and cancelled items run)",
    )
    parser.add_argument(
        "--resume-failed",
        action="store_true",
        help="--resume, and also run the items that failed again (their earlier spend still counts)",
    )
    add_wait_flag(parser)
    parser.add_argument(
        "--grace-period",
        metavar="S",
        help="after the first SIGINT/SIGTERM, seconds the items in flight get to finish, scorers included, "
        "before what has settled is written (default: $AXL_EVAL_GRACE_SECONDS, else 30)",
    )
    add_cache_flags(parser)
    parser.add_argument("--quiet", action="store_true", help="no progress and no tables, only gate lines")
    return parser


def _report(view: RunView, label: str, batch_label: str | None = None) -> bool:
    """Print the stop/gate lines (stderr); True when the result fails the file."""
    from axl_action.evals import console

    result = view.header
    fails = False
    message = console.budget_stop_message(result, label)
    if message:
        print(message, file=sys.stderr)
        fails = True
    wipeout = console.wipeout_message(result, label)
    if wipeout:
        print(wipeout, file=sys.stderr)
        fails = True
    rate = console.item_error_rate_message(result, batch_label or label)
    if rate:
        if not wipeout:
            print(rate, file=sys.stderr)
        fails = True
    for line in console.degraded_messages(result, label):
        print(line, file=sys.stderr)
        fails = True
    for line in console.all_failed_warnings(view, label):
        print(line, file=sys.stderr)
    for line in console.fully_skipped_notes(view, label):
        print(line, file=sys.stderr)
    return fails


def run(argv: list[str]) -> int:
    """Entry point of ``axl-eval run``; returns the exit code."""
    args = build_parser().parse_intermixed_args(argv)
    if not args.paths:
        raise UsageError("No eval file path provided", hint="axl-eval <eval file or directory> [flags]")
    check_capture_flags(args)
    args.resume = args.resume or args.resume_failed
    check_force_flag(args)
    if args.resume and not args.output:
        raise UsageError("--resume needs --output", hint="the journal it continues is <output>.journal.jsonl")
    output_file(args.output)
    grace = grace_seconds(args.grace_period)

    from axl_action.evals.loader import expand_paths

    files = expand_paths(args.paths)
    if args.scorers and len(files) > 1:
        raise UsageError(f"--scorers requires a single eval file (matched {len(files)}).")

    runtime = make_runtime(args.pricing)
    runtime.cache = cache_from_flags(args, os.environ)
    interrupt = Interrupt(grace=grace)
    session = _journal(args, interrupt) if args.output else None
    results: list[dict[str, Any]] = []
    written = False
    interrupt.install()
    try:
        try:
            results, failed = _run_files(files, args, runtime, interrupt, session)
            interrupt.settle()
            stop_note = journal_stop_note(interrupt, results)
            if args.output and results:
                write_results(
                    Path(args.output), results, as_list=len(results) != 1, append_capture=args.resume
                )
                written = True
        except HardStop as stop:
            return _hard_stop(stop, args, session, interrupt)
        finally:
            if session is not None:
                session.finish(complete=written and interrupt.signum is None and not session.incomplete)
    finally:
        interrupt.restore()
        close_providers(runtime)
    if results and not args.output:
        print("[axl-eval] NOTE: results were not saved; pass --output FILE to keep them.", file=sys.stderr)
    interrupted = closing_notes(runtime, interrupt, written=len(results), what="completed")
    if interrupted is not None:
        return interrupted
    if stop_note is not None:
        print(stop_note, file=sys.stderr)
        return 1
    return 1 if failed or not results else 0


def _journal(args: argparse.Namespace, interrupt: Interrupt) -> JournalSession:
    from axl_action.evals.journal import JournalSession, flags_of

    flags = flags_of(
        shard=args.shard,
        runs=args.runs,
        scorers=args.scorers,
        budget=args.budget,
        pricing=args.pricing,
        max_item_error_rate=args.max_item_error_rate,
        repeats=args.repeats,
    )
    return JournalSession(
        Path(args.output),
        command="run",
        flags=flags,
        resume=args.resume,
        retry_failed=args.resume_failed,
        wait=args.wait,
        force=args.force,
        on_fail=interrupt.stop_admission,
    )


def _hard_stop(
    stop: HardStop, args: argparse.Namespace, session: JournalSession | None, interrupt: Interrupt
) -> int:
    """Write what has settled (from the journal), say what was abandoned in flight, and return
    the signal's exit code."""
    note = abandoned_note(interrupt, [])

    def write(results: list[dict[str, Any]]) -> None:
        abandoned_note(interrupt, results)
        write_results(Path(args.output), results, as_list=len(results) != 1)

    if note is not None:
        print(note, file=sys.stderr, flush=True)
    return write_on_hard_stop(stop, args.output, session, write, what="settled", before="settled")


def _run_files(
    files: Sequence[Path],
    args: argparse.Namespace,
    runtime: Any,
    interrupt: Interrupt,
    session: JournalSession | None,
) -> tuple[list[dict[str, Any]], bool]:
    from axl_action.evals.loader import load_eval_file

    cancel = interrupt.event
    results: list[dict[str, Any]] = []
    failed = False
    for path in files:
        if cancel.is_set():
            break
        try:
            evals = load_eval_file(path)
        except AxlError as err:
            print(f"Error: {err}", file=sys.stderr)
            failed = True
            continue
        for loaded in evals:
            if cancel.is_set():
                break
            produced, file_failed = _run_one(loaded, args, runtime, interrupt, session)
            results.extend(produced)
            failed = failed or file_failed
    return results, failed


def _run_one(
    loaded: Any,
    args: argparse.Namespace,
    runtime: Any,
    interrupt: Interrupt,
    session: JournalSession | None,
) -> tuple[list[dict[str, Any]], bool]:
    from axl_action.evals import console
    from axl_action.evals.journal import stamp_resumed
    from axl_action.evals.multirun import aggregate_runs
    from axl_action.evals.progress import Progress
    from axl_action.evals.runner import (
        RunRecord,
        apply_scorer_filter,
        execute_run,
        plan_run,
        stamp_scorer_filter,
    )
    from axl_action.schema.journal import RunGroup

    label: str = loaded.label
    definition = loaded.definition
    cancel = interrupt.event
    concurrency = args.concurrency or env_int("AXL_EVAL_CONCURRENCY") or definition.concurrency
    overrides: dict[str, Any] = {"concurrency": concurrency}
    if args.budget is not None:
        overrides["budget"] = args.budget
    if args.max_item_error_rate is not None:
        overrides["fail_on_item_error_rate"] = args.max_item_error_rate
    if args.repeats is not None:
        overrides["repeats"] = args.repeats
    definition = replace(definition, **overrides)
    definition = apply_scorer_filter(definition, args.scorers)
    group_id = (session.group_id(loaded.identity, label, args.runs) if session is not None else None) or str(
        uuid.uuid4()
    )

    def once(run_label: str, run_index: int) -> RunRecord:
        plan = plan_run(definition, shard=args.shard)
        started = None
        if session is not None:
            batch = args.runs > 1
            suffix = f" run {run_index + 1}/{args.runs}" if batch else ""
            started = session.start(
                loaded.identity + suffix,
                label,
                plan.facts,
                group=RunGroup(group_id=group_id, index=run_index, count=args.runs) if batch else None,
                sources=loaded.sources,
                old_key=label + suffix,
            )
            plan = replace(plan, facts=started.facts)
        resumed = started.resumed if started is not None else None
        result_id = plan.facts.result_id
        sink = (
            sidecar_sink(Path(args.output), result_id, redact_content=args.redact_content, resume=args.resume)
            if args.capture_requests
            else None
        )
        progress: Callable[[Any], None] | None = None if args.quiet else Progress(run_label, sys.stderr)
        cache = runtime.cache
        record = execute_run(
            definition,
            runtime.with_cache(cache.at_repeat(run_index)) if cache is not None else runtime,
            on_progress=progress,
            cancel_event=cancel,
            abort_event=interrupt.abort,
            capture=sink,
            plan=plan,
            on_settled=started.on_settled if started is not None else None,
            completed=resumed.completed if resumed is not None else None,
            prior_accounting=resumed.prior_accounting if resumed is not None else (),
            on_abandoned=functools.partial(interrupt.abandoned, result_id),
        )
        stamp_resumed(record.wire, resumed)
        if cache is not None:
            # Compare tells a cached run from a live one by this (docs/cache.md).
            record.wire["metadata"]["cache"] = {"mode": cache.mode}
        if args.scorers:
            stamp_scorer_filter(record.wire, definition)
        return record

    if args.runs == 1:
        try:
            record = once(label, 0)
        except Exception as err:
            print(f"Error running eval {label}: {_describe(err)}", file=sys.stderr)
            if session is not None:
                session.incomplete = True
            return [], True
        if not args.quiet:
            print("\n" + console.format_table(record.view) + "\n")
        return [record.wire], _report(record.view, label)

    completed: list[dict[str, Any]] = []
    views: list[RunView] = []
    failure: str | None = None
    for r in range(1, args.runs + 1):
        if cancel.is_set():
            break
        print(f"[axl-eval] Run {r}/{args.runs}...", file=sys.stderr)
        try:
            record = once(f"{label} run {r}/{args.runs}", r - 1)
        except Exception as err:
            failure = _describe(err)
            print(f"[axl-eval] Run {r}/{args.runs} failed: {failure}", file=sys.stderr)
            if session is not None:
                session.incomplete = True
            break
        record.wire["metadata"]["runGroupId"] = group_id
        record.wire["metadata"]["runIndex"] = r - 1
        completed.append(record.wire)
        views.append(record.view)
    if not completed:
        print(
            f"[axl-eval] Aborting {label}: no runs completed ({failure or 'unknown failure'}).",
            file=sys.stderr,
        )
        return [], True
    partial = len(completed) < args.runs
    if partial:
        for result in completed:
            meta = result["metadata"]
            meta["fromPartialBatch"] = True
            meta["batchCompleted"] = len(completed)
            meta["batchAttempted"] = args.runs
            if failure:
                meta["batchFailure"] = failure
        print(
            f"[axl-eval] PARTIAL: {len(completed)} of {args.runs} runs completed for {label}.",
            file=sys.stderr,
        )
    if not args.quiet:
        print("\n" + console.format_multi_run_table(aggregate_runs(completed)) + "\n")
    gate_failed = False
    for i, view in enumerate(views, start=1):
        gate_failed = _report(view, label, f"{label} run {i}/{args.runs}") or gate_failed
    return completed, partial or gate_failed


def _describe(err: Exception) -> str:
    """An AxlError prints as itself; anything else with its type, so a bug is recognisable."""
    return str(err) if isinstance(err, AxlError) else f"{type(err).__name__}: {err}"


def help_text() -> str:
    """The full help of this command (also shown by `axl-eval --help`)."""
    return build_parser().format_help()
