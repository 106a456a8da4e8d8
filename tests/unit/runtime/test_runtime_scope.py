"""Accounting scopes: nesting, isolation, purpose, admission and settlement (spec §5.1, §7.1)."""

from __future__ import annotations

import contextvars
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from axl_action.providers.types import CallTiming
from axl_action.runtime.admission import AdmissionController
from axl_action.runtime.scope import (
    AdmissionDeniedError,
    is_abort,
    is_admission_denial,
    open_operation,
    track,
)


def paid(cost: float | None, *, model: str = "fake:m", usage: dict[str, float] | None = None) -> None:
    op = open_operation("chat", model=model)
    op.before_dispatch()
    op.settle(
        cost, usage if usage is not None else {"inputTokens": 10, "outputTokens": 2}, "price_table_estimate"
    )


def test_operation_is_recorded_once_in_every_enclosing_scope() -> None:
    inner_record: dict[str, object] = {}

    def outer() -> None:
        def inner() -> None:
            paid(0.25)

        inner_record.update(track(inner).accounting)
        paid(0.5)

    result = track(outer)
    assert inner_record["knownCost"] == 0.25
    assert result.accounting["knownCost"] == 0.75
    assert result.accounting["operations"] == {
        "total": 2,
        "settled": 2,
        "unknown": 0,
        "denied": 0,
        "byKind": {"chat": 2},
    }
    assert result.accounting["usage"]["inputTokens"] == 20
    assert result.measured


def test_innermost_purpose_decides_the_breakdown() -> None:
    def item() -> None:
        paid(0.1)
        track(lambda: paid(0.2), purpose="judging")
        track(lambda: track(lambda: paid(0.4)), purpose="judging")  # inherited judging

    record = track(item, purpose="generation").accounting
    assert record["breakdown"] == {"generation": 0.1, "judging": 0.6000000000000001, "external": 0}


def test_external_operations_go_to_external() -> None:
    def body() -> None:
        op = open_operation("external")
        op.settle(0.3, None, "caller_reported")

    record = track(body, purpose="judging").accounting
    assert record["breakdown"]["external"] == 0.3
    assert record["provenance"] == {"caller_reported": 0.3}


def test_concurrent_sibling_scopes_are_isolated() -> None:
    barrier = threading.Barrier(8)

    def item(n: int) -> float:
        def body() -> None:
            barrier.wait()
            for _ in range(n):
                paid(1.0)

        return float(track(body).accounting["knownCost"])

    def run() -> list[float]:
        with ThreadPoolExecutor(8) as pool:
            futures = [pool.submit(contextvars.copy_context().run, item, n) for n in range(1, 9)]
            return [f.result() for f in futures]

    outer = track(run)
    assert outer.value == [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]
    assert outer.accounting["knownCost"] == 36.0


def test_unusable_cost_settles_unknown_with_the_right_reason() -> None:
    def body() -> None:
        paid(None)  # usage reported, no price
        paid(float("nan"), usage={})  # nothing at all
        op = open_operation("chat")
        op.unknown("usage_missing")

    record = track(body).accounting
    assert record["completeness"] == "incomplete"
    assert record["reasons"] == {"unpriced_model": 1, "usage_missing": 2}
    assert record["operations"]["unknown"] == 3
    assert record["knownCost"] == 0


def test_explicit_zero_cost_is_known_free() -> None:
    record = track(lambda: paid(0)).accounting
    assert record["completeness"] == "complete"
    assert record["operations"]["settled"] == 1


def test_operations_left_open_are_abandoned() -> None:
    record = track(lambda: open_operation("tool")).accounting
    assert record["reasons"] == {"abandoned": 1}
    assert record["operations"]["total"] == 1


def test_settling_twice_counts_once() -> None:
    def body() -> None:
        op = open_operation("chat")
        op.settle(0.1, {}, "provider_reported")
        op.settle(0.2, {}, "provider_reported")
        op.unknown("usage_missing")

    record = track(body).accounting
    assert record["knownCost"] == 0.1
    assert record["operations"]["settled"] == 1


