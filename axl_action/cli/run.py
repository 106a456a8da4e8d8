"""``axl-eval <paths...> [flags]``: run eval files, print the results, write the results file.

Exit codes: 0 all evals ran and passed their gates; 1 a file failed to load or run, a gate
fired (budget stop, total wipeout, item error rate, degraded scorer), a bad flag, or no
result; 130 / 143 the run was interrupted by SIGINT / SIGTERM (the partial results file is
still written, atomically).
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import sys
import threading
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import FrameType
from typing import Any, NoReturn

from axl_action.errors import AxlError, UsageError

SUMMARY = "Run eval files and write results (the default command)"


class _Parser(argparse.ArgumentParser):
    """argparse that reports one clear line instead of a usage dump and ``exit(2)``."""

    def error(self, message: str) -> NoReturn:
        message = message.replace("argument ", "", 1) if message.startswith("argument ") else message
        command = "axl-eval run" if self.prog == "axl-eval" else self.prog
        hint = f"run `{command} --help` for the flags"
        if message.startswith("unrecognized arguments: "):
            flags = message.removeprefix("unrecognized arguments: ")
            raise UsageError(f"unknown flag: {flags}", hint=hint)
        raise UsageError(message, hint=hint)


def _positive_int(raw: str) -> int:
    try:
        value = int(raw.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f'expected a positive integer, got "{raw}"') from None
    if value < 1:
        raise argparse.ArgumentTypeError(f'expected a positive integer, got "{raw}"')
    return value


def _error_rate(raw: str) -> float:
    from axl_action.cli.flags import error_rate

    # Raises UsageError (not an argparse error): the message is the reference's exact line.
    return error_rate("--max-item-error-rate", raw)


def _budget(raw: str) -> str:
    from axl_action.runtime.admission import parse_budget

    try:
        parse_budget(raw)
    except AxlError as err:
        raise argparse.ArgumentTypeError(err.message) from None
    return raw


def _shard(raw: str) -> tuple[int, int]:
    match = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", raw)
    if not match:
        raise argparse.ArgumentTypeError(f'expected i/n like 1/4, got "{raw}"')
    index, count = int(match.group(1)), int(match.group(2))
    if count < 1 or not 1 <= index <= count:
        raise argparse.ArgumentTypeError(f'expected i/n with 1 <= i <= n, got "{raw}"')
    return index, count


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
    parser = _Parser(
        prog="axl-eval",
        description="Run eval files (*_eval.py, *.eval.py, or directories of them) and write results.",
        allow_abbrev=False,
    )
    parser.add_argument("paths", nargs="*", help="eval files, directories or glob patterns")
    parser.add_argument("--output", metavar="FILE", help="write the results JSON here (atomically)")
    parser.add_argument("--runs", type=_positive_int, default=1, metavar="N", help="run each eval N times")
    parser.add_argument(
        "--concurrency",
        type=_positive_int,
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
        "--budget", type=_budget, metavar="$X", help='stop admitting spend at this USD amount, e.g. "$1"'
    )
    parser.add_argument(
        "--shard", type=_shard, metavar="i/n", help="run only shard i of n (1-based) of each dataset"
    )
    parser.add_argument(
        "--capture-requests",
        action="store_true",
        help="write every provider request/response (secrets redacted) to <output>.requests.jsonl",
    )
    parser.add_argument(
        "--redact-content",
        action="store_true",
        help="with --capture-requests: also replace prompt and completion text in the captured records",
    )
    parser.add_argument("--pricing", metavar="FILE", help="price table overrides (JSON)")
    parser.add_argument("--quiet", action="store_true", help="no progress and no tables, only gate lines")
    return parser


def env_int(name: str) -> int | None:
    """A positive integer from the environment; malformed values are ignored (spec §7.2)."""
    raw = os.environ.get(name, "").strip()
    match = re.match(r"[+-]?\d+", raw)
    if not match:
        return None
    value = int(match.group(0))
    return value if value > 0 else None


@dataclass
class _Interrupt:
    """SIGINT/SIGTERM handling: first signal cancels, a second one exits at once."""

    event: threading.Event = field(default_factory=threading.Event)
    signum: int | None = None
    previous: dict[int, Any] = field(default_factory=dict)

    def handle(self, signum: int, _frame: FrameType | None) -> None:
        if self.signum is not None:
            print("[axl-eval] Second signal received, forcing exit.", file=sys.stderr, flush=True)
            os._exit(130)
        self.signum = signum
        self.event.set()
        name = signal.Signals(signum).name
        print(
            f"\n[axl-eval] Received {name}, cancelling the eval (in-flight items finish; "
            "press Ctrl+C again to force exit)...",
            file=sys.stderr,
            flush=True,
        )

    def install(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return
        for sig in (signal.SIGINT, signal.SIGTERM):
            self.previous[sig] = signal.signal(sig, self.handle)

    def restore(self) -> None:
        for sig, handler in self.previous.items():
            signal.signal(sig, handler)

    @property
    def exit_code(self) -> int:
        return 128 + self.signum if self.signum is not None else 0


def _report(result: dict[str, Any], label: str, batch_label: str | None = None) -> bool:
    """Print the stop/gate lines (stderr); True when the result fails the file."""
    from axl_action.evals import console

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
    for line in console.fully_skipped_notes(result, label):
        print(line, file=sys.stderr)
    return fails


def run(argv: list[str]) -> int:
    """Entry point of ``axl-eval run``; returns the exit code."""
    args = build_parser().parse_intermixed_args(argv)
    if not args.paths:
        raise UsageError("No eval file path provided", hint="axl-eval <eval file or directory> [flags]")
    if args.capture_requests and not args.output:
        raise UsageError("--capture-requests needs --output", hint="the requests go next to the results file")
    if args.redact_content and not args.capture_requests:
        raise UsageError("--redact-content needs --capture-requests", hint="it applies to captured requests")

    from axl_action.evals.loader import expand_paths

    files = expand_paths(args.paths)
    if args.scorers and len(files) > 1:
        raise UsageError(f"--scorers requires a single eval file (matched {len(files)}).")

    runtime = _runtime(args.pricing)
    interrupt = _Interrupt()
    interrupt.install()
    try:
        results, failed = _run_files(files, args, runtime, interrupt.event)
    finally:
        interrupt.restore()
    if args.output and results:
        _write(Path(args.output), results, args.quiet)
    if interrupt.signum is not None:
        print(
            f"[axl-eval] Interrupted: wrote the results completed so far ({len(results)} result(s)).",
            file=sys.stderr,
        )
        return interrupt.exit_code
    return 1 if failed or not results else 0


def _runtime(pricing: str | None) -> Any:
    from axl_action.runtime.runtime import Runtime

    table = None
    if pricing:
        from axl_action.providers.pricing import PricingTable

        table = PricingTable.load(Path(pricing))
    return Runtime(pricing=table)


def _sidecar_sink(output: Path, result_id: str, *, redact_content: bool = False) -> Any:
    from axl_action.providers.capture import CaptureSink, sidecar_path

    part = sidecar_path(output).with_name(f".{sidecar_path(output).name}.{result_id}.part")
    sink = CaptureSink(part, redact_content=redact_content)
    sink.artifact_id = f"art_{result_id}"  # type: ignore[attr-defined]
    return sink


def _run_files(
    files: Sequence[Path], args: argparse.Namespace, runtime: Any, cancel: threading.Event
) -> tuple[list[dict[str, Any]], bool]:
    from axl_action.evals.loader import load_eval_file

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
            produced, file_failed = _run_one(loaded, args, runtime, cancel)
            results.extend(produced)
            failed = failed or file_failed
    return results, failed


def _run_one(
    loaded: Any, args: argparse.Namespace, runtime: Any, cancel: threading.Event
) -> tuple[list[dict[str, Any]], bool]:
    from axl_action.evals import console
    from axl_action.evals.multirun import aggregate_runs
    from axl_action.evals.progress import Progress
    from axl_action.evals.runner import apply_scorer_filter, execute_eval, stamp_scorer_filter

    label: str = loaded.label
    definition = loaded.definition
    concurrency = args.concurrency or env_int("AXL_EVAL_CONCURRENCY") or definition.concurrency
    overrides: dict[str, Any] = {"concurrency": concurrency}
    if args.budget is not None:
        overrides["budget"] = args.budget
    if args.max_item_error_rate is not None:
        overrides["fail_on_item_error_rate"] = args.max_item_error_rate
    definition = replace(definition, **overrides)
    definition = apply_scorer_filter(definition, args.scorers)

    def once(run_label: str) -> dict[str, Any]:
        result_id = str(uuid.uuid4())
        sink = (
            _sidecar_sink(Path(args.output), result_id, redact_content=args.redact_content)
            if args.capture_requests
            else None
        )
        progress: Callable[[Any], None] | None = None if args.quiet else Progress(run_label, sys.stderr)
        result = execute_eval(
            definition,
            runtime,
            on_progress=progress,
            cancel_event=cancel,
            capture=sink,
            shard=args.shard,
            result_id=result_id,
        )
        if args.scorers:
            stamp_scorer_filter(result, definition)
        return result

    if args.runs == 1:
        try:
            result = once(label)
        except Exception as err:
            print(f"Error running eval {label}: {_describe(err)}", file=sys.stderr)
            return [], True
        if not args.quiet:
            print("\n" + console.format_table(result) + "\n")
        return [result], _report(result, label)

    group = str(uuid.uuid4())
    completed: list[dict[str, Any]] = []
    failure: str | None = None
    for r in range(1, args.runs + 1):
        if cancel.is_set():
            break
        print(f"[axl-eval] Run {r}/{args.runs}...", file=sys.stderr)
        try:
            result = once(f"{label} run {r}/{args.runs}")
        except Exception as err:
            failure = _describe(err)
            print(f"[axl-eval] Run {r}/{args.runs} failed: {failure}", file=sys.stderr)
            break
        result["metadata"]["runGroupId"] = group
        result["metadata"]["runIndex"] = r - 1
        completed.append(result)
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
    for i, result in enumerate(completed, start=1):
        gate_failed = _report(result, label, f"{label} run {i}/{args.runs}") or gate_failed
    return completed, partial or gate_failed


def _describe(err: Exception) -> str:
    """An AxlError prints as itself; anything else with its type, so a bug is recognisable."""
    return str(err) if isinstance(err, AxlError) else f"{type(err).__name__}: {err}"


def _write(output: Path, results: list[dict[str, Any]], quiet: bool) -> None:
    from axl_action.errors import InputFileError
    from axl_action.schema import EvalResult, write_result_file

    models = [EvalResult.model_validate(r) for r in results]
    try:
        write_result_file(output, models[0] if len(models) == 1 else models)
    except OSError as exc:
        raise InputFileError(
            f"cannot write the results to {output}: {exc.strerror or exc}",
            hint="check that the directory is writable, or pass another --output",
        ) from None
    print(f"Results saved to {output}")
    _join_sidecar(output, results)


def _join_sidecar(output: Path, results: list[dict[str, Any]]) -> None:
    """Concatenate the per-result capture files into ``<output>.requests.jsonl``."""
    from axl_action.providers.capture import sidecar_path

    target = sidecar_path(output)
    parts = [target.with_name(f".{target.name}.{r['id']}.part") for r in results if r.get("diagnostics")]
    existing = [p for p in parts if p.exists()]
    if not existing:
        return
    tmp = target.with_name(f".{target.name}.tmp")
    with tmp.open("w", encoding="utf-8") as out:
        for part in existing:
            out.write(part.read_text(encoding="utf-8"))
            part.unlink()
    os.replace(tmp, target)
    print(f"Captured requests saved to {target}")
