"""``axl-eval <paths...> [flags]``: run eval files, print the results, write the results file.

Exit codes: 0 all evals ran and passed their gates; 1 a file failed to load or run, a gate
fired (budget stop, total wipeout, item error rate, degraded scorer), a bad flag, a journal
that cannot be resumed, or no result; 130 / 143 the run was interrupted by SIGINT / SIGTERM
(the partial results file is still written, atomically, and the journal is kept for
``--resume``).

With ``--output FILE`` every settled item is also appended to ``FILE.journal.jsonl`` as it
settles (``evals/journal/writer.py``); ``--resume`` continues an interrupted run from it.
"""

from __future__ import annotations

import argparse
import functools
import os
import sys
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from axl_action import values
from axl_action.cli.commands import (
    add_cache_flags,
    add_capture_flags,
    check_journal_flags,
    closing_notes,
    journal_session,
    run_journaled,
    runtime_from_flags,
    write_on_hard_stop,
)
from axl_action.cli.common import (
    ArgParser,
    HardStop,
    Interrupt,
    abandoned_note,
    add_wait_flag,
    budget_arg,
    env_int,
    grace_seconds,
    positive_int,
    sidecar_sink,
    write_results,
)
from axl_action.errors import AxlError, UsageError

if TYPE_CHECKING:
    from axl_action.evals.journal.session import JournalSession, Resumed, StartedResult
    from axl_action.evals.runner import RunRecord
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


def _repeats(raw: str) -> int | str:
    from axl_action.evals.repeats import MAX_REPEATS

    try:
        return values.repeats(raw, high=MAX_REPEATS)
    except ValueError as err:
        raise argparse.ArgumentTypeError(
            f'{err} (got "{raw}"); 1 runs each item once, auto repeats only where a verdict is open'
        ) from None


def _max_repeats(raw: str) -> int:
    from axl_action.evals.repeats import MAX_REPEATS

    try:
        return values.whole_number(raw, low=1, high=MAX_REPEATS)
    except ValueError as err:
        raise argparse.ArgumentTypeError(f'{err} (got "{raw}")') from None


def _run_thresholds(raw: str) -> Any:
    from axl_action.cli.flags import thresholds

    value = thresholds(raw)
    if value == "auto":
        raise UsageError(
            "--threshold auto is not available to run: it is measured from a baseline history",
            hint="pass the thresholds themselves, e.g. --threshold 0.05 or --threshold accuracy=0.02",
        )
    return value


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
        "repeat (overrides the eval's repeats; docs/run-model.md); auto: run each item once, then "
        "repeat only the items that can still change a scorer's verdict against --baseline, up to "
        "--max-repeats (docs/gates.md, Sequential repeats)",
    )
    parser.add_argument(
        "--max-repeats",
        type=_max_repeats,
        metavar="N",
        help="the cap of --repeats auto (default 5): at most N repeats per item, and N looks",
    )
    parser.add_argument(
        "--baseline",
        metavar="FILE",
        help="with --repeats auto: the baseline results the verdicts are decided against (its runs "
        "of the same dataset; without it every item runs --max-repeats times)",
    )
    parser.add_argument(
        "--threshold",
        type=_run_thresholds,
        metavar="V",
        help="with --repeats auto: the thresholds the verdicts use, as compare --threshold (default: "
        "the baseline's defaults)",
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
        "--sources-root",
        metavar="DIR",
        default=None,
        help="root the recorded source files are relative to (default: the current directory)",
    )
    parser.add_argument(
        "--no-record-sources",
        dest="record_sources",
        action="store_false",
        help="do not record the local files each eval used (metadata.sources)",
    )
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
    parser.add_argument(
        "--no-stream-usage",
        dest="stream_usage",
        action="store_false",
        help="leave your app's OpenAI streaming requests as written: without "
        "stream_options.include_usage such a call settles usage_missing (docs/app-as-is.md)",
    )
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
    args.resume = args.resume or args.resume_failed
    check_journal_flags(args)
    args.baseline_runs = _sequential_baseline(args)
    grace = grace_seconds(args.grace_period)

    from axl_action.evals.loader import expand_paths

    files = expand_paths(args.paths)
    if args.scorers and len(files) > 1:
        raise UsageError(f"--scorers requires a single eval file (matched {len(files)}).")

    runtime = runtime_from_flags(args, os.environ)
    runtime.stream_usage = args.stream_usage
    interrupt = Interrupt(grace=grace)
    args.recorder = _source_recorder(args, runtime)
    session = _journal(args, interrupt) if args.output else None
    failed = False

    def run_items() -> list[dict[str, Any]]:
        nonlocal failed
        results, failed = _run_files(files, args, runtime, interrupt, session)
        return results

    ended = run_journaled(
        args,
        runtime,
        interrupt,
        session,
        run_items,
        hard_stop=functools.partial(_hard_stop, args=args, session=session, interrupt=interrupt),
    )
    if isinstance(ended, int):
        return ended
    if ended.results and not args.output:
        print("[axl-eval] NOTE: results were not saved; pass --output FILE to keep them.", file=sys.stderr)
    interrupted = closing_notes(runtime, interrupt, written=len(ended.results), what="completed")
    if interrupted is not None:
        return interrupted
    if ended.stop_note is not None:
        print(ended.stop_note, file=sys.stderr)
        return 1
    return 1 if failed or not ended.results else 0


