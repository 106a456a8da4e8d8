"""Pieces the ``run`` and ``rescore`` commands share: flag parsing, signals, runtime, capture files."""

from __future__ import annotations

import argparse
import os
import re
import signal
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any, NoReturn

from axl_action import values
from axl_action.errors import AxlError, UsageError


class ArgParser(argparse.ArgumentParser):
    """argparse that reports one clear line instead of a usage dump and ``exit(2)``."""

    def error(self, message: str) -> NoReturn:
        message = message.replace("argument ", "", 1) if message.startswith("argument ") else message
        command = "axl-eval run" if self.prog in ("axl-eval", "axl-eval [run]") else self.prog
        hint = f"run `{command} --help` for the flags"
        if message.startswith("unrecognized arguments: "):
            flags = message.removeprefix("unrecognized arguments: ")
            raise UsageError(f"unknown flag: {flags}", hint=hint)
        raise UsageError(message, hint=hint)


def positive_int(raw: str) -> int:
    try:
        return values.whole_number(raw, low=1)
    except ValueError:
        raise argparse.ArgumentTypeError(f'expected a positive integer, got "{raw}"') from None


def budget_arg(raw: str) -> str:
    from axl_action.runtime.admission import parse_budget

    try:
        parse_budget(raw)
    except AxlError as err:
        raise argparse.ArgumentTypeError(err.message) from None
    return raw


def add_wait_flag(parser: argparse.ArgumentParser) -> None:
    """``--wait`` and ``--force``, for the commands that write a run journal (its lock and its
    identity checks: evals/journal/lock.py, checks.py)."""
    parser.add_argument(
        "--wait",
        action="store_true",
        help="when another process is still writing <output>.journal.jsonl (a run in its grace period, "
        "another --resume), wait for it to end instead of refusing, then continue from what it left",
    )
    parser.add_argument(
        "--force",
        action="store_true",
        help="with --resume: keep the settled items even though the eval's judges (model, prompt, "
        "options) or its source files changed since they were made; the result records it in "
        "metadata.resumed.forced",
    )


def check_force_flag(args: argparse.Namespace) -> None:
    """``--force`` only means something to a resume."""
    if args.force and not args.resume:
        raise UsageError(
            "--force needs --resume",
            hint="it keeps a journal's items after the eval's judges or source changed",
        )


def env_int(name: str) -> int | None:
    """A positive integer from the environment; malformed values are ignored (spec §7.2)."""
    raw = os.environ.get(name, "").strip()
    match = re.match(r"[+-]?\d+", raw)
    if not match:
        return None
    value = int(match.group(0))
    return value if value > 0 else None


GRACE_ENV = "AXL_EVAL_GRACE_SECONDS"
DEFAULT_GRACE_SECONDS = 30.0
"""How long items in flight may take to finish after the first SIGINT/SIGTERM."""

HARD_STOPPED = threading.Event()
"""Set once a hard stop abandoned items in flight: their threads may never return, so the
process must leave with ``os._exit`` (:func:`leave`) instead of waiting for them."""


class HardStop(BaseException):
    """Raised in the main thread by a second signal, or when the grace period ends with items
    still in flight: write what has settled and exit now. A ``BaseException`` so that no
    ``except Exception`` on the way up swallows it."""

    def __init__(self, signum: int, reason: str) -> None:
        super().__init__(reason)
        self.signum = signum
        self.reason = reason

    @property
    def exit_code(self) -> int:
        return 128 + self.signum


def grace_seconds(raw: str | None = None) -> float:
    """The grace period: ``--grace-period``, else ``$AXL_EVAL_GRACE_SECONDS``, else 30 s.

    A flag value that is not a number >= 0 is a usage error; a malformed environment value
    is ignored (as every ``AXL_EVAL_*`` number is), with a warning.
    """
    if raw is not None:
        return _seconds("--grace-period", raw)
    env = os.environ.get(GRACE_ENV, "").strip()
    if env:
        try:
            return _seconds(GRACE_ENV, env)
        except UsageError as err:
            print(f"[axl-eval] WARNING: ignoring {err.message}", file=sys.stderr)
    return DEFAULT_GRACE_SECONDS


def _seconds(name: str, raw: str) -> float:
    try:
        value = float(raw.strip().removesuffix("s"))
    except ValueError:
        value = -1.0
    if not value >= 0 or value == float("inf"):
        raise UsageError(f'{name}: expected a number of seconds >= 0, got "{raw}"', hint="for example 30")
    return value


