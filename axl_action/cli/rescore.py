"""``axl-eval rescore <results.json> <eval-file> [flags]``: re-score saved outputs with new scorers.

The workflow is not run again: every completed item of the results file is scored by the eval
file's scorers, items that errored in the source run are carried over unscored. The output
mirrors the input's shape (an array in, an array out).

Exit codes: 0 rescored; 1 a bad flag or file, an invalid budget (nothing written), a journal
that cannot be resumed, or a rescore stopped by its budget (after writing); 130 / 143
interrupted by SIGINT / SIGTERM (the results rescored so far are still written, and the
journal is kept for ``--resume``).

With ``--output FILE`` every rescored item is also appended to ``FILE.journal.jsonl`` as it
settles (``evals/journal/writer.py``), as ``axl-eval run`` does.
"""

from __future__ import annotations

import argparse
import functools
import os
import sys
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

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
    add_wait_flag,
    budget_arg,
    env_int,
    grace_seconds,
    positive_int,
    sidecar_sink,
    write_results,
)
from axl_action.errors import EvalDefinitionError, UsageError

if TYPE_CHECKING:
    from axl_action.evals.journal.session import JournalSession
    from axl_action.schema import RunView

SUMMARY = "Re-run scorers on the saved outputs of a results file"
USAGE_HINT = "axl-eval rescore <results.json> <eval-file> [--output FILE] [--budget $X]"


def build_parser() -> argparse.ArgumentParser:
    """The rescore command's flags."""
    parser = ArgParser(
        prog="axl-eval rescore",
        description=(
            "Score the saved outputs of a results file again with the scorers of an eval file, "
            "without re-running the workflow."
        ),
        usage="%(prog)s <results.json> <eval-file> [flags]",
        allow_abbrev=False,
    )
    parser.add_argument(
        "paths", nargs="*", metavar="PATH", help="the results file, then the eval file whose scorers to use"
    )
    parser.add_argument("--output", metavar="FILE", help="write the rescored results JSON here (atomically)")
    parser.add_argument(
        "--budget",
        type=budget_arg,
        metavar="$X",
        help='stop admitting NEW judging spend at this USD amount, e.g. "$1" (the source run\'s '
        "spend is not counted)",
    )
    parser.add_argument(
        "--concurrency",
        type=positive_int,
        metavar="N",
        help="items rescored at once (default: $AXL_EVAL_CONCURRENCY, else 5)",
    )
    add_capture_flags(parser, calls="judge")
    add_cache_flags(parser)
    parser.add_argument("--pricing", metavar="FILE", help="price table overrides (JSON)")
    parser.add_argument(
        "--resume",
        action="store_true",
        help="continue the interrupted rescore recorded in <output>.journal.jsonl: items it rescored are "
        "neither scored nor paid for again",
    )
    add_wait_flag(parser)
    parser.add_argument(
        "--grace-period",
        metavar="S",
        help="after the first SIGINT/SIGTERM, seconds the items in flight get to finish "
        "(default: $AXL_EVAL_GRACE_SECONDS, else 30)",
    )
    # Recognized so that they are refused with a reason instead of "unknown flag".
    parser.add_argument("--scorers", metavar="a,b", help=argparse.SUPPRESS)
    parser.add_argument("--max-item-error-rate", metavar="R", help=argparse.SUPPRESS)
    return parser


def _check(args: argparse.Namespace) -> tuple[Path, Path]:
    if args.scorers is not None:
        raise UsageError(
            "--scorers is not supported with rescore",
            hint="put the subset of scorers you want in the eval file instead",
        )
    if args.max_item_error_rate is not None:
        raise UsageError(
            "--max-item-error-rate is not supported with rescore; item failures belong to the "
            "source run — gate them with `axl-eval compare`"
        )
    if len(args.paths) != 2:
        got = f"got {len(args.paths)} path(s)" + (f": {' '.join(args.paths)}" if args.paths else "")
        raise UsageError(f"rescore needs a results file and an eval file, {got}", hint=USAGE_HINT)
    check_journal_flags(args)
    return Path(args.paths[0]), Path(args.paths[1])


def _scorers(eval_path: Path) -> tuple[list[Any], dict[str, str] | None]:
    """The eval file's scorers, and its source hashes (the journal's identity check)."""
    from axl_action.evals.loader import load_eval_file

    loaded = load_eval_file(eval_path, require_workflow=False)
    if len(loaded) != 1:
        labels = ", ".join(e.label for e in loaded)
        raise EvalDefinitionError(
            f"{eval_path} defines {len(loaded)} evals ({labels}); rescore needs exactly one",
            hint="put the scorers for the rescore in a file with a single eval",
        )
    return list(loaded[0].definition.scorers), loaded[0].sources