def _journal(args: argparse.Namespace, interrupt: Interrupt) -> JournalSession:
    from axl_action.evals.journal.base import flags_of

    flags = flags_of(
        shard=args.shard,
        runs=args.runs,
        scorers=args.scorers,
        budget=args.budget,
        pricing=args.pricing,
        max_item_error_rate=args.max_item_error_rate,
        repeats=args.repeats,
        max_repeats=args.max_repeats,
        baseline=args.baseline,
    )
    return journal_session(args, interrupt, command="run", flags=flags, retry_failed=args.resume_failed)


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
        if args.recorder is not None:
            args.recorder.start()  # what the file opens while loaded counts for each of its evals
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


@dataclass(frozen=True, slots=True)
class _EvalRun:
    """One loaded eval as this command runs it: its definition with the flags applied, and the run's hooks."""

    loaded: Any
    definition: Any
    args: argparse.Namespace
    runtime: Any
    interrupt: Interrupt
    session: JournalSession | None
    group_id: str
    sequential: Any

    @property
    def label(self) -> str:
        """The eval's label (as the console and the journal name it)."""
        label: str = self.loaded.label
        return label

    @classmethod
    def of(
        cls,
        loaded: Any,
        args: argparse.Namespace,
        runtime: Any,
        interrupt: Interrupt,
        session: JournalSession | None,
    ) -> _EvalRun:
        """The run of ``loaded``: its definition with the flags applied, its run group's id (the
        journal's, on a resume) and its ``--repeats auto`` plan, worked out in that order."""
        definition = _definition(loaded, args)
        group_id = (
            session.group_id(loaded.identity, loaded.label, args.runs) if session is not None else None
        ) or str(uuid.uuid4())
        sequential = _sequential_plan(args, definition.dataset.name, loaded.label)
        # In field order: the values above, between the ones the caller handed in.
        return cls(loaded, definition, args, runtime, interrupt, session, group_id, sequential)


def _run_one(
    loaded: Any,
    args: argparse.Namespace,
    runtime: Any,
    interrupt: Interrupt,
    session: JournalSession | None,
) -> tuple[list[dict[str, Any]], bool]:
    """Run one loaded eval ``--runs`` times: its results, and whether it fails the file."""
    ctx = _EvalRun.of(loaded, args, runtime, interrupt, session)
    return _run_single(ctx) if args.runs == 1 else _run_batch(ctx)


def _definition(loaded: Any, args: argparse.Namespace) -> Any:
    """The eval's definition with the command's concurrency, budget, error rate, repeats and scorers."""
    from axl_action.evals.runner import apply_scorer_filter

    definition = loaded.definition
    concurrency = args.concurrency or env_int("AXL_EVAL_CONCURRENCY") or definition.concurrency
    overrides: dict[str, Any] = {"concurrency": concurrency}
    if args.budget is not None:
        overrides["budget"] = args.budget
    if args.max_item_error_rate is not None:
        overrides["fail_on_item_error_rate"] = args.max_item_error_rate
    if isinstance(args.repeats, int):
        overrides["repeats"] = args.repeats
    return apply_scorer_filter(replace(definition, **overrides), args.scorers)


def _run_once(ctx: _EvalRun, run_label: str, run_index: int) -> RunRecord:
    """Run the eval once (run ``run_index`` of ``--runs``), journaled when there is a session, and stamp it."""
    from axl_action.evals.runner import plan_run

    plan = replace(plan_run(ctx.definition, shard=ctx.args.shard), sequential=ctx.sequential)
    started = _start_journaled(ctx, plan, run_index)
    if started is not None:
        plan = replace(plan, facts=started.facts)
    resumed = started.resumed if started is not None else None
    record = _execute(ctx, plan, started, run_label, run_index)
    _stamp(ctx, record, resumed, run_label)
    return record


