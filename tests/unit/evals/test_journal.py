"""The run journal in-process: the writer's durability rule, the reader's refusals, the runner's
resume hooks (the runner's ``Continuation``) and recover's results."""

from __future__ import annotations

import json
import os
import re
import threading
import zlib
from pathlib import Path
from typing import Any

import pytest

from axl_action.cli.common import DEFAULT_GRACE_SECONDS, GRACE_ENV, grace_seconds
from axl_action.errors import UsageError
from axl_action.evals.continuation import Continuation
from axl_action.evals.dataset import dataset
from axl_action.evals.definition import define_eval
from axl_action.evals.journal.base import JournalError, flags_of, is_final, iso_utc, seal_line
from axl_action.evals.journal.reader import read_journal
from axl_action.evals.journal.recovery import recover_results
from axl_action.evals.journal.session import JournalSession
from axl_action.evals.journal.writer import JournalWriter
from axl_action.evals.runner import execute_run, plan_run
from axl_action.evals.scorer import scorer
from axl_action.runtime.runtime import Runtime
from axl_action.runtime.scope import open_operation
from axl_action.schema.journal import JournalSegment

FREE = {"duration": 0, "outcome": "completed", "accounting": {"operations": {"total": 0}}}


def _segment(items: int = 10, key: str = "e_eval.py") -> JournalSegment:
    definition = define_eval(
        "e", dataset("e", items=[{"input": n} for n in range(items)]), [scorer("s", lambda o: 1.0)]
    )
    return JournalSegment(
        command="run",
        key=key,
        label=key,
        started=iso_utc(),
        tool="test",
        flags=flags_of(),
        facts=plan_run(definition).facts,
    )


def _lines(path: Path) -> list[bytes]:
    return [line for line in path.read_bytes().split(b"\n") if line]


# ------------------------------------------------------------------------------- the writer


def test_free_items_wait_for_the_flush_and_paid_or_slow_ones_are_written_at_once(tmp_path: Path) -> None:
    path = tmp_path / "r.json.journal.jsonl"
    writer = JournalWriter.create(path, interval=3600)
    sink = writer.sink(writer.begin(_segment()))
    assert len(_lines(path)) == 1  # the segment line is written (and synced) at once
    sink(0, dict(FREE))
    assert len(_lines(path)) == 1  # free: queued for the background flush
    sink(1, {**FREE, "accounting": {"operations": {"total": 1}}})  # made a measured call
    sink(2, {**FREE, "duration": 1})  # waited on something for 1 ms
    assert [json.loads(line)["index"] for line in _lines(path)[1:]] == [1, 2]
    writer.flush()
    assert sorted(json.loads(line)["index"] for line in _lines(path)[1:]) == [0, 1, 2]
    writer.close()


def test_the_background_flush_writes_free_items_within_its_interval(tmp_path: Path) -> None:
    path = tmp_path / "r.json.journal.jsonl"
    writer = JournalWriter.create(path, interval=0.01)
    sink = writer.sink(writer.begin(_segment()))
    sink(0, dict(FREE))
    for _ in range(200):
        if len(_lines(path)) == 2:
            break
        threading.Event().wait(0.01)
    assert len(_lines(path)) == 2
    writer.close()


def test_stubs_are_not_journaled_but_rescored_items_are(tmp_path: Path) -> None:
    path = tmp_path / "r.json.journal.jsonl"
    writer = JournalWriter.create(path, interval=3600)
    sink = writer.sink(writer.begin(_segment()))
    sink(0, {"outcome": "cancelled", "error": "Cancelled", "accounting": {"operations": {"total": 0}}})
    sink(1, {"outcome": "completed", "scoreDetails": {}, "accounting": {"operations": {"total": 0}}})
    writer.close()
    assert [json.loads(line)["index"] for line in _lines(path)[1:]] == [1]


def test_a_lone_surrogate_is_journaled_as_u_fffd(tmp_path: Path) -> None:
    path = tmp_path / "r.json.journal.jsonl"
    writer = JournalWriter.create(path, interval=3600)
    sink = writer.sink(writer.begin(_segment()))
    sink(0, {**FREE, "output": "x \ud800"})
    writer.close()
    journal = read_journal(path)
    assert journal.segments[0].items[0]["output"] == "x \ufffd"


