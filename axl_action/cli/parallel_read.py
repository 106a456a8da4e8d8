"""``axl-eval compare`` reads its two results files at the same time, in worker processes it
starts before anything else.

Parsing a results file is CPU-bound and holds the GIL, so threads cannot overlap two of them;
processes can. The library reads one file after the other (``schema.load_run_view_files``)
and starts no process: whether a process may fork is the command's decision, made here.

The workers are a standard process pool in the ``fork`` context, started at the command's
entry: before numpy and pydantic are imported (``schema.reading`` needs neither), so the
command imports them, and the comparison code, while the workers parse. Forking copies only
the calling thread, so a lock another thread held would stay locked in the child: the pool is
started only when the process has one OS thread (counted in ``/proc/self/task``, which also
sees the threads numpy's BLAS or an extension started, not only Python's). Anywhere else, for
a single file, or when a worker dies, the files are read here. Either way the views, and the
error raised for the first bad file in argument order, are the same.
"""

from __future__ import annotations

import os
import pickle
import sys
from collections.abc import Sequence
from concurrent.futures import Future
from concurrent.futures.process import BrokenProcessPool, ProcessPoolExecutor
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from axl_action.errors import ResultFileError
from axl_action.schema.reading import FileRead, RunRead, read_bytes, read_runs

if TYPE_CHECKING:
    from axl_action.schema.io import ViewFile

_KEPT: list[Any] = []
"""A worker's parsed JSON, kept until the worker exits: freeing 100,000 parsed items one object
at a time takes 80 ms that a process about to exit need not spend."""


def os_threads() -> int | None:
    """The process's OS threads, or None where ``/proc`` does not say."""
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return None


def can_fork() -> bool:
    """Whether forking is safe now: Linux, and no other OS thread in this process."""
    return sys.platform == "linux" and os_threads() == 1


class ParallelReads:
    """Results files being read as run views by worker processes, while the caller goes on.

    Use it as a context manager, so the workers are shut down even when the caller fails
    before :meth:`wait`.
    """

    def __init__(self, paths: Sequence[str | os.PathLike[str]]) -> None:
        self._paths = list(paths)
        self._pool: ProcessPoolExecutor | None = None
        self._reads: list[Future[tuple[str, Any, list[bytes | None]]]] = []
        if len(self._paths) < 2 or not can_fork():
            return
        import multiprocessing

        try:
            pool = ProcessPoolExecutor(len(self._paths), mp_context=multiprocessing.get_context("fork"))
            self._pool = pool
            # The first submit forks every worker before the pool starts its own thread.
            self._reads = [_submit(pool, path) for path in self._paths]
        except OSError:  # out of processes or pipes: the files are read here instead
            self.close()

    def wait(self) -> list[ViewFile]:
        """The views of every file, in argument order; raises the first file's error."""
        from axl_action.schema import io, view  # numpy and pydantic: imported while workers parse

        if self._pool is None:
            return io.load_run_view_files(self._paths)
        try:
            # The workers leave the headers to this process, which builds their validator
            # (and the coverage models') while they parse instead of each worker after.
            view.prepare_validators()
            shared: dict[bytes, list[Any]] = {}
            return [
                io.views_of_read(_collect(read, shared), path)
                for read, path in zip(self._reads, self._paths, strict=True)
            ]
        finally:
            self.close()

    def close(self) -> None:
        """Shut the workers down (cancelling reads not yet started)."""
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)

    def __enter__(self) -> ParallelReads:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _submit(
    pool: ProcessPoolExecutor, path: str | os.PathLike[str]
) -> Future[tuple[str, Any, list[bytes | None]]]:
    """The read of ``path`` queued on ``pool``. A worker that dies before every read is queued
    breaks the pool at once, and ``submit`` raises: that read then fails as one whose worker
    died mid-read, and :func:`_collect` reads the file here (seen under load in CI)."""
    try:
        return pool.submit(_read_in_worker, str(path))
    except BrokenProcessPool as err:
        failed: Future[tuple[str, Any, list[bytes | None]]] = Future()
        failed.set_exception(err)
        return failed


def _read_in_worker(path: str) -> tuple[str, Any, list[bytes | None]]:
    """In a worker: ``("ok", FileRead, inputs)`` (see :func:`_inputs_apart`) or
    ``("error", err, [])``. The error is returned, not raised: it arrives whole (hint
    included), without the pool's remote-traceback wrapping."""
    try:
        read, inputs = _inputs_apart(read_runs(read_bytes(path), path, _KEPT))
    except ResultFileError as err:
        return ("error", err, [])
    return ("ok", read, inputs)


def _inputs_apart(read: FileRead) -> tuple[FileRead, list[bytes | None]]:
    """The read without its runs' item inputs, and those inputs pickled on their own.

    Both sides of a comparison usually ran the same dataset, so their inputs pickle to the
    same bytes: :func:`_collect` then unpickles them once, and the two runs share one list,
    which pairing compares by identity instead of item by item (20,000 inputs: 5-7 ms to
    unpickle and 5-6 ms to compare, twice the first on the command's critical path).
    """
    blobs: list[bytes | None] = []
    runs: list[RunRead] = []
    for run in read.runs:
        if run.facts is None:
            blobs.append(None)
            runs.append(run)
            continue
        blobs.append(pickle.dumps(run.facts.inputs, protocol=pickle.HIGHEST_PROTOCOL))
        runs.append(replace(run, facts=replace(run.facts, inputs=[])))
    return replace(read, runs=runs), blobs


def _collect(
    read: Future[tuple[str, Any, list[bytes | None]]], shared: dict[bytes, list[Any]]
) -> FileRead | None:
    """What a worker read, or its error raised here; None when the worker died (killed, out of
    memory) before answering, and the file is read here instead. ``shared``: the inputs
    unpickled so far by their bytes (see :func:`_inputs_apart`)."""
    try:
        status, value, blobs = read.result()
    except BrokenProcessPool:
        return None
    if status == "error":
        raise value
    assert isinstance(value, FileRead)
    runs: list[RunRead] = []
    for run, blob in zip(value.runs, blobs, strict=True):
        if blob is not None and run.facts is not None:
            inputs = shared.get(blob)
            if inputs is None:
                inputs = shared[blob] = pickle.loads(blob)
            run = replace(run, facts=replace(run.facts, inputs=inputs))
        runs.append(run)
    return replace(value, runs=runs)