def _start_journaled(ctx: _EvalRun, plan: Any, run_index: int) -> StartedResult | None:
    """Open this run's result in the journal (None without a session)."""
    from axl_action.schema.journal import RunGroup

    if ctx.session is None:
        return None
    args = ctx.args
    batch = args.runs > 1
    suffix = f" run {run_index + 1}/{args.runs}" if batch else ""
    return ctx.session.start(
        ctx.loaded.identity + suffix,
        ctx.label,
        plan.facts,
        group=RunGroup(group_id=ctx.group_id, index=run_index, count=args.runs) if batch else None,
        sources=ctx.loaded.sources,
        old_key=ctx.label + suffix,
    )


def _execute(
    ctx: _EvalRun, plan: Any, started: StartedResult | None, run_label: str, run_index: int
) -> RunRecord:
    """Execute the planned run with its capture sidecar, progress line, cache repeat and continuation."""
    from axl_action.evals.continuation import Continuation
    from axl_action.evals.progress import Progress
    from axl_action.evals.runner import execute_run

    args, runtime, interrupt = ctx.args, ctx.runtime, ctx.interrupt
    result_id = plan.facts.result_id
    sink = (
        sidecar_sink(Path(args.output), result_id, redact_content=args.redact_content, resume=args.resume)
        if args.capture_requests
        else None
    )
    progress: Callable[[Any], None] | None = None if args.quiet else Progress(run_label, sys.stderr)
    cache = runtime.cache
    on_abandoned = functools.partial(interrupt.abandoned, result_id)
    return execute_run(
        ctx.definition,
        runtime.with_cache(cache.at_repeat(run_index)) if cache is not None else runtime,
        on_progress=progress,
        cancel_event=interrupt.event,
        abort_event=interrupt.abort,
        capture=sink,
        plan=plan,
        continuation=started.continuation(on_abandoned)
        if started is not None
        else Continuation(on_abandoned=on_abandoned),
    )


def _stamp(ctx: _EvalRun, record: RunRecord, resumed: Resumed | None, run_label: str) -> None:
    """Stamp the record's sources, resume, cache and scorer filter; say what ``--repeats auto`` did."""
    from axl_action.evals.journal.session import stamp_resumed
    from axl_action.evals.runner import stamp_scorer_filter

    args = ctx.args
    if args.recorder is not None:
        record.wire["metadata"]["sources"] = _sources_record(args.recorder, ctx.loaded, ctx.definition, args)
    stamp_resumed(record.wire, resumed)
    if record.view.header.sequential is not None:
        from axl_action.compare.gates import describe_sequential

        said = describe_sequential(record.view.header.sequential)
        print(f"[axl-eval] {run_label}: repeats auto: {said}.", file=sys.stderr)
    cache = ctx.runtime.cache
    if cache is not None:
        # Compare tells a cached run from a live one by this (docs/cache.md).
        record.wire["metadata"]["cache"] = {"mode": cache.mode}
    if args.scorers:
        stamp_scorer_filter(record.wire, ctx.definition)


def _run_single(ctx: _EvalRun) -> tuple[list[dict[str, Any]], bool]:
    """``--runs 1``: run the eval, print its table, and report its gates."""
    from axl_action.evals import console

    label = ctx.label
    try:
        record = _run_once(ctx, label, 0)
    except Exception as err:
        print(f"Error running eval {label}: {_describe(err)}", file=sys.stderr)
        if ctx.session is not None:
            ctx.session.incomplete = True
        return [], True
    if not ctx.args.quiet:
        print("\n" + console.format_table(record.view) + "\n")
    return [record.wire], _report(record.view, label)


def _run_batch(ctx: _EvalRun) -> tuple[list[dict[str, Any]], bool]:
    """``--runs N``: run the batch, mark it partial if short, print its table, report each run's gates."""
    from axl_action.evals import console
    from axl_action.evals.multirun import aggregate_runs

    label, runs = ctx.label, ctx.args.runs
    completed, views, failure = _batch_runs(ctx)
    if not completed:
        print(
            f"[axl-eval] Aborting {label}: no runs completed ({failure or 'unknown failure'}).",
            file=sys.stderr,
        )
        return [], True
    partial = len(completed) < runs
    if partial:
        _mark_partial(completed, runs, failure, label)
    if not ctx.args.quiet:
        print("\n" + console.format_multi_run_table(aggregate_runs(completed)) + "\n")
    gate_failed = False
    for i, view in enumerate(views, start=1):
        gate_failed = _report(view, label, f"{label} run {i}/{runs}") or gate_failed
    return completed, partial or gate_failed