def test_a_journal_that_cannot_be_written_warns_once_and_the_run_goes_on(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    if not Path("/dev/full").exists():
        pytest.skip("needs /dev/full")
    writer = JournalWriter(Path("/dev/full"), interval=3600)
    writer.begin(_segment())
    sink = writer.sink(0)
    sink(0, {**FREE, "duration": 5})
    sink(1, {**FREE, "duration": 5})
    writer.close()
    assert writer.failed is not None and "No space left" in writer.failed
    assert capsys.readouterr().err.count("the run journal stopped") == 1


# ------------------------------------------------------------------------------- the reader


def _journal_with(tmp_path: Path, *extra: bytes) -> Path:
    path = tmp_path / "r.json.journal.jsonl"
    writer = JournalWriter.create(path, interval=3600)
    sink = writer.sink(writer.begin(_segment()))
    for i in range(3):
        sink(i, {**FREE, "duration": 2, "output": i})
    writer.close()
    with path.open("ab") as fh:
        for chunk in extra:
            # Whole object lines get their checksum, as the writer's; the rest go in as they are.
            for line in chunk.splitlines(keepends=True):
                fh.write(seal_line(line) if line.startswith(b"{") and line.endswith(b"}\n") else line)
    return path


def test_a_torn_last_line_is_dropped_and_appending_cuts_it_off(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _journal_with(tmp_path, b'{"segment":0,"index":3,"item":{"outc')
    journal = read_journal(path)
    assert journal.torn and sorted(journal.segments[0].items) == [0, 1, 2]
    assert "dropped the last line" in capsys.readouterr().err
    writer = JournalWriter.append_to(journal, interval=3600)
    writer.sink(0)(3, {**FREE, "duration": 2})
    writer.close()
    assert sorted(read_journal(path).segments[0].items) == [0, 1, 2, 3]


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (b"garbage\n" + b'{"segment":0,"index":2,"item":{"outcome":"completed"}}\n', "is damaged at line 5"),
        (b'{"segment":3,"index":0,"item":{"outcome":"completed"}}\n', "segment 3 is not a segment line"),
        (b'{"segment":0,"index":99,"item":{"outcome":"completed"}}\n', "index 99 is outside the 10 items"),
        (b'{"segment":0,"index":1,"item":[]}\n', "its item is not an object with an outcome"),
        (b"[1, 2]\n", "is not a JSON object"),
        (
            b'{"segment":0,"index":1,"item":{"outcome":"completed","scores":{"s":"x"}}}\n',
            "line 5 is not a valid item line: item.scores.s: expected a number in \\[0, 1\\] or null, got 'x'",
        ),
    ],
)
def test_a_damaged_journal_is_refused_with_one_line(tmp_path: Path, extra: bytes, message: str) -> None:
    path = _journal_with(tmp_path, extra)
    with pytest.raises(JournalError, match=message) as caught:
        read_journal(path)
    assert "\n" not in str(caught.value)


def test_a_later_line_for_an_index_replaces_the_earlier_and_both_count_as_spend(tmp_path: Path) -> None:
    path = tmp_path / "r.json.journal.jsonl"
    writer = JournalWriter.create(path, interval=3600)
    sink = writer.sink(writer.begin(_segment()))
    sink(
        4,
        {
            "duration": 3,
            "outcome": "budget_interrupted",
            "accounting": {"operations": {"total": 1}, "knownCost": 0.5},
        },
    )
    sink(
        4,
        {
            "duration": 3,
            "outcome": "completed",
            "accounting": {"operations": {"total": 1}, "knownCost": 0.25},
        },
    )
    writer.close()
    record = read_journal(path).segments[0]
    assert record.items[4]["outcome"] == "completed"
    assert record.known_spend == 0.75 and len(record.spent) == 2


@pytest.mark.parametrize(
    ("item", "final"),
    [
        ({"outcome": "completed", "scoreDetails": {"a": {"outcome": "scored"}}}, True),
        ({"outcome": "failed"}, True),
        (
            {
                "outcome": "completed",
                "scoreDetails": {"a": {"outcome": "scored"}, "b": {"outcome": "cancelled"}},
            },
            False,
        ),
        ({"outcome": "cancelled"}, False),
        ({"outcome": "budget_interrupted"}, False),
        ({"outcome": "budget_skipped"}, False),
    ],
)
def test_what_a_resume_keeps(item: dict[str, Any], final: bool) -> None:
    assert is_final(item) is final


# ------------------------------------------------------------------- the runner's resume hooks


