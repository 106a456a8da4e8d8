"""Rules more than one ``axl-eval`` command follows: the help flag, comparing and gating by the
gate flags, the request-capture flags, signal handling, and the closing notes of a command
that called models.

``compare``, ``report``, ``history`` and ``merge`` answer ``-h``/``--help`` as their first
argument the same way; ``compare`` and ``report`` compare and gate the same way; ``run`` and
``rescore`` share the capture and journal flags, their runtime, their journal session and how
they end.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TextIO

from axl_action.cli.common import (
    HardStop,
    Interrupt,
    check_force_flag,
    close_providers,
    journal_stop_note,
    make_runtime,
    output_file,
    pricing_notes,
    write_results,
)
from axl_action.errors import AxlError, UsageError

if TYPE_CHECKING:
    from axl_action.cli.flags import GateFlags
    from axl_action.compare.models import Comparison, GateReport
    from axl_action.evals.journal.session import JournalSession
    from axl_action.history import AutoThresholds
    from axl_action.schema.journal import JournalFlags
    from axl_action.schema.view import Side


def help_requested(argv: Sequence[str], help_text: str, out: TextIO) -> bool:
    """True, after printing ``help_text``, when the first argument asks for help."""
    if argv and argv[0] in ("-h", "--help"):
        print(help_text, file=out)
        return True
    return False


def compare_and_gate(
    gates: GateFlags,
    baseline: Side,
    candidate: Side,
    auto: AutoThresholds | None,
    *,
    holm: bool = False,
) -> tuple[Comparison, GateReport]:
    """Compare with the engine options the gate flags ask for (``auto``: the thresholds
    ``--threshold auto`` measured) and apply the gates they configure."""
    from axl_action.compare.engine import compare_results
    from axl_action.compare.gates import evaluate_gates

    measured = auto.values if auto is not None else None
    comparison = compare_results(baseline, candidate, gates.compare_options(holm=holm, measured=measured))
    return comparison, evaluate_gates(comparison, baseline, candidate, gates.gate_options())


def add_capture_flags(parser: argparse.ArgumentParser, *, calls: str) -> None:
    """``--capture-requests`` and ``--redact-content``; ``calls`` names what is captured."""
    parser.add_argument(
        "--capture-requests",
        action="store_true",
        help=f"write every {calls} request/response (secrets redacted) to <output>.requests.jsonl",
    )
    parser.add_argument(
        "--redact-content",
        action="store_true",
        help="with --capture-requests: also replace prompt and completion text in the captured records",
    )


def add_cache_flags(parser: argparse.ArgumentParser) -> None:
    """``--cache MODE`` and ``--cache-dir DIR`` (docs/cache.md), the same on every command
    that makes model calls."""
    parser.add_argument(
        "--cache",
        metavar="MODE",
        default="off",
        help="response cache: off (default), read, write, on (read and write) or replay (never a live "
        "call; a miss fails the item) (docs/cache.md)",
    )
    parser.add_argument(
        "--cache-dir",
        metavar="DIR",
        help="where --cache keeps replies (default: $AXL_EVAL_CACHE_DIR, else .axl-cache)",
    )


def cache_from_flags(args: argparse.Namespace, env: Mapping[str, str]) -> Any:
    """The command's response cache (``None`` for ``--cache off``); a bad mode or an unusable
    directory is one error before anything runs."""
    from axl_action.cache import open_cache, parse_cache_mode

    mode = parse_cache_mode(args.cache)
    if mode == "off" and args.cache_dir:
        raise UsageError("--cache-dir needs --cache", hint="e.g. --cache on --cache-dir DIR (docs/cache.md)")
    return open_cache(mode, args.cache_dir or env.get("AXL_EVAL_CACHE_DIR") or None)


def check_capture_flags(args: argparse.Namespace) -> None:
    """The capture flags need what they apply to: an output file, and capturing at all."""
    if args.capture_requests and not args.output:
        raise UsageError("--capture-requests needs --output", hint="the requests go next to the results file")
    if args.redact_content and not args.capture_requests:
        raise UsageError("--redact-content needs --capture-requests", hint="it applies to captured requests")


def check_journal_flags(args: argparse.Namespace) -> None:
    """The flags of a command that writes a run journal need what they apply to (the capture
    flags, ``--force`` a resume, ``--resume`` an output file), and ``--output`` must be a file
    that can be written."""
    check_capture_flags(args)
    check_force_flag(args)
    if args.resume and not args.output:
        raise UsageError("--resume needs --output", hint="the journal it continues is <output>.journal.jsonl")
    output_file(args.output)


def runtime_from_flags(args: argparse.Namespace, env: Mapping[str, str]) -> Any:
    """The runtime of a command that calls models: its price table (``--pricing``) and its
    response cache (``--cache``, ``--cache-dir``)."""
    runtime = make_runtime(args.pricing)
    runtime.cache = cache_from_flags(args, env)
    return runtime


def journal_session(
    args: argparse.Namespace,
    interrupt: Interrupt,
    *,
    command: Literal["run", "rescore"],
    flags: JournalFlags,
    retry_failed: bool = False,
) -> JournalSession:
    """The journal ``<output>.journal.jsonl`` of a command run with ``--output``, as its
    ``--resume``, ``--wait`` and ``--force`` ask; a journal that fails stops admission."""
    from axl_action.evals.journal.session import JournalSession

    return JournalSession(
        Path(args.output),
        command=command,
        flags=flags,
        resume=args.resume,
        retry_failed=retry_failed,
        wait=args.wait,
        force=args.force,
        on_fail=interrupt.stop_admission,
    )


@dataclass
class Outcome:
    """What a journaled command reports to :func:`journaled` before it ends."""

    written: bool = False
    """The results file was written: the journal is complete unless a signal or an item cut it short."""


@contextmanager
def journaled(runtime: Any, interrupt: Interrupt, session: JournalSession | None) -> Iterator[Outcome]:
    """The body of a command that calls models: signals handled by ``interrupt`` while it
    runs; on the way out the journal is finished (complete when the body set
    ``Outcome.written`` and nothing cut it short), the handlers restored and the providers'
    connections closed."""
    outcome = Outcome()
    interrupt.install()
    try:
        try:
            yield outcome
        finally:
            if session is not None:
                session.finish(
                    complete=outcome.written and interrupt.signum is None and not session.incomplete
                )
    finally:
        interrupt.restore()
        close_providers(runtime)


@dataclass
class Settled:
    """What the items of a journaled command came to when no hard stop cut them short."""

    results: list[dict[str, Any]]
    """The results, written to ``--output`` when it was given and any was produced."""
    stop_note: str | None
    """The line saying the journal stopped admission (:func:`journal_stop_note`), if it did."""


def run_journaled(
    args: argparse.Namespace,
    runtime: Any,
    interrupt: Interrupt,
    session: JournalSession | None,
    run_items: Callable[[], list[dict[str, Any]]],
    *,
    hard_stop: Callable[[HardStop], int],
    as_list: bool | None = None,
    noun: str = "results",
    show: Callable[[list[dict[str, Any]]], None] | None = None,
) -> Settled | int:
    """The frame ``run`` and ``rescore`` put around their items, in one place so that both end
    the same way: ``run_items`` runs them under :func:`journaled`; once they settle, the journal
    stop is stamped in them, ``show`` prints what the command shows of them, and they are written
    to ``--output`` (``as_list``: an array, ``None``: one when there is more than one result;
    ``noun``: what the saved line calls them), which completes the journal. A hard stop returns
    ``hard_stop``'s exit code; otherwise the settled results, for the closing notes."""
    with journaled(runtime, interrupt, session) as outcome:
        try:
            results = run_items()
            interrupt.settle()
            stop_note = journal_stop_note(interrupt, results)
            if show is not None:
                show(results)
            if args.output and results:
                write_results(
                    Path(args.output),
                    results,
                    as_list=len(results) != 1 if as_list is None else as_list,
                    what=noun,
                    append_capture=args.resume,
                )
                outcome.written = True
        except HardStop as stop:
            return hard_stop(stop)
    return Settled(results, stop_note)