def test_closed_budget_denies_at_open() -> None:
    ctl = AdmissionController(0)

    def body() -> None:
        open_operation("chat")

    result = track(body, admission=ctl)
    assert result.status == "rejected"
    assert isinstance(result.error, AdmissionDeniedError)
    assert result.accounting["operations"] == {
        "total": 0,
        "settled": 0,
        "unknown": 0,
        "denied": 1,
        "byKind": {},
    }
    assert result.measured


def test_refusal_before_first_attempt_retracts_the_operation() -> None:
    ctl = AdmissionController(0.1)

    def body() -> None:
        paid(0.1)  # closes the budget
        op = open_operation("chat") if not ctl.closed else None
        assert op is None
        # an operation opened while open, refused at dispatch time:

    track(body, admission=ctl)

    ctl2 = AdmissionController(0.1)
    holder: dict[str, object] = {}

    def body2() -> None:
        op = open_operation("chat")
        paid(0.1)  # a sibling call closes the budget before op is dispatched
        holder["op"] = op
        op.before_dispatch()

    result = track(body2, admission=ctl2)
    assert isinstance(result.error, AdmissionDeniedError)
    ops = result.accounting["operations"]
    assert ops == {"total": 1, "settled": 1, "unknown": 0, "denied": 1, "byKind": {"chat": 1}}


def test_refusal_on_a_retry_settles_usage_missing() -> None:
    ctl = AdmissionController(0.1)

    def body() -> None:
        op = open_operation("chat")
        op.before_dispatch()  # first attempt leaves the process
        paid(0.2)  # closes the budget meanwhile
        op.before_dispatch()  # retry refused

    result = track(body, admission=ctl)
    assert is_admission_denial(result.error)
    assert result.accounting["reasons"] == {"usage_missing": 1}
    assert result.accounting["operations"]["total"] == 2
    assert result.accounting["operations"]["denied"] == 0


def test_each_settlement_charges_a_shared_controller_once() -> None:
    ctl = AdmissionController(10)
    track(lambda: track(lambda: paid(1.0), admission=ctl), admission=ctl)
    assert ctl.known_spend == 1.0


def test_timing_rollup_and_samples() -> None:
    def body() -> None:
        op = open_operation("chat", model="openai:gpt")
        op.record_timing("openai:gpt", CallTiming(queued_ms=5, wire_ms=100, first_token_ms=40))
        op.record_timing("openai:gpt", CallTiming(wire_ms=300, rate_limit_retries=2))
        op.settle(0.01, {}, "price_table_estimate")

    result = track(body, capture_timing_samples=True)
    assert result.timing == {
        "openai:gpt": {
            "calls": 2,
            "queuedMs": 5,
            "retryMs": 0,
            "wireMs": 400,
            "firstTokenMs": 40,
            "firstTokenCalls": 1,
        }
    }
    assert result.samples is not None and len(result.samples["openai:gpt"]) == 2
    assert result.metadata == {
        "models": ["openai:gpt"],
        "modelCallCounts": {"openai:gpt": 1},
        "tokens": {"input": 0, "output": 0, "reasoning": 0},
        "agentCalls": 1,
    }
    assert track(body).samples is None


class RecordingSink:
    """A capture sink that keeps what it is given."""

    def __init__(self) -> None:
        self.seen: list[dict[str, object]] = []

    def write(self, record: object) -> None:
        self.seen.append(dict(record))  # type: ignore[call-overload]


def captured_call() -> None:
    op = open_operation("chat")
    op.capture({"phase": "end"})
    op.settle(0, {}, "provider_reported")


def test_capture_records_carry_correlation() -> None:
    sink = RecordingSink()
    seen = sink.seen
    track(
        lambda: track(
            lambda: track(captured_call, capture_correlation={"scorer": "j"}),
            capture_correlation={"caseIndex": 3},
        ),
        capture=sink,
    )
    assert seen[0]["caseIndex"] == 3 and seen[0]["scorer"] == "j" and seen[0]["phase"] == "end"
    assert str(seen[0]["operationId"]).startswith("op_")


def test_detached_operation_outside_scopes_is_harmless() -> None:
    op = open_operation("chat")
    op.before_dispatch()
    op.settle(1.0, {}, "provider_reported")
    assert op.state == "settled"


def test_unknown_kind_is_a_programming_error() -> None:
    with pytest.raises(ValueError):
        open_operation("telepathy")