def _priced_eval(n: int, ran: list[int], budget: str | None = None) -> Any:
    def workflow(value: int, _runtime: Any) -> dict[str, Any]:
        ran.append(value)
        op = open_operation("chat", model="openai:gpt-4o-mini")
        op.before_dispatch()
        op.settle(0.25, {"inputTokens": 10, "outputTokens": 1}, "price_table_estimate")
        return {"output": value}

    return define_eval(
        "priced",
        dataset("priced", items=[{"input": k} for k in range(n)]),
        [scorer("one", lambda o: 1.0)],
        execute_workflow=workflow,
        budget=budget,
        concurrency=1,
    )


def test_completed_items_are_not_run_and_their_spend_is_folded_in() -> None:
    ran: list[int] = []
    definition = _priced_eval(6, ran)
    settled: dict[int, dict[str, Any]] = {}
    first = execute_run(
        definition,
        Runtime(),
        continuation=Continuation(on_settled=lambda i, item: settled.setdefault(i, item)),
    )
    assert sorted(settled) == list(range(6)) and ran == list(range(6))
    keep = {i: settled[i] for i in (0, 1, 2)}
    ran.clear()
    second = execute_run(
        definition,
        Runtime(),
        continuation=Continuation(
            completed=keep, prior_accounting=[item["accounting"] for item in keep.values()]
        ),
        result_id=first.wire["id"],
    )
    assert ran == [3, 4, 5]
    assert second.wire["accounting"]["knownCost"] == pytest.approx(first.wire["accounting"]["knownCost"])
    assert second.wire["accounting"]["operations"] == first.wire["accounting"]["operations"]
    assert second.wire["summary"]["count"] == 6
    assert [i["output"] for i in second.wire["items"]] == list(range(6))


def test_the_budget_counts_the_spend_already_made() -> None:
    ran: list[int] = []
    definition = _priced_eval(8, ran, budget="$1")
    kept = {
        "input": 0,
        "output": 0,
        "scores": {"one": 1},
        "duration": 1,
        "outcome": "completed",
        "scoreDetails": {"one": {"score": 1, "duration": 0, "outcome": "scored"}},
        "accounting": _acc(0.25),
        "cost": 0.25,
        "scorerCost": 0,
    }
    # Item 0 settled before; two more paid calls were made for items interrupted then (run again
    # now): $0.75 already spent, so one more $0.25 call closes the $1 budget.
    record = execute_run(
        definition,
        Runtime(),
        continuation=Continuation(completed={0: kept}, prior_accounting=[_acc(0.25)] * 3),
    )
    budget = record.wire["accounting"]["budget"]
    assert ran == [1]
    assert budget["knownSpend"] == pytest.approx(1.0) and budget["status"] == "closed"
    assert record.wire["accounting"]["knownCost"] == pytest.approx(1.0)
    outcomes = [i["outcome"] for i in record.wire["items"]]
    assert outcomes[:2] == ["completed", "completed"] and set(outcomes[2:]) == {"budget_skipped"}


def _acc(cost: float) -> dict[str, Any]:
    return {
        "version": 1,
        "currency": "USD",
        "knownCost": cost,
        "completeness": "complete",
        "reasons": {},
        "usage": {
            "inputTokens": 10,
            "outputTokens": 1,
            "reasoningTokens": 0,
            "cachedTokens": 0,
            "cacheWriteTokens": 0,
            "audioSeconds": 0,
        },
        "operations": {"total": 1, "settled": 1, "unknown": 0, "denied": 0, "byKind": {"chat": 1}},
        "breakdown": {"generation": cost, "judging": 0, "external": 0},
        "provenance": {"price_table_estimate": cost},
    }


def test_cancel_stops_admission_but_scorers_of_items_in_flight_still_run() -> None:
    cancel, abort = threading.Event(), threading.Event()

    def workflow(value: int, _runtime: Any) -> dict[str, Any]:
        if value == 1:
            cancel.set()  # the first signal arrives while this item is in flight
        return {"output": value}

    definition = define_eval(
        "two",
        dataset("two", items=[{"input": k} for k in range(4)]),
        [scorer("one", lambda o: 1.0)],
        execute_workflow=workflow,
        concurrency=1,
    )
    items = execute_run(definition, Runtime(), cancel_event=cancel, abort_event=abort).wire["items"]
    assert [i["outcome"] for i in items] == ["completed", "completed", "cancelled", "cancelled"]
    assert items[1]["scoreDetails"]["one"]["outcome"] == "scored"  # not cancelled by the signal
    # Without an abort event, cancel also cancels scorers (the library's behaviour, spec §19).
    cancel.clear()
    items = execute_run(definition, Runtime(), cancel_event=cancel).wire["items"]
    assert items[1]["scoreDetails"]["one"]["outcome"] == "cancelled"


