"""Progress lines on stderr, stdlib only.

On a terminal: one live line rewritten with ``\\r`` (done/total, failures, elapsed, ETA), cut
to the terminal's width so that it never wraps.
Elsewhere (CI logs): a plain line at most every ``interval`` seconds, and one at the end.
"""

from __future__ import annotations

import os
import shutil
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any, TextIO

_FAILED = frozenset({"failed", "budget_interrupted"})


def _clock(seconds: float) -> str:
    seconds = max(0, int(seconds))
    minutes, secs = divmod(seconds, 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def _terminal_width(stream: TextIO) -> int:
    """Columns of the terminal: ``$COLUMNS``, else stdout's terminal, else ``stream``'s, else 80."""
    columns = shutil.get_terminal_size((0, 0)).columns
    if columns > 0:
        return columns
    try:
        return os.get_terminal_size(stream.fileno()).columns or 80
    except (AttributeError, ValueError, OSError):
        return 80


class Progress:
    """An ``on_progress`` callback for :func:`~axl_action.evals.runner.execute_eval`."""

    def __init__(
        self,
        label: str,
        stream: TextIO,
        *,
        tty: bool | None = None,
        interval: float = 10.0,
        clock: Callable[[], float] = time.monotonic,
        width: Callable[[], int] | None = None,
    ) -> None:
        """``width`` gives the terminal's columns (default: ``shutil.get_terminal_size``,
        asked at every update so a resized terminal is followed)."""
        self.label = label
        self.stream = stream
        self.tty = stream.isatty() if tty is None else tty
        self.interval = interval
        self.clock = clock
        self.started = clock()
        self.last_print = self.started
        self.done = 0
        self.failed = 0
        self.cancelled = 0
        self.total = 0
        self._lock = threading.Lock()
        self._finished = False
        self._last_line = ""
        self.width = width or (lambda: _terminal_width(stream))

    def line(self, width: int | None = None) -> str:
        """``label: 40/100 done · 2 failed · 0:12 elapsed · ETA 0:18``.

        With ``width``, at most that many characters: the label loses its start first
        (``…/evals/long_eval.py: 40/100 done``), then the line its end.
        """
        elapsed = self.clock() - self.started
        parts = [f"{self.done}/{self.total} done"]
        if self.failed:
            parts.append(f"{self.failed} failed")
        if self.cancelled:
            parts.append(f"{self.cancelled} cancelled")
        parts.append(f"{_clock(elapsed)} elapsed")
        if 0 < self.done < self.total:
            parts.append(f"ETA {_clock(elapsed / self.done * (self.total - self.done))}")
        counts = " · ".join(parts)
        line = f"{self.label}: {counts}"
        if width is None or len(line) <= width:
            return line
        room = width - len(counts) - 2  # what is left for the label, "…" included, before ": "
        if room >= 8:
            return f"…{self.label[-(room - 1) :]}: {counts}"
        return line[: max(width - 1, 0)] + "…"

    def _live_line(self) -> str:
        # One column short of the terminal: writing the last column wraps on many terminals,
        # and a wrapped line is not rewritten by "\r" (every update would scroll).
        return self.line(self.width() - 1)

    def __call__(self, event: Mapping[str, Any]) -> None:
        with self._lock:
            if event.get("type") == "item_done":
                self.total = int(event.get("totalItems", self.total))
                self.done += 1
                if event.get("outcome") in _FAILED:
                    self.failed += 1
                elif event.get("outcome") == "cancelled":
                    self.cancelled += 1
                now = self.clock()
                if self.tty:
                    self.stream.write("\r\x1b[K" + self._live_line())
                    self.stream.flush()
                elif now - self.last_print >= self.interval:
                    self.last_print = now
                    self._last_line = self.line()
                    self.stream.write(self._last_line + "\n")
                    self.stream.flush()
            elif event.get("type") == "run_done":
                self.total = int(event.get("totalItems", self.total))
                self.finish()

    def finish(self) -> None:
        """Print the final line (once)."""
        if self._finished:
            return
        self._finished = True
        if self.tty:
            self.stream.write("\r\x1b[K" + self._live_line() + "\n")
        elif self.line() != self._last_line:  # the throttled line may already say it all
            self.stream.write(self.line() + "\n")
        self.stream.flush()