def _batch_runs(ctx: _EvalRun) -> tuple[list[dict[str, Any]], list[RunView], str | None]:
    """Run the batch's runs in turn until one fails or the run is cancelled: wires, views, the failure."""
    label, runs = ctx.label, ctx.args.runs
    completed: list[dict[str, Any]] = []
    views: list[RunView] = []
    failure: str | None = None
    for r in range(1, runs + 1):
        if ctx.interrupt.event.is_set():
            break
        print(f"[axl-eval] Run {r}/{runs}...", file=sys.stderr)
        try:
            record = _run_once(ctx, f"{label} run {r}/{runs}", r - 1)
        except Exception as err:
            failure = _describe(err)
            print(f"[axl-eval] Run {r}/{runs} failed: {failure}", file=sys.stderr)
            if ctx.session is not None:
                ctx.session.incomplete = True
            break
        record.wire["metadata"]["runGroupId"] = ctx.group_id
        record.wire["metadata"]["runIndex"] = r - 1
        completed.append(record.wire)
        views.append(record.view)
    return completed, views, failure


def _mark_partial(completed: list[dict[str, Any]], runs: int, failure: str | None, label: str) -> None:
    """Stamp each completed result as from a partial batch, and say so."""
    for result in completed:
        meta = result["metadata"]
        meta["fromPartialBatch"] = True
        meta["batchCompleted"] = len(completed)
        meta["batchAttempted"] = runs
        if failure:
            meta["batchFailure"] = failure
    print(
        f"[axl-eval] PARTIAL: {len(completed)} of {runs} runs completed for {label}.",
        file=sys.stderr,
    )


def _sequential_baseline(args: argparse.Namespace) -> list[RunView]:
    """The ``--baseline`` runs of ``--repeats auto`` (read once, as compare reads them)."""
    auto = args.repeats == "auto"
    for flag, value in (("--max-repeats", args.max_repeats), ("--baseline", args.baseline)):
        if value is not None and not auto:
            raise UsageError(
                f"{flag} needs --repeats auto", hint="e.g. --repeats auto --baseline baseline.json"
            )
    if args.threshold is not None and not auto:
        raise UsageError(
            "--threshold needs --repeats auto", hint="compare takes --threshold for a comparison"
        )
    if not auto or args.baseline is None:
        return []
    from axl_action.schema import load_run_views

    return list(load_run_views(args.baseline).runs)


def _sequential_plan(args: argparse.Namespace, dataset: str, label: str) -> Any:
    """``repeats: auto``'s plan for the eval of ``dataset``: the baseline's runs of that dataset."""
    if args.repeats != "auto":
        return None
    from axl_action.evals.sequential import DEFAULT_MAX_REPEATS, SequentialPlan

    runs = [run for run in args.baseline_runs if run.header.dataset == dataset]
    cap = args.max_repeats or DEFAULT_MAX_REPEATS
    if not runs:
        why = (
            "no --baseline was given"
            if args.baseline is None
            else f"{args.baseline} has no run of dataset {dataset!r}"
        )
        print(
            f"[axl-eval] NOTE: {label}: --repeats auto has no baseline to decide against ({why}), "
            f"so every item runs {cap} times.",
            file=sys.stderr,
        )
    return SequentialPlan(baseline=runs, max_repeats=cap, thresholds=args.threshold)


def _source_recorder(args: argparse.Namespace, runtime: Any) -> Any:
    """The recorder of ``metadata.sources``, its ``open`` audit hook installed for this command.
    The response cache's folder is the tool's, not the eval's: its entries are not recorded."""
    if not args.record_sources:
        return None
    from axl_action.evals.sources import SourceRecorder

    ignore = [runtime.cache.store.root] if runtime.cache is not None else []
    recorder = SourceRecorder(Path(args.sources_root or Path.cwd()), ignore=ignore)
    # Interpreter-wide, and for good: this command alone installs it; it is idle unless active.
    sys.addaudithook(recorder.on_audit)
    return recorder


def _sources_record(recorder: Any, loaded: Any, definition: Any, args: argparse.Namespace) -> dict[str, Any]:
    from axl_action.evals.journal.base import tool_version

    folder = loaded.path.parent
    sources = recorder.record(
        eval_file=loaded.path,
        loaded_modules=[folder / rel for rel in (loaded.sources or {})],
        dataset_file=definition.dataset.file_path,
        env_names=definition.env,
        environ=os.environ,
        pricing_file=Path(args.pricing) if args.pricing else None,
        tool_version=tool_version(),
    )
    wire: dict[str, Any] = sources.to_wire()
    return wire


def _describe(err: Exception) -> str:
    """An AxlError prints as itself; anything else with its type, so a bug is recognisable."""
    return str(err) if isinstance(err, AxlError) else f"{type(err).__name__}: {err}"


def help_text() -> str:
    """The full help of this command (also shown by `axl-eval --help`)."""
    return build_parser().format_help()
