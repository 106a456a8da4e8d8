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
        value = int(raw.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f'expected a positive integer, got "{raw}"') from None
    if value < 1:
        raise argparse.ArgumentTypeError(f'expected a positive integer, got "{raw}"')
    return value


def budget_arg(raw: str) -> str:
    from axl_action.runtime.admission import parse_budget

    try:
        parse_budget(raw)
    except AxlError as err:
        raise argparse.ArgumentTypeError(err.message) from None
    return raw


def env_int(name: str) -> int | None:
    """A positive integer from the environment; malformed values are ignored (spec §7.2)."""
    raw = os.environ.get(name, "").strip()
    match = re.match(r"[+-]?\d+", raw)
    if not match:
        return None
    value = int(match.group(0))
    return value if value > 0 else None


@dataclass
class Interrupt:
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


def make_runtime(pricing: str | None) -> Any:
    """A runtime with its own price table (the bundled one, overlaid with ``--pricing``), so
    that :func:`pricing_notes` can say afterwards which models had no price."""
    from axl_action.providers.pricing import PricingTable
    from axl_action.runtime.runtime import Runtime

    return Runtime(pricing=PricingTable.load(Path(pricing) if pricing else None))


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
    for key, nearest in table.unmatched_overrides().items():
        hint = f'; did you mean "{nearest}"? Keys must match the model URI exactly' if nearest else ""
        lines.append(
            f'[axl-eval] WARNING: pricing file {table.override_path}: "{key}" matched no call{hint}.'
        )
    return lines


def sidecar_sink(output: Path, result_id: str, *, redact_content: bool = False) -> Any:
    from axl_action.providers.capture import CaptureSink, sidecar_path

    part = sidecar_path(output).with_name(f".{sidecar_path(output).name}.{result_id}.part")
    sink = CaptureSink(part, redact_content=redact_content)
    sink.artifact_id = f"art_{result_id}"  # type: ignore[attr-defined]
    return sink


def join_sidecar(output: Path, results: list[dict[str, Any]]) -> None:
    """Concatenate the per-result capture files into ``<output>.requests.jsonl``."""
    if not any(r.get("diagnostics") for r in results):
        return  # nothing was captured (and a run that made no call never loads the providers)
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


def write_results(
    output: Path, results: list[dict[str, Any]], *, as_list: bool, what: str = "results"
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

    try:
        write_result_file(output, results if as_list else results[0], replaced)
    except OSError as exc:
        raise InputFileError(
            f"cannot write the {what} to {output}: {exc.strerror or exc}",
            hint="check that the directory is writable, or pass another --output",
        ) from None
    print(f"{what[0].upper()}{what[1:]} saved to {output}")
    join_sidecar(output, results)