def test_recover_rebuilds_the_result_the_run_wrote(tmp_path: Path) -> None:
    ran: list[int] = []
    definition = _priced_eval(5, ran, budget="$10")
    path = tmp_path / "r.json.journal.jsonl"
    session = JournalSession(tmp_path / "r.json", command="run", flags=flags_of(budget="$10"), resume=False)
    plan = plan_run(definition)
    started = session.start("priced_eval.py", "priced_eval.py", plan.facts)
    record = execute_run(definition, Runtime(), plan=plan, continuation=started.continuation())
    session.writer.close()
    [recovered] = recover_results(read_journal(path))
    assert recovered["metadata"].pop("recovered") == {
        "journal": path.name,
        "itemsFromJournal": 5,
        "itemsPlanned": 5,
        "partial": False,
    }
    want = record.wire
    for key in ("id", "dataset", "items", "totalCost"):
        assert recovered[key] == json.loads(json.dumps(want[key])), key
    assert recovered["summary"]["coverage"] == want["summary"]["coverage"]
    assert recovered["summary"]["scorers"] == want["summary"]["scorers"]
    got_acc = {k: v for k, v in recovered["accounting"].items() if k != "budget"}
    want_acc = {k: v for k, v in want["accounting"].items() if k != "budget"}
    assert got_acc == want_acc
    assert recovered["accounting"]["budget"]["knownSpend"] == pytest.approx(
        want["accounting"]["budget"]["knownSpend"]
    )


def test_a_session_refuses_to_overwrite_paid_items_and_checks_the_flags(tmp_path: Path) -> None:
    path = tmp_path / "r.json.journal.jsonl"
    writer = JournalWriter.create(path, interval=3600)
    writer.sink(writer.begin(_segment()))(0, {**FREE, "duration": 4})
    writer.close()
    with pytest.raises(UsageError, match="holds 1 settled item"):
        JournalSession(tmp_path / "r.json", command="run", flags=flags_of(), resume=False)
    with pytest.raises(JournalError, match=r"--runs differs since it was written \(1 -> 3\)"):
        JournalSession(tmp_path / "r.json", command="run", flags=flags_of(runs=3), resume=True)
    with pytest.raises(JournalError, match="written by `axl-eval run`, not `axl-eval rescore`"):
        JournalSession(tmp_path / "r.json", command="rescore", flags=flags_of(), resume=True)


# ---------------------------------------------------------------------------- grace period