@dataclass
class Interrupt:
    """SIGINT/SIGTERM handling in two stages (see ``docs/durability.md``).

    1. The first signal sets ``event``: no new item starts; items in flight finish, scorers
       included, for up to ``grace`` seconds. The run then ends normally (the items not
       started are ``cancelled``) and writes its partial results; the journal is kept.
    2. A second signal, or the grace period ending with items still in flight, sets ``abort``
       (in-flight scorers are cancelled, LLM judges aborted) and raises :class:`HardStop` in
       the main thread: the command writes what has settled, from the journal, and exits.
    3. Any further signal exits at once.
    """

    grace: float = DEFAULT_GRACE_SECONDS
    event: threading.Event = field(default_factory=threading.Event)
    """Set by the first signal: admit no new items."""
    abort: threading.Event = field(default_factory=threading.Event)
    """Set by the hard stop: cancel the scorers of items in flight."""
    signum: int | None = None
    stopped: str | None = None
    """Why admission stopped without a signal: the run journal could not be written."""
    previous: dict[int, Any] = field(default_factory=dict)
    in_flight: dict[str, int] = field(default_factory=dict)
    """Result id -> items still in flight when the hard stop left them (see :meth:`abandoned`)."""
    _settled: threading.Event = field(default_factory=threading.Event)
    _expired: bool = False

    def abandoned(self, result_id: str, count: int) -> None:
        """The runner's ``on_abandoned``: ``count`` items of ``result_id`` were in flight when
        the hard stop came. Their workflows and judges may have made calls the providers bill;
        the command says so, and stamps it in the partial result (``abandoned_note``)."""
        self.in_flight[result_id] = self.in_flight.get(result_id, 0) + count

    def stop_admission(self, reason: str) -> None:
        """The journal's ``on_fail``: start no new item (as a first signal does, without the
        grace period: nothing is asked to hurry). Items in flight finish and are kept in memory
        for the results file; the command then fails, saying why (:func:`journal_stop_note`)."""
        self.stopped = reason
        self.event.set()

    def handle(self, signum: int, _frame: FrameType | None) -> None:
        if self.abort.is_set():
            print("[axl-eval] Another signal: exiting now.", file=sys.stderr, flush=True)
            HARD_STOPPED.set()
            os._exit(self.exit_code or 128 + signum)
        if self.signum is not None:
            self.abort.set()
            HARD_STOPPED.set()
            reason = (
                f"the {self.grace:g} s grace period is over with items still in flight"
                if self._expired
                else "second signal"
            )
            print(
                f"[axl-eval] Hard stop ({reason}): writing what has settled and exiting.",
                file=sys.stderr,
                flush=True,
            )
            raise HardStop(self.signum, reason)
        self.signum = signum
        self.event.set()
        name = signal.Signals(signum).name
        print(
            f"\n[axl-eval] Received {name}: no new items start; the items in flight finish, scorers "
            f"included, within {self.grace:g} s (--grace-period). A second signal writes what has "
            "settled and exits at once.",
            file=sys.stderr,
            flush=True,
        )
        threading.Thread(target=self._watch, name="axl-eval-grace", daemon=True).start()

    def _watch(self) -> None:
        if self._settled.wait(self.grace) or self.signum is None:
            return
        self._expired = True
        # Handled in the main thread as a second signal. Sent to that thread itself: a signal
        # raised here would not interrupt its wait for the workers until they return.
        main = threading.main_thread().ident
        if main is not None:
            signal.pthread_kill(main, self.signum)

    def settle(self) -> None:
        """The items are done: the grace period no longer applies."""
        self._settled.set()

    def install(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return
        for sig in (signal.SIGINT, signal.SIGTERM):
            self.previous[sig] = signal.signal(sig, self.handle)

    def restore(self) -> None:
        self._settled.set()
        for sig, handler in self.previous.items():
            signal.signal(sig, handler)

    @property
    def exit_code(self) -> int:
        return 128 + self.signum if self.signum is not None else 0


def abandoned_note(interrupt: Interrupt, results: list[dict[str, Any]]) -> str | None:
    """After a hard stop: stamp ``metadata.recovered.itemsInFlight`` (and
    ``inFlightMayBeBilled``) in the result the items in flight belonged to, and return the
    console line naming them (``None`` when none was in flight)."""
    for result in results:
        recovered = result.get("metadata", {}).get("recovered")
        if isinstance(recovered, dict):
            count = interrupt.in_flight.get(result.get("id", ""), 0)
            recovered["itemsInFlight"] = count
            recovered["inFlightMayBeBilled"] = count > 0
    total = sum(interrupt.in_flight.values())
    if not total:
        return None
    return (
        f"[axl-eval] {total} item(s) were still in flight and are abandoned: the calls they had made may "
        "have been billed, and no result holds them; --resume runs them again."
    )


def tolerant_console() -> None:
    """Text that is not valid Unicode (a lone surrogate in a model's output, echoed in a scorer
    error or a table) must not crash the console after the items ran: print a replacement."""
    for stream, errors in ((sys.stdout, "replace"), (sys.stderr, "backslashreplace")):
        reconfigure = getattr(stream, "reconfigure", None)
        if callable(reconfigure):
            reconfigure(errors=errors)


def leave(code: int) -> int:
    """``code``, or, after a hard stop left threads running, exit the process now with it."""
    if HARD_STOPPED.is_set():
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    return code


def make_runtime(pricing: str | None) -> Any:
    """A runtime with its own price table (the bundled one, overlaid with ``--pricing``), so
    that :func:`pricing_notes` can say afterwards which models had no price."""
    from axl_action.providers.pricing import PricingTable
    from axl_action.runtime.runtime import Runtime

    return Runtime(pricing=PricingTable.load(Path(pricing) if pricing else None))


def close_providers(runtime: Any) -> None:
    """Close the keep-alive connections of the providers the command built (``finally`` of
    ``run`` and ``rescore``). A command that called no model never imported the gateway, and
    closing must not import it (requests and the adapters, about 0.2 s): nothing was built."""
    gateway = sys.modules.get("axl_action.providers.gateway")
    if gateway is not None:
        gateway.close_providers(runtime)


def pricing_notes(table: Any) -> list[str]:
    """stderr lines after a run: models called without a price, and ``--pricing`` entries
    that matched no call (with the nearest model that was called)."""
    from axl_action.providers.pricing import PricingTable

    if not isinstance(table, PricingTable):
        return []
    lines = []
    missed = table.unpriced_calls()
    if missed:
        models = ", ".join(f"{m} ({n} call{'s' if n != 1 else ''})" for m, n in missed.items())
        lines.append(
            f"[axl-eval] NOTE: no price for {models}: their cost is unknown, so the run's accounting "
            'is incomplete (unpriced_model). Add each model to a pricing file ({"version": 1, '
            '"models": {"<provider:model>": {"input": <USD per 1M tokens>, "output": <...>}}}) and '
            "pass it with --pricing FILE (docs/cost.md)."
        )
    lines.extend(table.override_warnings())
    return lines


def sidecar_sink(output: Path, result_id: str, *, redact_content: bool = False, resume: bool = False) -> Any:
    """The capture sink of one result: ``.<sidecar>.<result id>.part``, joined at the end. A
    resumed result keeps its id, so ``resume`` appends to the part an interrupted process of
    it left (``docs/durability.md``)."""
    from axl_action.providers.capture import CaptureSink, sidecar_path

    part = sidecar_path(output).with_name(f".{sidecar_path(output).name}.{result_id}.part")
    sink = CaptureSink(part, redact_content=redact_content, append=resume)
    sink.artifact_id = f"art_{result_id}"  # type: ignore[attr-defined]
    return sink


def join_sidecar(output: Path, results: list[dict[str, Any]], *, append: bool = False) -> None:
    """Concatenate the per-result capture files into ``<output>.requests.jsonl``; ``append``
    (a resumed run) keeps the records an earlier attempt joined there, before the new ones."""
    if not any(r.get("diagnostics") for r in results):
        return  # nothing was captured (and a run that made no call never loads the providers)
    from axl_action.atomic import write_atomic
    from axl_action.providers.capture import sidecar_path

    target = sidecar_path(output)
    parts = [target.with_name(f".{target.name}.{r['id']}.part") for r in results if r.get("diagnostics")]
    existing = [p for p in parts if p.exists()]
    if not existing:
        return
    # The parts are deleted only once the joined file is in place: a failed write keeps them.
    sources = ([target] if append and target.exists() else []) + existing
    write_atomic(target, (source.read_bytes() for source in sources))
    for part in existing:
        part.unlink()
    print(f"Captured requests saved to {target}")


RESCUE_DIR_ENV = "AXL_EVAL_RESCUE_DIR"


def rescue_results(output: Path, data: Any) -> Path | None:
    """Write results that could not be written to ``output`` (a full disk, a directory in the
    way) where they can be: ``$AXL_EVAL_RESCUE_DIR``, else the temporary directory (``$TMPDIR``,
    usually another file system), else the home directory; synced, since they may hold the only
    copy of paid items. Returns the path, or ``None`` when every place failed."""
    import tempfile

    from axl_action.atomic import write_atomic
    from axl_action.schema.io import result_json_chunks

    places = [os.environ.get(RESCUE_DIR_ENV, ""), tempfile.gettempdir(), str(Path.home())]
    name = f"{output.stem}.rescued-{os.getpid()}{output.suffix or '.json'}"
    for place in filter(None, places):
        target = Path(place) / name
        try:
            write_atomic(target, result_json_chunks(data), sync=True)
        except OSError:
            continue
        return target
    return None


def journal_stop_note(interrupt: Interrupt, results: list[dict[str, Any]]) -> str | None:
    """After the journal failed: stamp ``metadata.journalStopped`` (the reason) in the results
    of the run it stopped, and return the console line saying what did not run (``None`` when
    the journal never failed)."""
    if interrupt.stopped is None:
        return None
    not_started = 0
    for result in results:
        items = result.get("items", [])
        cancelled = sum(1 for item in items if item.get("outcome") == "cancelled")
        if cancelled:
            result["metadata"]["journalStopped"] = interrupt.stopped
            not_started += cancelled
    return (
        f"[axl-eval] Stopped: the run journal could not be written ({interrupt.stopped}); "
        f"{not_started} item(s) were not started. Every item that ran is in the results; free space and "
        "run the same command with --resume to run the rest."
    )


def output_file(raw: str | None) -> Path | None:
    """``--output`` of a command that runs items: checked before anything runs, since a path
    that cannot be a file would only fail after every item had run (and been paid for)."""
    if raw is None:
        return None
    if not raw.strip():
        raise UsageError("--output needs a file name", hint="e.g. --output out/results.json")
    path = Path(raw)
    if path.is_dir():
        raise UsageError(
            f"--output {raw} is a directory", hint=f"name the results file, e.g. {path / 'results.json'}"
        )
    for parent in path.parents:
        if parent.exists():
            if not parent.is_dir():
                raise UsageError(
                    f"--output {raw}: {parent} is a file, not a directory", hint="pass a path in a directory"
                )
            break
    return path


def remove_stale_temp_files(output: Path) -> None:
    """Delete the temporary files an interrupted write of ``output`` left beside it
    (``.results.json.<8 random characters>``, as ``write_result_file``'s ``mkstemp`` names
    them; a kill between its create and its rename leaves one), saying so once per file."""
    import re

    pattern = re.compile(rf"\.{re.escape(output.name)}\.[a-z0-9_]{{8}}")
    try:
        names = [p for p in output.parent.iterdir() if pattern.fullmatch(p.name) and p.is_file()]
    except OSError:
        return  # the write that follows reports an unusable directory
    for stale in names:
        try:
            stale.unlink()
        except OSError:
            continue
        print(
            f"[axl-eval] Removed {stale}, a temporary file an interrupted write of {output} left behind.",
            file=sys.stderr,
        )


def write_results(
    output: Path,
    results: list[dict[str, Any]],
    *,
    as_list: bool,
    what: str = "results",
    append_capture: bool = False,
) -> None:
    """Write wire results (one object, or an array when ``as_list``) and join the capture sidecar.

    The wire data is written as built (each item already in its outcome's key order); no model
    is validated just to write it.
    """
    from axl_action.errors import InputFileError
    from axl_action.schema import write_result_file

    def replaced(paths: list[str]) -> None:
        shown = ", ".join(paths[:5]) + (f" and {len(paths) - 5} more" if len(paths) > 5 else "")
        print(
            f"[axl-eval] WARNING: text that is not valid Unicode (a lone surrogate) was written as "
            f"U+FFFD at {shown}",
            file=sys.stderr,
        )

    remove_stale_temp_files(output)
    data = results if as_list else results[0]
    try:
        write_result_file(output, data, replaced)
    except OSError as exc:
        reason = exc.strerror or str(exc)
        rescued = rescue_results(output, data)
        if rescued is None:
            raise InputFileError(
                f"cannot write the {what} to {output}: {reason}, nor anywhere else",
                hint="free space or fix the directory's permissions; the journal, if any, keeps what it "
                "holds for --resume",
            ) from None
        from axl_action.evals.journal.base import journal_path

        journal = journal_path(output)
        raise InputFileError(
            f"cannot write the {what} to {output}: {reason}; every item was written to {rescued} instead",
            hint=f"free space or fix the directory, move {rescued} to {output}"
            + (f", delete {journal} (the moved file holds every item it does)" if journal.exists() else "")
            + ", and run the same command with --resume: only the items that did not run will run",
        ) from None
    print(f"{what[0].upper()}{what[1:]} saved to {output}")
    join_sidecar(output, results, append=append_capture)
