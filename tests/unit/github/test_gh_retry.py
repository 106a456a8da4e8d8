"""The one retry rule (axl_action.retry) with a recording sleep and a fixed random source."""

from __future__ import annotations

import pytest

from axl_action.retry import Backoff, Retrier, Retry


def test_backoff_doubles_adds_at_most_a_quarter_and_is_capped() -> None:
    b = Backoff(base=1.0, cap=10.0, jitter=0.25)
    assert [b.delay(n, 0.0) for n in (1, 2, 3, 4, 5)] == [1.0, 2.0, 4.0, 8.0, 10.0]
    assert b.delay(1, 0.999) == pytest.approx(1.24975)
    assert b.delay(5, 0.999) == 10.0, "the cap holds after jitter"
    with pytest.raises(ValueError):
        Backoff(attempts=0)


def test_retries_until_success_with_the_documented_waits() -> None:
    sleeps: list[float] = []
    seen: list[int] = []

    def attempt(n: int) -> str:
        seen.append(n)
        if n < 3:
            raise Retry(f"HTTP 50{n}")
        return "ok"

    r = Retrier(Backoff(base=2.0), sleep=sleeps.append, uniform=lambda: 0.5)
    assert r.run(attempt, what="x", give_up=lambda retry, n: RuntimeError("no")) == "ok"
    assert seen == [1, 2, 3] and sleeps == [2.25, 4.5]


def test_a_server_requested_wait_replaces_the_backoff() -> None:
    sleeps: list[float] = []

    def attempt(n: int) -> int:
        if n == 1:
            raise Retry("429", wait=7.0)
        return n

    assert (
        Retrier(sleep=sleeps.append, uniform=lambda: 0.0).run(
            attempt, what="x", give_up=lambda r, n: ValueError()
        )
        == 2
    )
    assert sleeps == [7.0]


def test_gives_up_after_the_last_attempt_with_its_error_or_give_up() -> None:
    sleeps: list[float] = []
    r = Retrier(Backoff(attempts=3), sleep=sleeps.append, uniform=lambda: 0.0)

    def always(n: int) -> None:
        raise Retry(f"try {n}")

    with pytest.raises(RuntimeError, match="gave up after 3: try 3"):
        r.run(always, what="x", give_up=lambda retry, n: RuntimeError(f"gave up after {n}: {retry.problem}"))
    assert sleeps == [1.0, 2.0], "no wait after the last attempt"

    def carries(n: int) -> None:
        raise Retry("HTTP 502", error=KeyError("the 502 itself"))

    with pytest.raises(KeyError, match="the 502 itself"):
        r.run(carries, what="x", give_up=lambda retry, n: RuntimeError("unused"), attempts=1)


def test_other_errors_end_the_call_at_once() -> None:
    sleeps: list[float] = []

    def attempt(n: int) -> None:
        raise PermissionError("403")

    with pytest.raises(PermissionError):
        Retrier(sleep=sleeps.append).run(attempt, what="x", give_up=lambda r, n: RuntimeError())
    assert sleeps == []