def test_the_grace_period_comes_from_the_flag_the_environment_or_the_default(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv(GRACE_ENV, raising=False)
    assert grace_seconds() == DEFAULT_GRACE_SECONDS == 30
    monkeypatch.setenv(GRACE_ENV, "7.5")
    assert grace_seconds() == 7.5
    assert grace_seconds("0") == 0 and grace_seconds("2s") == 2
    monkeypatch.setenv(GRACE_ENV, "soon")
    assert grace_seconds() == 30
    assert "ignoring AXL_EVAL_GRACE_SECONDS" in capsys.readouterr().err
    for bad in ("-1", "nan", "inf", "x"):
        with pytest.raises(UsageError, match="--grace-period: expected a number of seconds >= 0"):
            grace_seconds(bad)
    assert os.environ[GRACE_ENV] == "soon"


def test_a_free_items_empty_accounting_is_journaled_as_null_and_read_back_in_place(tmp_path: Path) -> None:
    def workflow(inp: int, rt: Any) -> dict[str, Any]:
        if inp == 3:
            raise ValueError("no")
        return {"output": inp}

    definition = define_eval(
        "free",
        dataset("free", items=[{"input": n} for n in range(5)]),
        [scorer("s", lambda o: 1.0)],
        workflow,
    )
    path = tmp_path / "r.json.journal.jsonl"
    session = JournalSession(tmp_path / "r.json", command="run", flags=flags_of(), resume=False)
    plan = plan_run(definition)
    started = session.start("free_eval.py", "free_eval.py", plan.facts)
    record = execute_run(definition, Runtime(), plan=plan, continuation=started.continuation())
    session.writer.close()
    lines = [json.loads(line) for line in _lines(path)[1:]]
    assert len(lines) == 5 and all(line["item"]["accounting"] is None for line in lines)
    [recovered] = recover_results(read_journal(path))
    want = json.loads(json.dumps(record.wire["items"]))
    assert recovered["items"] == want
    assert [list(item) for item in recovered["items"]] == [list(item) for item in want]  # key order
    assert recovered["accounting"]["completeness"] == "complete"


# -- per-line checksums (issue 25 item 5) ----------------------------------------------------


def _sealed_journal(tmp_path: Path) -> tuple[Path, bytes]:
    path = tmp_path / "r.json.journal.jsonl"
    writer = JournalWriter.create(path, interval=3600)
    sink = writer.sink(writer.begin(_segment()))
    for i in range(3):
        sink(i, {**FREE, "duration": 2, "output": f"answer {i}", "scores": {"s": 0.5}})
    writer.close()
    return path, path.read_bytes()


def test_every_line_ends_in_its_checksum(tmp_path: Path) -> None:
    _, raw = _sealed_journal(tmp_path)
    for line in raw.splitlines():
        head, _, crc = line.rpartition(b',"crc":')
        assert int(crc.rstrip(b"}")) == zlib.crc32(head)


def test_a_flipped_byte_anywhere_is_never_used(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Every single-byte change of every line: the journal is refused naming the line, or the
    changed line (the last one) is dropped as torn; never read with changed content."""
    path, raw = _sealed_journal(tmp_path)
    clean = read_journal(path)
    want = dict(clean.segments[0].items)
    starts = [0, *(i + 1 for i, b in enumerate(raw) if b == 0x0A)][:-1]
    last_start = starts[-1]
    for pos in range(len(raw)):
        for flip in (0x01, 0x20):
            damaged = bytearray(raw)
            damaged[pos] ^= flip
            path.write_bytes(bytes(damaged))
            try:
                journal = read_journal(path)
            except JournalError as err:
                line = sum(1 for s in starts if s <= pos)
                assert f"line {line}" in str(err) or f"line {line + 1}" in str(err), (pos, str(err))
                continue
            # Read: only by dropping the damaged last line (or the newline that ends it).
            assert pos >= last_start - 1 and journal.torn, (pos, flip)
            got = journal.segments[0].items
            assert all(got[i] == want[i] for i in got) and set(got) <= {0, 1}
    capsys.readouterr()


def test_a_line_without_its_checksum_after_checksummed_lines_is_refused(tmp_path: Path) -> None:
    path, raw = _sealed_journal(tmp_path)
    path.write_bytes(
        raw + b'{"segment":0,"index":5,"item":{"outcome":"completed"}}\n' + raw.splitlines(True)[1]
    )
    with pytest.raises(JournalError, match="is damaged at line 5: the line fails its checksum"):
        read_journal(path)


def test_a_journal_written_before_checksums_still_reads_and_resumes_with_them(tmp_path: Path) -> None:
    path, raw = _sealed_journal(tmp_path)
    legacy = b"".join(re.sub(rb',"crc":\d+}$', b"}", line) + b"\n" for line in raw.splitlines())
    assert b'"crc"' not in legacy
    path.write_bytes(legacy)
    journal = read_journal(path)
    assert sorted(journal.segments[0].items) == [0, 1, 2] and not journal.torn
    writer = JournalWriter.append_to(journal, interval=3600)
    writer.sink(0)(3, {**FREE, "duration": 2})
    writer.close()
    assert sorted(read_journal(path).segments[0].items) == [0, 1, 2, 3]


def test_the_results_file_and_its_directory_are_synced_before_the_journal_goes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 25 item 6: a power cut right after the journal's unlink must not lose both."""
    session = JournalSession(tmp_path / "r.json", command="run", flags=flags_of(), resume=False)
    (tmp_path / "r.json").write_text("{}")
    events: list[str] = []
    real_fsync, real_unlink = os.fsync, Path.unlink

    def fsync(fd: int) -> None:
        events.append("fsync " + os.readlink(f"/proc/self/fd/{fd}"))
        real_fsync(fd)

    def unlink(self: Path, missing_ok: bool = False) -> None:
        events.append(f"unlink {self}")
        real_unlink(self, missing_ok=missing_ok)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(Path, "unlink", unlink)
    session.finish(complete=True)
    journal_gone = events.index(f"unlink {tmp_path / 'r.json.journal.jsonl'}")
    assert events[journal_gone - 2 : journal_gone] == [f"fsync {tmp_path / 'r.json'}", f"fsync {tmp_path}"]
