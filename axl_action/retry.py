"""The one retry and backoff rule: the GitHub layer (REST, Twirp, blob transfers) and the
LLM providers' transport both wait by it, and both read a server's ``retry-after`` with it.

An attempt either returns, raises an error that ends the call, or raises :class:`Retry` to
ask for another go. Between attempts the helper waits

    ``delay(n) = min(cap, base · 2^(n-1) · (1 + jitter · u))``,  ``u`` uniform in [0, 1)

after the n-th failed attempt, unless the server said how long to wait (``retry-after``,
``x-ratelimit-reset``; :func:`parse_retry_after`), which the attempt passes as
``Retry(wait=...)``. The providers' transport runs its own attempt loop (it checks the budget
before every attempt and times each one) but computes each wait with the same
:meth:`Backoff.delay`. With the GitHub defaults
(base 1 s, jitter 25 %, cap 60 s, 5 attempts) the waits are about 1, 2, 4 and 8 s: long
enough to ride out a deploy blip of the API or the blob store, short enough that a job
that is going to fail anyway fails within half a minute. The jitter only ever lengthens a
wait, so parallel matrix legs that failed together do not retry in lockstep, and no wait
is ever shorter than the documented step.

Sleep and the random source are arguments, so tests drive the helper without waiting.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import TypeVar

log = logging.getLogger("axl_action.github")

T = TypeVar("T")


@dataclass(frozen=True)
class Backoff:
    """How many attempts, and how long to wait between them (see the module docstring)."""

    attempts: int = 5
    """Total attempts, the first one included."""
    base: float = 1.0
    """Wait after the first failed attempt, before jitter (seconds)."""
    cap: float = 60.0
    """The longest computed wait (seconds)."""
    jitter: float = 0.25
    """Each wait is lengthened by up to this fraction."""

    def __post_init__(self) -> None:
        if self.attempts < 1:
            raise ValueError("attempts must be at least 1")
        if self.base < 0 or self.cap < 0 or self.jitter < 0:
            raise ValueError("base, cap and jitter must not be negative")

    def delay(self, failed_attempt: int, u: float) -> float:
        """The wait after attempt ``failed_attempt`` (1-based), for a uniform draw ``u`` in [0, 1)."""
        return min(self.cap, self.base * 2.0 ** (failed_attempt - 1) * (1.0 + self.jitter * u))


DEFAULT_BACKOFF = Backoff()


def parse_retry_after(headers: Mapping[str, str], now: datetime) -> float | None:
    """Seconds the server asked us to wait (``retry-after-ms``, or ``retry-after`` as seconds
    or an HTTP-date), or ``None`` when absent/unparseable. Never negative."""
    raw_ms = headers.get("retry-after-ms")
    if raw_ms is not None:
        try:
            return max(0.0, float(raw_ms) / 1000.0)
        except ValueError:
            pass
    raw = headers.get("retry-after")
    if raw is None:
        return None
    raw = raw.strip()
    try:
        return max(0.0, float(raw))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(raw)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - now).total_seconds())


class Retry(Exception):
    """Raised by an attempt that failed in a way worth repeating."""

    def __init__(self, problem: str, *, wait: float | None = None, error: Exception | None = None) -> None:
        super().__init__(problem)
        self.problem = problem
        """What went wrong, for the log (never a URL query or a token)."""
        self.wait = wait
        """The wait the server asked for; None means "use the backoff"."""
        self.error = error
        """The error to raise when this was the last attempt (else ``give_up`` builds one)."""


@dataclass
class Retrier:
    """Runs attempts under one :class:`Backoff`, with an injectable sleep and random source."""

    backoff: Backoff = DEFAULT_BACKOFF
    sleep: Callable[[float], None] = time.sleep
    uniform: Callable[[], float] = field(default_factory=lambda: random.Random().random)
    """Returns a draw in [0, 1) for the jitter."""

    def run(
        self,
        attempt: Callable[[int], T],
        *,
        what: str,
        give_up: Callable[[Retry, int], Exception],
        attempts: int | None = None,
    ) -> T:
        """Call ``attempt(n)`` for n = 1, 2, ... until it returns or raises something else.

        After the last attempt raised :class:`Retry`, its ``error`` is raised, or the one
        ``give_up(retry, n)`` builds. ``attempts`` overrides the backoff's count for one call.
        """
        total = attempts if attempts is not None else self.backoff.attempts
        n = 0
        while True:
            n += 1
            try:
                return attempt(n)
            except Retry as retry:
                if n >= total:
                    raise (retry.error or give_up(retry, n)) from None
                delay = retry.wait if retry.wait is not None else self.backoff.delay(n, self.uniform())
                log.warning("%s: %s; retrying in %.1fs (attempt %d/%d)", what, retry.problem, delay, n, total)
                self.sleep(max(0.0, delay))