def closing_notes(runtime: Any, interrupt: Interrupt, *, written: int, what: str) -> int | None:
    """Print the pricing notes, then, after a signal, what was still written; the exit code
    of an interrupted command, else None."""
    for line in pricing_notes(runtime.pricing):
        print(line, file=sys.stderr)
    if interrupt.signum is None:
        return None
    print(f"[axl-eval] Interrupted: wrote the results {what} so far ({written} result(s)).", file=sys.stderr)
    return interrupt.exit_code


def write_on_hard_stop(
    stop: HardStop,
    output: str | None,
    session: JournalSession | None,
    write: Callable[[list[dict[str, Any]]], None],
    *,
    what: str,
    before: str,
) -> int:
    """After a second signal: write what the journal holds through ``write`` (``what``: how
    the items are called, ``settled`` or ``rescored``; ``before``: the line's end when none
    was), say where it went, and return the signal's exit code."""
    if session is None or output is None:
        print("[axl-eval] Stopped: no --output, so nothing was written.", file=sys.stderr)
        return stop.exit_code
    try:
        written = session.write_settled(write)
    except AxlError as err:
        print(f"[axl-eval] Stopped, and could not write the {what} items: {err}", file=sys.stderr)
        return stop.exit_code
    if written:
        print(
            f"[axl-eval] Stopped: wrote the {written} item(s) {what} so far to {output} (metadata.recovered); "
            f"{session.path} keeps them for --resume.",
            file=sys.stderr,
        )
    else:
        print(f"[axl-eval] Stopped before any item {before}; {output} was left as it was.", file=sys.stderr)
    return stop.exit_code
