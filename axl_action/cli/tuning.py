"""Process tuning, decided once at a command's entry, for that command only.

The library (``execute_run``, the readers, compare, report) changes no interpreter-wide state:
a caller that embeds it keeps its collector and its environment as they were. What makes a
command fast in its own process lives here, and ``tests/unit/test_process_tuning.py`` fails
on a ``gc.`` call, ``os.fork`` or an ``os.environ[...]`` assignment anywhere else in the
package.

* Commands that run no eval code (compare, report, history, merge) build many small objects
  and keep them all: the cyclic collector's passes found nothing to free there (80 passes
  and 20-27 ms of a 20,000-item compare) and make such builds super-linear, so it is off for
  the command. Reference counting still frees everything.
* Commands that run eval code (run, rescore) keep every item they build to the end, so the
  collector's full passes keep rescanning a growing heap. The objects alive when the command
  starts (modules, the dataset) are set aside with ``gc.freeze``, and so are the survivors of
  each full collection: after one, everything left is reachable, so only the eval's live
  objects are set aside, never its garbage (an eval's cycles are still collected while the
  run goes on). Everything is handed back (``gc.unfreeze``) when the command ends.
* Commands that run no eval code ask for one OpenBLAS thread before numpy loads.
"""

from __future__ import annotations

import contextlib
import gc
import os
import sys
from collections.abc import Iterator
from typing import Any

RUNS_EVAL_CODE = frozenset({"run", "rescore"})
"""Commands that load eval files: their code may use numpy's BLAS and the collector as it likes."""


def one_blas_thread() -> None:
    """Ask for a single OpenBLAS thread before numpy loads, unless the user chose a number.

    Our numpy work is element-wise arithmetic, gathers and sorts, never BLAS. Yet loading
    numpy starts an OpenBLAS worker per core, and each spins for about 0.1 s of CPU waiting
    for work that never comes: on a two-core runner `compare` lost that to its forked readers.
    Only commands that run no eval code do this (see ``RUNS_EVAL_CODE``).
    """
    if "numpy" not in sys.modules:
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


@contextlib.contextmanager
def collector_off() -> Iterator[None]:
    """The cyclic collector off for the block; its previous state restored afterwards."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _freeze_after_full_collection(phase: str, info: dict[str, Any]) -> None:
    if phase == "stop" and info.get("generation") == 2:
        gc.freeze()


@contextlib.contextmanager
def survivors_frozen() -> Iterator[None]:
    """Older objects, and the survivors of each full collection, set aside until the block ends."""
    # On even when the caller turned it off (the action does, for compare and the report):
    # an eval's garbage cycles must be collected while the run goes on.
    was_enabled = gc.isenabled()
    gc.enable()
    gc.freeze()
    gc.callbacks.append(_freeze_after_full_collection)
    try:
        yield
    finally:
        gc.callbacks.remove(_freeze_after_full_collection)
        gc.unfreeze()
        if not was_enabled:
            gc.disable()


@contextlib.contextmanager
def tuned(command: str) -> Iterator[None]:
    """The process tuning of ``command``, for as long as it runs."""
    if command in RUNS_EVAL_CODE:
        with survivors_frozen():
            yield
        return
    one_blas_thread()
    with collector_off():
        yield


def at_entry(command: str) -> None:
    """At the process entry, before ``command``: a command without eval code runs with the
    collector off to the exit (what it leaves is freed at exit without collection passes)."""
    if command not in RUNS_EVAL_CODE:
        gc.disable()


def at_exit(command: str) -> None:
    """Before the process exits after ``command``: collect an eval's garbage (its finalisers
    must run), then set everything aside, since interpreter shutdown otherwise runs its own
    collections over every object the command left alive (40-70 ms after a 20,000-item
    compare)."""
    if command in RUNS_EVAL_CODE:
        gc.collect()
    gc.freeze()
