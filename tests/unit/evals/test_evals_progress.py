"""Progress lines: live on a terminal, throttled in logs; and the public package surface."""

from __future__ import annotations

import io

import axl_action
from axl_action.evals.progress import Progress


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_terminal_progress_rewrites_one_line() -> None:
    stream, clock = io.StringIO(), Clock()
    progress = Progress("a_eval.py", stream, tty=True, clock=clock)
    clock.now += 2
    progress({"type": "item_done", "itemIndex": 0, "totalItems": 4, "outcome": "completed"})
    clock.now += 2
    progress({"type": "item_done", "itemIndex": 1, "totalItems": 4, "outcome": "failed"})
    text = stream.getvalue()
    assert text.count("\r") == 2 and "\n" not in text
    assert text.endswith("a_eval.py: 2/4 done · 1 failed · 0:04 elapsed · ETA 0:04")
    progress({"type": "run_done", "totalItems": 4, "failures": 1})
    progress.finish()  # idempotent
    assert stream.getvalue().count("\n") == 1


def test_terminal_line_is_cut_to_the_terminal_width() -> None:
    # At 80 columns a long path used to wrap, so "\r" rewrote only the last row: every update
    # scrolled. The label loses its start, the counts stay.
    stream, clock = io.StringIO(), Clock()
    label = "/home/dev/projects/acme/services/support/evals/customer_support_ticket_triage_eval.py"
    progress = Progress(label, stream, tty=True, clock=clock, width=lambda: 80)
    for index in range(3):
        clock.now += 1
        progress({"type": "item_done", "itemIndex": index, "totalItems": 100, "outcome": "completed"})
    updates = stream.getvalue().split("\r\x1b[K")[1:]
    assert len(updates) == 3
    for line in updates:
        assert len(line) <= 79, line
        assert line.startswith("…") and "ticket_triage_eval.py: " in line
    assert updates[-1].endswith("3/100 done · 0:03 elapsed · ETA 1:37")
    # A terminal too narrow for the counts: the line is cut, never wrapped.
    narrow = Progress("x", io.StringIO(), tty=True, clock=clock, width=lambda: 12)
    narrow.total, narrow.done = 100, 3
    assert len(narrow.line(11)) == 11
    # Short lines are left alone; without a width, the line is whole (logs).
    assert (
        Progress("a", io.StringIO(), tty=True, clock=clock, width=lambda: 80).line(79)
        == "a: 0/0 done · 0:00 elapsed"
    )
    assert progress.line() == f"{label}: 3/100 done · 0:03 elapsed · ETA 1:37"


def test_log_progress_is_throttled_to_the_interval() -> None:
    stream, clock = io.StringIO(), Clock()
    progress = Progress("b", stream, tty=False, clock=clock, interval=10)
    for index in range(30):
        clock.now += 1
        progress(
            {
                "type": "item_done",
                "itemIndex": index,
                "totalItems": 30,
                "outcome": "cancelled" if index > 25 else "completed",
            }
        )
    progress({"type": "run_done", "totalItems": 30, "failures": 4})
    lines = stream.getvalue().splitlines()
    assert lines == [
        "b: 10/30 done · 0:10 elapsed · ETA 0:20",
        "b: 20/30 done · 0:20 elapsed · ETA 0:10",
        "b: 30/30 done · 4 cancelled · 0:30 elapsed",
    ]


def test_public_surface() -> None:
    for name in ("dataset", "scorer", "llm_scorer", "define_eval", "run_eval", "Runtime", "EvalDefinition"):
        assert callable(getattr(axl_action, name))
    assert axl_action.scorer("s", lambda o: 1).is_llm is False
    assert axl_action.llm_scorer("j", "mock:judge", "grade").is_llm is True
