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