def run(argv: list[str]) -> int:
    """Entry point of ``axl-eval rescore``; returns the exit code."""
    from axl_action.evals import console
    from axl_action.schema import load_result_file, wire_view

    args = build_parser().parse_intermixed_args(argv)
    results_path, eval_path = _check(args)
    grace = grace_seconds(args.grace_period)
    source = load_result_file(results_path)
    scorers, sources = _scorers(eval_path)
    concurrency = args.concurrency or env_int("AXL_EVAL_CONCURRENCY") or 5
    runtime = runtime_from_flags(args, os.environ)
    interrupt = Interrupt(grace=grace)
    session = _journal(args, interrupt) if args.output else None
    views: list[RunView] = []

    def show(rescored: list[dict[str, Any]]) -> None:
        views.extend([wire_view(result) for result in rescored])
        for view in views:
            print("\n" + console.format_table(view) + "\n")

    ended = run_journaled(
        args,
        runtime,
        interrupt,
        session,
        functools.partial(
            _rescore_all, source, (scorers, sources), runtime, args, concurrency, interrupt, session
        ),
        hard_stop=functools.partial(_hard_stop, args=args, session=session, as_list=source.is_list),
        as_list=source.is_list,
        noun="rescored results",
        show=show,
    )
    if isinstance(ended, int):
        return ended
    interrupted = closing_notes(runtime, interrupt, written=len(ended.results), what="rescored")
    if interrupted is not None:
        return interrupted
    code = 0
    if ended.stop_note is not None:
        print(ended.stop_note, file=sys.stderr)
        code = 1
    for view in views:
        message = console.budget_stop_message(view.header, f"rescore {results_path}")
        if message:
            print(message, file=sys.stderr)
            code = 1
    return code


def _journal(args: argparse.Namespace, interrupt: Interrupt) -> JournalSession:
    from axl_action.evals.journal.base import flags_of

    flags = flags_of(budget=args.budget, pricing=args.pricing)
    return journal_session(args, interrupt, command="rescore", flags=flags)


def _hard_stop(
    stop: HardStop, args: argparse.Namespace, session: JournalSession | None, *, as_list: bool
) -> int:
    """Write what has been rescored (from the journal) and return the signal's exit code."""

    def write(results: list[dict[str, Any]]) -> None:
        write_results(
            Path(args.output), results, as_list=as_list or len(results) != 1, what="rescored results"
        )

    return write_on_hard_stop(stop, args.output, session, write, what="rescored", before="was rescored")


def _rescore_all(
    source_file: Any,
    eval_code: tuple[list[Any], dict[str, str] | None],
    runtime: Any,
    args: argparse.Namespace,
    concurrency: int,
    interrupt: Interrupt,
    session: JournalSession | None,
) -> list[dict[str, Any]]:
    from axl_action.evals.journal.session import stamp_resumed
    from axl_action.evals.rescore import RescoreOptions, execute_rescore, rescore_facts

    scorers, sources = eval_code
    out: list[dict[str, Any]] = []
    for number, source in enumerate(source_file.results):
        if interrupt.event.is_set():
            break
        wire = source.to_wire()
        result_id = str(uuid.uuid4())
        started = None
        if session is not None:
            where = f" [{number}]" if source_file.is_list else ""
            label = f"rescore {source_file.path}{where}"
            started = session.start(
                # The rescored file by its resolved path: the same file named another way resumes.
                f"rescore {Path(source_file.path).resolve()}{where}",
                label,
                rescore_facts(wire, scorers, result_id=result_id, budget=args.budget),
                source_id=str(wire.get("id")),
                rescore_head=functools.partial(_head_of, wire, scorers),
                sources=sources,
                old_key=label,
            )
            result_id = started.facts.result_id
        resumed = started.resumed if started is not None else None
        sink = None
        records = None
        if args.capture_requests:
            sink = sidecar_sink(
                Path(args.output), result_id, redact_content=args.redact_content, resume=args.resume
            )
            records = source_records(Path(source_file.path), source, only_referenced=source_file.is_list)
        try:
            cache = runtime.cache
            result = execute_rescore(
                wire,
                scorers,
                # Keyed by the source run's repeat, so the judges of each run have their own entries.
                runtime.with_cache(cache.at_repeat(number)) if cache is not None else runtime,
                RescoreOptions(
                    concurrency=concurrency,
                    cancel_event=interrupt.event,
                    abort_event=interrupt.abort,
                    budget=args.budget,
                    capture=sink,
                    source_records=records,
                    result_id=result_id,
                    continuation=started.continuation() if started is not None else None,
                ),
            )
        except Exception:
            if session is not None:
                session.incomplete = True
            raise
        stamp_resumed(result, resumed)
        if cache is not None:
            result["metadata"]["cache"] = {"mode": cache.mode}
        out.append(result)
    return out


def _head_of(wire: dict[str, Any], scorers: list[Any], _result_id: str) -> dict[str, Any]:
    from axl_action.evals.rescore import rescore_head

    return rescore_head(wire, scorers, len(wire.get("items") or []))


def source_records(results_path: Path, source: Any, *, only_referenced: bool) -> list[dict[str, Any]] | None:
    """The source run's captured requests from its sidecar next to the results file.

    ``None`` when the source captured nothing or its sidecar is gone. A sidecar written for
    several results holds all their records: ``only_referenced`` keeps those this result's
    items point at. Unparseable lines are skipped, as in the reference's sidecar reader.
    """
    import json

    from axl_action.providers.capture import sidecar_path

    if source.diagnostics is None or not source.diagnostics.artifact_id:
        return None
    try:
        text = sidecar_path(results_path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    records: list[dict[str, Any]] = []
    for line in text.splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict) and isinstance(record.get("operationId"), str):
            records.append(record)
    if only_referenced:
        wanted = _referenced_operations(source)
        records = [r for r in records if r["operationId"] in wanted]
    return records


def _referenced_operations(source: Any) -> set[str]:
    wanted: set[str] = set()
    for item in source.items:
        refs = [item.diagnostics] + [d.diagnostics for d in (item.score_details or {}).values()]
        for diagnostics in refs:
            if diagnostics is not None:
                wanted.update(op.operation_id for op in diagnostics.operations)
    return wanted


def help_text() -> str:
    """The full help of this command (also shown by `axl-eval --help`)."""
    return build_parser().format_help()