def test_denial_and_abort_recognition_is_structural() -> None:
    class Fake(Exception):
        code = "ADMISSION_DENIED"
        name = "AdmissionDeniedError"

    class CodeOnly(Exception):
        code = "ADMISSION_DENIED"

    class AbortError(Exception):
        pass

    assert is_admission_denial(Fake())
    assert not is_admission_denial(CodeOnly())
    assert not is_admission_denial("ADMISSION_DENIED")
    assert is_abort(AbortError())
    assert not is_abort(RuntimeError("AbortError"))


def test_awaitable_results_are_driven_to_completion() -> None:
    async def body() -> int:
        paid(0.5)
        return 7

    result = track(body)
    assert result.value == 7
    assert result.accounting["knownCost"] == 0.5


def test_declared_external_operations() -> None:
    from axl_action.runtime.runtime import Runtime

    runtime = Runtime()

    def body() -> None:
        with runtime.declared() as op:
            op.settle(0.2, None, "caller_reported")
        with runtime.declared():
            pass  # never reported a cost
        try:
            with runtime.declared("tool"):
                raise RuntimeError("tool crashed")
        except RuntimeError:
            pass
        runtime.operation("external").settle(0.1, None, "caller_reported")

    record = track(body).accounting
    assert record["breakdown"]["external"] == 0.30000000000000004
    assert record["reasons"] == {"external_unreported": 1, "usage_missing": 1}
    assert record["operations"]["byKind"] == {"external": 3, "tool": 1}


def test_awaitables_work_when_the_thread_already_runs_a_loop() -> None:
    import asyncio

    async def body() -> int:
        paid(0.25)
        return 3

    async def caller() -> tuple[object, float]:
        result = track(body)  # called from async code, as in a notebook
        return result.value, result.accounting["knownCost"]

    # Run on a fresh thread: a session-scoped Playwright (sync API) elsewhere in the suite
    # keeps an event loop running on the main thread.
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(1) as pool:
        assert pool.submit(asyncio.run, caller()).result() == (3, 0.25)


def test_sibling_scopes_are_separate_objects_whatever_they_measured() -> None:
    def siblings() -> list[object]:
        return [track(fn, purpose="judging") for fn in (lambda: 1, lambda: 1 / 0, lambda: paid(0.25))]

    a, b, c = track(siblings).value or []
    assert len({id(a), id(b), id(c)}) == 3
    assert (a.status, a.value, a.measured) == ("fulfilled", 1, False)  # type: ignore[attr-defined]
    assert b.status == "rejected" and isinstance(b.error, ZeroDivisionError)  # type: ignore[attr-defined]
    assert c.accounting["knownCost"] == 0.25  # type: ignore[attr-defined]


def test_the_shared_empty_record_refuses_every_change_and_copies_edit_freely() -> None:
    import copy
    import pickle

    import orjson

    record = track(lambda: 1).accounting
    assert record is track(lambda: 2).accounting  # one shared object
    edits = [
        lambda: record.__setitem__("knownCost", 1),
        lambda: record.update(knownCost=1),
        lambda: record.pop("knownCost"),
        lambda: record.setdefault("x", 1),
        lambda: record.clear(),
        lambda: record["usage"].__setitem__("inputTokens", 5),  # nested too
        lambda: record["reasons"].update(x=1),
    ]
    for edit in edits:
        with pytest.raises(TypeError, match="read-only"):
            edit()
    assert track(lambda: 3).accounting["usage"]["inputTokens"] == 0 and "x" not in record["reasons"]
    copied = copy.deepcopy(record)
    copied["usage"]["inputTokens"] = 5
    assert type(copied) is dict and type(copied["usage"]) is dict
    assert pickle.loads(pickle.dumps(record)) == record
    assert orjson.loads(orjson.dumps(record)) == record


def test_a_scope_takes_its_own_capture_correlation() -> None:
    sink = RecordingSink()

    def siblings() -> None:
        track(lambda: 1, capture_correlation={"scorer": "a"})
        track(captured_call, capture_correlation={"scorer": "b"})

    track(siblings, capture=sink)
    assert sink.seen[0]["scorer"] == "b"
