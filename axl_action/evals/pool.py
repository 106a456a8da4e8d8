"""Order-preserving worker pools on threads, each task in a copy of the caller's context.

The pool size rule is the reference's (spec §2.1): ``floor(c)`` if finite else 1, at least 1,
at most the number of tasks, 0 for no tasks. Workers repeatedly take the next unstarted index,
so results land at their original index whatever order they finish in.
"""

from __future__ import annotations

import contextvars
import itertools
import math
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any


def pool_size(requested: Any, tasks: int) -> int:
    """Workers for ``tasks`` tasks at concurrency ``requested``."""
    if tasks <= 0:
        return 0
    try:
        value = float(requested)
    except (TypeError, ValueError):
        value = math.nan
    size = math.floor(value) if math.isfinite(value) else 1
    return min(max(1, size), tasks)


def run_pool(count: int, concurrency: Any, task: Callable[[int], None], *, name: str = "axl-eval") -> None:
    """Call ``task(i)`` for every ``i`` in ``range(count)`` on up to ``concurrency`` threads.

    Each worker runs in its own copy of the calling context (so accounting scopes opened by
    ``task`` nest under the caller's). Exceptions from ``task`` propagate after all workers
    stopped; ``task`` is expected to handle its own errors. A ``BaseException`` that is not an
    ``Exception`` (a hard stop, ``KeyboardInterrupt``) raised in the waiting thread propagates at
    once, leaving the workers running.
    """
    workers = pool_size(concurrency, count)
    if workers == 0:
        return
    if workers == 1:
        for index in range(count):
            task(index)
        return
    # ``next`` on an ``itertools.count`` is one C call, atomic under the GIL: no lock, so a
    # worker never waits behind one the GIL switched away from.
    counter = itertools.count()

    def worker() -> None:
        while True:
            index = next(counter)
            if index >= count:
                return
            task(index)

    executor = ThreadPoolExecutor(max_workers=workers, thread_name_prefix=name)
    try:
        futures = [executor.submit(contextvars.copy_context().run, worker) for _ in range(workers)]
        for future in futures:
            future.result()
    except Exception:
        executor.shutdown(wait=True)
        raise
    except BaseException:
        # A hard stop (or KeyboardInterrupt) in the waiting thread: leave the workers to it.
        # They may be stuck in a workflow; the caller exits the process without them.
        executor.shutdown(wait=False, cancel_futures=True)
        raise
    executor.shutdown(wait=True)
